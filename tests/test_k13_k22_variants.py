"""Variants of the K13/K16/K18 cases (33, 41, 45, 46) that held-back cases of the same kind
may take: other chips and torch_npu builds, an empty or Ray-written visible-device variable,
a device cgroup read from a plain-file root.  End to end through `check` on copies of the
case scenarios, plus focused units of the helpers they rely on."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Dict, List

import pytest
from scenario_runner import prepare, run_check

from npudoctor.knowledge.matrix import load_matrix
from npudoctor.rules.chips import soc_known_to_torch_npu
from npudoctor.rules.container import _only_runc_defaults
from npudoctor.triage import load_kb, triage_text

SCENARIOS = Path(__file__).resolve().parent / "scenarios"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _findings(run, code: str) -> List[Dict]:
    return [f for f in run.doc["findings"] if f["code"] == code]


def _set_env(scenario: Path, **pairs: str) -> None:
    """Rewrite the scenario's [env] table (values as TOML basic strings)."""
    text = (scenario / "scenario.toml").read_text(encoding="utf-8")
    head, _, rest = text.partition("[env]\n")
    body, sep, tail = rest.partition("\n[expect]")
    lines = [ln for ln in body.splitlines() if ln.strip() and ln.split("=")[0].strip() not in pairs]
    lines += [f'{k} = "{v}"' for k, v in pairs.items() if v is not None]
    (scenario / "scenario.toml").write_text(head + "[env]\n" + "\n".join(lines) + "\n" + sep + tail, encoding="utf-8")


def _replace_torch_npu(scenario: Path, version: str) -> None:
    site = scenario / "root/usr/local/lib/python3.10/dist-packages"
    for d in site.glob("torch_npu-*.dist-info"):
        shutil.rmtree(d)
    d = site / f"torch_npu-{version}.dist-info"
    d.mkdir()
    (d / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: torch_npu\nVersion: {version}\nRequires-Dist: torch ==2.1.0\n\n"
    )


# --------------------------------------------------------------------------- K13
@pytest.mark.parametrize(
    "soc, version, known",
    [
        ("Ascend310B4", "2.1.0rc1", False),  # case 33: 5.0.RC3 line
        ("Ascend310B4", "2.1.0", False),  # 5.0.0 line
        ("Ascend310B4", "2.1.0.post3", True),  # 6.0.rc1 line adds it
        ("Ascend310B4", "1.11.0.post8", False),
        ("Ascend310B4", "2.5.1.dev20250218", True),  # every tabled 2.5.1 build is newer
        ("Ascend910B4-1", "2.1.0.post4", False),  # added in 6.0.rc2
        ("Ascend910B4-1", "2.1.0.post6", True),
        ("Ascend310P5", "2.1.0.post10", False),  # added in 7.0.0
        ("Ascend310P5", "2.1.0.post12", True),
        ("Ascend310B1", "2.1.0", None),  # listed from the start: no recorded first line
        ("Ascend310B4", "not-a-version", None),
    ],
)
def test_soc_known_to_torch_npu(soc, version, known):
    assert soc_known_to_torch_npu(load_matrix(), soc, version) is known


def test_310b4_with_a_torch_npu_that_knows_it_is_an_edge_warning(tmp_path):
    scenario = prepare(SCENARIOS / "case33-310b4-board-torch-npu-2.1.0rc1", tmp_path)
    _replace_torch_npu(scenario, "2.1.0.post10")
    run = run_check(scenario)
    dev040 = _findings(run, "DEV040")
    assert [f["severity"] for f in dev040] == ["warning"], run.doc["findings"]
    assert "edge SoC" in dev040[0]["title"] and "Unsupported SOC version" in dev040[0]["title"]
    assert any("ATC --soc_version=Ascend310B4" in x for x in dev040[0]["fix"])


def test_310b1_board_npu_smi_layout_gets_the_edge_warning(tmp_path):
    scenario = prepare(SCENARIOS / "case33-310b4-board-torch-npu-2.1.0rc1", tmp_path)
    capture = "npu-smi-info_310B1_23.0.rc3.txt"
    shutil.copyfile(FIXTURES / capture, scenario / "captures" / capture)
    script = scenario / "bin" / "npu-smi"
    script.write_text(script.read_text().replace("npu-smi-info_310B4_23.0.rc3_orangepi_narrow.txt", capture))
    run = run_check(scenario)
    assert [c["name"] for c in run.doc["facts"]["devices"]["chips"]] == ["310B1"]
    dev040 = _findings(run, "DEV040")
    assert [f["severity"] for f in dev040] == ["warning"] and "310B1" in dev040[0]["title"]


