"""The error knowledge base (npudoctor/knowledge/signatures.toml): it loads, it is well formed, and
it recognises every error code and message of the handed cases and captured samples."""

from __future__ import annotations

import re
import shlex
from typing import Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npudoctor.knowledge.signatures import FRAME_OWNERS, KBError, load_kb, required_literals
from npudoctor.triage.scan import NO_MODULE

KB = load_kb()

# (case or sample, a real line as reported, the entry that must claim it)
CASE_LINES = [
    (
        "case 01",
        "ImportError: /x/libtorch_npu.so: undefined symbol: _ZN5torch10ValueErrorC1EPKcz",
        "undefined-symbol-torch",
    ),
    (
        "case 02",
        "AttributeError: module 'torch_npu' has no attribute '_npu_flash_attention'",
        "torch-npu-attribute-missing",
    ),
    ("case 03", "RuntimeError: Failed to load the backend extension: torch_npu.", "backend-extension-failed"),
    (
        "case 05",
        "AttributeError: module 'torch_npu.dynamo.torchair' has no attribute 'get_npu_backend'",
        "torch-npu-attribute-missing",
    ),
    ("case 06", "RuntimeError: operator torchvision::nms does not exist", "torchvision-nms-missing"),
    ("case 08", "/x/ext.so: undefined symbol: _ZN7c10_npu10NPUStream6streamEv", "undefined-symbol-c10-npu"),
    (
        "case 10",
        "libtbe_adapter.so: undefined symbol: _ZN3Mki2DlC1ERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEb",
        "undefined-symbol-atb",
    ),
    ("case 11", "ImportError: /x/libtorch_npu.so: undefined symbol: MsprofSysCycleTime", "undefined-symbol-cann"),
    ("case 11b", "Failed to find function HcclCommInitRootInfoConfig", "hccl-function-missing"),
    (
        "case 13",
        "HCCL function error: hcclCommInitRootInfoConfig(numRanks, &rootInfo, rank, config, &(comm->hcclComm_)), error code is 15",
        "hccl-init-root-info-config",
    ),
    (
        "case 15",
        "EH9999  [Init][Env]init env failed![FUNC:ReportInnerError][FILE:log_inner.cpp][LINE:145]",
        "init-env-failed-eh9999",
    ),
    ("case 15b", "        build op model failed, result = 500001[FUNC:ReportInnerError]", "acl-500001"),
    ("case 15c", "ModuleNotFoundError: No module named 'decorator'", "no-module-cann-dependency"),
    (
        "case 17",
        "AttributeError: `np.float_` was removed in the NumPy 2.0 release. Use `np.float64` instead.",
        "numpy2-float-removed",
    ),
    (
        "case 18",
        "RuntimeError: SetPrecisionMode:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:156 NPU function error: "
        "AclSetCompileopt(aclCompileOpt::ACL_PRECISION_MODE, precision_mode), error code is 500001",
        "acl-500001",
    ),
    ("case 18b", "[Error]: The internal ACL of the system is incorrect.", "acl-500001"),
    (
        "case 22",
        "ERROR: Could not find a version that satisfies the requirement torch-npu==2.1.0rc1 (from versions: none)",
        "pip-no-torch-npu",
    ),
    ("case 25", "ModuleNotFoundError: No module named 'tbe.common'", "no-module-tbe"),
    (
        "case 26",
        "ImportError: libatb.so: cannot open shared object file: No such file or directory",
        "atb-library-not-found",
    ),
    (
        "case 27",
        "ImportError: /x/libmindie.so: undefined symbol: _ZNK6AsdOps3Ops18GetOperationByNameERKSs",
        "undefined-symbol-atb",
    ),
    ("case 28", "Op Cast does not has any binary.", "op-has-no-binary"),
    (
        "case 28b",
        "EZ9999 Cannot parse json for config file [/usr/local/Ascend/opp/built-in/op_impl/ai_core/tbe//kernel/config/ascend910/cast.json]",
        "op-has-no-binary",
    ),
    (
        "case 29",
        "call aclnnSwiGlu failed, detail:EZ1001: Get path and read binary_info_config.json failed, please check if the opp_kernel package is installed",
        "ez1001-binary-info-config",
    ),
    ("case 33", "RuntimeError: Unsupported SOC version: Ascend310B4", "unsupported-soc"),
    ("kinds K13", "EZ9903: [PID: 1] support for Ascend910 is not implemented", "ez9903-not-implemented"),
    ("case 37", "E30006: 2025-11-19-11:14:58.516.606 Failed to verify the OPP", "e30006-opp-verify"),
    ("case 38", "dcmi module initialize failed. ret is -8005", "dcmi-8005-init-failed"),
    ("case 38b", "dcmi model initialized failed, because the device is used. ret is -8020", "dcmi-8020-device-used"),
    ("case 42", "HcclGetRootInfo(&hcclID), error code is 19", "hccl-root-info-19"),
    ("case 42b", "ra init failed, return[19] devicePhyId_[4], nicPosition[0]", "hccl-root-info-19"),
    ("case 45", "c10_npu::SetDevice(device), error code is 507033", "acl-507033-set-device"),
    ("case 45b", "Inner_Error_Device_Subprocess_Startup_Timeout(E39007)", "e39007-device-startup-timeout"),
    (
        "case 47",
        "[RanktablCheck] 'device ip' is not set correctly, must be set when multi Server or HCCL INTRA ROCE ENABLE enabled",
        "hccl-device-ip-not-set",
    ),
    ("case 48", "Communication_Error_Get_Socket(EI0006)", "ei0006-socket-timeout"),
    (
        "kinds K19",
        "EI0002: The wait execution of the Notify register times out. (HCCL_EXEC_TIMEOUT)",
        "ei0002-notify-timeout",
    ),
    ("case 50", "ModuleNotFoundError: No module named 'torch_npu._C'", "no-module-torch-npu-c"),
    (
        "case 51",
        "ImportError: /opt/conda/envs/t/lib/python3.10/site-packages/torch/lib/../../../../libgomp.so.1: cannot allocate memory in static TLS block",
        "libgomp-static-tls",
    ),
    ("case 52", "msg_mgr_dump raise error[[Errno 28] No space left on device]", "no-space-left"),
    ("case 52b", "TbeInitialize failed to initialize tbe.", "tbe-init-failed"),
    (
        "ascendcl",
        "ImportError: libascendcl.so: cannot open shared object file: No such file or directory",
        "cann-library-not-found",
    ),
    ("107002", "aclrtGetCurrentContext(&used_devices[local_device]), error code is 107002", "acl-107002-context-empty"),
    ("507008", "[Init][Version]init soc version failed, ret = 507008", "acl-507008-soc-version"),
    ("207004", "aclrtGetDeviceCount(&device_count), error code is 207004", "acl-207004-device-unavailable"),
    ("EE1001", "EE1001: The argument is invalid.Reason: rtGetDevMsg execute failed", "ee1001-invalid-argument"),
    (
        "ERR00008",
        "[ERROR] 2024-06-20 (PID:1, Device:-1, RankID:-1) ERR00008 PTA resource not found",
        "pta-err00008-resource-not-found",
    ),
    # reasons before defaults (issue 28): the reason text picks the sub-signature of its code
    (
        "LlamaFactory#4165",
        "RuntimeError: call aclnnCast failed, detail:EZ1001: 2024-06-10-00:01:59.325.061 self not implemented for "
        "DT_BFLOAT16, should be in dtype support list [DT_FLOAT16,DT_FLOAT,DT_DOUBLE,].",
        "aclnn-dtype-bf16-unsupported",
    ),
    (
        "diffusers#10428",
        "detail:EZ1001: [PID: 23975] 2025-01-02-11:00:00.313.502 self not implemented for DT_DOUBLE, should be in "
        "dtype support list [DT_UINT8,DT_FLOAT,DT_BFLOAT16,].",
        "aclnn-dtype-float64-unsupported",
    ),
    (
        "vllm-ascend#6636",
        "AclNN_Parameter_Error(EZ1001): Tensor scale not implemented for DT_FLOAT16, should be in dtype support list "
        "[DT_UINT64,DT_BFLOAT16,DT_INT64,DT_FLOAT,].",
        "aclnn-dtype-unsupported",
    ),
    (
        "vllm-ascend#1813",
        "EZ1001: Get regInfo failed, The binary_info_config.json of socVersion [ascend310p] does not support opType "
        "[MoeGatingTopKSoftmax].",
        "aclnn-op-not-supported-on-soc",
    ),
    (
        "sherpa-onnx#2740",
        "[ACL ERROR] EE1001: The argument is invalid.Reason: ModelCheckCompatibility failed, supported "
        "socVersion=Ascend910B2, but the model socVersion=Ascend910B",
        "om-model-soc-mismatch",
    ),
    (
        "LlamaFactory#3839",
        "EJ0001: Failed to initialize the HCCP process. Reason: Maybe the last training process is running.",
        "hccp-leftover-process",
    ),
    (
        "PTOAS#341",
        "[ERROR] RecentErrMsg: Memory_Allocation_Failure(EL0004): Failed to allocate memory.",
        "device-memory-exhausted",
    ),
    (
        "vllm-ascend#5297",
        "AclNN_Parameter_Error(EZ1001): The k-axis of the two inputs are different.",
        "aclnn-parameter-error",
    ),
]


