"""`npudoctor exec` (the container entrypoint) and `npudoctor env`, through the CLI, on the
health-* scenarios whose toolkit carries the real CANN 8.0.0 set_env.sh
(tests/fixtures/set_env_toolkit_8.0.0.sh.txt).  ``env`` and the help run in-process;
``exec`` runs as a process, which it replaces with the workload."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

import clirun
import pytest
from builders.build_cann_scenarios import nnal as add_nnal
from scenario_runner import REPO, environment, prepare

try:
    import tomllib
except ImportError:  # pragma: no cover
    import tomli as tomllib  # type: ignore[no-redef]

SCEN = REPO / "tests" / "scenarios"
SET_ENV = "usr/local/Ascend/ascend-toolkit/set_env.sh"
DUMP_ENV = "import json, os; print(json.dumps(dict(os.environ)))"


def _env(scenario: Path, extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    spec = tomllib.loads((scenario / "scenario.toml").read_text(encoding="utf-8"))
    env = environment(scenario, spec)
    env.update(extra or {})
    return env


def npudoctor(scenario: Path, *args: str, extra: Optional[Dict[str, str]] = None, **kw) -> subprocess.CompletedProcess:
    """``python -m npudoctor ARGS`` as a process (for ``exec``: it replaces its process)."""
    argv = [sys.executable, "-m", "npudoctor", *args]
    return subprocess.run(argv, env=_env(scenario, extra), capture_output=True, text=True, timeout=120, **kw)


def env_command(scenario: Path, *args: str, extra: Optional[Dict[str, str]] = None) -> clirun.Result:
    """``npudoctor env ARGS`` in-process in the scenario's environment."""
    return clirun.npudoctor("env", *args, env=_env(scenario, extra))


def sourced_for_real(scenario: Path) -> Dict[str, str]:
    """The environment after really sourcing the scenario's set_env.sh in sh (its paths are
    absolute, so sourcing it reads nothing; `$(arch)` is replaced by the toolkit's arch
    because the scenario is an aarch64 container)."""
    script = (scenario / "root" / SET_ENV).read_text().replace("$(arch)", "aarch64")
    proc = subprocess.run(
        ["sh", "-c", script + f'\n"{sys.executable}" -c "$1"', "sh", DUMP_ENV],
        env=_env(scenario),
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return json.loads(proc.stdout)


def _entries(value: str) -> List[str]:
    return [e for e in value.split(":") if e]


@pytest.fixture
def unsourced(tmp_path) -> Path:
    return prepare(SCEN / "health-env-not-sourced", tmp_path)


def test_env_lines_equal_really_sourcing_set_env_sh(unsourced):
    real = sourced_for_real(unsourced)
    lines = env_command(unsourced, "--root", str(unsourced / "root"))
    assert lines.returncode == 0, lines.stderr
    proc = subprocess.run(
        ["sh", "-c", f'eval "$1" && "{sys.executable}" -c "$2"', "sh", lines.stdout, DUMP_ENV],
        env=_env(unsourced),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    ours = json.loads(proc.stdout)
    for name in ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH", "ASCEND_OPP_PATH", "ASCEND_AICPU_PATH", "TOOLCHAIN_HOME"):
        assert ours[name] == real[name], name
    assert ours["ASCEND_TOOLKIT_HOME"] == "/usr/local/Ascend/ascend-toolkit/latest"
    for name in ("LD_LIBRARY_PATH", "PYTHONPATH", "PATH"):
        # The real script leaves an empty entry (= the current directory) where the
        # variable was unset; npudoctor drops it, the rest is identical and in order.
        assert ours[name] == ":".join(_entries(real[name])), name
    assert real["LD_LIBRARY_PATH"].endswith(":") and not ours["LD_LIBRARY_PATH"].endswith(":")
    assert "# npudoctor: CANN 8.0.0 at /usr/local/Ascend/ascend-toolkit/latest" in lines.stderr


def test_env_quotes_values_for_the_shell(unsourced):
    weird = "/opt/it's here/$HOME;rm -rf x"
    proc = env_command(unsourced, "--root", str(unsourced / "root"), extra={"PYTHONPATH": weird})
    assert proc.returncode == 0
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("export PYTHONPATH="))
    out = subprocess.run(["sh", "-c", line + '\nprintf %s "$PYTHONPATH"'], capture_output=True, text=True, timeout=10)
    assert out.stdout.endswith(":" + weird)


def test_env_json_and_already_sourced(tmp_path):
    healthy = prepare(SCEN / "health-910b3-8npu-healthy", tmp_path)
    proc = env_command(healthy, "--root", str(healthy / "root"), "--json")
    assert proc.returncode == 0
    doc = json.loads(proc.stdout)
    assert doc["method"] == "kept" and doc["set"] == {} and doc["toolkit"]["version"] == "8.0.0"
    assert env_command(healthy, "--root", str(healthy / "root")).stdout == ""


def test_env_without_toolkit_and_with_a_bad_root(tmp_path):
    (tmp_path / "empty").mkdir()
    proc = env_command(SCEN / "health-env-not-sourced", "--root", str(tmp_path / "empty"))
    assert proc.returncode == 1 and proc.stdout == "" and "no CANN toolkit found" in proc.stderr
    proc = env_command(SCEN / "health-env-not-sourced", "--root", str(tmp_path / "nope"))
    assert proc.returncode == 2 and "not a directory" in proc.stderr


def test_env_adds_nnal(unsourced):
    add_nnal(unsourced / "root", "8.0.T63", "nnal_atb_version.info_8.0.T63_indented.txt", abi_dirs=("cxx_abi_1",))
    doc = json.loads(env_command(unsourced, "--root", str(unsourced / "root"), "--json").stdout)
    home = "/usr/local/Ascend/nnal/atb/latest/atb/cxx_abi_1"
    assert doc["set"]["ATB_HOME_PATH"] == home
    assert doc["set"]["LD_LIBRARY_PATH"].startswith(f"{home}/lib:")
    assert doc["nnal"]["version"] == "8.0.T63"


def test_exec_child_sees_the_toolkit_environment_and_keeps_the_pid(unsourced):
    real = sourced_for_real(unsourced)
    code = "import json, os; d = dict(os.environ); d['PID'] = os.getpid(); print(json.dumps(d))"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "npudoctor",
            "exec",
            "--root",
            str(unsourced / "root"),
            "--",
            sys.executable,
            "-c",
            code,
        ],
        env=_env(unsourced),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    child = json.loads(out)
    assert child["PID"] == proc.pid  # exec replaced npudoctor: same process
    for name in ("ASCEND_TOOLKIT_HOME", "ASCEND_OPP_PATH", "TOOLCHAIN_HOME"):
        assert child[name] == real[name]
    assert child["LD_LIBRARY_PATH"] == ":".join(_entries(real["LD_LIBRARY_PATH"]))
    assert "npudoctor: CANN 8.0.0 at /usr/local/Ascend/ascend-toolkit/latest: environment applied" in err
    assert "ENV001" not in err  # the checks ran with the applied environment


