"""`npudoctor health` reuses the verdict of its last run while every input it was made
from is unchanged (npudoctor/runtime/memo.py, issue 18), and never once one changed.

Each test runs the real CLI (``python -m npudoctor health``) twice or more on a copy of a
real scenario (8 x 910B3 capture of vllm-project/vllm-ascend#198, CANN 8.0.0, torch_npu
2.1.0.post10), changes exactly one input between runs, and compares with what a run
that reuses nothing (``--fresh``) says."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, Optional

import pytest
from scenario_runner import REPO, environment, prepare, scenario_dirs

try:
    import tomllib
except ImportError:  # pragma: no cover
    import tomli as tomllib  # type: ignore[no-redef]

HEALTHY = REPO / "tests" / "scenarios" / "health-910b3-8npu-healthy"
CAPTURE = "npu-smi-info_910B3_23.0.7_8npu_noproc.txt"
CRITICAL = REPO / "tests/fixtures/EDITED_npu-smi-info_910B3_23.0.7_8npu_noproc_npu3-Critical.txt"
VOLATILE = ("duration_s", "inputs_unchanged_s")


def _spec(scenario: Path) -> Dict[str, Any]:
    return tomllib.loads((scenario / "scenario.toml").read_text(encoding="utf-8"))


def run_health(scenario: Path, runtime: Path, *args: str, env: Optional[Dict[str, str]] = None, cwd: Any = None):
    """``health --root <scenario>/root --json ARGS``: (exit status, document)."""
    run_env = environment(scenario, _spec(scenario))
    run_env["XDG_RUNTIME_DIR"] = str(runtime)
    run_env.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-m", "npudoctor", "health", "--root", str(scenario / "root"), "--timeout", "20", "--json"]
        + list(args),
        env=dict(run_env, PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def _verdict(doc: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in doc.items() if k not in VOLATILE}


def judged_anew(scenario: Path, runtime: Path, *args: str):
    """Run health after one input changed: it must not reuse the last verdict, and must
    say what a run that reuses nothing (``--fresh``) says; returns (status, document)."""
    code, doc = run_health(scenario, runtime, *args)
    assert "inputs_unchanged_s" not in doc
    fresh_code, fresh = run_health(scenario, runtime, *args, "--fresh")
    assert code == fresh_code and _verdict(doc) == _verdict(fresh)
    return code, doc


def test_unchanged_inputs_reuse_the_verdict(memo_healthy):
    scenario, runtime = memo_healthy
    code1, first = run_health(scenario, runtime)
    assert code1 == 0 and first["status"] == "healthy" and "inputs_unchanged_s" not in first
    memos = list(runtime.glob("npudoctor-memo-*.json"))
    assert len(memos) == 1 and memos[0].stat().st_mode & 0o077 == 0
    code2, second = run_health(scenario, runtime)
    assert code2 == 0 and second["inputs_unchanged_s"] >= 0
    assert _verdict(second) == _verdict(first)
    # --fresh judges anew (and says nothing of reuse)
    code3, fresh = run_health(scenario, runtime, "--fresh")
    assert code3 == 0 and "inputs_unchanged_s" not in fresh and _verdict(fresh) == _verdict(first)


def test_new_npu_smi_output_is_judged_anew(memo_healthy):
    scenario, runtime = memo_healthy
    assert run_health(scenario, runtime)[0] == 0
    (scenario / "bin" / CAPTURE).write_bytes(CRITICAL.read_bytes())
    code, doc = run_health(scenario, runtime)
    assert code == 1 and "inputs_unchanged_s" not in doc
    assert doc["problems"] == ["DEV010 NPU 3 health is Critical"]
    # and that new verdict is the one reused next
    code, again = run_health(scenario, runtime)
    assert code == 1 and "inputs_unchanged_s" in again and again["problems"] == doc["problems"]


def test_a_file_rewritten_with_same_size_and_mtime_is_seen(memo_healthy):
    """Contents are compared, not mtimes: an edit within one timestamp tick still counts."""
    scenario, runtime = memo_healthy
    assert run_health(scenario, runtime)[0] == 0
    info = scenario / "root" / "usr/local/Ascend/driver/version.info"
    before = info.stat()
    text = info.read_text()
    assert text.startswith("Version=24.1.rc2.2\n"), text
    info.write_text(text.replace("Version=24.1.rc2.2\n", "Version=24.1.rc1.2\n", 1))
    os.utime(info, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert info.stat().st_size == before.st_size
    judged_anew(scenario, runtime)


def test_a_device_node_removed_is_seen(memo_healthy):
    scenario, runtime = memo_healthy
    assert run_health(scenario, runtime)[0] == 0
    (scenario / "root" / "dev" / "davinci3").unlink()
    judged_anew(scenario, runtime)


def test_another_environment_is_another_verdict(memo_healthy):
    scenario, runtime = memo_healthy
    assert run_health(scenario, runtime)[0] == 0
    code, doc = run_health(scenario, runtime, env={"ASCEND_RT_VISIBLE_DEVICES": "9"})
    assert "inputs_unchanged_s" not in doc
    assert len(list(runtime.glob("npudoctor-memo-*.json"))) == 2


def test_run_from_the_memo_directory_reuses_the_verdict(memo_healthy):
    """``python -m npudoctor health`` run from the directory the memo files go to (/tmp
    without XDG_RUNTIME_DIR) has it on sys.path: writing a memo must not change the key of
    the next run."""
    scenario, runtime = memo_healthy
    assert run_health(scenario, runtime, cwd=runtime)[0] == 0
    code, doc = run_health(scenario, runtime, cwd=runtime)
    assert code == 0 and doc["inputs_unchanged_s"] >= 0
    assert len(list(runtime.glob("npudoctor-memo-*.json"))) == 1


def test_a_config_file_that_appears_is_honoured(memo_healthy, tmp_path):
    scenario, runtime = memo_healthy
    (scenario / "bin" / CAPTURE).write_bytes(CRITICAL.read_bytes())
    work = tmp_path / "work"
    work.mkdir()
    assert run_health(scenario, runtime, cwd=work)[0] == 1
    (work / ".npudoctor.toml").write_text('ignore = ["DEV010"]\n')
    code, doc = run_health(scenario, runtime, cwd=work)
    assert code == 0 and "inputs_unchanged_s" not in doc


def test_a_memo_not_of_this_user_or_garbled_is_not_used(memo_healthy):
    scenario, runtime = memo_healthy
    (scenario / "bin" / CAPTURE).write_bytes(CRITICAL.read_bytes())
    assert run_health(scenario, runtime)[0] == 1
    memo = next(runtime.glob("npudoctor-memo-*.json"))
    data = json.loads(memo.read_text())
    data["doc"] = {"status": "healthy", "problems": [], "findings": [], "summary": "forged"}
    memo.write_text(json.dumps(data))
    os.chmod(memo, 0o666)  # writable by others: not trusted
    code, doc = run_health(scenario, runtime)
    assert code == 1 and "inputs_unchanged_s" not in doc and doc.get("summary") != "forged"
    memo.write_bytes(b"\xff{not json")
    os.chmod(memo, 0o600)
    code, doc = run_health(scenario, runtime)
    assert code == 1 and "inputs_unchanged_s" not in doc


def test_no_memo_for_snapshots_pids_or_fresh_runs(memo_healthy, tmp_path):
    scenario, runtime = memo_healthy
    run_health(scenario, runtime, "--fresh")
    run_health(scenario, runtime, "--pid", str(os.getpid()))
    assert list(runtime.glob("npudoctor-memo-*.json")) == []


HEALTH_CASES = [
    pytest.param(scenario, case, id=f"{scenario.name}[{' '.join(case.get('args', [])) or 'default'}]")
    for scenario in scenario_dirs(REPO / "tests" / "scenarios")
    if scenario.name.startswith("health-")
    for case in _spec(scenario).get("health", [])
    if not case.get("gap")
]


@pytest.mark.parametrize("scenario,case", HEALTH_CASES)
def test_every_health_scenario_reused_equals_fresh(scenario, case, tmp_path):
    """For every health scenario and case: the second run (reusing, where a memo was
    written) prints what a run that reuses nothing prints."""
    copy = prepare(scenario, tmp_path / "s")
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    args = [a for a in case.get("args", []) if a != "--json"]
    code1, first = run_health(copy, runtime, *args)
    code2, second = run_health(copy, runtime, *args)
    code3, fresh = run_health(copy, runtime, *args, "--fresh")
    assert code1 == code2 == code3 == case.get("exit", code3)
    codes = [sorted(f["code"] for f in doc.get("findings", [])) for doc in (first, second, fresh)]
    assert codes[0] == codes[1] == codes[2] and first["status"] == second["status"] == fresh["status"]
    if "inputs_unchanged_s" in second:
        assert _verdict(second) == _verdict(first)
    else:  # only a run whose npu-smi did not finish (hung, cut short) is not reused
        assert first["status"] == "unknown" or {"DEV001", "HOST090"} & set(codes[0]), first


def test_exec_env_is_reused_and_keeps_only_cann_variables(memo_healthy):
    """--exec-env judges what set_env.sh would set (read through the Host, recorded):
    reused while the toolkit's files are unchanged; the memo holds the variables it adds
    (paths), never the values of others (a token in the environment is not written)."""
    scenario, runtime = memo_healthy
    env = {"HF_TOKEN": "hf_secret_value_123"}
    code1, first = run_health(scenario, runtime, "--exec-env", env=env)
    code2, second = run_health(scenario, runtime, "--exec-env", env=env)
    assert code1 == code2 and "inputs_unchanged_s" in second and _verdict(second) == _verdict(first)
    memo = next(runtime.glob("npudoctor-memo-*.json")).read_text()
    assert "hf_secret_value_123" not in memo
    # the toolkit's set_env.sh changes: judged anew
    set_env = scenario / "root/usr/local/Ascend/ascend-toolkit/set_env.sh"
    assert set_env.is_file()
    set_env.write_text(set_env.read_text() + "\n# edited\n")
    code3, third = run_health(scenario, runtime, "--exec-env", env=env)
    assert "inputs_unchanged_s" not in third and code3 == code1


def test_text_and_json_share_one_verdict(memo_healthy):
    scenario, runtime = memo_healthy
    run_env = dict(environment(scenario, _spec(scenario)), XDG_RUNTIME_DIR=str(runtime), PYTHONPATH=str(REPO))
    argv = [sys.executable, "-m", "npudoctor", "health", "--root", str(scenario / "root"), "--timeout", "20"]
    text = subprocess.run(argv, env=run_env, capture_output=True, text=True, timeout=120)
    assert text.returncode == 0 and text.stdout == "healthy: 8 NPU chip(s), CANN 8.0.0, torch_npu 2.1.0.post10\n"
    code, doc = run_health(scenario, runtime)  # --json: the text run's memo
    assert code == 0 and "inputs_unchanged_s" in doc
    again = subprocess.run(argv, env=run_env, capture_output=True, text=True, timeout=120)
    assert again.stdout == text.stdout and again.returncode == 0
    assert len(list(runtime.glob("npudoctor-memo-*.json"))) == 1


def test_stale_memos_of_other_settings_are_removed(memo_healthy):
    """Memos of another key (another setting, an edited npudoctor) older than a day are
    removed when a memo is written; recent ones and other users' files stay."""
    scenario, runtime = memo_healthy
    old = runtime / f"npudoctor-memo-{os.getuid()}-{'0' * 64}.json"
    recent = runtime / f"npudoctor-memo-{os.getuid()}-{'1' * 64}.json"
    other = runtime / "npudoctor-health-cache.json"
    for path in (old, recent, other):
        path.write_text("{}")
    two_days = time.time() - 2 * 86400
    os.utime(old, (two_days, two_days))
    os.utime(other, (two_days, two_days))
    run_health(scenario, runtime)
    assert not old.exists() and recent.exists() and other.exists()
    assert len(list(runtime.glob("npudoctor-memo-*.json"))) == 2