def _claim(line: str):
    for entry in KB.entries:
        if entry.match_text(line) is not None:
            return entry.id
    return None


@pytest.mark.parametrize("where,line,expected", CASE_LINES, ids=[c[0] for c in CASE_LINES])
def test_case_lines_are_claimed_by_the_right_entry(where, line, expected):
    assert _claim(line) == expected


def test_required_codes_are_covered():
    """Every error code named in the brief/cases has an entry whose patterns match it."""
    needed = {
        "EH9999": "EH9999: Inner Error!",
        "500001": "error code is 500001",
        "507033": "error code is 507033",
        "207004": "error code is 207004",
        "107002": "error code is 107002",
        "507008": "ret = 507008",
        "EI0006": "EI0006",
        "EI0002": "EI0002",
        "E30006": "E30006",
        "E39007": "E39007",
        "EE1001": "EE1001",
        "EZ9903": "EZ9903",
        "EZ1001": "EZ1001",
        "-8005": "ret is -8005",
        "-8020": "ret is -8020",
        "ERR00008": "ERR00008 PTA resource not found",
    }
    missing = {code: line for code, line in needed.items() if _claim(line) is None}
    assert not missing


def test_entries_are_complete():
    kind_rx = re.compile(r"^K(0[1-9]|1\d|2[0-2])$")
    for e in KB.entries:
        assert e.meaning and e.sources, e.id
        assert all(s.startswith("https://") for s in e.sources), e.id
        assert all(kind_rx.match(k) for k in e.kinds), e.id
        if e.severity == "error" and e.kinds:
            assert e.causes, f"{e.id}: an error with kinds needs ranked causes"
        for c in e.causes:
            assert c.text and c.here and c.fix, e.id
            # a cause is decided by finding codes (or stated by the line), never by a check of its own
            assert not set(c.confirmed_by) & set(c.refuted_by), e.id
            # (or, for an import error, the owner the traceback's last frame names: the scanner's)
            assert all(
                name in "".join(e.patterns) or (e.label == NO_MODULE and name in FRAME_OWNERS) for name in c.stated_by
            ), (e.id, c.stated_by)
            # a cause's kind is one its entry lists (the ranking tie-break order)
            assert not c.kind or c.kind in e.kinds, (e.id, c.kind)


