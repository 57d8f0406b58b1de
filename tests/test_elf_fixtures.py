"""The ELF fixtures of issue 14, checked with binutils and the loader, and today's parser on them.

* ``tests/builders/elfbuild.py`` builds real libraries and executables (``elf_world``): every
  property it claims is checked here with ``readelf``/``nm``, and the loader-visible
  ones (missing library, version not found, undefined symbol, RPATH vs RUNPATH order)
  by really loading the files (``ctypes`` in a child process, or running them).
* ``tests/builders/realc10.py`` brings real ``libc10.so`` of both C++ ABIs (``real_c10``).
* ``npudoctor.parsers.elf`` must read all of them as binutils does and give an error
  string, never an exception, on empty, non-ELF, truncated and foreign files.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

import pytest
from builders.elfbuild import (
    OPAPI_SOURCE,
    OPAPI_USER_SOURCE,
    ElfBuilder,
    elf_builder_for_fixture,  # noqa: F401  (session fixture elf_builder_for)
    elf_world_fixture,  # noqa: F401  (session fixture elf_world)
    extension_name,
    toolchain,
)
from builders.realc10 import PINS, TORCH_CHECK_FAIL, real_c10_fixture  # noqa: F401  (session fixture real_c10)

from npudoctor.parsers.elf import SymbolIndex, dynamic_symbols, is_elf, missing_symbols, read_elf

FIXTURES = Path(__file__).resolve().parent / "fixtures"
AARCH64_LIBGOMP = FIXTURES / "libgomp-aarch64" / "libgomp.so.1"

pytestmark = pytest.mark.skipif(not shutil.which("readelf") or not shutil.which("nm"), reason="binutils missing")


# --------------------------------------------------------------------------- binutils views
def _run(argv: List[str], **kw) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60, **kw).stdout


def readelf_dynamic(path: Path) -> Dict[str, List[str]]:
    """``readelf -dW``: tag name (NEEDED, SONAME, RPATH, RUNPATH) → bracketed values, in order."""
    out: Dict[str, List[str]] = {}
    for m in re.finditer(
        r"\((NEEDED|SONAME|RPATH|RUNPATH)\)\s+[^\[]*\[([^\]]*)\]", _run(["readelf", "-dW", str(path)])
    ):
        out.setdefault(m.group(1), []).append(m.group(2))
    return out


def readelf_versions(path: Path) -> Tuple[Dict[str, List[str]], List[str]]:
    """``readelf -VW``: (needs ``{file: [version, ...]}``, definitions without the BASE one)."""
    needs: Dict[str, List[str]] = {}
    defs: List[str] = []
    section = None
    current = None
    for line in _run(["readelf", "-VW", str(path)]).splitlines():
        if line.startswith("Version needs section"):
            section = "r"
        elif line.startswith("Version definition section"):
            section = "d"
        elif line.startswith("Version symbols section"):
            section = None
        elif section == "r":
            m = re.search(r"File: (\S+)", line)
            if m:
                current = m.group(1)
                needs.setdefault(current, [])
            m = re.search(r"Name: (\S+)", line)
            if m and current:
                needs[current].append(m.group(1))
        elif section == "d":
            m = re.search(r"Flags: (\S+).*Name: (\S+)", line)
            if m and m.group(1) != "BASE":
                defs.append(m.group(2))
    return needs, defs


def readelf_header(path: Path) -> Dict[str, str]:
    out = {}
    for line in _run(["readelf", "-hW", str(path)]).splitlines():
        key, _, value = line.partition(":")
        out[key.strip()] = value.strip()
    return out


def nm_dynamic(path: Path, demangle: bool = False) -> Tuple[Set[str], Set[str], Set[str]]:
    """``nm -D``: (defined, strong undefined ``U``, weak undefined ``w``/``v``) names, no @versions."""
    flags = ["-D", "--without-symbol-versions"] + (["--demangle"] if demangle else [])
    defined = {ln.split(None, 2)[2] for ln in _run(["nm", *flags, "--defined-only", str(path)]).splitlines() if ln}
    strong: Set[str] = set()
    weak: Set[str] = set()
    for ln in _run(["nm", *flags, "--undefined-only", str(path)]).splitlines():
        kind, name = ln.split(None, 1)
        (strong if kind == "U" else weak).add(name)
    return defined, strong, weak


def loader(
    path: Path, env_paths: List[Path] = (), call: Optional[str] = None, run: bool = False, cwd: Optional[Path] = None
) -> Tuple[int, str]:
    """Load ``path`` as the real loader does: ``ctypes.CDLL`` (``RTLD_NOW``) in a child Python,
    optionally calling ``call`` (a ``const char*`` function, printed), or run it when
    ``run``.  ``env_paths`` become ``LD_LIBRARY_PATH``.  Returns (exit code, output)."""
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    if env_paths:
        env["LD_LIBRARY_PATH"] = ":".join(str(p) for p in env_paths)
    if run:
        argv = [str(path)]
    else:
        code = "import ctypes, sys\nlib = ctypes.CDLL(sys.argv[1])\n"
        if call:
            code += f"f = lib.{call}\nf.restype = ctypes.c_char_p\nprint(f().decode())\n"
        argv = [sys.executable, "-c", code, str(path)]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, cwd=cwd)
    return proc.returncode, (proc.stdout + proc.stderr).strip()


def system_version_defs(soname: str) -> List[str]:
    """Version definitions of this machine's ``soname`` (the copy gcc links against)."""
    real = _run(["gcc", "-print-file-name=" + soname]).strip()
    if not os.path.isabs(real):
        pytest.skip(f"{soname} not found by gcc")
    return readelf_versions(Path(real))[1]


