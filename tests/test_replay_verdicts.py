"""A replayed snapshot (``check --from``) is judged by the current rules: verdict-like
fields an older npudoctor stored beside the facts (the rank table's ``problems``, the
chips' matrix lookups ``family``/``bf16``/``kernels_dir``/matrix ``soc_version``) are
ignored, and their absence costs nothing.  So are the environment's ``missing_vars``,
``differs`` and ``stale``, the libraries' ``glibc.too_new`` and the deep probe's graded
``signatures``.  Such snapshots still load."""

from __future__ import annotations

import json
from typing import Any, Dict, List

import pytest

from npudoctor.context import Options
from npudoctor.engine import evaluate
from npudoctor.knowledge.chips import chip_identity
from npudoctor.knowledge.matrix import load_matrix
from npudoctor.snapshot import Snapshot


@pytest.fixture(scope="module")
def matrix():
    return load_matrix()


def _replay(facts: Dict[str, Any], matrix: Any = None) -> List[Any]:
    """Write the snapshot as JSON, load it back as `check --from` does, judge it."""
    doc = {"schema_version": 1, "created": "2025-01-01T00:00:00Z", "node": "n1", "target": {}, "facts": facts}
    snap = Snapshot.from_dict(json.loads(json.dumps(doc)))
    return evaluate(snap, matrix, Options())


def _codes(findings) -> List[str]:
    assert not [f for f in findings if f.code == "HOST099"], [f.title for f in findings if f.code == "HOST099"]
    return sorted(f.code for f in findings)


def _table(ranks, stale_problems):
    devices = [{"device_id": i, "device_ip": f"10.1.0.{i + 1}", "rank_id": r} for i, r in enumerate(ranks)]
    return {
        "path": "/etc/hccl.json",
        "variable": "RANK_TABLE_FILE",
        "read_error": None,
        "lossy": False,
        "ok": True,
        "error": None,
        "truncated": False,
        "strict_json": True,
        "tolerated": [],
        "version": "1.0",
        "status": "completed",
        "server_count": 1,
        "server_count_raw": "1",
        "servers": [{"index": 0, "server_id": "10.0.0.1", "devices": devices, "has_device_list": True}],
        "super_pods": [],
        "rank_count": len(devices),
        "problems": stale_problems,
    }


def test_rank_table_verdict_is_computed_not_replayed():
    # A duplicate rank, but the stored verdict says "no problem": HCCL004 all the same.
    found = _replay({"hccl": {"rank_table": _table([0, 0], [])}})
    (dup,) = [f for f in found if f.code == "HCCL004"]
    assert dup.evidence == ["rank_id 0 is used 2 times: server 10.0.0.1 device[0], server 10.0.0.1 device[1]"]
    # A sound table whose stored verdict names faults it does not have: no finding.
    stale = [
        {"kind": "duplicate-rank", "message": "rank_id 0 is used 2 times", "rank": 0},
        {"kind": "unreadable", "message": "cannot read /etc/hccl.json: gone"},
    ]
    assert [c for c in _codes(_replay({"hccl": {"rank_table": _table([0, 1], stale)}})) if c <= "HCCL005"] == []
    # No stored verdict at all (the current snapshot shape): judged the same.
    table = _table([0, 2], [])
    del table["problems"]
    assert "HCCL005" in _codes(_replay({"hccl": {"rank_table": table}}))


def test_unreadable_rank_table_is_judged_from_the_read_error():
    table = {"path": "/etc/hccl.json", "variable": "RANK_TABLE_FILE", "read_error": "No such file or directory"}
    (f,) = [f for f in _replay({"hccl": {"rank_table": table}}) if f.code == "HCCL001"]
    assert f.title == "RANK_TABLE_FILE=/etc/hccl.json cannot be read: No such file or directory"
    assert f.evidence[1] == "cannot read /etc/hccl.json: No such file or directory"


