"""The Python-side rows of the evidence grid (tests/fixtures/grades/grid.toml, issue 13) run as
``check --root`` scenarios: torch_npu <-> CANN, torch <-> torch_npu, Python <-> wheels and numpy
<-> CANN.  Each row builds a root from the grid's real version files (the toolkit's
``ascend_toolkit_install.info`` under ``tests/fixtures/grades/files/``) plus dist-info records
of the Python packages it names, runs ``check --json`` in-process and asserts the grade (in the
finding's ``data``) and the severity the row states; "none" means no finding of that pairing.

The source of each expectation is the row's ``source`` (and ``refs``) in grid.toml."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import pytest

from npudoctor.knowledge.matrix import load_matrix
from npudoctor.knowledge.matrix.verdicts import split_build
from tests.clirun import npudoctor
from tests.test_grades_grid import GRADES_DIR, load_grid

#: The finding code that judges each pairing.
CODES = {
    "torch_npu-cann": "CANN003",
    "torch-torch_npu": "PKG001",
    "python-wheels": "PY001",
    "numpy-cann": "PKG007",
}

ROWS = [r for r in load_grid()["row"] if r["pairing"] in CODES]


def _dist(site: Path, name: str, version: str, requires: Sequence[str] = (), tag: str = "") -> None:
    d = site / f"{name}-{version}.dist-info"
    d.mkdir(parents=True)
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    meta += [f"Requires-Dist: {r}" for r in requires]
    (d / "METADATA").write_text("\n".join(meta) + "\n\n", encoding="utf-8")
    (d / "INSTALLER").write_text("pip\n", encoding="utf-8")
    if tag:
        wheel = ["Wheel-Version: 1.0", "Generator: bdist_wheel (0.43.0)", "Root-Is-Purelib: false", f"Tag: {tag}"]
        (d / "WHEEL").write_text("\n".join(wheel) + "\n", encoding="utf-8")


def _torch_for(torch_npu: str) -> Optional[str]:
    row = load_matrix().find_torch_npu(split_build(torch_npu)[0])
    return row.torch if row is not None else None


def build_root(row: Dict[str, Any], tmp: Path) -> Dict[str, str]:
    """Write the row's root under ``tmp/root``; returns the environment to run it with."""
    root = tmp / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "hostname").write_text("grid\n", encoding="utf-8")
    env = {"PATH": "/usr/bin:/bin", "HOME": "/root"}
    v = row["versions"]
    toolkit = (row.get("files") or {}).get("toolkit")
    if toolkit:
        src = GRADES_DIR / toolkit
        fields = dict(line.split("=", 1) for line in src.read_text(encoding="utf-8").splitlines() if "=" in line)
        arch_dir = Path(fields["path"])  # /usr/local/Ascend/cann-8.5.1/aarch64-linux
        dest = root / str(arch_dir).lstrip("/")
        dest.mkdir(parents=True)
        shutil.copyfile(src, dest / "ascend_toolkit_install.info")
        home = str(arch_dir.parent)
        env.update(ASCEND_TOOLKIT_HOME=home, ASCEND_HOME_PATH=home, ASCEND_OPP_PATH=f"{home}/opp")
    py = v.get("python", "3.11")
    site = root / "usr" / "local" / "lib" / f"python{py}" / "site-packages"
    site.mkdir(parents=True)
    npu = v.get("torch_npu")
    torch = v.get("torch") or (_torch_for(npu) if npu else None)
    if npu:
        base, unofficial = split_build(npu)
        pinned = _torch_for(npu)
        # official wheels pin their torch in Requires-Dist (e.g. 'torch==2.13.0.*' in 2.13.0's
        # METADATA); rc/dev/+git builds are modelled without a pin (the matrix then decides)
        requires = [f"torch=={pinned}"] if pinned and not unofficial else []
        _dist(site, "torch_npu", npu, requires)
    if torch:
        # torch's WHEEL tag tells the probe the platform (aarch64, as the grid's toolkit files)
        cp = "cp" + py.replace(".", "")
        _dist(site, "torch", torch, tag=f"{cp}-{cp}-manylinux_2_28_aarch64")
    if v.get("numpy"):
        _dist(site, "numpy", v["numpy"])
    return env


