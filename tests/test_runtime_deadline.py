"""The one deadline mechanism of the runtime commands (npudoctor/runtime/deadline.py)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from npudoctor.runtime.deadline import OVER_BUDGET_CODE, Budget, run_within

REPO = Path(__file__).resolve().parent.parent


def test_value_and_error_are_returned():
    assert run_within(Budget(5), lambda: 42).value == 42
    outcome = run_within(Budget(5), lambda: int("x"))
    assert isinstance(outcome.error, ValueError) and not outcome.timed_out


def test_a_blown_budget_names_the_step_and_kills_the_commands_left_running():
    budget = Budget(0.3)
    started = {}

    def work() -> None:
        budget.step = "probing devices"
        # its own session, as Host.run starts commands; ignores SIGTERM like a wedged npu-smi
        proc = subprocess.Popen(["sh", "-c", "trap '' TERM; sleep 30"], start_new_session=True)
        started["proc"] = proc
        proc.wait()

    t0 = time.monotonic()
    outcome = run_within(budget, work)
    assert outcome.timed_out and outcome.value is None
    assert time.monotonic() - t0 < 2.0
    assert (
        budget.over_budget_line() == f"{OVER_BUDGET_CODE} health check exceeded its 0.3 s budget while probing devices"
    )
    started["proc"].wait(timeout=5)  # killed, not orphaned
    assert started["proc"].returncode == -9


def test_shares_of_the_budget():
    budget = Budget(10, started=100.0)
    assert budget.probe_deadline() == 108.5
    assert budget.command_timeout() == budget.seconds * 0.85  # npu-smi may use the probes' whole share
    assert Budget(0.01).command_timeout() == 0.1


def test_the_over_budget_code_is_registered_with_its_explanation():
    from npudoctor.engine import load_rules
    from npudoctor.knowledge.codes import registry

    load_rules()
    assert registry()[OVER_BUDGET_CODE].name == "health-check-over-budget"


def test_process_started_is_the_start_of_this_process_not_of_the_budget():
    # a fresh interpreter: its age when it asks is its start-up (imports included), > 0
    code = (
        "import time\n"
        "from npudoctor.runtime.deadline import process_started\n"
        "started = process_started()\n"
        "print(time.monotonic() - started if started is not None else 'none')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=str(REPO))
    assert out.returncode == 0, out.stderr
    age = float(out.stdout)
    assert 0 < age < 60, age
