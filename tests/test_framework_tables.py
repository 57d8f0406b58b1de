"""Frameworks judged against their own published version tables (issue 29), through the CLI
(``check --json``, in-process) on real trees.  Each test starts from the officially paired
910B3 scenario of tests/builders/build_framework_scenarios.py (CANN 8.2.RC1, torch 2.5.1 / torch_npu
2.5.1.post1, vllm-ascend 0.9.1 built for 910B) and adds exactly one framework dist-info, written
the way pip writes it.

PKG004  lmdeploy outside its Ascend requirement file (error); MindSpeed Core made for another
        torch (warning naming the release made for the installed torch)
CANN012 MindSpeed-LLM made for a newer CANN (source install: no `pip install` of it)
MTX003  a framework release newer than the built-in table (warning naming the data's date)
DEV040  DeepSpeed before its NPU accelerator was selectable
PKG051  a vllm-ascend build for another chip names the image built for this one
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any, Dict, List

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS / "fixtures"))

from builders.build_cann_scenarios import dist  # noqa: E402
from scenario_runner import prepare, run_check  # noqa: E402

SCENARIOS = TESTS / "scenarios"
CLEAN = "fw-vllm-ascend-910b-build-on-910b3"
SP = "usr/local/lib/python3.10/site-packages"
T = "cp310-cp310-manylinux_2_17_aarch64"


def _clean(tmp_path: Path) -> Path:
    return prepare(SCENARIOS / CLEAN, tmp_path)


def _findings(scenario: Path) -> List[Dict[str, Any]]:
    run = run_check(scenario, [])
    assert run.doc is not None, run.stderr
    return list(run.doc["findings"])


def _only(findings: List[Dict[str, Any]], code: str) -> Dict[str, Any]:
    got = [f for f in findings if f["code"] == code]
    assert len(got) == 1, [(f["code"], f["title"]) for f in findings]
    return got[0]


def _torch_271(s: Path) -> None:
    """Swap the base to torch 2.7.1 / torch_npu 2.7.1 (paired with CANN 8.2.RC1) without
    vllm-ascend, whose 0.9.1 pins torch-npu 2.5.1.post1."""
    sp = s / "root" / SP
    for old in ("torch-2.5.1", "torch_npu-2.5.1.post1", "vllm-0.9.1", "vllm_ascend-0.9.1"):
        shutil.rmtree(sp / f"{old}.dist-info")
    shutil.rmtree(sp / "vllm_ascend")
    dist(s / "root", "torch", "2.7.1", tag=T, site=SP)
    dist(s / "root", "torch_npu", "2.7.1", requires=["torch==2.7.1", "pyyaml", "setuptools"], tag=T, site=SP)


# ---------------------------------------------------------------- PKG004 from the tables


def test_lmdeploy_outside_its_ascend_requirement_names_the_release_that_admits_torch_npu(tmp_path: Path) -> None:
    s = _clean(tmp_path)
    dist(s / "root", "lmdeploy", "0.9.2", requires=["transformers"], tag=T, site=SP)
    f = _only(_findings(s), "PKG004")
    assert f["severity"] == "error"
    assert f["title"] == "lmdeploy 0.9.2 requires torch-npu==2.3.1 on Ascend, but torch_npu 2.5.1.post1 is installed"
    assert any("requirements/runtime_ascend.txt at v0.7.0 .. v0.9.2.post1" in e for e in f["evidence"])
    # the PyPI wheel is the CUDA build: the Ascend build of 0.16.0 is installed as its docs say
    assert any(
        ": LMDEPLOY_TARGET_DEVICE=ascend " in line
        and line.endswith("-m pip install git+https://github.com/InternLM/lmdeploy.git@v0.16.0")
        for line in f["fix"]
    ), f["fix"]
    assert not any("lmdeploy==" in line for line in f["fix"])


def test_lmdeploy_inside_its_requirement_is_quiet(tmp_path: Path) -> None:
    s = _clean(tmp_path)
    dist(s / "root", "lmdeploy", "0.12.1", requires=["transformers"], tag=T, site=SP)
    assert not [f for f in _findings(s) if "lmdeploy" in f["title"]]


def test_a_pin_in_the_frameworks_own_metadata_speaks_first(tmp_path: Path) -> None:
    # built with DEVICE=ascend: its METADATA pins torch-npu itself, the table is not consulted
    s = _clean(tmp_path)
    dist(s / "root", "lmdeploy", "0.9.2", requires=["torch-npu>=2.5.1"], tag=T, site=SP)
    assert not [f for f in _findings(s) if f["code"] == "PKG004" and "lmdeploy" in f["title"]]


def test_mindspeed_core_for_another_torch_names_the_branch_made_for_this_one(tmp_path: Path) -> None:
    s = _clean(tmp_path)
    dist(s / "root", "mindspeed", "0.8.0", requires=["einops"], tag="py3-none-any", site=SP)
    f = _only(_findings(s), "PKG004")
    assert f["severity"] == "warning"
    assert f["title"] == (
        "MindSpeed Core 0.8.0 (release 2.0.0_core_r0.8.0, 2.1.0_core_r0.8.0) is made for torch 2.1.0, "
        "but torch 2.5.1 is installed"
    )
    assert f["data"]["grade"] == "undocumented"
    assert any(line.endswith("-m pip install torch==2.1.0") for line in f["fix"]), f["fix"]
    assert (
        "or keep torch 2.5.1: MindSpeed Core 2.1.0_core_r0.12.1 .. 26.1.0_core_r0.12.1 is made for it: "
        "check out its 2.1.0_core_r0.12.1 .. 26.1.0_core_r0.12.1 branch and reinstall it (pip install -e)"
    ) in f["fix"]
    assert not any("pip install mindspeed" in line for line in f["fix"])


# ---------------------------------------------------------------- CANN012 from the tables


def test_mindspeed_llm_made_for_a_newer_cann_is_one_finding_without_a_pip_install_of_it(tmp_path: Path) -> None:
    s = _clean(tmp_path)
    _torch_271(s)
    dist(s / "root", "mindspeed_llm", "2.3.0", requires=["einops"], tag="py3-none-any", site=SP)
    findings = _findings(s)
    f = _only(findings, "CANN012")
    assert f["title"] == "MindSpeed-LLM 2.3.0 needs CANN 8.5.0 or newer, but CANN 8.2.RC1 is in use"
    assert any("README.md of branch 2.3.0 (commit 62d4640b)" in e for e in f["evidence"])
    assert not any("install mindspeed-llm" in line or "mindspeed_llm==" in line for line in f["fix"]), f["fix"]
    assert "PKG004" not in [x["code"] for x in findings]  # torch 2.7.1 is the one its table names


def test_triton_ascend_3_2_2_is_bound_to_cann_9_1_0(tmp_path: Path) -> None:
    # 'Triton-Ascend版本与CANN版本强绑定': MindSpeed-LLM 26.1.0 and vllm-ascend v0.23.0 pair 3.2.2 with 9.1.0
    s = _clean(tmp_path)
    dist(s / "root", "triton_ascend", "3.2.2", tag=T, site=SP)
    findings = _findings(s)
    f = _only(findings, "CANN012")
    assert f["title"] == "triton-ascend 3.2.2 needs CANN 9.1.0 or newer, but CANN 8.2.RC1 is in use"
    assert "MTX003" not in [x["code"] for x in findings]


# ---------------------------------------------------------------- newer than the data


def test_a_release_newer_than_the_table_is_a_warning_naming_the_data_date(tmp_path: Path) -> None:
    s = _clean(tmp_path)
    dist(s / "root", "lmdeploy", "0.17.0", requires=["transformers"], tag=T, site=SP)
    f = _only(_findings(s), "MTX003")
    assert f["severity"] == "warning"
    assert f["title"] == (
        "lmdeploy 0.17.0 is newer than the built-in lmdeploy table (data of 2026-12-06): "
        "the torch, torch_npu and CANN it needs are not checked"
    )
    assert f["data"]["newer_than_data"] is True
    assert any(line.startswith("npudoctor matrix refresh") for line in f["fix"])
    assert any("requirements/runtime_ascend.txt per release tag" in line for line in f["fix"])


def test_a_newer_release_pinning_torch_npu_itself_says_only_its_cann_is_unchecked(tmp_path: Path) -> None:
    # v0.24.0rc1 is tagged but not in the versioning policy; its pin here is the installed build, so
    # that only the missing table row is in question
    s = _clean(tmp_path)
    sp = s / "root" / SP
    shutil.rmtree(sp / "vllm_ascend-0.9.1.dist-info")
    dist(s / "root", "vllm_ascend", "0.24.0rc1", requires=["torch-npu==2.5.1.post1", "torch>=2.5.1"], tag=T, site=SP)
    f = _only([x for x in _findings(s) if "vllm-ascend" in x["title"]], "MTX003")
    assert f["severity"] == "warning"
    assert f["title"] == (
        "vllm-ascend 0.24.0rc1 is newer than the built-in vllm-ascend table (data of 2026-12-06): "
        "the CANN it needs is not checked (its own torch-npu pin is)"
    )


def test_mindspeed_core_versions_are_not_ordered_so_any_unknown_one_is_a_warning(tmp_path: Path) -> None:
    # core_r0.14.0 installs as 0.14.1: below the 1.1.0 of 1.0.RC2, yet no release the table knows
    s = _clean(tmp_path)
    dist(s / "root", "mindspeed", "0.14.1", requires=["einops"], tag="py3-none-any", site=SP)
    findings = _findings(s)
    f = _only(findings, "MTX003")
    assert f["severity"] == "warning"
    assert f["title"].startswith(
        "MindSpeed Core 0.14.1 is not in the built-in MindSpeed Core table (data of 2026-12-06)"
    )
    assert f["data"]["newer_than_data"] is False
    assert "PKG004" not in [x["code"] for x in findings]


# ---------------------------------------------------------------- DEV040 DeepSpeed


def test_deepspeed_before_its_npu_accelerator_is_an_error_naming_the_first_release(tmp_path: Path) -> None:
    s = _clean(tmp_path)
    dist(s / "root", "deepspeed", "0.10.0", requires=["torch"], tag="py3-none-any", site=SP)
    f = _only([x for x in _findings(s) if "deepspeed" in x["title"]], "DEV040")
    assert f["severity"] == "error"
    assert f["title"] == "deepspeed 0.10.0 does not support 910B3 (family 910B)"
    assert f["fix"][0].startswith("Use deepspeed 0.10.1 or newer")
    assert any("Make Ascend NPU available" in e for e in f["evidence"])


def test_deepspeed_with_its_npu_accelerator_on_910b_is_quiet(tmp_path: Path) -> None:
    s = _clean(tmp_path)
    dist(s / "root", "deepspeed", "0.10.1", requires=["torch"], tag="py3-none-any", site=SP)
    assert not [f for f in _findings(s) if "deepspeed" in f["title"]]


# ---------------------------------------------------------------- PKG051 names the image


def test_a_build_for_another_chip_names_the_image_for_this_one(tmp_path: Path) -> None:
    s = prepare(SCENARIOS / "fw-vllm-ascend-310p-build-on-910b3", tmp_path)
    f = _only(_findings(s), "PKG051")
    assert "the image quay.io/ascend/vllm-ascend:v0.9.1 (CANN 8.2.RC1, torch_npu 2.5.1.post1)" in f["fix"][0]


def test_a_vllm_ascend_release_for_a_newer_cann_names_its_image_and_the_cann_it_carries(tmp_path: Path) -> None:
    s = prepare(SCENARIOS / "fw-vllm-ascend-0.11.0rc2-on-cann-8.2.RC1", tmp_path)
    f = _only(_findings(s), "CANN012")
    assert (
        "or run vllm-ascend 0.11.0rc2 in its image quay.io/ascend/vllm-ascend:v0.11.0rc2, whose base image "
        "carries CANN 8.3.RC2 (mount the host's driver into it)"
    ) in f["fix"]


def test_unreadable_versions_are_not_judged_and_never_crash(tmp_path: Path) -> None:
    s = _clean(tmp_path)
    dist(s / "root", "lmdeploy", "not-a-version", requires=["transformers"], tag=T, site=SP)
    dist(s / "root", "mindspeed_llm", "9" * 200, requires=["einops"], tag="py3-none-any", site=SP)
    codes = [f["code"] for f in _findings(s)]
    assert "HOST099" not in codes
    assert "PKG004" not in codes and "MTX003" not in codes