def run_row(row: Dict[str, Any], tmp: Path) -> List[Dict[str, Any]]:
    env = build_root(row, tmp)
    out = npudoctor("check", "--root", str(tmp / "root"), "--json", env=env, cwd=tmp)
    doc = json.loads(out.stdout)
    return [f for f in doc["findings"] if f["code"] == CODES[row["pairing"]]]


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_grid_row(row, tmp_path):
    found = run_row(row, tmp_path)
    if row["severity"] == "none":
        assert found == [], (row["id"], row["source"], found)
        return
    assert len(found) == 1, (row["id"], found)
    f = found[0]
    assert f["severity"] == row["severity"], (row["id"], row["source"], f)
    assert f["data"]["grade"] == row["grade"], (row["id"], row["source"], f)
    text = "\n".join([f["title"], *f["evidence"]])
    assert "evidence: " + f["data"]["source"][:40] in text or f["data"]["source"][:40] in text
    if row.get("unofficial"):
        assert f["data"]["unofficial"] is True


def test_every_python_side_pairing_is_covered():
    assert {r["pairing"] for r in ROWS} == set(CODES)
    assert len(ROWS) >= 25


def test_measured_examples_of_issue_13(tmp_path):
    """torch_npu 2.9.0 on CANN 8.5.1 (declared by the TorchNPU 26.1.0 grid, 7.3.X x 8.5.X); a
    maintenance release (8.2.RC2) and a community alpha (8.0.RC2.alpha003) of the paired CANN:
    never an error, and never a fix that reinstalls the installed torch_npu."""
    by_id = {r["id"]: r for r in ROWS}
    tc02 = run_row(by_id["tc-02"], tmp_path / "a")
    assert tc02 == []
    for rid in ("tc-07", "tc-08"):
        (found,) = run_row(by_id[rid], tmp_path / rid)
        assert found["severity"] == "info" and found["data"]["grade"] == "same-release-line"
        installed = by_id[rid]["versions"]["torch_npu"]
        assert not any(f"torch-npu=={installed}" in line for line in found["fix"]), found["fix"]
        assert "same release line" in found["title"] + "\n".join(found["evidence"])


def test_declared_source_is_named_in_words():
    m = load_matrix()
    v = m.cann_verdict("2.9.0", "8.5.1")
    assert v.grade.value == "declared-compatible"
    assert "declared compatible (8.5.X) by the TorchNPU 7.3 release notes" in v.source
    u = m.cann_verdict("2.6.0.post3", "8.5.0")
    assert u.describe().startswith("not documented either way (CANN 8.5.0 is 1 CANN line newer than 8.3.RC1")
    assert u.recommend.startswith("2.6.0.post5")


# ------------------------------------------------------------------ the helpers under the verdicts
def test_split_build_maps_rc_dev_and_local_builds_to_their_base():
    assert split_build("2.9.0.post1+git4c901a4") == ("2.9.0.post1", True)
    assert split_build("2.7.1.dev20250724") == ("2.7.1", True)
    assert split_build("2.5.1.post1.dev20250528") == ("2.5.1.post1", True)
    assert split_build("2.10.0rc1") == ("2.10.0", True)
    assert split_build("2.9.0.post2") == ("2.9.0.post2", False)