def test_chip_identity_comes_from_the_current_matrix(matrix):
    # Stored by an older probe from an older matrix: plain 910B (the first-generation
    # 910, no bf16) said to be family 910B with bf16; the current matrix says otherwise.
    stale = {
        "npu_id": 0,
        "name": "910B",
        "health": "OK",
        "family": "910B",
        "bf16": True,
        "kernels_dir": "ascend910b",
        "soc_version": "Ascend910B3",
        "soc_source": "matrix (npu-smi Name)",
    }
    found = _replay({"devices": {"chips": [stale]}}, matrix)
    assert "DEV041" in _codes(found)
    (no_bf16,) = [f for f in found if f.code == "DEV041"]
    assert "family 910" in no_bf16.title and "Ascend910B" in no_bf16.title and "Ascend910B3" not in no_bf16.title
    # The same chip as written now (no identity fields): the same verdict.
    assert "DEV041" in _codes(_replay({"devices": {"chips": [{"npu_id": 0, "name": "910B"}]}}, matrix))
    # A stale "bf16 false" on a chip that has bf16 is not repeated.
    wrong = {"npu_id": 0, "name": "910B3", "family": "910", "bf16": False}
    assert "DEV041" not in _codes(_replay({"devices": {"chips": [wrong]}}, matrix))


def test_measured_soc_version_is_kept_and_matrix_lookups_are_redone(matrix):
    a3 = {"name": "Ascend910", "soc_version": "Ascend910_9391", "soc_source": "npu-smi info -t board (…)"}
    ident = chip_identity(matrix, dict(a3, family="910B", bf16=False))
    assert ident == {
        "soc_version": "Ascend910_9391",
        "soc_source": "npu-smi info -t board (…)",
        "family": "910_93",
        "bf16": True,
        "kernels_dir": "ascend910_93",
        "product_line": "Atlas A3 training products / Atlas A3 inference products",
        "known": True,
    }
    assert chip_identity(matrix, {"name": "910B3"})["soc_source"] == "matrix (npu-smi Name)"
    assert chip_identity(None, {"name": "910B3", "family": "910B"})["known"] is False
    assert chip_identity(matrix, {"name": "910B9", "family": "910B"})["known"] is False


def test_multi_node_is_inferred_now_not_replayed():
    # Stored "single node", but NNODES=2 and no HCCL_CONNECT_TIMEOUT: HCCL013 all the same.
    stale_single = {
        "variables": {"NNODES": "2"},
        "multi_node": {"value": False, "reasons": ["NNODES=1"]},
        "multi_process": {"value": None, "reasons": []},
    }
    (f,) = [f for f in _replay({"hccl": stale_single}) if f.code == "HCCL013"]
    assert f.evidence == ["HCCL_CONNECT_TIMEOUT unset (HCCL default 120 s)", "multi-node: NNODES=2"]
    # Stored "multi-node", but the facts say one node: nothing to say about the timeout.
    stale_multi = {
        "variables": {"NNODES": "1"},
        "multi_node": {"value": True, "reasons": ["the rank table lists 2 servers"]},
        "multi_process": {"value": True, "reasons": ["WORLD_SIZE=16"]},
    }
    assert "HCCL013" not in _codes(_replay({"hccl": stale_multi}))


def test_npu_smi_failure_cause_is_judged_from_the_dcmi_code():
    def smi(**kw):
        base = {
            "available": False,
            "path": "/usr/local/bin/npu-smi",
            "commands": [],
            "message": "dcmi ... ret is -8005",
        }
        return {"devices": {"npu_smi": dict(base, **kw)}}

    # An older snapshot that called -8005 a driver failure, and the current shape ("dcmi").
    for facts in (smi(cause="driver", code=-8005), smi(cause="dcmi", code=-8005), smi(code=-8005)):
        codes = _codes(_replay(facts))
        assert "DEV002" in codes and "DEV004" not in codes, facts
    # An unknown DCMI code stored as "busy": the driver interface failed (DEV004), not busy.
    codes = _codes(_replay(smi(cause="busy", code=-8001)))
    assert "DEV004" in codes and "DEV002" not in codes


_TK = "/usr/local/Ascend/ascend-toolkit/8.0.0"
_OLD = "/usr/local/Ascend/ascend-toolkit/7.0.RC1"


