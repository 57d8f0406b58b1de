"""The Typer-free fast path (issue 18): ``--version``, ``--help``, ``explain``, ``devices``
and ``check`` answer exactly as the Typer app does -- the same output, errors and exit
status -- without importing Typer."""

from __future__ import annotations

import inspect
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest
import tomllib
from scenario_runner import environment, prepare

from npudoctor.cli import run
from npudoctor.cli.request import Environment

REPO = Path(__file__).resolve().parent.parent
SCENARIOS = REPO / "tests" / "scenarios"

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


# --- devices and check: parsed with the generated option table, run by the same function ---

#: Words standing for paths made by the fixture (see :func:`machine`).
ROOT, ENV_FILE, SNAPSHOT, MATRIX, BAD_MATRIX, VENV = "@ROOT", "@ENVFILE", "@SNAP", "@MATRIX", "@BADMATRIX", "@VENV"

#: (argv after the command word, whether the fast path takes it).  Every option of both
#: commands, combinations, and lines the fast path must leave to Typer.
DEVICES_CASES: List[Tuple[List[str], bool]] = [
    (["--root", ROOT], True),
    (["--root", ROOT, "--json"], True),
    (["--json", "--root", ROOT, "--no-commands"], True),
    (["--root=" + ROOT, "--no-commands"], True),
    (["--root", ROOT, "--env-file", ENV_FILE], True),
    (["--root", ROOT, "--env-file=" + ENV_FILE, "--json"], True),
    (["--root", ROOT, "--env-file", "/nonexistent/workload.env"], True),
    (["--root", ROOT, "--user", "root"], True),
    (["--root", ROOT, "--user", "0", "--json"], True),
    (["--root", ROOT, "--user", "nosuchuser"], True),
    (["--root", ROOT, "--python", VENV], True),
    (["--root", ROOT, "--python", "/nonexistent/python"], True),
    (["--root", ROOT, "--matrix", MATRIX], True),
    (["--root", ROOT, "--matrix", BAD_MATRIX], True),
    (["--root", ROOT, "--deadline", "5"], True),
    (["--root", ROOT, "--deadline=2.5", "--json"], True),
    (["--root", ROOT, "--deadline", "0"], True),
    (["--root", ROOT, "--deadline", " 7 "], True),
    (["--from", SNAPSHOT], True),
    (["--from", SNAPSHOT, "--json"], True),
    (["--from", SNAPSHOT, "--root", ROOT], True),
    (["--from", SNAPSHOT, "--no-commands"], True),
    (["--from", "/nonexistent/snapshot.json"], True),
    (["--root", "/nonexistent/root"], True),
    (["--root", ROOT, "--color"], True),
    (["--no-color", "--root", ROOT], True),
    (["--root", ROOT, "--deadline", "abc"], False),
    (["--root", ROOT, "--deadline", "-1"], False),
    (["--root", ROOT, "--deadline"], False),
    (["--root"], False),
    (["--root", "--json"], False),
    (["--root", ROOT, "--json", "--json"], False),
    (["--root", ROOT, "--root", ROOT], False),
    (["--root", ROOT, "--json=1"], False),
    (["--root", ROOT, "--bogus"], False),
    (["--root", ROOT, "-x"], False),
    (["--root", ROOT, "extra"], False),
    (["--root", ROOT, "--"], False),
    (["--root", ROOT, "--", "extra"], False),
    (["--help"], False),
    (["--root", ROOT, "-h"], False),
    (["--roo", ROOT], False),
]