def test_cause_kinds_match_the_findings_that_decide_them():
    """The kind printed before a cause must be true of it: "no CANN toolkit is installed" is
    no kind of kinds.md (K10 is "installed, set_env.sh not sourced"), so it carries none and
    only CANN001 confirms it; the not-sourced causes are K10 and CANN001 refutes them."""
    from npudoctor.engine import load_rules
    from npudoctor.knowledge.codes import registry

    load_rules()
    by_code = {}
    for e in KB.entries:
        for c in e.causes:
            assert all(code in registry() for code in c.confirmed_by + c.refuted_by), (e.id, c)
            for code in c.confirmed_by:
                by_code.setdefault(code, set()).add(c.kind)
            if "CANN001" in c.confirmed_by:
                assert c.confirmed_by == ["CANN001"] and "ENV001" in c.refuted_by, e.id
            if c.kind == "K10":
                assert "CANN001" in c.refuted_by, e.id
            # a confirming finding's code declares the cause's kind (a kind-less cause excepted)
            for code in c.confirmed_by:
                assert not c.kind or c.kind in registry()[code].kinds, (e.id, c.kind, code)
    assert by_code["CANN001"] == {""}
    assert by_code["ENV004"] == {"K10"} and by_code["ENV003"] == {"K10"}
    assert by_code["PKG007"] == {"K07"} and by_code["PKG006"] == {"K06"}
    # the PYTHONPATH side (ENV004) is what the op-compiler errors depend on, not the loader path
    for entry_id in ("init-env-failed-eh9999", "acl-500001", "no-module-tbe", "tbe-init-failed"):
        codes = [code for c in KB.by_id(entry_id).causes for code in c.confirmed_by]
        assert "ENV004" in codes and "ENV003" not in codes, entry_id


