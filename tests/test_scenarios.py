"""Every scenario in tests/scenarios/, examples/ and ../shared/scenarios/ (when present),
run through the documented contract and judged on its [expect] table."""

from __future__ import annotations

import pytest
from scenario_runner import REPO, SHARED_SCENARIOS, failures, prepare, run_check, scenario_dirs

SCENARIOS = scenario_dirs(REPO / "tests" / "scenarios", REPO / "examples", SHARED_SCENARIOS)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[f"{p.parent.name}/{p.name}" for p in SCENARIOS])
def test_scenario(scenario, tmp_path):
    prepared = prepare(scenario, tmp_path)
    run = run_check(prepared)
    problems = failures(run)
    assert not problems, "\n".join([f"scenario {scenario}:"] + problems)