CHECK_CASES: List[Tuple[List[str], bool]] = [
    (["--root", ROOT], True),
    (["--root", ROOT, "--json"], True),
    (["--root", ROOT, "--markdown"], True),
    (["--root", ROOT, "--json", "--markdown"], True),
    (["--root", ROOT, "--format", "text"], True),
    (["--root", ROOT, "--format", "json"], True),
    (["--root", ROOT, "--format=markdown"], True),
    (["--root", ROOT, "--format", "prometheus"], True),
    (["--root", ROOT, "--format", "bogus"], True),
    (["--root", ROOT, "--format", "json", "--json"], True),
    (["--root", ROOT, "-v"], True),
    (["--verbose", "--root", ROOT, "--strict"], True),
    (["--root", ROOT, "--strict", "--json"], True),
    (["--root", ROOT, "--ignore", "DEV003"], True),
    (["--root", ROOT, "--ignore", "DEV003", "--ignore=numpy-too-new", "--json"], True),
    (["--root", ROOT, "--ignore", "NOPE999"], True),
    (["--root", ROOT, "--no-commands"], True),
    (["--root", ROOT, "--matrix", MATRIX, "-v"], True),
    (["--root", ROOT, "--matrix", BAD_MATRIX], True),
    (["--root", ROOT, "--deep", "--deep-timeout", "5"], True),
    (["--root", ROOT, "--deep", "--json"], True),
    (["--root", ROOT, "--probe-master"], True),
    (["--root", ROOT, "--deadline", "4", "--deep-timeout=1.5"], True),
    (["--root", ROOT, "--deadline", "0"], True),
    (["--root", ROOT, "--env-file", ENV_FILE], True),
    (["--root", ROOT, "--user", "root", "--json"], True),
    (["--root", ROOT, "--user", "nosuchuser"], True),
    (["--root", ROOT, "--python", VENV, "--json"], True),
    (["--from", SNAPSHOT], True),
    (["--from", SNAPSHOT, "--markdown"], True),
    (["--from", SNAPSHOT, "--user", "root"], True),
    (["--root", ROOT, "--color", "-v"], True),
    (["--root", ROOT, "-v", "-v"], False),
    (["--root", ROOT, "-vv"], False),
    (["--root", ROOT, "--verbose=1"], False),
    (["--root", ROOT, "--format"], False),
    (["--root", ROOT, "--ignore"], False),
    (["--root", ROOT, "--deep-timeout", "soon"], False),
    (["--root", ROOT, "--strict", "--strict"], False),
    (["--root", ROOT, "--unknown-option"], False),
    (["--root", ROOT, "PKG001"], False),
    (["--help"], False),
    (["-h", "--root", ROOT], False),
]


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Any]:
    """The 8 x 910B3 container of tests/scenarios/health-910b3-8npu-healthy (its npu-smi
    prints the real capture), with a venv, an env file, a snapshot of it (written by
    ``collect``), a copy of the bundled matrix (a directory) and a matrix that is not TOML."""
    work = tmp_path_factory.mktemp("fastcli")
    scenario = prepare(SCENARIOS / "health-910b3-8npu-healthy", work)
    env = environment(scenario, tomllib.loads((scenario / "scenario.toml").read_text(encoding="utf-8")))
    env["NPUDOCTOR_CONFIG"] = str(work / "no-user-config.toml")
    root = scenario / "root"
    venv = root / "opt" / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    (venv / "lib" / "python3.10" / "site-packages").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.10.12\n")
    (work / "workload.env").write_text("ASCEND_RT_VISIBLE_DEVICES=9\n")
    from npudoctor.knowledge.matrix.load import bundled_dir

    matrix = work / "matrix"
    matrix.mkdir()
    for name in sorted(os.listdir(bundled_dir())):
        (matrix / name).write_bytes((Path(bundled_dir()) / name).read_bytes())
    (work / "bad-matrix.toml").write_text("this is [not toml\n")
    snapshot = work / "snap.json"
    collected = _both(["collect", "-o", str(snapshot), "--root", str(root)], env, work, fast_only=True)
    assert collected[0] == 0, collected
    words = {
        ROOT: str(root),
        ENV_FILE: str(work / "workload.env"),
        SNAPSHOT: str(snapshot),
        MATRIX: str(matrix),
        BAD_MATRIX: str(work / "bad-matrix.toml"),
        VENV: "/opt/venv",
    }
    return {"env": env, "words": words, "cwd": work}


#: What differs between two runs of one command line: timings and the free space of a disk.
VOLATILE = re.compile(r'("(?:duration|free_bytes|elapsed|created)": )[^,\n]+')