WORLD_NAMES = [
    "libascend_hal",
    "libc_sec",
    "libdrvdsmi_host",
    "npu_smi",
    "libascendcl",
    "libhccl",
    "libopapi",
    "custom_opapi",
    "libatb",
    "rpath_user",
    "runpath_user",
    "libc10_new",
    "libc10_old",
    "libtorch_npu",
    "libtorch_npu_newer",
    "torch_npu_C",
    "ext_C",
    "glibcxx_stub",
    "libtriton",
    "libm_stub",
    "ccec",
    "i686_acl",
]


# --------------------------------------------------------------------------- toolchains
def test_host_toolchain_builds_c_and_cxx():
    tc = toolchain("x86_64")
    if tc is None:
        pytest.skip("no gcc on this machine")
    assert tc.cc == "gcc" and tc.libc
    assert tc.cxx == "g++", "g++ is needed for the C++ (c10_npu/at_npu) fixtures"


@pytest.mark.parametrize("arch,machine", [("aarch64", "AArch64"), ("i686", "Intel 80386")])
def test_other_arch_builds_are_that_arch(elf_builder_for, arch, machine):
    b: ElfBuilder = elf_builder_for(arch)  # skips where no compiler (.ci/run installs the aarch64 one)
    lib = b.stub_library("lib/libascendcl.so", "libascendcl.so", ["aclInit"], needed=["libascend_hal.so"])
    header = readelf_header(lib)
    assert header["Machine"] == machine
    assert readelf_dynamic(lib)["SONAME"] == ["libascendcl.so"]
    # a toolchain with a C library (aarch64's cross glibc) links it too; i686 builds -nostdlib
    needed = ["libascend_hal.so"] + (["libc.so.6"] if b.tc.libc else [])
    assert readelf_dynamic(lib)["NEEDED"] == needed
    info = read_elf(str(lib))
    assert info.error is None and info.machine == arch and info.needed == needed
    if b.tc.cxx:  # aarch64 with a cross g++: a C++ extension module of that arch
        ext = b.build(
            f"site/{extension_name('_C', arch)}",
            "namespace c10_npu { void f(); }\nvoid g() { c10_npu::f(); }\n",
            lang="c++",
        )
        assert "c10_npu::f()" in nm_dynamic(ext, demangle=True)[1]


# --------------------------------------------------------------------------- built properties
def test_sonames(elf_world):
    expect = {
        "libascend_hal": "libascend_hal.so",
        "libc_sec": "libc_sec.so",
        "libdrvdsmi_host": "libdrvdsmi_host.so",
        "libascendcl": "libascendcl.so",
        "libhccl": "libhccl.so",
        "libopapi": "libopapi.so",
        "custom_opapi": "libopapi.so",
        "libatb": "libatb.so",
        "libc10_new": "libc10.so",
        "libc10_old": "libc10.so",
        "libtorch_npu": "libtorch_npu.so",
        "libtorch_npu_newer": "libtorch_npu.so",
        "glibcxx_stub": "libstdc++.so.6",
        "libtriton": "libtriton.so",
        "libm_stub": "libm.so.6",
    }
    for name, soname in expect.items():
        assert readelf_dynamic(elf_world[name]).get("SONAME") == [soname], name
    for name in ("npu_smi", "ccec", "torch_npu_C", "ext_C"):
        assert "SONAME" not in readelf_dynamic(elf_world[name]), name


