"""Every machine option a command accepts changes what it does (issue 11): one test per
command (check, devices, collect, triage) and option (--root --python --user --env-file
--no-commands --from --json), each comparing a run with the option to one without.  All
run in-process through ``npudoctor.cli.run``; the last tests show that output, colour and
width come from the injected Environment."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict

import pytest
import tomllib
from clirun import Result, npudoctor
from scenario_runner import environment, prepare

HERE = Path(__file__).resolve().parent
SCENARIOS = HERE / "scenarios"
VIS_LOG = HERE / "fixtures" / "error_torch_npu_207004_ASCEND_RT_VISIBLE_DEVICES-out-of-range.txt"


class Machine:
    """A prepared scenario: ``run(command, *args)`` adds ``--root`` and its environment."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.root = path / "root"
        self.env = environment(path, tomllib.loads((path / "scenario.toml").read_text()))

    def run(self, *args: Any, root: bool = True, **kw: Any) -> Result:
        extra = ["--root", str(self.root)] if root else []
        return npudoctor(*args, *extra, env=self.env, **kw)

    def json(self, *args: Any, **kw: Any) -> Dict[str, Any]:
        result = self.run(*args, "--json", **kw)
        assert result.returncode in (0, 1), result.stderr
        return json.loads(result.stdout)


@pytest.fixture(scope="module")
def dev8(tmp_path_factory):
    """An 8-chip 910B3 host with a working npu-smi."""
    return Machine(prepare(SCENARIOS / "dev-8npu-910b3-healthy", tmp_path_factory.mktemp("dev8")))


@pytest.fixture(scope="module")
def k17(tmp_path_factory):
    """Device nodes HwHiAiUser:HwHiAiUser 0660; alice (1001) is not in the group."""
    return Machine(prepare(SCENARIOS / "k17-user-not-in-device-group", tmp_path_factory.mktemp("k17")))


@pytest.fixture(scope="module")
def k13(tmp_path_factory):
    """A 310P3 host with vllm-ascend in /usr/local, plus an empty venv /opt/venv."""
    machine = Machine(prepare(SCENARIOS / "k13-310p-duo-vllm-ascend", tmp_path_factory.mktemp("k13")))
    venv = machine.root / "opt" / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    (venv / "lib" / "python3.10" / "site-packages").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.10.12\n")
    return machine


VENV_PYTHON = "/opt/venv/bin/python"


@pytest.fixture(scope="module")
def vis_env_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("envfile") / "workload.env"
    path.write_text("ASCEND_RT_VISIBLE_DEVICES=9\n")
    return path


@pytest.fixture(scope="module")
def dev8_snapshot(dev8, tmp_path_factory):
    path = tmp_path_factory.mktemp("snap") / "dev8.json"
    result = dev8.run("collect", "-o", str(path))
    assert result.returncode == 0, result.stderr
    return path


def _codes(doc: Dict[str, Any]) -> set:
    return {f["code"] for f in doc["findings"]}


def _nodes(devices: Dict[str, Any]) -> list:
    """The device nodes present in the root (npu-smi comes from PATH, not the root)."""
    return [n["path"] for n in devices.get("nodes") or [] if n.get("exists")]


def _empty_root(tmp_path: Path) -> Path:
    root = tmp_path / "empty"
    root.mkdir()
    return root


# ------------------------------------------------------------------------------ check
def test_check_root_probes_that_tree(dev8, tmp_path):
    with_root = dev8.json("check")
    empty = npudoctor("check", "--root", _empty_root(tmp_path), "--json", env=dev8.env)
    assert "/dev/davinci7" in _nodes(with_root["facts"]["devices"])
    assert _nodes(json.loads(empty.stdout)["facts"]["devices"]) == []


def test_check_python_judges_that_interpreter(k13):
    assert "DEV040" in _codes(k13.json("check"))
    doc = k13.json("check", "--python", VENV_PYTHON)
    assert doc["facts"]["python"]["prefix"] == "/opt/venv" and "DEV040" not in _codes(doc)


def test_check_user_judges_that_account(k17):
    assert "DEV021" not in _codes(k17.json("check"))
    assert "DEV021" in _codes(k17.json("check", "--user", "alice"))


