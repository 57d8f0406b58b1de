"""Symbol versions (``GLIBC_2.34``, ``GLIBCXX_3.4.30``, ``CXXABI_1.3.13``) that torch_npu's
binaries need above what the libraries providing them define.

Judged on every run from the facts the ``libraries`` probe read: each object's
``version_needs`` and the ``glibc.defined`` versions of the libc/libstdc++/libgcc_s that
would be loaded, so a replayed snapshot is judged by the current rules (the
``glibc.too_new`` list older snapshots carry is ignored)."""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple, TypedDict

from npudoctor.facts.runtime_env import LibrariesFacts
from npudoctor.knowledge.versions import symbol_versions


class TooNew(TypedDict):
    """A symbol version an object needs from ``library`` that its ``provider`` does not
    define (``highest``: the provider's highest of that family, or ``None``)."""

    library: str
    version: str
    needed_by: str
    provider: Optional[str]
    highest: Optional[str]
    where: Optional[str]


def too_new(libs: LibrariesFacts) -> List[TooNew]:
    """One record per version an object of the ``libraries`` view (torch_npu's walk, then
    the rest of the stack and the interpreter's extension modules: ``where`` names which)
    needs from a library whose provider does not define it, in the order of the objects
    and their needs (see :class:`TooNew`).  Pure; never raises."""
    glibc = libs.glibc
    defined = glibc.defined if glibc is not None else {}
    providers = glibc.providers if glibc is not None else {}
    out: List[TooNew] = []
    objects: List[Tuple[str, Dict[str, Tuple[str, ...]], Optional[str]]]
    objects = [(o.path, o.version_needs, None) for o in libs.objects if not o.error]
    objects += [(o.path, o.version_needs, o.where) for o in libs.stack if not o.error]
    seen = set()
    for path, needs, where in objects:
        for lib, versions in needs.items():
            provided = defined.get(lib)
            if provided is None:
                continue
            have = set(provided)
            for v in versions:
                if v in have or (path, lib, v) in seen:
                    continue
                seen.add((path, lib, v))
                highest = symbol_versions(list(provided), v.split("_", 1)[0])
                out.append(
                    {
                        "library": lib,
                        "version": v,
                        "needed_by": path,
                        "provider": providers.get(lib),
                        "highest": highest[-1] if highest else None,
                        "where": where,
                    }
                )
    return out
