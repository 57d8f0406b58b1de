"""The health budget is a hard deadline including in-process judging: when it runs out,
the verdict of the areas already judged (beside the probes, while npu-smi is awaited)
is answered at once, and nothing is judged again.  The deadline is injected (the
budget is shrunk to the time already spent) and npu-smi is a stand-in blocked on a
lock the test holds; nothing asserts a time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import tomllib
from builders.shellscript import write_script
from scenario_runner import REPO, environment, prepare

from npudoctor.runtime.deadline import Budget

SCENARIO = REPO / "tests/scenarios/health-env-not-sourced"
AREAS_BEFORE_DEVICES = ["python", "packages", "cann", "environment", "driver", "container", "host"]


#: The run, in a fresh interpreter (no state of other tests' runs in this process): health
#: evaluates in a thread while npu-smi waits on the test's lock; once the areas before
#: devices are judged beside the probes, the deadline is injected (the budget shrunk to the
#: time spent) with a tripwire on the rules, and the verdict at the cut is printed as JSON.
_RUN = """
import fcntl, json, sys, threading, time
import npudoctor.engine
from npudoctor.runtime.deadline import Budget, kill_children
from npudoctor.runtime.health import _Watch, evaluate_health, timed_out_verdict
from npudoctor.runtime.healthopts import options_from_values, parse_values
from npudoctor.runtime.quick import Progress

root, lock, want = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
options = options_from_values(parse_values(["--root", root, "--timeout", "600"]))
budget = Budget(600)
watch = _Watch(options, budget, None, None, time.monotonic())
watch.progress = progress = Progress()
with open(lock, "w") as held:
    fcntl.flock(held, fcntl.LOCK_EX)  # npu-smi waits on it: the devices probe never ends
    worker = threading.Thread(target=evaluate_health, args=(options, budget, progress), daemon=True)
    worker.start()
    for _ in range(2000):  # a bound on the wait, not a timing assertion
        if progress.judged[0] == want:
            break
        time.sleep(0.01)
    judged, step = list(progress.judged[0]), budget.step

    def judging_again(*args, **kwargs):
        raise AssertionError("judged again at the deadline")

    npudoctor.engine.evaluate = judging_again  # a tripwire: nothing may run the rules again
    budget.seconds = budget.elapsed()  # the injected deadline: now
    doc = timed_out_verdict(watch, watch.evidence(), "ran out")
    kill_children()
print(json.dumps({"judged": judged, "step": step, "doc": doc}))
"""


def test_a_budget_that_runs_out_answers_with_what_was_judged_without_judging_again(tmp_path: Path) -> None:
    scenario = prepare(SCENARIO, tmp_path)
    lock = tmp_path / "dcmi.lock"
    (scenario / "bin/npu-smi").unlink()
    table = scenario / "bin/npu-smi-info_910B3_23.0.7_8npu_noproc.txt"
    write_script(scenario / "bin", "npu-smi", f'exec flock "{lock}" cat "{table}"\n')
    env = dict(environment(scenario, tomllib.loads((scenario / "scenario.toml").read_text())), PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, "-c", _RUN, str(scenario / "root"), str(lock), ",".join(AREAS_BEFORE_DEVICES)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.splitlines()[-1])
    # the areas before devices were judged beside the probes while npu-smi was awaited
    assert (out["judged"], out["step"]) == (AREAS_BEFORE_DEVICES, "probing devices")
    doc = out["doc"]
    assert doc["status"] == "unhealthy", doc
    assert [p.split()[0] for p in doc["problems"]] == ["ENV001"]
    assert doc["finished"] == AREAS_BEFORE_DEVICES
    assert list(doc["unknown"]) == ["devices and the areas after it"]
    assert "budget ran out while probing devices" in doc["unknown"]["devices and the areas after it"]


def test_npu_smi_may_use_the_probes_whole_share_of_the_budget(tmp_path: Path) -> None:
    # a 3 s budget (the shipped readiness probe's): an npu-smi that answers after 2 s gets
    # its answer read (under a 60 % command share it was cut short at 1.8 s: unknown)
    from npudoctor.context import Options
    from npudoctor.engine import collect
    from npudoctor.host import Host

    scenario = prepare(REPO / "tests/scenarios/health-910b3-8npu-healthy", tmp_path)
    table = scenario / "bin/npu-smi-info_910B3_23.0.7_8npu_noproc.txt"
    (scenario / "bin/npu-smi").unlink()
    write_script(scenario / "bin", "npu-smi", f'sleep 2\ncat "{table}"\n')
    budget = Budget(3.0)
    env = environment(scenario, tomllib.loads((scenario / "scenario.toml").read_text()))
    host = Host(str(scenario / "root"), env)
    try:
        options = Options(quick=True, command_timeout=budget.command_timeout(), deadline=budget.probe_deadline())
        snapshot = collect(host, options, sections=["host", "devices"])
    finally:
        host.close()
    devices = snapshot.facts["devices"]
    assert devices["npu_smi"].get("available") is True, devices["npu_smi"]
    assert len(devices["chips"]) == 8


#: A whole run in a fresh interpreter with the quiet spell that starts a judging beside the
#: probes made longer than any run: every judging is counted by the kind of snapshot judged.
_QUIET_RUN = """
import json, sys
import npudoctor.engine, npudoctor.runtime.quick
from npudoctor.runtime.deadline import Budget
from npudoctor.runtime.health import evaluate_health
from npudoctor.runtime.healthopts import options_from_values, parse_values
from npudoctor.runtime.quick import Progress

npudoctor.runtime.quick.QUIET = 600.0
judged = []
evaluate = npudoctor.engine.evaluate

def counted(snapshot, *args, **kwargs):
    judged.append(snapshot.target.get("mode"))
    return evaluate(snapshot, *args, **kwargs)

npudoctor.engine.evaluate = counted
options = options_from_values(parse_values(["--root", sys.argv[1], "--timeout", "600"]))
progress = Progress()
doc = evaluate_health(options, Budget(600), progress)
print(json.dumps({"judged": judged, "beside": list(progress.judged[0]), "status": doc["status"]}))
"""


def test_sections_that_finish_one_after_another_are_judged_once_at_the_end(tmp_path: Path) -> None:
    # npu-smi answers at once: no section waits, so nothing is judged beside the probes; the
    # end of the probes wakes the judging thread (a run that ended it no sooner would hang)
    scenario = prepare(REPO / "tests/scenarios/health-910b3-8npu-healthy", tmp_path)
    env = dict(environment(scenario, tomllib.loads((scenario / "scenario.toml").read_text())), PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, "-c", _QUIET_RUN, str(scenario / "root")], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.splitlines()[-1])
    assert out == {"judged": ["root"], "beside": [], "status": "healthy"}
