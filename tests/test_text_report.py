"""The text report (issue 19): a summary line per area with what was found, one finding
per root cause with its follow-on symptoms folded under it, fixes without repetition."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from npudoctor.findings import Finding

sys.path.insert(0, str(Path(__file__).parent))

from clirun import npudoctor  # noqa: E402
from scenario_runner import environment  # noqa: E402

SCENARIOS = Path(__file__).parent / "scenarios"
EXAMPLES = Path(__file__).parent.parent / "examples"


def check_text(scenario: Path, *extra: str, columns: int = 80) -> str:
    env = dict(environment(scenario, {"env": {"HOME": "/root"}}), COLUMNS=str(columns))
    result = npudoctor("check", "--root", str(scenario / "root"), *extra, env=env, cwd=str(scenario), width=columns)
    return str(result.stdout)


def check_json(scenario: Path) -> dict:
    env = environment(scenario, {"env": {"HOME": "/root"}})
    result = npudoctor("check", "--root", str(scenario / "root"), "--json", env=env, cwd=str(scenario))
    return dict(json.loads(result.stdout))


def test_container_without_cann_and_driver_mounts_one_recipe_per_cause():
    """The issue's repro: CANN missing in a container run without the driver mounts.  The
    driver-not-mounted problem is reported once (CTR002, the vllm-ascend docker run
    mounts); DRV001 says the same and is folded under it, not a second recipe."""
    scenario = SCENARIOS / "k16-container-no-cann-driver-not-mounted"
    doc = check_json(scenario)
    by_code = {f["code"]: f for f in doc["findings"]}
    assert by_code["DRV001"]["data"]["because"] == "CTR002"
    assert "because" not in by_code["CTR002"]["data"]
    text = check_text(scenario)
    assert text.count("-v /usr/local/Ascend/driver:/usr/local/Ascend/driver") == 0  # DRV001's recipe is folded
    assert text.count("-v /usr/local/Ascend/driver/lib64/:/usr/local/Ascend/driver/lib64/") == 1
    assert "because of this (CTR002), also:\n        ✗ DRV001 The host's NPU driver is not mounted" in text
    # CTR003 (npu-smi, dcmi) and CTR004 (ascend_install.info) are mounted by CTR002's one
    # recreate line and folded under it too: one `docker run` for the one cause (issue 19)
    assert text.count("Recreate the container with:") == 1
    assert "-v /usr/local/dcmi:/usr/local/dcmi -v /etc/ascend_install.info:/etc/ascend_install.info" in text
    assert "3 follow-on finding(s) folded under their cause" in " ".join(text.split())
    assert "…" not in text.split("Findings")[1].split("\n\n")[0].replace("sha256", "")


def test_summary_says_what_was_found():
    text = check_text(EXAMPLES / "healthy-910b3")
    summary = text.split("\n\nFindings")[0]
    assert "  ✓ Python packages: torch 2.1.0, torch_npu 2.1.0.post10" in summary
    assert "✓ CANN toolkit, kernels and NNAL: toolkit 8.0.0 at" in summary
    assert "✓ Driver and firmware: driver 24.1.rc2.2" in summary
    assert "✓ NPU devices: 8 × 910B3" in summary


def test_not_checked_area_has_a_dash_and_the_reason():
    text = check_text(SCENARIOS / "k16-container-no-cann-driver-not-mounted")
    assert "  – NPU devices: not checked: npu-smi: command not found on PATH" in text
    assert "  – CANN environment (set_env.sh): not checked: no CANN toolkit to set up" in text


def test_an_area_with_nothing_installed_is_a_dash_never_a_tick():
    """A container given neither a driver nor a CANN, with nothing in it that needs them:
    no finding judges the driver or CANN lines, but "no driver found" beside a ✓ reads as
    a driver that is fine, next to CTR002's error about its missing mounts."""
    summary = check_text(SCENARIOS / "k16-container-driver-not-mounted").split("\n\nFindings")[0]
    assert "  – Driver and firmware: no driver found (/usr/local/Ascend/driver)" in summary.splitlines()
    assert "  – CANN toolkit, kernels and NNAL: no CANN toolkit found" in summary.splitlines()
    assert "✓" not in summary
    plain = check_text(SCENARIOS / "no-cann-plain-machine").split("\n\nFindings")[0]
    assert "  – Python packages: no torch, no torch_npu" in plain.splitlines()
    assert "  ✓ Python interpreter: 3.10 (/usr/local/lib/python3.10/site-packages)" in plain.splitlines()