def test_exec_gives_the_workload_the_locale_npudoctor_was_started_with(unsourced):
    # Python sets LC_CTYPE=C.UTF-8 in its own environment when it starts in the C locale
    # (PEP 538); the workload gets the environment npudoctor was started with
    args = ["exec", "--no-commands", "--root", str(unsourced / "root"), "--", "sh", "-c"]
    code = 'printf "%s|%s" "${LC_CTYPE-unset}" "${LC_ALL-unset}"'
    assert npudoctor(unsourced, *args, code).stdout == "unset|unset"
    assert npudoctor(unsourced, *args, code, extra={"LC_CTYPE": "C"}).stdout == "C|unset"
    assert npudoctor(unsourced, *args, code, extra={"LC_CTYPE": "C.UTF-8"}).stdout == "C.UTF-8|unset"


def test_exec_forwards_sigterm_and_passes_the_exit_status(unsourced, tmp_path):
    ready, got = tmp_path / "ready", tmp_path / "got-sigterm"
    handler = (
        "import os, signal, sys, time\n"
        "def on_term(signum, frame):\n"
        f"    open({str(got)!r}, 'w').write(str(signum))\n"
        "    sys.exit(7)\n"
        "signal.signal(signal.SIGTERM, on_term)\n"
        f"open({str(ready)!r}, 'w').write(str(os.getpid()))\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "npudoctor", "exec", "--quiet", "--root", str(unsourced / "root")]
        + ["--", sys.executable, "-c", handler],
        env=_env(unsourced),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)
        assert ready.exists(), proc.communicate(timeout=5)
        time.sleep(0.05)
        assert int(ready.read_text()) == proc.pid
        os.kill(proc.pid, signal.SIGTERM)
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 7
    assert got.read_text() == str(int(signal.SIGTERM))


