"""One help layout (issue 31): ``health --help`` is laid out like every Typer command's help
(its options listed from health's own parser), ``npudoctor --help`` and the groups list each
command with its whole first sentence, and an unknown option is answered with suggestions
from the options of the command it was given to."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest
from clirun import npudoctor

from npudoctor.cli.app import first_sentence
from npudoctor.runtime.healthopts import build_parser

REPO = Path(__file__).resolve().parent.parent
ENV = {"PATH": "/usr/bin:/bin", "COLUMNS": "100"}
OPTION_ROW = re.compile(r"^  (-\w, )?--[a-z-]+")


def _listed(helptext: str) -> Dict[str, str]:
    """The commands of a group's help (``Commands:`` section) and what it says of each, on one line."""
    rows: Dict[str, str] = {}
    name = ""
    for line in helptext.split("Commands:\n", 1)[1].splitlines():
        head = re.match(r"^  (\S+)\s+(.*)$", line)
        if head:
            name = head.group(1)
            rows[name] = head.group(2)
        elif line.strip() and name:
            rows[name] += " " + line.strip()
    return rows


def test_health_help_has_the_layout_of_the_other_commands() -> None:
    # A process: the console entry dispatches health before Typer, but not health --help.
    proc = subprocess.run(
        [sys.executable, "-m", "npudoctor", "health", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(ENV, PYTHONPATH=str(REPO)),
    )
    check = npudoctor("check", "--help", env=ENV).stdout
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert text.startswith("Usage: npudoctor health [OPTIONS]\n\n  Fast container health check")
    assert check.startswith("Usage: npudoctor check [OPTIONS]\n\n  Probe the NPU")
    assert "\nOptions:\n" in text and "\nOptions:\n" in check
    assert "  -h, --help  " in text.split("\nOptions:\n")[1]
    # every option of health's parser is listed, each help a capitalised sentence
    for action in build_parser()._actions:
        for name in action.option_strings:
            assert re.search(rf"(^|[ ,]){re.escape(name)}([ ,]|$)", text, re.M), name
    rows = [line for line in text.split("\nOptions:\n")[1].splitlines() if OPTION_ROW.match(line)]
    assert "  --timeout SECONDS " in text and "  --fail-on [error|warning] " in text
    assert all(re.search(r"\s{2,}[A-Z]", row) for row in rows), rows
    assert npudoctor("health", "-h", env=ENV).stdout == text  # in-process: the same text


@pytest.mark.parametrize("group", [[], ["matrix"], ["plan"]], ids=["npudoctor", "matrix", "plan"])
def test_every_command_is_listed_with_its_whole_first_sentence(group: List[str]) -> None:
    listed = _listed(npudoctor(*group, "--help", env=ENV).stdout)
    assert listed
    for name, said in listed.items():
        full = npudoctor(*group, name, "--help", env=ENV).stdout
        description = full.split("\n\n", 1)[1].split("\n\n")[0]
        assert said == first_sentence(description), name
        assert said.endswith(".") and "..." not in said and len(said) <= 160, (name, said)


def test_first_sentence_keeps_abbreviations() -> None:
    assert first_sentence("Run it (e.g. on a 310P) now.  More.") == "Run it (e.g. on a 310P) now."
    assert first_sentence("Only one line\n\nExit codes: 0.") == "Only one line"


@pytest.mark.parametrize(
    ("argv", "suggested"),
    [
        (["check", "--jsn"], "Did you mean --json?"),
        (["check", "--qiet"], "Did you mean --quiet?"),
        (["matrix", "show", "--cnan", "8.0.0"], "Did you mean --cann?"),
        (["--versoin"], "Did you mean --version?"),
    ],
)
def test_a_misspelt_option_is_answered_from_the_commands_own_options(argv: List[str], suggested: str) -> None:
    result = npudoctor(*argv, env=ENV)
    assert result.returncode == 2 and suggested in result.stderr, result.stderr


def test_no_unrelated_suggestion_and_none_from_another_command() -> None:
    bogus = npudoctor("check", "--bogus", env=ENV)
    assert bogus.returncode == 2 and "No such option: --bogus" in bogus.stderr
    assert "Did you mean" not in bogus.stderr and "Possible options" not in bogus.stderr
    devices = npudoctor("devices", "--qiet", env=ENV)  # --quiet is check's, not devices'
    assert devices.returncode == 2 and "--quiet" not in devices.stderr


def test_health_suggests_from_its_own_options_and_stays_unhealthy() -> None:
    result = npudoctor("health", "--tmeout", "1", env=ENV)
    assert result.returncode == 1
    assert "bad health-check option: unrecognized arguments: --tmeout 1 (did you mean --timeout?)" in result.stdout


def _option_helps(command, path: List[str]):
    for param in command.params:
        text = (getattr(param, "help", None) or "").strip()
        if getattr(param, "param_type_name", "") == "option" and text:
            yield " ".join(path), param.opts[0], text
    for name, sub in (getattr(command, "commands", None) or {}).items():
        yield from _option_helps(sub, path + [name])


def test_every_option_help_ends_as_a_sentence() -> None:
    """Each option's help, in every command, ends with its full stop (npd's --pid and
    --require-checked did not)."""
    from typer.main import get_command

    from npudoctor.cli.app import prepare

    helps = list(_option_helps(get_command(prepare([])), ["npudoctor"]))
    assert len(helps) > 100
    assert [(c, o, t) for c, o, t in helps if not t.endswith((".", ")"))] == []


def test_plan_usage_shows_that_planning_takes_no_subcommand() -> None:
    result = npudoctor("plan", "--help", env=ENV)
    assert result.stdout.splitlines()[0] == "Usage: npudoctor plan [OPTIONS] [verify ARGS...]"
    npd = " ".join(npudoctor("npd", "--help", env=ENV).stdout.split())
    assert "Without --python: $NPUDOCTOR_PYTHON, else the active VIRTUAL_ENV/CONDA_PREFIX" in npd