def test_needed_in_order(elf_world):
    d = {n: readelf_dynamic(elf_world[n]).get("NEEDED", []) for n in WORLD_NAMES if n in elf_world.files}
    assert d["npu_smi"] == ["libc_sec.so", "libdrvdsmi_host.so", "libc.so.6"]
    assert d["libascendcl"] == ["libascend_hal.so", "libc_sec.so", "libc.so.6"]
    assert d["libhccl"][0] == "libascendcl.so"
    assert d["libatb"][:2] == ["libascendcl.so", "libopapi.so"]
    assert d["libtorch_npu"][:4] == ["libc10.so", "libascendcl.so", "libhccl.so", "libstdc++.so.6"]
    assert d["torch_npu_C"][:2] == ["libtorch_npu.so", "libhccl.so"]
    assert d["ext_C"][0] == "libtorch_npu.so"
    assert d["libtriton"] == ["libstdc++.so.6", "libc.so.6"]
    assert d["ccec"] == ["libm.so.6", "libc.so.6"]


def test_rpath_versus_runpath(elf_world):
    rp = {
        n: readelf_dynamic(elf_world[n]) for n in ("torch_npu_C", "libtorch_npu", "rpath_user", "ext_C", "runpath_user")
    }
    assert rp["torch_npu_C"].get("RPATH") == ["$ORIGIN/lib"] and "RUNPATH" not in rp["torch_npu_C"]
    assert rp["libtorch_npu"].get("RPATH") == ["$ORIGIN/../../torch/lib"]
    assert rp["rpath_user"].get("RPATH") == ["$ORIGIN"] and "RUNPATH" not in rp["rpath_user"]
    assert rp["ext_C"].get("RUNPATH") == ["$ORIGIN/../torch_npu/lib"] and "RPATH" not in rp["ext_C"]
    assert rp["runpath_user"].get("RUNPATH") == ["$ORIGIN"] and "RPATH" not in rp["runpath_user"]
    assert readelf_dynamic(elf_world["libascendcl"]).get("RUNPATH") == ["$ORIGIN"]


def test_version_needs_exceed_this_machine(elf_world):
    needs, _ = readelf_versions(elf_world["libtriton"])
    assert sorted(needs["libstdc++.so.6"]) == ["CXXABI_1.3.99", "GLIBCXX_3.4.99"]
    needs, _ = readelf_versions(elf_world["ccec"])
    assert needs["libm.so.6"] == ["GLIBC_2.99"]
    assert "GLIBCXX_3.4.99" not in system_version_defs("libstdc++.so.6")
    assert "CXXABI_1.3.99" not in system_version_defs("libstdc++.so.6")
    assert "GLIBC_2.99" not in system_version_defs("libm.so.6")
    _, defs = readelf_versions(elf_world["glibcxx_stub"])
    assert defs == ["GLIBCXX_3.4", "GLIBCXX_3.4.30", "GLIBCXX_3.4.99", "CXXABI_1.3", "CXXABI_1.3.99"]
    assert readelf_versions(elf_world["libm_stub"])[1] == ["GLIBC_2.2.5", "GLIBC_2.99"]


def test_cxx_symbols_of_torch_npu_and_extension(elf_world):
    _, ext_undef, _ = nm_dynamic(elf_world["ext_C"], demangle=True)
    wanted = {
        "c10_npu::getCurrentNPUStream(signed char)",
        "c10_npu::NPUCachingAllocator::emptyCache(bool)",
        "at_npu::native::OpCommand::OpCommand()",
        "at_npu::native::OpCommand::Name(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&)",
    }
    assert wanted <= ext_undef
    installed, _, _ = nm_dynamic(elf_world["libtorch_npu"], demangle=True)
    newer, _, _ = nm_dynamic(elf_world["libtorch_npu_newer"], demangle=True)
    assert wanted <= newer
    assert wanted - installed == {"c10_npu::NPUCachingAllocator::emptyCache(bool)"}
    assert "_ZN7c10_npu19NPUCachingAllocator10emptyCacheEb" in nm_dynamic(elf_world["ext_C"])[1]
    assert elf_world["ext_C"].name == "_C.cpython-311-x86_64-linux-gnu.so"
    assert elf_world["torch_npu_C"].name == "_C.cpython-311-x86_64-linux-gnu.so"


def test_stub_c10_of_both_abis(elf_world):
    old, _, _ = nm_dynamic(elf_world["libc10_old"])
    new, _, _ = nm_dynamic(elf_world["libc10_new"])
    assert TORCH_CHECK_FAIL[0] in old and TORCH_CHECK_FAIL[1] not in old
    assert TORCH_CHECK_FAIL[1] in new and TORCH_CHECK_FAIL[0] not in new


