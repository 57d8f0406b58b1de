"""An aarch64 Ascend machine as a ``--root`` scenario, built from real aarch64 ELF files
(issue 14: the library audit proven on aarch64 trees, Kunpeng + Ascend).

Everything binary is compiled here with ``aarch64-linux-gnu-gcc``/``-g++``
(:mod:`elfbuild`) or copied from the cross toolchain's own aarch64 glibc 2.36 and GCC 12
libstdc++ (``/usr/aarch64-linux-gnu/lib``, Debian 12's ``libc6-arm64-cross`` and
``libstdc++6-arm64-cross``: the same files Debian 12's arm64 packages install).  The tree
is laid out like a real aarch64 machine with the official CANN 8.0.0 image layout:

* Debian 12 with merged ``/usr`` (``/bin -> usr/bin``, ``/lib -> usr/lib``), ``/bin/sh``
  an aarch64 program (the host probe reads the architecture from it), the OS libraries in
  ``/usr/lib/aarch64-linux-gnu`` and the loader ``/lib/ld-linux-aarch64.so.1``;
  ``/etc/os-release`` is this machine's (Debian 12, the release these libraries are of);
* the CANN 8.0.0 toolkit: ``ascend-toolkit/8.0.0/aarch64-linux/lib64`` holding the
  libraries, ``8.0.0/lib64 -> aarch64-linux/lib64``, ``latest -> 8.0.0``, the captured
  aarch64 install info (``ascend_toolkit_install_8.0.0_aarch64.info``) and ``set_env.sh``
  (``set_env_toolkit_8.0.0.sh.txt``); ``libascendcl.so`` needs the driver's
  ``libascend_hal.so`` and ``libc_sec.so`` (RUNPATH ``$ORIGIN``), ``libhccl.so`` needs
  ``libascendcl.so``;
* the driver 24.1.rc2 (``version.info`` of scenario k03) with ``lib64/driver``,
  ``lib64/common`` and ``tools/npu-smi`` (needing ``libc_sec.so`` and
  ``libdrvdsmi_host.so``, no RPATH: found through the loader path as set_env.sh sets it);
* torch 2.1.0 and torch_npu 2.1.0.post10 (the pair of scenario k03, on CANN 8.0.0) in the
  official image's interpreter ``/usr/local/python3.11.13``: ``torch/lib/libc10.so``
  built with ``-D_GLIBCXX_USE_CXX11_ABI=0`` (PyPI's aarch64 torch up to 2.5 is an old-ABI
  build), ``libtorch_npu.so`` (the ``c10_npu::``/``at_npu::`` API of
  :data:`elfbuild.TORCH_NPU_SOURCE`, same ABI, RPATH ``$ORIGIN/../../torch/lib``) and
  ``_C.cpython-311-aarch64-linux-gnu.so`` (RPATH ``$ORIGIN/lib``).

The environment is the one set_env.sh gives on aarch64 (``op_tiling/lib/linux/aarch64``).
:func:`build_arm_scenario` writes the scenario folder (``scenario.toml`` + ``root``);
the session fixture ``arm_world`` builds it once, tests copy it with
``scenario_runner.prepare`` and add exactly one problem.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List

import pytest

from builders.elfbuild import C10_SOURCE, MAIN_SOURCE, TORCH_NPU_SOURCE, ElfBuilder, extension_name, toolchain

HERE = Path(__file__).resolve().parents[1]  # tests/
FIXTURES = HERE / "fixtures"
K03 = HERE / "scenarios" / "k03-extension-other-torch-npu"
#: The cross toolchain's aarch64 glibc / libstdc++ (Debian 12 arm64 builds).
CROSS_LIB = Path("/usr/aarch64-linux-gnu/lib")
OS_LIBS = ("ld-linux-aarch64.so.1", "libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "libgcc_s.so.1")

SITE = "usr/local/python3.11.13/lib/python3.11/site-packages"
TOOLKIT = "usr/local/Ascend/ascend-toolkit/8.0.0"
LIB64 = f"{TOOLKIT}/aarch64-linux/lib64"
DRIVER = "usr/local/Ascend/driver"
OSLIB = "usr/lib/aarch64-linux-gnu"
TK = "/usr/local/Ascend/ascend-toolkit/latest"
#: PyPI's tag of torch 2.1.0 / torch_npu 2.1.0.post10 aarch64 wheels.
AARCH64_TAG = "cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64"


def sourced_env() -> Dict[str, str]:
    """What ``source /usr/local/Ascend/ascend-toolkit/set_env.sh`` (the 8.0.0 sample) sets
    on aarch64 (``$(arch)`` = ``aarch64``)."""
    ld = [
        f"{TK}/tools/aml/lib64",
        f"{TK}/tools/aml/lib64/plugin",
        f"{TK}/lib64",
        f"{TK}/lib64/plugin/opskernel",
        f"{TK}/lib64/plugin/nnengine",
        f"{TK}/opp/built-in/op_impl/ai_core/tbe/op_tiling/lib/linux/aarch64",
        "/usr/local/Ascend/driver/lib64",
        "/usr/local/Ascend/driver/lib64/common",
        "/usr/local/Ascend/driver/lib64/driver",
    ]
    return {
        "HOME": "/root",
        "ASCEND_TOOLKIT_HOME": TK,
        "ASCEND_HOME_PATH": TK,
        "ASCEND_AICPU_PATH": TK,
        "ASCEND_OPP_PATH": f"{TK}/opp",
        "TOOLCHAIN_HOME": f"{TK}/toolkit",
        "LD_LIBRARY_PATH": ":".join(ld),
        "PYTHONPATH": f"{TK}/python/site-packages:{TK}/opp/built-in/op_impl/ai_core/tbe",
    }


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _link(path: Path, target: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, path)


def _dist(site: Path, name: str, dist: str, version: str, requires: List[str] = ()) -> None:
    d = site / f"{dist}-{version}.dist-info"
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    _write(d / "METADATA", "\n".join(lines) + "\n")
    _write(d / "WHEEL", f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: {AARCH64_TAG}\n")


def toml_env(env: Dict[str, str]) -> str:
    """The ``[env]`` table of a scenario.toml."""
    return "[env]\n" + "".join(f'{k} = "{v}"\n' for k, v in env.items())


def build_arm_scenario(b: ElfBuilder, dest: Path) -> Dict[str, Path]:
    """Write the scenario folder ``dest`` (``scenario.toml``, ``root/``) and return the
    named files (paths inside ``dest/root``)."""
    root = dest / "root"
    w: Dict[str, Path] = {}
    # --- the OS: Debian 12, merged /usr
    for top in ("bin", "lib", "sbin"):
        _link(root / top, f"usr/{top}")
    w["sh"] = b.build(root / "usr/bin/dash", MAIN_SOURCE, shared=False)
    _link(root / "usr/bin/sh", "dash")
    oslib = root / OSLIB
    oslib.mkdir(parents=True)
    for name in OS_LIBS + ("libstdc++.so.6",):
        shutil.copyfile(os.path.realpath(CROSS_LIB / name), oslib / name)
    _link(root / "usr/lib/ld-linux-aarch64.so.1", "aarch64-linux-gnu/ld-linux-aarch64.so.1")
    shutil.copyfile("/etc/os-release", _mk(root / "etc/os-release"))
    # --- the driver
    drv = root / DRIVER
    shutil.copyfile(K03 / "root" / DRIVER / "version.info", _mk(drv / "version.info"))
    w["libascend_hal"] = b.stub_library(drv / "lib64/driver/libascend_hal.so", "libascend_hal.so", ["halGetDeviceInfo"])
    w["libc_sec"] = b.stub_library(drv / "lib64/common/libc_sec.so", "libc_sec.so", ["memcpy_s", "strcpy_s"])
    w["libdrvdsmi_host"] = b.stub_library(
        drv / "lib64/driver/libdrvdsmi_host.so", "libdrvdsmi_host.so", ["dsmi_get_device_count"]
    )
    w["npu_smi"] = b.build(
        drv / "tools/npu-smi",
        "void dsmi_get_device_count(void);\nint main(void) { dsmi_get_device_count(); return 0; }\n",
        shared=False,
        needed=[w["libc_sec"], w["libdrvdsmi_host"]],
    )
    # --- the CANN toolkit 8.0.0 (aarch64 layout)
    tk = root / TOOLKIT
    shutil.copyfile(
        FIXTURES / "ascend_toolkit_install_8.0.0_aarch64.info", _mk(tk / "aarch64-linux/ascend_toolkit_install.info")
    )
    lib64 = root / LIB64
    w["libascendcl"] = b.stub_library(
        lib64 / "libascendcl.so",
        "libascendcl.so",
        ["aclInit", "aclrtSetDevice", "aclFinalize"],
        needed=[w["libascend_hal"], w["libc_sec"]],
        runpath=["$ORIGIN"],
    )
    w["libhccl"] = b.stub_library(
        lib64 / "libhccl.so",
        "libhccl.so",
        ["HcclCommInitRootInfo", "HcclCommInitRootInfoConfig"],
        needed=[w["libascendcl"]],
        runpath=["$ORIGIN"],
    )
    w["libopapi"] = b.stub_library(lib64 / "libopapi.so", "libopapi.so", ["aclnnAdd", "aclnnAddGetWorkspaceSize"])
    w["libgraph"] = b.stub_library(lib64 / "libgraph.so", "libgraph.so", ["f_graph"], runpath=["$ORIGIN"])
    for sub in ("plugin/opskernel", "plugin/nnengine"):
        (lib64 / sub).mkdir(parents=True)
    (tk / "aarch64-linux/bin").mkdir(parents=True)
    for name in ("lib64", "bin"):
        _link(tk / name, f"aarch64-linux/{name}")
    _link(tk / "arm64-linux", "aarch64-linux")
    _link(root / "usr/local/Ascend/ascend-toolkit/latest", "8.0.0")
    for sub in ("python/site-packages/te/__init__.py", "python/site-packages/tbe/__init__.py"):
        _write(tk / sub, "")
    (tk / "opp/built-in/op_impl/ai_core/tbe/op_tiling/lib/linux/aarch64").mkdir(parents=True)
    shutil.copyfile(FIXTURES / "set_env_toolkit_8.0.0.sh.txt", root / "usr/local/Ascend/ascend-toolkit/set_env.sh")
    # --- torch 2.1.0 + torch_npu 2.1.0.post10 (old C++ ABI, as PyPI's aarch64 torch 2.1.0)
    site = root / SITE
    _dist(site, "torch", "torch", "2.1.0")
    _write(site / "torch/__init__.py", "")
    tl = site / "torch/lib"
    old_abi = ["-D_GLIBCXX_USE_CXX11_ABI=0"]
    w["libc10"] = b.build(tl / "libc10.so", C10_SOURCE, lang="c++", soname="libc10.so", flags=old_abi)
    w["libtorch_cpu"] = b.stub_library(
        tl / "libtorch_cpu.so", "libtorch_cpu.so", ["npudoctor_torch_cpu"], needed=[w["libc10"]], runpath=["$ORIGIN"]
    )
    w["libtorch"] = b.stub_library(
        tl / "libtorch.so", "libtorch.so", [], needed=[w["libtorch_cpu"]], runpath=["$ORIGIN"]
    )
    w["libtorch_python"] = b.stub_library(
        tl / "libtorch_python.so", "libtorch_python.so", ["npudoctor_torch_python"], needed=[w["libtorch"]]
    )
    _dist(site, "torch-npu", "torch_npu", "2.1.0.post10", ["torch==2.1.0"])
    _write(site / "torch_npu/__init__.py", "")
    w["libtorch_npu"] = b.build(
        site / "torch_npu/lib/libtorch_npu.so",
        TORCH_NPU_SOURCE,
        lang="c++",
        soname="libtorch_npu.so",
        needed=[w["libc10"], w["libascendcl"], w["libhccl"]],
        rpath=["$ORIGIN/../../torch/lib"],
        flags=old_abi,
    )
    w["torch_npu_C"] = b.build(
        site / "torch_npu" / extension_name("_C", "aarch64"),
        'extern "C" void* PyInit__C(void) { return 0; }\n',
        lang="c++",
        needed=[w["libtorch_npu"], w["libhccl"]],
        rpath=["$ORIGIN/lib"],
        flags=old_abi,
    )
    # the newer torch_npu (emptyCache): only for building extensions against, outside the root
    w["libtorch_npu_newer"] = b.build(
        dest.parent / f"{dest.name}-build" / "newer/libtorch_npu.so",
        TORCH_NPU_SOURCE,
        lang="c++",
        soname="libtorch_npu.so",
        needed=[w["libc10"], w["libascendcl"], w["libhccl"]],
        flags=old_abi + ["-DNEWER"],
    )
    _write(
        dest / "scenario.toml",
        "# built by tests/builders/armworld.py\n[scenario]\n"
        'title = "aarch64 CANN 8.0.0 + torch_npu 2.1.0.post10 machine (control)"\n'
        'source = "issue 14; tests/builders/armworld.py"\n\n' + toml_env(sourced_env()),
    )
    return w


def _mk(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


@dataclass
class ArmWorld:
    """The built scenario (``scenario``: its folder, copied by tests), its named files
    (``files``), and the aarch64 builder (``builder``) to build more."""

    scenario: Path
    builder: ElfBuilder
    files: Dict[str, Path]

    def __getitem__(self, name: str) -> Path:
        return self.files[name]


@pytest.fixture(scope="session", name="arm_world")
def arm_world_fixture(tmp_path_factory: pytest.TempPathFactory) -> ArmWorld:
    """Session fixture: :func:`build_arm_scenario` once (skips without the aarch64 cross
    compilers and the cross toolchain's libraries)."""
    tc = toolchain("aarch64")
    if tc is None or tc.cxx is None or not tc.libc:
        pytest.skip(
            "aarch64-linux-gnu-gcc/g++ not available (apt-get install gcc-aarch64-linux-gnu g++-aarch64-linux-gnu)"
        )
    if not all((CROSS_LIB / n).exists() for n in OS_LIBS + ("libstdc++.so.6",)):
        pytest.skip(f"the aarch64 C/C++ libraries are not in {CROSS_LIB}")
    base = tmp_path_factory.mktemp("armworld")
    builder = ElfBuilder(base / "build", "aarch64")
    scenario = base / "arm-ascend"
    files = build_arm_scenario(builder, scenario)
    return ArmWorld(scenario, builder, files)
