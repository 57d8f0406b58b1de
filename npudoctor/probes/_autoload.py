"""The device backends torch imports by itself at ``import torch`` (entry-point group
``torch.backends``, :mod:`npudoctor.knowledge.torch_autoload`), and whether their native
modules will load.

Backends are read from the ``entry_points.txt`` of the installed distributions
(``dist-info``), in the order ``importlib.metadata`` meets them: site directories in path
order, and within one directory by name (the directory's own order is the file system's;
the name order is the one that does not depend on it); a distribution name seen once counts
once.  A backend's entry point ``module:attr`` imports the top-level package ``module``;
its native modules are the shared objects directly in that package directory (the extension
modules its ``__init__`` imports: ``torch_npu/_C*.so``; the libraries of ``lib/`` that
load lazily, such as torch_npu's ATB plugin, are not), followed through their
``DT_NEEDED`` closure the way ``ld.so`` resolves it, with what torch and the backends before
it have loaded counted as loaded.  Python code is never imported nor run.

Record ``libraries.autoload``: ``{"group", "torch_version", "enabled": bool | None,
"variable": value or None, "backends": [{"name", "value", "dist", "version", "package_dir",
"modules", "unresolved": [{"name", "needed_by"}], "error"}]}``.
"""

from __future__ import annotations

import posixpath
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from npudoctor.host import Host
from npudoctor.probes._extensions import SYSTEM_LIB_RE, site_dirs
from npudoctor.probes._ldso import Resolver, expand_origin

#: Bytes of one entry_points.txt read at most, and files followed per backend at most.
ENTRY_POINTS_LIMIT = 1 << 20
MAX_FILES = 120


def entry_points(text: str, group: str) -> List[Tuple[str, str]]:
    """``(name, value)`` of the entries of ``group`` in an ``entry_points.txt`` (an INI
    file: ``[group]`` then ``name = module:attr`` lines; comments start with ``#`` or ``;``)."""
    out: List[Tuple[str, str]] = []
    section: Optional[str] = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            continue
        if section == group and "=" in line:
            name, value = line.split("=", 1)
            out.append((name.strip(), value.strip()))
    return out


def backends(host: Host, facts: Dict[str, Any], group: str) -> List[Dict[str, Any]]:
    """The registered backends of ``group`` in load order (see the module docstring)."""
    from npudoctor.parsers.metadata import canonical_name

    installed = (facts.get("packages") or {}).get("installed") or {}
    by_site: Dict[str, List[Dict[str, Any]]] = {}
    for recs in installed.values() if isinstance(installed, dict) else []:
        for rec in recs if isinstance(recs, list) else []:
            if isinstance(rec, dict) and rec.get("kind") == "dist-info" and rec.get("location"):
                by_site.setdefault(str(rec["location"]), []).append(rec)
    seen: Set[str] = set()
    out: List[Dict[str, Any]] = []
    for site in site_dirs(facts):
        for rec in sorted(by_site.get(site, []), key=lambda r: canonical_name(str(r.get("name") or ""))):
            dist = canonical_name(str(rec.get("name") or ""))
            if dist in seen:
                continue
            seen.add(dist)
            path = posixpath.join(str(rec.get("dist_info") or ""), "entry_points.txt")
            text = host.read_text(path, limit=ENTRY_POINTS_LIMIT).text
            for name, value in entry_points(text or "", group):
                top = value.split(":", 1)[0].strip().split(".", 1)[0]
                out.append(
                    {
                        "name": name,
                        "value": value,
                        "dist": rec.get("name"),
                        "version": rec.get("version"),
                        "package_dir": posixpath.join(site, top) if top else None,
                    }
                )
    return out


def audit(
    host: Host,
    found: List[Dict[str, Any]],
    resolver: Resolver,
    loaded: Dict[str, str],
    read: Callable[[str], Any],
    real: Callable[[str], str],
    expired: Callable[[], bool],
) -> None:
    """Fill ``modules``, ``unresolved`` and ``error`` of each backend of ``found``, in
    order: ``loaded`` (soname -> path) starts with what ``import torch`` has loaded and
    gains what each backend loads."""
    has_libc = bool(resolver.search("libc.so.6", [], [])[0])
    loaded = dict(loaded)
    for rec in found:
        pkg = rec.get("package_dir")
        rec.update(modules=[], unresolved=[], error=None)
        if not pkg or not host.is_dir(pkg):
            rec["error"] = f"{pkg}: no such package directory"
            continue
        roots = list(host.glob(pkg, suffix=".so"))
        rec["modules"] = roots
        missing: Dict[str, List[str]] = {}
        queue: List[Tuple[str, List[str]]] = [(p, []) for p in roots]
        done: Set[str] = set()
        while queue:
            path, parent_rpath = queue.pop(0)
            if path in done:
                continue
            if len(done) >= MAX_FILES or expired():
                rec["error"] = f"stopped after {len(done)} files (time/size budget)"
                break
            done.add(path)
            info = read(real(path))
            if info.error:
                continue
            if info.soname:
                loaded.setdefault(info.soname, path)
            origin = posixpath.dirname(host.resolve(path))
            chain = (expand_origin(info.rpath, origin) if not info.runpath else []) + parent_rpath
            runpath = expand_origin(info.runpath, origin)
            for name in info.needed:
                if name in loaded:
                    continue
                hit = resolver.search(name, chain, runpath)[0]
                if hit:
                    loaded[name] = hit
                    if not SYSTEM_LIB_RE.match(name):
                        queue.append((hit, chain if not info.runpath else []))
                elif has_libc or not SYSTEM_LIB_RE.match(name):
                    missing.setdefault(name, []).append(path)
        rec["unresolved"] = [{"name": n, "needed_by": by} for n, by in missing.items()]


def autoload_record(
    host: Host,
    facts: Dict[str, Any],
    torch: Optional[Dict[str, Any]],
    resolver: Resolver,
    loaded: Dict[str, str],
    read: Callable[[str], Any],
    real: Callable[[str], str],
    expired: Callable[[], bool],
) -> Optional[Dict[str, Any]]:
    """``libraries.autoload`` (see the module docstring): the backends ``import torch`` of
    the installed ``torch`` record (``{"version", "lib_dir"}``) imports itself, audited when
    it does; ``None`` without torch."""
    from npudoctor.knowledge.torch_autoload import autoload

    if torch is None:
        return None
    data = autoload()
    found = backends(host, facts, data.group)
    enabled = data.applies(torch.get("version"), host.environ)
    if found and enabled is not False:
        audit(host, found, resolver, loaded, read, real, expired)
    return {
        "group": data.group,
        "torch_version": torch.get("version"),
        "enabled": enabled,
        "variable": host.environ.get(data.variable),
        "backends": found,
    }
