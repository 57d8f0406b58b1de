"""`npudoctor npd` as NPD runs it: exit 0/1/2, one line of at most 80 bytes on stdout,
within its --timeout (also with an npu-smi that never answers)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from builders.stacktree import clean_env, npudoctor
from scenario_runner import environment, prepare

try:
    import tomllib
except ImportError:  # pragma: no cover
    import tomli as tomllib  # type: ignore[no-redef]

SCENARIOS = Path(__file__).resolve().parent / "scenarios"
HEALTHY = Path(__file__).resolve().parent.parent / "examples" / "healthy-910b3"


def _healthy_node_env(extra=None):
    """The agent's own environment: the captured npu-smi on PATH, no CANN variable (an NPD
    pod, a systemd unit or slurmd never sources set_env.sh)."""
    env = clean_env(extra)
    env["PATH"] = f"{HEALTHY / 'bin'}:{env['PATH']}"
    return env


def npd(*args, env=None, timeout=60):
    start = time.monotonic()
    proc = npudoctor("npd", *args, env=env, timeout=timeout)
    elapsed = time.monotonic() - start
    assert proc.stdout.endswith("\n") and proc.stdout.count("\n") == 1, proc.stdout
    message = proc.stdout.rstrip("\n")
    assert 0 < len(message.encode("utf-8")) <= 80, message  # NPD cuts by bytes
    return proc.returncode, message, elapsed


def test_ok_on_a_healthy_node_judged_by_its_set_env_not_the_agents_environment():
    # issue 15 repro: `npd --root root` in examples/healthy-910b3 exited 1 with ENV001 about
    # the agent's own process; the node's environment is what its set_env.sh would set.
    code, message, _ = npd("--root", str(HEALTHY / "root"), env=_healthy_node_env())
    assert (code, message.split(" (")[0]) == (0, "npudoctor: NPU stack OK")


def test_an_empty_root_is_unknown_not_ok(tmp_path):
    # nothing was there to check: not "OK" (it was before issue 15); no Python is nothing
    # to check, but the chips were never looked at (no npu-smi)
    code, message, _ = npd("--root", str(tmp_path), env=clean_env())
    assert code == 2 and message.startswith("not checked: devices: npu-smi: command not found on PATH"), message


def test_no_npu_smi_is_unknown_unless_the_devices_area_is_required():
    env = clean_env()  # no npu-smi on PATH: the chips were not looked at
    code, message, _ = npd("--root", str(HEALTHY / "root"), env=env)
    assert (code, message) == (2, "not checked: devices: npu-smi: command not found on PATH")
    code, message, _ = npd("--root", str(HEALTHY / "root"), "--require-checked", "devices", env=env)
    assert (code, message) == (1, "devices not checked: npu-smi: command not found on PATH")
    proc = npudoctor("npd", "--root", str(HEALTHY / "root"), "--json", env=env)
    assert proc.returncode == 2
    assert json.loads(proc.stdout)["not_checked"] == {"devices": "npu-smi: command not found on PATH"}
    code, message, _ = npd("--root", str(HEALTHY / "root"), "--require-checked", "chips", env=env)
    assert code == 2 and message.startswith("npudoctor npd: --require-checked: unknown area chips")


def test_pid_judges_that_workloads_environment(tmp_path):
    root = tmp_path / "root"
    shutil.copytree(HEALTHY / "root", root, symlinks=True)
    procdir = root / "proc" / "4242"
    procdir.mkdir(parents=True)
    # a workload started without set_env.sh (the agent's own environment is never judged)
    # (its PATH, where npu-smi is looked up on this machine, holds the captured npu-smi)
    path = f"PATH={HEALTHY / 'bin'}:/usr/bin:/bin"
    (procdir / "environ").write_bytes(path.encode() + b"\0HOME=/root\0")
    code, message, _ = npd("--root", str(root), "--pid", "4242", env=_healthy_node_env())
    assert (code, message) == (1, "ENV001 CANN 8.0.0 is installed but its set_env.sh is not sourced")
    # the same workload with the CANN variables of the captured container environment
    lines = [ln for ln in (HEALTHY / "env").read_text().splitlines() if ln.strip()]
    (procdir / "environ").write_bytes("\0".join(lines + [path]).encode() + b"\0")
    code, message, _ = npd("--root", str(root), "--pid", "4242", env=_healthy_node_env())
    assert code == 0, message
    code, message, _ = npd("--root", str(root), "--pid", "999999", env=_healthy_node_env())
    assert code == 2 and message.startswith("npudoctor npd: --pid 999999: cannot read /proc/999999/environ")


def test_problem_names_the_code(tmp_path):
    root = tmp_path / "root"
    shutil.copytree(SCENARIOS / "hccl-ranktable-truncated" / "root", root, symlinks=True)
    env = clean_env({"RANK_TABLE_FILE": "/etc/hccl.json"})
    code, message, _ = npd("--root", str(root), env=env)
    assert code == 1 and "HCCL001" in message
    # ignored -> no longer a problem from this code
    code, message, _ = npd("--root", str(root), "--ignore", "HCCL001", env=env)
    assert "HCCL001" not in message


def test_unknown_on_bad_options(tmp_path):
    code, message, _ = npd("--severity", "fatal")
    assert code == 2 and "--severity" in message
    code, message, _ = npd("--root", str(tmp_path / "nope"))
    assert code == 2 and "not a directory" in message


def test_hung_npu_smi_answers_within_timeout(tmp_path):
    root = tmp_path / "root"
    (root / "dev").mkdir(parents=True)
    for i in range(2):
        (root / "dev" / f"davinci{i}").touch()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    hang = bindir / "npu-smi"
    hang.write_text("#!/bin/sh\ntrap '' TERM INT\nsleep 120\n")
    hang.chmod(hang.stat().st_mode | stat.S_IEXEC)
    env = clean_env()
    env["PATH"] = f"{bindir}:{env['PATH']}"
    code, message, elapsed = npd("--root", str(root), "--timeout", "4", env=env)
    assert code in (0, 1, 2)
    assert elapsed < 4 + 2.0, elapsed  # interpreter start-up on top of the budget


def _scenario_npd(name, tmp_path, *args):
    """``npd --root <scenario>/root ARGS`` in the scenario's environment."""
    scenario = prepare(SCENARIOS / name, tmp_path)
    env = environment(scenario, tomllib.loads((scenario / "scenario.toml").read_text(encoding="utf-8")))
    return npd("--root", str(scenario / "root"), *args, env=env)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("health-devices-not-passed", "CTR001 this container has no NPU device nodes"),
        ("health-driver-not-mounted", "CTR002 the NPU driver files are not mounted into this container"),
    ],
)
def test_the_message_names_the_root_cause_not_its_symptom(name, expected, tmp_path):
    # DEV002 / DRV001 follow from the container's missing devices / mounts (check folds
    # them under it): one cause, no "+1 more"
    code, message, _ = _scenario_npd(name, tmp_path)
    assert (code, message) == (1, expected)