def test_executables_and_foreign_class(elf_world):
    for name in ("npu_smi", "ccec"):
        assert readelf_header(elf_world[name])["Type"].startswith("DYN (Position-Independent Executable")
        assert os.access(elf_world[name], os.X_OK)
    if "i686_acl" not in elf_world.files:
        pytest.skip("gcc -m32 does not work here")
    header = readelf_header(elf_world["i686_acl"])
    assert header["Class"] == "ELF32" and header["Machine"] == "Intel 80386"


def test_world_root_holds_only_the_built_files(elf_world):
    found = {p for p in elf_world.root.rglob("*") if p.is_file()}
    assert set(elf_world.files.values()) <= found
    assert all(is_elf(str(p)) for p in found), sorted(p for p in found if not is_elf(str(p)))


def test_builder_memoizes_and_rebuilds_on_change(elf_world):
    b = elf_world.builder
    first = b.stub_library("memo/libfoo.so", "libfoo.so", ["a"])
    mtime = first.stat().st_mtime_ns
    assert b.stub_library("memo/libfoo.so", "libfoo.so", ["a"]).stat().st_mtime_ns == mtime
    b.stub_library("memo/libfoo.so", "libfoo.so", ["a", "b"])
    assert "b" in nm_dynamic(first)[0]


# --------------------------------------------------------------------------- the loader agrees
def _driver_and_cann(w) -> List[Path]:
    return [w["libascendcl"].parent, w["libascend_hal"].parent, w["libc_sec"].parent]


def test_loader_npu_smi_needs_driver_libraries_on_the_path(elf_world):
    rc, out = loader(elf_world["npu_smi"], run=True)
    assert rc == 127 and "libc_sec.so: cannot open shared object file" in out
    rc, out = loader(
        elf_world["npu_smi"], [elf_world["libc_sec"].parent, elf_world["libdrvdsmi_host"].parent], run=True
    )
    assert rc == 0, out


def test_loader_refuses_versions_above_this_machine(elf_world):
    rc, out = loader(elf_world["libtriton"])  # ld.so names the first missing one it checks
    assert rc != 0 and re.search(r"version `(GLIBCXX_3\.4\.99|CXXABI_1\.3\.99)' not found \(required by", out), out
    rc, out = loader(elf_world["ccec"], run=True)
    assert rc != 0 and "version `GLIBC_2.99' not found (required by" in out
    rc, out = loader(elf_world["libtriton"], [elf_world["glibcxx_stub"].parent])
    assert rc == 0, out


def test_loader_undefined_cxx_symbol_of_installed_torch_npu(elf_world):
    w = elf_world
    rc, out = loader(w["ext_C"], _driver_and_cann(w))
    assert rc != 0 and "undefined symbol: _ZN7c10_npu19NPUCachingAllocator10emptyCacheEb" in out
    newer_first = [w["libtorch_npu_newer"].parent, w["libc10_new"].parent, *_driver_and_cann(w)]
    rc, out = loader(w["ext_C"], newer_first, call="npudoctor_torch_npu_build")
    assert rc == 0 and out == "newer", out  # LD_LIBRARY_PATH is searched before DT_RUNPATH
    rc, out = loader(w["torch_npu_C"], _driver_and_cann(w), call="npudoctor_torch_npu_build")
    assert rc == 0 and out == "installed", out  # DT_RPATH $ORIGIN/lib, then $ORIGIN/../../torch/lib
    rc, out = loader(w["torch_npu_C"])
    # ld.so maps DT_NEEDED breadth-first: the _C module's own libhccl.so is reported
    # before libtorch_npu.so's libascendcl.so
    assert rc != 0 and "libhccl.so: cannot open shared object file" in out


def test_loader_rpath_before_and_runpath_after_ld_library_path(elf_world):
    w = elf_world
    custom = [w["custom_opapi"].parent]
    assert loader(w["rpath_user"], custom, call="npudoctor_which_opapi") == (0, "cann")
    assert loader(w["runpath_user"], custom, call="npudoctor_which_opapi") == (0, "custom")
    assert loader(w["runpath_user"], call="npudoctor_which_opapi") == (0, "cann")


