"""Health keeps its word: an npu-smi that is slow or asleep on a machine-wide
lock is stopped by the budget before the hang threshold and answers healthy or unknown,
never DEV001; an npu-smi killed for flooding its output is not believed.  Fixtures are
stand-in npu-smi scripts that block (a held ``flock``) or sleep; nothing asserts a time."""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict

import pytest
import tomllib
from builders.shellscript import write_script
from clirun import npudoctor
from scenario_runner import environment

from npudoctor.context import Options
from npudoctor.engine import collect, evaluate
from npudoctor.facts.coverage import not_checked
from npudoctor.host import Host
from npudoctor.probes.devices import HANG_AFTER

REPO = Path(__file__).resolve().parent.parent
HEALTHY = REPO / "tests/scenarios/health-910b3-8npu-healthy"
TABLE = "npu-smi-info_910B3_23.0.7_8npu_noproc.txt"


def _scenario(tmp_path: Path, body: str) -> Path:
    scenario = tmp_path / "scenario"
    shutil.copytree(HEALTHY, scenario, symlinks=True)
    (scenario / "bin/npu-smi").unlink()
    write_script(scenario / "bin", "npu-smi", body.replace("TABLE", str(scenario / "bin" / TABLE)))
    return scenario


def _env(scenario: Path) -> Dict[str, str]:
    env = environment(scenario, tomllib.loads((scenario / "scenario.toml").read_text()))
    env["PYTHONPATH"] = str(REPO)
    return env


def _health(scenario: Path, *args: str) -> dict:
    # A process: health counts its budget from the start of its process and leaves with os._exit.
    proc = subprocess.run(
        [sys.executable, "-m", "npudoctor", "health", "--root", str(scenario / "root"), "--json", *args],
        env=_env(scenario),
        capture_output=True,
        text=True,
        timeout=120,
    )
    doc = json.loads(proc.stdout)
    assert proc.returncode == (1 if doc["status"] == "unhealthy" else 0)
    return doc


def test_an_npu_smi_asleep_on_a_machine_wide_lock_is_unknown_not_hung(tmp_path: Path) -> None:
    lock = tmp_path / "dcmi.lock"
    scenario = _scenario(tmp_path, f'exec flock "{lock}" cat "TABLE"\n')
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another npu-smi holds the lock for the whole run
        doc = _health(scenario)
    assert doc["status"] != "unhealthy", doc
    assert "DEV001" not in json.dumps(doc)
    unknown = doc.get("not_checked") or doc.get("unknown") or {}
    # on a loaded machine the budget can run out before any area ends: "all areas"
    reason = unknown.get("devices") or unknown.get("all areas", "")
    assert "stopped by the time budget" in reason or "budget" in reason, doc


def test_a_slow_npu_smi_is_healthy_or_unknown_never_unhealthy(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path, 'sleep 0.7\ncat "TABLE"\n')
    doc = _health(scenario)
    assert doc["status"] in ("healthy", "unknown"), doc
    assert "DEV001" not in json.dumps(doc)


def test_a_cut_short_npu_smi_is_not_judged_hung(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path, "exec sleep 600\n")
    host = Host(str(scenario / "root"), _env(scenario))
    try:
        snapshot = collect(host, Options(command_timeout=1.0), sections=["host", "devices"])
    finally:
        host.close()
    smi = snapshot.facts["devices"]["npu_smi"]
    assert smi["cause"] == "cut-short" and smi["commands"][0]["timed_out"] is True
    assert smi["commands"][0]["duration"] < HANG_AFTER
    assert "was stopped by the time budget" in not_checked(snapshot.facts, "devices")
    findings = evaluate(snapshot, None, Options())
    assert "DEV001" not in {f.code for f in findings}


def test_an_npu_smi_killed_for_flooding_its_output_is_not_believed(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path, 'cat "TABLE"\nhead -c 6000000 /dev/zero | tr "\\0" "x"\n')
    result = npudoctor("check", "--root", str(scenario / "root"), "--json", env=_env(scenario))
    doc = json.loads(result.stdout)
    devices = doc["facts"]["devices"]
    assert devices["npu_smi"].get("available") is not True
    assert devices.get("chips") in ([], None)
    assert "output over" in (devices["npu_smi"]["error"] or "")