def test_the_message_says_what_is_wrong_not_only_the_codes_name(tmp_path):
    code, message, _ = _scenario_npd("health-chip-critical", tmp_path / "critical")
    assert (code, message) == (1, "DEV010 NPU 3 health is Critical")
    # a title too long for the line is cut; the count of the other causes stays
    code, message, _ = _scenario_npd(
        "k01-x86-torch-npu-2.1.0.post10-needs-cpu-torch", tmp_path / "k01", "--timeout", "10"
    )
    assert code == 1 and message.startswith("PKG001 torch 2.1.0 is not the build torch_npu 2.1.0.post10 needs ")
    assert message.endswith("… (+2 more)"), message


def test_a_long_message_fits_npds_80_bytes_cut_at_a_character(tmp_path):
    # NPD keeps the first max_output_length (80) bytes: an 80-character line ending in "…"
    # (3 bytes) was 82 bytes, and NPD's cut left half a character in the node condition
    code, message, _ = _scenario_npd("health-npu-smi-hung", tmp_path, "--timeout", "3")
    assert code == 2 and message.startswith("not checked: devices: `npu-smi info` was stopped by the time budget")
    assert message.endswith("…") and len(message.encode("utf-8")) == 80, message
    code, message, _ = _scenario_npd(
        "k01-x86-torch-npu-2.1.0.post10-needs-cpu-torch", tmp_path / "k01", "--timeout", "20"
    )
    assert code == 1 and message.endswith("… (+2 more)") and len(message.encode("utf-8")) == 80, message