def test_loader_takes_an_empty_runpath_entry_as_the_working_directory(elf_world, tmp_path):
    """``DT_RUNPATH "/nonexistent:"``: glibc reads the empty entry as the current directory."""
    w = elf_world
    lib = w.builder.build("cwd/libcwd_user.so", OPAPI_USER_SOURCE, needed=[w["libopapi"]], runpath=["/nonexistent", ""])
    assert readelf_dynamic(lib)["RUNPATH"] == ["/nonexistent:"]
    assert loader(lib, call="npudoctor_which_opapi", cwd=w["custom_opapi"].parent) == (0, "custom")
    rc, out = loader(lib, cwd=tmp_path)
    assert rc != 0 and "libopapi.so: cannot open shared object file" in out


def test_parser_keeps_empty_runpath_entry(elf_world):
    w = elf_world
    lib = w.builder.build("cwd/libcwd_user.so", OPAPI_USER_SOURCE, needed=[w["libopapi"]], runpath=["/nonexistent", ""])
    assert read_elf(str(lib)).runpath == ["/nonexistent", ""]


def test_needed_by_path_of_a_library_without_soname(elf_world):
    """A library without DT_SONAME linked by its path: DT_NEEDED holds that path, and
    ld.so opens it directly (no search)."""
    b = elf_world.builder
    bare = b.build("custom_op/lib/libcust_opapi.so", OPAPI_SOURCE.format(owner="bare"))
    user = b.build("custom_op/libcust_user.so", OPAPI_USER_SOURCE, soname="libcust_user.so", needed=[bare])
    assert "SONAME" not in readelf_dynamic(bare)
    assert readelf_dynamic(user)["NEEDED"][0] == str(bare)
    assert read_elf(str(user)).needed[0] == str(bare)
    assert loader(user, call="npudoctor_which_opapi") == (0, "bare")


# --------------------------------------------------------------------------- today's parser
@pytest.mark.parametrize("name", WORLD_NAMES)
def test_parser_reads_what_readelf_reads(elf_world, name):
    if name not in elf_world.files:
        pytest.skip(f"{name} not built here")
    path = elf_world[name]
    info = read_elf(str(path))
    assert info.error is None
    dyn = readelf_dynamic(path)
    assert info.soname == (dyn.get("SONAME") or [None])[0]
    assert info.needed == dyn.get("NEEDED", [])
    assert info.rpath == [p for v in dyn.get("RPATH", []) for p in v.split(":")]
    assert info.runpath == [p for v in dyn.get("RUNPATH", []) for p in v.split(":")]
    needs, defs = readelf_versions(path)
    assert {k: sorted(v) for k, v in info.version_needs.items()} == {k: sorted(v) for k, v in needs.items()}
    assert info.version_defs == defs
    header = readelf_header(path)
    assert info.bits == (64 if header["Class"] == "ELF64" else 32)
    assert info.machine == {"Advanced Micro Devices X86-64": "x86_64", "Intel 80386": "i686"}[header["Machine"]]
    defined, strong, _weak = nm_dynamic(path)
    p_def, p_undef, err = dynamic_symbols(str(path))
    assert err is None
    assert p_def == defined and p_undef == strong
    assert is_elf(str(path))


@pytest.mark.parametrize("soname", ["libc.so.6", "libstdc++.so.6", "libm.so.6", "libgcc_s.so.1"])
def test_parser_reads_this_machines_system_libraries(soname):
    found = _run(["gcc", "-print-file-name=" + soname]).strip()
    if not os.path.isabs(found):
        pytest.skip(f"{soname} not found by gcc")
    path = Path(found).resolve()
    info = read_elf(str(path))
    assert info.error is None and info.machine == "x86_64"
    dyn = readelf_dynamic(path)
    assert info.soname == dyn["SONAME"][0] == soname
    assert info.needed == dyn.get("NEEDED", [])
    needs, defs = readelf_versions(path)
    assert {k: sorted(v) for k, v in info.version_needs.items()} == {k: sorted(v) for k, v in needs.items()}
    assert info.version_defs == defs
    defined, strong, weak = nm_dynamic(path)
    assert dynamic_symbols(str(path)) == (defined, strong, None)
    _assert_index_agrees_with_nm(path, defined, strong | weak)


#: The cross toolchain's real aarch64 libraries (Debian 12 arm64 glibc 2.36, GCC 12).
AARCH64_SYSTEM = Path("/usr/aarch64-linux-gnu/lib")


