"""An on-disk cache of parsed ELF facts (to keep the library audit fast).

A file's :class:`~npudoctor.parsers.elf.ElfInfo` is kept under the key (real path, size,
mtime in whole seconds) with the mtime in ns beside it: a changed file has another key or
another mtime and is read again.  Nothing in the key or the checks depends on where the
file lives on disk (no inode, no device): the layers of a container image keep paths, sizes
and mtimes but cut the mtimes to whole seconds (see :func:`same_mtime`), so a cache filled
by a ``check`` while the image is built answers the containers started from it.  The cache
lives in the user cache directory (``$NPUDOCTOR_CACHE_DIR``, else
``platformdirs.user_cache_dir``: ``~/.cache/npudoctor/elf-v1.json``), is written
atomically, and a missing, unreadable or malformed cache is ignored (the files are read
again); one that cannot be written (a read-only directory baked into an image) is only
read.  ``NPUDOCTOR_ELF_CACHE=0`` turns it off.  At most :data:`MAX_ENTRIES` entries are kept: those used by the last run, then earlier
ones, most recently used first, up to :data:`KEEP_OLD_BYTES` of JSON.

Besides ELF facts it keeps other facts parsed from files, each valid only while those files
are unchanged (a warm ``check`` reads no ELF file, RECORD or package tree again):
:meth:`ElfCache.derived` -- a value computed from one file (a RECORD's paths of interest),
keyed by a kind naming the computation and the file's path, size and mtime; and
:meth:`ElfCache.lookup` / :meth:`ElfCache.store` for records the caller validates itself (a
package directory's walk, valid while each directory keeps its size and mtime).  No verdict
is ever cached.

Not a probe: a helper of :mod:`npudoctor.probes.libraries` and
:mod:`npudoctor.probes.frameworks`.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Dict, Iterable, List, Optional, Set, Tuple

from npudoctor.digest import sha256_hex
from npudoctor.parsers.elf import ElfInfo, read_elf

FILE = "elf-v1.json"
MAX_ENTRIES = 6000
#: JSON bytes of entries kept from earlier runs besides this run's own (the file is parsed
#: on every check, a cost that grows with its size: docs/performance.md; tests and many
#: environments would grow it).
KEEP_OLD_BYTES = 1 << 20
#: Biggest cache file read (bytes); a bigger one is ignored.
MAX_BYTES = 32 << 20
_FIELDS = ("machine", "bits", "soname", "needed", "rpath", "runpath", "version_needs", "version_defs", "error")


def same_mtime(kept_ns: Any, now_ns: int) -> bool:
    """Whether an mtime kept in the cache (ns) still holds for a file or directory whose
    mtime is now ``now_ns``: equal, or equal in whole seconds when one of the two has no
    fraction of a second -- the tar layers of a container image keep only whole seconds
    (Docker and BuildKit truncate the mtimes they write), so a file copied into an image
    is unchanged although its mtime lost its fraction."""
    if not isinstance(kept_ns, int) or isinstance(kept_ns, bool):
        return False
    if kept_ns == now_ns:
        return True
    second = 1_000_000_000
    return kept_ns // second == now_ns // second and (kept_ns % second == 0 or now_ns % second == 0)


def default_path() -> Optional[str]:
    """The cache file, or ``None`` when ``NPUDOCTOR_ELF_CACHE=0``."""
    if os.environ.get("NPUDOCTOR_ELF_CACHE", "1") == "0":
        return None
    base = os.environ.get("NPUDOCTOR_CACHE_DIR")
    if not base:
        try:
            from npudoctor.userdirs import user_cache_dir

            base = user_cache_dir()
        except Exception:
            return None
    return os.path.join(base, FILE)


class ElfCache:
    """``read(real_path) -> ElfInfo`` through the cache at ``path`` (``None``: no cache)."""

    def __init__(self, path: Optional[str]) -> None:
        self.path = path
        self.old: Dict[str, Dict[str, Any]] = {}
        self.used: Dict[str, Dict[str, Any]] = {}
        self.hits = 0
        self.misses = 0
        self.dirty = False
        #: Keys of the records found valid or made in this run: a directory walk that two
        #: audits share (the extension scan, the library search) is checked once per run.
        self.fresh: Set[str] = set()
        if path:
            self.old = _load(path)

    def _key(self, path: str, kind: str) -> Tuple[Optional[str], int]:
        """``(key, mtime in ns)`` of the file ``path`` (key ``None`` when it cannot be stat'ed)."""
        try:
            st = os.stat(path)
        except OSError:
            return None, 0
        return f"{kind}{path}\0{st.st_size}\0{st.st_mtime_ns // 1_000_000_000}", st.st_mtime_ns

    def _get(self, key: Optional[str], ns: Any) -> Any:
        """The record under ``key`` made when the file(s) had the mtime(s) ``ns`` (an int,
        or a list of ints for several files), or ``None``."""
        if key is None:
            return None
        rec = self.used.get(key)
        if rec is None:
            rec = self.old.get(key)
        if not isinstance(rec, dict):
            return None
        kept = rec.get("ns")
        if isinstance(ns, list):
            fresh = isinstance(kept, list) and len(kept) == len(ns) and all(map(same_mtime, kept, ns))
        else:
            fresh = same_mtime(kept, ns)
        if not fresh:
            return None
        self.hits += 1
        self.used[key] = rec
        return rec

    def _put(self, key: Optional[str], rec: Dict[str, Any], ns: Any = None) -> None:
        self.misses += 1
        if key is not None:
            if ns is not None:
                rec["ns"] = ns
            self.used[key] = rec
            self.dirty = True

    def lookup(self, key: str) -> Any:
        """The record kept under ``key`` (the caller validates it), or ``None``; not counted."""
        rec = self.used.get(key)
        return rec if rec is not None else self.old.get(key)

    def hit(self, key: str, rec: Dict[str, Any]) -> None:
        """Count a record of :meth:`lookup` the caller found valid, and keep it."""
        self.hits += 1
        self.used[key] = rec

    def store(self, key: str, rec: Dict[str, Any]) -> None:
        """Keep ``rec`` (JSON values) under ``key``, counted as a miss."""
        self._put(key, rec)

    def undefined(self, path: str) -> Tuple[Set[str], Optional[str]]:
        """``(strong undefined dynamic symbols, error)`` of the real file ``path``
        (:func:`~npudoctor.parsers.elf.dynamic_symbols`), cached like :meth:`read`."""
        from npudoctor.parsers.elf import dynamic_symbols

        key, ns = self._key(path, "U\0")
        rec = self._get(key, ns)
        if rec is not None and isinstance(rec.get("undefined"), list):
            err = rec.get("error")
            return {str(n) for n in rec["undefined"]}, err if isinstance(err, str) else None
        _d, undef, err = dynamic_symbols(path, want_defined=False)
        self._put(key, {"undefined": sorted(undef), "error": err}, ns)
        return undef, err

    def derived(self, kind: str, path: str, compute: Callable[[], Any]) -> Any:
        """``compute()`` -- a JSON value made from the real file ``path`` alone (the paths a
        RECORD lists that matter to a probe) -- cached under ``kind`` (which names the
        computation and the data it depends on) and the file's (path, size, mtime).  A
        ``None`` result is not kept (an unreadable file is tried again)."""
        key, ns = self._key(path, kind + "\0")
        rec = self._get(key, ns)
        if rec is not None and "value" in rec:
            return rec["value"]
        value = compute()
        if value is not None:
            self._put(key, {"value": value}, ns)
        return value

    def missing(self, names: Iterable[str], libraries: List[str]) -> Tuple[List[str], List[str]]:
        """:func:`~npudoctor.parsers.elf.missing_symbols` of ``names`` against the real
        files ``libraries``, cached by the names and every library's (path, size, mtime)."""
        from npudoctor.parsers.elf import missing_symbols

        wanted = sorted(set(names))
        stamps = [self._key(p, "") for p in libraries]
        ns = [n for _k, n in stamps]
        key = None
        if all(k is not None for k, _n in stamps):
            digest = sha256_hex("\n".join(wanted + ["--"] + [str(k) for k, _n in stamps]).encode())
            key = "M\0" + digest
        rec = self._get(key, ns)
        if rec is not None and isinstance(rec.get("missing"), list) and isinstance(rec.get("problems"), list):
            return [str(n) for n in rec["missing"]], [str(n) for n in rec["problems"]]
        missing, problems = missing_symbols(wanted, libraries)
        self._put(key, {"missing": list(missing), "problems": list(problems)}, ns)
        return missing, problems

    def read(self, path: str) -> ElfInfo:
        """The ELF facts of the real file ``path`` (from the cache when its size and mtime
        match); never raises."""
        key, ns = self._key(path, "")
        if key is None:
            return read_elf(path)
        rec = self.used.get(key) or self.old.get(key)
        if isinstance(rec, dict) and same_mtime(rec.get("ns"), ns):
            info = _info(path, rec)
            if info is not None:
                self.hits += 1
                self.used[key] = rec
                return info
        self.misses += 1
        info = read_elf(path)
        self.used[key] = {**{f: getattr(info, f) for f in _FIELDS}, "ns": ns}
        self.dirty = True
        return info

    def save(self) -> None:
        """Write the cache (atomically) when this run read new files; errors are ignored."""
        if not self.path or not self.dirty:
            return
        keep = dict(self.used)
        budget = KEEP_OLD_BYTES
        for key, rec in self.old.items():  # most recently used first (each save writes them so)
            if len(keep) >= MAX_ENTRIES:
                break
            if key in keep:
                continue
            budget -= len(key) + len(json.dumps(rec, separators=(",", ":")))
            if budget < 0:
                break
            keep[key] = rec
        try:
            from npudoctor.snapshot import atomic_write

            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            atomic_write(self.path, json.dumps({"version": 1, "entries": keep}, separators=(",", ":")))
        except (OSError, ValueError):
            return
        self.dirty = False
        stamp = _stamp(self.path)
        if stamp is not None:
            _LOADED[self.path] = (stamp, keep)


#: The entries last loaded or saved in this process, per cache file: ``{path: ((size,
#: mtime_ns), entries)}``.  Probes of one run (frameworks, libraries) open the cache in
#: turn; the file is parsed again only when it changed on disk (another process wrote it).
_LOADED: Dict[str, Tuple[Tuple[int, int], Dict[str, Dict[str, Any]]]] = {}


def _stamp(path: str) -> Optional[Tuple[int, int]]:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def _load(path: str) -> Dict[str, Dict[str, Any]]:
    from npudoctor.host import read_capped

    stamp = _stamp(path)
    memo = _LOADED.get(path)
    if stamp is not None and memo is not None and memo[0] == stamp:
        return memo[1]
    try:
        data, truncated = read_capped(path, MAX_BYTES)
        if truncated:
            return {}
        doc = json.loads(data.decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    entries = doc.get("entries") if isinstance(doc, dict) and doc.get("version") == 1 else None
    if not isinstance(entries, dict):
        return {}
    if stamp is not None:
        _LOADED[path] = (stamp, entries)
    return entries


def _info(path: str, rec: Any) -> Optional[ElfInfo]:
    """An :class:`ElfInfo` from a cached record, or ``None`` when the record is malformed."""
    if not isinstance(rec, dict):
        return None
    try:
        needs = rec.get("version_needs") or {}
        return ElfInfo(
            path=path,
            machine=rec.get("machine"),
            bits=rec.get("bits"),
            soname=rec.get("soname"),
            needed=[str(n) for n in rec.get("needed") or []],
            rpath=[str(n) for n in rec.get("rpath") or []],
            runpath=[str(n) for n in rec.get("runpath") or []],
            version_needs={str(k): [str(v) for v in vs] for k, vs in dict(needs).items()},
            version_defs=[str(n) for n in rec.get("version_defs") or []],
            error=rec.get("error"),
        )
    except (TypeError, ValueError, AttributeError):
        return None