#: A knowledge file the loader must refuse, and the words of its refusal.
BAD_KB = [
    ('[[entry]]\nid = "x"\npatterns = ["(unclosed"]\nmeaning = "m"\n', "bad regex"),
    ('[[entry]]\nid = "x"\npatterns = ["abc"]\n[[entry]]\nid = "x"\npatterns = ["bcd"]\n', "duplicate"),
    ('[[entry]]\nid = "x"\npatterns = ["abc"]\n[[entry.causes]]\nkind = "K01"\ncheck = "nope"\n', "unknown cause key"),
    (
        '[[entry]]\nid = "x"\npatterns = ["abc"]\n[[entry.causes]]\nkind = "K01"\n'
        'confirmed_by = ["PKG001"]\nrefuted_by = ["PKG001"]\n',
        "both confirm and refute",
    ),
    (
        '[[entry]]\nid = "x"\npatterns = ["abc"]\n[[entry.causes]]\nkind = "K01"\nconfirmed_by = ["pkg1"]\n',
        "not a finding code",
    ),
    ('[[entry]]\nid = "x"\npatterns = ["\\\\d+ fa?il"]\n', "no literal"),
    (
        '[[entry]]\nid = "x"\npatterns = ["abc"]\n[[entry.causes]]\nkind = "K01"\n'
        'confirmed_by = ["PKG001"]\nsubjects = { PKG003 = ["torch"] }\n',
        "neither confirms nor refutes",
    ),
    (
        '[[entry]]\nid = "x"\npatterns = ["abc"]\n[[entry.decided_by]]\nentry = "y"\nkinds = ["K14"]\n',
        "not an entry decided by nothing",
    ),
]


@pytest.mark.parametrize("text,refusal", BAD_KB)
def test_bad_kb_is_rejected(text, refusal, tmp_path):
    bad = tmp_path / "errors.toml"
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(KBError, match=refusal):
        load_kb(str(bad))


@pytest.mark.parametrize(
    "pattern,literals",
    [
        (r"ret is -8005\b", [b"ret is -8005"]),
        (r"(?P<lib>lib\w+\.so): cannot open", [b": cannot open"]),
        (r"(?:EI0006|Get_Socket)", [b"EI0006", b"Get_Socket"]),
        (r"(?i)error", None),
        (r"\d+x", None),
    ],
)
def test_required_literals(pattern, literals):
    assert required_literals(pattern) == literals


