"""Devices probe, rules and `npudoctor devices`, end to end through the CLI on the
device scenarios (tests/scenarios/k1x-*, dev-*), plus focused rule units."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from scenario_runner import environment, prepare, run_check

from npudoctor.probes.devices import can_access
from npudoctor.rules.devices import _check_rt, docker_flags, parse_id_list

SCENARIOS = Path(__file__).resolve().parent / "scenarios"


def _cli(scenario: Path, *args: str, timeout: float = 60):
    import tomllib

    spec = tomllib.loads((scenario / "scenario.toml").read_text())
    env = environment(scenario, spec)
    env["COLUMNS"] = "120"
    return subprocess.run(
        [sys.executable, "-m", "npudoctor", *args, "--root", str(scenario / "root")],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_hung_npu_smi_does_not_hang_check(tmp_path):
    scenario = prepare(SCENARIOS / "k15-npu-smi-hung", tmp_path)
    start = time.monotonic()
    run = run_check(scenario, timeout=60)
    elapsed = time.monotonic() - start
    assert elapsed < 20, f"check took {elapsed:.1f} s with a hung npu-smi"
    dev001 = [f for f in run.doc["findings"] if f["code"] == "DEV001"]
    assert dev001 and dev001[0]["severity"] == "error" and "did not answer" in dev001[0]["title"]
    smi = run.doc["facts"]["devices"]["npu_smi"]
    assert smi["cause"] == "hung" and len(smi["commands"]) == 1 and smi["commands"][0]["timed_out"]
    left = subprocess.run(["pgrep", "-f", str(scenario / "bin" / "npu-smi")], capture_output=True, text=True)
    assert left.stdout.strip() == "", "the hung npu-smi was left running"


def test_devices_json_on_300i_duo(tmp_path):
    scenario = prepare(SCENARIOS / "k13-310p-duo-vllm-ascend", tmp_path)
    proc = _cli(scenario, "devices", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    chips = data["devices"]["chips"]
    assert [(c["npu_id"], c["chip_id"], c["logic_id"], c["name"]) for c in chips] == [
        (1792, 0, 0, "310P3"),
        (1792, 1, 1, "310P3"),
    ]
    assert [(c["memory_used_mb"], c["memory_total_mb"]) for c in chips] == [(1821, 44280), (1041, 43693)]
    assert data["devices"]["npu_smi"]["version"] == "24.1.rc2"
    assert "DEV040" in {f["code"] for f in data["findings"]}


def test_devices_table_on_8_card_910b3(tmp_path):
    scenario = prepare(SCENARIOS / "dev-8npu-910b3-healthy", tmp_path)
    proc = _cli(scenario, "devices")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.count("910B3") >= 8 and "3338/65536 (5%)" in out and "0000:C1:00.0" in out
    assert "all 8 NPUs linked by HCCS" in out and "NPU 0,1 → 144-167" in out


def test_devices_exit_1_when_busy_and_replay_from_snapshot(tmp_path):
    scenario = prepare(SCENARIOS / "k15-dcmi-8005-in-container", tmp_path)
    proc = _cli(scenario, "devices", "--json")
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert data["devices"]["npu_smi"]["code"] == -8005
    snap = tmp_path / "snap.json"
    env = environment(scenario, {"env": {"HOME": "/root"}})
    subprocess.run(
        [sys.executable, "-m", "npudoctor", "collect", "-o", str(snap), "--root", str(scenario / "root")],
        env=env,
        check=True,
        capture_output=True,
    )
    replay = subprocess.run(
        [sys.executable, "-m", "npudoctor", "devices", "--json", "--from", str(snap)], capture_output=True, text=True
    )
    assert replay.returncode == 1
    assert "DEV002" in {f["code"] for f in json.loads(replay.stdout)["findings"]}


def test_devices_help_documents_exit_codes():
    proc = subprocess.run([sys.executable, "-m", "npudoctor", "devices", "--help"], capture_output=True, text=True)
    assert "Exit codes" in proc.stdout and "1 errors found" in proc.stdout


def test_rt_visible_devices_parsing_like_cann():
    finding, effective = _check_rt("1, 2,3", 8, [])
    assert effective == [1] and "' 2'" in finding.title
    finding, effective = _check_rt("1,3,8", 8, [])
    assert effective == [1, 3] and "out of range" in " ".join([finding.title, *finding.evidence])
    finding, effective = _check_rt("0,1", 2, [])
    assert finding is None and effective == [0, 1]
    finding, _ = _check_rt("4", 2, [4, 5])
    assert "renumbered from 0" in " ".join([finding.title, *finding.evidence])
    assert "export ASCEND_RT_VISIBLE_DEVICES=0 " in finding.fix[0]
    finding, _ = _check_rt("2,2", 8, [])
    assert "duplicate" in " ".join([finding.title, *finding.evidence])


def test_helpers():
    assert parse_id_list("0-2,4") == ([0, 1, 2, 4], [])
    assert parse_id_list("a,1") == ([1], ["a"])
    assert docker_flags([7]) == (
        "--device /dev/davinci7 --device /dev/davinci_manager --device /dev/devmm_svm --device /dev/hisi_hdc"
    )
    ident = {"uid": 1001, "gid": 1001, "groups": [1001]}
    assert can_access(ident, 1000, 1000, 0o660) is False
    assert can_access(dict(ident, groups=[1001, 1000]), 1000, 1000, 0o660) is True
    assert can_access(ident, 1001, 1000, 0o600) is True
    assert can_access({"uid": 0}, 1000, 1000, 0o600) is True
    assert can_access(ident, 1000, 1000, 0o666) is True
    assert can_access({}, 1000, 1000, 0o660) is None