def _env_facts(current: Dict[str, str], **stored: Any) -> Dict[str, Any]:
    sel = {"path": _TK, "version": "8.0.0"}
    env = {
        "toolkit": {"path": _TK, "version": "8.0.0", "source": "cann.selected"},
        "sourced": True,
        "set_env_script": "/usr/local/Ascend/ascend-toolkit/set_env.sh",
        "expected": {
            "method": "set_env.sh",
            "script": "/usr/local/Ascend/ascend-toolkit/set_env.sh",
            "variables": {"ASCEND_TOOLKIT_HOME": _TK, "ASCEND_HOME_PATH": _TK, "ASCEND_OPP_PATH": f"{_TK}/opp"},
            "added": {},
        },
        "current": current,
        "missing_paths": {},
    }
    env.update(stored)
    return {"environment": env, "cann": {"toolkits": [sel, {"path": _OLD, "version": "7.0.RC1"}], "selected": sel}}


def test_environment_variables_are_judged_now_not_replayed():
    # Stored "nothing unset, nothing custom, nothing stale"; the values say otherwise.
    current = {
        "ASCEND_TOOLKIT_HOME": _TK,
        "ASCEND_OPP_PATH": "/data/custom/opp",
        "LD_LIBRARY_PATH": f"{_OLD}/lib64:{_TK}/lib64",
    }
    found = _replay(_env_facts(current, missing_vars=[], differs=[], stale=[]))
    assert [c for c in _codes(found) if c.startswith("ENV")] == ["ENV002", "ENV003", "ENV006"]
    (unset,) = [f for f in found if f.code == "ENV003"]
    assert unset.title == "CANN variables unset: ASCEND_HOME_PATH (set_env.sh only partly applied)"
    (custom,) = [f for f in found if f.code == "ENV006"]
    assert custom.title == f"ASCEND_OPP_PATH=/data/custom/opp (set_env.sh would set {_TK}/opp)"
    (stale,) = [f for f in found if f.code == "ENV002"]
    # No `paths` fact (an older snapshot): whether the entry exists is not claimed.
    assert stale.evidence[1] == f"LD_LIBRARY_PATH entry {_OLD}/lib64 belongs to CANN 7.0.RC1 at {_OLD}"
    # Stored verdicts naming faults a sound environment does not have: no finding.
    sound = {"ASCEND_TOOLKIT_HOME": _TK, "ASCEND_HOME_PATH": _TK, "ASCEND_OPP_PATH": f"{_TK}/opp"}
    old_verdicts = {
        "missing_vars": ["ASCEND_HOME_PATH"],
        "differs": [{"name": "ASCEND_OPP_PATH", "expected": f"{_TK}/opp", "current": "/x"}],
        "stale": [{"variable": "PATH", "value": f"{_OLD}/bin", "install": _OLD, "version": "7.0.RC1", "exists": True}],
    }
    assert [c for c in _codes(_replay(_env_facts(sound, **old_verdicts))) if c.startswith("ENV")] == []


def test_environment_values_are_compared_through_the_paths_the_probe_resolved():
    # ASCEND_TOOLKIT_HOME through the `latest` link and a path entry that does not exist:
    # the probe stored how the root resolves each; the rule compares the resolutions.
    latest = "/usr/local/Ascend/ascend-toolkit/latest"
    current = {
        "ASCEND_TOOLKIT_HOME": latest,
        "ASCEND_HOME_PATH": _TK,
        "ASCEND_OPP_PATH": f"{latest}/opp",
        "PATH": f"{_OLD}/bin:/usr/bin",
    }
    paths = {
        latest: {"resolved": _TK, "exists": True},
        f"{latest}/opp": {"resolved": f"{_TK}/opp", "exists": True},
        f"{_OLD}/bin": {"resolved": f"{_OLD}/bin", "exists": False},
    }
    found = _replay(_env_facts(current, paths=paths))
    assert [c for c in _codes(found) if c.startswith("ENV")] == ["ENV002"]
    (stale,) = [f for f in found if f.code == "ENV002"]
    assert stale.evidence[1] == f"PATH entry {_OLD}/bin (does not exist) belongs to CANN 7.0.RC1 at {_OLD}"
    # Without the resolutions, `latest` is judged by its shape: another CANN install.
    (stale,) = [f for f in _replay(_env_facts(current)) if f.code == "ENV002"]
    assert stale.title == (
        f"The environment points at {latest}, {_OLD} (CANN 7.0.RC1) while the toolkit in use is {_TK}"
    )


_SOUND = {"ASCEND_TOOLKIT_HOME": _TK, "ASCEND_HOME_PATH": _TK, "ASCEND_OPP_PATH": f"{_TK}/opp"}


