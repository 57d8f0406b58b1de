"""Text from the judged machine or from logs cannot drive the terminal: an
npu-smi chip name, a ``--python`` reply and a quoted log line carrying OSC 52 (write the
clipboard), CSI 2J (clear the screen) or a carriage return are printed escaped, by every
command, through :class:`npudoctor.report.escape.SafeStream`."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import tomllib
from builders.shellscript import write_script
from clirun import npudoctor
from scenario_runner import environment

from npudoctor.report.escape import SafeStream, visible

REPO = Path(__file__).resolve().parent.parent
HEALTHY = REPO / "tests/scenarios/health-910b3-8npu-healthy"
OSC52 = "\x1b]52;c;ZXZpbA==\x07"
CLEAR = "\x1b[2J"
HOSTILE = (OSC52, CLEAR, "\x9b2J", "\u202e")


def _clean(text: str) -> None:
    for seq in HOSTILE:
        assert seq not in text
    assert "\r" not in text


def _scenario(tmp_path: Path) -> Path:
    scenario = tmp_path / "scenario"
    shutil.copytree(HEALTHY, scenario, symlinks=True)
    table = scenario / "bin/npu-smi-info_910B3_23.0.7_8npu_noproc.txt"
    text = table.read_text()
    assert "910B3" in text
    table.write_text(text.replace("910B3", f"910B3{OSC52}{CLEAR}\u202e", 1))
    return scenario


def _env(scenario: Path) -> dict:
    return environment(scenario, tomllib.loads((scenario / "scenario.toml").read_text()))


def test_visible_escapes_controls_and_keeps_own_colours() -> None:
    assert visible(f"a{OSC52}b") == "a\\u001b]52;c;ZXZpbA==\\u0007b"
    assert visible(f"x{CLEAR}\r\x9b") == "x\\u001b[2J\\u000d\\u009b"
    assert visible("\x1b[1;31mred\x1b[0m\n\tok") == "\x1b[1;31mred\x1b[0m\n\tok"
    assert visible("\x1b[8mhidden\x1b[0m") == "\\u001b[8mhidden\x1b[0m"
    out = io.StringIO()
    stream = SafeStream(out)  # type: ignore[arg-type]
    stream.write("\r")
    stream.write(f"line{CLEAR}\n")
    assert out.getvalue() == "\rline\\u001b[2J\n"


def test_npu_smi_chip_names_are_printed_escaped(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path)
    env = _env(scenario)
    root = str(scenario / "root")
    for args in (["devices"], ["check", "--verbose"], ["check", "--markdown"], ["check", "--json"]):
        result = npudoctor(*args, "--root", root, env=env)
        _clean(result.stdout)
        _clean(result.stderr)
    shown = npudoctor("devices", "--root", root, env=env).stdout
    assert "910B3\\u001b]52;c;ZXZpbA==" in shown


def test_health_prints_chip_names_escaped(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path)
    env = {**_env(scenario), "PYTHONPATH": str(REPO)}
    # A process: health counts its budget from the start of its process and leaves with os._exit.
    proc = subprocess.run(
        [sys.executable, "-m", "npudoctor", "health", "--root", str(scenario / "root"), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    _clean(proc.stdout)
    _clean(proc.stderr)


def test_a_python_reply_is_printed_escaped(tmp_path: Path) -> None:
    python = write_script(tmp_path / "bin", "python3", f"printf '{OSC52}{CLEAR}not a probe reply\\n'\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    result = npudoctor("check", "--python", str(python), "--verbose", env=env)
    _clean(result.stdout)
    _clean(result.stderr)


def test_triage_quotes_log_lines_escaped(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    lines = (REPO / "tests/fixtures/error_import-torch_npu_libhccl-not-found_PTA-ERR00008.txt").read_text()
    log.write_text("".join(f"{OSC52}{CLEAR}{line}\r\n" for line in lines.splitlines()))
    for args in ([], ["--json"]):
        result = npudoctor("triage", str(log), *args, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
        assert result.returncode in (0, 1), result.stderr
        _clean(result.stdout)
        _clean(result.stderr)
    assert "libhccl.so" in npudoctor("triage", str(log), env={"PATH": "/usr/bin:/bin"}).stdout
    assert os.path.exists(log)


def test_triage_quotes_coloured_log_lines_without_their_colours(tmp_path: Path) -> None:
    """A coloured log (vLLM's logger, an unclosed red, a window title, a concealed span) is
    quoted as a terminal shows it: no escape sequence of the log reaches triage's text or
    JSON, piped or not, and a line with colours is grouped with the same line without."""
    log = tmp_path / "serve.log"
    log.write_text(
        "\x1b[31mERROR\x1b[0m 05-09 08:06:34 [engine.py:448] \x1b[1mImportError: libatb.so: cannot open"
        " shared object file: No such file or directory\x1b[0m\n"
        "\x1b[31mERROR: worker 3 exited \x1b]0;title\x07\x1b[8mcode 1\n"
        "ERROR: worker 3 exited code 1\n"
    )
    for args, tty in (([], False), ([], True), (["--json"], False)):
        out = npudoctor("triage", str(log), "--no-facts", *args, tty=tty, width=200).stdout
        assert "\x1b" not in out and "\\u001b" not in out, out
    doc = json.loads(npudoctor("triage", str(log), "--no-facts", "--json").stdout)
    assert [g["sample"] for g in doc["known"]] == [
        "ERROR 05-09 08:06:34 [engine.py:448] ImportError: libatb.so: cannot open shared object file:"
        " No such file or directory"
    ]
    assert [(u["text"], u["count"]) for u in doc["unknown"]] == [("ERROR: worker 3 exited code 1", 2)]
