"""Building the typed ``packages`` view: ``Facts(raw).packages`` (conversion and validation of
the section, the first access of a fresh ``Facts``) on the largest scenario snapshot and on a
synthetic section of 300 distributions (records shaped like the scenarios' richest one).
Target: under 5 ms at 300 distributions."""

from __future__ import annotations

import json
import sys
import timeit
from pathlib import Path
from typing import Any, Dict, List

REPO = Path(__file__).resolve().parents[2]
TARGET_MS = 5.0


def _largest_scenario() -> Dict[str, Any]:
    sys.path[:0] = [str(REPO), str(REPO / "tests")]
    from scenario_runner import environment, scenario_dirs

    from npudoctor.context import Options
    from npudoctor.engine import collect
    from npudoctor.host import Host

    try:
        import tomllib
    except ImportError:  # pragma: no cover
        import tomli as tomllib  # type: ignore[no-redef]

    best: Dict[str, Any] = {}
    for scenario in scenario_dirs(REPO / "tests" / "scenarios", REPO / "examples"):
        spec = tomllib.loads((scenario / "scenario.toml").read_text(encoding="utf-8"))
        facts = collect(Host(root=str(scenario / "root"), environ=environment(scenario, spec)), Options()).facts
        facts = json.loads(json.dumps(facts))
        if len(json.dumps(facts)) > len(json.dumps(best)):
            best = dict(facts, _name=scenario.name)
    return best


def _synthetic(template: Dict[str, Any], count: int) -> Dict[str, Any]:
    records = [r for rs in template["packages"]["installed"].values() for r in rs]
    rich = max(records, key=lambda r: len(json.dumps(r)))
    installed = {}
    for i in range(count):
        installed[f"pkg-{i}"] = [
            dict(
                rich,
                name=f"pkg-{i}",
                dist_info=f"/usr/lib/python3/site-packages/pkg_{i}-1.0.dist-info",
                requires_dist=[f"dep-{j} >=1.{j}" for j in range(8)],
            )
        ]
    return {"packages": dict(template["packages"], installed=installed, count=count)}


def _ms(raw: Dict[str, Any], repeat: int) -> float:
    from npudoctor.facts import Facts

    timer = timeit.Timer(lambda: Facts(raw).packages)
    number, _ = timer.autorange()
    return min(timer.repeat(repeat=max(repeat, 3), number=number)) / number * 1000


def run(repeat: int) -> List[str]:
    largest = _largest_scenario()
    name = largest.pop("_name")
    synthetic = _synthetic(largest, 300)
    at_300 = _ms(synthetic, repeat)
    return [
        f"Facts(raw).packages, largest scenario ({name}, {len(largest['packages']['installed'])} "
        f"distributions): {_ms(largest, repeat) * 1000:.0f} us",
        f"Facts(raw).packages, 300 distributions: {at_300:.2f} ms (target < {TARGET_MS:.0f} ms)",
    ]
