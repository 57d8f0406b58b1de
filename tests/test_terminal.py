"""Terminal conventions of every command (issue 19): colour precedence, ``--color`` /
``--no-color`` anywhere, ``-h`` everywhere, narrow terminals, ignored findings counted,
config errors with file and line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from clirun import npudoctor  # noqa: E402
from scenario_runner import environment  # noqa: E402

from npudoctor.session.request import Environment, take_color_flags  # noqa: E402

SCENARIOS = Path(__file__).parent / "scenarios"
EXAMPLES = Path(__file__).parent.parent / "examples"
DEV8 = SCENARIOS / "dev-8npu-910b3-healthy"


def _env(scenario: Path, **extra: str) -> dict:
    return dict(environment(scenario, {"env": {"HOME": "/root"}}), **extra)


@pytest.mark.parametrize(
    "environ, tty, flag, expected",
    [
        ({}, True, None, True),
        ({}, False, None, False),
        ({"NO_COLOR": "1"}, True, None, False),
        ({"NO_COLOR": ""}, True, None, True),  # empty NO_COLOR does not count
        ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, True, None, False),  # NO_COLOR before FORCE_COLOR
        ({"FORCE_COLOR": "1"}, False, None, True),
        ({"CLICOLOR_FORCE": "1", "CLICOLOR": "0"}, False, None, True),  # force before CLICOLOR=0
        ({"CLICOLOR": "0"}, True, None, False),
        ({"NO_COLOR": "1"}, False, True, True),  # --color before everything
        ({"FORCE_COLOR": "1"}, True, False, False),  # --no-color before everything
    ],
)
def test_colour_precedence(environ, tty, flag, expected):
    import io

    env = Environment(stdout=io.StringIO(), stderr=io.StringIO(), environ=environ, stdout_isatty=tty, color_flag=flag)
    assert env.color() is expected


def test_colour_flags_are_taken_anywhere_but_after_double_dash_or_exec_command():
    assert take_color_flags(["check", "--no-color", "--root", "r"]) == (["check", "--root", "r"], False)
    assert take_color_flags(["--color", "devices"]) == (["devices"], True)
    assert take_color_flags(["exec", "--", "ls", "--color"]) == (["exec", "--", "ls", "--color"], None)
    assert take_color_flags(["exec", "ls", "--no-color"]) == (["exec", "ls", "--no-color"], None)


@pytest.mark.parametrize("command", ["check", "devices"])
def test_no_color_flag_beats_force_color_in_every_colouring_command(command):
    env = _env(DEV8, FORCE_COLOR="1")
    assert "\x1b[" in npudoctor(command, "--root", str(DEV8 / "root"), env=env).stdout
    assert "\x1b[" not in npudoctor(command, "--root", str(DEV8 / "root"), "--no-color", env=env).stdout
    assert "\x1b[" not in npudoctor("--no-color", command, "--root", str(DEV8 / "root"), env=env).stdout


def test_check_honours_no_color_on_a_terminal():
    result = npudoctor("check", "--root", str(DEV8 / "root"), env=_env(DEV8, NO_COLOR="1"), tty=True)
    assert "\x1b[" not in result.stdout
    assert "\x1b[" in npudoctor("check", "--root", str(DEV8 / "root"), env=_env(DEV8), tty=True).stdout


def test_devices_on_60_columns_cuts_no_cell():
    result = npudoctor("devices", "--root", str(DEV8 / "root"), env=_env(DEV8, NO_COLOR="1"), tty=True, width=60)
    assert "…" not in result.stdout
    assert "  NPU 0 chip 0: 910B3 · Health OK · Power 102.8W · Temp 55°C" in result.stdout
    assert all(len(line) <= 60 for line in result.stdout.splitlines() if " " in line.strip())


def test_piped_check_is_not_wrapped_unless_columns_is_set():
    scenario = EXAMPLES / "torch-npu-torch-mismatch"
    piped = npudoctor("check", "--root", str(scenario / "root"), env=_env(scenario)).stdout
    assert any(len(line) > 80 for line in piped.splitlines())
    narrow = npudoctor("check", "--root", str(scenario / "root"), env=_env(scenario, COLUMNS="60")).stdout
    assert all(len(line) <= 60 for line in narrow.splitlines() if not line.lstrip().startswith(("$", "`")))


def test_help_lists_health_and_h_works_for_every_command():
    top = npudoctor("--help", env={"PATH": "/usr/bin:/bin"})
    assert "  health " in top.stdout
    for command in ("check", "collect", "explain", "compare", "devices", "exec", "env", "npd", "triage", "matrix"):
        result = npudoctor(command, "-h", env={"PATH": "/usr/bin:/bin"})
        assert result.returncode == 0 and "Usage: npudoctor " in result.stdout, command
    health = npudoctor("health", "-h", env={"PATH": "/usr/bin:/bin"})
    assert health.returncode == 0 and "Usage: npudoctor health [OPTIONS]" in health.stdout


def test_ignored_findings_are_counted_and_bad_config_codes_name_file_and_line(tmp_path):
    scenario = EXAMPLES / "torch-npu-torch-mismatch"
    (tmp_path / ".npudoctor.toml").write_text('# silenced here\nignore = [\n  "PKG007",\n  "NOPE123",\n]\n')
    env = _env(scenario, NPUDOCTOR_CONFIG=str(tmp_path / "none.toml"))
    result = npudoctor("check", "--root", str(scenario / "root"), "--ignore", "DRV002", env=env, cwd=str(tmp_path))
    assert "2 finding(s) ignored (by .npudoctor.toml / --ignore): DRV002, PKG007" in result.stdout
    assert f"{tmp_path / '.npudoctor.toml'}:4: ignore 'NOPE123': no such finding code" in result.stderr