def _env_only(found) -> List[str]:
    return [c for c in _codes(found) if c.startswith("ENV")]


def test_set_env_sourced_is_judged_now_not_replayed():
    # Stored "sourced", but nothing of set_env.sh is in the environment: ENV001.
    assert _env_only(_replay(_env_facts({"PATH": "/usr/bin"}, sourced=True))) == ["ENV001"]
    # Stored "not sourced", but the toolkit's lib64 is on LD_LIBRARY_PATH through the
    # `latest` link the probe resolved: a trace of set_env.sh, so no ENV001 (ENV003: the
    # variables it sets are unset).
    latest = "/usr/local/Ascend/ascend-toolkit/latest"
    current = {"LD_LIBRARY_PATH": f"{latest}/lib64"}
    paths = {f"{latest}/lib64": {"resolved": f"{_TK}/lib64", "exists": True, "is_dir": True}}
    assert _env_only(_replay(_env_facts(current, sourced=False, paths=paths))) == ["ENV003"]
    # A stored "sourced: False" in a sound environment: nothing.
    assert _env_only(_replay(_env_facts(_SOUND, sourced=False))) == []


def test_missing_path_entries_are_judged_now_not_replayed():
    driver = "/usr/local/Ascend/driver/lib64/driver"
    added = {"LD_LIBRARY_PATH": [f"{_TK}/lib64", driver, "/usr/local/Ascend/nnal/atb/lib"]}
    paths = {
        f"{_TK}/lib64": {"resolved": f"{_TK}/lib64", "exists": True, "is_dir": True},
        driver: {"resolved": driver, "exists": True, "is_dir": True},
        "/usr/local/Ascend/nnal/atb/lib": {
            "resolved": "/usr/local/Ascend/nnal/atb/lib",
            "exists": True,
            "is_dir": True,
        },
    }

    def facts(current: Dict[str, str], **stored: Any) -> Dict[str, Any]:
        doc = _env_facts(current, paths=paths, **stored)
        doc["environment"]["expected"]["added"] = added
        return doc

    # Stored "nothing missing", but the driver directory (a directory in the root) is not
    # on LD_LIBRARY_PATH now: ENV003 (NNAL's entries are ENV005's business).
    found = _replay(facts(dict(_SOUND, LD_LIBRARY_PATH=f"{_TK}/lib64"), missing_paths={}))
    assert _env_only(found) == ["ENV003"]
    (f,) = [f for f in found if f.code == "ENV003"]
    assert f.evidence[1] == f"LD_LIBRARY_PATH lacks (directories that exist): {driver}"
    # Stored "the driver directory is missing", but it is on the path now: nothing.
    sound = dict(_SOUND, LD_LIBRARY_PATH=f"{driver}:{_TK}/lib64")
    assert _env_only(_replay(facts(sound, missing_paths={"LD_LIBRARY_PATH": [driver]}))) == []
    # An added entry whose existence the snapshot does not record is not claimed missing.
    doc = facts(dict(_SOUND, LD_LIBRARY_PATH=f"{_TK}/lib64"))
    doc["environment"]["paths"] = {}
    assert _env_only(_replay(doc)) == []


def test_nnal_lib_on_path_is_judged_now_not_replayed():
    home = "/usr/local/Ascend/nnal/atb/latest/atb/cxx_abi_0"
    real = "/usr/local/Ascend/nnal/atb/8.2.RC1/atb/cxx_abi_0"

    def facts(ld: str, **stored: Any) -> Dict[str, Any]:
        nnal = {
            "path": "/usr/local/Ascend/nnal/atb",
            "version": "8.2.RC1",
            "script": "/usr/local/Ascend/nnal/atb/set_env.sh",
            "expected_atb_home": home,
            "current_atb_home": home,
        }
        nnal.update(stored)
        paths = {f"{home}/lib": {"resolved": f"{real}/lib", "exists": True, "is_dir": True}}
        return _env_facts(dict(_SOUND, ATB_HOME_PATH=home, LD_LIBRARY_PATH=ld), nnal=nnal, paths=paths)

    # Stored "on the path", but LD_LIBRARY_PATH lacks <ATB_HOME_PATH>/lib: ENV005.
    (f,) = [f for f in _replay(facts(f"{_TK}/lib64", lib_on_path=True)) if f.code.startswith("ENV")]
    assert f.code == "ENV005"
    assert f"LD_LIBRARY_PATH lacks {home}/lib (libatb.so)" in f.evidence
    # Stored "not on the path", but it is, through the directory `latest` resolves to: nothing.
    assert _env_only(_replay(facts(f"{real}/lib:{_TK}/lib64", lib_on_path=False))) == []


