"""Symbol versions (``GLIBC_2.34``, ``GLIBCXX_3.4.30``, ``CXXABI_1.3.13``) that torch_npu's
binaries need above what the libraries providing them define.

Judged on every run from the facts the ``libraries`` probe read: each object's
``version_needs`` and the ``glibc.defined`` versions of the libc/libstdc++/libgcc_s that
would be loaded, so a replayed snapshot is judged by the current rules (the
``glibc.too_new`` list older snapshots carry is ignored)."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple


def version_key(name: str) -> Tuple[int, ...]:
    """Sort key of a version name: ``GLIBCXX_3.4.30`` → ``(3, 4, 30)`` (a non-numeric
    part, as in ``GLIBC_PRIVATE``, counts 0)."""
    tail = name.split("_", 1)[-1]
    return tuple(int(p) if p.isdigit() else 0 for p in tail.split("."))


def family_versions(names: List[str], family: str) -> List[str]:
    """The distinct names of one family (``GLIBC``: ``GLIBC_*``) in ascending order."""
    return sorted({n for n in names if n.startswith(family + "_")}, key=version_key)


def _dict(value: Any) -> Dict[str, Any]:
    return value if isinstance(value, dict) else {}


def too_new(libs: Dict[str, Any]) -> List[Dict[str, Any]]:
    """``[{"library", "version", "needed_by", "provider", "highest"}]``: one record per
    version an object of the ``libraries`` section needs from a library whose provider
    does not define it (``highest``: the provider's highest of that family, or ``None``),
    in the order of the objects and their needs.  Pure; never raises on odd facts."""
    glibc = _dict(libs.get("glibc"))
    defined = _dict(glibc.get("defined"))
    providers = _dict(glibc.get("providers"))
    out: List[Dict[str, Any]] = []
    for obj in libs.get("objects") or []:
        if not isinstance(obj, dict) or obj.get("error"):
            continue
        needs = obj.get("version_needs")
        for lib, versions in needs.items() if isinstance(needs, dict) else []:
            provided = defined.get(lib)
            if not isinstance(provided, list) or not isinstance(versions, list):
                continue
            have = {str(v) for v in provided}
            for v in versions:
                if str(v) in have:
                    continue
                highest = family_versions([str(p) for p in provided], str(v).split("_", 1)[0])
                out.append(
                    {
                        "library": lib,
                        "version": v,
                        "needed_by": obj.get("path"),
                        "provider": providers.get(lib),
                        "highest": highest[-1] if highest else None,
                    }
                )
    return out