def test_torch_npu_without_310b_adds_no_edge_warning(tmp_path):
    scenario = prepare(SCENARIOS / "case46-ray-worker-empty-rt-visible-devices", tmp_path)
    run = run_check(scenario)
    assert _findings(run, "DEV040") == []


# --------------------------------------------------------------------------- K16
def test_runc_default_list_allows_no_npu_node():
    defaults = (FIXTURES.parent / "builders" / "make_k13_k22_scenarios.py").read_text()
    block = defaults.split('RUNC_DEFAULT_DEVICES_LIST = """', 1)[1].split('"""', 1)[0]
    assert _only_runc_defaults(block.splitlines())
    assert not _only_runc_defaults(block.splitlines() + ["c 236:0 rwm"])
    assert not _only_runc_defaults(["a *:* rwm"])
    assert _only_runc_defaults(["c 236:0 r"])  # read-only is no access for the NPU


def test_device_cgroup_with_npu_rules_is_quiet(tmp_path):
    scenario = prepare(SCENARIOS / "case41-k8s-cpu-manager-static-device-cgroup", tmp_path)
    dl = scenario / "root/sys/fs/cgroup/devices/devices.list"
    dl.write_text(dl.read_text() + "c 236:0 rwm\nc 237:0 rwm\nc 238:0 rwm\nc 239:0 rwm\n")
    run = run_check(scenario)
    assert _findings(run, "CTR005") == []


def test_device_cgroup_outside_kubernetes_names_no_cpu_manager(tmp_path):
    scenario = prepare(SCENARIOS / "case41-k8s-cpu-manager-static-device-cgroup", tmp_path)
    shutil.rmtree(scenario / "root/var/run/secrets")
    (scenario / "root/proc/1/cgroup").write_text("11:devices:/docker/5f3c0e1d2b4a\n")
    _set_env(scenario, KUBERNETES_SERVICE_HOST=None)
    run = run_check(scenario)
    ctr005 = _findings(run, "CTR005")
    assert len(ctr005) == 1 and ctr005[0]["severity"] == "error"
    assert not any("kubelet" in e for e in ctr005[0]["evidence"])
    assert any("/dev/davinci3" in e for e in ctr005[0]["evidence"])


# --------------------------------------------------------------------------- K18
def test_empty_rt_visible_without_ray_says_no_ray(tmp_path):
    scenario = prepare(SCENARIOS / "case46-ray-worker-empty-rt-visible-devices", tmp_path)
    _set_env(scenario, RAY_ADDRESS=None)
    run = run_check(scenario)
    dev030 = _findings(run, "DEV030")
    assert len(dev030) == 1 and dev030[0]["severity"] == "error"
    text = "\n".join([dev030[0]["title"]] + dev030[0]["evidence"] + dev030[0]["fix"])
    assert "empty" in dev030[0]["title"] and "Ray" not in text
    # two command remedies (issue 19: a command inside a comment is not pasteable as such)
    assert dev030[0]["fix"][:2] == [
        "unset ASCEND_RT_VISIBLE_DEVICES",
        "or: export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7  # 0-based ids of the visible devices",
    ]


def test_keeping_ray_from_rewriting_the_variable_is_an_export(tmp_path):
    """The Ray worker: the steps added for Ray keep their remedies, and the export that keeps
    Ray away is a command (``$`` line), its condition said in the comment."""
    run = run_check(prepare(SCENARIOS / "case46-ray-worker-empty-rt-visible-devices", tmp_path))
    (dev030,) = _findings(run, "DEV030")
    assert [r["shell"] for r in dev030["remedies"]] == dev030["fix"]
    assert [r["kind"] for r in dev030["remedies"]][-2:] == ["prose", "export"]
    assert dev030["remedies"][-1]["command"] == "export RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES=1"
    assert dev030["remedies"][-1]["note"].startswith("then set ASCEND_RT_VISIBLE_DEVICES yourself")


def test_ray_with_noset_blames_the_launcher(tmp_path):
    scenario = prepare(SCENARIOS / "case46-ray-worker-empty-rt-visible-devices", tmp_path)
    _set_env(scenario, ASCEND_RT_VISIBLE_DEVICES="1,0", RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES="1")
    run = run_check(scenario)
    dev030 = _findings(run, "DEV030")
    assert len(dev030) == 1 and "ascending" in "\n".join(dev030[0]["evidence"] + [dev030[0]["title"]])
    assert any("value comes from your launcher" in e for e in dev030[0]["evidence"])
    assert not any("resources=" in x for x in dev030[0]["fix"])


def test_empty_rt_visible_on_a_plain_machine_is_calm(tmp_path):
    scenario = prepare(SCENARIOS / "dev-plain-machine-calm", tmp_path)
    _set_env(scenario, ASCEND_RT_VISIBLE_DEVICES="")
    run = run_check(scenario)
    assert _findings(run, "DEV030") == []


