"""The shipped NPD plugin config (deploy/k8s/npd) keeps npd's three answers apart.

NPD's custom plugin monitor (node-problem-detector, pkg/custompluginmonitor,
``generateStatus`` and ``toConditionStatus``; exit codes mapped in ``plugin.run``), as this
config relies on it:

* a ``temporary`` rule emits a Warning event for every exit status at or above NonOK (1),
  so Unknown (2) too: such a rule would turn "npudoctor could not tell" into a problem
  event at every interval;
* a ``permanent`` rule sets its condition: exit 0 False, exit 1 True, anything else
  Unknown.  An event is emitted only when the condition changes (Warning when it turns
  True, Info otherwise), or while it stays True when the reason changes or -- with
  ``enable_message_change_based_condition_update`` -- the message; Unknown takes the
  condition's default reason and the plugin's message.

:func:`npd_reacts` is a small model of those rules in this project's words, run on the
shipped config: exit 2 must never yield a Warning event nor a True condition.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

import pytest
import yaml

NPD = Path(__file__).resolve().parent.parent / "deploy" / "k8s" / "npd"


def configs() -> Dict[str, Dict[str, Any]]:
    """The plugin config as shipped twice: the JSON file and the daemonset's ConfigMap."""
    docs = [d for d in yaml.safe_load_all((NPD / "daemonset.yaml").read_text()) if d]
    config_map = next(d for d in docs if d["kind"] == "ConfigMap")
    return {
        "npudoctor-plugin-monitor.json": json.loads((NPD / "npudoctor-plugin-monitor.json").read_text()),
        "daemonset.yaml": json.loads(config_map["data"]["npudoctor-plugin-monitor.json"]),
    }


def npd_reacts(config: Dict[str, Any], runs: Sequence[Tuple[int, str]]) -> List[Dict[str, Any]]:
    """For each plugin run ``(exit code, stdout)`` (every rule runs the same plugin), what
    NPD does: ``{"events": [(severity, reason)], "conditions": {type: (status, reason,
    message)}}``."""
    on_message = bool(config["pluginConfig"].get("enable_message_change_based_condition_update", False))
    defaults = {c["type"]: c for c in config["conditions"]}
    state = {t: ("False", c["reason"], c["message"]) for t, c in defaults.items()}
    out = []
    for code, message in runs:
        verdict = {0: "OK", 1: "NonOK"}.get(code, "Unknown")
        events: List[Tuple[str, str]] = []
        for rule in config["rules"]:
            if rule["type"] == "temporary":
                if verdict in ("NonOK", "Unknown"):  # ExitStatus >= NonOK
                    events.append(("Warning", rule["reason"]))
                continue
            kind = rule["condition"]
            status, reason, said = state[kind]
            new = {"OK": "False", "NonOK": "True"}.get(verdict, "Unknown")
            default = defaults[kind]
            if new == "True":
                changed = status != "True" or reason != rule["reason"] or (on_message and said != message)
                after = ("True", rule["reason"], message)
            else:
                changed = status != new
                after = (new, default["reason"], default["message"] if new == "False" else message)
            if changed:
                state[kind] = after
                events.append(("Warning" if new == "True" else "Info", after[1]))
        out.append({"events": events, "conditions": dict(state)})
    return out


@pytest.mark.parametrize("where", sorted(configs()))
def test_unknown_is_never_a_problem_event(where):
    config = configs()[where]
    runs = [
        (2, "not checked: devices: npu-smi timed out on a busy node"),
        (2, "not checked: devices: npu-smi timed out on a busy node"),
        (0, "npudoctor: NPU stack OK"),
        (2, "npudoctor: check did not finish within 50 s"),
        (1, "DRV001 npu-driver-missing"),
        (2, "not checked: devices: npu-smi timed out on a busy node"),
    ]
    seen = npd_reacts(config, runs)
    for (code, message), step in zip(runs, seen):
        statuses = {status for status, _reason, _message in step["conditions"].values()}
        if code == 2:
            assert "Warning" not in {s for s, _r in step["events"]}, (where, message, step)
            assert statuses == {"Unknown"}, (where, step)
            assert all(m == message for _s, _r, m in step["conditions"].values())
    # exit 1 is the one problem: a Warning event and a True condition naming the finding
    assert [s for s, _r in seen[4]["events"]] == ["Warning"]
    assert set(seen[4]["conditions"].values()) == {("True", "NPUStackError", "DRV001 npu-driver-missing")}
    # an Unknown run repeated emits nothing (the condition did not change)
    assert seen[1]["events"] == []


@pytest.mark.parametrize("where", sorted(configs()))
def test_rules_are_permanent_and_cover_one_condition(where):
    """One permanent rule (npd runs once per interval: npu-smi once), no temporary rule;
    the default reason is never an "OK" word (NPD shows it on an Unknown condition too)."""
    config = configs()[where]
    assert [r["type"] for r in config["rules"]] == ["permanent"]
    assert {r["condition"] for r in config["rules"]} == {c["type"] for c in config["conditions"]}
    for condition in config["conditions"]:
        assert "ok" not in condition["reason"].lower(), condition


@pytest.mark.parametrize("where", sorted(configs()))
def test_a_new_problem_replaces_the_message_and_is_an_event(where):
    """While the condition stays True, a different problem updates its message and emits a
    Warning event (the message-change flag); the same problem again emits nothing."""
    config = configs()[where]
    seen = npd_reacts(config, [(1, "DRV001 npu-driver-missing"), (1, "DRV001 npu-driver-missing"), (1, "DEV010 x")])
    assert seen[1]["events"] == []
    assert [s for s, _r in seen[2]["events"]] == ["Warning"]
    assert {m for _s, _r, m in seen[2]["conditions"].values()} == {"DEV010 x"}


def test_the_model_flags_the_old_temporary_rule():
    """The model is not vacuous: the config shipped before (a temporary rule beside the
    permanent one) made every exit 2 a Warning event."""
    config = configs()["npudoctor-plugin-monitor.json"]
    permanent = next(r for r in config["rules"] if r["type"] == "permanent")
    temporary = {k: v for k, v in permanent.items() if k != "condition"}
    old = dict(config, rules=[dict(temporary, type="temporary"), permanent])
    seen = npd_reacts(old, [(2, "not checked: devices"), (2, "not checked: devices")])
    assert [s for s, _r in seen[1]["events"]] == ["Warning"]
