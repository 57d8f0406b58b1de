"""The Typer application: every command line but ``health``'s goes through it, and a run
registers only the module of its command."""

from __future__ import annotations

import io
from typing import List, Tuple

from npudoctor.cli import run
from npudoctor.session.request import Environment


def _run(argv: List[str], columns: str = "80") -> Tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    env = Environment(stdout=out, stderr=err, environ={"COLUMNS": columns, "PATH": "/usr/bin:/bin"}, width=int(columns))
    code = run(argv, env)
    return code, out.getvalue(), err.getvalue()


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
    first = _run(["--help"])
    _run(["explain", "PKG007"])  # registers the explain module alone
    _run(["triage", "--help"])
    assert _run(["--help"]) == first
    assert "  triage   " in first[1] and "  plan     " in first[1]


def test_builtin_sha256_is_hashlibs() -> None:
    import hashlib

    from npudoctor.tomlread import sha256_hex

    for raw in (b"", b"ignore = []\n", bytes(range(256)) * 300):
        assert sha256_hex(raw) == hashlib.sha256(raw).hexdigest()


def test_every_exit_status_is_its_own_member_with_its_own_name() -> None:
    """Two meanings that share an exit code (npd's unknown and a usage error, both 2) are two
    members: neither prints as the other."""
    from npudoctor.session.status import COMMAND_STATUSES, ExitStatus

    assert ExitStatus.NPD_UNKNOWN is not ExitStatus.USAGE
    assert (ExitStatus.NPD_UNKNOWN.name, int(ExitStatus.NPD_UNKNOWN)) == ("NPD_UNKNOWN", 2)
    assert repr(ExitStatus.NOT_WRITTEN) == "<ExitStatus.NOT_WRITTEN: 3>"
    assert [m.name for m in ExitStatus] == list(ExitStatus.__members__)  # no aliases
    assert {m.name for table in COMMAND_STATUSES.values() for m in table} == set(ExitStatus.__members__)
    assert [int(m) for m in COMMAND_STATUSES["health"]] == [0, 1]  # Docker reserves 2
    assert [int(m) for m in COMMAND_STATUSES["npd"]] == [0, 1, 2]  # node-problem-detector's contract
