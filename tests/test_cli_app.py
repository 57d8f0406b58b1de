"""The Typer application: every command line but ``health``'s goes through it, and a run
registers only the module of its command."""

from __future__ import annotations

import io
import subprocess
import sys
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

    from npudoctor.digest import sha256, sha256_hex

    for raw in (b"", b"ignore = []\n", bytes(range(256)) * 300):
        assert sha256_hex(raw) == hashlib.sha256(raw).hexdigest()
        assert sha256(raw).digest() == hashlib.sha256(raw).digest()
    assert type(sha256(b"")).__module__ != "_hashlib"  # the built-in module, not OpenSSL's


def test_the_modules_that_hash_on_a_commands_path_leave_openssl_unloaded() -> None:
    code = (
        "import sys\n"
        "from npudoctor.probes import _elfcache, frameworks\n"
        "from npudoctor.runtime import healthcache\n"
        "from npudoctor.knowledge.matrix import load\n"
        "from npudoctor import redact\n"
        "assert redact.pseudonym('node-a') == redact.pseudonym('node-a')\n"
        "print(sorted(m for m in ('hashlib', '_hashlib') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


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