@pytest.mark.parametrize("soname", ["libc.so.6", "libstdc++.so.6", "libm.so.6", "libgcc_s.so.1", "libgomp.so.1"])
def test_parser_reads_real_aarch64_system_libraries(soname):
    """What readelf and nm read from the real aarch64 libraries, the parser reads: soname,
    DT_NEEDED, version needs and definitions, dynamic symbols, DT_GNU_HASH lookups."""
    path = AARCH64_SYSTEM / soname
    if not path.exists():
        pytest.skip(f"{path} not installed (the aarch64 cross toolchain's libraries)")
    path = path.resolve()
    info = read_elf(str(path))
    assert (info.error, info.machine, info.bits) == (None, "aarch64", 64)
    assert readelf_header(path)["Machine"] == "AArch64"
    dyn = readelf_dynamic(path)
    assert info.soname == dyn["SONAME"][0] == soname
    assert info.needed == dyn.get("NEEDED", [])
    needs, defs = readelf_versions(path)
    assert {k: sorted(v) for k, v in info.version_needs.items()} == {k: sorted(v) for k, v in needs.items()}
    assert info.version_defs == defs
    if soname == "libc.so.6":
        assert defs[0] == "GLIBC_2.17" and "GLIBC_2.2.5" not in defs  # aarch64's first glibc version
    defined, strong, weak = nm_dynamic(path)
    assert dynamic_symbols(str(path)) == (defined, strong, None)
    _assert_index_agrees_with_nm(path, defined, strong | weak)


def _assert_index_agrees_with_nm(path: Path, defined: Set[str], undefined: Set[str]) -> None:
    """SymbolIndex (DT_GNU_HASH lookups) finds every name nm lists as defined, and none it lists as undefined."""
    index, why = SymbolIndex.open(str(path))
    assert index is not None, why
    with index:
        assert [s for s in defined if not index.defines(s)] == []
        assert [s for s in undefined - defined if index.defines(s)] == []


def test_parser_finds_the_cxx_symbols_torch_npu_lacks(elf_world):
    w = elf_world
    _, undef, err = dynamic_symbols(str(w["ext_C"]))
    assert err is None
    family = sorted(s for s in undef if s.startswith(("_ZN7c10_npu", "_ZN6at_npu")))
    assert len(family) == 4
    assert missing_symbols(family, [str(w["libtorch_npu"])]) == (["_ZN7c10_npu19NPUCachingAllocator10emptyCacheEb"], [])
    assert missing_symbols(family, [str(w["libtorch_npu_newer"])]) == ([], [])
    with SymbolIndex.open(str(w["libc10_old"]))[0] as old, SymbolIndex.open(str(w["libc10_new"]))[0] as new:
        assert old.defines(TORCH_CHECK_FAIL[0]) and not old.defines(TORCH_CHECK_FAIL[1])
        assert new.defines(TORCH_CHECK_FAIL[1]) and not new.defines(TORCH_CHECK_FAIL[0])


def test_parser_without_gnu_hash_falls_back_to_dynsym(elf_world):
    lib = elf_world.builder.stub_library(
        "sysv/libtorch_npu.so", "libtorch_npu.so", ["aclInit"], flags=["-Wl,--hash-style=sysv"]
    )
    assert "GNU_HASH" not in _run(["readelf", "-dW", str(lib)])
    index, why = SymbolIndex.open(str(lib))
    assert index is None and why == "no DT_GNU_HASH table"
    missing, problems = missing_symbols(["aclInit", "aclFinalize"], [str(lib)])
    assert missing == ["aclFinalize"]
    assert problems == [f"{lib}: no DT_GNU_HASH table; scanned .dynsym"]


def _no_section_headers(src: Path, dst: Path) -> Path:
    """A copy of ``src`` without its section header table (e_shoff, e_shnum, e_shstrndx
    zeroed), as ``sstrip`` leaves files: the loader needs only the program headers."""
    data = bytearray(src.read_bytes())
    assert data[4] == 2 and data[5] == 1  # ELF64 little-endian
    struct.pack_into("<Q", data, 0x28, 0)
    struct.pack_into("<HHH", data, 0x3A, 0, 0, 0)
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(bytes(data))
    return dst


def test_file_without_section_headers_still_loads(elf_world, tmp_path):
    w = elf_world
    bare = _no_section_headers(w["libtriton"], tmp_path / "libtriton.so")
    assert "There are no sections in this file" in _run(["readelf", "-SW", str(bare)])
    rc, out = loader(bare)  # the loader still reads DT_VERNEED and refuses it here
    assert rc != 0 and re.search(r"version `(GLIBCXX_3\.4\.99|CXXABI_1\.3\.99)' not found", out), out
    assert loader(bare, [w["glibcxx_stub"].parent])[0] == 0
    info = read_elf(str(bare))
    assert info.error is None and info.soname == "libtriton.so" and info.needed == ["libstdc++.so.6", "libc.so.6"]


