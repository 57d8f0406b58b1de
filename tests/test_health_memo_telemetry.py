"""On a real node ``npu-smi info`` never prints the same bytes twice: power, temperature,
AI Core use and HBM in use move every second.  The health memo (npudoctor/runtime/memo.py)
therefore compares that table by what the rules judge of it (``memo.TELEMETRY`` of the chips
without processes left out) -- and these tests hold it to that:

* on every scenario whose ``npu-smi`` prints chips, moving the telemetry of the idle chips in
  the collected snapshot changes no finding of ``check --from`` and no verdict of
  ``health --from`` (so no rule reads it: the day one does, this fails);
* on the real captures, a run after the telemetry moved reuses the verdict, and says what a
  run that reuses nothing says; a changed health state, or a process's memory moving on a
  busy chip (DEV011 reads it), is judged anew.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from clirun import npudoctor
from scenario_runner import REPO, environment, prepare, scenario_dirs
from test_health_memo import _spec, _verdict, judged_anew, run_health

from npudoctor.runtime.memo import TELEMETRY

SCENARIOS = [s for s in scenario_dirs(REPO / "tests" / "scenarios") if (s / "bin" / "npu-smi").exists()]
#: Findings fields that differ between two runs of one machine.
RUN_FIELDS = ("duration_s", "created", "elapsed_s")


def _moved(chip: Dict[str, Any]) -> None:
    """Move each telemetry value of ``chip`` as a working chip's would (within its totals)."""
    moves = {"power_w": 23.7, "temp_c": 9.0, "aicore_pct": 41.0, "hugepages_used": 2, "memory_used_mb": 517}
    for name, step in moves.items():
        if isinstance(chip.get(name), (int, float)):
            chip[name] = chip[name] + step
    used, total = chip.get("hbm_used_mb"), chip.get("hbm_total_mb")
    if isinstance(used, int) and isinstance(total, int) and total:
        chip["hbm_used_mb"] = min(total, used + 2048)


def _findings(doc: Dict[str, Any]) -> List[Any]:
    return [{k: v for k, v in f.items() if k not in RUN_FIELDS} for f in doc.get("findings", [])]


@pytest.mark.parametrize("src", SCENARIOS, ids=lambda p: p.name)
def test_telemetry_of_idle_chips_changes_no_verdict(src: Path, tmp_path: Path) -> None:
    scenario = prepare(src, tmp_path)
    spec = _spec(scenario)
    env = environment(scenario, spec)
    args = list(spec.get("setup", {}).get("args", []))
    collected = npudoctor("collect", "--root", str(scenario / "root"), "--no-redact", "--json", *args, env=env)
    assert collected.returncode == 0, collected.stderr
    snapshot = json.loads(collected.stdout)
    devices = snapshot["facts"].get("devices") or {}
    chips = devices.get("chips") or []
    if not chips:
        pytest.skip("npu-smi prints no chip table here")
    busy = {(p.get("npu_id"), p.get("chip_id")) for p in devices.get("processes") or []}
    moved = json.loads(json.dumps(snapshot))
    idle = 0
    for chip in moved["facts"]["devices"]["chips"]:
        if (chip.get("npu_id"), chip.get("chip_id")) not in busy:
            _moved(chip)
            idle += 1
    smi = moved["facts"]["devices"].get("npu_smi") or {}
    if isinstance(smi.get("raw"), str):  # the text kept as evidence: nothing may judge by it either
        smi["raw"] = re.sub(r"[0-9]", "7", smi["raw"])
    assert idle and moved != snapshot
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    before.write_text(json.dumps(snapshot))
    after.write_text(json.dumps(moved))
    # health in a process of its own, as it always runs (it answers SIGTERM and a blown
    # budget by leaving the process: never inside the test runner)
    for command in (["check", "--json"], ["health", "--json", "--timeout", "120"]):
        docs = []
        for path in (before, after):
            if command[0] == "health":
                run: Any = subprocess.run(
                    [sys.executable, "-m", "npudoctor", *command, "--from", str(path)],
                    env=dict(env, PYTHONPATH=str(REPO)),
                    capture_output=True,
                    text=True,
                    timeout=120,
                )
            else:
                run = npudoctor(*command, "--from", str(path), env=env)
            assert run.returncode in (0, 1), run.stdout + run.stderr
            docs.append((run.returncode, json.loads(run.stdout)))
        (code1, doc1), (code2, doc2) = docs
        assert code1 == code2 and _findings(doc1) == _findings(doc2), command
        assert doc1.get("status") == doc2.get("status")


