"""The ``ld.so`` library search of the ``libraries`` probe, over one Host: ``DT_RPATH``,
``LD_LIBRARY_PATH``, ``DT_RUNPATH``, ``/etc/ld.so.cache`` (or the directories of
``/etc/ld.so.conf``) and the default directories, a candidate counting only when it is an
ELF file of the right machine and class (glibc ``elf/dl-load.c``: ``_dl_map_object``).

Not a probe (the leading underscore keeps the engine from discovering it): a helper of
:mod:`npudoctor.probes.libraries`."""

from __future__ import annotations

import posixpath
import re
from typing import Any, Dict, List, Optional, Tuple

from npudoctor.host import Host

#: Libraries whose symbol versions are judged (the base system's).
VERSIONED_RE = re.compile(r"^(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt)\.so\.\d+$")

_TRIPLETS = {"x86_64": "x86_64-linux-gnu", "aarch64": "aarch64-linux-gnu"}
_E_MACHINE = {0x3E: "x86_64", 0xB7: "aarch64", 0x03: "i686", 0x28: "arm"}


def _elf_machine(host: Host, path: str) -> Tuple[Optional[str], Optional[int]]:
    data, _e, _t = host.read_bytes(path, limit=64)
    if not data or len(data) < 20 or data[:4] != b"\x7fELF":
        return None, None
    machine = int.from_bytes(data[18:20], "little" if data[5] == 1 else "big")
    return _E_MACHINE.get(machine, f"EM_{machine}"), (64 if data[4] == 2 else 32)


class Resolver:
    """The ld.so search over one Host, with caches (one per probe run)."""

    def __init__(self, host: Host, arch: str, bits: int, ld_library_path: List[str]) -> None:
        from npudoctor.parsers.ldcache import parse_ld_cache, parse_ld_conf

        self.host = host
        self.arch = arch
        self.bits = bits
        self.ld_library_path = ld_library_path
        data, err, _t = host.read_bytes("/etc/ld.so.cache", limit=32 << 20)
        self.cache = parse_ld_cache(data) if data is not None else None
        self.cache_info: Optional[Dict[str, Any]] = None
        if data is not None and self.cache is not None:
            self.cache_info = {
                "path": "/etc/ld.so.cache",
                "format": self.cache.format,
                "entries": len(self.cache.entries),
                "error": self.cache.error,
            }
        self.conf_dirs: List[str] = []
        if self.cache is None or self.cache.error:
            conf = parse_ld_conf("/etc/ld.so.conf", lambda p: host.read_text(p).text, host.listdir)
            self.conf_dirs = conf.dirs
        triplet = _TRIPLETS.get(arch)
        self.default_dirs = ([f"/lib/{triplet}", f"/usr/lib/{triplet}"] if triplet else []) + (
            ["/lib64", "/usr/lib64", "/lib", "/usr/lib"] if bits == 64 else ["/lib", "/usr/lib"]
        )
        self._ok: Dict[str, bool] = {}

    def with_path(self, ld_library_path: List[str]) -> Resolver:
        """The same search (cache, configuration, checked files shared) with another
        ``LD_LIBRARY_PATH``."""
        import copy

        other = copy.copy(self)
        other.ld_library_path = list(ld_library_path)
        return other

    def usable(self, path: str) -> bool:
        """An ELF file of the right machine/class at ``path``."""
        if path not in self._ok:
            machine, bits = _elf_machine(self.host, path)
            self._ok[path] = machine is not None and (machine == self.arch or self.arch is None) and bits == self.bits
        return self._ok[path]

    def search(self, name: str, rpath_chain: List[str], runpath: List[str]) -> Tuple[Optional[str], Optional[str]]:
        """``(path, via)`` of ``name`` or ``(None, None)``."""
        if "/" in name:
            return (name, "path") if self.usable(name) else (None, None)
        for label, dirs in (("RPATH", rpath_chain), ("LD_LIBRARY_PATH", self.ld_library_path), ("RUNPATH", runpath)):
            for d in dirs:
                cand = posixpath.join(d, name)
                if self.usable(cand):
                    return cand, label
        if self.cache is not None and not self.cache.error:
            for cand in self.cache.lookup(name, self.arch):
                if self.usable(cand):
                    return cand, "ld.so.cache"
        for d in self.conf_dirs:
            cand = posixpath.join(d, name)
            if self.usable(cand):
                return cand, "ld.so.conf"
        for d in self.default_dirs:
            cand = posixpath.join(d, name)
            if self.usable(cand):
                return cand, "default dirs"
        return None, None


def expand_origin(entries: List[str], origin: str) -> List[str]:
    """The absolute entries of a ``DT_RPATH``/``DT_RUNPATH`` list with ``$ORIGIN`` /
    ``${ORIGIN}`` replaced by ``origin`` (the object's directory), normalized; relative
    entries (resolved against the process's cwd by ld.so) are dropped."""
    out = []
    for e in entries:
        e = e.replace("${ORIGIN}", origin).replace("$ORIGIN", origin)
        if e.startswith("/"):
            out.append(posixpath.normpath(e))
    return out


def highest(versions: List[str]) -> List[str]:
    """The highest version of each family (``GLIBC_2.17``, ``GLIBC_2.29`` -> ``GLIBC_2.29``)."""
    best: Dict[str, Tuple[Tuple[int, ...], str]] = {}
    for v in versions:
        fam, _sep, tail = v.partition("_")
        if not tail or not tail[0].isdigit():
            continue
        key = tuple(int(p) if p.isdigit() else 0 for p in tail.split("."))
        if fam not in best or key > best[fam][0]:
            best[fam] = (key, v)
    return [v for _k, v in sorted(best.values())]