def test_a_looping_driver_version_info_is_unreadable_not_unmounted(tmp_path: Path) -> None:
    scenario = tmp_path / "scenario"
    shutil.copytree(HEALTHY, scenario, symlinks=True)
    info = scenario / "root/usr/local/Ascend/driver/version.info"
    info.unlink()
    loop = scenario / "root/usr/local/Ascend/driver/loop"
    info.symlink_to("loop")  # relative: inside the root
    loop.symlink_to("version.info")
    result = npudoctor("check", "--root", str(scenario / "root"), "--json", env=_env(scenario))
    doc = json.loads(result.stdout)
    mounts = {m["path"]: m for m in doc["facts"]["container"]["mounts"]}
    assert mounts["/usr/local/Ascend/driver/version.info"]["exists"] is None
    assert mounts["/usr/local/Ascend/driver/version.info"]["unreadable"] == "symlink loop"
    assert "CTR002" not in {f["code"] for f in doc["findings"]}


def test_an_npu_smi_that_may_not_be_run_is_its_own_finding(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path, 'cat "TABLE"\n')
    smi = scenario / "bin/npu-smi"
    smi.chmod(0o644)
    result = npudoctor("check", "--root", str(scenario / "root"), "--json", env=_env(scenario))
    doc = json.loads(result.stdout)
    facts = doc["facts"]["devices"]["npu_smi"]
    assert facts["cause"] == "permission" and facts["error"] == f"{smi} is not executable by this user"
    codes = {f["code"]: f for f in doc["findings"]}
    assert "DEV004" in codes and "not executable" in codes["DEV004"]["title"]
    assert "DEV003" not in codes  # not "not installed"


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv to run as an unprivileged user")
def test_a_dev_that_cannot_be_listed_is_not_checked_not_missing(tmp_path: Path) -> None:
    """Run as nobody (root reads any directory): /dev of the root is mode 0700."""
    base = Path(tempfile.mkdtemp(prefix="npudoctor-eacces-"))
    try:
        base.chmod(0o755)
        scenario = base / "scenario"
        shutil.copytree(HEALTHY, scenario, symlinks=True)
        (scenario / "bin/npu-smi").unlink()  # no chips seen: only the nodes could tell
        for path in [scenario, *scenario.rglob("*")]:
            if not path.is_symlink():
                path.chmod(0o755 if path.is_dir() else 0o644)
        dev = scenario / "root/dev"
        dev.mkdir(exist_ok=True)
        (dev / "davinci0").write_text("")
        dev.chmod(0o700)
        env = {**_env(scenario), "HOME": str(base)}
        # a process: it runs as another account (setpriv)
        proc = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m", "npudoctor"]
            + ["check", "--root", str(scenario / "root"), "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=str(base),
        )
        doc = json.loads(proc.stdout)
        devices = doc["facts"]["devices"]
        assert devices["nodes_error"].startswith("cannot look at /dev: permission denied"), devices
        assert not {"DEV020", "CTR001"} & {f["code"] for f in doc["findings"]}
        assert "permission denied" in (doc.get("not_checked") or {}).get("devices", ""), doc.get("not_checked")
    finally:
        (base / "scenario/root/dev").chmod(0o755)
        shutil.rmtree(base)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(") ", 1)[-1][:1] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("command", [["check"], ["devices"], ["collect", "-o", "-"]])
def test_sigterm_during_a_probe_leaves_no_process(tmp_path: Path, command: list) -> None:
    pidfile = tmp_path / "npu-smi.pid"
    scenario = _scenario(tmp_path, f"echo $$ > \"{pidfile}\"\nsh -c 'sleep 600' &\nexec sleep 600\n")
    # a process: it receives SIGTERM and must leave no process group behind
    proc = subprocess.Popen(
        [sys.executable, "-m", "npudoctor", *command, "--root", str(scenario / "root")],
        env=_env(scenario),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for _ in range(600):
            if pidfile.exists() and pidfile.read_text().strip():
                break
            proc_done = proc.poll() is not None
            assert not proc_done, proc.stderr.read() if proc.stderr else ""
            subprocess.run(["sleep", "0.05"], check=True)
        pid = int(pidfile.read_text())
        children = [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
        proc.send_signal(15)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130  # ExitStatus.INTERRUPTED: the documented set, not 128 + 15
    left = []
    for _ in range(60):  # SIGKILL is delivered at once; reaping by init may take a moment
        left = [p for p in [pid, *children] if _alive(p)]
        if not left:
            break
        subprocess.run(["sleep", "0.05"], check=True)
    assert left == []