@pytest.mark.parametrize(("command", "status"), [(["sh", "-c", "exit 42"], 42), (["sh", "-c", "kill -KILL $$"], -9)])
def test_exec_status_is_the_commands(unsourced, command, status):
    proc = npudoctor(unsourced, "exec", "-q", "--root", str(unsourced / "root"), "--", *command)
    assert proc.returncode == status


def test_exec_not_found_not_executable_and_no_command(unsourced, tmp_path):
    root = str(unsourced / "root")
    proc = npudoctor(unsourced, "exec", "-q", "--root", root, "--", "no-such-command-npd")
    assert proc.returncode == 127 and "no-such-command-npd: command not found" in proc.stderr
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    proc = npudoctor(unsourced, "exec", "-q", "--root", root, "--", str(script))
    assert proc.returncode == 126 and "not executable" in proc.stderr
    assert npudoctor(unsourced, "exec", "--root", root).returncode == 125
    assert npudoctor(unsourced, "exec", "--root", str(tmp_path / "nope"), "--", "true").returncode == 125


def test_exec_strict_refuses_on_errors_and_runs_otherwise(tmp_path):
    critical = prepare(SCEN / "health-chip-critical", tmp_path)
    marker = tmp_path / "ran"
    cmd = ["--", "sh", "-c", f"touch {marker}"]
    proc = npudoctor(critical, "exec", "--strict", "--root", str(critical / "root"), *cmd)
    assert proc.returncode == 125
    assert "npudoctor: error DEV010 NPU 3 health is Critical" in proc.stderr.splitlines()
    assert "refusing to start sh: 1 error(s) found (--strict)" in proc.stderr
    assert not marker.exists()
    proc = npudoctor(critical, "exec", "--root", str(critical / "root"), *cmd)
    assert proc.returncode == 0 and marker.exists()
    assert "npudoctor: error DEV010 NPU 3 health is Critical" in proc.stderr.splitlines()


def test_exec_quiet_prints_only_errors(tmp_path):
    alarm = prepare(SCEN / "health-chip-alarm", tmp_path)
    loud = npudoctor(alarm, "exec", "--root", str(alarm / "root"), "--", "true")
    assert "npudoctor: warning DEV010 NPU 5 health is Alarm" in loud.stderr.splitlines()
    quiet = npudoctor(alarm, "exec", "--quiet", "--root", str(alarm / "root"), "--", "true")
    assert quiet.returncode == 0 and quiet.stderr == ""


def test_exec_strict_refuses_when_the_checks_blow_their_budget(tmp_path):
    hung = prepare(SCEN / "health-npu-smi-hung", tmp_path)
    start = time.monotonic()
    # a budget past npu-smi's hang threshold (5 s): stopped earlier it is cut short, not hung
    proc = npudoctor(hung, "exec", "--strict", "--timeout", "10", "--root", str(hung / "root"), "--", "true")
    assert proc.returncode == 125
    # a hung npu-smi on an idle node is a device failure; a budget that runs out is no longer
    # an error (HOST090): it is "unknown" and would not refuse (see the test below)
    assert any(line.startswith("npudoctor: error DEV001 ") for line in proc.stderr.splitlines()), proc.stderr
    assert time.monotonic() - start < 10 + 1.0 + 3.0


def test_exec_help_documents_exit_codes():
    proc = clirun.npudoctor("exec", "--help")
    assert proc.returncode == 0
    for text in ("125", "126", "127", "exit status"):
        assert text in proc.stdout
    proc = clirun.npudoctor("env", "--help")
    assert "Exit codes: 0 printed; 1 no CANN toolkit found" in " ".join(proc.stdout.split())


