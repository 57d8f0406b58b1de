"""The typed facts views against real snapshots: every scenario's facts convert without a
problem and without a key the views do not declare; malformed sections never raise.

The scenario test is also the schema contract: ``collect`` (in-process) → the snapshot
validates against docs/schema/snapshot.schema.json (also once redacted) → ``check --from`` it
(in-process) → the report validates against docs/schema/check.schema.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Set, Tuple

import clirun
import jsonschema
import pytest
from scenario_runner import REPO, environment, scenario_dirs
from strict_facts import undeclared

from npudoctor.facts import SECTIONS, Facts, _typed
from npudoctor.snapshot import Snapshot, redact

try:
    import tomllib
except ImportError:  # pragma: no cover
    import tomli as tomllib  # type: ignore[no-redef]

SCENARIOS = scenario_dirs(REPO / "tests" / "scenarios", REPO / "examples")
#: Validators built once (``jsonschema.validate`` re-checks the schema on every call).
SNAPSHOT = jsonschema.Draft202012Validator(json.loads((REPO / "docs/schema/snapshot.schema.json").read_text("utf-8")))
CHECK = jsonschema.Draft202012Validator(json.loads((REPO / "docs/schema/check.schema.json").read_text("utf-8")))


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_every_scenario_fits_the_views_and_round_trips_through_the_schemas(scenario: Path, tmp_path: Path) -> None:
    spec = tomllib.loads((scenario / "scenario.toml").read_text(encoding="utf-8"))
    env = environment(scenario, spec)
    out = tmp_path / "snapshot.json"
    proc = clirun.npudoctor("collect", "--root", str(scenario / "root"), "--no-redact", "-o", str(out), env=env)
    assert proc.returncode == 0, proc.stderr
    snap = json.loads(out.read_text(encoding="utf-8"))
    assert undeclared(snap["facts"]) == [], scenario.name
    SNAPSHOT.validate(snap)
    SNAPSHOT.validate(json.loads(json.dumps(redact(Snapshot.from_dict(snap)).to_dict())))
    replay = clirun.npudoctor("check", "--from", str(out), "--json", env=env)
    assert replay.returncode in (0, 1), replay.stderr
    doc = json.loads(replay.stdout)
    CHECK.validate(doc)
    assert doc["target"]["mode"] == "from" and doc["facts"] == snap["facts"]
    _assert_msgspec_converts_as_the_plans(snap["facts"])
    report = clirun.npudoctor("check", "--from", str(out), "--markdown", env=env)
    assert report.returncode in (0, 1), report.stderr
    hidden = _strings(snap) - _strings(redact(Snapshot.from_dict(snap)).to_dict())  # what redaction removes
    assert [s for s in sorted(hidden) if len(s) >= 3 and s in report.stdout] == []


def _strings(value: Any) -> Set[str]:
    """Every string of a JSON value, keys too."""
    if isinstance(value, dict):
        return {k for k in value if isinstance(k, str)}.union(*(_strings(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_strings(v) for v in value))
    return {value} if isinstance(value, str) else set()


def _sections_both_ways(facts: Dict[str, Any], bulk: int) -> Dict[str, Tuple[Any, List[str]]]:
    """Every section of ``facts`` as its view and problems, with lists and maps of view
    records of ``bulk`` entries or more converted by msgspec (:data:`_typed.BULK`)."""
    saved = _typed.BULK
    _typed.BULK = bulk
    try:
        return {
            name: (lambda got: (got[0], got[1].as_list()))(_typed.load(SECTIONS[name], raw))
            for name, raw in facts.items()
        }
    finally:
        _typed.BULK = saved


def _assert_msgspec_converts_as_the_plans(facts: Dict[str, Any]) -> None:
    """msgspec (every container of view records, however short) and the field plans alone
    make equal views and problems of a real snapshot's sections."""
    assert _sections_both_ways(facts, 1) == _sections_both_ways(facts, 1 << 30)


def _distributions(count: int) -> Dict[str, Any]:
    """A ``packages`` section of ``count`` installed distributions shaped as the probe writes them."""
    site = "/usr/local/lib/python3.10/site-packages"
    return {
        "installed": {
            f"pkg-{i}": [
                {
                    "name": f"pkg-{i}",
                    "version": f"1.{i}.0",
                    "location": site,
                    "dist_info": f"{site}/pkg_{i}-1.{i}.0.dist-info",
                    "kind": "dist-info",
                    "requires_dist": ["numpy>=1.21", 'torch==2.1.0; extra == "npu"'],
                    "requires_python": ">=3.8",
                    "wheel_tags": ["py3-none-any"],
                    "installer": "pip",
                    "user_site": False,
                    "editable": False,
                    "metadata_error": None,
                    "direct_url": {"url": "file:///wheels", "dir_info": {}} if i % 7 == 0 else None,
                }
            ]
            for i in range(count)
        },
        "count": count,
    }


