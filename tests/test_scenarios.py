"""Every scenario in tests/scenarios/, examples/ and ../shared/scenarios/ (when present),
run through the documented contract and judged on its [expect] table (which, for this
repository's scenarios, states the number of top-level findings: ``top_level``) -- and on the one
rule of remedies: every fix line is pasteable (no "…", no ``<placeholder>``)."""

from __future__ import annotations

import re
from typing import Any, Dict, List

import pytest
from scenario_runner import REPO, SHARED_SCENARIOS, failures, prepare, run_check, scenario_dirs

SCENARIOS = scenario_dirs(REPO / "tests" / "scenarios", REPO / "examples", SHARED_SCENARIOS)

#: ``<chip>``, ``<N>``, ``<that version>``: a word in angle brackets stands for a value the
#: reader must fill in (``numpy<2`` or ``a < b`` are not placeholders).
PLACEHOLDER = re.compile(r"<[A-Za-z][^<>]*>")
#: ``docker run ... -v`` (an elided command); ``'...' lines`` quoted in prose is not one.
ELLIPSIS = re.compile(r"(?<!')\.\.\.(?!')")


def unpasteable(findings: List[Dict[str, Any]]) -> List[str]:
    """The fix lines of ``findings`` that hold "…" or a ``<placeholder>``, with their code."""
    return [
        f"{f['code']}: {line}"
        for f in findings
        for line in f.get("fix", [])
        if "…" in line or ELLIPSIS.search(line) or PLACEHOLDER.search(line)
    ]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[f"{p.parent.name}/{p.name}" for p in SCENARIOS])
def test_scenario(scenario, tmp_path):
    prepared = prepare(scenario, tmp_path)
    run = run_check(prepared)
    problems = failures(run)
    if SHARED_SCENARIOS not in scenario.parents:  # an outside harness's scenario may leave it out
        assert "top_level" in run.spec.get("expect", {}), f"{scenario}: [expect] must state top_level"
    assert not problems, "\n".join([f"scenario {scenario}:"] + problems)
    findings = (run.doc or {}).get("findings", [])
    bad = unpasteable(findings)
    assert not bad, "\n".join([f"scenario {scenario}: fix lines that are not pasteable:"] + bad)
    for f in findings:  # the structured remedies render to the fix lines (rules may append prose after)
        assert [r["shell"] for r in f.get("remedies", [])] == f["fix"][: len(f.get("remedies", []))], f["code"]
    # every report labels each evidence line itself ("evidence: …"): a line never carries the label
    labelled = [f"{f['code']}: {e}" for f in findings for e in f.get("evidence", []) if e.startswith("evidence:")]
    assert not labelled, "\n".join([f"scenario {scenario}: evidence lines that repeat the label:"] + labelled)


def test_placeholder_pattern():
    assert unpasteable([{"code": "X", "fix": ["chmod +x Ascend-cann-<chip: 910b>-ops_8.5.0.run"]}])
    assert unpasteable([{"code": "X", "fix": ["docker run … -v /a:/a"]}])
    assert unpasteable([{"code": "X", "fix": ["docker run ... -v /a:/a"]}])
    assert not unpasteable([{"code": "X", "fix": ["/usr/bin/python3 -m pip install 'numpy<2'"]}])
    assert not unpasteable([{"code": "X", "fix": ["Remove the comments and '...' lines from /etc/hccl.json"]}])


def test_top_level_counts_the_findings_the_report_shows_on_their_own(tmp_path):
    """k07: DEV003 (npu-smi not on PATH) is folded under DRV001 (no driver): four top-level
    findings of five, and a scenario that says otherwise fails with both numbers."""
    import dataclasses

    from scenario_runner import top_level

    scenario = REPO / "tests" / "scenarios" / "k07-numpy-2-with-cann-8.2.RC1"
    run = run_check(prepare(scenario, tmp_path))
    findings = (run.doc or {}).get("findings", [])
    assert len(findings) == 5 and sorted(top_level(findings)) == ["CANN004", "DRV001", "ENV003", "PKG007"]
    assert run.spec["expect"]["top_level"] == 4 and failures(run) == []
    wrong = dataclasses.replace(run, spec={"expect": {"top_level": 5}})
    assert failures(wrong) == [
        "4 top-level findings (PKG007, CANN004, ENV003, DRV001), expected 5 (folded symptoms not counted; "
        "findings: PKG007:warning, CANN004:warning, ENV003:warning, DRV001:error, DEV003:warning)"
    ]
