"""The ``ld.so`` library search of the ``libraries`` probe, over one Host: ``DT_RPATH``,
``LD_LIBRARY_PATH``, ``DT_RUNPATH``, ``/etc/ld.so.cache`` (or the directories of
``/etc/ld.so.conf``) and the default directories, a candidate counting only when it is an
ELF file of the right machine and class (glibc ``elf/dl-load.c``: ``_dl_map_object``).

Not a probe (the leading underscore keeps the engine from discovering it): a helper of
:mod:`npudoctor.probes.libraries`."""

from __future__ import annotations

import posixpath
from typing import Any, Dict, List, Optional, Tuple

from npudoctor import lazyre
from npudoctor.host import Host
from npudoctor.parsers.numbers import to_int

#: Libraries whose symbol versions are judged (the base system's).
VERSIONED_RE = lazyre.pattern(r"^(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt)\.so\.\d+$")

_TRIPLETS = {"x86_64": "x86_64-linux-gnu", "aarch64": "aarch64-linux-gnu"}
_E_MACHINE = {0x3E: "x86_64", 0xB7: "aarch64", 0x03: "i686", 0x28: "arm"}


def _elf_machine(host: Host, path: str) -> Tuple[Optional[str], Optional[int]]:
    data, _e, _t = host.read_bytes(path, limit=64)
    if not data or len(data) < 20 or data[:4] != b"\x7fELF":
        return None, None
    machine = int.from_bytes(data[18:20], "little" if data[5] == 1 else "big")
    return _E_MACHINE.get(machine, f"EM_{machine}"), (64 if data[4] == 2 else 32)


#: The x86-64 micro-architecture levels glibc (2.33+) searches as ``glibc-hwcaps/<level>``
#: subdirectories, most capable first, with the ``/proc/cpuinfo`` flags each requires (x86-64
#: psABI "Micro-architecture levels"; glibc ``sysdeps/x86/get-isa-level.h``; LZCNT is
#: ``abm``, CMPXCHG16B ``cx16``, LAHF/SAHF ``lahf_lm``).  AArch64 defines no level by default.
HWCAPS_LEVELS = {
    "x86_64": (
        ("x86-64-v4", ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")),
        ("x86-64-v3", ("avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave")),
        ("x86-64-v2", ("cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3")),
    ),
}


def hwcaps_subdirs(cpuinfo: Optional[str], arch: str) -> List[str]:
    """The ``glibc-hwcaps`` subdirectory names ld.so searches on a CPU whose
    ``/proc/cpuinfo`` text is ``cpuinfo`` (most capable first; a level counts only when
    the levels below it do too).  ``[]`` when the text is unknown or the architecture
    defines no level."""
    if not cpuinfo:
        return []
    flags = set()
    for line in cpuinfo.splitlines():
        key, _sep, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            flags = set(value.split())
            break
    levels = HWCAPS_LEVELS.get(arch, ())
    out: List[str] = []
    for name, needs in reversed(levels):  # v2, then v3, then v4: each needs the one below
        if not flags.issuperset(needs):
            break
        out.insert(0, name)
    return out


class Resolver:
    """The ld.so search over one Host, with caches (one per probe run)."""

    def __init__(
        self, host: Host, arch: str, bits: int, ld_library_path: List[str], hwcaps: Optional[List[str]] = None
    ) -> None:
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
        #: glibc-hwcaps subdirectories searched in each directory (from the diagnosed
        #: machine's /proc/cpuinfo; none under a --root that holds none)
        self.hwcaps = hwcaps if hwcaps is not None else hwcaps_subdirs(host.read_text("/proc/cpuinfo").text, arch)
        self._has_hwcaps: Dict[str, bool] = {}

    def _in_dir(self, directory: str, name: str) -> Optional[str]:
        """``name`` in ``directory`` as ld.so takes it: ``glibc-hwcaps/<level>/`` first
        (levels this CPU supports), then the directory itself."""
        if self.hwcaps:
            sub = posixpath.join(directory, "glibc-hwcaps")
            if directory not in self._has_hwcaps:
                self._has_hwcaps[directory] = self.host.is_dir(sub)
            if self._has_hwcaps[directory]:
                for level in self.hwcaps:
                    cand = posixpath.join(sub, level, name)
                    if self.usable(cand):
                        return cand
        cand = posixpath.join(directory, name)
        return cand if self.usable(cand) else None

    def _cache_entry_ok(self, path: str) -> bool:
        """A cache entry under ``glibc-hwcaps/<level>/`` counts only on a CPU of that level."""
        parts = path.split("/")
        if "glibc-hwcaps" in parts[:-1]:
            i = parts.index("glibc-hwcaps")
            return i + 1 < len(parts) - 1 and parts[i + 1] in self.hwcaps
        return True

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
                found = self._in_dir(d, name)
                if found:
                    return found, label
        if self.cache is not None and not self.cache.error:
            for cand in self.cache.lookup(name, self.arch):
                if self._cache_entry_ok(cand) and self.usable(cand):
                    return cand, "ld.so.cache"
        for label, dirs in (("ld.so.conf", self.conf_dirs), ("default dirs", self.default_dirs)):
            for d in dirs:
                found = self._in_dir(d, name)
                if found:
                    return found, label
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
        if not tail or not tail[:1].isascii() or not tail[0].isdigit():
            continue
        key = tuple(to_int(p) or 0 for p in tail.split("."))
        if fam not in best or key > best[fam][0]:
            best[fam] = (key, v)
    return [v for _k, v in sorted(best.values())]
