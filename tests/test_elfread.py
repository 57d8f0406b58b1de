"""The small ELF reader (npudoctor/parsers/elfread.py) answers exactly as pyelftools does:
every fact read_elf, dynamic_symbols and SymbolIndex take from it is compared with the
pyelftools path (``fast=False``) on real files -- this machine's x86_64 and aarch64 system
libraries and programs, files built with gcc / g++ (tests/builders/elfbuild.py), the real torch /
torch_npu / numpy libraries of the realwheel venv -- and on corrupted copies of a real
library, where the reader must hand the file to pyelftools (same error text) or agree."""

from __future__ import annotations

import glob
import os
from pathlib import Path
from typing import List

import pytest
from builders.elfbuild import elf_world_fixture  # noqa: F401  (session fixture elf_world)
from builders.realwheel import realwheel_venv  # noqa: F401  (session fixture)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npudoctor.parsers import elfread
from npudoctor.parsers.elf import SymbolIndex, dynamic_symbols, read_elf

#: dynamic_symbols through pyelftools takes seconds on the biggest libraries.
DYNSYM_LIMIT = 8 << 20


def _elf_files(patterns: List[str], limit: int = 400) -> List[str]:
    out: List[str] = []
    for pattern in patterns:
        for path in sorted(glob.glob(pattern)):
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            try:
                with open(path, "rb") as fh:
                    if fh.read(4) != b"\x7fELF":
                        continue
            except OSError:
                continue
            out.append(path)
    return out[:limit]


def _layout(path: str, fast: bool):
    index, why = SymbolIndex.open(path, fast=fast)
    if index is None:
        return why
    with index:
        return index._symtab, index._strtab, index._bloom_off, index._nbuckets, index._bits


def _same(path: str, symbols: bool = True) -> None:
    fast, slow = read_elf(path), read_elf(path, fast=False)
    assert (fast.to_dict(), fast.version_defs) == (slow.to_dict(), slow.version_defs), path
    assert _layout(path, True) == _layout(path, False), path
    if symbols and os.path.getsize(path) <= DYNSYM_LIMIT:
        assert dynamic_symbols(path) == dynamic_symbols(path, fast=False), path


def _answers(path: str) -> bool:
    """Whether the small reader itself answered (no hand-over to pyelftools)."""
    with open(path, "rb") as fh:
        try:
            elf = elfread.Elf(elfread.open_map(fh))
            elf.dynamic()
            elf.versions()
        except elfread.FALLBACK:
            return False
    return True


def test_system_libraries_and_programs_x86_64():
    files = _elf_files(["/lib/x86_64-linux-gnu/*.so*", "/usr/bin/*"], limit=250)
    if not files:
        pytest.skip("no x86_64 system libraries here")
    for path in files:
        _same(path)
    answered = sum(_answers(p) for p in files)
    assert answered >= 0.9 * len(files), f"the small reader answered {answered} of {len(files)}"


def test_system_libraries_aarch64():
    files = _elf_files(["/usr/aarch64-linux-gnu/lib/*.so*"], limit=150)
    if not files:
        pytest.skip("no aarch64 cross libraries here (aarch64-linux-gnu-gcc's sysroot)")
    for path in files:
        _same(path)
    libc = [p for p in files if os.path.basename(p) == "libc.so.6"]
    assert libc and read_elf(libc[0]).machine == "aarch64" and "GLIBC_2.17" in read_elf(libc[0]).version_defs


def test_built_fixtures(elf_world):  # noqa: F811
    for _name, path in sorted(elf_world.files.items()):
        if Path(path).is_file() and not Path(path).is_symlink():
            with open(path, "rb") as fh:
                if fh.read(4) == b"\x7fELF":
                    _same(str(path))


@pytest.mark.slow
def test_real_torch_torch_npu_and_numpy_libraries(realwheel_venv):  # noqa: F811
    site = str(realwheel_venv.site_packages)
    files = _elf_files(
        [f"{site}/torch/lib/*.so*", f"{site}/torch/*.so", f"{site}/torch_npu/*.so", f"{site}/torch_npu/lib/*.so"]
        + [f"{site}/numpy/_core/*.so", f"{site}/numpy.libs/*"]
    )
    assert any(p.endswith("libtorch_npu.so") for p in files)
    for path in files:
        _same(path, symbols=not path.endswith(("libtorch_cpu.so", "libtorch_python.so")))
    npu = f"{site}/torch_npu/lib/libtorch_npu.so"
    assert dynamic_symbols(npu) == dynamic_symbols(npu, fast=False)  # ~100,000 dynamic symbols
    assert all(_answers(p) for p in files)


LIBM = "/lib/x86_64-linux-gnu/libm.so.6"


@pytest.mark.skipif(not os.path.isfile(LIBM), reason="no x86_64 libm here")
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(st.sampled_from(["header", "sections", "start"]), st.integers(0, 1 << 30), st.integers(0, 255)),
        min_size=1,
        max_size=4,
    ),
    st.one_of(st.none(), st.floats(0.0, 1.0)),
)
def test_corrupted_copies_agree(tmp_path, flips, cut):
    data = bytearray(Path(LIBM).read_bytes())
    shoff = int.from_bytes(data[0x28:0x30], "little")
    for where, pos, value in flips:
        if where == "header":
            data[pos % 64] = value
        elif where == "sections":
            data[shoff + pos % (len(data) - shoff)] = value
        else:
            data[pos % 0x2000] = value
    if cut is not None:
        data = data[: int(len(data) * cut)]
    path = tmp_path / "libm-corrupt.so"
    path.write_bytes(bytes(data))
    _same(str(path))


@pytest.mark.skipif(not os.path.isfile(LIBM), reason="no x86_64 libm here")
def test_a_version_section_counting_too_many_entries_is_corrupt_not_endless(tmp_path):
    """pyelftools walks sh_info entries even when the section cannot hold them (4 billion
    walks of one entry): both readers now call such a file corrupt, at once."""
    data = bytearray(Path(LIBM).read_bytes())
    shoff = int.from_bytes(data[0x28:0x30], "little")
    shnum = int.from_bytes(data[0x3C:0x3E], "little")
    for i in range(shnum):
        header = shoff + i * 64
        if int.from_bytes(data[header + 4 : header + 8], "little") == 0x6FFFFFFE:  # SHT_GNU_verneed
            data[header + 44 : header + 48] = (0xFFFFFFFF).to_bytes(4, "little")  # sh_info
            break
    else:
        pytest.skip("libm has no .gnu.version_r")
    path = tmp_path / "libm-verneed.so"
    path.write_bytes(bytes(data))
    size = int.from_bytes(data[header + 32 : header + 40], "little")
    errors = {read_elf(str(path), fast=fast).error for fast in (True, False)}
    assert errors == {f"corrupt ELF: ValueError: .gnu.version_r counts 4294967295 entries in {size} bytes"}
