"""MindIE releases after 2.1.RC1 judged as their own version tables say (issue 29), through
``check --json`` (in-process) on real trees: a CANN toolkit with its install.info, torch and
torch_npu dist-info, and MindIE's ``mindie/latest/version.info`` as its .run package writes it.

Rows (npudoctor/knowledge/data/frameworks/torch_npu_requirements.toml, sources there):
2.1.RC2 -> CANN 8.2.RC2, extension 7.1.0; 2.2.RC1 -> CANN 8.3.RC2, 7.2.0; 2.3.0 -> CANN 8.5.0,
torch 2.1.0 -> 7.2.0 and torch 2.6.0 -> 7.3.0; 3.0.0 -> CANN 8.5.1 (8.5.0 and 9.0.0 also Y),
torch 2.9.0 -> 7.3.0 and torch 2.1.0 -> 7.2.0; 3.1.0 and 3.2.0 -> CANN 9.0.0 or newer; before 2.1.RC1:
1.0.RC2 -> CANN 8.0.RC2 (torch 1.11.0 or 2.1.0 only), 1.0.RC3 -> 8.0.RC3, 1.0.0 -> 8.0.0.

A stack on an official row gives no MindIE finding; off it, one finding names the build.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))

from builders.stacktree import build_root, npudoctor_inprocess  # noqa: E402


def _stack(tmp_path: Path, mindie: str, cann: str, torch: str, torch_npu: str) -> Path:
    root = build_root(tmp_path / "root", "mindie-node", cann=cann, driver="25.5.0", torch=torch, torch_npu=torch_npu)
    info = root / "usr/local/Ascend/mindie/latest/version.info"
    info.parent.mkdir(parents=True)
    build = f"{mindie}.B120"
    info.write_text(
        f"Ascend-mindie : MindIE {build}\nmindie-rt: {build}\nmindie-torch: {build}\n"
        f"mindie-service: {build}\nmindie-llm: {build}\nmindie-sd:{build}\nPlatform : aarch64\n"
    )
    return root


def _mindie_findings(root: Path) -> List[Dict[str, Any]]:
    proc = npudoctor_inprocess("check", "--root", str(root), "--json")
    doc = json.loads(proc.stdout)
    return [f for f in doc["findings"] if str(f.get("subject") or "").startswith("mindie:")]


@pytest.mark.parametrize(
    "mindie, cann, torch, torch_npu",
    [
        ("2.1.RC2", "8.2.RC2", "2.5.1", "2.5.1.post1"),
        ("2.2.RC1", "8.3.RC2", "2.6.0", "2.6.0.post3"),
        ("2.2.RC1", "8.3.RC2", "2.1.0", "2.1.0.post17"),
        ("2.3.0", "8.5.0", "2.6.0", "2.6.0.post5"),
        ("2.3.0", "8.5.0", "2.1.0", "2.1.0.post17"),  # the 7.2.0 build, not 7.3.0's
        ("3.0.0", "8.5.1", "2.9.0", "2.9.0"),
        ("3.0.0", "8.5.0", "2.9.0", "2.9.0"),  # MindIE LLM 3.0.0: Y with CANN 8.5.0
        ("3.0.0", "9.0.0", "2.1.0", "2.1.0.post17"),
        ("3.1.0", "9.0.1", "2.9.0", "2.9.0.post2"),
        ("3.2.0", "9.2.0", "2.10.0", "2.10.0.post6"),
        ("1.0.RC2", "8.0.RC2", "2.1.0", "2.1.0.post6"),
        ("1.0.0", "8.0.0", "2.1.0", "2.1.0.post10"),
    ],
)
def test_an_official_mindie_stack_gives_no_mindie_finding(
    tmp_path: Path, mindie: str, cann: str, torch: str, torch_npu: str
) -> None:
    assert _mindie_findings(_stack(tmp_path, mindie, cann, torch, torch_npu)) == []


@pytest.mark.parametrize(
    "mindie, cann, severity, title",
    [
        ("2.2.RC1", "8.2.RC1", "error", "MindIE 2.2.RC1 needs CANN 8.3.RC2 or newer, but CANN 8.2.RC1 is in use"),
        (
            "2.1.RC2",
            "8.2.RC1",
            "warning",
            "MindIE 2.1.RC2 needs CANN 8.2.RC2 or newer, but CANN 8.2.RC1 is in use (same 8.2 release line)",
        ),
        ("3.0.0", "8.3.RC2", "error", "MindIE 3.0.0 needs CANN 8.5.0 or newer, but CANN 8.3.RC2 is in use"),
        ("3.1.0", "8.5.1", "error", "MindIE 3.1.0 needs CANN 9.0.0 or newer, but CANN 8.5.1 is in use"),
        ("1.0.RC2", "7.0.0", "error", "MindIE 1.0.RC2 needs CANN 8.0.RC2 or newer, but CANN 7.0.0 is in use"),
    ],
)
def test_mindie_on_an_older_cann_names_the_cann_its_release_documents(
    tmp_path: Path, mindie: str, cann: str, severity: str, title: str
) -> None:
    (f,) = _mindie_findings(_stack(tmp_path, mindie, cann, "2.1.0", "2.1.0.post17"))
    assert (f["code"], f["severity"], f["title"]) == ("CANN012", severity, title)


def test_mindie_2_3_0_on_torch_2_1_0_names_the_7_2_0_build(tmp_path: Path) -> None:
    # the installation guide pairs torch 2.1.0 with Ascend Extension 7.2.0 (2.1.0.post17),
    # torch 2.6.0 with 7.3.0; a 7.1.0 build for torch 2.1.0 is not it
    (f,) = _mindie_findings(_stack(tmp_path, "2.3.0", "8.5.0", "2.1.0", "2.1.0.post13"))
    assert (f["code"], f["severity"]) == ("PKG004", "error")
    assert f["title"] == "MindIE 2.3.0 needs torch_npu 2.1.0.post17, but torch_npu 2.1.0.post13 is installed"
    assert any("(Ascend Extension for PyTorch 7.2.0)" in e for e in f["evidence"]), f["evidence"]
    assert any("torch-npu==2.1.0.post17" in line for line in f["fix"]), f["fix"]


def test_mindie_2_3_0_accepts_the_build_its_own_image_recipe_names(tmp_path: Path) -> None:
    # the 2.3.0 service guide builds its image with torch_npu 2.1.0.post10 beside CANN 8.5.0: the
    # MindIE table does not call it wrong (the matrix judges that build against the CANN)
    assert _mindie_findings(_stack(tmp_path, "2.3.0", "8.5.0", "2.1.0", "2.1.0.post10")) == []


def test_mindie_3_0_0_on_torch_2_9_0_names_the_7_3_0_build(tmp_path: Path) -> None:
    (f,) = _mindie_findings(_stack(tmp_path, "3.0.0", "8.5.1", "2.9.0", "2.9.0rc1"))
    assert (f["code"], f["title"]) == (
        "PKG004",
        "MindIE 3.0.0 needs torch_npu 2.9.0, but torch_npu 2.9.0rc1 is installed",
    )


def test_mindie_beside_a_torch_its_packages_are_not_built_for_is_a_warning(tmp_path: Path) -> None:
    # MindIE 2.3.0's .run packages are built for torch 2.1.0 (abi0) and 2.6.0 (abi1); torch 2.7.1
    # with its own 7.3.0 build is not documented either way
    (f,) = _mindie_findings(_stack(tmp_path, "2.3.0", "8.5.0", "2.7.1", "2.7.1.post2"))
    assert (f["code"], f["severity"]) == ("PKG004", "warning")
    assert f["title"] == "MindIE 2.3.0 is made for torch 2.1.0, 2.6.0, but torch 2.7.1 is installed"
    assert any("torch==2.6.0" in line and "torch-npu==2.6.0.post5" in line for line in f["fix"]), f["fix"]


def test_mindie_1_0_rc2_beside_a_torch_it_does_not_support_names_the_torch_it_does(tmp_path: Path) -> None:
    # its install guide: 'only 1.11.0 and 2.1.0 are supported'; no extension line is named, so the
    # torch_npu build is left to the matrix (`npudoctor plan`)
    (f,) = _mindie_findings(_stack(tmp_path, "1.0.RC2", "8.0.RC2", "2.3.1", "2.3.1"))
    assert (f["code"], f["severity"]) == ("PKG004", "warning")
    assert f["title"] == "MindIE 1.0.RC2 is made for torch 1.11.0, 2.1.0, but torch 2.3.1 is installed"
    assert any("torch==2.1.0" in line for line in f["fix"]), f["fix"]
    assert any("npudoctor plan" in line for line in f["fix"]), f["fix"]


def test_a_mindie_newer_than_the_table_is_a_warning_naming_the_data_date(tmp_path: Path) -> None:
    proc = npudoctor_inprocess(
        "check", "--root", str(_stack(tmp_path, "3.3.0", "9.2.0", "2.10.0", "2.10.0.post7")), "--json"
    )
    (f,) = [f for f in json.loads(proc.stdout)["findings"] if f["code"] == "MTX003"]
    assert f["severity"] == "warning"
    assert f["title"] == (
        "MindIE 3.3.0 is newer than the built-in MindIE table (data of 2026-12-06): "
        "the torch, torch_npu and CANN it needs are not checked"
    )
    assert any("mindie/latest/version.info" in e for e in f["evidence"]), f["evidence"]


@pytest.mark.parametrize("mindie", ["3.1.0", "2.0.RC1"])
def test_a_mindie_the_table_covers_or_predates_gives_no_data_warning(tmp_path: Path, mindie: str) -> None:
    # 2.0.RC1 has no row but is older than the newest one: unknown, yet not "newer than the data"
    proc = npudoctor_inprocess(
        "check", "--root", str(_stack(tmp_path, mindie, "9.2.0", "2.10.0", "2.10.0.post7")), "--json"
    )
    assert "MTX003" not in [f["code"] for f in json.loads(proc.stdout)["findings"]]


@pytest.mark.parametrize(
    "version, status",
    [("2.1.RC1", "not-stated"), ("2.3.0", "not-stated"), ("3.0.0", "not-stated"), ("3.1.0", "supported")],
)
def test_mindie_on_the_950_family_follows_the_3_1_0_notes(version: str, status: str) -> None:
    # the version the rule sees is version.info's release part (2.1.RC1 -> PEP 440 2.1rc1)
    from npudoctor.knowledge import chip_support

    row = chip_support.support_for("mindie", "950", version)
    assert row is not None and row.status == status
    assert chip_support.first_supporting("mindie", "950").first_version == "3.1.0"  # type: ignore[union-attr]
