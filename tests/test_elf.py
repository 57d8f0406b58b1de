"""ELF dynamic facts: gcc-built fixtures, the real torch_npu wheel when cached, corrupt files."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npudoctor.parsers.elf import SymbolIndex, dynamic_symbols, gnu_hash, missing_symbols, read_elf

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures"))
from builders.elf_build import build_so, have_gcc  # noqa: E402
from builders.realwheel import realwheel_venv  # noqa: E402, F401  (session fixture)

needs_gcc = pytest.mark.skipif(not have_gcc(), reason="gcc not available")


@needs_gcc
def test_dynamic_section_of_a_built_library(tmp_path):
    path = build_so(
        str(tmp_path / "libtorch_npu.so"),
        "libtorch_npu.so",
        needed=["libhccl.so", "libc10.so", "libstdc++.so.6"],
        rpath=["$ORIGIN/lib/", "$ORIGIN/"],
        defines=["_ZN7c10_npu3fooEv"],
        undefined=["_ZN5torch10ValueErrorC1EPKcz", "aclInit"],
        needs_versions={"libstdc++.so.6": ["GLIBCXX_3.4.29", "CXXABI_1.3.13"]},
    )
    info = read_elf(path)
    assert info.error is None
    assert info.soname == "libtorch_npu.so"
    assert info.needed == ["libhccl.so", "libc10.so", "libstdc++.so.6"]
    assert info.rpath == ["$ORIGIN/lib/", "$ORIGIN/"] and info.runpath == []
    assert list(info.version_needs) == ["libstdc++.so.6"]
    assert sorted(info.version_needs["libstdc++.so.6"]) == ["CXXABI_1.3.13", "GLIBCXX_3.4.29"]
    defined, undefined, err = dynamic_symbols(path)
    assert err is None
    assert "_ZN7c10_npu3fooEv" in defined
    assert {"_ZN5torch10ValueErrorC1EPKcz", "aclInit"} <= undefined


@needs_gcc
def test_runpath_and_version_definitions(tmp_path):
    lib = build_so(
        str(tmp_path / "libstdc++.so.6"),
        "libstdc++.so.6",
        runpath=["$ORIGIN/../lib"],
        versions={"a": "GLIBCXX_3.4", "b": "GLIBCXX_3.4.28"},
        version_script="GLIBCXX_3.4 { global: *; };\nGLIBCXX_3.4.28 { } GLIBCXX_3.4;\n",
    )
    info = read_elf(lib)
    assert info.runpath == ["$ORIGIN/../lib"] and info.rpath == []
    assert info.version_defs == ["GLIBCXX_3.4", "GLIBCXX_3.4.28"]


@needs_gcc
def test_gnu_hash_lookup_agrees_with_full_scan(tmp_path):
    names = [f"_ZN3c104sym{i}Ev" for i in range(300)]
    lib = build_so(str(tmp_path / "libc10.so"), "libc10.so", defines=names)
    index, why = SymbolIndex.open(lib)
    assert index is not None, why
    with index:
        assert all(index.defines(n) for n in names)
        assert not index.defines("_ZN3c104sym300Ev")
        assert not index.defines("")
    missing, problems = missing_symbols(names[:5] + ["absent_symbol"], [lib])
    assert missing == ["absent_symbol"] and problems == []


def _gnu_hash_bytewise(name: bytes) -> int:
    h = 5381
    for c in name:
        h = (h * 33 + c) & 0xFFFFFFFF
    return h


def test_gnu_hash_values():
    # published values (https://flapenguin.me/elf-dt-gnu-hash, the hash of bfd_elf_gnu_hash)
    assert gnu_hash(b"") == 0x00001505
    assert gnu_hash(b"printf") == 0x156B2BB8
    assert gnu_hash(b"exit") == 0x7C967E3F
    assert gnu_hash(b"syscall") == 0xBAC212A0
    # eight bytes a step: every length around the step, every byte value, long mangled names
    for n in range(0, 41):
        name = bytes((i * 37 + n) % 256 for i in range(n))
        assert gnu_hash(name) == _gnu_hash_bytewise(name), n
    long = b"_ZN3c106detail14torchCheckFailEPKcS2_jRKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE" * 7
    assert gnu_hash(long) == _gnu_hash_bytewise(long)


@needs_gcc
def test_missing_symbols_over_several_libraries_agrees_with_dynsym(tmp_path):
    """Names spread over three libraries, each name hashed once for all of them: the answer
    is what reading every library's whole .dynsym gives."""
    libs, defined = [], set()
    for k in range(3):
        names = [f"_ZN5torch3lib{k}4sym{i}Ev" for i in range(150)] + [f"short{k}_{i}" for i in range(9)]
        libs.append(build_so(str(tmp_path / f"libt{k}.so"), f"libt{k}.so", defines=names))
        defined |= dynamic_symbols(libs[-1])[0]
    asked = sorted(defined)[::3] + ["_ZN5torch3lib9absentEv", "absent", "\udcff", "nul\0name", ""]
    missing, problems = missing_symbols(asked, libs)
    assert problems == []
    assert missing == sorted(set(asked) - defined)
    assert missing_symbols(sorted(defined), libs) == ([], [])
    first_two = dynamic_symbols(libs[0])[0] | dynamic_symbols(libs[1])[0]
    assert missing_symbols(sorted(defined), libs[:2])[0] == sorted(defined - first_two)


