"""The dynamic loader's configuration: ``/etc/ld.so.cache`` and ``/etc/ld.so.conf``.

``ld.so`` looks a library up in ``/etc/ld.so.cache`` (written by ``ldconfig`` from the
directories listed in ``/etc/ld.so.conf`` and its ``include`` files) after
``LD_LIBRARY_PATH`` and ``DT_RUNPATH``.  Two binary layouts exist (glibc
``sysdeps/generic/dl-cache.h``):

* the old libc5/libc6 format: magic ``"ld.so-1.7.0"`` (padded to 12 bytes), ``nlibs``
  (u32), then ``nlibs`` entries ``{i32 flags, u32 key, u32 value}``; string offsets are
  relative to the end of the entry table;
* the new format: magic ``"glibc-ld.so.cache"`` + version ``"1.1"``, ``nlibs``,
  ``len_strings``, flags/padding, ``extension_offset``, 3 unused words (48 bytes), then
  entries ``{i32 flags, u32 key, u32 value, u32 osversion, u64 hwcap}``; string offsets
  are relative to the start of this header.  A "compat" file holds an old table first
  and the new one after it (aligned); the new one wins, as in glibc.

Entry flags: low byte ``FLAG_ELF_LIBC6 = 3``; the architecture bits
``0x0300`` x86-64, ``0x0a00`` AArch64 (LP64), ``0`` for 32-bit i386/ARM.

All functions here are pure: bytes or text in, data out; bad input gives an error
value, never an exception.
"""

from __future__ import annotations

import fnmatch
import posixpath
import struct
from typing import Callable, List, Optional, Set, Tuple

from npudoctor.record import MutableRecord, field

OLD_MAGIC = b"ld.so-1.7.0"
NEW_MAGIC = b"glibc-ld.so.cache1.1"

FLAG_TYPE_MASK = 0x00FF
FLAG_ARCH_MASK = 0xFF00
FLAG_ELF_LIBC6 = 0x0003

#: Architecture bits of an entry → the machine name (``uname -m``) it serves.
ARCH_FLAGS = {
    0x0300: "x86_64",
    0x0A00: "aarch64",
    0x0500: "ppc64",
    0x0800: "x32",
    0x0900: "armhf",
    0x0000: "32-bit",
}


class CacheEntry(MutableRecord):
    """One ``soname → path`` line of the cache (``ldconfig -p`` shows the same)."""

    soname: str
    path: str
    flags: int

    @property
    def arch(self) -> str:
        return ARCH_FLAGS.get(self.flags & FLAG_ARCH_MASK, f"flags {self.flags:#x}")


class LdCache(MutableRecord):
    """A parsed ``ld.so.cache``: ``format`` is ``"new"``, ``"old"`` or ``"compat"``
    (old and new tables in one file); ``error`` is set (and ``entries`` empty or
    partial) when the file is malformed."""

    format: Optional[str] = None
    entries: List[CacheEntry] = field(default_factory=list)
    error: Optional[str] = None

    def lookup(self, soname: str, arch: Optional[str] = None) -> List[str]:
        """Paths cached for ``soname`` (first is what ld.so uses), limited to entries
        for ``arch`` (``x86_64``/``aarch64``) when given."""
        return [
            e.path
            for e in self.entries
            if e.soname == soname and (arch is None or e.arch == arch or e.arch.startswith("flags"))
        ]


def _cstr(data: bytes, off: int) -> Optional[str]:
    if off < 0 or off >= len(data):
        return None
    end = data.find(b"\0", off)
    if end < 0:
        return None
    return data[off:end].decode("utf-8", "surrogateescape")


def _endian(data: bytes, off: int, entry_size: int, string_base: int) -> Optional[str]:
    """Pick the byte order in which ``nlibs`` fits inside the file."""
    for e in ("<", ">"):
        (n,) = struct.unpack_from(e + "I", data, off)
        if n >= 0 and string_base + n * entry_size <= len(data):
            return e
    return None


def _parse_old(data: bytes) -> Tuple[List[CacheEntry], int, Optional[str]]:
    """Old table at offset 0: ``(entries, end offset of the table's strings?, error)``."""
    if len(data) < 16:
        return [], 0, "truncated old-format header"
    e = _endian(data, 12, 12, 16)
    if e is None:
        return [], 0, "old-format entry count does not fit the file"
    (n,) = struct.unpack_from(e + "I", data, 12)
    table_end = 16 + n * 12
    entries: List[CacheEntry] = []
    for i in range(n):
        flags, key, value = struct.unpack_from(e + "iII", data, 16 + i * 12)
        soname, path = _cstr(data, table_end + key), _cstr(data, table_end + value)
        if soname is None or path is None:
            return entries, table_end, f"old-format entry {i} points outside the file"
        entries.append(CacheEntry(soname, path, flags))
    return entries, table_end, None


