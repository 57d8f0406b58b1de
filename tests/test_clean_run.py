"""A healthy stack says so (issue 31): "No issues found", exit 0; routine notes (a pair
declared compatible by its own packages, numpy inside the range a fix would pin) only with
-v, their jargon translated; fix lists indented alike whatever the code's length."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from clirun import npudoctor
from scenario_runner import environment, tomllib

REPO = Path(__file__).resolve().parent.parent
HEALTHY = REPO / "examples" / "healthy-910b3"


def _check(scenario: Path, *args: str) -> Any:
    spec = tomllib.loads((scenario / "scenario.toml").read_text(encoding="utf-8"))
    return npudoctor("check", "--root", str(scenario / "root"), *args, env=environment(scenario, spec), width=200)


def test_a_healthy_stack_says_no_issues_found() -> None:
    plain = _check(HEALTHY)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.rstrip().splitlines()[-1] == "No issues found. (2 routine note(s) not shown: -v shows them.)"
    assert "Findings" not in plain.stdout and "DRV002" not in plain.stdout
    verbose = _check(HEALTHY, "-v")
    assert verbose.returncode == 0
    assert "DRV002" in verbose.stdout and "PKG007" in verbose.stdout
    doc = json.loads(_check(HEALTHY, "--json").stdout)
    routine = {f["code"]: f["data"]["routine"] for f in doc["findings"]}
    assert routine == {"PKG007": True, "DRV002": True}


def test_the_inner_version_line_is_translated_to_its_release() -> None:
    doc = json.loads(_check(HEALTHY, "--json").stdout)
    title = next(f["title"] for f in doc["findings"] if f["code"] == "DRV002")
    assert title.endswith(
        "declared compatible by the toolkit's own ascend_toolkit_install.info: its compatible_version lists "
        "the driver's line (V100R001C18, the line of Ascend HDK 24.1.RC2)"
    )


def test_a_note_that_informs_a_decision_is_still_shown() -> None:
    numpy2 = REPO / "tests" / "scenarios" / "k07-numpy-2-with-cann-8.2.RC1"
    plain = _check(numpy2)
    assert plain.returncode == 1 and "PKG007" in plain.stdout
    assert "No issues found" not in plain.stdout


def test_fix_lists_are_indented_alike_whatever_the_codes_length() -> None:
    out = _check(REPO / "tests" / "scenarios" / "k01-control-matched-aarch64").stdout
    steps = out[out.index("\nFix in this order\n") :].splitlines()[3:]
    assert steps[0].startswith("  1. DRV001") and any(s.startswith("  2. CANN001") for s in steps)
    fixes = [s for s in steps if s.startswith(" ") and not s.lstrip()[:1].isdigit()]
    assert len(fixes) >= 5 and {len(s) - len(s.lstrip()) for s in fixes} == {8}


def test_check_json_lists_what_was_ignored_and_by_what(tmp_path: Path) -> None:
    import jsonschema

    project = tmp_path / "project"
    project.mkdir()
    (project / ".npudoctor.toml").write_text('ignore = ["DEV003"]\n')
    k01 = REPO / "tests" / "scenarios" / "k01-control-matched-aarch64"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "NPUDOCTOR_CONFIG": str(tmp_path / "none.toml")}
    run = npudoctor("check", "--root", str(k01 / "root"), "--json", "--ignore", "CANN001", env=env, cwd=project)
    doc = json.loads(run.stdout)
    by = {i["code"]: i["by"] for i in doc["ignored"]}
    assert by == {"DEV003": f"{project / '.npudoctor.toml'}:1", "CANN001": "--ignore"}, doc["ignored"]
    assert (
        next(i["title"] for i in doc["ignored"] if i["code"] == "DEV003") == "npu-smi is not installed or not on PATH"
    )
    assert {"DEV003", "CANN001"}.isdisjoint(f["code"] for f in doc["findings"])
    schema = json.loads((REPO / "docs" / "schema" / "check.schema.json").read_text())
    jsonschema.validate(doc, schema)


def test_a_numpy_pin_that_strands_a_numpy_2_package_is_an_error(tmp_path: Path) -> None:
    """After PKG007's own `pip install 'numpy<2,>=1.19.2'`, opencv-python-headless 4.11.0.86
    (Requires-Dist numpy>=2) is broken: the re-check says so instead of a clean bill."""
    import shutil

    src = REPO / "tests" / "scenarios" / "k07-numpy-2-with-cann-8.2.RC1"
    dst = tmp_path / "k07"
    shutil.copytree(src, dst, symlinks=True)
    site = dst / "root/usr/local/python3.10.14/lib/python3.10/site-packages"
    old = site / "numpy-2.0.2.dist-info"
    new = site / "numpy-1.26.4.dist-info"
    old.rename(new)
    meta = new / "METADATA"
    meta.write_text(meta.read_text().replace("Version: 2.0.2", "Version: 1.26.4"))
    run = _check(dst, "--json")
    doc = json.loads(run.stdout)
    f = next(f for f in doc["findings"] if f["code"] == "PKG007")
    assert f["severity"] == "error" and run.returncode == 1
    assert f["title"] == (
        "numpy 1.26.4 fits CANN 8.2.RC1 on Python 3.10 (numpy<2,>=1.19.2), "
        "but opencv_python_headless 4.11.0.86 requires numpy>=2"
    )
    assert any(e.startswith("opencv_python_headless 4.11.0.86 requires `numpy>=2") for e in f["evidence"])
