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

from npudoctor.report.escape import SafeStream, quoted, visible

REPO = Path(__file__).resolve().parent.parent
HEALTHY = REPO / "tests/scenarios/health-910b3-8npu-healthy"
OSC52 = "\x1b]52;c;ZXZpbA==\x07"
CLEAR = "\x1b[2J"
#: A colour code (magenta background, no style of npudoctor's own): the stream keeps colour
#: codes, so a value that carries one must have been quoted before it reached the stream.
PAINT = "\x1b[45m"
HOSTILE = (OSC52, CLEAR, "\x9b2J", "\u202e", PAINT)
CUDA_NAMED = REPO / "tests/scenarios/tun-cuda-named-variables"
RAY_WORKER = REPO / "tests/scenarios/case46-ray-worker-empty-rt-visible-devices"


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
    table.write_text(text.replace("910B3", f"910B3{OSC52}{CLEAR}{PAINT}\u202e", 1))
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


def test_quoted_escapes_colour_codes_too() -> None:
    assert quoted(f"eth0{PAINT}x\x1b[0m") == "eth0\\u001b[45mx\\u001b[0m"
    assert quoted(f"a{OSC52}\r\x9b\u202e\n\tb") == "a\\u001b]52;c;ZXZpbA==\\u0007\\u000d\\u009b\\u202e\n\tb"
    assert quoted("910B3 · 64 GB") == "910B3 · 64 GB"


def test_npu_smi_chip_names_are_printed_escaped(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path)
    env = _env(scenario)
    root = str(scenario / "root")
    for args, tty in (
        (["devices"], False),
        (["devices", "--color"], True),
        (["check", "--verbose"], False),
        (["check", "--verbose", "--color"], True),
        (["check", "--markdown"], False),
        (["check", "--json"], False),
    ):
        result = npudoctor(*args, "--root", root, env=env, tty=tty, width=200)
        _clean(result.stdout)
        _clean(result.stderr)
    shown = npudoctor("devices", "--root", root, env=env).stdout
    assert "910B3\\u001b]52;c;ZXZpbA==\\u0007\\u001b[2J\\u001b[45m\\u202e" in shown
    report = npudoctor("check", "--root", root, env=env).stdout
    assert "910B3\\u001b]52;c;ZXZpbA==\\u0007\\u001b[2J\\u001b[45m\\u202e" in report


def test_environment_values_are_quoted_without_their_colours() -> None:
    """A variable's value quoted in a fix command or a summary is printed with its colour
    codes escaped, in the text report (plain, coloured, quiet), the Markdown report and the
    device view; npudoctor's own colours stay."""
    env = {**_env(CUDA_NAMED), "NCCL_SOCKET_IFNAME": f"eth0{PAINT}"}
    root = str(CUDA_NAMED / "root")
    for args, tty in (
        ([], False),
        (["--color"], True),
        (["-q", "--color"], True),
        (["--markdown"], False),
    ):
        out = npudoctor("check", *args, "--root", root, env=env, tty=tty, width=200).stdout
        _clean(out)
        assert "export HCCL_SOCKET_IFNAME='eth0\\u001b[45m'" in out, (args, out)
        if "--color" in args:
            assert "\x1b[2m$ \x1b[0m\x1b[1mexport HCCL_SOCKET_IFNAME='eth0\\u001b[45m'\x1b[0m" in out
    plain = npudoctor("check", "--root", root, env=env).stdout
    assert (
        "        $ export HCCL_SOCKET_IFNAME='eth0\\u001b[45m'"
        "  # the variable the NPU stack reads instead of NCCL_SOCKET_IFNAME\n"
    ) in plain
    env = {**_env(RAY_WORKER), "ASCEND_RT_VISIBLE_DEVICES": f"0{PAINT}"}
    for args, tty in (([], False), (["--color"], True)):
        out = npudoctor("devices", *args, "--root", str(RAY_WORKER / "root"), env=env, tty=tty, width=200).stdout
        _clean(out)
        assert "ASCEND_RT_VISIBLE_DEVICES=0\\u001b[45m" in out, out
        assert ("\x1b[1mVisibility: " in out) == ("--color" in args)


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
