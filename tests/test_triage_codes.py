"""Error-code families of the triage signatures (issue 17): nested codes resolve to the
innermost one, counters that look like codes stay unknown, and every label triage prints can
be explained by `npudoctor explain`."""

import json
import re

import pytest
from clirun import npudoctor

from npudoctor.knowledge.signatures import load_kb
from npudoctor.triage import triage_text

KB = load_kb()


def _named(line):
    """(signature id, label) of the one group triage makes of ``line``, or None."""
    doc = triage_text(line + "\n")
    named = [g for g in doc["known"] if g["severity"] != "noise"]
    if not named:
        return None
    (g,) = named
    return g["id"], g["label"]


@pytest.mark.parametrize(
    "line",
    [
        # counters and ids in the code ranges: never a code without the words that introduce one
        "[INFO] 2025-08-05 10:00:00 step 207004 loss=1.2345 lr=2.0e-05",
        "[INFO] RUNTIME(500001,python):2025-01-01-00:00:00.000.000 [stream.cc:10] task_id=500001, stream_id=3",
        "INFO 08-05 10:00:01 [engine.py:448] processed 507033 tokens in 107020 ms",
        "[EVENT] PROFILING(205664,python):2024-10-22-17:51:37.933.319 [msprof.cc:79] >>> (tid:507015) called",
        " iteration      182/  250000 | consumed samples:       186368 | learning rate: 1.365E-05",
        "[W compiler_depend.ts:123] Warning: something harmless happened (function operator())",
        # "error N" names a code only after an ACL API name
        "INFO 08-05 10:00:01 [metrics.py:20] request error 507011 times retried",
    ],
)
def test_counters_stay_unknown(line):
    assert _named(line) is None


@pytest.mark.parametrize(
    "line,expected",
    [
        (
            "EH9999  wait for compute device to finish failed, runtime result = 107020.[FUNC:ReportCallError]",
            "acl:107020",
        ),
        ("EH9999: Inner Error!", "cann:EH9999"),
        ("EH9999  [Init][Env]init env failed![FUNC:ReportInnerError][FILE:log_inner.cpp][LINE:145]", None),
        ("RuntimeError: call aclnnCast failed, detail:EZ1001: The param dtype not implemented", "cann:EZ1001"),
        ("[E OpParamMaker.cpp:273] call aclnnEqScalar failed, detail:EZ9999: Inner Error!", "cann:EZ9999"),
        ("        launch failed for Equal, errno:561000.", "aclnn:561000"),
        (
            "[rank1]: RuntimeError: InnerRunOpApi:OpParamMaker.cpp:281 OPS function error: HcclAllreduce, error code is 6",
            "hccl:6",
        ),
        ("[ERROR] 2026-08-25-11:59:04 (PID:12002, Device:0, RankID:-1) ERR02005 DIST internal error", "pta:ERR02005"),
        ("[PID: 704] 2026-05-08-03:20:31.862.990 Invalid_Argument(EL0003): The argument is invalid.", "cann:EL0003"),
        # the code after "error code" without "is", and after the ACL API that returned it (titles of
        # vllm-project/vllm-ascend#9824 and #11514)
        (
            "GLM5.1-w8a8在commit@2e94f 拉Prefill服务，出现算子报错aclnnInplaceFillScalar failed, error code 507015",
            "acl:507015",
        ),
        ("Bug: NPU Graph crash with aclnnScatterNdUpdate error 507011 when concurrency > max_num_seqs", "acl:507011"),
        (
            "[ERROR] 2025-06-18-06:55:12 (PID:4251, Device:-1, RankID:-1) ERR99999 UNKNOWN applicaiton exception",
            "pta:ERR99999",
        ),
    ],
)
def test_innermost_code_wins(line, expected):
    named = _named(line)
    assert named is not None
    if expected is None:
        assert named[0] == "init-env-failed-eh9999"
    else:
        assert named[1] == expected


def test_family_records_carry_the_official_meaning():
    doc = triage_text("RuntimeError: ACL stream synchronize failed, error code:507035\n")
    (g,) = doc["known"]
    assert g["code"] == "507035" and g["label"] == "acl:507035"
    # the official aclError table's meaning and constant, with that table's source first
    assert g["title"] == "ACL error 507035: The vector core execution is abnormal (ACL_ERROR_RT_VECTOR_CORE_EXCEPTION)"
    assert g["official"]["family"] == "acl" and g["official"]["code"] == "507035"
    assert g["sources"][0] == g["official"]["source"] and "NPUErrorCodes.h" in g["sources"][0]
    assert (
        "https://www.hiascend.com/document/detail/zh/canncommercial/latest/API/runtimeapi/aclcppdevg_03_1345.html"
        in g["sources"]
    )


def test_every_kind_and_code_the_kb_can_print_is_explained():
    for e in KB.entries:
        assert KB.explain(e.id) is not None, e.id
        for kind in list(e.kinds) + [c.kind for c in e.causes if c.kind]:
            page = KB.explain(kind)
            assert page is not None and page["what"] == "kind", (e.id, kind)
        for code in e.codes:
            page = KB.explain(code)
            assert page is not None and page["entry"] == e.id and page["title"] == e.code_meaning(code), code
    assert KB.explain("999999") is None and KB.explain("step") is None


