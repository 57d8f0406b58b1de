"""Reason before default: the reason text on a CANN code's line decides before the code's
generic entry, and a default cause the reason rules out is never printed.

Every line is a real log line from the public report named beside it (some shortened where
the report's line goes on with a long dtype list or trace)."""

from __future__ import annotations

import pytest

from npudoctor.triage import triage_text

#: (source, line, signature id, conclusion, defaults the line rules out: text no cause may have)
REAL_LINES = [
    (
        "https://github.com/hiyouga/LlamaFactory/issues/4165",
        "RuntimeError: call aclnnCast failed, detail:EZ1001: 2024-06-10-00:01:59.325.061 self not implemented for "
        "DT_BFLOAT16, should be in dtype support list [DT_FLOAT16,DT_FLOAT,DT_DOUBLE,DT_INT8,DT_UINT8,DT_INT16,"
        "DT_INT32,DT_INT64,DT_UINT16,DT_UINT32,DT_UINT64,DT_BOOL,DT_COMPLEX64,DT_COMPLEX128,].",
        "aclnn-dtype-bf16-unsupported",
        "the operator has no DT_BFLOAT16 kernel here (it accepts [DT_FLOAT16,DT_FLOAT,DT_DOUBLE,DT_INT8,DT_UINT8,"
        "DT_INT16,DT_INT32,DT_INT64,DT_UINT16,DT_UINT32,DT_UINT64,DT_BOOL,DT_COMPLEX64,DT_COMPLEX128,]): "
        "run the model in float16",
        ("kernels package",),
    ),
    (
        "https://github.com/huggingface/diffusers/issues/10428",
        "RuntimeError: call aclnnRepeatInterleaveIntWithDim failed, detail:EZ1001: [PID: 23975] "
        "2025-01-02-11:00:00.313.502 self not implemented for DT_DOUBLE, should be in dtype support list "
        "[DT_UINT8,DT_INT8,DT_INT16,DT_INT32,DT_INT64,DT_BOOL,DT_FLOAT16,DT_FLOAT,DT_BFLOAT16,].",
        "aclnn-dtype-float64-unsupported",
        "the operator has no float64 (DT_DOUBLE) kernel (it accepts [DT_UINT8,DT_INT8,DT_INT16,DT_INT32,DT_INT64,"
        "DT_BOOL,DT_FLOAT16,DT_FLOAT,DT_BFLOAT16,]): use float32 for this tensor",
        ("kernels package",),
    ),
    (
        "https://github.com/vllm-project/vllm-ascend/issues/6636",
        "(Worker_DP1_TP1_EP5 pid=465) ERROR 02-09 17:11:36 [multiproc_executor.py:751] [PID: 465] "
        "2026-02-09-17:11:34.368.749 AclNN_Parameter_Error(EZ1001): Tensor scale not implemented for DT_FLOAT16, "
        "should be in dtype support list [DT_UINT64,DT_BFLOAT16,DT_INT64,DT_FLOAT,].",
        "aclnn-dtype-unsupported",
        "the operator does not accept DT_FLOAT16 (it accepts [DT_UINT64,DT_BFLOAT16,DT_INT64,DT_FLOAT,]): "
        "pass it one of those",
        ("kernels package",),
    ),
    (
        "https://github.com/vllm-project/vllm-ascend/issues/1813",
        "(VllmWorker rank=0 pid=51715) ERROR 08-04 12:34:15 [multiproc_executor.py:546] RuntimeError: call "
        "aclnnMoeGatingTopKSoftmax failed, detail:EZ1001: [PID: 51715] 2025-08-04-12:34:15.167.986 Get regInfo "
        "failed, The binary_info_config.json of socVersion [ascend310p] does not support opType "
        "[MoeGatingTopKSoftmax].",
        "aclnn-op-not-supported-on-soc",
        "MoeGatingTopKSoftmax is not supported on ascend310p: its kernels package has no binary of it; run the "
        "model on hardware that supports it or avoid the operator",
        ("the kernels package for this chip is missing",),
    ),
    (
        "https://github.com/k2-fsa/sherpa-onnx/pull/2740",
        "[ACL ERROR] EE1001: [PID: 106] 2025-10-30-08:21:08.817.477 The argument is invalid.Reason: "
        "ModelCheckCompatibility failed, supported socVersion=Ascend910B2, but the model socVersion=Ascend910B",
        "om-model-soc-mismatch",
        "the model was compiled for Ascend910B but this device is Ascend910B2: recompile it for Ascend910B2",
        ("visible-device",),
    ),
    (
        "https://github.com/hiyouga/LlamaFactory/issues/3839",
        "EJ0001: 2024-05-21-11:57:54.167.645 Failed to initialize the HCCP process. Reason: Maybe the last "
        "training process is running.",
        "hccp-leftover-process",
        "a process of an earlier run still holds the NPU: kill it, wait 10 s and start again",
        ("CANN", "driver"),
    ),
    (
        "https://github.com/hw-native-sys/PTOAS/pull/341",
        "[ERROR] RecentErrMsg: [PID: 1613532] 2026-03-24-12:14:45.885.234 Memory_Allocation_Failure(EL0004): "
        "Failed to allocate memory.",
        "device-memory-exhausted",
        "NPU memory is exhausted: free it (processes left over, other jobs) or make the job need less",
        ("driver/firmware", "visible-device"),
    ),
]


