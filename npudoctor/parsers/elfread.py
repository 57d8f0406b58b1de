"""A small reader of the ELF structures the library audit needs (to keep ``check`` fast on
a full torch_npu install: pyelftools is a costly import and takes seconds on
``libtorch_npu.so``'s ~100,000 dynamic symbols; docs/performance.md).

It reads, with :mod:`struct` over a read-only memory map: the ELF header, the program and
section headers, the ``.dynamic`` section's ``DT_NEEDED`` / ``DT_SONAME`` / ``DT_RPATH`` /
``DT_RUNPATH``, ``.gnu.version_r`` (needs) and ``.gnu.version_d`` (definitions), the
``.dynsym`` table, and the ``PT_DYNAMIC`` tags that locate the GNU hash table.  Formats:
System V gABI (``Elf32_Ehdr``/``Elf64_Ehdr``, ``Elf*_Shdr``, ``Elf*_Phdr``, ``Elf*_Dyn``,
``Elf*_Sym``) and the GNU symbol-versioning structures (``Elf*_Verneed``/``Vernaux``,
``Elf*_Verdef``/``Verdaux``) as glibc's ``elf.h`` defines them.

It is a fast path only: it answers exactly what :mod:`npudoctor.parsers.elf` reads through
pyelftools, for well-formed files of the four machines npudoctor names, and raises
:class:`Unsupported` for everything else -- no section headers, a file shorter than its
headers describe, section kinds whose pyelftools objects check their own layout (``.stab``,
``SHT_SYMTAB_SHNDX``, Sun and processor-specific kinds), any layout check failing -- so
the caller reads such a file with pyelftools, which gives the same error text as before.
``tests/test_elfread.py`` compares both readers on real libraries (the realwheel venv's
torch / torch_npu / numpy, this machine's x86_64 and aarch64 system libraries, files built
with gcc and aarch64-linux-gnu-gcc).
"""

from __future__ import annotations

import mmap
import struct
from typing import Any, Dict, Iterator, List, Optional, Set, Tuple, Type

from npudoctor.record import Record

#: e_machine → ``uname -m`` name (EM_386 3, EM_ARM 40, EM_X86_64 62, EM_AARCH64 183).
MACHINES = {3: "i686", 40: "arm", 62: "x86_64", 183: "aarch64"}

# section types (gABI, GNU)
_SHT_PROGBITS, _SHT_SYMTAB, _SHT_STRTAB, _SHT_RELA, _SHT_DYNAMIC = 1, 2, 3, 4, 6
_SHT_NOBITS, _SHT_REL, _SHT_DYNSYM, _SHT_SYMTAB_SHNDX, _SHT_RELR = 8, 9, 11, 18, 19
_SHT_GNU_VERDEF, _SHT_GNU_VERNEED = 0x6FFFFFFD, 0x6FFFFFFE
_SHT_HASH, _SHT_GNU_HASH, _SHT_GNU_VERSYM = 5, 0x6FFFFFF6, 0x6FFFFFFF
#: Section kinds whose pyelftools objects check more than this reader replicates:
#: SHT_SYMTAB_SHNDX, SHT_SUNW_LDYNSYM, SHT_SUNW_syminfo, and 0x70000003 (the ARM, AArch64
#: and RISC-V attributes sections).
_UNSUPPORTED_TYPES = {_SHT_SYMTAB_SHNDX, 0x6FFFFFF3, 0x6FFFFFFC, 0x70000003}
_PT_LOAD, _PT_DYNAMIC = 1, 2
_DT_NULL, _DT_NEEDED, _DT_SONAME, _DT_RPATH, _DT_RUNPATH = 0, 1, 14, 15, 29
_DT_STRTAB, _DT_SYMTAB, _DT_GNU_HASH = 5, 6, 0x6FFFFEF5
_VER_FLG_BASE = 0x1


class Unsupported(Exception):
    """The file needs the general reader (pyelftools): not an error of the file."""


class Section(Record):
    """One section header: ``name``, ``type``, ``offset``, ``size``, ``link``, ``info``,
    ``entsize`` (bytes and indices as in the file)."""

    name: str
    type: int
    offset: int
    size: int
    link: int
    info: int
    entsize: int