def test_shorten_counts_bytes_and_never_splits_a_character():
    from npudoctor.cli.commands.npd import shorten

    for text in ("é" * 100, "NPU 3 的健康状态为 Critical：" * 5, "x" * 79 + "€€", "a\x1b[31m b\nc" * 20):
        line = shorten(text)
        data = line.encode("utf-8")
        assert len(data) <= 80 and data.decode("utf-8") == line and line.isprintable(), line
        assert line.endswith("…")
    assert shorten("x" * 80) == "x" * 80
    assert shorten("x" * 78 + "€") == "x" * 77 + "…"
    assert "one line of at most 80 bytes" in " ".join(npudoctor("npd", "--help").stdout.split())


# ---------------------------------------------------------------- a host without Python
REPO = Path(__file__).resolve().parent.parent
#: Healthy NPU hosts captured without any Python environment (their workloads run CANN and
#: torch in containers): `check` exits 0 on each.
NO_PYTHON_NPU_HOSTS = [
    "dev-8npu-910b3-healthy",
    "dev-a3-16chip",
    "k15-process-holds-npu",
    "k17-user-not-in-device-group",
]
NO_PYTHON = "no Python environment found in the root"


def scenario_npd(name, *args, extra=None, root=None):
    """``npudoctor npd --root <scenario>/root ARGS`` as the scenario contract runs it:
    ``env -i PATH=<scenario>/bin:/usr/bin:/bin`` and the [env] of its scenario.toml."""
    import tomllib

    scenario = SCENARIOS / name
    env = {"PATH": f"{scenario / 'bin'}:/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    env.update(tomllib.loads((scenario / "scenario.toml").read_text()).get("env", {}))
    env.update(extra or {})
    argv = [sys.executable, "-m", "npudoctor", "npd", "--root", str(root or scenario / "root"), *args]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
    return proc.returncode, proc.stdout


@pytest.mark.parametrize("name", NO_PYTHON_NPU_HOSTS)
def test_an_npu_host_without_python_is_ok_not_unknown(name):
    """Driver, devices and (when there) CANN judged; the absent Python stack is nothing to
    check, not "unknown" (it was: the condition stayed Unknown on such nodes for ever)."""
    code, out = scenario_npd(name)
    assert code == 0 and out.startswith("npudoctor: NPU stack OK ("), out
    doc = json.loads(scenario_npd(name, "--json")[1])
    assert (doc["status"], doc["not_checked"]) == ("ok", {}), doc
    assert doc["absent"] == {"python": NO_PYTHON, "packages": f"no interpreter to inspect: {NO_PYTHON}"}


def test_no_python_still_counts_when_required_or_named(tmp_path):
    name = "dev-8npu-910b3-healthy"
    code, out = scenario_npd(name, "--require-checked", "python")
    assert (code, out) == (1, f"python not checked: {NO_PYTHON}\n")
    # an interpreter named on the node (NPUDOCTOR_PYTHON, as the daemonset sets it) that is
    # not there: npudoctor could not tell
    code, out = scenario_npd(name, extra={"NPUDOCTOR_PYTHON": "/opt/py/bin/python3"})
    assert code == 2 and out.startswith("npudoctor npd: --python /opt/py/bin/python3: no such file"), out
    # named and present, but no environment around it: not checked, unknown
    root = tmp_path / "root"
    shutil.copytree(SCENARIOS / name / "root", root, symlinks=True)
    (root / "opt/py/bin").mkdir(parents=True)
    (root / "opt/py/bin/python3").write_text("")
    code, out = scenario_npd(name, "--json", extra={"NPUDOCTOR_PYTHON": "/opt/py/bin/python3"}, root=root)
    doc = json.loads(out)
    assert code == 2 and doc["message"] == f"not checked: python: {NO_PYTHON} (+1 more)", doc
    assert doc["absent"] == {}


def test_real_gaps_on_a_host_without_python_stay_unknown(tmp_path):
    code, out = scenario_npd("dev-npu-smi-not-found-host")
    assert (code, out) == (2, "not checked: devices: npu-smi: command not found on PATH\n")
    # npu-smi timed out on a busy node; a probe that crashed (replayed with --from)
    scenario = SCENARIOS / "dev-8npu-910b3-healthy"
    snap = tmp_path / "snap.json"
    env = {"PATH": f"{scenario / 'bin'}:/usr/bin:/bin", "HOME": "/root", "PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-m", "npudoctor", "collect", "--root", str(scenario / "root"), "-o", str(snap)]
    subprocess.run(argv, check=True, capture_output=True, env=env, timeout=60)
    doc = json.loads(snap.read_text())
    smi = doc["facts"]["devices"]["npu_smi"]
    smi.update(available=False, cause="cut-short", error="npu-smi info: timed out")
    first = dict(smi["commands"][0], returncode=None, timed_out=True, parsed=False, state="R")
    smi["commands"] = [dict(first, cpu_s=1.0, duration=3.0, cpu_pressure=95.0)]
    doc["facts"]["devices"]["chips"] = []
    busy = tmp_path / "busy.json"
    busy.write_text(json.dumps(doc))
    proc = npudoctor("npd", "--from", str(busy), "--json", env=dict(os.environ, NPUDOCTOR_PYTHON=""))
    said = json.loads(proc.stdout)
    assert proc.returncode == 2, said
    assert said["not_checked"] == {"devices": "npu-smi timed out on a busy node (CPU-starved 95 % of its run)"}
    assert set(said["absent"]) == {"python", "packages"}
    doc = json.loads(snap.read_text())
    doc["facts"]["_errors"] = {"python": "TypeError: boom"}
    crashed = tmp_path / "crashed.json"
    crashed.write_text(json.dumps(doc))
    proc = npudoctor("npd", "--from", str(crashed), "--json", env=dict(os.environ, NPUDOCTOR_PYTHON=""))
    said = json.loads(proc.stdout)
    assert proc.returncode == 2 and said["absent"] == {}, said


def test_absent_is_only_a_root_with_no_python_at_all():
    from npudoctor.facts.coverage import absent

    facts = {
        "python": {"source": "root", "error": NO_PYTHON, "environments": []},
        "packages": {"skipped": f"no interpreter to inspect: {NO_PYTHON}"},
    }
    assert set(absent(facts)) == {"python", "packages"}
    assert absent(facts, named_python="/usr/bin/python3") == {}
    assert absent(dict(facts, _errors={"python": "TypeError: boom"})) == {}
    # environments were found but none could be chosen or read: not absent
    found = {"source": "root", "error": NO_PYTHON, "environments": [{"prefix": "/usr"}]}
    assert absent(dict(facts, python=found)) == {}
    # a live interpreter that failed (--python): not absent
    assert absent(dict(facts, python={"source": "--python", "error": "exit 1"})) == {}
    assert absent("not a mapping") == {}  # type: ignore[arg-type]


def test_a_problem_message_is_the_same_on_every_run():
    """deploy/k8s/npd turns on NPD's message-change condition update: while the condition
    stays True, a changed message is a new Warning event.  So the message of a problem says
    which problem, and nothing that changes from run to run (no timing)."""
    said = {scenario_npd("health-chip-critical") for _ in range(2)}
    assert len(said) == 1 and next(iter(said))[0] == 1, said
