"""Attempts to get a stale or planted verdict out of health's memo (issue 18 audit): each
test runs the real CLI on a copy of the real 8 x 910B3 scenario (vllm-project/vllm-ascend#198
capture), changes ONE thing between two runs, and checks the second run judges anew
(``inputs_unchanged_s`` absent) and says what ``--fresh`` says."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from scenario_runner import REPO, environment
from test_health_memo import _spec, _verdict, run_health

from npudoctor.knowledge.matrix import load as matrix_load


def _memo(runtime: Path) -> Path:
    memos = list(runtime.glob("npudoctor-memo-*.json"))
    assert len(memos) == 1, memos
    return memos[0]


def _rewrite(memo: Path, change) -> None:
    data = json.loads(memo.read_text())
    change(data)
    memo.write_text(json.dumps(data))
    os.chmod(memo, 0o600)


def test_a_memo_made_yesterday_is_not_reused(memo_healthy):
    """Verdicts depend on the date (MTX002 counts the matrix's age in days from today; a
    torch_npu line's end of life is judged against today): a memo of another day is not
    reused even when every input is unchanged."""
    scenario, runtime = memo_healthy
    code1, first = run_health(scenario, runtime)
    memo = _memo(runtime)
    _rewrite(memo, lambda d: d.update(written=d["written"] - 86400))
    code2, second = run_health(scenario, runtime)
    assert "inputs_unchanged_s" not in second and code2 == code1 and _verdict(second) == _verdict(first)
    # the run that judged anew wrote today's memo: reused next
    assert "inputs_unchanged_s" in run_health(scenario, runtime)[1]
    # a memo "made" in the future (the clock was set back) is not reused either
    _rewrite(_memo(runtime), lambda d: d.update(written=time.time() + 3600))
    assert "inputs_unchanged_s" not in run_health(scenario, runtime)[1]


def test_a_memo_path_that_is_a_symlink_is_not_followed(memo_healthy, tmp_path):
    """In a shared /tmp a symlink named like the memo could point at any file of ours:
    a memo is read only when it is a regular file; the next write replaces the link."""
    scenario, runtime = memo_healthy
    run_health(scenario, runtime)
    memo = _memo(runtime)
    elsewhere = tmp_path / "elsewhere.json"
    memo.rename(elsewhere)
    memo.symlink_to(elsewhere)
    code, doc = run_health(scenario, runtime)
    assert code == 0 and "inputs_unchanged_s" not in doc
    assert not memo.is_symlink() and memo.is_file()


def test_a_memo_verdict_with_terminal_escapes_is_not_printed(memo_healthy):
    """The text output prints the stored problems and summary: a memo whose verdict is not
    printable text (an ANSI escape, a control character) is refused whole, as a
    ``--cache-ttl`` result is."""
    scenario, runtime = memo_healthy
    run_health(scenario, runtime)
    evil = "\x1b]0;owned\x07\x1b[2J"
    _rewrite(_memo(runtime), lambda d: d["doc"].update(status="unhealthy", problems=[f"DEV010 {evil}"]))
    run_env = dict(environment(scenario, _spec(scenario)), XDG_RUNTIME_DIR=str(runtime), PYTHONPATH=str(REPO))
    argv = [sys.executable, "-m", "npudoctor", "health", "--root", str(scenario / "root"), "--timeout", "20"]
    proc = subprocess.run(argv, env=run_env, capture_output=True, text=True, timeout=120)
    assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout
    assert proc.returncode == 0 and proc.stdout == "healthy: 8 NPU chip(s), CANN 8.0.0, torch_npu 2.1.0.post10\n"


def test_an_edited_bundled_matrix_of_a_checkout_is_another_key(memo_healthy, tmp_path):
    """In a source checkout the bundled matrix lives in ``matrix/`` beside the package and
    is used through its compiled form (``scripts/gen_matrix.py --write``): an edit of it,
    compiled, is judged anew (here: torch_npu 2.1.0.post10's row dropped, so its pairing is
    no longer documented)."""
    scenario, runtime = memo_healthy
    checkout = tmp_path / "checkout"
    shutil.copytree(REPO / "npudoctor", checkout / "npudoctor", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "matrix", checkout / "matrix")
    run_env = dict(environment(scenario, _spec(scenario)), XDG_RUNTIME_DIR=str(runtime), PYTHONPATH=str(checkout))
    argv = [sys.executable, "-m", "npudoctor", "health", "--root", str(scenario / "root"), "--timeout", "20", "--json"]

    def run(*args: str):
        proc = subprocess.run(argv + list(args), env=run_env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert proc.returncode in (0, 1), proc.stderr
        return proc.returncode, json.loads(proc.stdout)

    code1, first = run()
    assert "inputs_unchanged_s" in run()[1]
    table = checkout / "matrix" / "torch_npu.toml"
    text = table.read_text()
    assert 'torch_npu = "2.1.0.post10"' in text
    table.write_text(text.replace('torch_npu = "2.1.0.post10"', 'torch_npu = "2.1.0.post99"', 1))
    files = matrix_load._files_of(str(checkout / "matrix"))
    compiled = matrix_load.compile_documents(files, [Path(f).read_bytes() for f in files])
    (checkout / "npudoctor" / "knowledge" / "matrix" / "compiled.json").write_text(
        matrix_load.render_compiled(compiled), encoding="utf-8"
    )
    code2, second = run()
    assert "inputs_unchanged_s" not in second
    code3, fresh = run("--fresh")
    assert code2 == code3 and _verdict(second) == _verdict(fresh) and _verdict(second) != _verdict(first)


def _first(data, op):
    return next(entry for entry in data["ops"] if entry[0] == op)


def test_a_garbled_memo_means_a_full_run_not_an_unhealthy_verdict(memo_healthy):
    """A memo of the right shape with values no run writes (a path with a NUL byte, a
    timeout that is not a number, a time before the epoch's range) is not reused, and the
    full check answers: never "npudoctor failed" or "bad health-check option"."""
    scenario, runtime = memo_healthy
    code1, first = run_health(scenario, runtime)
    changes = [
        lambda d: d["outside"][0].__setitem__(0, "/tmp/a\x00b"),
        lambda d: _first(d, "run")[2].__setitem__("timeout", "abc"),
        lambda d: _first(d, "read_bytes")[2].__setitem__("path", ["not", "a", "path"]),
        lambda d: d.update(written=-1e300),
    ]
    for change in changes:
        _rewrite(_memo(runtime), change)
        code, doc = run_health(scenario, runtime)
        assert code == code1 and "inputs_unchanged_s" not in doc and _verdict(doc) == _verdict(first)


def test_a_secret_in_the_env_file_is_not_written_to_the_memo(memo_healthy, tmp_path):
    """A variable of the CANN families named like a secret (``ASCEND_HUB_TOKEN``) in the
    ``--env-file`` is not kept in the memo (which keeps the values of the variables a
    Host adds), nor guessable from its name (the key and the environment's fingerprint
    are SHA-256, not a CRC); the verdict is still reused."""
    scenario, runtime = memo_healthy
    env_file = tmp_path / "workload.env"
    env_file.write_text(
        "ASCEND_TOOLKIT_HOME=/usr/local/Ascend/ascend-toolkit/latest\nASCEND_HUB_TOKEN=hub_secret_value_987\n"
    )
    code1, first = run_health(scenario, runtime, "--env-file", str(env_file))
    code2, second = run_health(scenario, runtime, "--env-file", str(env_file))
    assert code1 == code2 and "inputs_unchanged_s" in second and _verdict(second) == _verdict(first)
    memo = _memo(runtime)
    assert "hub_secret_value_987" not in memo.read_text()
    assert len(memo.name.split("-")[-1].split(".")[0]) == 32  # npudoctor-memo-UID-<sha256 prefix>.json


def test_a_library_installed_beside_npudoctor_is_another_key(memo_healthy, tmp_path):
    """npudoctor's verdict rests on the libraries it imports too (``packaging`` compares
    versions): a package installed into, upgraded in or removed from a directory of its
    ``sys.path`` changes that directory, and the memo is not reused."""
    scenario, runtime = memo_healthy
    libs = tmp_path / "libs"
    libs.mkdir()
    run_env = dict(environment(scenario, _spec(scenario)), XDG_RUNTIME_DIR=str(runtime))
    run_env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(libs)])
    argv = [sys.executable, "-m", "npudoctor", "health", "--root", str(scenario / "root"), "--timeout", "20", "--json"]

    def run():
        proc = subprocess.run(argv, env=run_env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    run()
    assert "inputs_unchanged_s" in run()
    (libs / "packaging-99.0.dist-info").mkdir()
    assert "inputs_unchanged_s" not in run()
