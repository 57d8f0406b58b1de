"""Devices probe, rules and `npudoctor devices`, end to end through the CLI on the
device scenarios (tests/scenarios/k1x-*, dev-*), plus focused rule units."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from clirun import npudoctor
from scenario_runner import environment, prepare, run_check

from npudoctor.facts._typed import load
from npudoctor.facts.devices import DevicesFacts
from npudoctor.probes.devices import can_access
from npudoctor.remedies import shell
from npudoctor.remedies.world import docker_flags
from npudoctor.rules._devfacts import parse_id_list, shorten_path_list
from npudoctor.rules.visibility import _check_rt, _visible_evidence

SCENARIOS = Path(__file__).resolve().parent / "scenarios"


def _cli(scenario: Path, *args: str, timeout: float = 60):
    import tomllib

    spec = tomllib.loads((scenario / "scenario.toml").read_text())
    env = environment(scenario, spec)
    env["COLUMNS"] = "120"
    return npudoctor(*args, "--root", str(scenario / "root"), env=env)


def test_hung_npu_smi_does_not_hang_check(tmp_path):
    scenario = prepare(SCENARIOS / "k15-npu-smi-hung", tmp_path)
    start = time.monotonic()
    run = run_check(scenario)
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
    # vllm-ascend 0.9.1 cannot run on 310P (its v0.9.1rc1 release notes: 310P is NOT in v0.9.1): an error
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    chips = data["devices"]["chips"]
    assert [(c["npu_id"], c["chip_id"], c["logic_id"], c["name"]) for c in chips] == [
        (1792, 0, 0, "310P3"),
        (1792, 1, 1, "310P3"),
    ]
    assert [(c["memory_used_mb"], c["memory_total_mb"]) for c in chips] == [(1821, 44280), (1041, 43693)]
    assert data["devices"]["npu_smi"]["version"] == "24.1.rc2"
    (dev040,) = [f for f in data["findings"] if f["code"] == "DEV040"]
    assert dev040["severity"] == "error"
    assert dev040["title"] == "vllm-ascend 0.9.1 does not support 310P3 (family 310P)"


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
    assert npudoctor("collect", "-o", str(snap), "--root", str(scenario / "root"), env=env).returncode == 0
    replay = npudoctor("devices", "--json", "--from", str(snap))
    assert replay.returncode == 1
    assert "DEV002" in {f["code"] for f in json.loads(replay.stdout)["findings"]}


def test_devices_help_documents_exit_codes():
    proc = npudoctor("devices", "--help")
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
    assert shell(docker_flags([7])) == (
        "--device /dev/davinci7 --device /dev/davinci_manager --device /dev/devmm_svm --device /dev/hisi_hdc"
    )
    ident = {"uid": 1001, "gid": 1001, "groups": [1001]}
    assert can_access(ident, 1000, 1000, 0o660) is False
    assert can_access(dict(ident, groups=[1001, 1000]), 1000, 1000, 0o660) is True
    assert can_access(ident, 1001, 1000, 0o600) is True
    assert can_access({"uid": 0}, 1000, 1000, 0o600) is True
    assert can_access(ident, 1000, 1000, 0o666) is True
    assert can_access({}, 1000, 1000, 0o660) is None


def _piped(scenario: Path, *args: str):
    """Run a command with stdout a pipe and no COLUMNS: what `npudoctor devices | cat` sees
    (a real process: the terminal facts come from the process itself)."""
    import tomllib

    env = environment(scenario, tomllib.loads((scenario / "scenario.toml").read_text()))
    env.pop("COLUMNS", None)
    return subprocess.run(
        [sys.executable, "-m", "npudoctor", *args, "--root", str(scenario / "root")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_e2e_devices_piped_is_not_wrapped_at_80_columns(tmp_path):
    scenario = prepare(SCENARIOS / "dev-8npu-910b3-healthy", tmp_path)
    proc = _piped(scenario, "devices")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"NPU devices · npu-smi 23.0.7 · root {scenario / 'root'}"
    assert lines[1].split() == [
        "NPU",
        "Chip",
        "Logic",
        "Name",
        "Health",
        "Power",
        "Temp",
        "AICore",
        "HBM",
        "MB",
        "Bus-Id",
    ]
    assert lines[3].split() == [
        "0",
        "0",
        "0",
        "910B3",
        "[910B]",
        "OK",
        "102.8W",
        "55°C",
        "0%",
        "3338/65536",
        "(5%)",
        "0000:C1:00.0",
    ]
    assert "  CPU affinity: NPU 0,1 → 144-167; NPU 2,3 → 96-119; NPU 4,5 → 0-23; NPU 6,7 → 48-71" in lines
    # no `<command>` placeholder in a fix line (remedies: a rendered command is pasteable)
    assert (
        "      → Bind each rank's data-loader workers near its NPU, e.g. start the rank of NPU 0 under `taskset -c 144-167`"
        in lines
    )


def test_devices_piped_300i_duo_findings_on_one_line(tmp_path):
    scenario = prepare(SCENARIOS / "k13-310p-duo-vllm-ascend", tmp_path)
    lines = _piped(scenario, "devices").stdout.splitlines()
    assert lines[0] == f"NPU devices · npu-smi 24.1.rc2 · root {scenario / 'root'}"
    assert [ln.split()[:4] for ln in lines[3:5]] == [["1792", "0", "0", "310P3"], ["1792", "1", "1", "310P3"]]
    assert "  DEV040 error: vllm-ascend 0.9.1 does not support 310P3 (family 310P)" in lines
    assert "      → Use float16: torch_dtype=torch.float16 / --dtype float16 / fp16: true, bf16: false" in lines
    assert "Product line: 310P3 → Atlas inference products" in lines
    assert all(ln.startswith(("NPU", " ", "─", "1792", "Findings", "Product line: ")) for ln in lines), lines


def test_npu_smi_not_found_names_the_path_searched(tmp_path):
    scenario = prepare(SCENARIOS / "dev-npu-smi-not-found-host", tmp_path)
    (f,) = [f for f in run_check(scenario).doc["findings"] if f["code"] == "DEV003"]
    assert f["evidence"] == ["npu-smi: command not found on PATH", f"PATH searched: {scenario / 'bin'}:/usr/bin:/bin"]


def test_container_tools_missing_says_npu_smi_once(tmp_path):
    scenario = prepare(SCENARIOS / "dev-npu-smi-missing-in-container", tmp_path)
    (f,) = [f for f in run_check(scenario).doc["findings"] if f["code"] == "CTR003"]
    assert f["evidence"] == [
        "/usr/local/bin/npu-smi: not present",
        "/usr/local/dcmi: not present",
        "npu-smi: command not found on PATH",
        f"PATH searched: {scenario / 'bin'}:/usr/bin:/bin",
    ]


def test_device_id_evidence_adds_facts(tmp_path):
    scenario = prepare(SCENARIOS / "k18-device-id-out-of-range", tmp_path)
    (f,) = [f for f in run_check(scenario).doc["findings"] if f["code"] == "DEV033"]
    assert f["title"] == "ASCEND_DEVICE_ID=2 but ASCEND_RT_VISIBLE_DEVICES give only 2 device(s) (indices 0..1)"
    assert f["evidence"] == [
        "ASCEND_DEVICE_ID=2",
        "ASCEND_RT_VISIBLE_DEVICES=4,5: CANN uses 2 device(s), logical→physical 0→4, 1→5",
        "npu-smi lists 8 chip(s) (NPU ids 0-7)",
    ]
    assert f["title"] not in f["evidence"]


def test_visible_evidence_without_npu_smi():
    dev = load(DevicesFacts, {"chips": [], "nodes": []})[0]
    assert _visible_evidence(dev, None, None, [4, 5]) == ["device nodes present: /dev/davinci4, /dev/davinci5"]
    assert _visible_evidence(dev, "x", [], []) == [
        "ASCEND_RT_VISIBLE_DEVICES=x: CANN takes no usable device id from it",
        "no NPU visible: npu-smi lists no chip and there is no /dev/davinciN node",
    ]
    chips = [{"npu_id": i, "chip_id": 0} for i in (0, 1, 2, 5)]
    assert _visible_evidence(load(DevicesFacts, {"chips": chips})[0], None, None, []) == [
        "npu-smi lists 4 chip(s) (NPU ids 0-2, 5)"
    ]


def test_shorten_path_list():
    assert shorten_path_list(["/usr/bin", "/bin"]) == "/usr/bin:/bin"
    long = [f"/opt/tool{i:02d}/bin" for i in range(30)]
    text = shorten_path_list(long, limit=60)
    assert text == "/opt/tool00/bin:/opt/tool01/bin:/opt/tool02/bin … (+27 more)"
    assert shorten_path_list(["/" + "x" * 300, "/bin"], limit=60) == "/" + "x" * 300 + " … (+1 more)"


HOST_TREE = SCENARIOS / "case23-toolkit-sourced-never-kernels-missing"


def test_host_tree_without_dev_leaves_the_device_nodes_unjudged(tmp_path):
    """A --root tree of a host's files captured without /dev (npu-smi replays 8 chips): the
    nodes are unknown, not missing -- no DEV020, and the report says why they were not judged."""
    scenario = prepare(HOST_TREE, tmp_path)
    assert not (scenario / "root/dev").exists()
    run = run_check(scenario)
    devices = run.doc["facts"]["devices"]
    assert devices["nodes_error"] == "device nodes not judged: the tree holds no /dev"
    assert devices["nodes"] == []
    assert len(devices["chips"]) == 8
    assert "DEV020" not in [f["code"] for f in run.doc["findings"]]
    env = dict(environment(scenario, run.spec), COLUMNS="200")
    text = npudoctor("check", "--root", str(scenario / "root"), env=env).stdout
    assert (
        "  ✓ NPU devices: 8 × 910B3 (Atlas A2 training products / Atlas A2 inference products); "
        "device nodes not judged: the tree holds no /dev"
    ) in text.splitlines()


def test_host_tree_with_dev_but_no_npu_nodes_still_gets_dev020(tmp_path):
    """The same host with a /dev that holds no NPU node: npu-smi sees 8 chips, so the
    nodes are missing (the driver is not loaded), as before."""
    scenario = prepare(HOST_TREE, tmp_path)
    (scenario / "root/dev").mkdir()
    (scenario / "root/dev/null").write_text("")  # a plain file: not an NPU node
    run = run_check(scenario)
    devices = run.doc["facts"]["devices"]
    assert "nodes_error" not in devices
    assert [(n["path"], n["exists"]) for n in devices["nodes"]] == [
        ("/dev/davinci_manager", False),
        ("/dev/devmm_svm", False),
        ("/dev/hisi_hdc", False),
    ]
    (f,) = [f for f in run.doc["findings"] if f["code"] == "DEV020"]
    assert f["severity"] == "error"
    assert f["title"] == "NPU device nodes missing: /dev/davinci_manager, /dev/devmm_svm, /dev/hisi_hdc"
    assert f["evidence"] == [
        "npu-smi lists 8 chip(s) but no /dev/davinciN node exists",
        "missing: /dev/davinci_manager, /dev/devmm_svm, /dev/hisi_hdc",
    ]


def test_a_critical_chip_in_a_container_is_reset_on_the_host(tmp_path):
    """health-chip-critical is a container: resetting NPU 3 and reading the kernel log are
    the node admin's, on the host, not commands to run in this container."""
    scenario = prepare(SCENARIOS / "health-chip-critical", tmp_path)
    (f,) = [f for f in run_check(scenario).doc["findings"] if f["code"] == "DEV010"]
    assert f["severity"] == "error" and f["title"] == "NPU 3 health is Critical"
    assert f["fix"][1] == (
        "On the host (the node's admin): stop the jobs on NPU 3, collect `dmesg` and /var/log/npu/, "
        "then reset the chip (npu-smi set -t reset -i 3 -c 0) or reboot the node"
    )
    assert not any("set -t reset" in str(line) and str(line).startswith("npu-smi") for line in f["fix"])
