"""Where a library the loader will not find is on disk after all: one bounded walk of the
usual places of the diagnosed root -- the interpreter's site directories, ``/usr/local/lib*``,
``/opt`` and the Ascend trees under ``/usr/local/Ascend`` -- for the file names wanted.

A name found nowhere there is "not on this machine" (as far as these places go); one found
in a directory gives the fix line that puts that directory on the loader path.  Directories
that hold no shared libraries a process links (caches, headers, docs, tests, operator
kernels) are not descended into; the walk stops after :data:`MAX_ENTRIES` entries or when
``expired()``.
"""

from __future__ import annotations

import posixpath
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from npudoctor.host import Host
from npudoctor.probes._extensions import SYSTEM_LIB_RE, _tree, site_dirs

#: The places walked after the site directories, in order.
PLACES = ("/usr/local/lib", "/usr/local/lib64", "/opt", "/usr/local/Ascend")
#: Directory names never descended into.
PRUNE = frozenset(
    ("__pycache__", "include", "tests", "test", "share", "doc", "docs", "man", "op_impl", "kernel", "opp_kernel")
)
#: Directory entries walked at most, over all places.
MAX_ENTRIES = 60000
#: Copies kept per name.
MAX_COPIES = 5


def locate(
    host: Host,
    facts: Dict[str, Any],
    names: Iterable[str],
    expired: Callable[[], bool],
    cache: Optional[Any] = None,
) -> Tuple[Dict[str, List[str]], bool]:
    """``({name: [paths of the diagnosed machine]}, complete)`` for the wanted ``names``
    (every name a key; an empty list: not found); ``complete`` is False when the walk
    stopped early (then "not found" is not "not on this machine").  The units walked are
    the directories in those places (a package of site-packages, ``/opt/<name>``); with
    ``cache`` (the caller's :class:`~npudoctor.probes._elfcache.ElfCache`) each unit's
    shared objects come from its kept walk while its directories are unchanged (the
    extension scan keeps the same walks), else it is walked (:data:`MAX_ENTRIES` in all)."""
    wanted = {n for n in names if n}
    found: Dict[str, List[str]] = {n: [] for n in sorted(wanted)}
    if not wanted:
        return found, True
    complete = True
    walked = 0

    def add(name: str, path: str) -> None:
        if name in wanted and len(found[name]) < MAX_COPIES and path not in found[name]:
            found[name].append(path)

    units: List[str] = []
    for base in list(dict.fromkeys(list(site_dirs(facts)) + list(PLACES))):
        for entry in host.listdir(base):
            path = posixpath.join(base, entry)
            if entry in PRUNE or entry.endswith((".dist-info", ".egg-info")):
                continue
            if host.is_dir(path) and host.readlink(path) is None:
                units.append(path)
            else:
                add(entry, path)
    for unit in units:
        if expired():
            return found, False
        tree = _tree(host, unit, cache) if cache is not None else None
        if tree is not None:
            shown = host.display(unit)
            for rel in tree[0]:
                add(posixpath.basename(rel), posixpath.join(shown, rel))
            continue
        for dirpath, dirnames, filenames in host.walk(unit):
            walked += len(dirnames) + len(filenames)
            dirnames[:] = [d for d in dirnames if d not in PRUNE and not d.endswith((".dist-info", ".egg-info"))]
            for f in filenames:
                add(f, posixpath.join(dirpath, f))
            if walked > MAX_ENTRIES or expired():
                complete = False
                break
    return found, complete


def located_record(
    host: Host, facts: Dict[str, Any], out: Dict[str, Any], expired: Callable[[], bool], cache: Optional[Any]
) -> Dict[str, Any]:
    """``libraries.located`` of the libraries probe's record ``out``: where the libraries
    torch_npu misses (found in none of the stack's directories), extensions and autoloaded
    backends miss are on disk after all (base-system libraries are not looked for)."""
    names = {n for rec in out["symbols"]["extensions"] for n in rec.get("unresolved") or ()}
    names |= {r["name"] for r in out.get("resolution") or () if r["status"] == "missing" and not r["found_at"]}
    for backend in (out.get("autoload") or {}).get("backends") or ():
        names |= {u["name"] for u in backend.get("unresolved") or ()}
    names = {n for n in names if not SYSTEM_LIB_RE.match(n)}
    found, complete = locate(host, facts, names, expired, cache) if names else ({}, True)
    return {"names": found, "complete": complete}