def test_version_needs_of_file_without_section_headers(elf_world, tmp_path):
    bare = _no_section_headers(elf_world["libtriton"], tmp_path / "libtriton.so")
    assert sorted(read_elf(str(bare)).version_needs.get("libstdc++.so.6", [])) == ["CXXABI_1.3.99", "GLIBCXX_3.4.99"]


def test_dynamic_symbols_of_file_without_section_headers(elf_world, tmp_path):
    bare = _no_section_headers(elf_world["ext_C"], tmp_path / "_C.so")
    _, undef, err = dynamic_symbols(str(bare))
    assert err is None and "_ZN7c10_npu19NPUCachingAllocator10emptyCacheEb" in undef


def test_symbol_index_of_file_without_section_headers(elf_world, tmp_path):
    bare = _no_section_headers(elf_world["libtorch_npu"], tmp_path / "libtorch_npu.so")
    index, why = SymbolIndex.open(str(bare))
    assert index is not None, why
    with index:
        assert index.defines("_ZN7c10_npu19getCurrentNPUStreamEa")
        assert not index.defines("_ZN7c10_npu19NPUCachingAllocator10emptyCacheEb")


# --------------------------------------------------------------------------- bad files
def _all_readers(path: Path) -> Tuple[Optional[str], Optional[str], Optional[str], List[str]]:
    """Every entry point on ``path``; an exception escaping fails the test."""
    info = read_elf(str(path))
    _d, _u, sym_err = dynamic_symbols(str(path))
    index, why = SymbolIndex.open(str(path))
    if index is not None:
        index.close()
    _missing, problems = missing_symbols(["aclInit"], [str(path)])
    return info.error, sym_err, (None if index else why), problems


def test_empty_file(tmp_path):
    empty = tmp_path / "libascendcl.so"
    empty.write_bytes(b"")
    info_err, sym_err, why, problems = _all_readers(empty)
    assert info_err == "not an ELF file"
    assert sym_err and why and problems and problems[0].startswith(str(empty))
    assert not is_elf(str(empty))


@pytest.mark.parametrize(
    "content",
    [
        b"/* GNU ld script */\nINPUT(-lascendcl_impl)\n",
        b'#!/bin/sh\nexec npu-smi.real "$@"\n',
        b"\x89PNG\r\n\x1a\n" + b"\0" * 64,
        b"\x7fELX" + b"\0" * 60,
    ],
    ids=["linker-script", "shell-wrapper", "png", "bad-magic"],
)
def test_non_elf_files(tmp_path, content):
    path = tmp_path / "libhccl.so"
    path.write_bytes(content)
    info_err, sym_err, why, problems = _all_readers(path)
    assert info_err == "not an ELF file"
    assert sym_err and why and problems


def test_directory_and_missing_path(tmp_path):
    for path in (tmp_path, tmp_path / "absent.so"):
        info_err, sym_err, why, problems = _all_readers(path)
        assert info_err and sym_err and why and problems


