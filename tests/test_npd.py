"""`npudoctor npd` as NPD runs it: exit 0/1/2, one line of at most 80 characters on stdout,
within its --timeout (also with an npu-smi that never answers)."""

from __future__ import annotations

import shutil
import stat
import time
from pathlib import Path

from stacktree import clean_env, npudoctor

SCENARIOS = Path(__file__).resolve().parent / "scenarios"


def npd(*args, env=None, timeout=60):
    start = time.monotonic()
    proc = npudoctor("npd", *args, env=env, timeout=timeout)
    elapsed = time.monotonic() - start
    assert proc.stdout.endswith("\n") and proc.stdout.count("\n") == 1, proc.stdout
    message = proc.stdout.rstrip("\n")
    assert 0 < len(message) <= 80, message
    return proc.returncode, message, elapsed


def test_ok_on_a_machine_without_problems(tmp_path):
    code, message, _ = npd("--root", str(tmp_path), env=clean_env())
    assert code == 0 and message.startswith("npudoctor: NPU stack OK")


def test_problem_names_the_code(tmp_path):
    root = tmp_path / "root"
    shutil.copytree(SCENARIOS / "hccl-ranktable-truncated" / "root", root, symlinks=True)
    env = clean_env({"RANK_TABLE_FILE": "/etc/hccl.json"})
    code, message, _ = npd("--root", str(root), env=env)
    assert code == 1 and "HCCL001" in message
    # ignored -> no longer a problem from this code
    code, message, _ = npd("--root", str(root), "--ignore", "HCCL001", env=env)
    assert "HCCL001" not in message


def test_unknown_on_bad_options(tmp_path):
    code, message, _ = npd("--severity", "fatal")
    assert code == 2 and "--severity" in message
    code, message, _ = npd("--root", str(tmp_path / "nope"))
    assert code == 2 and "not a directory" in message


def test_hung_npu_smi_answers_within_timeout(tmp_path):
    root = tmp_path / "root"
    (root / "dev").mkdir(parents=True)
    for i in range(2):
        (root / "dev" / f"davinci{i}").touch()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    hang = bindir / "npu-smi"
    hang.write_text("#!/bin/sh\ntrap '' TERM INT\nsleep 120\n")
    hang.chmod(hang.stat().st_mode | stat.S_IEXEC)
    env = clean_env()
    env["PATH"] = f"{bindir}:{env['PATH']}"
    code, message, elapsed = npd("--root", str(root), "--timeout", "4", env=env)
    assert code in (0, 1, 2)
    assert elapsed < 4 + 2.0, elapsed  # interpreter start-up on top of the budget
