"""The machine options of the runtime commands (health, exec, env, npd) each change what the
command does: one test per command and option.

Covered elsewhere: ``health --root`` and ``--json`` (tests/test_health.py:
test_a_missing_root_is_unhealthy_with_the_reason, test_json_document), ``exec --root``
(tests/test_exec_env.py: test_exec_child_sees_the_toolkit_environment_and_keeps_the_pid),
``env --root`` and ``--json`` (test_env_lines_equal_really_sourcing_set_env_sh,
test_env_json_and_already_sourced), ``npd --root`` (tests/test_npd.py:
test_problem_names_the_code).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Dict, Optional

import pytest
from builders.build_cann_scenarios import nnal as add_nnal
from clirun import Result, npudoctor
from scenario_runner import REPO, environment, prepare

try:
    import tomllib
except ImportError:  # pragma: no cover
    import tomli as tomllib  # type: ignore[no-redef]

SCEN = REPO / "tests" / "scenarios"
DUMP = "import json, os; print(json.dumps(dict(os.environ)))"


def _env(scenario: Path, extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = environment(scenario, tomllib.loads((scenario / "scenario.toml").read_text(encoding="utf-8")))
    env.update(extra or {})
    return env


def run(scenario: Path, *args: str, extra: Optional[Dict[str, str]] = None) -> Result:
    """``npudoctor ARGS`` in-process in the scenario's environment (ROOT in an argument is
    replaced by the scenario's root)."""
    argv = [a.replace("ROOT", str(scenario / "root")) for a in args]
    return npudoctor(*argv, env=_env(scenario, extra))