def test_line_key_and_lines_beyond():
    from npudoctor.knowledge.matrix.verdicts import line_key, lines_beyond

    assert [line_key(e) for e in ("7.3.1", "7.2.0.1", "26.0.1", "6.0.rc2.1", "6.0.0")] == [
        "7.3",
        "7.2",
        "26.0",
        "6.0.rc2",
        "6.0",
    ]
    known = {(8, 0), (8, 1), (8, 2), (8, 3), (8, 5), (9, 0), (9, 1)}
    assert lines_beyond((8, 3), (9, 0), known) == 2  # 8.5, 9.0: undocumented (grid tc-13)
    assert lines_beyond((8, 3), (9, 1), known) == 3  # 8.5, 9.0, 9.1: far outside (grid tc-14)
    assert lines_beyond((9, 1), (9, 3), known) == 1  # an unknown newer line counts itself


def test_tag_built_patch_release_inherits_its_line():
    """2.7.1.post1 has no mapping-table row: tag v7.2.0.1-pytorch2.7.1 makes it a 7.2.0-line
    build, so the line's pairing (8.3.RC1) is "same release line" for it, and a CANN older
    than the line's declared window (8.0.RC1 < 8.0.RC2) is documented incompatible."""
    m = load_matrix()
    v = m.cann_verdict("2.7.1.post1", "8.3.RC1")
    assert v.grade.value == "same-release-line" and "tag v7.2.0.1-pytorch2.7.1" in v.source
    old = m.cann_verdict("2.7.1.post1", "8.0.RC1")
    assert old.grade.value == "documented-incompatible" and old.newer is False
    assert old.window.startswith("CANN 8.0.RC2-8.3.RC1 for torch_npu 2.7.1.post1")


def test_unknown_versions_are_never_an_error():
    m = load_matrix()
    assert m.cann_verdict("9.9.9", "8.5.0").grade.value == "undocumented"
    assert m.cann_verdict("2.9.0", "8.0.T63").grade.value == "undocumented"
    # a TorchNPU 26.2.0 package: paired with 9.2.0, declared compatible with 8.5.X-9.2.X; 8.3.RC1 is
    # outside the declared set and not a documented failure either
    assert m.cann_verdict("2.14.0", "9.2.0").grade.value == "paired"
    assert m.cann_verdict("2.14.0", "9.1.0").grade.value == "declared-compatible"
    assert m.cann_verdict("2.14.0", "8.3.RC1").grade.value != "paired"


def test_the_planner_never_proposes_the_installed_build():
    """2.5.1.post1 is the build for CANN 8.2.RC1 with torch 2.5.1: asked to keep that CANN
    with 2.5.1.post1 installed, the planner names another build or none, never the same."""
    from npudoctor.plan.fit import keep_cann_build, mismatch_plan

    m = load_matrix()
    pick = keep_cann_build(m, "8.2.RC1", "2.5.1", "3.10", "aarch64", installed="2.5.1.post1")
    assert pick is None or pick[0].torch_npu != "2.5.1.post1"
    assert mismatch_plan(m, "2.5.1.post1", "8.2.RC2", "2.5.1", "3.10", "aarch64") is None  # same line
    plan = mismatch_plan(m, "2.7.1", "9.1.0", "2.7.1", "3.10", "aarch64")
    assert plan is not None and plan.keep_cann is not None and plan.keep_cann.torch_npu == "2.7.1.post8"


def test_python_and_numpy_verdicts_name_their_source():
    m = load_matrix()
    ok = m.python_verdict("2.9.0", "3.12", "aarch64")
    assert ok.grade.value == "paired" and ok.source == "PyPI torch-npu 2.9.0 has a cp312 wheel for aarch64"
    bad = m.python_verdict("2.9.0", "3.9", "aarch64")
    assert bad.grade.value == "documented-incompatible" and bad.window.startswith(
        "Python 3.10-3.12 for torch_npu 2.9.0"
    )
    n = m.numpy_verdict("1.26.4", "8.0.0", "3.10")
    assert n is not None and n.grade.value == "undocumented" and "1.24" in n.source
    n2 = m.numpy_verdict("2.2.6", "8.5.0", "3.11")
    assert n2 is not None and n2.grade.value == "documented-incompatible" and n2.window.startswith("numpy>=1.19.2,<2")
