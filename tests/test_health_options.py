"""health's command line: one argparse parser (``npudoctor.runtime.healthopts``) whose
values become the typed ``HealthOptions``; a usage problem is *unhealthy* (exit 1), never
argparse's exit 2."""

from __future__ import annotations

import subprocess
import sys
from typing import List

import pytest
from scenario_runner import REPO

from npudoctor.record import replace
from npudoctor.runtime import healthopts as health


def _typed(argv: List[str]) -> health.HealthOptions:
    return health.options_from_values(health.parse_values(argv))


def test_the_command_lines_of_health_checks_and_unit_files_read_as_written() -> None:
    assert _typed(["--timeout=2.5", "--json"]) == health.HealthOptions(
        machine=health.MachineRequest(json=True), timeout=2.5
    )
    assert _typed(["--exec-env", "--cache-ttl", "5", "--fallback-ttl", "60", "-v"]) == health.HealthOptions(
        exec_env=True, cache_ttl=5.0, fallback_ttl=60.0, verbose=True
    )
    assert _typed(
        ["--only", "devices", "--only", "container", "--require-checked", "devices", "--ignore", "PKG007"]
    ) == health.HealthOptions(only=("devices", "container"), require_checked=("devices",), ignore=("PKG007",))
    assert _typed(["--env-file", "/run/w.env", "--user", "1000", "--no-commands", "--no-color"]) == (
        health.HealthOptions(machine=health.MachineRequest(env_file="/run/w.env", user="1000", no_commands=True))
    )
    assert _typed(["--root", "a", "--root", "b", "--from", "snap.json"]).machine == health.MachineRequest(
        root="b", from_file="snap.json"
    )


def test_parsed_values_are_the_typed_options() -> None:
    options = health.options_from_values(
        health.parse_values(["--root", "/r", "--json", "--only", "devices", "--require", "8", "--pid", "7"])
    )
    assert options == health.HealthOptions(
        machine=health.MachineRequest(root="/r", json=True), only=("devices",), require=8, pid=7
    )
    assert options.problem() is None
    assert replace(options, exec_env=True).problem() == (
        "--pid names the workload's environment: not with --exec-env, --env-file or --from"
    )
    assert health.options_from_values(health.parse_values([])) == health.HealthOptions()


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["--timeout", "soon"], "unhealthy: bad health-check option: argument --timeout: invalid float value: 'soon'"),
        (["--fail-on", "info"], "unhealthy: bad health-check option: argument --fail-on: invalid choice: 'info'"),
        (["--tim", "0"], "unhealthy: bad health-check option: --timeout must be a number of seconds in (0, 3600]"),
        # nothing is reused by default any more: the option that once turned reuse off is gone
        (["--fresh"], "unhealthy: bad health-check option: unrecognized arguments: --fresh"),
    ],
)
def test_usage_errors_are_still_unhealthy_with_argparse_words(argv: List[str], line: str) -> None:
    # A process: health's own argparse entry (before Typer) and the exit status Docker sees.
    proc = subprocess.run(
        [sys.executable, "-m", "npudoctor", "health", *argv],
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[0].startswith(line), proc.stdout
