"""ELF dynamic-section facts of shared libraries (via pyelftools, imported lazily).

What the loader (``ld.so``) and the ABI checks need from one ``.so`` file:

* ``SONAME``, ``DT_NEEDED`` entries (in order), ``DT_RPATH`` and ``DT_RUNPATH``
  (split on ``:``, ``$ORIGIN`` kept verbatim for the resolver);
* versioned needs (``.gnu.version_r``): ``{"libstdc++.so.6": ["GLIBCXX_3.4.29", ...]}``
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
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

from npudoctor.host import open_regular

#: e_machine → ``uname -m`` name.
MACHINES = {"EM_X86_64": "x86_64", "EM_AARCH64": "aarch64", "EM_386": "i686", "EM_ARM": "arm"}


@dataclass
class ElfInfo:
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


def _errors() -> Tuple[type, ...]:
    from elftools.common.exceptions import ELFError

    return (ELFError, struct.error, ValueError, KeyError, IndexError, TypeError, AttributeError, AssertionError)


def read_elf(path: str) -> ElfInfo:
    """Read the dynamic-linking facts of the ELF file at ``path`` (a real path).

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
        fh.seek(0)
        try:
            _fill(info, _elffile(fh))
        except _errors() as exc:
            info.error = f"corrupt ELF: {type(exc).__name__}: {exc}"[:300]
        except OSError as exc:
            info.error = f"read error: {exc}"
    return info


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
                info.rpath.extend(p for p in tag.rpath.split(":") if p)
            elif kind == "DT_RUNPATH":
                info.runpath.extend(p for p in tag.runpath.split(":") if p)
    for section in elf.iter_sections():
        stype = section["sh_type"]
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


def dynamic_symbols(path: str) -> Tuple[Set[str], Set[str], Optional[str]]:
    """``(defined, undefined_strong, error)`` names of the ``.dynsym`` table.

    Weak undefined symbols are left out of ``undefined_strong`` (the loader does not
    require them).  ``error`` is ``None`` or a reason; the sets are then empty.
    """
    defined: Set[str] = set()
    undefined: Set[str] = set()
    try:
        with open_regular(path) as fh:
            elf = _elffile(fh)
            dynsym = elf.get_section_by_name(".dynsym")
            if dynsym is None:
                return defined, undefined, "no .dynsym section"
            for sym in dynsym.iter_symbols():
                name = sym.name
                if not name:
                    continue
                if sym["st_shndx"] == "SHN_UNDEF":
                    if sym["st_info"]["bind"] != "STB_WEAK":
                        undefined.add(name)
                else:
                    defined.add(name)
    except OSError as exc:
        return set(), set(), exc.strerror or str(exc)
    except _errors() as exc:
        return set(), set(), f"corrupt ELF: {type(exc).__name__}: {exc}"[:300]
    return defined, undefined, None


def gnu_hash(name: bytes) -> int:
    """The GNU hash (``DT_GNU_HASH``) of a symbol name: h = h*33 + c, from 5381."""
    h = 5381
    for c in name:
        h = (h * 33 + c) & 0xFFFFFFFF
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

    @classmethod
    def open(cls, path: str) -> Tuple[Optional[SymbolIndex], Optional[str]]:
        """``(index, None)`` or ``(None, reason)``; never raises."""
        try:
            fh = open_regular(path)  # noqa: SIM115 -- closed by the `with` below
        except OSError as exc:
            return None, exc.strerror or str(exc)
        try:
            with fh:
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
                            return vaddr - seg["p_vaddr"] + seg["p_offset"]
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

    def _name_at(self, off: int) -> bytes:
        end = self._mm.find(b"\0", off)
        return self._mm[off:end] if end >= 0 else b""

    def defines(self, name: str) -> bool:
        """True when the library exports ``name`` (defined, non-local dynamic symbol)."""
        try:
            return self._defines(name.encode("utf-8", "surrogateescape"))
        except (struct.error, ValueError, IndexError):
            return False

    def _defines(self, raw: bytes) -> bool:
        h = gnu_hash(raw)
        wbits = self._word_bytes * 8
        (bloom,) = struct.unpack_from(
            self._e + self._word, self._mm, self._bloom_off + ((h // wbits) % self._bloom_size) * self._word_bytes
        )
        if not (bloom >> (h % wbits)) & (bloom >> ((h >> self._shift) % wbits)) & 1:
            return False
        (idx,) = struct.unpack_from(self._e + "I", self._mm, self._buckets_off + (h % self._nbuckets) * 4)
        if idx == 0 or idx < self._symoffset:
            return False
        while True:
            (chain,) = struct.unpack_from(self._e + "I", self._mm, self._chains_off + (idx - self._symoffset) * 4)
            if (chain | 1) == (h | 1):
                sym_off = self._symtab + idx * self._sym_size
                if self._bits == 64:
                    st_name, st_info, _o, st_shndx = struct.unpack_from(self._e + "IBBH", self._mm, sym_off)
                else:
                    st_name, _v, _s, st_info, _o, st_shndx = struct.unpack_from(self._e + "IIIBBH", self._mm, sym_off)
                if st_shndx != 0 and (st_info >> 4) != 0 and self._name_at(self._strtab + st_name) == raw:
                    return True
            if chain & 1:
                return False
            idx += 1

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._mm.close()

    def __enter__(self) -> SymbolIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def missing_symbols(names: Iterable[str], libraries: Iterable[str]) -> Tuple[List[str], List[str]]:
    """Which of ``names`` none of ``libraries`` (real paths) export.

    Returns ``(missing sorted, problems)``; ``problems`` lists libraries that could not
    be indexed (they are then scanned fully through ``.dynsym``)."""
    wanted = set(names)
    problems: List[str] = []
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
            wanted = {n for n in wanted if not index.defines(n)}
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