def _both(argv: List[str], environ: Dict[str, str], cwd: Path, *, fast_only: bool = False, **kw: Any) -> Any:
    """``(status, stdout, stderr)`` of ``argv`` on the fast path and, unless ``fast_only``,
    on the Typer path, run in ``cwd`` with stdout a terminal or not (``tty``)."""
    results = []
    for fast in (True,) if fast_only else (True, False):
        out, err = io.StringIO(), io.StringIO()
        env = Environment(stdout=out, stderr=err, environ=dict(environ), width=100, **kw)
        before = os.getcwd()
        os.chdir(cwd)
        try:
            code = run(argv, env, fast=fast)
        finally:
            os.chdir(before)
        results.append((code, VOLATILE.sub(r"\1#", out.getvalue()), VOLATILE.sub(r"\1#", err.getvalue())))
    return results[0] if fast_only else results


def _argv(command: str, words: List[str], machine: Dict[str, Any]) -> List[str]:
    out = [command]
    for word in words:
        for key, value in machine["words"].items():
            word = word.replace(key, value)
        out.append(word)
    return out


def _fast_takes(argv: List[str]) -> bool:
    from npudoctor.cli.fast import parse_options
    from npudoctor.cli.request import take_color_flags

    words, _flag = take_color_flags(argv)
    return parse_options(words[0], words[1:]) is not None


