"""Hostile commands (issue 20): a command that floods, crashes or leaves a daemon behind
neither blows npudoctor's deadline or memory nor survives the run, and a crash is a fact.
Real scripts on PATH; every npudoctor run is a process bounded by a timeout."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Dict, List

import pytest
from builders.shellscript import write_script

from npudoctor.host import OUTPUT_LIMIT, Host

REPO = Path(__file__).resolve().parent.parent
SCENARIO = REPO / "tests" / "scenarios" / "k10-stale-other-cann"
TABLE = (
    REPO / "tests" / "scenarios" / "case05-mindie-atb-models-1.0.RC2-torch-npu-2.1.0.post4" / "bin" / "npu-smi-info.txt"
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux process semantics")


def _measured(args: List[str], env: Dict[str, str], cwd: Path, limit: float = 40.0) -> Dict[str, object]:
    """Run ``npudoctor ARGS`` in a wrapper that reports its wall time and the peak RSS of
    its children (npudoctor and what it ran), in MiB."""
    wrapper = textwrap.dedent(
        """
        import json, resource, subprocess, sys, time
        start = time.monotonic()
        proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)
        print(json.dumps({"rc": proc.returncode, "out": proc.stdout, "err": proc.stderr,
                          "secs": time.monotonic() - start,
                          "rss_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
        """
    )
    try:
        proc = subprocess.run(
            [sys.executable, "-c", wrapper, sys.executable, "-m", "npudoctor", *args],
            capture_output=True,
            text=True,
            timeout=limit,
            cwd=str(cwd),
            env=env,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"`npudoctor {' '.join(args)}` did not finish within {limit:.0f} s")
    result: Dict[str, object] = json.loads(proc.stdout)
    assert "Traceback" not in str(result["err"]), result["err"]
    return result


def _env(bin_dir: Path, **extra: str) -> Dict[str, str]:
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": "/root", "PYTHONPATH": str(REPO)}
    env.update(extra)
    return env


# ------------------------------------------------------------------ Host.run itself
def test_run_caps_output_while_reading_and_kills_the_flood(tmp_path: Path) -> None:
    flood = write_script(tmp_path, "flood", "exec yes 'a flooding line of output'\n")
    start = time.monotonic()
    result = Host().run([str(flood)], timeout=20)
    assert time.monotonic() - start < 10
    assert result.overflow and not result.ok
    assert result.error == f"output over {OUTPUT_LIMIT} bytes (killed)"
    assert len(result.stdout) == OUTPUT_LIMIT
    assert result.returncode is None


def test_run_timeout_keeps_at_most_the_cap(tmp_path: Path) -> None:
    slow = write_script(tmp_path, "slow", "echo started; exec sleep 30\n")
    result = Host().run([str(slow)], timeout=0.5)
    assert result.timed_out and result.stdout == "started\n"
    assert result.duration < 3


def test_run_reports_a_crash_by_signal(tmp_path: Path) -> None:
    crash = write_script(tmp_path, "crash", "echo one; echo two; kill -SEGV $$\n")
    result = Host().run([str(crash)], timeout=5)
    assert result.signal == "SIGSEGV"
    assert result.describe().endswith("killed by SIGSEGV after printing 2 lines")


def _alive(marker: str) -> List[int]:
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmd = fh.read()
            with open(f"/proc/{pid}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmd and state != b"Z":
            pids.append(int(pid))
    return pids


@pytest.mark.parametrize("keeps_pipe", [False, True])
def test_run_leaves_no_setsid_grandchild_behind(tmp_path: Path, keeps_pipe: bool) -> None:
    seconds = "3737" if keeps_pipe else "3738"
    redirect = "" if keeps_pipe else " >/dev/null 2>&1"
    daemon = write_script(tmp_path, "daemon", f"setsid sleep {seconds}{redirect} &\necho table\nexit 0\n")
    start = time.monotonic()
    result = Host().run([str(daemon)], timeout=5)
    assert time.monotonic() - start < 3
    assert result.stdout == "table\n"
    deadline = time.monotonic() + 2
    while _alive(f"sleep\0{seconds}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _alive(f"sleep\0{seconds}") == []


# ------------------------------------------------------------------ the commands
def test_e2e_check_with_a_flooding_npu_smi_stays_in_time_and_memory(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    write_script(bin_dir, "npu-smi", "exec yes '| 0     910B3     | OK     | 95.1   45   0    / 0   |'\n")
    run = _measured(["check", "--root", str(SCENARIO / "root"), "--json"], _env(bin_dir), tmp_path)
    assert run["rc"] in (0, 1), run["err"]
    assert float(run["secs"]) < 15  # type: ignore[arg-type]
    assert float(run["rss_mib"]) < 400, run["rss_mib"]  # type: ignore[arg-type]
    doc = json.loads(str(run["out"]))
    smi = doc["facts"]["devices"]["npu_smi"]
    assert f"output over {OUTPUT_LIMIT} bytes" in smi["error"]


def test_e2e_check_with_a_flooding_python_target_stays_in_time_and_memory(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    target = write_script(tmp_path / "py", "python3", "exec yes 'x'\n")
    run = _measured(["check", "--python", str(target), "--json"], _env(bin_dir), tmp_path)
    assert float(run["secs"]) < 15  # type: ignore[arg-type]
    assert float(run["rss_mib"]) < 400, run["rss_mib"]  # type: ignore[arg-type]
    assert f"output over {OUTPUT_LIMIT} bytes" in str(run["out"])


def test_e2e_devices_kills_a_setsid_grandchild_of_npu_smi(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    write_script(bin_dir, "npu-smi", f"setsid sleep 3739 &\ncat '{TABLE}'\n")
    run = _measured(["devices", "--root", str(SCENARIO / "root"), "--json"], _env(bin_dir), tmp_path)
    assert run["rc"] in (0, 1), run["err"]
    time.sleep(0.2)
    assert _alive("sleep\0" + "3739") == []


def test_e2e_overall_deadline_stops_a_slow_npu_smi_with_many_alarms(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    table = TABLE.read_text().replace("| OK ", "| Alarm ")
    (tmp_path / "table.txt").write_text(table)
    write_script(
        bin_dir,
        "npu-smi",
        f"""\
        case "$*" in
          info) cat '{tmp_path / "table.txt"}' ;;
          *) sleep 1.5; echo "Health Status : Alarm" ;;
        esac
        """,
    )
    run = _measured(["devices", "--root", str(SCENARIO / "root"), "--json", "--deadline", "2"], _env(bin_dir), tmp_path)
    assert run["rc"] in (0, 1), run["err"]
    assert float(run["secs"]) < 8, run["secs"]  # type: ignore[arg-type]


def test_e2e_npu_smi_killed_by_sigsegv_is_an_error_not_a_healthy_table(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    write_script(bin_dir, "npu-smi", f"head -n 12 '{TABLE}'\nkill -SEGV $$\n")
    run = _measured(["check", "--root", str(SCENARIO / "root"), "--json"], _env(bin_dir), tmp_path)
    doc = json.loads(str(run["out"]))
    smi = doc["facts"]["devices"]["npu_smi"]
    assert smi["cause"] == "crashed" and smi["signal"] == "SIGSEGV"
    assert smi["error"] == "npu-smi was killed by SIGSEGV after printing 12 lines"
    assert doc["facts"]["devices"]["chips"] == []
    crashed = [f for f in doc["findings"] if f["code"] == "DEV005"]
    assert crashed and crashed[0]["severity"] == "error"
    assert run["rc"] == 1
    health = _measured(["health", "--root", str(SCENARIO / "root"), "--timeout", "5"], _env(bin_dir), tmp_path)
    assert health["rc"] == 1, health
    assert "DEV005" in str(health["out"]) + str(health["err"])


LOOPER_C = r"""
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
/* forks and exits in a loop (each child is re-parented to the subreaper), appending
   "PGID GENERATION" to argv[1] every 64 generations: no process listing can see a pid that
   lives microseconds, the file's growth can.  Gives up by itself after 20 s so that a
   failed test leaves no lasting load. */
int main(int argc, char **argv) {
    time_t start = time(NULL);
    unsigned long generation = 0;
    if (argc < 2) return 2;
    while (time(NULL) < start + 20) {
        pid_t pid = fork();
        if (pid > 0) _exit(0);
        if (pid < 0) { usleep(1000); continue; }
        if (++generation % 64 == 0) {
            char line[64];
            int fd = open(argv[1], O_WRONLY | O_CREAT | O_APPEND, 0600);
            snprintf(line, sizeof line, "%d %lu\n", (int)getpgrp(), generation);
            if (fd >= 0) { if (write(fd, line, strlen(line)) < 0) {} close(fd); }
        }
    }
    return 0;
}
"""


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_run_leaves_no_orphan_that_forks_and_exits_in_a_loop(tmp_path: Path) -> None:
    # each generation forks and exits at once: its child is re-parented to npudoctor (the
    # subreaper) again and again, so one pass over the orphans misses the next one
    (tmp_path / "looper.c").write_text(LOOPER_C)
    looper, count = tmp_path / "looper", tmp_path / "generations"
    subprocess.run(["gcc", "-O1", "-o", str(looper), str(tmp_path / "looper.c")], check=True)
    # the command waits until the looper runs on its own (setsid) before it ends
    daemon = write_script(tmp_path, "daemon", f"setsid {looper} {count} >/dev/null 2>&1 &\nsleep 0.3\necho table\n")
    try:
        result = Host().run([str(daemon)], timeout=5)
        assert result.stdout == "table\n"
        time.sleep(0.3)  # a kill that missed one shows as a file still growing
        before = _size(count)
        time.sleep(0.5)
        assert _size(count) == before, "a generation of the looper escaped the subreaper"
    finally:  # never leave a fork loop on the machine, whatever the outcome
        if count.exists():
            with contextlib.suppress(OSError, ValueError, IndexError):
                os.killpg(int(count.read_text().split()[0]), signal.SIGKILL)