def test_non_first_cards_ascending_in_docker_is_silent(tmp_path):
    """Issue 15: ASCEND_VISIBLE_DEVICES naming exactly the mapped nodes did its job -- no finding
    at any severity (the note this test asserted before had no documented failure behind it:
    HAMi#1894 is a pod with 4,3, which stays a warning in case45)."""
    scenario = prepare(SCENARIOS / "case45-hami-non-first-npus-no-rt-visible", tmp_path)
    (scenario / "root/proc/1/cgroup").write_text("11:devices:/docker/5f3c0e1d2b4a\n")
    _set_env(scenario, KUBERNETES_SERVICE_HOST=None, ASCEND_VISIBLE_DEVICES="3,4")
    run = run_check(scenario)
    assert _findings(run, "DEV031") == []


def test_non_first_cards_descending_in_docker_is_a_warning(tmp_path):
    scenario = prepare(SCENARIOS / "case45-hami-non-first-npus-no-rt-visible", tmp_path)
    (scenario / "root/proc/1/cgroup").write_text("11:devices:/docker/5f3c0e1d2b4a\n")
    _set_env(scenario, KUBERNETES_SERVICE_HOST=None, ASCEND_VISIBLE_DEVICES="4,3")
    run = run_check(scenario)
    dev031 = _findings(run, "DEV031")
    assert [f["severity"] for f in dev031] == ["warning"]
    assert dev031[0]["fix"] == [
        "export ASCEND_RT_VISIBLE_DEVICES=0,1  # logical ids of the 2 device(s) in this container"
    ]


def test_non_first_cards_with_rt_set_is_quiet(tmp_path):
    scenario = prepare(SCENARIOS / "case45-hami-non-first-npus-no-rt-visible", tmp_path)
    _set_env(scenario, ASCEND_RT_VISIBLE_DEVICES="0,1")
    run = run_check(scenario)
    assert _findings(run, "DEV031") == [] and _findings(run, "DEV030") == []


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: torch_npu detected, but NPU device is not available or visible.",
        "RuntimeError: ASCEND_RT_VISIBLE_DEVICES is set to emptystring, which means Ascend NPU support is disabled.",
        "torch.npu.is_available(): False",
    ],
)
def test_kb_names_npu_not_available(line):
    assert [e.id for e, _ in load_kb().classify(line)][:1] == ["npu-not-available"]


def test_triage_empty_rt_visible_from_facts_alone():
    facts = {
        "devices": {"visibility": {"ASCEND_RT_VISIBLE_DEVICES": ""}, "visible_count": 8, "ray": ["RAY_ADDRESS"]},
    }
    result = triage_text("RuntimeError: torch_npu detected, but NPU device is not available or visible.\n", facts)
    group = result["known"][0]
    top = group["causes"][0]
    assert group["id"] == "npu-not-available" and top["kind"] == "K18" and top["status"] == "cause"
    assert any("started by Ray (RAY_ADDRESS set)" in e for e in top["evidence"])
    assert result["verdict"].startswith("ASCEND_RT_VISIBLE_DEVICES is wrong here: ")


def test_triage_root_without_passwd_entry_is_not_the_cause():
    facts = {"host": {"identity": {"uid": 0, "has_passwd_entry": False}}, "devices": {"nodes": []}}
    result = triage_text("HcclGetRootInfo(&hcclID), error code is 19\n", facts)
    assert result["known"][0]["causes"][0]["status"] != "cause"


# --------------------------------------------------------------------------- K19
@pytest.mark.parametrize(
    "env, expected",
    [
        ({"WORLD_SIZE": "16", "HCCL_CONNECT_TIMEOUT": None}, "HCCL_CONNECT_TIMEOUT unset"),  # 16 ranks, 8 NPUs here
        ({"WORLD_SIZE": "8", "HCCL_CONNECT_TIMEOUT": None}, None),  # one node, default kept
        ({"WORLD_SIZE": "8", "HCCL_CONNECT_TIMEOUT": "60"}, "below HCCL's default 120 s"),
        ({"WORLD_SIZE": "8", "HCCL_CONNECT_TIMEOUT": "120"}, None),
    ],
)
def test_connect_timeout_judged_by_ranks_per_node(tmp_path, env, expected):
    scenario = prepare(SCENARIOS / "k19-connect-timeout-short", tmp_path)
    _set_env(scenario, NNODES=None, **env)
    run = run_check(scenario)
    hccl013 = _findings(run, "HCCL013")
    if expected is None:
        assert hccl013 == []
    else:
        assert len(hccl013) == 1 and expected in hccl013[0]["title"]
        assert hccl013[0]["fix"] == ["export HCCL_CONNECT_TIMEOUT=900  # the same value on every rank"]