@pytest.mark.parametrize(
    "command,words,takes",
    [("devices", w, t) for w, t in DEVICES_CASES] + [("check", w, t) for w, t in CHECK_CASES],
    ids=[f"devices {' '.join(w)}" for w, _ in DEVICES_CASES] + [f"check {' '.join(w)}" for w, _ in CHECK_CASES],
)
def test_devices_and_check_answer_as_typer_does(
    command: str, words: List[str], takes: bool, machine: Dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Output, errors and exit status are equal; and the command function receives the same
    options from the fast parser as from Typer (recorded on the way through, so that an
    option whose effect this machine does not show, e.g. ``--strict`` without warnings, is
    still proven parsed alike)."""
    import importlib

    from npudoctor.cli.fast import FAST_COMMANDS

    module_name, function = FAST_COMMANDS[command]
    module = importlib.import_module(module_name)
    typer_module = importlib.import_module(f"npudoctor.cli.commands.{command}")
    real = getattr(module, function)
    received: List[Dict[str, Any]] = []

    def recording(env: Environment, **options: Any) -> Any:
        received.append(options)
        return real(env, **options)

    monkeypatch.setattr(module, function, recording)
    monkeypatch.setattr(typer_module, function, recording)
    argv = _argv(command, words, machine)
    assert _fast_takes(argv) is takes
    fast, typer = _both(argv, machine["env"], machine["cwd"])
    assert fast == typer
    assert fast[1] or fast[2]  # every line says something
    # both runs reached the function with the same options, values and types (taken: the fast
    # parser's and Typer's; refused: Typer's twice), or neither did (a click usage error)
    assert len(received) in (0, 2)
    assert not received or repr(received[0]) == repr(received[1])


@pytest.mark.parametrize("command", ["devices", "check"])
def test_terminal_colour_and_width_are_the_same_on_both_paths(command: str, machine: Dict[str, Any]) -> None:
    argv = _argv(command, ["--root", ROOT], machine)
    fast, typer = _both(argv, dict(machine["env"], FORCE_COLOR="1"), machine["cwd"], stdout_isatty=True)
    assert fast == typer and "\x1b[" in fast[1]


def test_check_reads_the_same_config_files_on_both_paths(machine: Dict[str, Any], tmp_path: Path) -> None:
    """The project file (.npudoctor.toml in the working directory or a parent) and the user
    file (NPUDOCTOR_CONFIG): ignores applied, a bad code and an unreadable file named."""
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    (project / ".npudoctor.toml").write_text('ignore = ["DEV003", "NOPE998"]\n')
    user = tmp_path / "user.toml"
    user.write_text("ignore = [unclosed\n")
    env = dict(machine["env"], NPUDOCTOR_CONFIG=str(user))
    for words in (["--root", ROOT], ["--root", ROOT, "--json", "--ignore", "NOPE999"]):
        argv = _argv("check", words, machine)
        fast, typer = _both(argv, env, project / "sub")
        assert fast == typer
        assert "NOPE998" in fast[2] and str(user) in fast[2]


def test_option_table_names_the_parameters_of_the_command_functions() -> None:
    """The generated table's ``dest`` names are the keyword parameters of the function each
    fast command runs (the Typer command passes the same names)."""
    import importlib

    from npudoctor.cli._fastopts import COMMANDS
    from npudoctor.cli.fast import FAST_COMMANDS

    assert set(COMMANDS) == set(FAST_COMMANDS)
    for command, (module, function) in FAST_COMMANDS.items():
        params = inspect.signature(getattr(importlib.import_module(module), function)).parameters
        dests = [o["dest"] for o in COMMANDS[command]["options"]]
        assert sorted(dests) == sorted(n for n in params if n != "env"), command
        for option in COMMANDS[command]["options"]:
            assert params[option["dest"]].default == option["default"], (command, option["dest"])


@pytest.mark.parametrize(
    "argv",
    [
        ["devices", "--root", ROOT],
        ["devices", "--root", ROOT, "--json"],
        ["check", "--root", ROOT],
        ["check", "--root", ROOT, "--json", "-v"],
        ["check", "--root", ROOT, "--markdown"],
    ],
)
def test_fast_devices_and_check_do_not_import_typer(argv: List[str], machine: Dict[str, Any]) -> None:
    argv = _argv(argv[0], argv[1:], machine)
    code = (
        "import sys\n"
        "from npudoctor.entry import main\n"
        f"status = main({argv!r})\n"
        "print()\n"
        "print('MODULES', 'typer' in sys.modules, 'click' in sys.modules, 'rich' in sys.modules, status)\n"
    )
    env = dict(machine["env"], PYTHONPATH=str(REPO), COLUMNS="100")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, env=env)
    last = proc.stdout.splitlines()[-1].split()
    assert last[:3] == ["MODULES", "False", "False"], proc.stdout[-2000:] + proc.stderr
    status: Optional[int] = int(last[4])
    assert status in (0, 1), proc.stderr
    # piped, without colour, the device table is laid out without rich (npudoctor.report.devices,
    # issue 18: it was drawn by rich); every answer here is rich-free
    assert last[3] == "False", proc.stdout[-2000:]
    if "--json" in argv:
        json.loads(proc.stdout.rsplit("\n\nMODULES", 1)[0])


@pytest.mark.parametrize("columns", [None, "100", "60", "0", "-5", "abc", " 90 ", "+120"])
def test_help_columns_are_shutils(columns: Optional[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast ``--help`` decides on click's width as ``shutil.get_terminal_size`` would,
    without importing shutil."""
    import shutil

    from npudoctor.cli.fast import _help_columns

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert _help_columns() == shutil.get_terminal_size().columns


@pytest.mark.parametrize(
    "exc", [KeyboardInterrupt(), EOFError(), BrokenPipeError(32, "Broken pipe"), RuntimeError("boom")], ids=repr
)
def test_an_interrupted_fast_command_ends_as_typers_does(exc: BaseException, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C (130, silent), end of input ("Aborted!", 1), a closed pipe (1) and a bug (3 with
    the "please report" line) end alike on both paths: the command function is replaced by
    one that raises, on both."""
    import npudoctor.cli.commands.devices as typer_module
    import npudoctor.cli.devices as module

    def raising(env: Environment, **options: Any) -> Any:
        env.stdout.write("started\n")
        raise exc

    monkeypatch.setattr(module, "devices_command", raising)
    monkeypatch.setattr(typer_module, "devices_command", raising)
    environ = {"PATH": "/usr/bin:/bin"}
    fast, typer = _both(["devices", "--no-commands"], environ, Path.cwd())
    assert fast == typer
    assert fast[0] == {KeyboardInterrupt: 130, EOFError: 1, BrokenPipeError: 1, RuntimeError: 3}[type(exc)]
