"""``npudoctor devices`` reads the metadata of the distributions its rules judge by name only
(``Options.index_packages``: the rest are indexed by directory name, as health does), so its
time does not grow with the distributions installed (issue 18).  Proven here on every
scenario: what devices reports (its findings, devices and container sections) is the same as
with every METADATA read, and every distribution name its rules ask for is one the indexed
scan reads in full."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any, Dict, List, Set, Tuple

import pytest
import tomllib
from clirun import npudoctor
from scenario_runner import environment, prepare

from npudoctor.cli.commands.devices import AREAS, SECTIONS
from npudoctor.context import Options
from npudoctor.engine import evaluate
from npudoctor.facts.system import PackagesFacts
from npudoctor.parsers.metadata import canonical_name
from npudoctor.probes import packages
from npudoctor.session.machine import load_matrix_or_none, machine_request, snapshot_for

SCENARIOS = Path(__file__).resolve().parent / "scenarios"
ALL = sorted(p for p in SCENARIOS.iterdir() if (p / "root").is_dir() and (p / "scenario.toml").is_file())
HEALTHY = SCENARIOS / "health-910b3-8npu-healthy"
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from benchmarks.health import SITE, make_tree  # noqa: E402  the benchmark's vLLM-sized tree


def _judge(scenario: Path, index: bool, asked: List[str]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """What devices judges on ``scenario`` (its findings and sections) and the packages facts
    it collected, with or without the indexed scan; ``asked`` receives every project name the
    rules look up in the packages facts."""
    spec = tomllib.loads((scenario / "scenario.toml").read_text(encoding="utf-8"))
    request = machine_request(root=str(scenario / "root"))
    # a hung npu-smi is killed after 1 s instead of 5 (twice per scenario): the scan is what is compared
    timeout = 1.0 if scenario.name.endswith("npu-smi-hung") else Options().command_timeout
    options = Options(only=set(AREAS), index_packages=index, command_timeout=timeout)
    snapshot = snapshot_for(request, options, sections=SECTIONS, environ=environment(scenario, spec))
    matrix, _err = load_matrix_or_none(None)
    original = PackagesFacts.records

    def records(self: PackagesFacts, *names: str) -> Any:  # records what is asked, answers as before
        asked.extend(names)
        return original(self, *names)

    PackagesFacts.records = records  # type: ignore[method-assign]
    try:
        findings = evaluate(snapshot, matrix, options)
    finally:
        PackagesFacts.records = original  # type: ignore[method-assign]
    judged = {
        "findings": _timeless([f.to_dict() for f in findings if f.area in AREAS]),
        "devices": _timeless(snapshot.facts.get("devices")),
        "container": _timeless(snapshot.facts.get("container")),
    }
    return judged, snapshot.facts.get("packages") or {}


#: What differs between two runs of the same npu-smi: its wall-clock duration (also in DEV001's
#: text, "did not answer within 5.1 s", or "killed after 2.1 s" when stopped by a deadline) and,
#: for one killed at its deadline, the CPU time it had used, its state and the CPU pressure
#: measured while it hung (also in DEV001's evidence line "when killed: state S, 0.01 s of CPU used, ...",
#: whose parts vary with what was read when: a process caught in state D gets "(blocked in the kernel)").
_MEASURED = ("duration", "cpu_pressure", "cpu_s", "state")
_MEASURED_RE = re.compile(r"when killed: .*|(?:within|after) [0-9.]+ s")


def _measured(match: re.Match[str]) -> str:
    return "when killed: (measured)" if match.group().startswith("when") else "(measured)"


def _timeless(value: Any) -> Any:
    """``value`` without what was measured by the clock (:data:`_MEASURED`)."""
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if k not in _MEASURED}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    if isinstance(value, str):
        return _MEASURED_RE.sub(_measured, value)
    return value


def _by_name() -> Set[str]:
    return set(packages._BY_NAME)


@pytest.mark.parametrize("src", ALL, ids=lambda p: p.name)
def test_devices_judges_alike_with_indexed_packages(src: Path, tmp_path: Path) -> None:
    scenario = prepare(src, tmp_path)
    asked: List[str] = []
    full, full_packages = _judge(scenario, False, [])
    indexed, indexed_packages = _judge(scenario, True, asked)
    assert indexed == full
    # every name the devices rules ask for is read in full by the indexed scan
    assert {canonical_name(n) for n in asked} <= _by_name()
    # and those records are the full ones (METADATA read), the same as without indexing
    for name in _by_name():
        assert indexed_packages.get("installed", {}).get(name) == full_packages.get("installed", {}).get(name)
    assert indexed_packages.get("count") == full_packages.get("count")


def test_devices_rules_ask_for_distributions_by_name() -> None:
    """The healthy scenario's devices rules do look packages up (the check above is not empty):
    torch_npu (DEV/CTR evidence) and the chip-support frameworks (DEV040)."""
    asked: List[str] = []
    _judge(HEALTHY, True, asked)
    names = {canonical_name(n) for n in asked}
    assert {"torch-npu", "vllm-ascend", "mindspeed", "torchair", "triton-ascend"} <= names


def test_devices_on_320_distributions_indexes_the_others(tmp_path: Path) -> None:
    tree = make_tree(tmp_path, 320)
    spec = tomllib.loads((tree / "scenario.toml").read_text(encoding="utf-8"))
    full, full_packages = _judge(tree, False, [])
    indexed, indexed_packages = _judge(tree, True, [])
    assert indexed == full
    site = tree / "root" / SITE
    dist_infos = sorted(p.name for p in site.iterdir() if p.name.endswith(".dist-info"))
    assert len(dist_infos) == 320
    assert full_packages["count"] == indexed_packages["count"] == 320
    assert full_packages["indexed_only"] == 0
    # the 15 distributions rules judge by name (torch, torch_npu, numpy, the CANN Python
    # dependencies) read in full; requests and the 304 bench-dep-* indexed by directory name
    read = sorted(n for n, recs in indexed_packages["installed"].items() if recs[0].get("metadata"))
    assert len(read) == 15 and {"torch", "torch-npu", "numpy", "pyyaml", "protobuf"} <= set(read)
    assert set(read) <= _by_name()
    assert indexed_packages["indexed_only"] == 305
    assert indexed_packages["installed"]["requests"][0]["version"] == "2.31.0"
    assert indexed_packages["installed"]["bench-dep-0007"][0]["version"] == "1.0.7"
    tnpu = indexed_packages["installed"]["torch-npu"][0]
    assert tnpu["version"] == "2.1.0.post10" and tnpu["metadata"].endswith("/METADATA")
    # the command itself: same JSON either way (the CLI sets index_packages)
    env = dict(environment(tree, spec), COLUMNS="100")
    proc = npudoctor("devices", "--json", "--root", str(tree / "root"), env=env)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["findings"] == indexed["findings"] == full["findings"]
