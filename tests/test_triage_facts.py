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
import sys
from pathlib import Path

import pytest
from clirun import Result, npudoctor

from npudoctor.engine import load_rules
from npudoctor.knowledge.codes import registry
from npudoctor.triage import judge_cause, load_kb

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
K10_ROOT = HERE / "scenarios" / "k10-set-env-not-sourced" / "root"
TOOLKIT = "/usr/local/Ascend/ascend-toolkit/latest"
EH9999 = FIXTURES / "error_torch_npu_EH9999_init-env-failed_missing-python-deps.txt"
CTX_107002 = FIXTURES / "error_torch_npu_107002_context-empty_507008-init-soc-version.txt"
VIS_207004 = FIXTURES / "error_torch_npu_207004_ASCEND_RT_VISIBLE_DEVICES-out-of-range.txt"
LIBHCCL = FIXTURES / "error_import-torch_npu_libhccl-not-found_PTA-ERR00008.txt"
CLEAN_ENV = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root")}


def _run(*args: str, env=None) -> Result:
    return npudoctor(*args, env=env or CLEAN_ENV)


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
    assert "  - CANN's Python dependencies (decorator, attrs, sympy, ...) are missing\n" in text
    assert "Verdict:" not in text


def test_no_stack_note_only_where_there_are_causes_to_rank(no_stack_here, tmp_path):
    """The note says the causes are listed unranked: a log with no known signature (empty,
    binary, or only unknown lines) has no causes, so the note is not printed."""
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    elf = tmp_path / "core.log"
    with open(sys.executable, "rb") as fh:  # a real ELF executable
        elf.write_bytes(fh.read(1 << 16))
    for log in (empty, elf):
        proc = _run("triage", str(log))
        assert "this machine has no Ascend NPU stack" not in proc.stdout, proc.stdout
        assert "causes are listed unranked" not in proc.stdout
        doc = json.loads(_run("triage", str(log), "--json").stdout)
        assert doc["known"] == [] and doc["unranked"] == "no-npu-stack"  # the JSON keeps the fact
    # with a known signature the note stays
    assert "this machine has no Ascend NPU stack" in _run("triage", str(EH9999)).stdout


def test_npu_root_tree_keeps_the_ranking(no_stack_here):
    """The same log judged with the facts of an NPU tree (toolkit 8.0.0, nothing sourced)."""
    doc = _json(str(EH9999), "--root", str(K10_ROOT))
    assert doc["facts_from"] == "root" and doc["ranked"] is True and doc["unranked"] is None
    causes = {c["kind"]: c for c in _group(doc, "init-env-failed-eh9999")["causes"]}
    # PKG007 looked at this tree (no numpy at all) and said nothing: no sign of numpy 2
    # (the old triage-only check said "ruled out: numpy is not installed")
    assert causes["K07"]["status"] == "no_sign" and causes["K07"]["evidence"] == ["no PKG007 finding on these facts"]
    assert causes["K06"]["status"] == "cause"
    k10 = causes["K10"]
    assert k10["status"] == "cause"
    assert k10["evidence"][:2] == [  # ENV001's own title and evidence
        "ENV001: CANN 8.0.0 is installed but its set_env.sh is not sourced",
        f"CANN toolkit 8.0.0 at {TOOLKIT} (the default location)",  # how it was chosen, in words (issue 19)
    ]
    assert "ENV001" in k10["findings"]  # the rule's own verdict confirms it
    assert k10["here"] == (
        f"CANN is installed at {TOOLKIT} but PYTHONPATH lacks its python/site-packages "
        "(set_env.sh not sourced): source set_env.sh"
    )
    assert k10["fix"][0] == "source /usr/local/Ascend/ascend-toolkit/set_env.sh"


def test_k10_tree_labels_say_what_is_true_there():
    """libhccl.so missing with CANN 8.0.0 on disk: K10 'source set_env.sh'; the 'no toolkit'
    cause carries no kind and is ruled out by ENV001 (which fires only for an installed toolkit)."""
    doc = _json(str(LIBHCCL), "--root", str(K10_ROOT))
    for entry_id in ("cann-library-not-found", "pta-err00008-resource-not-found"):
        causes = _group(doc, entry_id)["causes"]
        top = causes[0]
        assert top["kind"] == "K10" and top["status"] == "cause", causes
        assert top["here"] == f"CANN is installed at {TOOLKIT} but set_env.sh was not sourced: source set_env.sh"
        none = next(c for c in causes if c["text"].startswith("no CANN toolkit is installed"))
        assert none["kind"] is None and none["status"] == "ruled_out"
        assert none["evidence"] == ["ENV001: CANN 8.0.0 is installed but its set_env.sh is not sourced"]
    text = _run("triage", str(LIBHCCL), "--root", str(K10_ROOT)).stdout
    assert "K10 no CANN toolkit" not in text
    assert (
        "  - no CANN toolkit is installed, so its libraries do not exist: ruled out "
        "(ENV001: CANN 8.0.0 is installed but its set_env.sh is not sourced)\n"
    ) in text


