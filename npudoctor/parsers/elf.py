"""ELF dynamic-section facts of shared libraries (via pyelftools, imported lazily).

What the loader (``ld.so``) and the ABI checks need from one ``.so`` file:

* ``SONAME``, ``DT_NEEDED`` entries (in order), ``DT_RPATH`` and ``DT_RUNPATH``
  (split on ``:``, ``$ORIGIN`` kept verbatim for the resolver, empty entries kept: ld.so
  searches them as the working directory);
* versioned needs (``.gnu.version_r``, or ``DT_VERNEED`` when the file has no section
  headers, as the loader reads them): ``{"libstdc++.so.6": ["GLIBCXX_3.4.29", ...]}``
  and version definitions (``.gnu.version_d``: what a ``libc.so.6`` or
  ``libstdc++.so.6`` provides);
* dynamic symbols: defined (exported) and undefined (imported, weak ones flagged).

Symbol lookups in big libraries (``libtorch_cpu.so`` has hundreds of thousands of
dynamic symbols) use the library's own ``DT_GNU_HASH`` table, the way ``ld.so`` does,
so a check costs per looked-up name, not per exported symbol.

Malformed or truncated files never raise: :func:`read_elf` returns an
:class:`ElfInfo` whose ``error`` says what is wrong.  The format reference is the
System V gABI and the GNU symbol-versioning / GNU-hash extensions (glibc ``elf.h``).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import struct
from typing import Any, Dict, Iterable, Iterator, List, Optional, Set, Tuple, Type

from npudoctor.host import open_regular
from npudoctor.record import MutableRecord, field

#: e_machine → ``uname -m`` name.
MACHINES = {"EM_X86_64": "x86_64", "EM_AARCH64": "aarch64", "EM_386": "i686", "EM_ARM": "arm"}


class ElfInfo(MutableRecord):
    """Dynamic-linking facts of one ELF file.

    ``path``: the file read (a path of this machine); ``machine``: ``x86_64`` /
    ``aarch64`` / raw ``EM_*`` name; ``bits``: 32 or 64; ``soname``: ``DT_SONAME`` or
    ``None``; ``needed``: ``DT_NEEDED`` names in order; ``rpath``/``runpath``: the
    entries of ``DT_RPATH``/``DT_RUNPATH``; ``version_needs``: library → version names
    required from it; ``version_defs``: version names this file defines;
    ``error``: ``None`` or why the file could not be read as ELF.
    """

    path: str
    machine: Optional[str] = None
    bits: Optional[int] = None
    soname: Optional[str] = None
    needed: List[str] = field(default_factory=list)
    rpath: List[str] = field(default_factory=list)
    runpath: List[str] = field(default_factory=list)
    version_needs: Dict[str, List[str]] = field(default_factory=dict)
    version_defs: List[str] = field(default_factory=list)
    error: Optional[str] = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> Dict[str, Any]:
        return {
            "path": self.path,
            "machine": self.machine,
            "bits": self.bits,
            "soname": self.soname,
            "needed": list(self.needed),
            "rpath": list(self.rpath),
            "runpath": list(self.runpath),
            "version_needs": {k: list(v) for k, v in self.version_needs.items()},
            "error": self.error,
        }


def _elffile(fh: Any) -> Any:
    from elftools.elf.elffile import ELFFile

    return ELFFile(fh)


def _errors() -> Tuple[Type[BaseException], ...]:
    from elftools.common.exceptions import ELFError

    return (ELFError, struct.error, ValueError, KeyError, IndexError, TypeError, AttributeError, AssertionError)


@contextlib.contextmanager
def _fast_elf(fh: Any) -> Iterator[Optional[Any]]:
    """The :class:`~npudoctor.parsers.elfread.Elf` of the open file ``fh`` when the small
    reader answers for it, else ``None`` (then pyelftools reads it); the map is closed on
    exit."""
    from npudoctor.parsers import elfread

    try:
        mm = elfread.open_map(fh)
    except (elfread.Unsupported, OSError):
        yield None
        return
    try:
        try:
            elf: Optional[Any] = elfread.Elf(mm)
        except elfread.FALLBACK:
            elf = None
        yield elf
    finally:
        with contextlib.suppress(OSError, ValueError, BufferError):
            mm.close()


def _fast_fill(info: ElfInfo, fh: Any) -> bool:
    """Fill ``info`` with the small reader; ``False`` (``info`` untouched) when it does not
    answer for the file."""
    from npudoctor.parsers.elfread import FALLBACK

    with _fast_elf(fh) as elf:
        if elf is None:
            return False
        try:
            dyn = elf.dynamic()
            needs, defs = elf.versions()
        except FALLBACK:
            return False
    info.machine, info.bits = elf.machine, elf.bits
    info.needed, info.soname, info.rpath, info.runpath = dyn["needed"], dyn["soname"], dyn["rpath"], dyn["runpath"]
    info.version_needs, info.version_defs = needs, defs
    return True


def read_elf(path: str, fast: bool = True) -> ElfInfo:
    """Read the dynamic-linking facts of the ELF file at ``path`` (a real path): with the
    small reader of :mod:`npudoctor.parsers.elfread` when it answers for the file (and
    ``fast``), else with pyelftools (the same facts; tests compare both).

    Never raises: an unreadable, non-ELF or corrupt file gives ``error`` set
    ("not found", "not an ELF file", "corrupt ELF: ...").
    """
    info = ElfInfo(path=path)
    try:
        fh = open_regular(path)  # noqa: SIM115 -- closed by the `with` below
    except OSError as exc:
        info.error = exc.strerror or str(exc)
        return info
    with fh:
        if fh.read(4) != b"\x7fELF":
            info.error = "not an ELF file"
            return info
        if fast and _fast_fill(info, fh):
            return info
        fh.seek(0)
        try:
            _fill(info, _elffile(fh))
        except _errors() as exc:
            info.error = _corrupt(path, exc)
        except OSError as exc:
            info.error = f"read error: {exc}"
    return info


def _corrupt(path: str, exc: BaseException) -> str:
    """``corrupt ELF: …`` for ``exc``, saying "truncated" when the file ends before what
    its own headers describe (pyelftools' messages do not say so)."""
    short = truncated(path)
    why = f"{type(exc).__name__}: {exc}"
    return (f"corrupt ELF: truncated ({short}); {why}" if short else f"corrupt ELF: {why}")[:300]


def truncated(path: str) -> Optional[str]:
    """Why the ELF file at ``path`` is shorter than its headers say (``"file is N bytes,
    its headers describe M"``), or ``None`` when it is not (or cannot be read)."""
    try:
        with open_regular(path) as fh:
            head = fh.read(64)
            size = os.fstat(fh.fileno()).st_size
            if len(head) < 16:
                return f"file is {size} bytes, shorter than an ELF identification"
            bits64 = head[4] == 2
            endian = "<" if head[5] != 2 else ">"
            need = 64 if bits64 else 52
            if len(head) < need:
                return f"file is {size} bytes, shorter than its {need}-byte ELF header"
            fmt = endian + ("QQ" if bits64 else "II")
            phoff, shoff = struct.unpack_from(fmt, head, 32 if bits64 else 28)
            phentsize, phnum, shentsize, shnum = struct.unpack_from(endian + "HHHH", head, 54 if bits64 else 42)
            end = max(need, phoff + phentsize * phnum if phnum else 0, shoff + shentsize * shnum if shnum else 0)
            if phnum and phoff + phentsize * phnum <= size:
                fh.seek(phoff)
                table = fh.read(phentsize * phnum)
                for i in range(phnum):
                    if bits64:
                        _t, _f, off, _v, _p, filesz = struct.unpack_from(endian + "IIQQQQ", table, i * phentsize)
                    else:
                        _t, off, _v, _p, filesz = struct.unpack_from(endian + "IIIII", table, i * phentsize)
                    end = max(end, off + filesz)
    except (OSError, struct.error):
        return None
    return f"file is {size} bytes, its headers describe {end}" if size < end else None


def _fill(info: ElfInfo, elf: Any) -> None:
    info.machine = MACHINES.get(elf["e_machine"], str(elf["e_machine"]))
    info.bits = elf.elfclass
    dynamic = elf.get_section_by_name(".dynamic")
    if dynamic is None:
        for seg in elf.iter_segments():
            if seg["p_type"] == "PT_DYNAMIC":
                dynamic = seg
                break
    if dynamic is not None:
        for tag in dynamic.iter_tags():
            kind = tag.entry.d_tag
            if kind == "DT_NEEDED":
                info.needed.append(tag.needed)
            elif kind == "DT_SONAME":
                info.soname = tag.soname
            elif kind == "DT_RPATH":
                info.rpath.extend(tag.rpath.split(":"))
            elif kind == "DT_RUNPATH":
                info.runpath.extend(tag.runpath.split(":"))
    if dynamic is not None and elf.num_sections() == 0:
        info.version_needs.update(_dt_verneed(elf, dynamic))
    for section in elf.iter_sections():
        stype = section["sh_type"]
        if stype in ("SHT_GNU_verneed", "SHT_GNU_verdef") and section["sh_info"] > section["sh_size"] // 16:
            # each entry takes 16 (verneed) or 20 (verdef) bytes of the section: a bigger
            # count is corrupt, and pyelftools would walk it (billions of times) without end
            raise ValueError(f"{section.name} counts {section['sh_info']} entries in {section['sh_size']} bytes")
        if stype == "SHT_GNU_verneed":
            for verneed, aux_iter in section.iter_versions():
                names = [aux.name for aux in aux_iter]
                info.version_needs.setdefault(verneed.name, []).extend(names)
        elif stype == "SHT_GNU_verdef":
            for verdef, aux_iter in section.iter_versions():
                if verdef["vd_flags"] & 0x1:  # VER_FLG_BASE: the file's own name
                    continue
                for aux in aux_iter:
                    info.version_defs.append(aux.name)
                    break


def _vaddr_offset(elf: Any, vaddr: int) -> int:
    """File offset of virtual address ``vaddr`` (through the ``PT_LOAD`` segments)."""
    for seg in elf.iter_segments():
        if seg["p_type"] == "PT_LOAD" and seg["p_vaddr"] <= vaddr < seg["p_vaddr"] + seg["p_filesz"]:
            return int(vaddr - seg["p_vaddr"] + seg["p_offset"])
    raise ValueError(f"address {vaddr:#x} outside PT_LOAD")


def _dt_verneed(elf: Any, dynamic: Any) -> Dict[str, List[str]]:
    """Version needs from ``DT_VERNEED``/``DT_VERNEEDNUM`` and ``DT_STRTAB`` (what ld.so
    reads; used when the file has no section headers).  ``Elfxx_Verneed``: vn_version,
    vn_cnt (u16), vn_file, vn_aux, vn_next (u32); ``Elfxx_Vernaux``: vna_hash (u32),
    vna_flags, vna_other (u16), vna_name, vna_next (u32) -- the same in ELF32 and ELF64."""
    tags: Dict[str, int] = {}
    for tag in dynamic.iter_tags():
        if tag.entry.d_tag in ("DT_VERNEED", "DT_VERNEEDNUM", "DT_STRTAB", "DT_STRSZ"):
            tags[tag.entry.d_tag] = tag.entry.d_val
    if "DT_VERNEED" not in tags or "DT_STRTAB" not in tags:
        return {}
    e = "<" if elf.little_endian else ">"
    stream = elf.stream
    strtab = _vaddr_offset(elf, tags["DT_STRTAB"])

    def string(off: int) -> str:
        stream.seek(strtab + off)
        raw: bytes = stream.read(4096)
        return raw.split(b"\0", 1)[0].decode("utf-8", "replace")

    out: Dict[str, List[str]] = {}
    pos = _vaddr_offset(elf, tags["DT_VERNEED"])
    for _ in range(min(tags.get("DT_VERNEEDNUM", 64), 4096)):
        stream.seek(pos)
        _ver, cnt, file_off, aux, nxt = struct.unpack(e + "HHIII", stream.read(16))
        names = out.setdefault(string(file_off), [])
        apos = pos + aux
        for _ in range(min(cnt, 4096)):
            stream.seek(apos)
            _h, _fl, _o, name, anext = struct.unpack(e + "IHHII", stream.read(16))
            names.append(string(name))
            if not anext:
                break
            apos += anext
        if not nxt:
            break
        pos += nxt
    return out


def dynamic_symbols(
    path: str, fast: bool = True, want_defined: bool = True
) -> Tuple[Set[str], Set[str], Optional[str]]:
    """``(defined, undefined_strong, error)`` names of the ``.dynsym`` table (the small
    reader when it answers for the file and ``fast``, else pyelftools).

    Weak undefined symbols are left out of ``undefined_strong`` (the loader does not
    require them).  ``error`` is ``None`` or a reason; the sets are then empty.
    ``want_defined`` false: only the undefined names are read (``defined`` is empty).
    """
    from npudoctor.parsers.elfread import FALLBACK

    defined: Set[str] = set()
    undefined: Set[str] = set()
    try:
        with open_regular(path) as fh:
            if fast:
                with _fast_elf(fh) as quick:
                    if quick is not None:
                        try:
                            got_defined, got_undefined = quick.dynsym(want_defined)
                            return got_defined, got_undefined, None
                        except FALLBACK:
                            pass
            fh.seek(0)
            elf = _elffile(fh)
            dynsym = elf.get_section_by_name(".dynsym")
            if dynsym is None:  # no section headers: DT_SYMTAB, sized by the hash tables
                dynsym = next((s for s in elf.iter_segments() if s["p_type"] == "PT_DYNAMIC"), None)
            if dynsym is None:
                return defined, undefined, "no .dynsym section nor PT_DYNAMIC segment"
            for sym in dynsym.iter_symbols():
                name = sym.name
                if not name:
                    continue
                if sym["st_shndx"] == "SHN_UNDEF":
                    if sym["st_info"]["bind"] != "STB_WEAK":
                        undefined.add(name)
                elif want_defined:
                    defined.add(name)
    except OSError as exc:
        return set(), set(), exc.strerror or str(exc)
    except _errors() as exc:
        return set(), set(), _corrupt(path, exc)
    return defined, undefined, None


_MASK32 = 0xFFFFFFFF
#: Powers of 33 for :func:`gnu_hash`'s eight-byte steps.
_P = [33**k for k in range(9)]


def gnu_hash(name: bytes) -> int:
    """The GNU hash (``DT_GNU_HASH``) of a symbol name: h = h*33 + c, from 5381, modulo
    2**32.  Eight bytes per step (h*33**8 + c0*33**7 + ... + c7): the same value in a
    quarter of the Python-level steps (a ``check`` hashes thousands of names)."""
    h = 5381
    cut = len(name) - len(name) % 8
    p1, p2, p3, p4, p5, p6, p7, p8 = _P[1:]
    for c0, c1, c2, c3, c4, c5, c6, c7 in struct.iter_unpack("8B", name[:cut]):
        h = (h * p8 + c0 * p7 + c1 * p6 + c2 * p5 + c3 * p4 + c4 * p3 + c5 * p2 + c6 * p1 + c7) & _MASK32
    for c in name[cut:]:
        h = (h * 33 + c) & _MASK32
    return h


class SymbolIndex:
    """Answer "does this library export symbol X?" through its ``DT_GNU_HASH`` table.

    Open with :meth:`open` (returns ``None`` plus a reason when the file has no GNU
    hash or is not a readable ELF); :meth:`defines` then takes O(chain length) per
    name.  The file is memory-mapped and closed with :meth:`close` (or ``with``).
    """

    def __init__(self, path: str, mm: mmap.mmap, endian: str, bits: int, symtab: int, strtab: int, gnuhash: int):
        self.path = path
        self._mm = mm
        self._e = endian
        self._bits = bits
        self._symtab = symtab
        self._strtab = strtab
        self._sym_size = 24 if bits == 64 else 16
        word = "Q" if bits == 64 else "I"
        nbuckets, self._symoffset, bloom_size, self._shift = struct.unpack_from(endian + "4I", mm, gnuhash)
        self._nbuckets = nbuckets
        self._bloom_off = gnuhash + 16
        self._bloom_size = bloom_size
        self._word = word
        self._word_bytes = 8 if bits == 64 else 4
        self._buckets_off = self._bloom_off + bloom_size * self._word_bytes
        self._chains_off = self._buckets_off + nbuckets * 4
        if nbuckets == 0 or bloom_size == 0:
            raise ValueError("empty GNU hash table")
        self._bloom_word = struct.Struct(endian + word).unpack_from
        self._u32 = struct.Struct(endian + "I").unpack_from
        self._sym = struct.Struct(endian + ("IBBH" if bits == 64 else "IIIBBH")).unpack_from

    @classmethod
    def open(cls, path: str, fast: bool = True) -> Tuple[Optional[SymbolIndex], Optional[str]]:
        """``(index, None)`` or ``(None, reason)``; never raises.  The table is located by
        the small reader when it answers for the file (and ``fast``), else by pyelftools."""
        from npudoctor.parsers.elfread import FALLBACK

        try:
            fh = open_regular(path)  # noqa: SIM115 -- closed by the `with` below
        except OSError as exc:
            return None, exc.strerror or str(exc)
        try:
            with fh:
                if fast:
                    with _fast_elf(fh) as quick:
                        layout: Optional[Dict[str, int]] = None
                        why: Optional[str] = None
                        if quick is not None:
                            try:
                                layout, why = quick.gnu_hash_layout()
                            except FALLBACK:
                                quick = None
                        if quick is not None and layout is None:
                            return None, why
                        if quick is not None and layout is not None:
                            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
                            bits, endian = quick.bits, quick.endian
                            return (
                                cls(
                                    path,
                                    mm,
                                    endian,
                                    bits,
                                    layout["DT_SYMTAB"],
                                    layout["DT_STRTAB"],
                                    layout["DT_GNU_HASH"],
                                ),
                                None,
                            )
                fh.seek(0)
                elf = _elffile(fh)
                endian = "<" if elf.little_endian else ">"
                bits = elf.elfclass
                loads = [s for s in elf.iter_segments() if s["p_type"] == "PT_LOAD"]
                addrs: Dict[str, int] = {}
                for seg in elf.iter_segments():
                    if seg["p_type"] != "PT_DYNAMIC":
                        continue
                    for tag in seg.iter_tags():
                        if tag.entry.d_tag in ("DT_GNU_HASH", "DT_SYMTAB", "DT_STRTAB"):
                            addrs[tag.entry.d_tag] = tag.entry.d_val
                if "DT_GNU_HASH" not in addrs or "DT_SYMTAB" not in addrs or "DT_STRTAB" not in addrs:
                    return None, "no DT_GNU_HASH table"

                def offset(vaddr: int) -> int:
                    for seg in loads:
                        if seg["p_vaddr"] <= vaddr < seg["p_vaddr"] + seg["p_filesz"]:
                            return int(vaddr - seg["p_vaddr"] + seg["p_offset"])
                    raise ValueError(f"address {vaddr:#x} outside PT_LOAD")

                offsets = {k: offset(v) for k, v in addrs.items()}
                mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            return (
                cls(path, mm, endian, bits, offsets["DT_SYMTAB"], offsets["DT_STRTAB"], offsets["DT_GNU_HASH"]),
                None,
            )
        except _errors() as exc:
            return None, f"corrupt ELF: {type(exc).__name__}: {exc}"[:300]
        except (OSError, OverflowError) as exc:
            return None, f"read error: {exc}"

    def _is_name_at(self, off: int, raw: bytes) -> bool:
        """Whether the NUL-terminated string at ``off`` is ``raw`` (compares ``len(raw) + 1``
        bytes, never scans for the NUL of a long name)."""
        end = off + len(raw)
        return self._mm[off:end] == raw and self._mm[end : end + 1] == b"\0"

    def defines(self, name: str) -> bool:
        """True when the library exports ``name`` (defined, non-local dynamic symbol)."""
        try:
            return self._defines(name.encode("utf-8", "surrogateescape"))
        except (struct.error, ValueError, IndexError):
            return False

    def _defines(self, raw: bytes, h: Optional[int] = None) -> bool:
        if h is None:
            h = gnu_hash(raw)
        wbits = self._word_bytes * 8
        (bloom,) = self._bloom_word(self._mm, self._bloom_off + ((h // wbits) % self._bloom_size) * self._word_bytes)
        if not (bloom >> (h % wbits)) & (bloom >> ((h >> self._shift) % wbits)) & 1:
            return False
        (idx,) = self._u32(self._mm, self._buckets_off + (h % self._nbuckets) * 4)
        if idx == 0 or idx < self._symoffset:
            return False
        while True:
            (chain,) = self._u32(self._mm, self._chains_off + (idx - self._symoffset) * 4)
            if (chain | 1) == (h | 1):
                sym = self._sym(self._mm, self._symtab + idx * self._sym_size)
                st_name, st_info, st_shndx = (sym[0], sym[1], sym[3]) if self._bits == 64 else (sym[0], sym[3], sym[5])
                if st_shndx != 0 and (st_info >> 4) != 0 and self._is_name_at(self._strtab + st_name, raw):
                    return True
            if chain & 1:
                return False
            idx += 1

    def not_defined(self, names: Iterable[Tuple[str, Optional[Tuple[bytes, int]]]]) -> Set[str]:
        """Which of ``names`` -- ``(name, (UTF-8 bytes, GNU hash) or None)`` pairs, ``None``
        for a name no string table holds -- the library does not export (one call for a
        whole list: thousands of names are asked of each provider)."""
        out: Set[str] = set()
        for name, hashed in names:
            try:
                found = hashed is not None and self._defines(*hashed)
            except (struct.error, ValueError, IndexError):
                found = False
            if not found:
                out.add(name)
        return out

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._mm.close()

    def __enter__(self) -> SymbolIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _hashed(name: str) -> Optional[Tuple[bytes, int]]:
    """``(UTF-8 bytes, GNU hash)`` of a symbol name, or ``None`` for a name no ELF string
    table can hold (a lone surrogate, a NUL): no library defines it."""
    try:
        raw = name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return None
    return (raw, gnu_hash(raw)) if raw and b"\0" not in raw else None


def missing_symbols(names: Iterable[str], libraries: Iterable[str]) -> Tuple[List[str], List[str]]:
    """Which of ``names`` none of ``libraries`` (real paths) export.

    Returns ``(missing sorted, problems)``; ``problems`` lists libraries that could not
    be indexed (they are then scanned fully through ``.dynsym``)."""
    wanted = set(names)
    problems: List[str] = []
    hashed: Dict[str, Optional[Tuple[bytes, int]]] = {}  # name -> (UTF-8, GNU hash), once for all libraries
    for lib in libraries:
        if not wanted:
            break
        index, why = SymbolIndex.open(lib)
        if index is None:
            defined, _u, err = dynamic_symbols(lib)
            if err:
                problems.append(f"{lib}: {err}")
                continue
            if why:
                problems.append(f"{lib}: {why}; scanned .dynsym")
            wanted -= defined
            continue
        with index:
            for n in [n for n in wanted if n not in hashed]:
                hashed[n] = _hashed(n)
            wanted = index.not_defined((n, hashed[n]) for n in wanted)
    return sorted(wanted), problems


def is_elf(path: str) -> bool:
    """True when ``path`` starts with the ELF magic."""
    try:
        with open_regular(path) as fh:
            return fh.read(4) == b"\x7fELF"
    except OSError:
        return False


def file_size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return -1