def process(scenario: Path, *args: str, extra: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
    """``python -m npudoctor ARGS`` as a process, as :func:`run`: for ``health`` (its budget
    counts from the start of its process, and a blown one leaves with ``os._exit``),
    ``exec`` (it replaces its process with the workload) and ``npd`` (``os._exit``)."""
    argv = [a.replace("ROOT", str(scenario / "root")) for a in args]
    return subprocess.run(
        [sys.executable, "-m", "npudoctor", *argv],
        env=_env(scenario, extra),
        capture_output=True,
        text=True,
        timeout=120,
    )


def snapshot(scenario: Path, out: Path, extra: Optional[Dict[str, str]] = None) -> Path:
    """``npudoctor collect --root <scenario>/root --no-redact -o OUT`` in the scenario's environment."""
    proc = run(scenario, "collect", "--root", "ROOT", "--no-redact", "-o", str(out), extra=extra)
    assert proc.returncode == 0, proc.stderr
    return out


def bare_venv(root: Path) -> str:
    """A venv without any package at /opt/bare inside ``root``; returns its interpreter path
    (as the diagnosed machine sees it)."""
    venv = root / "opt" / "bare"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("#!/bin/sh\n")
    (venv / "bin" / "python").chmod(0o755)
    (venv / "lib" / "python3.10" / "site-packages").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.10.12\n")
    return "/opt/bare/bin/python"


def recording_npu_smi(tmp_path: Path) -> Dict[str, str]:
    """An ``npu-smi`` first on PATH that records that it ran (and answers nothing)."""
    bindir = tmp_path / "recorder"
    bindir.mkdir()
    marker = tmp_path / "npu-smi-ran"
    exe = bindir / "npu-smi"
    exe.write_text(f"#!/bin/sh\necho ran >> {marker}\nexit 1\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return {"PATH": f"{bindir}:{os.environ.get('PATH', '/usr/bin:/bin')}", "MARKER": str(marker)}


@pytest.fixture
def healthy(tmp_path) -> Path:
    return prepare(SCEN / "health-910b3-8npu-healthy", tmp_path / "healthy")


@pytest.fixture
def critical(tmp_path) -> Path:
    return prepare(SCEN / "health-chip-critical", tmp_path / "critical")


@pytest.fixture
def unsourced(tmp_path) -> Path:
    return prepare(SCEN / "health-env-not-sourced", tmp_path / "unsourced")


# ------------------------------------------------------------------------ health
def test_health_python_judges_that_interpreter(healthy):
    python = bare_venv(healthy / "root")
    assert process(healthy, "health", "--root", "ROOT", "--timeout", "5").returncode == 0
    proc = process(healthy, "health", "--root", "ROOT", "--timeout", "5", "--python", python)
    assert proc.returncode == 1 and proc.stdout.startswith("unhealthy: PKG006 "), proc.stdout


def test_health_user_judges_that_accounts_device_access(healthy):
    proc = process(healthy, "health", "--root", "ROOT", "--timeout", "5", "--user", "12345")
    assert proc.returncode == 1
    assert proc.stdout.startswith("unhealthy: DEV021 uid 12345 cannot open"), proc.stdout


def test_health_env_file_judges_that_environment(unsourced, tmp_path):
    exports = run(unsourced, "env", "--root", "ROOT")
    assert exports.returncode == 0 and "export ASCEND_TOOLKIT_HOME=" in exports.stdout
    env_file = tmp_path / "workload.env"
    env_file.write_text(exports.stdout)
    plain = process(unsourced, "health", "--root", "ROOT", "--timeout", "5")
    assert plain.returncode == 1 and plain.stdout.startswith("unhealthy: ENV001 ")
    judged = process(unsourced, "health", "--root", "ROOT", "--timeout", "5", "--env-file", str(env_file))
    assert judged.returncode == 0 and judged.stdout.startswith("healthy: 8 NPU chip(s), CANN 8.0.0"), judged.stdout


def test_health_no_commands_runs_no_npu_smi(critical):
    proc = process(critical, "health", "--root", "ROOT", "--timeout", "5")
    assert proc.stdout == "unhealthy: DEV010 NPU 3 health is Critical\n"
    proc = process(critical, "health", "--root", "ROOT", "--timeout", "5", "--no-commands")
    # the devices area was not looked at: healthy, and the answer names the gap (issue 15)
    assert proc.returncode == 0 and proc.stdout == (
        "healthy: CANN 8.0.0, torch_npu 2.1.0.post10; not checked: devices: commands disabled (--no-commands)\n"
    )


def test_health_from_judges_the_snapshot(critical, tmp_path):
    snap = snapshot(critical, tmp_path / "snap.json")
    proc = process(critical, "health", "--from", str(snap), "--timeout", "5")
    assert proc.returncode == 1 and "unhealthy: DEV010 NPU 3 health is Critical" in proc.stdout.splitlines()
    proc = process(critical, "health", "--from", str(snap), "--root", "ROOT")
    assert proc.returncode == 1
    assert proc.stdout.startswith("unhealthy: bad health-check option: --from replays a snapshot"), proc.stdout


# -------------------------------------------------------------------------- exec
def test_exec_python_judges_that_interpreter(healthy):
    python = bare_venv(healthy / "root")
    proc = process(healthy, "exec", "--root", "ROOT", "--python", python, "--", "true")
    assert proc.returncode == 0
    assert any(line.startswith("npudoctor: error PKG006 ") for line in proc.stderr.splitlines()), proc.stderr
    assert "PKG006" not in process(healthy, "exec", "--root", "ROOT", "--", "true").stderr


def test_exec_user_judges_that_accounts_device_access(healthy):
    proc = process(healthy, "exec", "--strict", "--root", "ROOT", "--user", "12345", "--", "true")
    assert proc.returncode == 125
    assert any(line.startswith("npudoctor: error DEV021 uid 12345 ") for line in proc.stderr.splitlines())


def test_exec_env_file_is_the_workloads_starting_environment(unsourced, tmp_path):
    env_file = tmp_path / "workload.env"
    env_file.write_text("WORKLOAD_SETTING=from-the-file\n")
    proc = process(
        unsourced, "exec", "-q", "--root", "ROOT", "--env-file", str(env_file), "--", sys.executable, "-c", DUMP
    )
    assert proc.returncode == 0, proc.stderr
    child = json.loads(proc.stdout)
    assert child["WORKLOAD_SETTING"] == "from-the-file"
    assert child["ASCEND_TOOLKIT_HOME"] == "/usr/local/Ascend/ascend-toolkit/latest"  # the plan still applies
    assert "HOME" not in child  # this shell's environment is not the workload's


def test_exec_no_commands_runs_no_npu_smi(critical):
    proc = process(critical, "exec", "--root", "ROOT", "--", "true")
    assert "npudoctor: error DEV010 NPU 3 health is Critical" in proc.stderr.splitlines()
    proc = process(critical, "exec", "--no-commands", "--root", "ROOT", "--", "true")
    assert proc.returncode == 0 and "DEV010" not in proc.stderr, proc.stderr


def test_exec_accepts_no_from_or_json(unsourced):
    for flag in ("--from", "--json"):
        proc = process(unsourced, "exec", flag, "x", "--root", "ROOT", "--", "true")
        assert proc.returncode == 2 and "No such option" in proc.stderr, proc.stderr


# --------------------------------------------------------------------------- env
def test_env_python_decides_nnals_abi_directory(unsourced):
    root = unsourced / "root"
    add_nnal(root, "8.0.T63", "nnal_atb_version.info_8.0.T63_indented.txt", abi_dirs=("cxx_abi_0", "cxx_abi_1"))
    lib = root / "usr/local/lib/python3.10/site-packages/torch/lib"
    lib.mkdir(parents=True, exist_ok=True)
    # an old-ABI libc10.so: c10's torchCheckFail takes the old std::string (``RKSs``)
    (lib / "libc10.so").write_bytes(b"\x7fELF" + b"\0" * 60 + b"_ZN3c106detail14torchCheckFailEPKcS2_jRKSs\0")
    python = bare_venv(root)
    default = json.loads(run(unsourced, "env", "--root", "ROOT", "--json").stdout)
    assert default["set"]["ATB_HOME_PATH"].endswith("/cxx_abi_0")  # the env's torch: old ABI
    other = json.loads(run(unsourced, "env", "--root", "ROOT", "--python", python, "--json").stdout)
    assert other["set"]["ATB_HOME_PATH"].endswith("/cxx_abi_1")  # no torch there: the default


def test_env_user_is_that_accounts_login_environment(unsourced):
    root = unsourced / "root"
    home = root / "opt" / "alice"
    home.mkdir(parents=True)
    shutil.move(str(root / "usr/local/Ascend/ascend-toolkit"), str(home / "Ascend" / "ascend-toolkit"))
    with open(root / "etc" / "passwd", "a") as fh:
        fh.write("alice:x:1001:1001::/opt/alice:/bin/sh\n")
    proc = run(unsourced, "env", "--root", "ROOT")
    assert proc.returncode == 1 and "no CANN toolkit found" in proc.stderr
    proc = run(unsourced, "env", "--root", "ROOT", "--user", "alice")
    assert proc.returncode == 0, proc.stderr
    assert "export ASCEND_TOOLKIT_HOME=/opt/alice/Ascend/ascend-toolkit/latest" in proc.stdout.splitlines()
    proc = run(unsourced, "env", "--root", "ROOT", "--user", "bob")
    assert proc.returncode == 2 and "bob" in proc.stderr


def test_env_env_file_is_the_starting_environment(unsourced, healthy, tmp_path):
    spec = tomllib.loads((healthy / "scenario.toml").read_text(encoding="utf-8"))
    sourced = tmp_path / "sourced.env"
    sourced.write_text("".join(f"{k}={v}\n" for k, v in spec["env"].items()))
    assert "export ASCEND_TOOLKIT_HOME=" in run(unsourced, "env", "--root", "ROOT").stdout
    proc = run(unsourced, "env", "--root", "ROOT", "--env-file", str(sourced), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["method"] == "kept" and doc["set"] == {}


def test_env_no_commands_reaches_the_probes(monkeypatch):
    """``env`` runs a command only for a live ``--python`` (torch's ABI for NNAL), which a
    test machine cannot stage; this shows --no-commands reaches the Host the probes use."""
    import npudoctor.engine
    from npudoctor.runtime.environment import plan_environment
    from npudoctor.session.request import MachineRequest

    seen = []

    def fake_collect(host, options, sections=None):
        seen.append(host.commands)
        return npudoctor.snapshot.Snapshot(facts={}, target={}, node="", created="")

    monkeypatch.setattr(npudoctor.engine, "collect", fake_collect)
    assert plan_environment(MachineRequest(), environ={}).method == "none"
    assert plan_environment(MachineRequest(no_commands=True), environ={}).method == "none"
    assert seen == [True, False]


def test_env_from_prints_the_snapshots_exports(unsourced, tmp_path):
    snap = snapshot(unsourced, tmp_path / "snap.json")
    live = run(unsourced, "env", "--root", "ROOT").stdout.splitlines()
    proc = run(unsourced, "env", "--from", str(snap))
    assert proc.returncode == 0, proc.stderr
    replayed = proc.stdout.splitlines()
    assert "export ASCEND_TOOLKIT_HOME=/usr/local/Ascend/ascend-toolkit/latest" in replayed
    assert sorted(replayed) == sorted(live)
    assert "(from the snapshot)" in proc.stderr
    assert run(unsourced, "env", "--from", str(snap), "--root", "ROOT").returncode == 2
    # one policy for every command (session/request.py MachineRequest.replay_conflict): an option
    # --from would silently ignore is refused, --no-commands included
    refused = run(unsourced, "env", "--from", str(snap), "--no-commands")
    assert refused.returncode == 2 and "cannot be combined with --no-commands" in refused.stderr


def test_env_from_json_carries_the_snapshots_skipped_set_env_lines(unsourced, tmp_path):
    """A replayed snapshot's skipped set_env.sh lines reach `env --json` as plain JSON (they
    are read through the typed views and dumped back in the snapshot's shape)."""
    snap = snapshot(unsourced, tmp_path / "snap.json")
    doc = json.loads(snap.read_text())
    expected = doc["facts"]["environment"]["expected"]
    expected["unsupported"] = [{"line": 7, "text": 'eval "$(some-tool --env)"'}]
    snap.write_text(json.dumps(doc))
    proc = run(unsourced, "env", "--from", str(snap), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["unsupported"] == [{"line": 7, "text": 'eval "$(some-tool --env)"'}]


# --------------------------------------------------------------------------- npd
def npd(scenario: Path, *args: str, extra: Optional[Dict[str, str]] = None):
    proc = process(scenario, "npd", "--timeout", "20", *args, extra=extra)
    return proc.returncode, proc.stdout.rstrip("\n")


@pytest.fixture
def ranktable(tmp_path) -> Path:
    """The truncated rank table scenario without RANK_TABLE_FILE in its environment."""
    scenario = prepare(SCEN / "hccl-ranktable-truncated", tmp_path / "ranktable")
    text = (scenario / "scenario.toml").read_text(encoding="utf-8")
    spec = tomllib.loads(text)
    assert spec["env"].get("RANK_TABLE_FILE") == "/etc/hccl.json"
    (scenario / "scenario.toml").write_text(text.replace('RANK_TABLE_FILE = "/etc/hccl.json"', ""))
    return scenario


def test_npd_env_file_judges_that_environment(ranktable, tmp_path):
    env_file = tmp_path / "job.env"
    env_file.write_text("RANK_TABLE_FILE=/etc/hccl.json\n")
    code, message = npd(ranktable, "--root", "ROOT")
    assert "HCCL001" not in message
    code, message = npd(ranktable, "--root", "ROOT", "--env-file", str(env_file))
    assert code == 1 and "HCCL001" in message


def test_npd_from_judges_the_snapshot(ranktable, tmp_path):
    snap = snapshot(ranktable, tmp_path / "snap.json", extra={"RANK_TABLE_FILE": "/etc/hccl.json"})
    code, message = npd(ranktable, "--from", str(snap))
    assert code == 1 and "HCCL001" in message
    code, message = npd(ranktable, "--from", str(snap), "--root", "ROOT")
    assert code == 2 and "--from replays a snapshot" in message


def test_npd_json_prints_a_document(ranktable):
    proc = process(ranktable, "npd", "--root", "ROOT", "--json", extra={"RANK_TABLE_FILE": "/etc/hccl.json"})
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    assert doc["status"] == "problem" and "HCCL001" in doc["message"]
    assert "HCCL001" in [f["code"] for f in doc["problems"]]


def test_npd_no_commands_runs_no_npu_smi(critical, tmp_path):
    extra = recording_npu_smi(tmp_path)
    marker = Path(extra.pop("MARKER"))
    npd(critical, "--root", "ROOT", "--no-commands", extra=extra)
    assert not marker.exists()
    npd(critical, "--root", "ROOT", extra=extra)
    assert marker.exists()


def test_npd_user_judges_that_accounts_device_access(healthy):
    code, message = npd(healthy, "--root", "ROOT", "--user", "12345")
    assert code == 1 and "DEV021" in message, message
    code, message = npd(healthy, "--root", "ROOT")
    assert "DEV021" not in message


def test_npd_python_judges_that_interpreter(healthy):
    python = bare_venv(healthy / "root")
    code, message = npd(healthy, "--root", "ROOT", "--python", python)
    assert code == 1 and "PKG006" in message, message
    code, message = npd(healthy, "--root", "ROOT")
    assert "PKG006" not in message