def test_pythonpath_with_the_toolkit_rules_k10_out(tmp_path):
    """--from facts where set_env.sh was sourced: ENV001/ENV004 judge the environment and say
    nothing, so K10 shows no sign (the old triage check said "ruled out: PYTHONPATH contains
    ..."); PKG007 confirms numpy 2."""
    tk = {"path": TOOLKIT, "resolved": "/usr/local/Ascend/ascend-toolkit/8.0.0", "version": "8.0.0"}
    site = "/usr/local/Ascend/ascend-toolkit/8.0.0/python/site-packages"
    facts = {
        "cann": {"toolkits": [tk], "selected": tk},
        "environment": {"toolkit": tk, "current": {"ASCEND_TOOLKIT_HOME": TOOLKIT, "PYTHONPATH": f"{site}:/opt/x"}},
        "packages": {
            "scanned": ["/opt/py/lib/python3.10/site-packages"],
            "installed": {"numpy": [{"name": "numpy", "version": "2.1.0"}]},
        },
        "python": {"executable": "/opt/py/bin/python", "version": "3.10.12", "version_info": [3, 10, 12]},
    }
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps({"schema_version": 1, "facts": facts}), encoding="utf-8")
    doc = _json(str(EH9999), "--from", str(snap))
    assert doc["ranked"] is True
    causes = {c["kind"]: c for c in _group(doc, "init-env-failed-eh9999")["causes"]}
    assert causes["K10"]["status"] == "no_sign"
    assert causes["K10"]["evidence"] == ["no ENV001/ENV004 finding on these facts"]
    assert causes["K07"]["status"] == "cause" and causes["K07"]["findings"] == ["PKG007"]
    assert causes["K07"]["evidence"][0].startswith("PKG007: numpy 2.1.0 is installed but CANN 8.0.0")


def _by_confirmer(entry, findings):
    """The causes of ``entry`` judged by ``findings`` alone, keyed by their first confirming code."""
    return {
        c.confirmed_by[0]: judge_cause(c, findings, {"lib": "libhccl.so"}, {}) for c in entry.causes if c.confirmed_by
    }


def test_a_k10_finding_does_not_claim_no_toolkit():
    """ENV001 (kind K10: installed, not sourced) must not confirm 'no CANN toolkit is
    installed' when the cann facts are absent: that cause has no kind, and ENV001 (a
    toolkit is installed) refutes it."""
    load_rules()
    env001 = registry()["ENV001"].finding(evidence=["CANN 8.0.0 is installed but its set_env.sh is not sourced"])
    entry = load_kb().by_id("cann-library-not-found")
    judged = _by_confirmer(entry, [env001])
    assert judged["CANN001"]["status"] == "ruled_out" and judged["CANN001"]["findings"] == []
    assert judged["ENV001"]["status"] == "cause"
    assert judged["ENV001"]["findings"] == ["ENV001"]
    # the finding that does say "no toolkit" confirms it by code (confirmed_by in signatures.toml)
    cann001 = registry()["CANN001"].finding(evidence=["looked in /usr/local/Ascend/ascend-toolkit/latest"])
    judged = _by_confirmer(entry, [cann001])
    assert judged["CANN001"]["status"] == "cause" and judged["CANN001"]["findings"] == ["CANN001"]
    assert judged["CANN001"]["here"].startswith("no CANN toolkit is installed here")
    # ... and refutes "installed but not sourced": there is nothing to source
    assert judged["ENV001"]["status"] == "ruled_out"


def test_npu_smi_not_found_agrees_with_check_in_a_container_that_has_the_driver(tmp_path):
    """The driver directory being mounted does not rule out a missing npu-smi: triage
    names the cause CTR003 reports for the same tree."""
    import json as _json
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
    proc = npudoctor("triage", str(log), "--root", str(scenario / "root"), "--json", env=environment(scenario, spec))
    assert proc.returncode == 1, proc.stderr
    text = _json.dumps(_json.loads(proc.stdout))
    assert "npu-smi is not on PATH here" in text and "ruled out" not in text
    assert "CTR003" in text


def test_triage_from_a_snapshot_with_unreadable_sections_says_so_as_check_does(tmp_path):
    """Issue 20: wrong-typed sections in ``--from`` are HOST005 in triage too (text and JSON),
    the same finding ``check --from`` makes; the rest of the snapshot still ranks the causes."""
    proc = _run("collect", "--root", str(K10_ROOT), "-o", "-")
    assert proc.returncode == 0, proc.stderr
    snap = json.loads(proc.stdout)
    snap["facts"]["packages"] = "oops"  # a section that is not an object
    snap["facts"]["driver"] = {"npu_smi_driver_version": ["25.0.rc1"]}  # a value of the wrong type
    path = tmp_path / "damaged.json"
    path.write_text(json.dumps(snap))
    check = json.loads(_run("check", "--from", str(path), "--json").stdout)
    want = [f for f in check["findings"] if f["code"] == "HOST005"]
    assert len(want) == 1 and want[0]["data"]["sections"] == ["packages", "driver"], want
    doc = _json("--from", str(path), str(EH9999))
    assert doc["facts_unreadable"] == [{"code": "HOST005", "title": want[0]["title"], "evidence": want[0]["evidence"]}]
    assert doc["facts_unreadable"][0]["evidence"] == [
        "packages.<section>: expected object, got str",
        "driver.npu_smi_driver_version: expected str or null, got list",
    ]
    text = _run("triage", "--from", str(path), str(EH9999))
    assert text.returncode == 1 and "Traceback" not in text.stderr
    assert f"! HOST005 {want[0]['title']}" in text.stdout
    assert "evidence: packages.<section>: expected object, got str" in text.stdout