def test_npu_smi_that_cannot_open_a_device_in_a_container_without_nodes_is_folded():
    """No /dev/davinci* in the container (CTR001): npu-smi's -8005 (DEV002, "busy or not
    accessible", with fixes about other containers holding the NPU) is that cause's
    symptom, folded under it with no fix of its own."""
    scenario = SCENARIOS / "health-devices-not-passed"
    by_code = {f["code"]: f for f in check_json(scenario)["findings"]}
    assert by_code["DEV002"]["severity"] == by_code["CTR001"]["severity"] == "error"
    assert by_code["DEV002"]["data"]["because"] == "CTR001"
    text = check_text(scenario)
    assert "because of this (CTR001), also:\n        ✗ DEV002 npu-smi cannot open the NPU (ret -8005)" in text
    assert "docker stop" not in text


def test_fix_order_list_replaces_the_per_finding_fixes():
    """With an ordered fix list, each fix is printed once: the finding points at its step."""
    text = check_text(EXAMPLES / "torch-npu-torch-mismatch")
    assert "fix: step 1 of “Fix in this order” below" in text
    assert text.count("$ source /usr/local/Ascend/ascend-toolkit/set_env.sh") == 1
    assert text.count("-m pip install torch==2.1.0") == 1


@pytest.mark.parametrize("columns", [60, 80, 120])
def test_prose_wraps_and_commands_never_break(columns: int):
    text = check_text(EXAMPLES / "torch-npu-torch-mismatch", columns=columns)
    for line in text.splitlines():
        if line.lstrip().startswith("$ ") or line.lstrip().startswith("-v ") or "`" in line:
            continue  # a command is never broken: it may be longer than the terminal
        assert len(line) <= columns or " " not in line.strip(), line
    assert "$ /usr/local/bin/python3.10 -m pip install torch==2.1.0" in text


def _finding(code: str, severity: str, because: str = "") -> Finding:
    from npudoctor.knowledge import codes

    data = {"because": because} if because else {}
    return codes.get(code).finding(severity=severity, data=data, fix=[f"Fix {code} (prose)"])


def test_a_symptom_is_folded_only_under_a_reported_cause_at_least_as_severe():
    from npudoctor.report.build import fix_list, folded_under
    from npudoctor.rules.order import fold_symptoms

    # DRV001's codes data names CTR002 (symptom_of); a note never hides an error
    findings = fold_symptoms(None, [_finding("CTR002", "info"), _finding("DRV001", "error")])  # type: ignore[arg-type]
    assert "because" not in findings[1].data and folded_under(findings) == {}
    findings = fold_symptoms(None, [_finding("CTR002", "error"), _finding("DRV001", "error")])  # type: ignore[arg-type]
    assert findings[1].data["because"] == "CTR002"
    assert [f.code for f in folded_under(findings)["CTR002"]] == ["DRV001"]
    assert [f.code for f in fix_list(findings)] == ["CTR002"]  # the symptom's fix is not listed
    # a cause a rule named that is not reported is dropped
    findings = fold_symptoms(None, [_finding("LIB001", "error", because="CANN001")])  # type: ignore[arg-type]
    assert "because" not in findings[0].data


def test_a_cycle_of_causes_folds_nothing():
    from npudoctor.report.build import folded_under

    a, b = _finding("CTR002", "error", because="DRV001"), _finding("DRV001", "error", because="CTR002")
    assert folded_under([a, b]) == {}
    c = _finding("LIB001", "error", because="DRV001")  # a chain goes to its root cause
    d = _finding("CANN001", "error")
    b2 = _finding("DRV001", "error", because="CANN001")
    assert {k: [f.code for f in v] for k, v in folded_under([d, b2, c]).items()} == {"CANN001": ["DRV001", "LIB001"]}


def test_an_identical_fix_of_several_findings_is_said_once():
    import io

    from npudoctor.knowledge import codes
    from npudoctor.remedies import Command
    from npudoctor.report.text import render
    from npudoctor.snapshot import Snapshot

    same = [Command(("mkdir", "-p", "/data/ascend-log"))]
    findings = [
        codes.get("HOST003").finding(title="/a is not writable", fix=list(same), subject="/a"),
        codes.get("HOST003").finding(title="/b is not writable", fix=list(same), subject="/b"),
        codes.get("HOST002").finding(title="low space", fix=["free space on /data"], severity="warning"),
    ]
    out = io.StringIO()
    render(Snapshot(facts={}), findings, file=out, width=100)
    text = out.getvalue()
    assert text.count("$ mkdir -p /data/ascend-log") == 1
    assert "fix: the same as HOST003's above" in text
    assert "free space on /data" in text


def test_a_device_in_use_is_not_told_to_run_privileged():
    """npu-smi's -8020 ("the device is used"): the fixes free or change the device; the
    maintainers' --privileged workaround is for -8005 (cannot open), not for a device
    another process holds."""
    (busy,) = [f for f in check_json(SCENARIOS / "k15-dcmi-8020-device-used")["findings"] if f["code"] == "DEV002"]
    assert "(ret -8020)" in busy["title"]
    assert not any("--privileged" in line for line in busy["fix"])
    assert busy["fix"][0].startswith("On the host: `npu-smi info` and look at the process table")
