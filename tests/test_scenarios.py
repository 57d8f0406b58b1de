"""Every scenario in tests/scenarios/, examples/ and ../shared/scenarios/ (when present),
run through the documented contract and judged on its [expect] table (which, for this
repository's scenarios, states the number of top-level findings: ``top_level``) -- and on the one
rules of remedies: every fix line is pasteable (no "…", no ``<placeholder>``), and a command is
a command remedy (a ``$`` line, a Markdown ``sh`` block, ``"command"`` in JSON), never prose."""

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


#: A fix line that is or holds a shell command line: it starts with a command (after an
#: ``or``/``or:`` and ``VAR=value`` words), names one with its arguments after a colon
#: (``e.g. old caches: rm -rf DIR``), or carries a shell comment (``cmd   # why``).
COMMAND_WORDS = (
    "apt-get|apt|yum|dnf|conda|pip3?|python[0-9.]*|hccn_tool|npu-smi|export|unset|source|chmod|chown|cd|"
    "ldconfig|docker|kubectl|systemctl|rm|mkdir|ln|sed|bash|sh|\\.|add-apt-repository"
)
COMMAND_LINE = re.compile(
    rf"^(?:or:?\s+)?(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*(?:{COMMAND_WORDS})(?:\s|$)|:\s+(?:{COMMAND_WORDS})\s+\S|\S\s+#\s"
)


def prose_commands(findings: List[Dict[str, Any]]) -> List[str]:
    """The fix lines of ``findings`` that are shell command lines said as prose (a ``prose``
    remedy, or a line after the remedies), with their code."""
    out = []
    for f in findings:
        remedies = f.get("remedies", [])
        for i, line in enumerate(f.get("fix", [])):
            prose = i >= len(remedies) or remedies[i]["kind"] == "prose"
            if prose and COMMAND_LINE.search(line):
                out.append(f"{f['code']}: {line}")
    return out


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
    said = prose_commands(findings)
    assert not said, "\n".join([f"scenario {scenario}: commands said as prose (make them command remedies):"] + said)
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


def test_command_line_pattern():
    """The lines users found printed as prose (no ``$``) are command lines; prose that names a
    command inside a sentence is not."""

    def said(line: str, kind: str = "prose") -> bool:
        return bool(prose_commands([{"code": "X", "fix": [line], "remedies": [{"kind": kind}]}]))

    assert said(
        "apt-get update && apt-get install -y software-properties-common && add-apt-repository -y "
        "ppa:ubuntu-toolchain-r/test && apt-get update && apt-get install -y libstdc++6 # the toolchain PPA's libstdc++6"
    )
    assert said("hccn_tool -i 3 -ip -g   # confirm the live address on the host")
    assert said("cd ~   # any directory without a torch_npu/ folder, then run again")
    assert said("or: export ASCEND_CACHE_PATH=/data/ascend/cache ASCEND_WORK_PATH=/data/ascend/work")
    assert said("python3.11 -m venv ~/npu-venv && . ~/npu-venv/bin/activate")
    assert not said("hccn_tool -i 3 -ip -g  # confirm the live address on the host", kind="command")
    assert not said("Stop the jobs that hold the NPUs, then run npu-smi again:")
    assert not said("In the image: RUN groupadd -g 1000 npu && useradd -u 1000 -g 1000 -m npu")
    assert not said("or install the torch_npu release built for torch 2.1.0")
    assert said("free space on / (e.g. old caches: rm -rf /root/ascend/kernel_meta*)")
    assert said("Or keep Ray from rewriting it: export RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES=1 and set it")
    assert not said("Free space on /, e.g. by removing old caches (/root/ascend/kernel_meta* and ~/ascend/log/debug)")
    assert not said("Stop the jobs on this NPU and collect `dmesg` and /var/log/npu/")


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
