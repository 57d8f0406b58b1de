"""A small site of the first day, built with gcc/g++: the scenario "torch_npu installed, no CANN"
plus the NPU driver of another scenario, torch's ``lib/libc10.so`` (C++11 ABI), torch_npu's
``libtorch_npu.so``, ``_C`` and torchair's ``_npu_utils.so`` / ``_torchair.so`` (needing CANN's
libraries) and a RECORD listing them.  Tests add their one problem to it."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Sequence

import pytest
from scenario_runner import REPO, prepare

from builders.elfbuild import C10_SOURCE, TORCH_NPU_SOURCE, ElfBuilder, extension_name, toolchain

SCEN = REPO / "tests" / "scenarios"
SITE = "usr/local/lib/python3.10/site-packages"


def first_day(tmp_path: Path, version: str = "2.7.1", npu_needs: Sequence[str] = (), torch_abi: int = 1) -> Path:
    """The prepared scenario (under ``tmp_path``) with torch_npu ``version`` in its METADATA;
    ``npu_needs``: more DT_NEEDED entries of libtorch_npu.so (served by link-time stubs);
    ``torch_abi``: the ``_GLIBCXX_USE_CXX11_ABI`` torch's libc10.so is built with
    (libtorch_npu.so is always built with the C++11 ABI)."""
    tc = toolchain("x86_64")
    if tc is None or tc.cxx is None:
        pytest.skip("gcc/g++ for x86_64 not available")
    scenario = prepare(SCEN / "no-cann-torch-npu-installed", tmp_path)
    root = scenario / "root"
    driver = SCEN / "k10-set-env-not-sourced" / "root" / "usr/local/Ascend/driver"
    shutil.copytree(driver, root / "usr/local/Ascend/driver", symlinks=True)
    site = root / SITE
    b = ElfBuilder(root, "x86_64")
    c10 = b.build(
        site / "torch/lib/libc10.so",
        C10_SOURCE,
        lang="c++",
        soname="libc10.so",
        flags=[f"-D_GLIBCXX_USE_CXX11_ABI={torch_abi}"],
    )
    npu = b.build(
        site / "torch_npu/lib/libtorch_npu.so",
        TORCH_NPU_SOURCE,
        lang="c++",
        soname="libtorch_npu.so",
        needed=[c10, "libascendcl.so", "libhccl.so", *npu_needs],
        rpath=["$ORIGIN/../../torch/lib"],
    )
    core = "torch_npu/dynamo/torchair/core"
    modules = {
        f"torch_npu/{extension_name('_C', python='310')}": ([npu], ["$ORIGIN/lib"]),
        f"{core}/_npu_utils.so": (["libge_runner.so", "libascendcl.so"], []),
        f"{core}/_torchair.so": (["libge_runner.so", "libgraph.so", "libhccl.so"], []),
    }
    for rel, (needed, rpath) in modules.items():
        b.build(site / rel, "int npudoctor_module(void) { return 0; }\n", needed=needed, rpath=rpath)
    dist = site / "torch_npu-2.7.1.dist-info"
    record = ["torch_npu/lib/libtorch_npu.so,,", *(f"{rel},," for rel in modules)]
    (dist / "RECORD").write_text("\n".join(record) + "\n")
    meta = dist / "METADATA"
    meta.write_text(meta.read_text().replace("Version: 2.7.1", f"Version: {version}"))
    return scenario