def test_explain_accepts_every_label_triage_prints(tmp_path):
    log = tmp_path / "t.log"
    log.write_text(
        "EH9999  wait for compute device to finish failed, runtime result = 107020.\n"
        "ImportError: libhccl.so: cannot open shared object file: No such file or directory\n"
        "ERR00100 PTA call acl api failed\n"
        "[rank1]: HcclAllreduce, error code is 6\n",
        encoding="utf-8",
    )
    text = npudoctor("triage", str(log), "--no-facts").stdout
    ids = re.findall(r"\[([a-z0-9-]+)(?: [a-z]+:[-\w]+)?, line", text)  # the label follows the id
    labels = re.findall(r"\[[a-z0-9-]+ ([a-z]+:[-\w]+), line", text)
    assert ids and "acl:107020" in labels and "hccl:6" in labels
    assert not re.search(r"\bK\d\d\b", text)  # no internal kind ids in the text view (issue 28)
    doc = json.loads(npudoctor("triage", str(log), "--no-facts", "--json").stdout)
    kinds = sorted({c["kind"] for g in doc["known"] for c in g["causes"] if c["kind"]})
    assert kinds  # the JSON keeps them, and each is explained
    for label in ids + labels + kinds + ["107020", "acl:107020", "hccl:6", "EH9999", "ERR00100"]:
        res = npudoctor("explain", label)
        assert res.returncode == 0, (label, res.stderr)
    assert "task execution timed out" in npudoctor("explain", "107020").stdout
    assert npudoctor("explain", "K10").stdout.startswith("K10 (kind)")
    assert npudoctor("explain", "nosuch").returncode == 2


def test_gate_finds_every_line_a_pattern_or_error_shape_matches():
    """The few-pass gate is a superset of the patterns: every corpus line a signature or the
    generic error shapes match, and every anchor on its own, is a candidate line."""
    from test_triage_corpus import load_corpus

    from npudoctor.triage.gate import gate_for

    gate = gate_for(KB)
    for anchor in KB.anchors:
        assert gate.starts(b"xx\n" + anchor + b"\n") == {3}, anchor
    for code in ("EZ9999: x", "EL0003: x", "ERR02005 DIST internal error"):
        assert gate.starts(code.encode() + b"\n") == {0}, code
    for line in load_corpus():
        raw = line["text"].encode()
        matched = any(e.match_bytes(raw) is not None for e in KB.entries) or KB.generic.search(raw)
        if matched:
            assert gate.starts(raw + b"\n") == {0}, line["text"]


def test_progress_line_on_a_terminal_only(tmp_path, monkeypatch):
    import io

    import npudoctor.report.triage as report
    from npudoctor.cli.commands.triage import run_triage
    from npudoctor.session.request import Environment, MachineRequest

    log = tmp_path / "big.log"
    log.write_bytes(b"[INFO] step 1 loss=1.0\n" * 200000 + b"ERR02005 DIST internal error\n")
    monkeypatch.setattr(report, "PROGRESS_MIN_BYTES", 1 << 20)
    for tty in (True, False):
        err = io.StringIO()
        env = Environment(stdout=io.StringIO(), stderr=err, stderr_isatty=tty)
        assert int(run_triage([str(log)], MachineRequest(json=True), env, no_facts=True)) == 1
        if tty:
            assert "triage [" in err.getvalue() and "100%" in err.getvalue()
            assert err.getvalue().endswith("\r")  # the line is cleared
        else:
            assert err.getvalue() == ""


def test_traceback_frames_tie_the_log_to_findings_about_that_distribution():
    from npudoctor.findings import Finding

    log = (
        "Traceback (most recent call last):\n"
        '  File "/usr/local/python3.10/lib/python3.10/site-packages/vllm_ascend/worker/worker_v1.py", line 132, in init_device\n'
        "    torch_npu._C._npu_setDevice(device_id)\n"
        "ImportError: /usr/lib/python3.10/site-packages/torch_npu/lib/libtorch_npu.so: undefined symbol: _ZN3c104foo\n"
    )
    findings = [
        Finding(
            "CMP001", "x", "error", "packages", "vllm-ascend needs another torch-npu", subject="vllm-ascend:torch-npu"
        ),
        Finding(
            "LIB003",
            "y",
            "error",
            "libraries",
            "libtorch_npu.so misses symbols",
            subject="/site/torch_npu/lib/libtorch_npu.so",
        ),
        Finding("PKG009", "z", "error", "packages", "deepspeed is broken", subject="deepspeed"),
        Finding("PKG010", "w", "info", "packages", "vllm_ascend noted", subject="vllm_ascend"),
    ]
    doc = triage_text(log, facts={"host": {}}, findings=findings)
    tied = {(t["code"], t["by"]): t["first"]["line"] for t in doc["tied"]}
    assert tied == {
        ("CMP001", "a traceback frame in vllm_ascend"): 2,
        # the ImportError names a file of torch_npu, which CMP001 is also about
        ("CMP001", "an error naming a file of torch_npu"): 4,
        ("LIB003", "the library libtorch_npu.so"): 4,
    }
    # frame lines stay unknown: they name no signature
    assert all("File" not in g["sample"] for g in doc["known"])
