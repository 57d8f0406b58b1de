"""Piped output respects COLUMNS (issue 31): devices, triage and matrix show lay out for the
width COLUMNS names (tables stack below their width); without it, piped output is not
wrapped (stable for logs and grep)."""

from __future__ import annotations

from pathlib import Path
from typing import List

import pytest
from clirun import npudoctor
from scenario_runner import environment, tomllib

REPO = Path(__file__).resolve().parent.parent
HEALTHY = REPO / "examples" / "healthy-910b3"
LOG = REPO / "tests" / "scenarios" / "case33-310b4-board-torch-npu-2.1.0rc1" / "logs" / "run.log"


def _too_wide(text: str, width: int, whole: tuple = ()) -> List[str]:
    """Lines over ``width`` that are not one unbreakable word nor a line kept whole."""
    return [
        line
        for line in text.splitlines()
        if len(line) > width and len(line.split()) > 1 and not line.lstrip().startswith(whole)
    ]


def _env(**extra: str) -> dict:
    spec = tomllib.loads((HEALTHY / "scenario.toml").read_text(encoding="utf-8"))
    return dict(environment(HEALTHY, spec), **extra)


@pytest.mark.parametrize("width", [60, 80, 120])
def test_matrix_show_fits_columns_when_piped(width: int) -> None:
    out = npudoctor("matrix", "show", env={"PATH": "/usr/bin:/bin", "COLUMNS": str(width)}).stdout
    assert _too_wide(out, width, whole=("matrix ",)) == [] and "torch_npu 2.1.0.post10:" in out
    table = npudoctor("matrix", "show", env={"PATH": "/usr/bin:/bin"}).stdout
    assert table.splitlines()[0].split()[:2] == ["torch_npu", "torch"]  # a table without COLUMNS


@pytest.mark.parametrize("width", [60, 80])
def test_devices_fit_columns_when_piped(width: int) -> None:
    out = npudoctor("devices", "--root", str(HEALTHY / "root"), env=_env(COLUMNS=str(width))).stdout
    assert "910B3" in out and _too_wide(out, width) == []
    wide = npudoctor("devices", "--root", str(HEALTHY / "root"), env=_env()).stdout
    assert _too_wide(wide, 80) != []


def test_triage_wraps_prose_to_columns_when_piped() -> None:
    env = {"PATH": "/usr/bin:/bin", "COLUMNS": "60"}
    out = npudoctor("triage", str(LOG), "--no-facts", env=env).stdout
    assert "SoC not supported" in out
    assert _too_wide(out, 60, whole=("fix: ", "RuntimeError")) == []
    plain = npudoctor("triage", str(LOG), "--no-facts", env={"PATH": "/usr/bin:/bin"}).stdout
    assert _too_wide(plain, 60, whole=("fix: ", "RuntimeError")) != []