def _parse_new(data: bytes, base: int) -> Tuple[List[CacheEntry], Optional[str]]:
    if len(data) < base + 48:
        return [], "truncated new-format header"
    e = _endian(data, base + 20, 24, base + 48)
    if e is None:
        return [], "new-format entry count does not fit the file"
    (n,) = struct.unpack_from(e + "I", data, base + 20)
    entries: List[CacheEntry] = []
    for i in range(n):
        flags, key, value, _osv, _hwcap = struct.unpack_from(e + "iIIIQ", data, base + 48 + i * 24)
        soname, path = _cstr(data, base + key), _cstr(data, base + value)
        if soname is None or path is None:
            return entries, f"new-format entry {i} points outside the file"
        entries.append(CacheEntry(soname, path, flags))
    return entries, None


def parse_ld_cache(data: bytes) -> LdCache:
    """Parse the bytes of an ``ld.so.cache`` (either format, or compat)."""
    if not data:
        return LdCache(error="empty file")
    try:
        if data.startswith(NEW_MAGIC):
            entries, err = _parse_new(data, 0)
            return LdCache("new", entries, err)
        if data.startswith(OLD_MAGIC):
            entries, table_end, err = _parse_old(data)
            if err:
                return LdCache("old", entries, err)
            pos = data.find(NEW_MAGIC, table_end)
            if pos >= 0:
                new_entries, new_err = _parse_new(data, pos)
                if not new_err:
                    return LdCache("compat", new_entries, None)
            return LdCache("old", entries, None)
    except struct.error as exc:
        return LdCache(error=f"truncated: {exc}")
    return LdCache(error="not an ld.so.cache (unknown magic)")


class LdConf(MutableRecord):
    """Directories listed by ``/etc/ld.so.conf`` and its includes, in order.

    ``files``: the configuration files read; ``errors``: unreadable includes.
    """

    dirs: List[str] = field(default_factory=list)
    files: List[str] = field(default_factory=list)
    errors: List[str] = field(default_factory=list)


#: ld.so.conf bounds: configuration files read (each at most once) and lines looked at in
#: all.  A real system has one file and a dozen includes of a few lines each; an include
#: pattern that matches its own directory, or a megabyte of lines, stops here with an error.
LD_CONF_MAX_FILES = 256
LD_CONF_MAX_LINES = 20000
LD_CONF_MAX_DEPTH = 8


def parse_ld_conf(path: str, read: Callable[[str], Optional[str]], listdir: Callable[[str], List[str]]) -> LdConf:
    """Read ``path`` (normally ``/etc/ld.so.conf``) through ``read(path) -> text|None``
    and expand ``include`` globs with ``listdir(dir) -> names``.

    Lines: ``# comment``, a directory (``dir`` or the old ``dir=TYPE`` form), ``include
    PATTERN`` (relative patterns are relative to the including file's directory),
    ``hwcap ...`` (ignored).  Each file is read once (an include of a file already read is
    skipped), nesting is capped at :data:`LD_CONF_MAX_DEPTH` levels, and at most
    :data:`LD_CONF_MAX_FILES` files and :data:`LD_CONF_MAX_LINES` lines are read in all
    (past a bound: an entry in ``errors``)."""
    conf = LdConf()
    seen_files: Set[str] = set()
    seen_dirs: Set[str] = set()
    lines_left = [LD_CONF_MAX_LINES]

    def one(file: str, depth: int) -> None:
        if file in seen_files:
            return
        if len(seen_files) >= LD_CONF_MAX_FILES:
            if len(seen_files) == LD_CONF_MAX_FILES:
                conf.errors.append(f"{file}: more than {LD_CONF_MAX_FILES} files included: the rest not read")
                seen_files.add("")  # said once
            return
        seen_files.add(file)
        text = read(file)
        if text is None:
            conf.errors.append(f"{file}: not readable")
            return
        conf.files.append(file)
        base = posixpath.dirname(file)
        for raw in text.splitlines():
            if lines_left[0] <= 0:
                conf.errors.append(f"{file}: more than {LD_CONF_MAX_LINES} lines in all: the rest not read")
                return
            lines_left[0] -= 1
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            if line.startswith("include") and line[7:8] in (" ", "\t"):
                for pattern in line[7:].split():
                    if not pattern.startswith("/"):
                        pattern = posixpath.join(base, pattern)
                    directory, name = posixpath.split(pattern)
                    for entry in sorted(listdir(directory)):
                        target = posixpath.join(directory, entry)
                        if not fnmatch.fnmatchcase(entry, name) or target in seen_files:
                            continue
                        if depth >= LD_CONF_MAX_DEPTH:
                            conf.errors.append(f"{file}: include nested too deep")
                            break
                        one(target, depth + 1)
                continue
            if line.startswith("hwcap") and line[5:6] in (" ", "\t"):
                continue
            for item in line.replace(",", " ").split():
                directory = item.split("=", 1)[0].rstrip("/") or "/"
                if directory.startswith("/") and directory not in seen_dirs:
                    seen_dirs.add(directory)
                    conf.dirs.append(directory)

    one(path, 0)
    return conf
