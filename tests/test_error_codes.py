"""The official error-code tables (npudoctor/knowledge/data/error_codes/) and their use by
triage and ``explain``: every code the tables list prints its official meaning, cause and
solution; a code they do not list keeps its family's generic text."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from npudoctor.knowledge import error_codes
from npudoctor.knowledge.signatures import fill, load_kb
from npudoctor.report.triage import render_text
from npudoctor.triage import triage_text

KB = load_kb()
TABLES = error_codes.tables()


def _first(line: str):
    """The signature the scanner gives ``line`` (the first entry in KB order that matches)
    and the label it fills."""
    found = KB.classify(line)
    assert found, line
    entry, caps = found[0]
    return entry, fill(entry.label, entry.values(caps))


def test_tables_are_whole_and_each_code_has_its_source():
    sizes = {family: len(codes) for family, codes in TABLES.items()}
    assert sizes["cann"] >= 530 and sizes["acl"] >= 180
    assert sizes["hccl"] == 23 and sizes["dcmi"] == 19
    for family, codes in TABLES.items():
        for code, found in codes.items():
            assert found.family == family and found.code == code
            assert found.source.startswith("https://"), code
            assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", found.retrieved), code
            assert found.title or found.solution or found.cause, code


def test_official_entries_read_what_the_sources_say():
    el0004 = error_codes.lookup("cann", "EL0004")
    assert el0004 is not None and el0004.title == "Memory_Allocation_Failure"
    assert el0004.cause == "Available memory is insufficient."
    assert el0004.solution == "Close applications not in use."
    ej0001 = error_codes.lookup("cann", "ej0001")
    assert ej0001 is not None and "Maybe the last training process is running" in ej0001.message
    assert ej0001.solution == "Wait for 10s after killing the last training process and try again."
    acl = error_codes.lookup_label("acl:507033")
    assert acl is not None and acl.title == "ACL_ERROR_RT_DEV_SETUP_ERROR"
    assert acl.summary() == "Failed to start the device (ACL_ERROR_RT_DEV_SETUP_ERROR)"
    assert error_codes.lookup_label("aclnn:507033") == acl  # aclnn labels read the ACL table
    hccl = error_codes.lookup("hccl", "21")
    assert hccl is not None and hccl.title == "HCCL_E_REMOTE"
    dcmi = error_codes.lookup_label("dcmi:-8020")
    assert dcmi is not None and dcmi.title == "DCMI_ERR_CODE_RESOURCE_OCCUPIED"
    assert error_codes.lookup("cann", "EZ8888") is None and error_codes.lookup_label("acl") is None
    assert error_codes.lookup_label("loader:cannot-open") is None and error_codes.lookup("nosuch", "1") is None
    ei0020 = error_codes.lookup("cann", "EI0020")  # a hand-written table beside the generated one
    assert ei0020 is not None and "HCCL_NPU_SOCKET_PORT_RANGE" in ei0020.solution


@pytest.mark.parametrize("family", ["cann", "acl", "hccl", "dcmi"])
def test_every_listed_code_is_named_with_its_official_entry(family):
    """A line carrying any code of the tables is claimed by a signature whose label names
    that code, so triage prints the official entry (warning codes W* are not error lines)."""
    line = {
        "cann": "[ERROR] RUNTIME(1,python):2025-01-01 {code}: something failed.",
        "acl": "RuntimeError: call aclrtFoo failed, error code is {code}",
        "hccl": "HcclAllReduce(x) failed, error code is {code}",
        "dcmi": "dcmi_get_card_list failed. ret is {code}",
    }[family]
    missed = []
    for code in TABLES[family]:
        if code.startswith("W"):
            continue
        _entry, label = _first(line.format(code=code))
        found = error_codes.lookup_label(label)
        if found is None or found.code != code:
            missed.append((code, label))
    assert not missed


def test_triage_prints_the_official_cause_and_solution():
    # a real line (vllm-project/vllm-ascend#8186)
    doc = triage_text(
        "[PID: 389] 2026-05-01-10:59:14.702.326 Device_Absent/Abnormal(EL0001): Device not found or invalid.\n"
    )
    (g,) = doc["known"]
    assert g["label"] == "cann:EL0001" and g["official"]["code"] == "EL0001"
    assert g["title"] == "CANN error EL0001: Device Absent/Abnormal"
    # a family's generic advice ("read the message") gives way to the official solution
    assert g["fix"] == ["Check the error messages in the log."]
    assert g["sources"][0].endswith("src/dfx/error_manager/error_code.json")
    out = io.StringIO()
    render_text(doc, out)
    text = out.getvalue()
    # each official statement once: the title names the code's title, the fix is its solution
    assert "CANN error EL0001: Device Absent/Abnormal  [cann-code cann:EL0001" in text
    assert "official cann EL0001: Device" not in text
    assert "  official cann EL0001:\n    possible cause: Device does not exist or is abnormal.\n" in text
    assert "  fix: Check the error messages in the log.\n" in text
    assert text.count("Check the error messages in the log.") == 1


def test_aclnn_return_codes_read_the_opbase_table():
    # a real line (Ascend/pytorch#90)
    doc = triage_text(
        "RuntimeError: copy_d2d_baseformat_opapi:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:88 NPU function "
        "error: call aclnnInplaceCopy failed, error code is 561103\n"
    )
    (g,) = doc["known"]
    assert g["label"] == "aclnn:561103" and g["official"]["title"] == "ACLNN_ERR_INNER_NULLPTR"
    assert g["title"] == (
        "aclnn error 561103: Internal error. An error occurs in an aclnn API due to a nullptr access "
        "(ACLNN_ERR_INNER_NULLPTR)"
    )
    assert g["official"]["source"].endswith("aclnn_return_code/aclnn_return_codes.md")


def test_a_code_the_tables_do_not_list_keeps_the_family_text():
    doc = triage_text("[ERROR] EZ8888: something failed.\n")
    (g,) = doc["known"]
    assert g["label"] == "cann:EZ8888" and g["official"] is None
    assert g["title"] == "CANN error EZ8888: a code of the CANN error-code manual"
    assert g["fix"] == ["read the message and the 'Solution:' line printed after the code"]


def test_specific_signatures_keep_their_causes_and_add_the_official_entry():
    doc = triage_text("RuntimeError: call aclrtSetDevice failed, error code is 507033\n")
    (g,) = doc["known"]
    assert g["id"] == "acl-507033-set-device"
    assert g["official"]["summary"] == "Failed to start the device (ACL_ERROR_RT_DEV_SETUP_ERROR)"
    # the signature's own fact-driven advice stays: the official solution is shown beside it
    assert g["fix"] != [g["official"]["solution"]] and len(g["causes"]) >= 3
    out = io.StringIO()
    render_text(doc, out)
    assert (
        "  official acl 507033: Failed to start the device (ACL_ERROR_RT_DEV_SETUP_ERROR)\n"
        "    solution: Rectify the fault based on the error information in the ascend log.\n"
    ) in out.getvalue()


def test_a_code_on_a_line_a_message_signature_claims_still_prints_its_official_entry():
    doc = triage_text("E40020: Failed to import Python module [te]. Reason: No module named 'decorator'.\n")
    (g,) = doc["known"]
    assert g["id"] == "no-module-cann-dependency" and g["label"] == "python:no-module"
    assert g["official"]["code"] == "E40020"
    assert g["official"]["cause"] == "Some required Python modules are not installed."
    # a line without a listed code gets none
    (g,) = triage_text("ModuleNotFoundError: No module named 'decorator'\n")["known"]
    assert g["official"] is None


def test_explain_reads_the_tables():
    page = KB.explain("EE1015")
    assert page is not None and page["title"] == "Package Error Incorrect Driver Version"
    assert "Solution: Upgrade the driver software version." in page["explain"]
    assert page["sources"][0].endswith("EE1015-Package_Error_Incorrect_Driver_Version.md")
    dcmi = KB.explain("-8013")
    assert dcmi is not None and dcmi["what"] == "error code" and dcmi["name"] == "dcmi:-8013"
    assert "run it on the host" in dcmi["explain"]
    assert KB.explain("dcmi:-8999") is None


_GOOD = """
[meta]
family = "dcmi"
retrieved = "2026-12-06"
[codes."-8001"]
title = "DCMI_ERR_CODE_INVALID_PARAMETER"
source = "https://example.invalid/a"
"""


@pytest.mark.parametrize(
    "files,complaint",
    [
        ({"a.toml": _GOOD, "b.toml": _GOOD}, "listed in another table too"),
        ({"a.toml": _GOOD.replace('"dcmi"', '"npu"')}, "family 'npu'"),
        ({"a.toml": _GOOD.replace('source = "https://example.invalid/a"', "")}, "needs a source"),
        ({"a.toml": _GOOD.replace("title =", "name =")}, "has only the keys"),
        ({"a.toml": "[meta\n"}, "a.toml"),
    ],
)
def test_a_malformed_table_is_refused(tmp_path: Path, files, complaint):
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(error_codes.ErrorCodesError, match=re.escape(complaint)):
        error_codes.load_tables(str(tmp_path))


def test_a_well_formed_table_loads(tmp_path: Path):
    (tmp_path / "a.toml").write_text(_GOOD, encoding="utf-8")
    loaded = error_codes.load_tables(str(tmp_path))
    assert loaded["dcmi"]["-8001"].title == "DCMI_ERR_CODE_INVALID_PARAMETER" and loaded["cann"] == {}
