"""`npudoctor check --format prometheus`: parsed back with prometheus_client's own parser."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from builders.stacktree import build_root, clean_env
from builders.stacktree import npudoctor_inprocess as npudoctor

from npudoctor.findings import AREAS, SEVERITIES, Finding
from npudoctor.report.prometheus import render
from npudoctor.snapshot import Snapshot

parser = pytest.importorskip("prometheus_client.parser", reason="prometheus_client is in the test extra")

SCENARIO = Path(__file__).resolve().parent / "scenarios" / "hccl-ranktable-device-ip-mismatch"


def families(text):
    return {f.name: f for f in parser.text_string_to_metric_families(text)}


def test_check_textfile_parses(tmp_path):
    root = tmp_path / "root"
    shutil.copytree(SCENARIO / "root", root, symlinks=True)
    build_root(root, hostname="prom-node", cann="8.0.0", driver="24.1.rc2", torch_npu="2.1.0.post3")
    env = clean_env({"RANK_TABLE_FILE": "/etc/hccl.json", "HCCL_CONNECT_TIMEOUT": "900"})
    prom = npudoctor("check", "--root", str(root), "--format", "prometheus", env=env)
    doc = json.loads(npudoctor("check", "--root", str(root), "--format", "json", env=env).stdout)
    assert prom.returncode == doc["exit_code"] == 1, prom.stderr

    fams = families(prom.stdout)
    findings = fams["npudoctor_findings"]
    assert findings.type == "gauge"
    by_label = {(s.labels["severity"], s.labels["area"]): s.value for s in findings.samples}
    assert len(by_label) == len(SEVERITIES) * len(AREAS)
    for sev in SEVERITIES:
        for area in AREAS:
            expected = sum(1 for f in doc["findings"] if f["severity"] == sev and f["area"] == area)
            assert by_label[(sev, area)] == expected, (sev, area)
    assert by_label[("error", "hccl")] >= 1

    active = {s.labels["code"]: s.labels for s in fams["npudoctor_finding_active"].samples}
    assert active["HCCL007"] == {
        "code": "HCCL007",
        "name": "rank-table-device-ip-mismatch",
        "severity": "error",
        "area": "hccl",
    }
    assert set(active) == {f["code"] for f in doc["findings"]}

    (info,) = fams["npudoctor_stack_info"].samples
    assert info.value == 1
    assert info.labels["torch"] == "2.1.0" and info.labels["torch_npu"] == "2.1.0.post3"
    assert info.labels["cann_toolkit"] == "8.0.0" and info.labels["driver"] == "24.1.rc2"
    assert info.labels["npudoctor_version"] == doc["npudoctor_version"]
    (exit_sample,) = fams["npudoctor_check_exit_code"].samples
    assert exit_sample.value == 1
    assert fams["npudoctor_check_timestamp_seconds"].samples[0].value > 1.6e9


def test_label_escaping_round_trip():
    odd = 'we"ird\\ver\nsion'
    snap = Snapshot(facts={"python": {"version": odd}, "packages": {"installed": {}}})
    f = Finding(code="HCCL001", name="rank-table-unreadable", severity="error", area="hccl", title="t")
    text = render(snap, [f, f], 1, now=1700000000)
    fams = families(text)
    assert fams["npudoctor_stack_info"].samples[0].labels["python"] == odd
    assert fams["npudoctor_stack_info"].samples[0].labels["torch"] == ""
    assert [s.labels["code"] for s in fams["npudoctor_finding_active"].samples] == ["HCCL001"]
    counts = {(s.labels["severity"], s.labels["area"]): s.value for s in fams["npudoctor_findings"].samples}
    assert counts[("error", "hccl")] == 2 and counts[("warning", "hccl")] == 0


def test_label_values_carry_no_control_character():
    """A colour code in an npu-smi chip name reaches the label as text, not as ESC."""
    snap = Snapshot(facts={"python": {"version": "3.11\x1b[45m\x07"}, "packages": {"installed": {}}})
    text = render(snap, [], 0, now=1700000000)
    assert "\x1b" not in text and "\x07" not in text
    assert families(text)["npudoctor_stack_info"].samples[0].labels["python"] == "3.11\\u001b[45m\\u0007"


def test_format_usage_errors(tmp_path):
    assert npudoctor("check", "--root", str(tmp_path), "--format", "yaml").returncode == 2
    assert npudoctor("check", "--root", str(tmp_path), "--format", "prometheus", "--json").returncode == 2