def _libs(defined: List[str], stored_too_new: List[Dict[str, Any]]) -> Dict[str, Any]:
    npu = "/usr/lib/python3.10/site-packages/torch_npu"
    return {
        "libraries": {
            "torch_npu": {"version": "2.4.0", "location": "/usr/lib/python3.10/site-packages", "package_dir": npu},
            "objects": [
                {"path": f"{npu}/_C.so", "version_needs": {"libc.so.6": ["GLIBC_2.17"]}},
                {"path": f"{npu}/lib/libtorch_npu.so", "version_needs": {"libstdc++.so.6": ["GLIBCXX_3.4.30"]}},
                {"path": f"{npu}/lib/broken.so", "error": "not an ELF file"},
            ],
            "glibc": {
                "providers": {"libc.so.6": "/lib64/libc.so.6", "libstdc++.so.6": "/lib64/libstdc++.so.6"},
                "defined": {"libc.so.6": ["GLIBC_2.17", "GLIBC_2.28"], "libstdc++.so.6": defined},
                "too_new": stored_too_new,
            },
        }
    }


def test_symbol_versions_too_new_are_judged_now_not_replayed():
    old = [f"GLIBCXX_3.4.{n}" for n in range(26)]
    # Stored "nothing too new", but libtorch_npu.so needs GLIBCXX_3.4.30 from a libstdc++
    # that stops at 3.4.25: LIB002 all the same.
    (f,) = [f for f in _replay(_libs(old, [])) if f.code == "LIB002"]
    assert f.title == "/lib64/libstdc++.so.6 lacks GLIBCXX_3.4.30 needed by torch_npu"
    assert "/lib64/libstdc++.so.6 provides up to GLIBCXX_3.4.25" in f.evidence
    # A stored verdict naming versions the provider does define: no finding.
    stale = [
        {
            "library": "libc.so.6",
            "version": "GLIBC_2.17",
            "needed_by": "/x/_C.so",
            "provider": "/lib64/libc.so.6",
            "highest": "GLIBC_2.12",
        }
    ]
    assert "LIB002" not in _codes(_replay(_libs(old + ["GLIBCXX_3.4.30"], stale)))


def _deep(stored_signatures: List[Dict[str, Any]]) -> Dict[str, Any]:
    error = "libhccl.so: cannot open shared object file: No such file or directory"
    return {
        "deep": {
            "ran": True,
            "interpreter": "/usr/bin/python3",
            "outcome": "failed",
            "failed_step": "import_torch_npu",
            "error": f"ImportError: {error}",
            "steps": [
                {"name": "import_torch", "status": "ok", "duration": 1.0},
                {"name": "import_torch_npu", "status": "failed", "error_type": "ImportError", "error": error},
            ],
            "stderr_head": "",
            "stderr_tail": "",
            "signatures": stored_signatures,
        }
    }


def test_deep_signatures_are_matched_now_not_replayed():
    from npudoctor.facts import Facts
    from npudoctor.rules.deep import deep_signatures

    # Stored "no signature" (or a stale one graded by an older knowledge base): the
    # failure text is matched against the current signatures all the same.
    stale = [{"id": "hccl-timeout", "title": "HCCL timed out", "severity": "error", "kinds": [], "captures": {}}]
    for stored in ([], stale):
        facts = _deep(stored)
        assert [(s["id"], s["captures"]) for s in deep_signatures(Facts(facts).deep)][:1] == [
            ("cann-library-not-found", {"lib": "libhccl.so"})
        ]
        (f,) = [f for f in _replay(facts) if f.code == "DEEP002"]
        assert f.data["signatures"][:1] == ["cann-library-not-found"]
        assert "hccl-timeout" not in f.data["signatures"]
    # Text that matches nothing: no signature, whatever was stored.
    quiet = _deep(stale)
    quiet["deep"]["steps"][1]["error"] = "something else entirely"
    assert deep_signatures(Facts(quiet).deep) == []