def test_check_env_file_judges_that_environment(dev8, vis_env_file):
    assert "DEV030" not in _codes(dev8.json("check"))
    doc = dev8.json("check", "--env-file", str(vis_env_file))
    assert doc["facts"]["devices"]["visibility"]["ASCEND_RT_VISIBLE_DEVICES"] == "9" and "DEV030" in _codes(doc)


def test_check_no_commands_runs_no_npu_smi(dev8):
    assert dev8.json("check")["facts"]["devices"]["npu_smi"]["commands"]
    smi = dev8.json("check", "--no-commands")["facts"]["devices"]["npu_smi"]
    assert smi["commands"] == [] and smi["cause"] == "disabled"


def test_check_from_replays_the_snapshot(dev8, dev8_snapshot):
    doc = json.loads(npudoctor("check", "--from", dev8_snapshot, "--json", env={"PATH": "/usr/bin:/bin"}).stdout)
    assert doc["target"]["mode"] == "from" and len(doc["facts"]["devices"]["chips"]) == 8


def test_check_json_prints_the_contract(dev8):
    text, doc = dev8.run("check"), dev8.run("check", "--json")
    assert text.stdout.startswith("npudoctor ") and json.loads(doc.stdout)["schema_version"] == 1


# ---------------------------------------------------------------------------- devices
def test_devices_root_probes_that_tree(dev8, tmp_path):
    assert "/dev/davinci7" in _nodes(dev8.json("devices")["devices"])
    empty = npudoctor("devices", "--root", _empty_root(tmp_path), "--json", env=dev8.env)
    assert _nodes(json.loads(empty.stdout)["devices"]) == []


def test_devices_python_judges_that_interpreters_packages(k13):
    assert "DEV040" in _codes(k13.json("devices"))
    assert "DEV040" not in _codes(k13.json("devices", "--python", VENV_PYTHON))


def test_devices_user_judges_that_accounts_access(k17):
    assert k17.run("devices").returncode == 0
    result = k17.run("devices", "--user", "alice", "--json")
    assert result.returncode == 1 and "DEV021" in _codes(json.loads(result.stdout))


def test_devices_env_file_judges_its_visibility_variables(dev8, vis_env_file):
    assert dev8.run("devices").returncode == 0
    result = dev8.run("devices", "--env-file", str(vis_env_file))
    assert result.returncode == 1 and "ASCEND_RT_VISIBLE_DEVICES=9" in result.stdout and "DEV030" in result.stdout


def test_devices_no_commands_runs_no_npu_smi(dev8):
    assert "910B3" in dev8.run("devices").stdout
    result = dev8.run("devices", "--no-commands")
    assert "no chip table: commands disabled (--no-commands)" in result.stdout and "910B3" not in result.stdout


def test_devices_from_replays_the_snapshot(dev8_snapshot):
    result = npudoctor("devices", "--from", dev8_snapshot, env={"PATH": "/usr/bin:/bin"})
    assert result.stdout.startswith(f"NPU devices · npu-smi 23.0.7 · snapshot {dev8_snapshot}")


def test_devices_json(dev8):
    assert "chips" in json.loads(dev8.run("devices", "--json").stdout)["devices"]
    assert dev8.run("devices").stdout.startswith("NPU devices")


# ---------------------------------------------------------------------------- collect
def test_collect_root_records_that_tree(dev8, tmp_path):
    assert dev8.json("collect")["target"]["mode"] == "root"
    assert "/dev/davinci7" in _nodes(dev8.json("collect")["facts"]["devices"])
    empty = json.loads(npudoctor("collect", "--root", _empty_root(tmp_path), "--json", env=dev8.env).stdout)
    assert _nodes(empty["facts"]["devices"]) == []


def test_collect_python_records_that_interpreter(k13):
    assert k13.json("collect")["facts"]["python"]["prefix"] != "/opt/venv"
    assert k13.json("collect", "--python", VENV_PYTHON)["facts"]["python"]["prefix"] == "/opt/venv"


