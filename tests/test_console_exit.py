"""The console script ends without the interpreter's last collections
(``npudoctor.entry.exit_quickly``), and the rest of the exit is the interpreter's own:
``atexit`` handlers and ``weakref.finalize`` callbacks run, the output arrives whole."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import tomllib
from scenario_runner import environment

REPO = Path(__file__).resolve().parent.parent
SCENARIO = REPO / "tests" / "scenarios" / "health-910b3-8npu-healthy"

#: Runs the console script's function with an ``atexit`` handler and a finalizer registered
#: first, which report on stderr what the exit did.
_BOOT = f"""
import atexit, gc, sys, weakref
sys.path.insert(0, {str(REPO)!r})
class Held: pass
held = Held()
held.cycle = held
weakref.finalize(held, lambda: sys.stderr.write("finalized\\n"))
atexit.register(lambda: sys.stderr.write(f"atexit frozen={{gc.get_freeze_count()}}\\n"))
del held
from npudoctor.entry import run
sys.argv[0] = "npudoctor"
run()
"""


def _console(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = environment(SCENARIO, tomllib.loads((SCENARIO / "scenario.toml").read_text(encoding="utf-8")))
    env["HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-c", _BOOT, *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_health_exits_with_its_verdict_after_atexit_and_finalizers_ran(tmp_path: Path) -> None:
    done = _console(tmp_path, "health", "--root", str(SCENARIO / "root"), "--timeout", "30")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("healthy:"), done.stdout
    lines = done.stderr.splitlines()
    frozen = [int(line.split("=")[1]) for line in lines if line.startswith("atexit frozen=")]
    assert len(frozen) == 1 and frozen[0] > 10_000, done.stderr  # the run's objects, left alone
    assert "finalized" in lines, done.stderr  # an object in a cycle: its finalizer ran at exit


def test_a_long_output_arrives_whole_through_a_pipe(tmp_path: Path) -> None:
    done = _console(tmp_path, "matrix", "show", "--json")
    assert done.returncode == 0, done.stderr
    assert len(done.stdout) > 100_000  # more than any pipe buffer holds
    assert json.loads(done.stdout)["rows"], done.stdout[-200:]