# -------------------------------------------------------------- the memo on real captures

HEALTHY = REPO / "tests" / "scenarios" / "health-910b3-8npu-healthy"
CAPTURE = "npu-smi-info_910B3_23.0.7_8npu_noproc.txt"
#: A chip's first row (NPU, name | health | power temp huge pages) and second row (chip |
#: bus id | AI Core, memory, HBM) in the 910-class layout of the captures used here.
ROW1 = re.compile(r"^(\| \d+\s+910B3\s+\| )(\w+)(\s+\| )(\d+\.\d)(\s+)(\d+)(\s)", re.M)
ROW2 = re.compile(r"^(\| \d+\s+\| [0-9A-F]{4}:[0-9A-F]{2}:[0-9A-F]{2}\.\d\s+\| )(\d+)(\s+\d+\s*/\s*\d+\s+)(\d+)", re.M)


def _move_capture(path: Path) -> Tuple[str, str]:
    """Move power, temperature, AI Core use and HBM in use of every chip in ``path``;
    returns (before, after) texts."""
    before = path.read_text(encoding="utf-8")
    text = ROW1.sub(lambda m: f"{m[1]}{m[2]}{m[3]}{float(m[4]) + 17.3:.1f}{m[5]}{int(m[6]) + 8}{m[7]}", before)
    text = ROW2.sub(lambda m: f"{m[1]}{int(m[2]) + 35}{m[3]}{int(m[4]) + 1200}", text)
    assert text != before and len(ROW1.findall(before)) == len(ROW2.findall(before)) > 0
    path.write_text(text, encoding="utf-8")
    return before, text


def test_moving_telemetry_reuses_the_verdict(memo_healthy: Tuple[Path, Path]) -> None:
    scenario, runtime = memo_healthy
    code1, first = run_health(scenario, runtime)
    assert code1 == 0 and "inputs_unchanged_s" not in first
    _move_capture(scenario / "bin" / CAPTURE)
    code2, second = run_health(scenario, runtime)
    assert code2 == 0 and second["inputs_unchanged_s"] >= 0 and _verdict(second) == _verdict(first)
    code3, fresh = run_health(scenario, runtime, "--fresh")
    assert code3 == 0 and _verdict(fresh) == _verdict(second)


def test_a_health_state_that_changed_is_judged_anew(memo_healthy: Tuple[Path, Path]) -> None:
    scenario, runtime = memo_healthy
    run_health(scenario, runtime)
    capture = scenario / "bin" / CAPTURE
    _move_capture(capture)
    text = capture.read_text(encoding="utf-8")
    capture.write_text(
        ROW1.sub(
            lambda m: f"{m[1]}{'Warning' if m[0].startswith('| 3 ') else m[2]}{m[3]}{m[4]}{m[5]}{m[6]}{m[7]}", text
        )
    )
    code, doc = judged_anew(scenario, runtime)
    assert "DEV010" in [f["code"] for f in doc["findings"]]


def test_memory_moving_on_a_busy_chip_is_judged_anew(tmp_path: Path) -> None:
    """k15: NPU 5 held by a process (DEV011 names its memory); NPU 0 idle."""
    scenario = prepare(REPO / "tests" / "scenarios" / "k15-process-holds-npu", tmp_path / "s")
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    capture = next((scenario / "captures").glob("npu-smi-info_*.txt"))
    code1, first = run_health(scenario, runtime)
    titles = [f["title"] for f in first["findings"] if f["code"] == "DEV011"]
    assert titles == ["NPU 5 chip 0 is in use by 1 process(es) (60156 of 65536 MB used)"]
    # the idle chip's telemetry moves: the same verdict
    text = capture.read_text(encoding="utf-8")
    capture.write_text(text.replace("| 102.8       45 ", "| 117.5       51 ").replace("3445 / 65536", "3512 / 65536"))
    code2, second = run_health(scenario, runtime)
    assert second["inputs_unchanged_s"] >= 0 and _verdict(second) == _verdict(first)
    # the busy chip's HBM moves: judged anew, and the finding says the new figure
    capture.write_text(capture.read_text(encoding="utf-8").replace("60156/ 65536", "61002/ 65536"))
    code3, third = judged_anew(scenario, runtime)
    assert [f["title"] for f in third["findings"] if f["code"] == "DEV011"] == [
        "NPU 5 chip 0 is in use by 1 process(es) (61002 of 65536 MB used)"
    ]


def test_telemetry_names_are_chip_fields() -> None:
    from npudoctor.facts.devices import Chip

    assert set(TELEMETRY) <= set(Chip.__annotations__)
