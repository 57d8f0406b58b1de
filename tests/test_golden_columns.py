"""Golden text of ``check``, ``devices``, ``plan``, ``triage`` and ``matrix show`` piped at
60, 80 and 120 columns (``COLUMNS``), issue 31: prose wraps to the width, commands stay whole,
tables stack below their width.  The expected text lives in ``tests/golden/columns/``; a
change of layout is accepted by running this file with ``NPUDOCTOR_UPDATE_GOLDEN=1`` (the
files are rewritten; review the diff before committing it).

``check`` and ``devices`` replay a snapshot collected from a scenario (``--from
snapshot.json`` in its directory), so no line carries the checkout's path; ``plan`` reads a
site fixture and the recorded PyPI listing (no index is asked); ``triage`` reads a log
without facts.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, List

import pytest
from clirun import npudoctor
from scenario_runner import environment, tomllib

REPO = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).parent / "golden" / "columns"
UPDATE = bool(os.environ.get("NPUDOCTOR_UPDATE_GOLDEN"))
MISMATCH = REPO / "examples" / "torch-npu-torch-mismatch"
HEALTHY = REPO / "examples" / "healthy-910b3"  # eight chips: the chip table
BUSY = REPO / "examples" / "npu-busy-in-container"  # no chip table: the device nodes and a finding
PLAN = REPO / "tests" / "fixtures" / "plan"
LOG = REPO / "tests" / "scenarios" / "case33-310b4-board-torch-npu-2.1.0rc1" / "logs" / "run.log"
WIDTHS = [60, 80, 120]
PATH = {"PATH": "/usr/bin:/bin", "HOME": "/root"}


def _scenario_env(scenario: Path) -> Dict[str, str]:
    spec = tomllib.loads((scenario / "scenario.toml").read_text(encoding="utf-8"))
    return dict(environment(scenario, spec))


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Path]:
    out = {}
    for scenario in (MISMATCH, HEALTHY, BUSY):
        where = tmp_path_factory.mktemp(scenario.name)
        argv = ["collect", "--root", str(scenario / "root"), "--no-redact", "-o", str(where / "snapshot.json")]
        result = npudoctor(*argv, env=_scenario_env(scenario))
        assert result.returncode == 0, result.stderr
        out[scenario.name] = where
    return out


def _argv(command: str) -> List[str]:
    return {
        "check": ["check", "--from", "snapshot.json"],
        "devices": ["devices", "--from", "snapshot.json"],
        "devices-busy": ["devices", "--from", "snapshot.json"],
        "plan": ["plan", "--for", str((PLAN / "site_aarch64_py3.9_910B3_drv24.1.rc2.json").relative_to(REPO))]
        + ["--pypi-json", str((PLAN / "pypi-torch-npu.json").relative_to(REPO))],
        "triage": ["triage", str(LOG.relative_to(REPO)), "--no-facts"],
        "matrix": ["matrix", "show"],
    }[command]


def _run(command: str, width: int, snapshots: Dict[str, Path]) -> Any:
    where = {"check": MISMATCH.name, "devices": HEALTHY.name, "devices-busy": BUSY.name}
    cwd = snapshots[where[command]] if command in where else REPO
    return npudoctor(*_argv(command), env=dict(PATH, COLUMNS=str(width)), cwd=cwd)


def _prose_too_wide(text: str, width: int) -> List[str]:
    """Lines over ``width`` other than a command (``$ …``, a docker flag, backquoted) or one
    unbreakable word."""
    return [
        line
        for line in text.splitlines()
        if len(line) > width
        and len(line.split()) > 1
        and not line.lstrip().startswith(("$ ", "-v ", "--device"))
        and "`" not in line
    ]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("command", ["check", "devices", "devices-busy", "plan", "triage", "matrix"])
def test_golden_text_at_columns(snapshots: Dict[str, Path], command: str, width: int) -> None:
    result = _run(command, width, snapshots)
    assert result.returncode in (0, 1), result.stderr
    text = str(result.stdout)
    assert text and "\x1b[" not in text
    assert _prose_too_wide(text, width) == []
    golden = GOLDEN / f"{command}-{width}.txt"
    if UPDATE:
        golden.write_text(text, encoding="utf-8")
    assert golden.exists(), f"{golden} is missing: run with NPUDOCTOR_UPDATE_GOLDEN=1 to write it"
    assert text == golden.read_text(encoding="utf-8")


@pytest.mark.parametrize("command", ["devices", "matrix"])
def test_tables_stack_below_their_width(snapshots: Dict[str, Path], command: str) -> None:
    """Wide enough, the table has its header row; at 60 columns the same rows are stacked
    blocks (the matrix table needs more than 120 columns)."""
    wide, narrow = (str(_run(command, width, snapshots).stdout) for width in (200, 60))
    header = {"devices": ["NPU", "Chip"], "matrix": ["torch_npu", "torch"]}[command]
    assert any(line.split()[:2] == header for line in wide.splitlines())
    assert not any(line.split()[:2] == header for line in narrow.splitlines())