def _cuts(size: int) -> List[int]:
    return [4, 16, 52, 64, 1000, size // 2, size - 1]


TRUNCATION_WORDS = ("truncated", "EOF", "end of file", "past end")


@pytest.mark.parametrize("where", range(7), ids=["4", "16", "52", "64", "1000", "half", "size-1"])
def test_truncated_file_gives_an_error(elf_world, tmp_path, where):
    data = elf_world["libtorch_npu"].read_bytes()
    cut = _cuts(len(data))[where]
    path = tmp_path / "libtorch_npu.so"
    path.write_bytes(data[:cut])
    info_err, sym_err, why, problems = _all_readers(path)
    assert info_err and info_err.startswith("corrupt ELF"), info_err
    assert sym_err and why and problems


@pytest.mark.parametrize(
    "where",
    [
        0,
        1,
        2,
        3,
        4,
        5,
        6,
    ],
    ids=["4", "16", "52", "64", "1000", "half", "size-1"],
)
def test_truncated_file_error_says_truncated(elf_world, tmp_path, where):
    """Issue 14: a truncated file gives a clear note: read_elf says "truncated" (with the
    size its headers describe) also where pyelftools' own message does not."""
    data = elf_world["libtorch_npu"].read_bytes()
    path = tmp_path / "libtorch_npu.so"
    path.write_bytes(data[: _cuts(len(data))[where]])
    err = read_elf(str(path)).error or ""
    assert any(w in err for w in TRUNCATION_WORDS), err


def test_wrong_architecture_files_are_read_and_named(elf_world):
    """An i386 and a real aarch64 library on this x86_64 machine: read, and named by machine."""
    cases = [(AARCH64_LIBGOMP, "aarch64", 64)]
    if "i686_acl" in elf_world.files:
        cases.append((elf_world["i686_acl"], "i686", 32))
    for path, machine, bits in cases:
        info = read_elf(str(path))
        assert info.error is None and (info.machine, info.bits) == (machine, bits)
        dyn = readelf_dynamic(path)
        assert info.soname == dyn["SONAME"][0] and info.needed == dyn.get("NEEDED", [])
        assert {k: sorted(v) for k, v in info.version_needs.items()} == {
            k: sorted(v) for k, v in readelf_versions(path)[0].items()
        }
        defined, strong, _ = nm_dynamic(path)
        assert dynamic_symbols(str(path))[:2] == (defined, strong)


# --------------------------------------------------------------------------- real c10
@pytest.mark.slow
def test_real_c10_wheels_are_the_pinned_ones(real_c10):
    for kind, pin in PINS.items():
        path = real_c10[kind]
        assert path.parts[-3:] == ("torch", "lib", "libc10.so")
        assert (path.parents[2] / ".complete").read_text().split() == [pin.wheel, str(pin.size), pin.sha256]
        assert readelf_header(path)["Machine"] == "AArch64"
    # the two builds differ in their search path tag too: 2.5.1 DT_RPATH, 2.6.0 DT_RUNPATH
    assert readelf_dynamic(real_c10["old"]).get("RPATH") == ["$ORIGIN"]
    assert readelf_dynamic(real_c10["new"]).get("RUNPATH") == ["$ORIGIN"]


@pytest.mark.slow
def test_real_c10_mangling_of_both_abis(real_c10):
    old_def, _, _ = nm_dynamic(real_c10["old"])
    new_def, _, _ = nm_dynamic(real_c10["new"])
    assert TORCH_CHECK_FAIL[0] in old_def and TORCH_CHECK_FAIL[1] not in old_def
    assert TORCH_CHECK_FAIL[1] in new_def and TORCH_CHECK_FAIL[0] not in new_def
    old_dm, _, _ = nm_dynamic(real_c10["old"], demangle=True)
    new_dm, _, _ = nm_dynamic(real_c10["new"], demangle=True)
    assert "c10::detail::torchCheckFail(char const*, char const*, unsigned int, std::string const&)" in old_dm
    assert (
        "c10::detail::torchCheckFail(char const*, char const*, unsigned int, "
        "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&)"
    ) in new_dm


@pytest.mark.slow
def test_real_c10_both_hold_cxx11_names(real_c10):
    """The trap of issue 14: '__cxx11' is in BOTH files (libstdc++'s own std::__cxx11
    exports), so "__cxx11 anywhere in libc10.so" reads every real torch as C++11."""
    for kind in ("old", "new"):
        assert b"__cxx11" in real_c10[kind].read_bytes(), kind
        defined, _, _ = nm_dynamic(real_c10[kind])
        assert any("St7__cxx11" in s for s in defined), kind
    old_dm, _, _ = nm_dynamic(real_c10["old"], demangle=True)
    assert any("std::logic_error::logic_error(std::__cxx11::basic_string" in s for s in old_dm)


@pytest.mark.slow
def test_parser_reads_real_c10(real_c10):
    for kind, abi in (("old", 0), ("new", 1)):
        path = real_c10[kind]
        info = read_elf(str(path))
        assert info.error is None and info.machine == "aarch64" and info.bits == 64
        dyn = readelf_dynamic(path)
        assert info.soname == "libc10.so" == dyn["SONAME"][0]
        assert info.needed == dyn["NEEDED"]
        assert info.rpath == [p for v in dyn.get("RPATH", []) for p in v.split(":")]
        assert info.runpath == [p for v in dyn.get("RUNPATH", []) for p in v.split(":")]
        needs, _ = readelf_versions(path)
        assert {k: sorted(v) for k, v in info.version_needs.items()} == {k: sorted(v) for k, v in needs.items()}
        defined, strong, weak = nm_dynamic(path)
        assert dynamic_symbols(str(path)) == (defined, strong, None)
        index, why = SymbolIndex.open(str(path))
        assert index is not None, why
        with index:
            assert index.defines(TORCH_CHECK_FAIL[abi]) and not index.defines(TORCH_CHECK_FAIL[1 - abi])
        _assert_index_agrees_with_nm(path, defined, strong | weak)
