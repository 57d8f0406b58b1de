"""Build real ELF shared objects and executables from C/C++ source, for the ELF tests.

Issue 14 (native libraries of the whole NPU environment) is tested on files made here
with the compilers of this machine, never on hand-written bytes: ``gcc``/``g++`` for
x86_64, ``aarch64-linux-gnu-gcc``/``-g++`` for aarch64 (``.ci/run`` installs them; where
they are missing :func:`toolchain` returns ``None`` and aarch64 cases skip),
and ``gcc -m32 -nostdlib`` for a 32-bit i386 file (a wrong-architecture library; there
is no 32-bit libc here, so only ``nostdlib`` builds work for it).

:class:`ElfBuilder` compiles one file per call: a given ``DT_SONAME``, ``DT_NEEDED`` on
named libraries (a plain name gets a link-time stub with that soname, so the entry is
recorded while no such file exists at run time; a :class:`~pathlib.Path` links the real
library built earlier), ``DT_RPATH`` (``rpath=``) or ``DT_RUNPATH`` (``runpath=``) with
``$ORIGIN`` kept verbatim, a version script (``version_script=``: version definitions in
``.gnu.version_d``), any extra compiler flags.  Calls are memoized for the builder's
lifetime, keyed by every argument and the bytes of linked libraries.

:func:`build_npu_world` makes the named set the tests use (see its docstring), and the
session fixture ``elf_world`` (import :func:`elf_world_fixture` to use it) builds it once under
``tmp_path_factory``.  The tests check every property of these files with ``readelf``
and ``nm`` (see ``tests/test_elf_fixtures.py``), not by trusting this module.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Union

import pytest

#: Seconds allowed for one compiler run.
COMPILE_TIMEOUT = 120


@dataclass(frozen=True)
class Toolchain:
    """Compilers for one architecture.  ``cxx`` is ``None`` when no C++ compiler exists;
    ``libc`` is False when only ``-nostdlib`` builds link (no C library for the target);
    ``flags`` are added to every compile; ``triplet`` names extension modules
    (``_C.cpython-311-<triplet>.so``)."""

    arch: str
    cc: str
    cxx: Optional[str]
    libc: bool
    flags: tuple = ()
    triplet: str = ""


_PROBED: Dict[str, Optional[Toolchain]] = {}

_CANDIDATES = {
    "x86_64": ("gcc", "g++", (), "x86_64-linux-gnu"),
    "aarch64": ("aarch64-linux-gnu-gcc", "aarch64-linux-gnu-g++", (), "aarch64-linux-gnu"),
    "i686": ("gcc", None, ("-m32",), "i386-linux-gnu"),
}


def _links(cc: str, flags: Sequence[str], nostdlib: bool, tmp: Path) -> bool:
    src = tmp / "probe.c"
    src.write_text("int npudoctor_probe(void) { return 0; }\n")
    extra = ["-nostdlib"] if nostdlib else []
    proc = subprocess.run(
        [cc, *flags, "-shared", "-fPIC", *extra, "-o", str(tmp / "probe.so"), str(src)],
        capture_output=True,
        timeout=COMPILE_TIMEOUT,
    )
    return proc.returncode == 0


def toolchain(arch: str) -> Optional[Toolchain]:
    """The working toolchain for ``arch`` (``x86_64``, ``aarch64``, ``i686``) or ``None``.

    Probed once per process by compiling a one-line library (with and without libc)."""
    if arch in _PROBED:
        return _PROBED[arch]
    result: Optional[Toolchain] = None
    cand = _CANDIDATES.get(arch)
    if cand and shutil.which(cand[0]):
        import tempfile

        cc, cxx, flags, triplet = cand
        with tempfile.TemporaryDirectory() as tmp:
            if _links(cc, flags, True, Path(tmp)):
                libc = _links(cc, flags, False, Path(tmp))
                have_cxx = bool(cxx and shutil.which(cxx))
                result = Toolchain(arch, cc, cxx if have_cxx else None, libc, tuple(flags), triplet)
    _PROBED[arch] = result
    return result


def extension_name(stem: str, arch: str = "x86_64", python: str = "311") -> str:
    """A CPython extension file name as pip installs it: ``_C.cpython-311-x86_64-linux-gnu.so``."""
    return f"{stem}.cpython-{python}-{_CANDIDATES[arch][3]}.so"


Needed = Union[str, Path]


@dataclass
class ElfBuilder:
    """Compile into ``root`` (relative ``out`` paths land under it) for ``arch``."""

    root: Path
    arch: str = "x86_64"
    _done: Dict[str, Path] = field(default_factory=dict)

    def __post_init__(self) -> None:
        tc = toolchain(self.arch)
        if tc is None:
            raise RuntimeError(f"no working compiler for {self.arch}")
        self.tc = tc
        self.root = Path(self.root)
        # link-time stubs and version scripts live beside root, not in it, so that a
        # walk of root finds only the files built on purpose
        self._stubs = self.root.parent / f"{self.root.name}-linkstubs" / self.arch

    def _stub(self, soname: str) -> Path:
        """An empty library whose soname is ``soname``, only for the link line."""
        out = self._stubs / soname
        if not out.exists():
            self._compile(out, "/* link-time stub */\n", "c", ["-nostdlib", f"-Wl,-soname,{soname}"], shared=True)
        return out

    def _compile(self, out: Path, source: str, lang: str, args: List[str], shared: bool) -> None:
        out.parent.mkdir(parents=True, exist_ok=True)
        self._stubs.mkdir(parents=True, exist_ok=True)
        src = self._stubs / f"{hashlib.sha256(str(out).encode()).hexdigest()[:16]}.{'cc' if lang == 'c++' else 'c'}"
        src.write_text(source)
        if lang == "c++":
            if self.tc.cxx is None:
                raise RuntimeError(f"no C++ compiler for {self.arch}")
            compiler = self.tc.cxx
        else:
            compiler = self.tc.cc
        kind = ["-shared", "-fPIC"] if shared else []
        argv = [compiler, *self.tc.flags, *kind, "-O1", "-Wl,--build-id=none", "-o", str(out), str(src), *args]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=COMPILE_TIMEOUT)
        src.unlink()
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed:\n{proc.stderr[-3000:]}")

    def build(
        self,
        out: Union[str, Path],
        source: str,
        *,
        lang: str = "c",
        shared: bool = True,
        soname: Optional[str] = None,
        needed: Sequence[Needed] = (),
        rpath: Sequence[str] = (),
        runpath: Sequence[str] = (),
        version_script: Optional[str] = None,
        nostdlib: bool = False,
        flags: Sequence[str] = (),
    ) -> Path:
        """Compile ``source`` (C, or C++ with ``lang="c++"``) to ``root/out``; return the path.

        ``shared=False`` makes an executable (PIE, the compiler's default).  ``needed``:
        libraries recorded as ``DT_NEEDED`` in this order (linked ``--no-as-needed``);
        a ``str`` is a soname served by a link-time stub, a ``Path`` a real library.
        ``rpath`` / ``runpath``: entries of ``DT_RPATH`` (``--disable-new-dtags``) or
        ``DT_RUNPATH`` (``--enable-new-dtags``).  ``version_script``: the text of a
        linker version script.  ``nostdlib``: link no C library (needed for i686 here).
        """
        if rpath and runpath:
            raise ValueError("GNU ld writes either DT_RPATH or DT_RUNPATH, not both")
        target = Path(out) if Path(out).is_absolute() else self.root / out
        linked = [p if isinstance(p, Path) else self._stub(p) for p in needed]
        key = hashlib.sha256(
            json.dumps(
                [
                    str(target),
                    source,
                    lang,
                    shared,
                    soname,
                    [str(p) for p in needed],
                    [hashlib.sha256(p.read_bytes()).hexdigest() for p in linked],
                    list(rpath),
                    list(runpath),
                    version_script,
                    nostdlib,
                    list(flags),
                    self.arch,
                ]
            ).encode()
        ).hexdigest()
        if self._done.get(str(target)) == key and target.exists():
            return target
        args: List[str] = list(flags)
        if nostdlib or not self.tc.libc:
            args.append("-nostdlib")
        if soname:
            args.append(f"-Wl,-soname,{soname}")
        if rpath:
            args += ["-Wl,--disable-new-dtags", "-Wl,-rpath," + ":".join(rpath)]
        if runpath:
            args += ["-Wl,--enable-new-dtags", "-Wl,-rpath," + ":".join(runpath)]
        if version_script is not None:
            vs = self._stubs / "maps" / (hashlib.sha256(str(target).encode()).hexdigest()[:16] + ".map")
            vs.parent.mkdir(parents=True, exist_ok=True)
            vs.write_text(version_script)
            args.append(f"-Wl,--version-script={vs}")
        if linked:
            args += ["-Wl,--no-as-needed", *[str(p) for p in linked]]
        self._compile(target, source, lang, args, shared)
        self._done[str(target)] = key  # memo of this builder's lifetime (a pytest session)
        return target

    def stub_library(self, out: Union[str, Path], soname: str, functions: Sequence[str] = (), **kw) -> Path:
        """A C library exporting ``void f(void)`` for each name of ``functions``."""
        body = "".join(f"void {f}(void) {{}}\n" for f in functions) or "/* empty */\n"
        return self.build(out, body, soname=soname, **kw)


# --------------------------------------------------------------------------- sources
#: torch's ``c10::detail::torchCheckFail(const char*, const char*, unsigned, const std::string&)``,
#: compiled with ``-D_GLIBCXX_USE_CXX11_ABI=0`` or ``=1`` for a stub libc10.so of either C++ ABI.
C10_SOURCE = """\
#include <string>
namespace c10 { namespace detail {
void torchCheckFail(const char* func, const char* file, unsigned line, const std::string& msg) {
  (void)func; (void)file; (void)line; (void)msg;
}
void torchCheckFail(const char* func, const char* file, unsigned line, const char* msg) {
  (void)func; (void)file; (void)line; (void)msg;
}
} }
"""

#: A stub libtorch_npu.so: ``-DNEWER`` adds the symbol only a newer torch_npu exports.
TORCH_NPU_SOURCE = """\
#include <string>
namespace c10 { namespace detail {
void torchCheckFail(const char*, const char*, unsigned, const std::string&);
} }
extern "C" void aclInit(void);
extern "C" void HcclCommInitRootInfo(void);
namespace c10_npu {
struct NPUStream { int device; };
NPUStream getCurrentNPUStream(signed char device) { return NPUStream{device}; }
namespace NPUCachingAllocator {
#ifdef NEWER
void emptyCache(bool check_error) { (void)check_error; }
#endif
}
}
namespace at_npu { namespace native {
struct OpCommand { OpCommand(); OpCommand& Name(const std::string& name); };
OpCommand::OpCommand() {}
OpCommand& OpCommand::Name(const std::string& name) {
  if (name.empty()) c10::detail::torchCheckFail("Name", __FILE__, __LINE__, name);
  return *this;
}
} }
extern "C" const char* npudoctor_torch_npu_build(void) {
  aclInit(); HcclCommInitRootInfo();
#ifdef NEWER
  return "newer";
#else
  return "installed";
#endif
}
"""

#: A third-party extension that uses torch_npu's C++ API (built against the newer one).
EXTENSION_SOURCE = """\
#include <string>
namespace c10_npu {
struct NPUStream { int device; };
NPUStream getCurrentNPUStream(signed char device);
namespace NPUCachingAllocator { void emptyCache(bool check_error); }
}
namespace at_npu { namespace native {
struct OpCommand { OpCommand(); OpCommand& Name(const std::string& name); };
} }
extern "C" int npudoctor_ext_run(void) {
  at_npu::native::OpCommand op;
  op.Name("npu_custom_op");
  c10_npu::NPUCachingAllocator::emptyCache(true);
  return c10_npu::getCurrentNPUStream(0).device;
}
extern "C" void* PyInit__C(void) { return 0; }
"""

#: A stub ``libstdc++.so.6`` whose version nodes go beyond any real one (3.4.99, 1.3.99).
GLIBCXX_STUB_MAP = """\
GLIBCXX_3.4 { global: npudoctor_glibcxx_3_4; local: *; };
GLIBCXX_3.4.30 { global: npudoctor_glibcxx_3_4_30; } GLIBCXX_3.4;
GLIBCXX_3.4.99 { global: npudoctor_glibcxx_3_4_99; } GLIBCXX_3.4.30;
CXXABI_1.3 { global: npudoctor_cxxabi_1_3; };
CXXABI_1.3.99 { global: npudoctor_cxxabi_1_3_99; } CXXABI_1.3;
"""
GLIBCXX_STUB_SOURCE = "".join(
    f"void {f}(void) {{}}\n"
    for f in (
        "npudoctor_glibcxx_3_4",
        "npudoctor_glibcxx_3_4_30",
        "npudoctor_glibcxx_3_4_99",
        "npudoctor_cxxabi_1_3",
        "npudoctor_cxxabi_1_3_99",
    )
)
#: A stub ``libm.so.6`` defining ``GLIBC_2.99`` (CANN's compiler programs need GLIBC_2.29 via libm).
LIBM_STUB_MAP = "GLIBC_2.2.5 { global: npudoctor_libm_base; local: *; };\nGLIBC_2.99 { global: npudoctor_libm_2_99; } GLIBC_2.2.5;\n"
LIBM_STUB_SOURCE = "void npudoctor_libm_base(void) {}\nvoid npudoctor_libm_2_99(void) {}\n"

#: ``libopapi.so`` copies that say which one was loaded.
OPAPI_SOURCE = 'const char* npudoctor_opapi_owner(void) {{ return "{owner}"; }}\nvoid aclnnAdd(void) {{}}\n'
#: A library that reports which ``libopapi.so`` the loader bound it to.
OPAPI_USER_SOURCE = """\
const char* npudoctor_opapi_owner(void);
const char* npudoctor_which_opapi(void) { return npudoctor_opapi_owner(); }
"""

MAIN_SOURCE = "int main(void) { return 0; }\n"


def build_npu_world(b: ElfBuilder) -> Dict[str, Path]:
    """The named files of a small NPU environment (x86_64, real g++ C++ code), as a dict.

    ``stdlib`` (each with soname = file name, ``lib`` prefix):

    * ``libascend_hal`` driver/lib64/driver/libascend_hal.so; ``libc_sec``
      driver/lib64/common/libc_sec.so; ``libdrvdsmi_host``
      driver/lib64/driver/libdrvdsmi_host.so;
    * ``npu_smi``: executable driver/tools/npu-smi, NEEDED libc_sec.so, libdrvdsmi_host.so,
      no RPATH/RUNPATH (found only through the loader path);
    * ``libascendcl`` cann/lib64 (NEEDED libascend_hal.so, libc_sec.so, RUNPATH
      ``$ORIGIN``), ``libhccl`` (NEEDED libascendcl.so), ``libopapi`` (owner "cann");
    * ``libatb`` nnal/atb/lib/libatb.so (NEEDED libascendcl.so, libopapi.so);
    * ``custom_opapi`` custom_op/lib/libopapi.so (soname libopapi.so, owner "custom");
    * ``rpath_user`` / ``runpath_user``: cann/lib64/librpath_user.so,
      librunpath_user.so, NEEDED libopapi.so with DT_RPATH / DT_RUNPATH ``$ORIGIN``;
    * ``libc10_old`` / ``libc10_new``: site-packages/torch/lib/libc10.so (C++11 ABI) and
      abi0/torch/lib/libc10.so (``-D_GLIBCXX_USE_CXX11_ABI=0``), exporting
      ``c10::detail::torchCheckFail`` (``…RKSs`` / ``…RKNSt7__cxx1112basic_string…``);
    * ``libtorch_npu``: site-packages/torch_npu/lib/libtorch_npu.so, NEEDED libc10.so,
      libascendcl.so, libhccl.so, RPATH ``$ORIGIN/../../torch/lib``; exports the
      ``c10_npu::`` / ``at_npu::`` API *without* ``NPUCachingAllocator::emptyCache``;
    * ``libtorch_npu_newer``: build/newer/libtorch_npu.so, same soname, with it;
    * ``torch_npu_C``: site-packages/torch_npu/_C.cpython-311-x86_64-linux-gnu.so,
      NEEDED libtorch_npu.so, RPATH ``$ORIGIN/lib``;
    * ``ext_C``: site-packages/npu_ext/_C.cpython-311-x86_64-linux-gnu.so, a third-party
      extension linked against the newer torch_npu (undefined ``c10_npu::`` /
      ``at_npu::`` symbols, one absent from the installed libtorch_npu.so), RUNPATH
      ``$ORIGIN/../torch_npu/lib``;
    * ``glibcxx_stub``: build/glibcxx/libstdc++.so.6 (soname libstdc++.so.6, version
      nodes up to GLIBCXX_3.4.99 and CXXABI_1.3.99); ``libtriton``:
      site-packages/triton/_C/libtriton.so needing GLIBCXX_3.4.99 and CXXABI_1.3.99 of
      libstdc++.so.6 (a real ``.gnu.version_r`` need: the loader refuses it here);
    * ``libm_stub``: build/libm/libm.so.6 (GLIBC_2.99); ``ccec``: executable
      cann/bin/ccec needing libm.so.6 GLIBC_2.99;
    * ``i686_acl``: i686/libascendcl.so, a 32-bit i386 library (wrong architecture).
    """
    w: Dict[str, Path] = {}
    cann = "cann/lib64"
    w["libascend_hal"] = b.stub_library(
        "driver/lib64/driver/libascend_hal.so", "libascend_hal.so", ["halGetDeviceInfo"]
    )
    w["libc_sec"] = b.stub_library("driver/lib64/common/libc_sec.so", "libc_sec.so", ["memcpy_s", "strcpy_s"])
    w["libdrvdsmi_host"] = b.stub_library(
        "driver/lib64/driver/libdrvdsmi_host.so", "libdrvdsmi_host.so", ["dsmi_get_device_count"]
    )
    w["npu_smi"] = b.build(
        "driver/tools/npu-smi",
        "void dsmi_get_device_count(void);\nint main(void) { dsmi_get_device_count(); return 0; }\n",
        shared=False,
        needed=[w["libc_sec"], w["libdrvdsmi_host"]],
    )
    w["libascendcl"] = b.stub_library(
        f"{cann}/libascendcl.so",
        "libascendcl.so",
        ["aclInit", "aclrtSetDevice"],
        needed=[w["libascend_hal"], w["libc_sec"]],
        runpath=["$ORIGIN"],
    )
    w["libhccl"] = b.stub_library(
        f"{cann}/libhccl.so", "libhccl.so", ["HcclCommInitRootInfo"], needed=[w["libascendcl"]]
    )
    w["libopapi"] = b.build(f"{cann}/libopapi.so", OPAPI_SOURCE.format(owner="cann"), soname="libopapi.so")
    w["custom_opapi"] = b.build("custom_op/lib/libopapi.so", OPAPI_SOURCE.format(owner="custom"), soname="libopapi.so")
    w["libatb"] = b.stub_library(
        "nnal/atb/lib/libatb.so", "libatb.so", ["atbCreateContext"], needed=[w["libascendcl"], w["libopapi"]]
    )
    w["rpath_user"] = b.build(
        f"{cann}/librpath_user.so",
        OPAPI_USER_SOURCE,
        soname="librpath_user.so",
        needed=[w["libopapi"]],
        rpath=["$ORIGIN"],
    )
    w["runpath_user"] = b.build(
        f"{cann}/librunpath_user.so",
        OPAPI_USER_SOURCE,
        soname="librunpath_user.so",
        needed=[w["libopapi"]],
        runpath=["$ORIGIN"],
    )
    site = "site-packages"
    w["libc10_new"] = b.build(
        f"{site}/torch/lib/libc10.so", C10_SOURCE, lang="c++", soname="libc10.so", flags=["-D_GLIBCXX_USE_CXX11_ABI=1"]
    )
    w["libc10_old"] = b.build(
        "abi0/torch/lib/libc10.so", C10_SOURCE, lang="c++", soname="libc10.so", flags=["-D_GLIBCXX_USE_CXX11_ABI=0"]
    )
    npu_needed = [w["libc10_new"], w["libascendcl"], w["libhccl"]]
    w["libtorch_npu"] = b.build(
        f"{site}/torch_npu/lib/libtorch_npu.so",
        TORCH_NPU_SOURCE,
        lang="c++",
        soname="libtorch_npu.so",
        needed=npu_needed,
        rpath=["$ORIGIN/../../torch/lib"],
    )
    w["libtorch_npu_newer"] = b.build(
        "build/newer/libtorch_npu.so",
        TORCH_NPU_SOURCE,
        lang="c++",
        soname="libtorch_npu.so",
        needed=npu_needed,
        flags=["-DNEWER"],
    )
    w["torch_npu_C"] = b.build(
        f"{site}/torch_npu/{extension_name('_C', b.arch)}",
        'extern "C" void* PyInit__C(void) { return 0; }\n',
        lang="c++",
        needed=[w["libtorch_npu"], w["libhccl"]],
        rpath=["$ORIGIN/lib"],
    )
    w["ext_C"] = b.build(
        f"{site}/npu_ext/{extension_name('_C', b.arch)}",
        EXTENSION_SOURCE,
        lang="c++",
        needed=[w["libtorch_npu_newer"]],
        runpath=["$ORIGIN/../torch_npu/lib"],
    )
    w["glibcxx_stub"] = b.build(
        "build/glibcxx/libstdc++.so.6", GLIBCXX_STUB_SOURCE, soname="libstdc++.so.6", version_script=GLIBCXX_STUB_MAP
    )
    w["libtriton"] = b.build(
        f"{site}/triton/_C/libtriton.so",
        "void npudoctor_glibcxx_3_4_99(void);\nvoid npudoctor_cxxabi_1_3_99(void);\n"
        "void npudoctor_triton_init(void) { npudoctor_glibcxx_3_4_99(); npudoctor_cxxabi_1_3_99(); }\n",
        soname="libtriton.so",
        needed=[w["glibcxx_stub"]],
    )
    w["libm_stub"] = b.build("build/libm/libm.so.6", LIBM_STUB_SOURCE, soname="libm.so.6", version_script=LIBM_STUB_MAP)
    w["ccec"] = b.build(
        "cann/bin/ccec",
        "void npudoctor_libm_2_99(void);\nint main(void) { npudoctor_libm_2_99(); return 0; }\n",
        shared=False,
        needed=[w["libm_stub"]],
    )
    if toolchain("i686") is not None:
        w["i686_acl"] = ElfBuilder(b.root, "i686").stub_library("i686/libascendcl.so", "libascendcl.so", ["aclInit"])
    return w


@dataclass
class ElfWorld:
    """The session's built files: ``files`` (name → path, see :func:`build_npu_world`),
    ``root`` (their top directory) and ``builder`` (to build more into ``root``)."""

    root: Path
    builder: ElfBuilder
    files: Dict[str, Path]

    def __getitem__(self, name: str) -> Path:
        return self.files[name]


@pytest.fixture(scope="session", name="elf_world")
def elf_world_fixture(tmp_path_factory: pytest.TempPathFactory) -> ElfWorld:
    """Session fixture: :func:`build_npu_world` for x86_64, built once (skips without gcc/g++)."""
    tc = toolchain("x86_64")
    if tc is None or tc.cxx is None or not tc.libc:
        pytest.skip("gcc/g++ for x86_64 not available")
    root = tmp_path_factory.mktemp("elfworld")
    builder = ElfBuilder(root, "x86_64")
    return ElfWorld(root, builder, build_npu_world(builder))


@pytest.fixture(scope="session", name="elf_builder_for")
def elf_builder_for_fixture(tmp_path_factory: pytest.TempPathFactory):
    """Session fixture: ``get(arch)`` → an :class:`ElfBuilder` for ``arch`` (skips when absent)."""
    builders: Dict[str, ElfBuilder] = {}

    def get(arch: str) -> ElfBuilder:
        if toolchain(arch) is None:
            pytest.skip(f"no compiler for {arch} on this machine")
        if arch not in builders:
            builders[arch] = ElfBuilder(tmp_path_factory.mktemp(f"elf-{arch}"), arch)
        return builders[arch]

    return get


if __name__ == "__main__":  # python tests/builders/elfbuild.py DIR: build the world there and list it
    import sys

    for arch in ("x86_64", "aarch64", "i686"):
        print(arch, toolchain(arch))
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "elfworld")
    for name, path in build_npu_world(ElfBuilder(out)).items():
        print(f"{name:20} {path}")
