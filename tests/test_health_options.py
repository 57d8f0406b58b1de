"""health's options come from one table (``npudoctor.runtime.health.OPTIONS``): the usual
command lines are read without argparse (``parse_plain``), everything else by the argparse
parser made of the same table -- and both read every command line alike."""

from __future__ import annotations

import dataclasses
import random
import subprocess
import sys
from typing import Any, Dict, List, Optional

import pytest
from scenario_runner import REPO

from npudoctor.runtime import healthopts as health


def _argparse(argv: List[str]) -> Optional[Dict[str, Any]]:
    """What argparse makes of ``argv``: the values, or ``None`` when it exits (``--help``,
    a usage error)."""
    try:
        return vars(health.build_parser().parse_args(argv))
    except SystemExit:
        return None


def _same(ours: Optional[Dict[str, Any]], theirs: Optional[Dict[str, Any]]) -> bool:
    """Equal values, by their repr (``nan`` equals ``nan`` here; ``1`` does not equal ``1.0``)."""
    return repr(sorted((ours or {}).items())) == repr(sorted((theirs or {}).items())) and (ours is None) == (
        theirs is None
    )


#: Command lines as health checks, unit files and the docs write them: all read without argparse.
USUAL = [
    [],
    ["--json"],
    ["--timeout", "0.9"],
    ["--timeout=2.5", "--json"],
    ["--root", "/srv/rootfs", "--timeout", "10"],
    ["--python", "/opt/conda/envs/py310/bin/python", "--require", "8", "--fail-on", "warning"],
    ["--exec-env", "--cache-ttl", "5", "--fallback-ttl", "60", "-v"],
    ["--only", "devices", "--only", "container", "--require-checked", "devices"],
    ["--skip", "packages", "--ignore", "PKG007", "--ignore", "numpy-2-with-cann", "--no-commands"],
    ["--env-file", "/run/workload.env", "--user", "1000", "--matrix", "/etc/npudoctor/matrix.toml"],
    ["--pid", "4242", "--verbose", "--no-color"],
    ["--from", "snap.json", "--color", "--fresh"],
    ["--root", "", "--timeout", " 3 "],  # values argparse takes as they are (float() strips spaces)
    ["--root", "a", "--root", "b", "--timeout", "1", "--timeout", "2"],  # the last one wins
    ["--timeout", "nan"],  # a float; HealthOptions.problem() refuses it, as before
]

#: Command lines left to argparse (and what it does with them stays the answer).
LEFT_TO_ARGPARSE = [
    ["--help"],
    ["-h"],
    ["--tim", "3"],  # an abbreviation
    ["--timeout"],  # no value
    ["--timeout", "soon"],
    ["--pid", "12.5"],
    ["--require", "-1"],  # a value that looks like an option: argparse decides
    ["--root", "--json"],
    ["--fail-on", "info"],
    ["--json=yes"],
    ["-vv"],
    ["--", "--json"],
    ["extra"],
    ["--unknown-option"],
]


@pytest.mark.parametrize("argv", USUAL, ids=lambda a: " ".join(a) or "(none)")
def test_usual_command_lines_are_read_without_argparse_as_argparse_reads_them(argv: List[str]) -> None:
    plain = health.parse_plain(argv)
    assert plain is not None
    assert _same(plain, _argparse(argv))


@pytest.mark.parametrize("argv", LEFT_TO_ARGPARSE, ids=" ".join)
def test_other_command_lines_are_left_to_argparse(argv: List[str]) -> None:
    assert health.parse_plain(argv) is None


def test_random_command_lines_read_alike() -> None:
    """500 command lines drawn from every option string, good and bad values: wherever
    ``parse_plain`` answers, argparse answers the same."""
    flags = sorted(health._BY_FLAG) + ["--tim", "-h", "--nope", "x"]
    values = ["1", "0.5", "-3", "abc", "error", "warning", "devices", "", "--json", "2e3", "inf", "PKG007"]
    rng = random.Random(18)
    answered = 0
    for _ in range(500):
        argv: List[str] = []
        for _ in range(rng.randint(0, 6)):
            flag = rng.choice(flags)
            if rng.random() < 0.2:
                argv.append(f"{flag}={rng.choice(values)}")
            else:
                argv.append(flag)
                if rng.random() < 0.8:
                    argv.append(rng.choice(values))
        plain = health.parse_plain(argv)
        if plain is not None:
            answered += 1
            assert _same(plain, _argparse(argv)), argv
    assert answered > 50  # the comparison is not vacuous


def test_options_from_the_table_are_the_typed_options() -> None:
    options = health.options_from_values(
        health.parse_values(["--root", "/r", "--json", "--only", "devices", "--require", "8", "--pid", "7"])
    )
    assert options == health.HealthOptions(
        machine=health.MachineRequest(root="/r", json=True), only=("devices",), require=8, pid=7
    )
    assert options.problem() is None
    assert dataclasses.replace(options, exec_env=True).problem() == (
        "--pid names the workload's environment: not with --exec-env, --env-file or --from"
    )
    assert health.options_from_values(health.parse_values([])) == health.HealthOptions()


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["--timeout", "soon"], "unhealthy: bad health-check option: argument --timeout: invalid float value: 'soon'"),
        (["--fail-on", "info"], "unhealthy: bad health-check option: argument --fail-on: invalid choice: 'info'"),
        (["--tim", "0"], "unhealthy: bad health-check option: --timeout must be a number of seconds in (0, 3600]"),
    ],
)
def test_usage_errors_are_still_unhealthy_with_argparse_words(argv: List[str], line: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "npudoctor", "health", *argv],
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[0].startswith(line), proc.stdout
