"""``.npudoctor.toml`` ignores are reported by every command that judges (issue 31), as
``check`` reports them: ``devices``, ``health``, ``npd`` and ``exec`` leave the silenced findings out,
say so in their text and list them in their JSON (``ignored``: code, title and what silenced
it).  ``triage`` does not silence: a finding only confirms or refutes a cause there.

The scenario is a container whose npu-smi cannot open the NPU (DEV002, an error); the project
file in the working directory silences DEV002."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest
from clirun import npudoctor
from scenario_runner import environment, tomllib

REPO = Path(__file__).resolve().parent.parent
BUSY = REPO / "examples" / "npu-busy-in-container"
TITLE = "npu-smi cannot open the NPU (ret -8005): the device is busy or not accessible"


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    where = tmp_path / "project"
    where.mkdir()
    (where / ".npudoctor.toml").write_text('# the busy NPU is known here\nignore = ["DEV002"]\n')
    return where


def _env(tmp_path: Path) -> Dict[str, str]:
    spec = tomllib.loads((BUSY / "scenario.toml").read_text(encoding="utf-8"))
    return dict(environment(BUSY, spec), NPUDOCTOR_CONFIG=str(tmp_path / "none.toml"))


def _process(args: List[str], env: Dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    """``npudoctor ARGS`` as the console script runs it (health and npd leave with their own
    exit; the scenario's PYTHONPATH is the judged one, so this checkout goes on sys.path)."""
    boot = f"import sys; sys.path.insert(0, {str(REPO)!r}); from npudoctor.entry import run; run()"
    return subprocess.run(
        [sys.executable, "-c", boot, *args], capture_output=True, text=True, timeout=120, env=env, cwd=str(cwd)
    )


def test_devices_leaves_the_ignored_finding_out_and_says_so(tmp_path: Path, project: Path) -> None:
    root = str(BUSY / "root")
    before = npudoctor("devices", "--root", root, env=_env(tmp_path), cwd=tmp_path)
    assert before.returncode == 1 and "DEV002" in before.stdout
    text = npudoctor("devices", "--root", root, env=_env(tmp_path), cwd=project)
    assert text.returncode == 0
    assert text.stdout.splitlines()[-1] == f"ignored: DEV002 (by {project / '.npudoctor.toml'}:2)"
    doc = json.loads(npudoctor("devices", "--root", root, "--json", env=_env(tmp_path), cwd=project).stdout)
    assert doc["ignored"] == [{"code": "DEV002", "title": TITLE, "by": f"{project / '.npudoctor.toml'}:2"}]
    assert "DEV002" not in {f["code"] for f in doc["findings"]}


def test_health_says_what_it_ignored(tmp_path: Path, project: Path) -> None:
    root = str(BUSY / "root")
    before = _process(["health", "--root", root, "--timeout", "30"], _env(tmp_path), tmp_path)
    assert before.returncode == 1 and "DEV002" in before.stdout, before.stdout + before.stderr
    text = _process(["health", "--root", root, "--timeout", "30"], _env(tmp_path), project)
    assert text.returncode == 0, text.stdout + text.stderr
    assert text.stdout.startswith("healthy") and text.stdout.rstrip().endswith(
        f"; ignored: DEV002 (by {project / '.npudoctor.toml'}:2)"
    )
    doc = json.loads(_process(["health", "--root", root, "--timeout", "30", "--json"], _env(tmp_path), project).stdout)
    assert doc["ignored"] == [{"code": "DEV002", "title": TITLE, "by": f"{project / '.npudoctor.toml'}:2"}]


def test_health_lists_a_command_line_ignore_beside_an_unhealthy_verdict(tmp_path: Path) -> None:
    args = ["health", "--root", str(BUSY / "root"), "--timeout", "30", "--ignore", "PKG007"]
    result = _process(args + ["--json"], _env(tmp_path), tmp_path)
    doc = json.loads(result.stdout)
    assert doc["status"] == "unhealthy" and [i["by"] for i in doc["ignored"]] == ["--ignore"]
    assert [i["code"] for i in doc["ignored"]] == ["PKG007"]
    text = _process(args, _env(tmp_path), tmp_path).stdout.splitlines()
    assert text[0].startswith("unhealthy: DEV002") and text[-1] == "ignored: PKG007 (by --ignore)"


def test_npd_says_what_it_ignored(tmp_path: Path, project: Path) -> None:
    args = ["npd", "--root", str(BUSY / "root"), "--json"]
    doc = json.loads(_process(args, _env(tmp_path), project).stdout)
    assert doc["ignored"] == [{"code": "DEV002", "title": TITLE, "by": f"{project / '.npudoctor.toml'}:2"}]
    assert "DEV002" not in {p["code"] for p in doc["problems"]}
    text = _process(args[:-1], _env(tmp_path), project)
    assert text.returncode == 0 and text.stdout.startswith("npudoctor: NPU stack OK (")
    assert text.stdout.rstrip().endswith("; ignored: DEV002)")


def test_exec_says_what_it_ignored_unless_quiet(tmp_path: Path, project: Path) -> None:
    args = ["exec", "--root", str(BUSY / "root"), "--", "true"]
    loud = _process(args, _env(tmp_path), project)
    assert loud.returncode == 0 and "DEV002 npu-smi" not in loud.stderr
    assert f"npudoctor: ignored: DEV002 (by {project / '.npudoctor.toml'}:2)" in loud.stderr.splitlines()
    quiet = _process(["exec", "-q", *args[1:]], _env(tmp_path), project)
    assert quiet.returncode == 0 and "ignored" not in quiet.stderr


def test_an_ignore_that_silences_nothing_is_said_by_every_command(tmp_path: Path, project: Path) -> None:
    """A typo silences nothing: ``health``, ``npd``, ``exec`` and ``devices`` say so on stderr,
    as ``check`` does, and judge as they would without it."""
    (project / ".npudoctor.toml").write_text('ignore = ["DEV002", "DEV0002"]\n')
    root = str(BUSY / "root")
    typo = "--ignore PKG9999: no such finding code (see `npudoctor explain --list`)"
    entry = f"{project / '.npudoctor.toml'}:1: ignore 'DEV0002': no such finding code (see `npudoctor explain --list`)"
    health = _process(["health", "--root", root, "--timeout", "30", "--ignore", "PKG9999"], _env(tmp_path), project)
    assert health.returncode == 0 and health.stdout.startswith("healthy"), health.stdout + health.stderr
    assert health.stderr.splitlines() == [f"npudoctor health: {typo}", f"npudoctor health: {entry}"]
    doc = json.loads(_process(["health", "--root", root, "--timeout", "30", "--json"], _env(tmp_path), project).stdout)
    assert doc["ignore_notes"] == [entry]
    npd = _process(["npd", "--root", root, "--ignore", "PKG9999"], _env(tmp_path), project)
    assert npd.returncode == 0 and npd.stdout.startswith("npudoctor: NPU stack OK (")
    assert npd.stderr.splitlines() == [f"npudoctor npd: {typo}", f"npudoctor npd: {entry}"]
    loud = _process(["exec", "--root", root, "--", "true"], _env(tmp_path), project)
    assert loud.returncode == 0 and f"npudoctor: {entry}" in loud.stderr.splitlines()
    quiet = _process(["exec", "-q", "--root", root, "--", "true"], _env(tmp_path), project)
    assert quiet.returncode == 0 and "DEV0002" not in quiet.stderr
    devices = npudoctor("devices", "--root", root, env=_env(tmp_path), cwd=project)
    assert devices.returncode == 0 and devices.stderr.splitlines() == [f"npudoctor: {entry}"]


def test_a_config_file_health_cannot_use_is_said(tmp_path: Path, project: Path) -> None:
    (project / ".npudoctor.toml").write_text('ignore = "DEV002"\n')
    result = _process(["health", "--root", str(BUSY / "root"), "--timeout", "30"], _env(tmp_path), project)
    assert result.returncode == 1 and result.stdout.startswith("unhealthy: DEV002")
    assert result.stderr.splitlines() == [
        f"npudoctor health: config {project / '.npudoctor.toml'}:1: 'ignore' must be a list of codes"
    ]
