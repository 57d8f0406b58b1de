""" "Not checked", the third state of an area (issue 15), in every output of `check`, and
the evidence that tells an npu-smi starved on a busy node from a hung one."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import clirun
import pytest

from npudoctor.facts.coverage import BUSY_PRESSURE, starved, unchecked

REPO = Path(__file__).resolve().parent.parent
HEALTHY = REPO / "examples" / "healthy-910b3"
NO_SMI = "npu-smi: command not found on PATH"


def _env(with_smi: bool) -> dict:
    path = f"{Path(sys.executable).parent}:/usr/bin:/bin"
    return {"PATH": f"{HEALTHY / 'bin'}:{path}" if with_smi else path, "HOME": "/root"}


def _check(*args: str, with_smi: bool = False) -> clirun.Result:
    return clirun.npudoctor(
        "check", "--root", str(HEALTHY / "root"), "--env-file", str(HEALTHY / "env"), *args, env=_env(with_smi)
    )


def test_text_report_does_not_tick_devices_it_never_checked():
    proc = _check()
    assert proc.returncode == 0, proc.stdout
    lines = proc.stdout.splitlines()
    assert f"  – NPU devices: not checked: {NO_SMI}" in lines
    assert not any(ln.startswith("  ✓ NPU devices") for ln in lines)
    # with the captured npu-smi the area is judged and ticked, with what was found
    proc = _check(with_smi=True)
    assert any(ln.startswith("  ✓ NPU devices: 8 × 910B3 (Atlas A2 training") for ln in proc.stdout.splitlines())
    assert "not checked" not in proc.stdout


def test_json_markdown_and_prometheus_carry_the_gap():
    doc = json.loads(_check("--json").stdout)
    assert doc["not_checked"] == {"devices": NO_SMI}
    assert json.loads(_check("--json", with_smi=True).stdout)["not_checked"] == {}
    md = _check("--markdown").stdout
    assert f"- NPU devices: {NO_SMI}" in md
    prom = _check("--format", "prometheus").stdout.splitlines()
    assert 'npudoctor_area_checked{area="devices"} 0' in prom
    assert 'npudoctor_area_checked{area="cann"} 1' in prom
    assert 'npudoctor_area_checked{area="matrix"} 1' in prom
    prom = _check("--format", "prometheus", with_smi=True).stdout.splitlines()
    assert 'npudoctor_area_checked{area="devices"} 1' in prom


def test_no_commands_and_a_failed_probe_are_not_checked():
    doc = json.loads(_check("--json", "--no-commands", with_smi=True).stdout)
    assert doc["not_checked"] == {"devices": "commands disabled (--no-commands)"}
    facts = {"cann": {}, "_errors": {"cann": "TypeError: boom\n  File ..."}}
    assert unchecked(facts) == {"cann": "its probe failed: TypeError: boom"}
    assert unchecked("not a mapping") == {}  # type: ignore[arg-type]


def test_starved_or_hung():
    # blocked in the kernel (a driver call): hung, however busy the node
    assert not starved(99.0, "D", 0.0, 5.0)
    # asleep, no CPU used: waiting for an answer, not for a CPU -- hung
    assert not starved(99.0, "S", 0.0, 5.0)
    # runnable on a CPU-starved node: starved
    assert starved(BUSY_PRESSURE, "R", 0.5, 5.0)
    # runnable or working on an idle node: hung (spinning)
    assert not starved(3.0, "R", 4.9, 5.0)
    # no PSI: runnable means starved
    assert starved(None, "R", 0.1, 5.0) and not starved(None, "S", 1.0, 5.0)


SPINNING_SMI = "#!/bin/sh\n# an npu-smi that never answers while it works (runnable)\nwhile :; do :; done\n"


@pytest.mark.skipif(not os.path.exists("/proc/pressure/cpu"), reason="no PSI on this kernel")
def test_npu_smi_timing_out_on_a_saturated_node_is_not_checked_not_dev001(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "npu-smi").write_text(SPINNING_SMI)
    (bindir / "npu-smi").chmod(0o755)
    root = tmp_path / "root"
    shutil.copytree(HEALTHY / "root", root, symlinks=True)
    loops = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(4)]
    try:
        time.sleep(1.0)
        env = {"PATH": f"{bindir}:{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": "/root"}
        args = ["check", "--root", str(root), "--env-file", str(HEALTHY / "env"), "--json", "--deadline", "3"]
        doc = json.loads(clirun.npudoctor(*args, env=env).stdout)
    finally:
        for proc in loops:
            proc.kill()
        for proc in loops:
            proc.wait()
    command = doc["facts"]["devices"]["npu_smi"]["commands"][0]
    assert command["timed_out"] and command["state"] == "R", command
    assert command["cpu_pressure"] >= BUSY_PRESSURE, command
    assert "DEV001" not in {f["code"] for f in doc["findings"]}
    assert doc["not_checked"]["devices"].startswith("npu-smi timed out on a busy node (CPU-starved ")


@pytest.mark.parametrize("cause", [[], {}, ["commands disabled"], 3])
def test_a_wrong_typed_npu_smi_cause_is_no_crash(cause):
    """A damaged snapshot (``devices.npu_smi.cause`` a list, found by the fuzz suite) is
    judged like an unknown cause (the rules judge the failure: checked), never a TypeError."""
    from npudoctor.facts.coverage import not_checked

    facts = {"devices": {"npu_smi": {"available": False, "cause": cause}}}
    unknown = {"devices": {"npu_smi": {"available": False, "cause": "no such cause"}}}
    assert not_checked(facts, "devices") == not_checked(unknown, "devices") is None


def test_a_devices_section_that_cannot_be_read_judges_no_device_node_missing(tmp_path):
    """A snapshot whose devices section is not a table (a damaged or hand-edited file): the
    area is not checked, and no rule concludes from the empty defaults that the container
    was given no NPU (CTR001, CTR006) or lacks control nodes (DEV020)."""
    scenario = REPO / "tests" / "scenarios" / "health-910b3-8npu-healthy"
    env = {"PATH": f"{scenario / 'bin'}:/usr/bin:/bin", "HOME": "/root"}
    snap = tmp_path / "snap.json"
    collected = clirun.npudoctor("collect", "--root", str(scenario / "root"), "-o", str(snap), env=env)
    assert collected.returncode == 0, collected.stderr
    doc = json.loads(snap.read_text())
    doc["facts"]["devices"] = "x"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    report = json.loads(clirun.npudoctor("check", "--from", str(bad), "--json", env=env).stdout)
    codes = {f["code"] for f in report["findings"]}
    assert codes.isdisjoint({"CTR001", "CTR006", "DEV020"}), codes
    assert "the section is a string" in report["not_checked"]["devices"]
    shown = clirun.npudoctor("devices", "--from", str(bad), env=env).stdout.splitlines()
    assert shown[1] == "  no chip table: the devices facts could not be read (<section>: expected object, got str)"
