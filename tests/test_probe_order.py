"""Probe declarations: each probe's ``NEEDS`` is exactly what it reads through
``ctx.facts`` (checked by running every probe on real scenario trees with a view that
records the sections asked), the run order is derived from them, and broken
declarations (a cycle, an unknown section) are clear errors."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Dict, Set

import pytest

from npudoctor.context import FactsView, Options, ProbeContext
from npudoctor.engine import ProbeOrderError, ProbeSpec, probe_order, probe_specs, select_probes
from npudoctor.host import Host
from tests.scenario_runner import environment, prepare, tomllib

REPO = Path(__file__).resolve().parent.parent
SCENARIOS = [
    "dev-8npu-910b3-healthy",
    "hccl-clean-two-nodes",
    "k03-extension-other-torch-npu",
    "k10-set-env-not-sourced",
    "k01-user-site-torch-shadows-env",
    "k16-container-driver-not-mounted",
]


def _reads(scenario: Path) -> Dict[str, Set[str]]:
    """Run every probe (the deep one included) on the scenario tree in the derived
    order; each sees every section collected so far (so that reads depending on earlier
    values follow the real paths) and records what it asks for."""
    if (scenario / "scenario.toml").is_file():
        spec = tomllib.loads((scenario / "scenario.toml").read_text(encoding="utf-8"))
        host = Host(root=str(scenario / "root"), environ=environment(scenario, spec))
        cwd = str(scenario)
    else:  # a bare tree: the fallbacks of every probe (a toolkit with a version, no arch)
        toolkit = scenario / "root" / "usr/local/Ascend/ascend-toolkit/latest"
        toolkit.mkdir(parents=True)
        shutil.copy(REPO / "tests/fixtures/version.cfg_toolkit_8.0.T63_internal-build.txt", toolkit / "version.cfg")
        host = Host(root=str(scenario / "root"), environ={"PATH": "/nonexistent", "RANK_TABLE_FILE": "hccl.json"})
        cwd = None  # a relative RANK_TABLE_FILE is then found from the host's cwd
    options = Options(deep=True, deep_timeout=5.0, cwd=cwd)
    specs = probe_specs()
    facts: Dict[str, object] = {}
    asked: Dict[str, Set[str]] = {}
    for probe in specs:
        view = FactsView(facts, [s.section for s in specs])
        result = probe.probe(ProbeContext(host=host, options=options, facts=view))
        facts[probe.section] = result
        asked[probe.section] = set(view.asked)
    return asked


@pytest.fixture(scope="module")
def reads(tmp_path_factory) -> Dict[str, Dict[str, Set[str]]]:
    out = {}
    for name in SCENARIOS:
        scenario = prepare(REPO / "tests" / "scenarios" / name, tmp_path_factory.mktemp(name))
        out[name] = _reads(scenario)
    out["empty"] = _reads(tmp_path_factory.mktemp("empty"))
    out["live deep"] = {"deep": _live_deep_reads()}
    return out


def _live_deep_reads() -> Set[str]:
    """The deep probe runs only live: give it facts saying this interpreter has no torch
    (so no child starts) and record what it reads."""
    by = {s.section: s for s in probe_specs()}
    facts = {
        "python": {"executable": sys.executable, "shadowing": {"torch": {"origin": None}}},
        "packages": {"installed": {}, "interpreter": sys.executable},
    }
    view = FactsView(facts, list(by))
    result = by["deep"].probe(ProbeContext(host=Host(), options=Options(deep=True), facts=view))
    assert result.get("torch_installed") is False, result
    return set(view.asked)


def test_every_probe_reads_only_what_it_declares(reads):
    needs = {s.section: set(s.needs) for s in probe_specs()}
    for name, asked in reads.items():
        for section, got in asked.items():
            assert got <= needs[section], f"{name}: probe {section} reads {sorted(got - needs[section])} undeclared"


def test_every_declared_need_is_read_somewhere(reads):
    for spec in probe_specs():
        used = set().union(*(asked.get(spec.section, set()) for asked in reads.values()))
        assert used == set(spec.needs), f"probe {spec.section} declares {spec.needs}, reads {sorted(used)}"


def test_the_order_follows_the_declarations():
    specs = probe_specs()
    sections = [s.section for s in specs]
    assert set(sections) == {
        "host",
        "python",
        "packages",
        "cann",
        "driver",
        "environment",
        "libraries",
        "devices",
        "container",
        "hccl",
        "hygiene",
        "tunables",
        "host_limits",
        "numa",
        "frameworks",
        "deep",
    }
    for spec in specs:
        for need in spec.needs:
            assert sections.index(need) < sections.index(spec.section), (need, spec.section)
    # Ties: quick file readers before probes that wait on commands, the deep probe last.
    assert sections[-1] == "deep"
    assert sections.index("devices") > sections.index("environment")
    assert sections == [s.section for s in probe_order(reversed(specs))], "the order is stable"


def _spec(section, needs=(), **flags):
    return ProbeSpec(
        section=section,
        needs=tuple(needs),
        quick=flags.get("quick", False),
        deep=flags.get("deep", False),
        slow=flags.get("slow", False),
        probe=lambda ctx: {},
        module=f"probes.{section}",
    )


def test_a_cycle_is_a_clear_error():
    with pytest.raises(ProbeOrderError, match=r"cycle: a → c → b → a \(each needs the next\)"):
        probe_order([_spec("a", ["c"]), _spec("b", ["a"]), _spec("c", ["b"]), _spec("d")])


def test_an_unknown_section_is_a_clear_error():
    with pytest.raises(ProbeOrderError, match=r"probes.a needs section 'nope', which no probe writes"):
        probe_order([_spec("a", ["nope"]), _spec("b")])
    with pytest.raises(ProbeOrderError, match=r"needs its own section"):
        probe_order([_spec("a", ["a"])])
    with pytest.raises(ProbeOrderError, match=r"written by both"):
        probe_order([_spec("a"), _spec("a")])


def test_subsets_pull_in_what_they_need():
    specs = probe_specs()

    def chosen(**kw):
        return [s.section for s in select_probes(specs, Options(**kw))]

    # --only: host, the named sections and what they need (in run order).
    assert chosen(only={"hccl"}) == ["container", "host", "hccl"]
    assert chosen(only={"libraries"}) == ["cann", "host", "python", "packages", "environment", "libraries"]
    # health: the quick probes, closed under NEEDS.
    quick = chosen(quick=True)
    assert quick == [
        "cann",
        "container",
        "driver",
        "host",
        "host_limits",  # /dev/shm and the process limits: they change while a node runs
        "python",
        "packages",
        "environment",
        "devices",
    ]
    by = {s.section: s for s in specs}
    assert all(set(by[q].needs) <= set(quick) for q in quick)
    assert chosen(quick=True, only={"environment", "packages"}) == ["cann", "host", "python", "packages", "environment"]
    # --skip wins: a probe whose need is skipped runs without it.
    assert chosen(only={"hccl"}, skip={"container"}) == ["host", "hccl"]
    # the deep probe only with --deep; explicit sections: exactly those.
    assert "deep" not in chosen() and chosen(deep=True)[-1] == "deep"
    assert [s.section for s in select_probes(specs, Options(), sections=["hccl", "host"])] == ["host", "hccl"]


def test_a_probe_sees_only_its_declared_sections():
    view = FactsView({"host": {"arch": "x86_64"}, "cann": {"selected": None}}, ["host"])
    assert view.get("host") == {"arch": "x86_64"} and view.get("cann") is None
    assert "cann" not in view and dict(view) == {"host": {"arch": "x86_64"}}
    assert view.asked == {"host", "cann"}
