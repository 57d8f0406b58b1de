"""The Typer-free fast path (issue 18): ``--version``, ``--help`` and ``explain`` answer
exactly as the Typer app does -- the same output, errors and exit status -- without
importing Typer."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from typing import List, Tuple

import pytest

from npudoctor.cli import run
from npudoctor.cli.request import Environment

REPO = Path(__file__).resolve().parent.parent

CASES = [
    ["--version"],
    ["--no-color", "--version"],
    ["--help"],
    ["-h"],
    ["explain", "PKG007"],
    ["explain", "pkg007"],
    ["explain", "--json", "CANN001"],
    ["explain", "PKG007", "--color"],
    ["explain", "--list"],
    ["explain", "--list", "--json"],
    ["explain", "K10"],
    ["explain", "EZ9999"],
    ["explain", "no-such-code"],
    ["explain"],
    ["explain", "--json", "--json", "PKG007"],
    ["explain", "PKG007", "--bogus"],
    ["--bogus"],
]


def _run(argv: List[str], fast: bool, columns: str) -> Tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    env = Environment(stdout=out, stderr=err, environ={"COLUMNS": columns, "PATH": "/usr/bin:/bin"}, width=int(columns))
    code = run(argv, env, fast=fast)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("columns", ["80", "132", "60"])
@pytest.mark.parametrize("argv", CASES, ids=[" ".join(c) or "(none)" for c in CASES])
def test_fast_path_answers_as_typer_does(argv: List[str], columns: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", columns)  # click reads the process's COLUMNS for its help width
    fast = _run(argv, True, columns)
    typer = _run(argv, False, columns)
    assert fast == typer
    if argv in (["--version"], ["explain", "PKG007"]):
        assert fast[0] == 0 and fast[1]


def test_root_help_text_is_generated_from_the_typer_app() -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gen_cli_help.py")], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["explain", "PKG007"], ["explain", "--list"]])
def test_fast_answers_do_not_import_typer(argv: List[str]) -> None:
    code = (
        "import sys\n"
        "from npudoctor.entry import main\n"
        f"status = main({argv!r})\n"
        "print('TYPER', 'typer' in sys.modules, 'click' in sys.modules, 'rich' in sys.modules, status)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, env={"COLUMNS": "100"}
    )
    assert proc.stdout.splitlines()[-1] == "TYPER False False False 0", proc.stdout + proc.stderr


def test_command_modules_table_matches_what_each_module_registers() -> None:
    """A run imports only its command's module (issue 18): the table that says which module
    registers which command is what the modules really register."""
    import importlib

    import typer

    from npudoctor.cli import app as app_module

    found = {}
    for name in app_module._all_modules():
        probe = typer.Typer()
        hook = getattr(importlib.import_module(f"npudoctor.cli.commands.{name}"), "register", None)
        if hook is None:
            continue
        hook(probe)
        for cmd in probe.registered_commands:
            found[cmd.name or cmd.callback.__name__.replace("_", "-")] = name  # type: ignore[union-attr]
        for group in probe.registered_groups:
            found[str(group.name)] = name
    assert found == app_module.COMMAND_MODULES


def test_help_lists_every_command_in_one_order_after_a_single_command_ran() -> None:
    first = _run(["--help"], False, "80")
    _run(["explain", "PKG007"], False, "80")  # registers the check module alone
    _run(["triage", "--help"], False, "80")
    assert _run(["--help"], False, "80") == first
    assert "  triage   " in first[1] and "  plan     " in first[1]
