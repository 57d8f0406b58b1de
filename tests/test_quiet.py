"""``check -q/--quiet`` (issue 31): only the errors and warnings with their fixes -- no
headline, no summary lines, no notes, no closing line -- and the same exit code as without
it; documented in ``check --help``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, List

import pytest
from clirun import npudoctor
from scenario_runner import environment, tomllib

REPO = Path(__file__).resolve().parent.parent
HEALTHY = REPO / "examples" / "healthy-910b3"
NUMPY2 = REPO / "tests" / "scenarios" / "k07-numpy-2-with-cann-8.2.RC1"  # errors, warnings, a folded symptom
ISLANDS = REPO / "tests" / "scenarios" / "dev-pcie-islands-910b4-1"  # one warning, two notes, exit 0


def _check(scenario: Path, *args: str) -> Any:
    spec = tomllib.loads((scenario / "scenario.toml").read_text(encoding="utf-8"))
    return npudoctor("check", "--root", str(scenario / "root"), *args, env=environment(scenario, spec), width=100)


def _heads(text: str) -> List[str]:
    """The codes of the finding lines (``✗ CODE …`` / ``! CODE …`` / ``· CODE …``)."""
    return [line.split()[1] for line in text.splitlines() if line[:1] in ("✗", "!", "·")]


@pytest.mark.parametrize("scenario", [NUMPY2, ISLANDS], ids=["errors", "warning-and-notes"])
def test_quiet_prints_the_errors_and_warnings_only(scenario: Path) -> None:
    loud, quiet = _check(scenario), _check(scenario, "-q")
    doc = json.loads(_check(scenario, "--json").stdout)
    top = [f for f in doc["findings"] if "because" not in f["data"]]
    wanted = {f["code"] for f in top if f["severity"] in ("error", "warning")}
    assert quiet.returncode == loud.returncode == doc["exit_code"]
    assert set(_heads(quiet.stdout)) == wanted and len(_heads(quiet.stdout)) == len(wanted)
    assert "Summary" in loud.stdout and "Summary" not in quiet.stdout
    assert "npudoctor 0.1" not in quiet.stdout and "✓" not in quiet.stdout and "error(s)" not in quiet.stdout
    notes = {f["code"] for f in doc["findings"] if f["severity"] == "info"}
    assert not notes & set(quiet.stdout.split())


def test_quiet_folds_symptoms_and_keeps_the_fixes() -> None:
    quiet = _check(NUMPY2, "--quiet").stdout
    assert "DEV003" not in quiet  # folded under DRV001, not repeated
    assert "fix:" in quiet and "\n      $ " in quiet


def test_a_clean_run_is_silent_with_quiet() -> None:
    result = _check(HEALTHY, "-q")
    assert (result.returncode, result.stdout) == (0, "")


def test_quiet_is_documented_and_refuses_what_it_cannot_shorten() -> None:
    helptext = " ".join(npudoctor("check", "--help", width=200).stdout.split())
    assert "-q, --quiet" in helptext or "--quiet, -q" in helptext
    assert "only the errors and warnings" in helptext
    for other in (["--json"], ["--markdown"], ["--format", "prometheus"], ["-v"]):
        result = _check(ISLANDS, "-q", *other)
        assert result.returncode == 2 and "--quiet" in result.stderr and result.stdout == ""