def test_collect_user_records_that_identity(k17):
    assert k17.json("collect", "--no-redact")["facts"]["host"]["identity"]["uid"] == 0
    identity = k17.json("collect", "--no-redact", "--user", "alice")["facts"]["host"]["identity"]
    assert identity["uid"] == 1001 and identity["name"] == "alice"


def test_collect_env_file_records_that_environment(dev8, vis_env_file):
    assert dev8.json("collect")["facts"]["devices"]["visibility"]["ASCEND_RT_VISIBLE_DEVICES"] is None
    doc = dev8.json("collect", "--env-file", str(vis_env_file))
    assert doc["facts"]["devices"]["visibility"]["ASCEND_RT_VISIBLE_DEVICES"] == "9"


def test_collect_no_commands_runs_no_npu_smi(dev8):
    assert dev8.json("collect")["facts"]["devices"]["npu_smi"]["commands"]
    assert dev8.json("collect", "--no-commands")["facts"]["devices"]["npu_smi"]["commands"] == []


def test_collect_from_rewrites_a_snapshot_redacted(dev8, tmp_path):
    raw = tmp_path / "raw.json"
    assert dev8.run("collect", "--no-redact", "-o", str(raw)).returncode == 0
    assert json.loads(raw.read_text())["node"] == "dev-8npu-910b3-healthy"
    result = npudoctor("collect", "--from", raw, "--json", env={"PATH": "/usr/bin:/bin"})
    doc = json.loads(result.stdout)
    assert result.returncode == 0 and doc["node"].startswith("node-") and doc["target"]["mode"] == "root"
    assert len(doc["facts"]["devices"]["chips"]) == 8


def test_collect_json_writes_the_snapshot_to_stdout(dev8, tmp_path):
    out = tmp_path / "snap.json"
    to_file = dev8.run("collect", "-o", str(out))
    to_stdout = dev8.run("collect", "--json")
    assert to_file.stdout == "" and "snapshot written to" in to_file.stderr
    assert json.loads(to_stdout.stdout)["schema_version"] == json.loads(out.read_text())["schema_version"]
    both = dev8.run("collect", "--json", "-o", str(out))
    assert both.returncode == 2 and "--json writes the snapshot to standard output" in both.stderr


# ----------------------------------------------------------------------------- triage
def _causes(doc: Dict[str, Any], entry: str) -> Dict[str, str]:
    group = next(g for g in doc["known"] if g["id"] == entry)
    return {c["kind"]: c["status"] for c in group["causes"]}


def test_triage_root_takes_that_trees_facts(dev8):
    assert dev8.json("triage", str(VIS_LOG))["facts_from"] == "root"
    plain = npudoctor("triage", VIS_LOG, "--json", "--no-facts", env=dev8.env)
    assert json.loads(plain.stdout)["facts_from"] == "none"


def test_triage_python_takes_that_interpreters_facts(k13):
    assert k13.json("triage", str(VIS_LOG), root=False)["facts_from"] == "live"
    live = npudoctor("triage", VIS_LOG, "--python", k13.root / "opt/venv/bin/python", "--json", env=k13.env)
    assert json.loads(live.stdout)["facts_from"] == "python"


@pytest.fixture(scope="module")
def no_device_log(tmp_path_factory) -> str:
    """The 207004 lines of VIS_LOG without its EE1001 lines: those state the cause, which
    then decides the 207004 whatever the facts say, and these tests are about the facts."""
    head = VIS_LOG.read_text(encoding="utf-8").splitlines(keepends=True)[:3]
    assert "207004" in head[0] and not any("ASCEND_RT_VISIBLE_DEVICES" in line for line in head)
    path = tmp_path_factory.mktemp("log") / "207004.log"
    path.write_text("".join(head), encoding="utf-8")
    return str(path)


def test_triage_user_judges_that_accounts_access(k17, no_device_log):
    assert _causes(k17.json("triage", no_device_log), "acl-207004-device-unavailable")["K17"] == "no_sign"
    doc = k17.json("triage", no_device_log, "--user", "alice")
    assert _causes(doc, "acl-207004-device-unavailable")["K17"] == "cause"