def test_exec_gives_the_workload_default_sigpipe_and_sigxfsz(unsourced):
    """Issue 20: Python ignores SIGPIPE and SIGXFSZ and execve keeps ignored signals: the
    workload must get the defaults back, so `yes | head -1` ends instead of spinning."""
    proc = npudoctor(
        unsourced, "exec", "-q", "--root", str(unsourced / "root"), "--",
        "sh", "-c", "yes | head -1; grep -E '^SigIgn' /proc/self/status",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    first, ignored = proc.stdout.splitlines()[:2]
    assert first == "y"
    mask = int(ignored.split()[1], 16)
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        assert not mask & (1 << (int(sig) - 1)), ignored


def test_exec_budget_running_out_is_unknown_and_the_workload_starts(tmp_path):
    """Issue 15/20: `exec` follows health's policy when its checks run out of time: what was
    unfinished is "unknown: AREA (reason)" on stderr, not an error (no HOST090), and the
    workload starts -- even with --strict.  The grace past the budget is set to 0 (a module
    constant, in the subprocess) so that a 0.01 s budget surely runs out before any npu-smi
    could be judged hung."""
    healthy = prepare(SCEN / "health-910b3-8npu-healthy", tmp_path)
    marker = tmp_path / "started"
    code = (
        "import sys; import npudoctor.runtime.exec as ex; ex.CHECK_GRACE = 0.0; "
        "from npudoctor.entry import main; sys.exit(main(sys.argv[1:]))"
    )
    argv = [sys.executable, "-c", code, "exec", "--strict", "--timeout", "0.01", "--root", str(healthy / "root")]
    proc = subprocess.run(
        [*argv, "--", "sh", "-c", f"echo workload > {marker}"],
        env=_env(healthy),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert marker.read_text() == "workload\n"
    unknown = [line for line in proc.stderr.splitlines() if line.startswith("npudoctor: unknown: ")]
    assert len(unknown) == 1, proc.stderr
    assert re.fullmatch(
        r"npudoctor: unknown: (all areas|\w+ and the areas after it) \(the 0\.01 s budget ran out while "
        r"(starting|probing \w+|loading the rules and the matrix|judging)(; CPU-starved [\d.]+ % of the time)?\)",
        unknown[0],
    ), unknown
    assert "HOST090" not in proc.stderr and "error" not in proc.stderr


@pytest.mark.parametrize("value", ["0", "-1", "abc"])
def test_a_bad_timeout_is_a_bad_option_exit_2_whatever_its_spelling(value: str) -> None:
    """The help: "2 bad npudoctor option"; 125 is for a CMD npudoctor could not prepare."""
    result = clirun.npudoctor("exec", "--timeout", value, "--", "true", env={"PATH": "/usr/bin:/bin"})
    assert result.returncode == 2, (result.returncode, result.stderr)


def test_exec_prints_the_root_cause_first_and_counts_its_symptom_with_it(tmp_path):
    scenario = prepare(SCEN / "health-driver-not-mounted", tmp_path)
    proc = npudoctor(scenario, "exec", "--root", str(scenario / "root"), "--", "true")
    lines = [line for line in proc.stderr.splitlines() if " CTR" in line or " DRV" in line]
    assert (proc.returncode, lines) == (
        0,
        [
            "npudoctor: error CTR002 the NPU driver files are not mounted into this container",
            "npudoctor: error DRV001 The host's NPU driver is not mounted into this container (follows from CTR002)",
            "npudoctor: warning CTR003 not mounted into this container: /usr/local/bin/npu-smi, /usr/local/dcmi"
            " (follows from CTR002)",
            "npudoctor: info CTR004 /etc/ascend_install.info is not mounted into this container (follows from CTR002)",
        ],
    )
    scenario = prepare(SCEN / "health-devices-not-passed", tmp_path / "devices")
    proc = npudoctor(scenario, "exec", "--strict", "--root", str(scenario / "root"), "--", "true")
    assert proc.returncode == 125
    assert proc.stderr.splitlines()[1:] == [
        "npudoctor: error CTR001 this container has no NPU device nodes",
        "npudoctor: error DEV002 npu-smi cannot open the NPU (ret -8005): the device is busy or not accessible"
        " (follows from CTR001)",
        "npudoctor: refusing to start true: 1 error(s) found (--strict)",
    ]


def test_exec_says_which_area_was_not_checked_before_it_starts_the_command(tmp_path):
    """An npu-smi that hangs delays the start by its deadline; exec says why, as health does
    ("not checked: devices"), instead of starting the command after a silent pause."""
    scenario = prepare(SCEN / "health-npu-smi-hung", tmp_path)
    proc = npudoctor(scenario, "exec", "--root", str(scenario / "root"), "--", "true")
    assert proc.returncode == 0, proc.stderr
    (line,) = [line for line in proc.stderr.splitlines() if "not checked" in line]
    assert line.startswith("npudoctor: not checked: devices (`npu-smi info` was stopped by the time budget")
    healthy = prepare(SCEN / "health-910b3-8npu-healthy", tmp_path / "healthy")
    quiet = npudoctor(healthy, "exec", "--root", str(healthy / "root"), "--", "true")
    assert "not checked" not in quiet.stderr
