"""Which facts may judge the causes of a log.

* A live run on a machine without any Ascend stack must not rank a foreign log's causes
  with this machine's numpy or container state: the causes are listed unranked, once
  explained, and only what the log itself says (a visible-device index out of range)
  still concludes.
* A --root tree of an NPU machine keeps the ranking, and its labels say what is true
  there: a toolkit on disk whose set_env.sh was not sourced is K10 "source set_env.sh",
  never "K10 no CANN toolkit is installed".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from npudoctor.engine import load_rules
from npudoctor.knowledge import codes
from npudoctor.triage import FactView, judge_cause, load_kb

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
K10_ROOT = HERE / "scenarios" / "k10-set-env-not-sourced" / "root"
TOOLKIT = "/usr/local/Ascend/ascend-toolkit/latest"
EH9999 = FIXTURES / "error_torch_npu_EH9999_init-env-failed_missing-python-deps.txt"
CTX_107002 = FIXTURES / "error_torch_npu_107002_context-empty_507008-init-soc-version.txt"
VIS_207004 = FIXTURES / "error_torch_npu_207004_ASCEND_RT_VISIBLE_DEVICES-out-of-range.txt"
LIBHCCL = FIXTURES / "error_import-torch_npu_libhccl-not-found_PTA-ERR00008.txt"
CLEAN_ENV = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root")}


def _run(*args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "npudoctor", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env or CLEAN_ENV,
    )


def _json(*args: str, env=None) -> dict:
    proc = _run("triage", *args, "--json", env=env)
    assert proc.returncode == 1, proc.stderr
    return json.loads(proc.stdout)


def _group(doc: dict, entry_id: str) -> dict:
    return next(g for g in doc["known"] if g["id"] == entry_id)


@pytest.fixture(scope="module")
def no_stack_here():
    """Skip unless npudoctor itself finds no NPU stack on this machine (the live facts)."""
    from npudoctor.rules.overview import stack_evidence

    proc = _run("collect", "-o", "-")
    assert proc.returncode == 0, proc.stderr
    present = stack_evidence(json.loads(proc.stdout)["facts"])
    if present:
        pytest.skip(f"this machine has an NPU stack: {present[:2]}")


def test_live_run_without_npu_stack_lists_causes_unranked(no_stack_here):
    doc = _json(str(EH9999), str(CTX_107002), str(VIS_207004))
    assert doc["facts_from"] == "live" and doc["ranked"] is False and doc["unranked"] == "no-npu-stack"
    for entry_id in ("init-env-failed-eh9999", "acl-500001", "acl-107002-context-empty", "acl-507008-soc-version"):
        group = _group(doc, entry_id)
        assert group["conclusion"] is None, group["causes"]
        assert {c["status"] for c in group["causes"]} == {"unknown"}, group["causes"]
        # nothing of this machine is used as evidence (its numpy, its container state)
        assert all(not c["evidence"] and c["here"] is None for c in group["causes"])
    eh = _group(doc, "init-env-failed-eh9999")
    assert [c["kind"] for c in eh["causes"]] == ["K07", "K06", "K10"]  # the KB order, unranked
    assert eh["fix"][0].startswith("python -m pip install 'numpy<2' decorator")
    # what the log itself says still concludes: "ASCEND_RT_VISIBLE_DEVICES:4 ... rang[0-2)"
    vis = doc["known"][[g["id"] for g in doc["known"]].index("visible-devices-out-of-range")]
    assert (
        vis["conclusion"] == "ASCEND_RT_VISIBLE_DEVICES=4 but only 2 device(s) are visible: use 0-based indices below 2"
    )
    assert doc["verdict"] == vis["conclusion"]

    text = _run("triage", str(EH9999), str(CTX_107002)).stdout
    assert text.count("this machine has no Ascend NPU stack") == 1
    assert "--from <its snapshot>" in text and "--root <its rootfs>" in text
    assert "the cause here" not in text and "numpy 2 is the cause" not in text
    assert "running in a container" not in text and "possible (not checked)" not in text
    assert "  - K06 CANN's Python dependencies (decorator, attrs, sympy, ...) are missing\n" in text
    assert "Verdict:" not in text


def test_npu_root_tree_keeps_the_ranking(no_stack_here):
    """The same log judged with the facts of an NPU tree (toolkit 8.0.0, nothing sourced)."""
    doc = _json(str(EH9999), "--root", str(K10_ROOT))
    assert doc["facts_from"] == "root" and doc["ranked"] is True and doc["unranked"] is None
    causes = {c["kind"]: c for c in _group(doc, "init-env-failed-eh9999")["causes"]}
    assert causes["K07"]["status"] == "ruled_out" and causes["K07"]["evidence"] == ["numpy is not installed"]
    assert causes["K06"]["status"] == "cause"
    k10 = causes["K10"]
    assert k10["status"] == "cause"
    assert k10["evidence"][:2] == [
        f"CANN 8.0.0 is installed at {TOOLKIT}",
        f"PYTHONPATH unset (lacks {TOOLKIT}/python/site-packages)",
    ]
    assert "ENV001" in k10["findings"]  # the rule's own verdict confirms it
    assert k10["here"] == (
        f"CANN is installed at {TOOLKIT} but PYTHONPATH lacks its python/site-packages "
        "(set_env.sh not sourced): source set_env.sh"
    )
    assert k10["fix"][0] == "source /usr/local/Ascend/ascend-toolkit/set_env.sh"


def test_k10_tree_labels_say_what_is_true_there():
    """libhccl.so missing with CANN 8.0.0 on disk: K10 'source set_env.sh'; the 'no toolkit'
    cause carries no kind and is ruled out by the toolkit found."""
    doc = _json(str(LIBHCCL), "--root", str(K10_ROOT))
    for entry_id in ("cann-library-not-found", "pta-err00008-resource-not-found"):
        causes = _group(doc, entry_id)["causes"]
        top = causes[0]
        assert top["kind"] == "K10" and top["status"] == "cause", causes
        assert top["here"] == f"CANN is installed at {TOOLKIT} but set_env.sh was not sourced: source set_env.sh"
        none = next(c for c in causes if c["text"].startswith("no CANN toolkit is installed"))
        assert none["kind"] is None and none["status"] == "ruled_out"
        assert none["evidence"] == [f"CANN 8.0.0 is installed at {TOOLKIT}"]
    text = _run("triage", str(LIBHCCL), "--root", str(K10_ROOT)).stdout
    assert "K10 no CANN toolkit" not in text
    assert (
        "  - no CANN toolkit is installed, so its libraries do not exist: ruled out "
        f"(CANN 8.0.0 is installed at {TOOLKIT})\n"
    ) in text


def test_pythonpath_with_the_toolkit_rules_k10_out(tmp_path):
    """--from facts where set_env.sh was sourced (PYTHONPATH has <toolkit>/python/site-packages)."""
    tk = {"path": TOOLKIT, "resolved": "/usr/local/Ascend/ascend-toolkit/8.0.0", "version": "8.0.0"}
    facts = {
        "cann": {"toolkits": [tk], "selected": tk},
        "environment": {
            "current": {"PYTHONPATH": "/usr/local/Ascend/ascend-toolkit/8.0.0/python/site-packages:/opt/x"}
        },
        "packages": {"installed": {"numpy": [{"name": "numpy", "version": "2.1.0"}]}},
    }
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps({"schema_version": 1, "facts": facts}), encoding="utf-8")
    doc = _json(str(EH9999), "--from", str(snap))
    assert doc["ranked"] is True
    causes = {c["kind"]: c for c in _group(doc, "init-env-failed-eh9999")["causes"]}
    assert causes["K10"]["status"] == "ruled_out"
    assert causes["K10"]["evidence"] == [
        "PYTHONPATH contains /usr/local/Ascend/ascend-toolkit/8.0.0/python/site-packages"
    ]
    assert causes["K07"]["status"] == "cause"
    assert causes["K07"]["evidence"] == ["numpy 2.1.0 is installed", "CANN 8.0.0 requires numpy < 2"]


def test_a_k10_finding_does_not_claim_no_toolkit():
    """ENV001 (kind K10: installed, not sourced) must not confirm 'no CANN toolkit is
    installed' when the cann facts are absent: that cause has no kind."""
    load_rules()
    env001 = codes.get("ENV001").finding(evidence=["CANN 8.0.0 is installed but its set_env.sh is not sourced"])
    fv = FactView({}, [env001])
    entry = load_kb().by_id("cann-library-not-found")
    judged = {c.check: judge_cause(c, fv, {"lib": "libhccl.so"}, {}) for c in entry.causes}
    assert judged["no_toolkit"]["status"] == "unknown" and judged["no_toolkit"]["findings"] == []
    assert judged["toolkit_not_sourced"]["status"] == "cause"
    assert judged["toolkit_not_sourced"]["findings"] == ["ENV001"]
    # the finding that does say "no toolkit" confirms it by code (confirmed_by in errors.toml)
    cann001 = codes.get("CANN001").finding(evidence=["looked in /usr/local/Ascend/ascend-toolkit/latest"])
    fv = FactView({}, [cann001])
    judged = {c.check: judge_cause(c, fv, {"lib": "libhccl.so"}, {}) for c in entry.causes}
    assert judged["no_toolkit"]["status"] == "cause" and judged["no_toolkit"]["findings"] == ["CANN001"]
    assert judged["no_toolkit"]["here"].startswith("no CANN toolkit is installed here")


def test_npu_smi_not_found_agrees_with_check_in_a_container_that_has_the_driver(tmp_path):
    """The driver directory being mounted does not rule out a missing npu-smi: triage
    names the cause CTR003 reports for the same tree."""
    import json as _json
    import subprocess as _sp
    import sys as _sys
    from pathlib import Path as _Path

    repo = _Path(__file__).resolve().parent.parent
    sys_path = str(repo / "tests")
    if sys_path not in _sys.path:
        _sys.path.insert(0, sys_path)
    from scenario_runner import environment, prepare

    scenario = prepare(repo / "tests/scenarios/dev-npu-smi-missing-in-container", tmp_path)
    import tomllib

    spec = tomllib.loads((scenario / "scenario.toml").read_text())
    log = repo / "tests/fixtures/error_npu-smi_command-not-found_gha-runner-container.txt"
    proc = _sp.run(
        [_sys.executable, "-m", "npudoctor", "triage", str(log), "--root", str(scenario / "root"), "--json"],
        env=environment(scenario, spec),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    text = _json.dumps(_json.loads(proc.stdout))
    assert "npu-smi is not on PATH here" in text and "ruled out" not in text
    assert "CTR003" in text