def test_triage_env_file_judges_that_environment(dev8, vis_env_file, no_device_log):
    assert _causes(dev8.json("triage", no_device_log), "acl-207004-device-unavailable")["K18"] == "no_sign"
    doc = dev8.json("triage", no_device_log, "--env-file", str(vis_env_file))
    group = next(g for g in doc["known"] if g["id"] == "acl-207004-device-unavailable")
    assert _causes(doc, "acl-207004-device-unavailable")["K18"] == "cause"
    assert "ASCEND_RT_VISIBLE_DEVICES='9' is invalid" in group["conclusion"]  # DEV030's own words


def test_triage_no_commands_runs_no_npu_smi(dev8, no_device_log):
    assert _causes(dev8.json("triage", no_device_log), "acl-207004-device-unavailable")["K15"] == "no_sign"
    doc = dev8.json("triage", no_device_log, "--no-commands")
    assert _causes(doc, "acl-207004-device-unavailable")["K15"] == "unknown"


def test_triage_from_takes_the_snapshots_facts(dev8_snapshot):
    result = npudoctor("triage", VIS_LOG, "--from", dev8_snapshot, "--json", env={"PATH": "/usr/bin:/bin"})
    doc = json.loads(result.stdout)
    assert doc["facts_from"] == "from" and doc["ranked"]


def test_triage_json(dev8):
    assert dev8.run("triage", str(VIS_LOG)).stdout.startswith("npudoctor triage: ")
    assert json.loads(dev8.run("triage", str(VIS_LOG), "--json").stdout)["schema_version"] == 1


def test_triage_no_facts_refuses_machine_options(dev8):
    result = dev8.run("triage", str(VIS_LOG), "--no-facts")
    assert result.returncode == 2 and "--no-facts gathers no facts" in result.stderr


# -------------------------------------------------------------- options not combined
@pytest.mark.parametrize("command", ["check", "devices", "collect"])
@pytest.mark.parametrize("option", [("--user", "alice"), ("--env-file", "x.env"), ("--no-commands",)])
def test_from_refuses_options_that_would_probe(command, option, dev8_snapshot):
    result = npudoctor(command, "--from", dev8_snapshot, *option, env={"PATH": "/usr/bin:/bin"})
    assert result.returncode == 2 and "--from replays a snapshot" in result.stderr


# ------------------------------------------------------------------------ Environment
def test_devices_width_and_colour_come_from_the_environment(dev8):
    wide = dev8.run("devices", tty=True, width=120)
    assert "\x1b[" in wide.stdout and "Bus-Id" in wide.stdout
    narrow = npudoctor("devices", "--root", dev8.root, env=dict(dev8.env, NO_COLOR="1"), tty=True, width=80)
    assert "\x1b[" not in narrow.stdout and "Bus-Id" not in narrow.stdout and "910B3" in narrow.stdout


def test_check_colour_follows_force_color(dev8):
    assert "\x1b[" not in dev8.run("check").stdout
    forced = npudoctor("check", "--root", dev8.root, env=dict(dev8.env, FORCE_COLOR="1"))
    assert "\x1b[" in forced.stdout


def test_a_dumb_terminal_gets_no_colour(dev8):
    assert "\x1b[" in dev8.run("check", tty=True).stdout
    dumb = npudoctor("check", "--root", dev8.root, env=dict(dev8.env, TERM="dumb"), tty=True)
    assert "\x1b[" not in dumb.stdout and "Summary" in dumb.stdout
    assert "\x1b[" not in npudoctor("devices", "--root", dev8.root, env=dict(dev8.env, TERM="dumb"), tty=True).stdout
    forced = npudoctor("check", "--root", dev8.root, env=dict(dev8.env, TERM="dumb", FORCE_COLOR="1"), tty=True)
    assert "\x1b[" in forced.stdout  # asked for explicitly


def test_unexpected_exception_is_internal_status_with_a_report_line(monkeypatch):
    import npudoctor.cli.commands.explain as check_module

    def boom(*args: Any, **kw: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(check_module, "run_explain", boom)
    result = npudoctor("explain", "PKG001", env={"PATH": "/usr/bin:/bin"})
    assert result.returncode == 3 and "npudoctor failed: RuntimeError: boom" in result.stderr
    assert "please report" in result.stderr