def test_not_elf_and_missing_file(tmp_path):
    text = tmp_path / "libfake.so"
    text.write_text("INPUT(-lfoo)\n")  # a linker script named .so
    assert read_elf(str(text)).error == "not an ELF file"
    assert read_elf(str(tmp_path / "nope.so")).error
    assert dynamic_symbols(str(text))[2]
    assert SymbolIndex.open(str(text))[0] is None


@needs_gcc
def test_truncated_elf_gives_error_value(tmp_path):
    lib = build_so(str(tmp_path / "libx.so"), "libx.so", needed=["liby.so"])
    data = Path(lib).read_bytes()
    for cut in (20, 64, 200, len(data) // 2):
        bad = tmp_path / f"cut{cut}.so"
        bad.write_bytes(data[:cut])
        info = read_elf(str(bad))
        assert info.error is None or info.error.startswith(("corrupt", "read error"))
        SymbolIndex.open(str(bad))  # never raises
        dynamic_symbols(str(bad))


@settings(max_examples=150, deadline=None)
@given(st.binary(min_size=0, max_size=400))
def test_fuzz_random_bytes_with_elf_magic(tmp_path_factory, blob):
    path = tmp_path_factory.mktemp("fuzz") / "f.so"
    path.write_bytes(b"\x7fELF" + blob)
    info = read_elf(str(path))
    assert info.error is None or isinstance(info.error, str)
    SymbolIndex.open(str(path))
    dynamic_symbols(str(path))


def test_real_torch_npu_wheel_dt_needed(realwheel_venv):  # noqa: F811
    site = realwheel_venv.site_packages
    info = read_elf(str(site / "torch_npu/lib/libtorch_npu.so"))
    assert info.error is None and info.soname == "libtorch_npu.so"
    for name in ("libhccl.so", "libascendcl.so", "libc10.so", "libtorch_cpu.so", "libstdc++.so.6"):
        assert name in info.needed
    assert "$ORIGIN/lib/" in info.rpath
    assert any(v.startswith("GLIBCXX_3.4") for v in info.version_needs["libstdc++.so.6"])
    ext = [p for p in os.listdir(site / "torch_npu") if p.startswith("_C") and p.endswith(".so")]
    assert ext
    cinfo = read_elf(str(site / "torch_npu" / ext[0]))
    assert cinfo.needed[0] == "libtorch_npu.so" and "libhccl.so" in cinfo.needed


@needs_gcc
def test_undefined_only_reading_agrees_with_the_whole_table(tmp_path):
    """``want_defined=False`` (what the extension audit asks) skips decoding the exports yet
    gives the same undefined names, and the same answer on a table whose exported name lies
    past the file's last NUL (the whole reading refuses that file too)."""
    import struct

    from npudoctor.parsers.elfread import Elf

    lib = build_so(
        str(tmp_path / "libext.so"),
        "libext.so",
        defines=[f"_ZN3ext4def{i}Ev" for i in range(40)],
        undefined=["_ZN3c104warnEv", "aclInit", "_ZN5torch3jit5traceEv"],
    )
    whole = dynamic_symbols(lib)
    only = dynamic_symbols(lib, want_defined=False)
    assert whole[2] is None and only[2] is None
    assert only[1] == whole[1] and {"_ZN3c104warnEv", "aclInit", "_ZN5torch3jit5traceEv"} <= only[1]
    assert only[0] == set() and "_ZN3ext4def7Ev" in whole[0]
    data = bytearray(Path(lib).read_bytes())
    elf = Elf(bytes(data))
    dynsym = elf.section(".dynsym")
    assert dynsym is not None
    for i in range(dynsym.size // dynsym.entsize):
        at = dynsym.offset + i * dynsym.entsize
        if struct.unpack_from("<H", data, at + 6)[0] != 0:  # st_shndx of a 64-bit symbol: defined
            struct.pack_into("<I", data, at, len(data) + 10)  # its st_name past the end
            break
    bad = tmp_path / "libbad.so"
    bad.write_bytes(bytes(data))
    whole_bad, only_bad = dynamic_symbols(str(bad)), dynamic_symbols(str(bad), want_defined=False)
    assert only_bad[1:] == whole_bad[1:] == (whole[1], None)  # pyelftools reads it, as before