def test_classify_multiline_message():
    text = "Traceback (most recent call last):\n  File 'x'\nImportError: libhccl.so: cannot open shared object file: No such file or directory"
    found = KB.classify(text)
    assert [e.id for e, _ in found] == ["cann-library-not-found", "library-not-found"]
    assert found[0][1] == {"lib": "libhccl.so"}


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_classify_never_raises(text):
    for entry, caps in KB.classify(text):
        assert entry.match_text(text) is not None or any(entry.match_text(ln) is not None for ln in text.splitlines())
        assert all(isinstance(v, str) for v in caps.values())


def test_signatures_ship_inside_the_package():
    """The wheel ships every file under npudoctor/ (pyproject: hatchling, packages = ["npudoctor"])."""
    from pathlib import Path

    import npudoctor
    from npudoctor.knowledge.signatures import default_kb_path

    package = Path(npudoctor.__file__).resolve().parent
    path = Path(default_kb_path()).resolve()
    assert path.is_file() and package in path.parents
    assert not (package / "data").exists()


def test_fill_keeps_unknown_placeholders_and_reads_format_specs() -> None:
    from npudoctor.knowledge.signatures import fill

    values = {"module": "scipy", "n": "7"}
    assert fill("{module} is missing; {python} -m pip install {module}", values) == (
        "scipy is missing; {python} -m pip install scipy"
    )
    assert fill("[{n:>3}] {{literal}}", values) == "[  7] {literal}"
    assert fill("an unbalanced { brace", values) == "an unbalanced { brace"


def _not_runnable(line: str) -> Optional[str]:
    """Why the fix ``line``, which starts with a command word, does not run as printed
    (``None`` when it does): a placeholder (``<...>``, ``...``, ``==X``), prose after the
    command, or words a shell would take as more arguments.  A note goes after ``  # ``."""
    from npudoctor.report.triage import _COMMAND_WORDS

    words = line.split()
    if not words or (words[0] not in _COMMAND_WORDS and words[0] != "{python}"):
        return None
    command = line.split("  # ", 1)[0]
    unquoted = re.sub(r"'[^']*'", "''", command)
    bad = [c for c in ("<", ">", "...", "(", ")", ",", "`", "==X") if c in unquoted]
    if bad:
        return f"holds {bad}"
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        return str(exc)
    if argv[0] in ("export", "unset") and not all(re.match(r"^[A-Z_][A-Z0-9_]*(=.*)?$", a) for a in argv[1:]):
        return "an export/unset with words that are no variables"
    if argv[0] in ("cd", "source") and len(argv) != 2:
        return f"{argv[0]} with {len(argv) - 1} arguments"
    if argv[0] in ("{python}", "python", "python3") and argv[1:2] == ["-c"]:
        return "a check, not a fix"
    return None


def test_every_fix_that_starts_like_a_command_runs_as_printed():
    """A signature's fix line is either a command that runs as printed (its note after
    ``  # ``) or prose: never ``export X=<indices below 2>``, ``pip install torch==X`` or a
    command followed by words the shell would take as arguments."""
    found = []
    for e in KB.entries:
        for fix in list(e.fix) + [f for c in e.causes for f in c.fix]:
            why = _not_runnable(fix)
            if why:
                found.append(f"{e.id}: {fix!r}: {why}")
    assert found == [], "\n".join(found)


def test_the_runnable_check_finds_what_the_trial_saw():
    for line in (
        "export ASCEND_RT_VISIBLE_DEVICES=<0-based indices below 2>  (or unset it)",
        "pip install torch==X torch_npu==X(.postN) as a documented pair in a clean env",
        "{python} -m pip install 'torchvision==0.<torch minor + 15>.*' (CPU build)",
        "python -c 'import tbe.common'",
        "source {toolkit_set_env} in the launcher's environment",
        "unset ASCEND_RT_VISIBLE_DEVICES, or export it as unique ascending 0-based ids",
    ):
        assert _not_runnable(line), line
    assert _not_runnable("{python} -m pip install 'numpy<2'") is None
    assert _not_runnable("export HCCL_CONNECT_TIMEOUT=900  # the same on every rank") is None
