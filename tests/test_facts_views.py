"""The typed facts views against real snapshots: every scenario's facts convert without a
problem and without a key the views do not declare; malformed sections never raise."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from scenario_runner import REPO, environment, scenario_dirs

from npudoctor.engine import Options, collect
from npudoctor.facts import SECTIONS, Facts, facts_schema
from npudoctor.facts._typed import Problems, load
from npudoctor.host import Host

try:
    import tomllib
except ImportError:  # pragma: no cover
    import tomli as tomllib  # type: ignore[no-redef]

SCENARIOS = scenario_dirs(REPO / "tests" / "scenarios", REPO / "examples")


def _facts_of(scenario: Path) -> dict:
    spec = tomllib.loads((scenario / "scenario.toml").read_text(encoding="utf-8"))
    host = Host(root=str(scenario / "root"), environ=environment(scenario, spec))
    return collect(host, Options()).facts


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_every_scenario_section_fits_its_view(scenario: Path) -> None:
    facts = _facts_of(scenario)
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **facts_schema()}
    jsonschema.validate({k: v for k, v in facts.items() if k in SECTIONS}, schema)
    for name, cls in SECTIONS.items():
        if name not in facts:
            continue
        _, problems = load(cls, json.loads(json.dumps(facts[name])), Problems(strict=True))
        assert problems.as_list() == [], f"{scenario.name}: section {name}"


def test_a_malformed_section_is_a_could_not_read_fact_not_a_crash() -> None:
    facts = Facts({"host": ["not", "an", "object"], "cann": {"toolkits": "garbled", "selected": {"version": 8}}})
    assert facts.host.arch is None
    assert facts.state("host") == "malformed"
    assert facts.problems("host") == ["<section>: expected object, got list"]
    assert facts.cann.toolkits == ()
    assert facts.cann.selected is not None and facts.cann.selected.version is None
    assert facts.problems("cann") == [
        "toolkits: expected list, got str",
        "selected.version: expected str or null, got int",
    ]
    assert facts.state("driver") == "absent" and facts.driver.driver.version is None


def test_deep_nesting_is_reported_not_followed() -> None:
    raw: dict = {}
    node = raw
    for _ in range(200):
        node["installed"] = {"x": [{"direct_url": {}}]}
        node = node["installed"]["x"][0]["direct_url"]
    facts = Facts({"packages": raw})
    assert facts.packages.first("x") is not None
    assert facts.state("packages") == "ok"  # direct_url is open JSON: kept, not walked


def test_wrong_types_in_records_keep_the_rest_of_the_record() -> None:
    facts = Facts({"packages": {"installed": {"torch": [{"name": "torch", "version": 2.1, "user_site": "yes"}]}}})
    torch = facts.packages.first("torch")
    assert torch is not None and torch.name == "torch" and torch.version is None and torch.user_site is False
    assert facts.problems("packages") == [
        "installed.torch[0].version: expected str or null, got float",
        "installed.torch[0].user_site: expected bool, got str",
    ]


def test_package_and_python_reading_helpers() -> None:
    """The reading helpers rules share: records of a project in any spelling, the record
    import sees of every project, the metadata file of a record, the target Python X.Y."""
    facts = Facts(
        {
            "python": {"version": "3.11.4", "requested": "/opt/py/bin/python3"},
            "packages": {
                "installed": {
                    "torch-npu": [
                        {
                            "name": "torch_npu",
                            "version": "2.1.0.post10",
                            "dist_info": "/s/torch_npu-2.1.0.post10.dist-info",
                        },
                        {"name": "torch_npu", "version": "2.1.0", "location": "/u", "kind": "egg-info"},
                    ],
                    "numpy": [{"name": "numpy", "version": "1.26.4", "metadata": "/s/numpy.dist-info/METADATA"}],
                    "empty": [],
                }
            },
        }
    )
    pkgs = facts.packages
    assert [r.version for r in pkgs.records("Torch_NPU")] == ["2.1.0.post10", "2.1.0"]
    assert pkgs.first("torch.npu") is pkgs.records("torch-npu")[0]
    assert pkgs.first("torch") is None and pkgs.records("torch") == ()
    assert [r.name for r in pkgs.effective()] == ["torch_npu", "numpy"]
    npu, egg = pkgs.records("torch-npu")
    assert npu.metadata_source == "/s/torch_npu-2.1.0.post10.dist-info/METADATA"
    assert egg.metadata_source == "/u/PKG-INFO"
    assert pkgs.first("numpy").metadata_source == "/s/numpy.dist-info/METADATA"  # type: ignore[union-attr]
    assert facts.python.short == "3.11" and facts.python.requested == "/opt/py/bin/python3"
    assert Facts({"python": {"version_info": [3, 9, 1], "version": "3.10.0"}}).python.short == "3.9"
    assert Facts({"python": {"version": "weird"}}).python.short is None
