"""What triage concludes for real logs replayed on the scenarios of the machines they came from.

Each log is the error text of a public report (the scenario's ``source`` names it, or the
comment beside it does); triage runs in-process on the scenario's root and environment, as
``env -i PATH=<scenario>/bin <[env]> npudoctor triage LOG --root <scenario>/root`` would.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Tuple

from clirun import npudoctor
from scenario_runner import environment

from npudoctor.engine import load_rules
from npudoctor.knowledge.codes import registry
from npudoctor.triage import triage_text

try:
    import tomllib
except ImportError:  # pragma: no cover
    import tomli as tomllib  # type: ignore[no-redef]

HERE = Path(__file__).resolve().parent
SCENARIOS = HERE / "scenarios"

#: Ascend/pytorch#35 (an env upgraded in place, torch and torch_npu not a matched set).
UNDEFINED_TORCH_SYMBOL = "libtorch_npu.so: undefined symbol: _ZN5torch10ValueErrorC1EPKcz\n"


def triage(name: str, log: str, tmp_path: Path, *args: str) -> Tuple[Dict[str, Any], str]:
    """The ``--json`` result and the text view of ``triage`` over ``log`` on scenario ``name``
    (``name`` empty: with ``--no-facts``)."""
    path = tmp_path / "run.log"
    path.write_text(log, encoding="utf-8")
    if not name:
        base: Tuple[str, ...] = ("triage", str(path), "--no-facts", *args)
        env = {"PATH": "/usr/bin:/bin"}
        return json.loads(npudoctor(*base, "--json", env=env).stdout), npudoctor(*base, env=env).stdout
    scenario = SCENARIOS / name
    spec = tomllib.loads((scenario / "scenario.toml").read_text(encoding="utf-8"))
    env = environment(scenario, spec)
    base = ("triage", str(path), "--root", str(scenario / "root"), *args)
    doc = json.loads(npudoctor(*base, "--json", env=env).stdout)
    text = npudoctor(*base, env=env).stdout
    return doc, text


def group(doc: Dict[str, Any], entry_id: str) -> Dict[str, Any]:
    return next(g for g in doc["known"] if g["id"] == entry_id)


def test_two_torch_dist_infos_confirm_that_torch_and_torch_npu_are_not_a_matched_set(tmp_path):
    """``check`` on the upgraded env reports PKG003 (torch 2.1.0 and 2.2.0 side by side):
    that finding is what proves the mismatch there, and its cleanup is the fix, both
    uninstall lines kept (each removes one dist-info)."""
    doc, text = triage("k01-upgraded-env-two-torch-dist-infos", UNDEFINED_TORCH_SYMBOL, tmp_path)
    top = group(doc, "undefined-symbol-torch")["causes"][0]
    assert top["kind"] == "K01" and top["status"] == "cause", top
    assert top["findings"] == ["PKG003"]
    uninstall = [f for f in top["fix"] if "pip uninstall -y torch" in f]
    assert len(uninstall) == 2 and top["fix"][-1].endswith("pip install torch==2.2.0"), top["fix"]
    assert "no sign of it here (no PKG001" not in text
    assert doc["verdict"] == top["here"]


def test_a_duplicate_numpy_does_not_confirm_a_torch_mismatch():
    """PKG003 judges numpy too: a second numpy says nothing of torch and torch_npu."""
    load_rules()
    numpy_twice = registry()["PKG003"].finding(title="numpy is installed 2 times (1.26.4, 2.0.0)", subject="numpy")
    result = triage_text(UNDEFINED_TORCH_SYMBOL, {}, [numpy_twice])
    cause = next(c for c in result["known"][0]["causes"] if c["kind"] == "K01")
    assert cause["status"] != "cause" and cause["findings"] == [], cause


#: vllm-project/vllm-ascend PR 472: the opaque 500001 that numpy 2 caused under CANN 8.0.0.
NUMPY2_500001 = (
    "SetPrecisionMode:… AclSetCompileopt(aclCompileOpt::ACL_PRECISION_MODE, precision_mode), error code is 500001\n"
    "ERR00100 PTA call acl api failed\n"
    "The internal ACL of the system is incorrect.\n"
)


def test_causes_the_facts_rule_out_carry_no_fix(tmp_path):
    """With CANN 9.0.0 numpy 2 is fine (no PKG007), the CANN deps are there (no PKG006) and
    set_env.sh is applied: every cause of the 500001 shows no sign here, so none of their
    fixes is printed (no `pip install 'numpy<2'` under "no sign of it here")."""
    doc, text = triage("k07-control-numpy-2-with-cann-9.0.0", NUMPY2_500001, tmp_path)
    g = group(doc, "acl-500001")
    assert {c["status"] for c in g["causes"]} == {"no_sign"}, g["causes"]
    assert g["fix"] == [] and g["conclusion"] is None
    assert "numpy<2" not in text and "fix:" not in text.split("✗ PTA")[0], text


def test_a_cause_the_facts_rule_out_loses_its_step_of_the_signature_fix():
    """Where one cause is judged absent and the others are not checked, the signature's fix
    keeps only the steps of the causes still possible."""
    load_rules()
    facts = {"packages": {"scanned": ["/usr/lib/python3/dist-packages"], "installed": {}}}
    result = triage_text(NUMPY2_500001.splitlines()[0] + "\n", facts, [])
    g = result["known"][0]
    statuses = {c["kind"]: c["status"] for c in g["causes"]}
    absent = [c for c in g["causes"] if c["status"] in ("no_sign", "ruled_out")]
    assert absent and any(c["status"] == "unknown" for c in g["causes"]), statuses
    for c in absent:
        assert not set(c["fix"]) & set(g["fix"]), (c, g["fix"])
    assert not any("pip install" in f for f in g["fix"]), g["fix"]


#: vllm-project/vllm-ascend issue 4284: 507033 with the device's E30006 (OPP verify failed).
OPP_507033 = (
    "c10_npu::SetDevice(device_id_), error code is 507033\n"
    "ERR00100 PTA call acl api failed\n"
    "E30006: … Failed to verify the OPP\n"
    "Start aicpu executor failed, retCode=0x7020009\n"
)
CASE45 = "case45-hami-non-first-npus-no-rt-visible"


def test_the_e_code_in_the_log_decides_the_507033_verdict(tmp_path):
    """On a machine whose visible-device variables are inconsistent (DEV031), a 507033 that
    the log ties to E30006 (the device rejected the OPP) is not blamed on the device mapping:
    the E-code decides between the causes, and neither of E30006's causes shows here, so
    there is no verdict (and none naming E39007, which this log does not hold)."""
    doc, text = triage(CASE45, OPP_507033, tmp_path)
    causes = {c["kind"]: c for c in group(doc, "acl-507033-set-device")["causes"]}
    assert causes["K18"]["status"] == "ruled_out", causes["K18"]
    assert causes["K18"]["evidence"] == ["the log's E30006 at line 3 points to another cause"]
    assert causes["K15"]["status"] == "ruled_out"
    assert group(doc, "acl-507033-set-device")["conclusion"] is None
    assert doc["verdict"] is None and "E39007" not in text.split("means:")[-1], text


def test_with_e39007_the_device_mapping_stays_the_cause_and_the_verdict_names_no_absent_code(tmp_path):
    log = (SCENARIOS / CASE45 / "logs" / "run.log").read_text(encoding="utf-8")
    doc, _ = triage(CASE45, log, tmp_path)
    top = group(doc, "acl-507033-set-device")["causes"][0]
    assert top["kind"] == "K18" and top["status"] == "cause" and top["findings"] == ["DEV031"]
    only_507033 = "".join(line + "\n" for line in log.splitlines() if "E39007" not in line)
    doc, _ = triage(CASE45, only_507033, tmp_path)
    assert doc["verdict"] and "DEV031" in group(doc, "acl-507033-set-device")["causes"][0]["findings"]
    assert "E39007" not in doc["verdict"], doc["verdict"]


#: gpustack issue 3352: ASCEND_RT_VISIBLE_DEVICES=4 in a container that sees 2 NPUs.
VISIBLE_207004 = (HERE / "fixtures" / "error_torch_npu_207004_ASCEND_RT_VISIBLE_DEVICES-out-of-range.txt").read_text(
    encoding="utf-8"
)


def test_what_the_line_states_is_never_denied_by_the_facts_of_another_machine(tmp_path):
    """Replayed on a healthy 8-NPU host (no ASCEND_RT_VISIBLE_DEVICES, no DEV030), the EE1001
    lines still state their cause: no cause of theirs says "no sign of it here", and the
    207004 and 107001 around them follow what line 5 states, their other causes ruled out."""
    doc, text = triage("dev-8npu-910b3-healthy", VISIBLE_207004, tmp_path)
    for g in doc["known"]:
        assert not [c for c in g["causes"] if c["kind"] == "K18" and c["status"] != "cause"], g
    for g in (g for g in doc["known"] if g["id"] == "visible-devices-out-of-range"):
        assert [c["status"] for c in g["causes"]] == ["cause"], g["causes"]
    for entry_id in ("acl-207004-device-unavailable", "acl-107001-open-device"):
        top = group(doc, entry_id)["causes"][0]
        assert top["status"] == "cause" and top["evidence"][0] == "the log's EE1001 at line 5 states it", top
        assert "2 device(s) are visible" in top["here"]
    assert "ASCEND_RT_VISIBLE_DEVICES names devices this process cannot see: no sign" not in text


def test_a_stated_cause_the_facts_confirm_shows_the_finding_and_its_fix(tmp_path):
    """In the container the log came from, DEV030 agrees with the line: one cause, with the
    line's statement, the finding as evidence and the finding's runnable fix."""
    log = (SCENARIOS / "k18-rt-visible-host-ids-in-container" / "logs" / "run.log").read_text(encoding="utf-8")
    doc, _ = triage("k18-rt-visible-host-ids-in-container", log, tmp_path)
    g = group(doc, "visible-devices-out-of-range")
    assert len(g["causes"]) == 1, g["causes"]
    top = g["causes"][0]
    assert top["findings"] == ["DEV030"] and top["evidence"][0] == "the log line states it: value=4, high=2"
    assert top["fix"] == ["export ASCEND_RT_VISIBLE_DEVICES=0  # unique, ascending, 0-based ids of the visible devices"]


def _scenario_log(name: str) -> str:
    return (SCENARIOS / name / "logs" / "run.log").read_text(encoding="utf-8")


def test_a_finding_behind_several_lines_is_said_once(tmp_path):
    """Four blocks of the k18 log come from DEV030: its sentence is said in the first block
    (and the verdict), the later blocks point back to it; the EE1001 meaning and official
    entry are said once for its two lines."""
    name = "k18-rt-visible-host-ids-in-container"
    doc, text = triage(name, _scenario_log(name), tmp_path)
    sentence = "ASCEND_RT_VISIBLE_DEVICES='4' is invalid"
    assert (
        text.count(sentence) == 2 and text.splitlines()[-1].startswith("Verdict:") and sentence in text.splitlines()[-1]
    )
    assert text.count("→ the same cause as lines 1–9 above (DEV030)") == 3, text
    assert text.count("official cann EE1001") == 1 and text.count("means: as for line 5 above") == 1
    assert text.count("export ASCEND_RT_VISIBLE_DEVICES=0") == 1
    assert len([g for g in doc["known"] if g["conclusion"]]) == 4  # the JSON keeps every record whole


def test_a_graded_verdict_is_said_once_under_each_conclusion(tmp_path):
    """DRV002's title carries its verdict and source, and so does one of its evidence lines:
    triage quotes it once, and the three blocks it explains print it once."""
    name = "case37-e30006-opp-verify-container-cann-8.5-driver-24.1"
    _, text = triage(name, _scenario_log(name), tmp_path)
    assert text.count("not documented either way") == 1, text
    assert text.count("evidence: DRV002:") == 1 and text.count("upgrade the host's driver") == 1
    assert text.count("→ the same cause as lines 1–3 above (DRV002)") == 2


def test_a_fix_that_points_to_a_finding_triage_does_not_print_gives_its_command(tmp_path):
    """check writes NNAL's install as "then apply NNAL's environment (ENV005's fix)" beside
    ENV005; triage prints no ENV005 block, so the cause's fix carries ENV005's command."""
    log = "ImportError: libatb.so: undefined symbol: _ZN3atb5Probe17IsTensorDumpEnableEv\n"
    doc, _ = triage("k04-nnal-8.2.RC1-on-toolkit-8.0.0", log, tmp_path)
    top = group(doc, "undefined-symbol-atb")["causes"][0]
    assert top["status"] == "cause" and top["findings"] == ["CANN008"], top
    assert not [f for f in top["fix"] if "'s fix" in f], top["fix"]
    assert top["fix"][1] == "source /usr/local/Ascend/nnal/atb/set_env.sh  # after torch is installed", top["fix"]


def test_a_follow_on_error_with_nothing_above_it_does_not_point_above(tmp_path):
    """EH9999 opens the log: there is no error above it to fix first."""
    log = "EH9999: Inner Error!\n"
    _, text = triage("", log, tmp_path)
    assert "the first error above it" not in text
    assert "no error line comes before it here" in text
    _, text = triage("", "ERR00100 PTA call acl api failed\n" + log, tmp_path)
    assert "the first error above it is the one to fix" in text


def test_cann_help_lines_under_a_logger_prefix_are_not_unknown_errors(tmp_path):
    """vLLM prefixes every line of CANN's message with its own ``ERROR … [file:line]``
    (the prefix of the HAMi report's worker); CANN's indented ``Solution:`` and
    ``TraceBack (most recent call last):`` lines are help, not errors, with the prefix or
    without; the failure lines under them still count."""
    prefix = "(Worker pid=6871) ERROR [multiproc_executor.py:800] "
    cann = _scenario_log("k18-rt-visible-host-ids-in-container").splitlines()[4:9]
    assert cann[1].strip().startswith("Solution:") and cann[2].strip().startswith("TraceBack")
    doc, _ = triage("", "".join(prefix + line + "\n" for line in cann), tmp_path)
    assert [u["text"] for u in doc["unknown"]] == [], doc["unknown"]
    assert {g["id"] for g in doc["known"]} == {"visible-devices-out-of-range", "acl-207004-device-unavailable"}


def test_a_cause_line_said_above_is_counted_not_repeated(tmp_path):
    """Replayed on case 45's machine, the 507033, E30006 and AICPU lines of case 37 share
    causes: each cause line is written once, a later block counts the ones said above."""
    _, text = triage(CASE45, OPP_507033, tmp_path)
    assert text.count("the host driver/firmware is older than the CANN in use: no sign of it here") == 1, text
    assert "  - 1 more cause(s) judged as for line 1 above\n" in text
    assert "  - 2 more cause(s) judged as for line 1 and line 3 above\n" in text


def test_a_cause_the_log_rules_out_loses_its_step_of_the_signature_fix():
    """Without facts, a 507033 next to E30006 keeps the OPP/driver step of its fix and drops
    the device-mapping one: the E-code rules that cause out."""
    result = triage_text(OPP_507033)
    g = next(g for g in result["known"] if g["id"] == "acl-507033-set-device")
    assert g["conclusion"] is None
    assert not [f for f in g["fix"] if "ASCEND_RT_VISIBLE_DEVICES" in f], g["fix"]
    assert any("align the container's CANN" in f for f in g["fix"]), g["fix"]
