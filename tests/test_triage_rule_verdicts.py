"""Where the old triage judged facts itself and disagreed with a rule, the rule's verdict wins.

Triage no longer re-judges facts: a cause is "the cause here" only when a finding of one of
its ``confirmed_by`` codes is made on the same facts (npudoctor/knowledge/signatures.toml),
and "no sign of it here" when those rules looked and said nothing.  Each test names the old
triage verdict it replaces.
"""

from __future__ import annotations

from npudoctor.triage import triage_text

EI0006 = "[ERROR] HCCL(1,python):2025-01-01 [transport.cc:1] Communication_Error_Get_Socket(EI0006)\n"


def _hccl_facts(multi_node: bool, variables: dict, multi_process: bool = False) -> dict:
    """The hccl section as probes/hccl.py writes it (the parts HCCL011-HCCL013 read); the
    rules infer a multi-node job from NNODES and several ranks from WORLD_SIZE."""
    job = dict(variables)
    if multi_node:
        job["NNODES"] = "2"
    if multi_process:
        job["WORLD_SIZE"] = "8"
    return {"hccl": {"variables": job}}


def _timeout_cause(result: dict) -> dict:
    group = next(g for g in result["known"] if g["id"] == "ei0006-socket-timeout")
    return next(c for c in group["causes"] if c["kind"] == "K19")


def test_hccl_connect_timeout_unset_on_a_single_node_is_not_the_cause():
    """Old triage: an unset (or < 300 s) HCCL_CONNECT_TIMEOUT was "the cause here" on any
    node.  HCCL013 says nothing for a single-node job with the default kept, so neither
    does triage: no sign of it here, no conclusion, no verdict."""
    result = triage_text(EI0006, _hccl_facts(multi_node=False, variables={}))
    cause = _timeout_cause(result)
    assert cause["status"] == "no_sign", cause
    assert cause["here"] is None and cause["findings"] == []
    assert cause["evidence"] == ["no HCCL011/HCCL013 finding on these facts"]
    assert result["verdict"] is None


def test_hccl_connect_timeout_200_on_a_single_node_is_not_the_cause():
    """Old triage: 200 s < 300 s was the cause; HCCL013 on one node only names values < 120 s."""
    facts = _hccl_facts(multi_node=False, variables={"HCCL_CONNECT_TIMEOUT": "200"}, multi_process=True)
    assert _timeout_cause(triage_text(EI0006, facts))["status"] == "no_sign"


def test_hccl_connect_timeout_below_default_with_several_ranks_is_the_cause():
    """Where HCCL013 speaks (one node, several ranks, < 120 s), triage concludes with it."""
    facts = _hccl_facts(multi_node=False, variables={"HCCL_CONNECT_TIMEOUT": "60"}, multi_process=True)
    result = triage_text(EI0006, facts)
    cause = _timeout_cause(result)
    assert cause["status"] == "cause" and cause["findings"] == ["HCCL013"]
    assert "HCCL_CONNECT_TIMEOUT=60" in cause["here"]
    assert cause["fix"] == ["export HCCL_CONNECT_TIMEOUT=900  # the same value on every rank"]
    assert result["verdict"] == cause["here"]


def test_hccl_connect_timeout_unset_on_a_multi_node_job_is_the_cause():
    result = triage_text(EI0006, _hccl_facts(multi_node=True, variables={}))
    cause = _timeout_cause(result)
    assert cause["status"] == "cause" and cause["findings"] == ["HCCL013"]
    assert "HCCL_CONNECT_TIMEOUT unset" in cause["here"]


def test_hccn_conf_absent_on_a_single_node_is_not_the_cause():
    """Old triage: a missing /etc/hccn.conf was the cause of "device ip not set" anywhere;
    HCCL014 names it only for a multi-node job."""
    log = "[RanktablCheck] 'device ip' is not set correctly, must be set when multi Server\n"
    facts = _hccl_facts(multi_node=False, variables={})
    facts["hccl"]["hccn_conf"] = {"present": False}
    group = triage_text(log, facts)["known"][0]
    assert group["id"] == "hccl-device-ip-not-set"
    assert group["causes"][0]["status"] == "no_sign" and group["conclusion"] is None


def test_aarch64_alone_does_not_make_libgomp_the_cause():
    """Old triage: any aarch64 host made the libgomp static-TLS cause "the cause here".
    HOST001 needs a conda env that ships its own libgomp (and no LD_PRELOAD of it)."""
    log = "ImportError: /usr/lib/aarch64-linux-gnu/libgomp.so.1: cannot allocate memory in static TLS block\n"
    facts = {
        "host": {"arch": "aarch64"},
        "hygiene": {"libgomp": {"arch": "aarch64", "exists": False}},
        "packages": {"scanned": ["/usr/lib/python3/dist-packages"], "installed": {}},
    }
    cause = triage_text(log, facts)["known"][0]["causes"][0]
    assert cause["kind"] == "K21" and cause["status"] == "no_sign", cause


def test_a_refuting_finding_rules_a_cause_out_and_findings_write_the_fix():
    """The "no CANN toolkit" cause is ruled out by ENV001 (made only for an installed toolkit),
    and the confirmed cause's fix is ENV001's own (the rule is the one remedy writer)."""
    from npudoctor.engine import load_rules
    from npudoctor.knowledge.codes import registry

    load_rules()
    env001 = registry()["ENV001"].finding(fix=["source /opt/cann/set_env.sh"])
    result = triage_text("ImportError: libhccl.so: cannot open shared object file\n", {}, [env001])
    causes = {c["text"].split(",")[0]: c for c in result["known"][0]["causes"]}
    assert causes["no CANN toolkit is installed"]["status"] == "ruled_out"
    top = result["known"][0]["causes"][0]
    assert top["kind"] == "K10" and top["status"] == "cause" and top["fix"] == ["source /opt/cann/set_env.sh"]