def test_a_long_packages_section_is_converted_by_msgspec_as_the_plans_would() -> None:
    section = _distributions(300)
    fast, plans = (
        _sections_both_ways({"packages": section}, _typed.BULK),
        _sections_both_ways({"packages": section}, 1 << 30),
    )
    assert fast == plans and fast["packages"][1] == []
    view = fast["packages"][0]
    assert view.installed["pkg-7"][0].direct_url == {"url": "file:///wheels", "dir_info": {}}
    assert view.installed["pkg-299"][0].requires_dist == ("numpy>=1.21", 'torch==2.1.0; extra == "npu"')
    kept = [t for t in _typed._BULK_TYPES.values() if t is not None]  # the node msgspec was given
    assert any("Distribution" in repr(t[0]) for t in kept)


def test_a_wrong_value_in_a_long_section_is_found_as_the_plans_find_it() -> None:
    section = _distributions(300)
    section["installed"]["pkg-57"][0]["version"] = 57
    section["installed"]["pkg-90"][0]["wheel_tags"] = "py3-none-any"
    fast = _sections_both_ways({"packages": section}, _typed.BULK)
    assert fast == _sections_both_ways({"packages": section}, 1 << 30)
    view, problems = fast["packages"]
    assert problems == [
        "installed.pkg-57[0].version: expected str or null, got int",
        "installed.pkg-90[0].wheel_tags: expected list, got str",
    ]
    assert view.installed["pkg-57"][0].version is None and view.installed["pkg-58"][0].version == "1.58.0"


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


def test_derived_facts_are_properties_of_their_section() -> None:
    """Facts derived from one section are properties of its view (the rules' helpers take
    views): the interpreter every fix names, torch's version, any project's version, the
    CANN in use, the named chips, the /dev/davinciN nodes and their numbers, where the
    process runs and the service that started it."""
    facts = Facts(
        {
            "python": {"version": "3.11.4", "requested": "/opt/py/bin/python3"},
            "packages": {
                "installed": {
                    "torch": [{"name": "torch", "version": "2.1.0+cpu"}],
                    "torch-npu": [{"name": "torch_npu"}],
                }
            },
            "cann": {"toolkits": [{"path": "/a", "version": "8.0.0"}], "selected": {"path": "/a", "version": "8.0.0"}},
            "devices": {"chips": [{"npu_id": 0, "name": "910B3"}, {"npu_id": 1}]},
            "container": {"kubernetes": True, "launched_by": [{"name": "systemd", "unit": "train.service"}]},
        }
    )
    assert facts.python.interpreter_path == "/opt/py/bin/python3"
    assert facts.packages.torch_version == "2.1.0+cpu"
    assert facts.packages.version_of("Torch") == "2.1.0+cpu"
    assert facts.packages.version_of("torch_npu") is None  # installed, but its metadata names no version
    assert facts.packages.version_of("numpy") is None
    assert facts.cann.version == "8.0.0" and facts.cann.present
    assert [c.name for c in facts.devices.named_chips] == ["910B3"]
    nodes = Facts(
        {
            "devices": {
                "nodes": [
                    {"path": "/dev/davinci3", "kind": "chip", "exists": True},
                    {"path": "/dev/davinci1", "kind": "chip", "exists": False},
                    {"path": "/dev/davinci_manager", "kind": "control", "exists": True},
                    {"path": "/dev/davinci", "kind": "chip", "exists": True},
                ]
            }
        }
    ).devices
    assert [n.path for n in nodes.chip_nodes] == ["/dev/davinci3", "/dev/davinci"]
    assert nodes.node_numbers == (3,) and nodes.nodes[2].number is None
    assert facts.container.runs_in == "pod" and facts.container.systemd_unit == "train.service"
    bare = Facts({"packages": {"installed": {"torch": [{"name": "torch"}]}}, "container": {"in_container": True}})
    assert bare.packages.torch_version == "" and Facts({}).packages.torch_version is None
    assert bare.cann.version is None and not bare.cann.present
    assert bare.container.runs_in == "container" and bare.container.systemd_unit is None
    assert Facts({}).container.runs_in == "host"
    assert Facts({"container": {"world": "build", "kubernetes": True}}).container.runs_in == "build"
    prefixes = {
        "/v/bin/python": {"prefix": "/v/", "is_venv": True},
        "/usr/bin/python3.10": {"prefix": "/usr/local", "version": "3.10.2", "site_packages": ["/x/dist-packages"]},
        "/opt/p/bin/python3.12": {"prefix": "/opt/p", "version": "3.12.1"},
        "python3": {},
    }
    for path, python in prefixes.items():
        assert Facts({"python": python}).python.interpreter_path == path


def test_an_integer_too_large_for_a_float_field_is_a_problem_not_a_crash() -> None:
    huge = 10**400  # what json.loads gives for a 401-digit integer
    chips = [{"npu_id": i, "name": "910B3", "power_w": huge if i == 3 else 93.5} for i in range(70)]
    for bulk in (_typed.BULK, 1 << 30):  # the 70 chips go to msgspec first, or to the plans only
        views = _sections_both_ways({"devices": {"chips": chips}}, bulk)
        view, problems = views["devices"]
        assert problems == ["chips[3].power_w: expected float or null, got int"]
        assert view.chips[3].power_w is None and view.chips[4].power_w == 93.5