class Elf:
    """The headers of one ELF file in ``mm`` (a memory map or bytes); raises
    :class:`Unsupported` (or :class:`struct.error` / :class:`IndexError`, which callers
    treat the same) for a file this reader does not answer for."""

    def __init__(self, mm: Any) -> None:
        self.mm = mm
        size = len(mm)
        if size < 52 or mm[:4] != b"\x7fELF" or mm[4] not in (1, 2) or mm[5] not in (1, 2):
            raise Unsupported("not a plain ELF header")
        self.bits = 64 if mm[4] == 2 else 32
        e = self.endian = "<" if mm[5] == 1 else ">"
        wide = self.bits == 64
        head = struct.unpack_from(e + ("HHIQQQIHHHHHH" if wide else "HHIIIIIHHHHHH"), mm, 16)
        _t, machine, _v, _entry, phoff, shoff, _f, _eh, phentsize, phnum, shentsize, shnum, shstrndx = head
        if machine not in MACHINES or shnum == 0 or shoff == 0 or not 0 < shstrndx < shnum:
            raise Unsupported("machine, or no section headers")
        self.machine = MACHINES[machine]
        self._word = "Q" if wide else "I"
        sh_fmt = e + ("IIQQQQIIQQ" if wide else "IIIIIIIIII")
        ph_fmt = e + ("IIQQQQQQ" if wide else "IIIIIIII")
        if shentsize < struct.calcsize(sh_fmt) or (phnum and phentsize < struct.calcsize(ph_fmt)):
            raise Unsupported("odd header sizes")
        if shoff + shnum * shentsize > size or phoff + phnum * phentsize > size:
            raise Unsupported("headers beyond the end of the file")
        self.segments: List[Tuple[int, int, int, int]] = []  # (type, offset, vaddr, filesz)
        for i in range(phnum):
            if wide:
                ptype, _fl, poff, vaddr, _pa, filesz, _ms, _al = struct.unpack_from(ph_fmt, mm, phoff + i * phentsize)
            else:
                ptype, poff, vaddr, _pa, filesz, _ms, _fl, _al = struct.unpack_from(ph_fmt, mm, phoff + i * phentsize)
            if poff + filesz > size:
                raise Unsupported("a segment beyond the end of the file")
            self.segments.append((ptype, poff, vaddr, filesz))
        raw = []
        for i in range(shnum):
            name, stype, _fl, _addr, off, ssize, link, info, _al, entsize = struct.unpack_from(
                sh_fmt, mm, shoff + i * shentsize
            )
            if stype != _SHT_NOBITS and off + ssize > size:
                raise Unsupported("a section beyond the end of the file")
            raw.append((name, stype, off, ssize, link, info, entsize))
        names = raw[shstrndx]
        if names[1] != _SHT_STRTAB:
            raise Unsupported("section names not in a string table")
        self.sections = [Section(self._cstr(names[2], n), *rest) for n, *rest in raw]
        self._check_layouts()

    def _check_layouts(self) -> None:
        """The layout checks pyelftools makes when it builds each section object."""
        rel = {_SHT_REL: 16 if self.bits == 64 else 8, _SHT_RELA: 24 if self.bits == 64 else 12}
        for sec in self.sections:
            if sec.type in _UNSUPPORTED_TYPES or (sec.type == _SHT_PROGBITS and sec.name == ".stab"):
                raise Unsupported(f"section kind {sec.type:#x}")
            if sec.type in (_SHT_SYMTAB, _SHT_DYNSYM) and (sec.entsize <= 0 or sec.size % sec.entsize):
                raise Unsupported("symbol table layout")
            if sec.type in rel and sec.entsize != rel[sec.type]:
                raise Unsupported("relocation entry size")
            if sec.type == _SHT_RELR and sec.entsize != self.bits // 8:
                raise Unsupported("RELR entry size")
            if sec.type == _SHT_HASH and sec.size:  # pyelftools reads the whole table when it builds it
                nbuckets, nchains = struct.unpack_from(self.endian + "II", self.mm, sec.offset)
                if sec.offset + 8 + 4 * (nbuckets + nchains) > len(self.mm):
                    raise Unsupported("SHT_HASH beyond the end of the file")
            if sec.type == _SHT_GNU_HASH:
                nbuckets, _symoffset, bloom_size, _shift = struct.unpack_from(self.endian + "IIII", self.mm, sec.offset)
                if sec.offset + 16 + bloom_size * (self.bits // 8) + 4 * nbuckets > len(self.mm):
                    raise Unsupported("SHT_GNU_HASH beyond the end of the file")
            link = self.sections[sec.link].type if 0 <= sec.link < len(self.sections) else None
            strtab_users = (_SHT_DYNAMIC, _SHT_GNU_VERNEED, _SHT_GNU_VERDEF, _SHT_DYNSYM, _SHT_SYMTAB)
            if sec.type in strtab_users and link != _SHT_STRTAB:
                raise Unsupported("linked string table")
            if sec.type in (_SHT_HASH, _SHT_GNU_HASH, _SHT_GNU_VERSYM) and link not in (_SHT_SYMTAB, _SHT_DYNSYM):
                raise Unsupported("linked symbol table")

    def _cstr(self, table: int, offset: int) -> str:
        """The NUL-terminated string at ``table + offset`` ('' when empty), decoded as
        pyelftools decodes section string tables (UTF-8, bad bytes replaced)."""
        start = table + offset
        end = self.mm.find(b"\0", start)
        if end < 0 or start >= len(self.mm):
            raise Unsupported("string outside the file")
        raw: bytes = self.mm[start:end]
        return raw.decode("utf-8", "replace")

    def section(self, name: str) -> Optional[Section]:
        """The section called ``name`` (the last of that name, as pyelftools' name map)."""
        found = None
        for sec in self.sections:
            if sec.name == name:
                found = sec
        return found

    def _tags(self, offset: int, limit: Optional[int] = None) -> Iterator[Tuple[int, int]]:
        """``(d_tag, d_val)`` from ``offset`` up to and including ``DT_NULL``."""
        fmt = self.endian + ("qQ" if self.bits == 64 else "iI")
        step = struct.calcsize(fmt)
        pos = offset
        while True:
            if limit is not None and pos >= limit:
                return
            tag, val = struct.unpack_from(fmt, self.mm, pos)
            yield tag, val
            if tag == _DT_NULL:
                return
            pos += step

    def dynamic(self) -> Dict[str, Any]:
        """``{"needed", "soname", "rpath", "runpath"}`` of the ``.dynamic`` section (else of
        ``PT_DYNAMIC``, whose strings are those of the dynamic section at its offset)."""
        out: Dict[str, Any] = {"needed": [], "soname": None, "rpath": [], "runpath": []}
        sec = self.section(".dynamic")
        if sec is not None:
            if sec.type != _SHT_DYNAMIC:
                raise Unsupported(".dynamic is not SHT_DYNAMIC")
            tags: Iterator[Tuple[int, int]] = iter(()) if sec.type == _SHT_NOBITS else self._tags(sec.offset)
            strtab = self.sections[sec.link].offset
        else:
            seg = next((s for s in self.segments if s[0] == _PT_DYNAMIC), None)
            if seg is None:
                return out
            owner = next((s for s in self.sections if s.type == _SHT_DYNAMIC and s.offset == seg[1]), None)
            if owner is None:
                raise Unsupported("PT_DYNAMIC without its section")
            tags = iter(()) if seg[3] == 0 else self._tags(seg[1])
            strtab = self.sections[owner.link].offset
        for tag, val in tags:
            if tag == _DT_NEEDED:
                out["needed"].append(self._cstr(strtab, val))
            elif tag == _DT_SONAME:
                out["soname"] = self._cstr(strtab, val)
            elif tag == _DT_RPATH:
                out["rpath"].extend(self._cstr(strtab, val).split(":"))
            elif tag == _DT_RUNPATH:
                out["runpath"].extend(self._cstr(strtab, val).split(":"))
        return out

    def versions(self) -> Tuple[Dict[str, List[str]], List[str]]:
        """``(needs {library: [version names]}, definitions [names])`` of every
        ``SHT_GNU_verneed`` / ``SHT_GNU_verdef`` section, in section order (pyelftools'
        walk: ``sh_info`` entries, each aux list walked ``cnt`` times by its ``next``)."""
        e = self.endian
        needs: Dict[str, List[str]] = {}
        defs: List[str] = []
        for sec in self.sections:
            if sec.type in (_SHT_GNU_VERNEED, _SHT_GNU_VERDEF) and sec.info > sec.size // 16:
                raise Unsupported("more version entries than the section holds")  # pyelftools' path says so
            if sec.type == _SHT_GNU_VERNEED:
                strtab = self.sections[sec.link].offset
                pos = sec.offset
                for _ in range(sec.info):
                    _ver, cnt, file_off, aux, nxt = struct.unpack_from(e + "HHIII", self.mm, pos)
                    if cnt <= 0:
                        raise Unsupported("verneed without entries")
                    names = needs.setdefault(self._cstr(strtab, file_off), [])
                    apos = pos + aux
                    for _ in range(cnt):
                        _h, _fl, _o, name, anext = struct.unpack_from(e + "IHHII", self.mm, apos)
                        names.append(self._cstr(strtab, name))
                        apos += anext
                    pos += nxt
            elif sec.type == _SHT_GNU_VERDEF:
                strtab = self.sections[sec.link].offset
                pos = sec.offset
                for _ in range(sec.info):
                    _ver, flags, _ndx, cnt, _h, aux, nxt = struct.unpack_from(e + "HHHHIII", self.mm, pos)
                    if cnt <= 0:
                        raise Unsupported("verdef without entries")
                    if not flags & _VER_FLG_BASE:
                        (name, _anext) = struct.unpack_from(e + "II", self.mm, pos + aux)
                        defs.append(self._cstr(strtab, name))
                    pos += nxt
        return needs, defs

    def dynsym(self, want_defined: bool = True) -> Tuple[Set[str], Set[str]]:
        """``(defined, undefined strong)`` names of ``.dynsym`` (empty names skipped;
        ``STB_WEAK`` undefined ones left out).  ``want_defined`` false: the defined names are
        neither looked up nor decoded (an empty set; a library exports tens of thousands)."""
        sec = self.section(".dynsym")
        if sec is None or sec.type != _SHT_DYNSYM:
            raise Unsupported("no SHT_DYNSYM .dynsym")
        strtab = self.sections[sec.link].offset
        mm = self.mm
        defined: Set[str] = set()
        undefined: Set[str] = set()
        if self.bits == 64:
            fmt, name_at, info_at, shndx_at = self.endian + "IBBHQQ", 0, 1, 3
        else:
            fmt, name_at, info_at, shndx_at = self.endian + "IIIBBH", 0, 3, 5
        if sec.entsize != struct.calcsize(fmt):
            raise Unsupported("odd symbol size")
        table = mm[sec.offset : sec.offset + sec.size]
        find = mm.find
        last_nul = mm.rfind(b"\0")  # a name starting after it has no end (as find() would say)
        for sym in struct.iter_unpack(fmt, table):
            if sym[shndx_at] != 0 and not want_defined:
                if strtab + sym[name_at] > last_nul:
                    raise Unsupported("symbol name outside the file")
                continue
            start = strtab + sym[name_at]
            end = find(b"\0", start)
            if end < 0:
                raise Unsupported("symbol name outside the file")
            if end == start:
                continue
            name = mm[start:end].decode("utf-8", "replace")
            if sym[shndx_at] == 0:
                if sym[info_at] >> 4 != 2:  # STB_WEAK
                    undefined.add(name)
            else:
                defined.add(name)
        return defined, undefined

    def gnu_hash_layout(self) -> Tuple[Optional[Dict[str, int]], Optional[str]]:
        """``({"DT_GNU_HASH", "DT_SYMTAB", "DT_STRTAB": file offsets}, None)`` from the
        ``PT_DYNAMIC`` tags (mapped through ``PT_LOAD``), or ``(None, reason)``."""
        addrs: Dict[str, int] = {}
        wanted = {_DT_GNU_HASH: "DT_GNU_HASH", _DT_SYMTAB: "DT_SYMTAB", _DT_STRTAB: "DT_STRTAB"}
        for ptype, off, _vaddr, filesz in self.segments:
            if ptype != _PT_DYNAMIC:
                continue
            owner = next((s for s in self.sections if s.type == _SHT_DYNAMIC and s.offset == off), None)
            if owner is None:
                raise Unsupported("PT_DYNAMIC without its section")
            for tag, val in iter(()) if filesz == 0 else self._tags(off):
                if tag in wanted:
                    addrs[wanted[tag]] = val
        if len(addrs) < 3:
            return None, "no DT_GNU_HASH table"
        loads = [s for s in self.segments if s[0] == _PT_LOAD]
        out: Dict[str, int] = {}
        for key, vaddr in addrs.items():
            for _t, poff, pvaddr, filesz in loads:
                if pvaddr <= vaddr < pvaddr + filesz:
                    out[key] = vaddr - pvaddr + poff
                    break
            else:
                raise Unsupported(f"address {vaddr:#x} outside PT_LOAD")  # pyelftools' path says so
        return out, None


def open_map(fh: Any) -> Any:
    """A read-only memory map of the open regular file ``fh``; raises
    :class:`Unsupported` for an empty file (nothing to map)."""
    try:
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except ValueError as exc:  # an empty file
        raise Unsupported(str(exc)) from exc


#: What the fast path may raise on a file it does not answer for.
FALLBACK: Tuple[Type[BaseException], ...] = (Unsupported, struct.error, IndexError, OverflowError, UnicodeDecodeError)