@pytest.mark.parametrize("source,line,entry_id,conclusion,ruled_out", REAL_LINES, ids=[r[2] for r in REAL_LINES])
def test_the_reason_on_the_line_decides(source, line, entry_id, conclusion, ruled_out):
    assert source.startswith("https://github.com/")
    doc = triage_text(line + "\n")
    (g,) = doc["known"]
    assert g["id"] == entry_id
    assert g["conclusion"] == conclusion and doc["verdict"] == conclusion
    # the line states its cause: no fact is needed, and no default cause is printed
    assert g["causes"][0]["status"] == "cause" and g["causes"][0]["evidence"][0].startswith("the log line states it")
    for c in g["causes"]:
        for text in ruled_out:
            assert text not in c["text"] and text not in (c["here"] or ""), (entry_id, text)
    for text in ruled_out:
        assert not any(text in f for f in g["fix"]), (entry_id, text)
    # the official entry of the code still comes with it
    assert g["official"] is not None and g["label"] == "cann:" + g["official"]["code"]


def test_the_memory_pool_trace_line_of_a_device_start_names_memory():
    # the trace under EL0004 at device start (hw-native-sys/PTOAS#341)
    line = "        allocate device memory failed.[FUNC:Init][FILE:memory_pool_manager.cc][LINE:50]\n"
    (g,) = triage_text(line)["known"]
    assert g["id"] == "device-memory-exhausted" and g["conclusion"].startswith("NPU memory is exhausted")


def test_an_ez1001_argument_error_is_not_blamed_on_the_kernels():
    # vllm-project/vllm-ascend#5297
    line = (
        "(EngineCore_DP0 pid=172866) ERROR 12-23 12:56:15 [core.py:868] [PID: 172866] 2025-12-23-12:56:15.164.100 "
        "AclNN_Parameter_Error(EZ1001): The k-axis of the two inputs are different.\n"
    )
    (g,) = triage_text(line)["known"]
    assert g["id"] == "aclnn-parameter-error"
    assert g["conclusion"] == "the operator rejected its arguments: The k-axis of the two inputs are different."
    assert not any("kernels" in (c["here"] or "") + c["text"] for c in g["causes"])
    # a code with no reason after it states nothing: no cause is claimed, the official entry is shown
    (g,) = triage_text("RuntimeError: call aclnnSwiGlu failed, detail:EZ1001\n")["known"]
    assert g["id"] == "aclnn-parameter-error" and g["conclusion"] is None
    assert g["official"]["title"] == "AclNN_Parameter_Error" and g["causes"][0]["status"] == "unknown"


def test_a_bare_ez1001_still_reaches_its_default():
    doc = triage_text(
        "EZ1001: [PID: 72153] Get path and read binary_info_config.json failed, please check if the "
        "opp_kernel package is installed\n"
    )
    (g,) = doc["known"]
    assert g["id"] == "ez1001-binary-info-config"


def test_hccl_timeouts_in_use_are_named_when_the_machine_is_known():
    line = "EI0006: Getting socket times out. Reason: 1 server(s) not connected\n"
    facts = {"hccl": {"variables": {"HCCL_CONNECT_TIMEOUT": "600"}}}
    (g,) = triage_text(line, facts, findings=[])["known"]
    assert g["id"] == "ei0006-socket-timeout"
    assert g["meaning"].endswith("or a port conflict. In use here: HCCL_CONNECT_TIMEOUT=600.")
    (g,) = triage_text(line, {"hccl": {"variables": {}}}, findings=[])["known"]
    assert g["meaning"].endswith(" In use here: HCCL_CONNECT_TIMEOUT unset (HCCL's default 120 s).")
    # the notify-wait timeout names the execution timeout
    notify = "EI0002: The wait execution of the Notify register times out. Reason: remote rank: [3]\n"
    (g,) = triage_text(notify, {"hccl": {"variables": {"HCCL_EXEC_TIMEOUT": "7200"}}}, findings=[])["known"]
    assert g["id"] == "ei0002-notify-timeout" and g["meaning"].endswith(" In use here: HCCL_EXEC_TIMEOUT=7200.")
    # without the machine's facts nothing is claimed about them
    (g,) = triage_text(line)["known"]
    assert "In use here" not in g["meaning"] and "{" not in g["meaning"]
