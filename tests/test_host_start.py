"""Host.start (issue 18): a slow command begun early and collected by the run() that asks
for it runs once, keeps its deadline, is serialized with the other npu-smi calls, and is
ended when nobody collects it.  Real scripts on PATH; the devices probe begins ``npu-smi
info`` before the probes that read files."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import List

import pytest
from builders.shellscript import write_script

from npudoctor import hostproc
from npudoctor.context import Options
from npudoctor.engine import collect
from npudoctor.host import Host

REPO = Path(__file__).resolve().parent.parent
SCENARIO = REPO / "tests" / "scenarios" / "health-910b3-8npu-healthy"
TABLE = SCENARIO / "bin" / "npu-smi-info_910B3_23.0.7_8npu_noproc.txt"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux process semantics")


def _npu_smi(bin_dir: Path, log: Path, delay: float = 0.0) -> Path:
    """An npu-smi that logs each call (``begin ARGS`` / ``end ARGS``; the pid of the last
    ``info`` in ``LOG.pid``) and prints the 8 x 910B3 capture for ``info`` after ``delay``
    seconds; other calls fail as uncaptured."""
    return write_script(
        bin_dir,
        "npu-smi",
        f"""\
        echo "begin $*" >> {log}
        if [ "$*" = "info" ]; then echo $$ > {log}.pid; sleep {delay}; cat {TABLE}; echo "end $*" >> {log}; exit 0; fi
        echo "end $*" >> {log}
        echo "npu-smi $*: not captured" >&2
        exit 1
        """,
    )


def _lines(log: Path) -> List[str]:
    return log.read_text().splitlines() if log.exists() else []


def _cmdline(pid: int) -> str:
    """``/proc/PID/cmdline`` of a child, waiting (at most 5 s) while it is still empty: the
    kernel closes the close-on-exec pipe that ends ``Popen`` before it sets the new
    program's arguments, so a child read at once under load may show none yet."""
    deadline = time.monotonic() + 5.0
    while True:
        text = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        if text or time.monotonic() > deadline:
            return text
        time.sleep(0.01)


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (a zombie has ended)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def test_started_command_runs_once_and_run_returns_its_result(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    exe = str(_npu_smi(tmp_path / "bin", log))
    host = Host(environ={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"})
    alone = host.run([exe, "info"], timeout=10)
    log.unlink()

    assert host.start([exe, "info"]) is True
    assert host.start([exe, "info"]) is False  # already started
    collected = host.run([exe, "info"], timeout=10)

    assert _lines(log) == ["begin info", "end info"]  # once, not again by run()
    assert collected.ok and collected.returncode == 0
    assert collected.stdout == alone.stdout == TABLE.read_text()
    assert collected.argv == [exe, "info"]
    again = host.run([exe, "info"], timeout=10)  # collected: the next run runs it anew
    assert again.stdout == alone.stdout
    assert _lines(log) == ["begin info", "end info"] * 2


def test_start_refuses_what_it_cannot_start(tmp_path: Path) -> None:
    exe = str(_npu_smi(tmp_path / "bin", tmp_path / "calls.log"))
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"}
    assert Host(environ=env, commands=False).start([exe, "info"]) is False
    assert Host(environ=env).start(["no-such-command-npudoctor"]) is False
    assert Host(environ=env).start([str(tmp_path / "missing" / "npu-smi"), "info"]) is False
    assert not (tmp_path / "calls.log").exists()


def test_other_npu_smi_calls_wait_for_the_started_one(tmp_path: Path) -> None:
    """npu-smi runs one call at a time: a second call made while ``info`` still runs in the
    background begins only after it ended, and neither blocks the other for good."""
    log = tmp_path / "calls.log"
    exe = str(_npu_smi(tmp_path / "bin", log, delay=0.3))
    host = Host(environ={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"})
    assert host.start([exe, "info"])
    mapping = host.run([exe, "info", "-m"], timeout=10)
    assert _lines(log) == ["begin info", "end info", "begin info -m", "end info -m"]
    assert mapping.returncode == 1 and "not captured" in mapping.stderr
    info = host.run([exe, "info"], timeout=10)  # waited for above: its result was kept
    assert info.ok and info.stdout == TABLE.read_text()
    assert info.duration >= 0.3  # counted from its start
    assert _lines(log) == ["begin info", "end info", "begin info -m", "end info -m"]
    # the lock is free again: another host may start npu-smi
    other = Host(environ={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"})
    assert other.start([exe, "info"])
    other.close()


def test_a_started_command_that_hangs_is_waited_for_timeout_from_the_run_that_asks(tmp_path: Path) -> None:
    hang = write_script(tmp_path / "bin", "npu-smi", "exec sleep 30\n")
    host = Host(environ={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"})
    assert host.start([str(hang), "info"])
    time.sleep(0.3)  # the probes before the devices probe
    asked = time.monotonic()
    result = host.run([str(hang), "info"], timeout=0.5)
    waited = time.monotonic() - asked
    assert result.timed_out and result.returncode is None
    assert 0.5 <= waited < 5  # the run's own timeout, from when it asks
    assert result.duration >= 0.8  # what the command ran, counted from its start


def test_a_started_command_that_ended_long_ago_is_read_not_timed_out(tmp_path: Path) -> None:
    """The probes before the devices probe may take longer than a command's timeout (the
    python probe may take 20 s to import torch_npu): npu-smi, started first and long done,
    still answers with what it printed, even when the run asks with no time left."""
    log = tmp_path / "calls.log"
    exe = str(_npu_smi(tmp_path / "bin", log))
    host = Host(environ={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"})
    timed_out_before = len(hostproc.TIMED_OUT)
    assert host.start([exe, "info"])
    time.sleep(1.2)
    result = host.run([exe, "info"], timeout=0.0)
    assert not result.timed_out and result.returncode == 0
    assert result.stdout == TABLE.read_text()
    assert result.duration >= 1.2
    assert len(hostproc.TIMED_OUT) == timed_out_before


def test_collect_reads_npu_smi_that_ended_while_a_slow_probe_ran(tmp_path: Path) -> None:
    """The reviewer's case: a 1 s command timeout and a python probe that takes 1.5 s (its
    interpreter sleeps first): npu-smi, done long before, is parsed, not called hung."""
    log = tmp_path / "calls.log"
    _npu_smi(tmp_path / "bin", log)
    slow = write_script(tmp_path / "slow", "python3", f'sleep 1.5\nexec {sys.executable} "$@"\n')
    host = Host(environ={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "HOME": "/root"})  # live: --python runs
    options = Options(command_timeout=1.0, python=str(slow))
    snapshot = collect(host, options, sections=("host", "python", "devices"))
    smi = snapshot.facts["devices"]["npu_smi"]
    assert smi.get("cause") is None and smi["available"] is True, smi
    assert len(snapshot.facts["devices"]["chips"]) == 8
    assert smi["commands"][0]["duration"] >= 1.0  # npu-smi info ran while the python probe waited


def test_a_started_command_nobody_waits_on_is_not_among_the_running_ones(tmp_path: Path) -> None:
    """health, cut short while the file probes run, names the commands it was waiting on;
    an npu-smi started ahead is not one of them until the devices probe asks for it."""
    hang = write_script(tmp_path / "bin", "npu-smi", "sleep 30\nexit 0\n")  # the shell stays: its cmdline names npu-smi
    host = Host(environ={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"})
    assert host.start([str(hang), "info"])
    try:
        running = [" ".join(c["argv"]) for c in hostproc.running_commands(None, 1.0)]
        assert not [c for c in running if str(hang) in c], running
        alive = [p for p in hostproc.RUNNING if _alive(p)]  # yet it runs, and SIGTERM handling ends it
        assert [p for p in alive if str(hang) in _cmdline(p)]
    finally:
        host.close()
    result = host.run([str(hang), "info"], timeout=0.2)  # a run that waits on it: listed while it waits
    assert result.timed_out


def test_close_ends_what_nobody_collected(tmp_path: Path) -> None:
    hang = write_script(tmp_path / "bin", "npu-smi", "sleep 30 &\nwait\n")
    host = Host(environ={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"})
    timed_out_before = len(hostproc.TIMED_OUT)
    assert host.start([str(hang), "info"])
    pids = [p for p in hostproc.RUNNING if _alive(p)]
    assert pids, "the started command runs in the background"
    began = time.monotonic()
    host.close()
    assert time.monotonic() - began < 5
    for pid in pids:
        assert not _alive(pid)
    assert len(hostproc.TIMED_OUT) == timed_out_before  # ended, not a command that timed out
    # the npu-smi lock was released: a new call runs
    assert Host(environ=host.environ).run([str(hang), "-v"], timeout=0.3).timed_out


def test_collect_begins_npu_smi_info_before_the_file_probes(tmp_path: Path) -> None:
    """``collect`` calls the devices probe's ``start`` first: ``npu-smi info`` already runs
    when the first probe reads files, and the devices probe collects that run."""
    log = tmp_path / "calls.log"
    exe = _npu_smi(tmp_path / "bin", log, delay=0.3)
    host = Host(root=str(SCENARIO / "root"), environ={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "HOME": "/root"})
    running_at_first_probe: List[List[int]] = []

    def progress(section: str) -> None:
        # pids, not command lines: a child just past exec() may not show its cmdline yet
        if not running_at_first_probe:
            running_at_first_probe.append([pid for pid in hostproc.RUNNING if _alive(pid)])

    options = Options(progress=progress)
    snapshot = collect(host, options, sections=("host", "container", "python", "packages", "devices"))
    first = running_at_first_probe[0]
    assert int(Path(f"{log}.pid").read_text()) in first, (exe, first)
    assert _lines(log).count("begin info") == 1
    devices = snapshot.facts["devices"]
    assert devices["npu_smi"]["available"] is True
    assert len(devices["chips"]) == 8
    assert [c["argv"][1:] for c in devices["npu_smi"]["commands"]] == [["info"], ["info", "-m"], ["info", "-t", "topo"]]
    assert devices["npu_smi"]["commands"][0]["duration"] >= 0.3
    assert not host._started  # nothing left running
    assert not [p for p in hostproc.RUNNING if _alive(p)]


def test_collect_calls_started_once_while_npu_smi_runs_before_any_probe(tmp_path: Path) -> None:
    """``options.started`` (where a quick run loads its rules and matrix) is called once,
    after ``npu-smi info`` began and before the first probe: no section collected yet."""
    log = tmp_path / "calls.log"
    _npu_smi(tmp_path / "bin", log, delay=0.3)
    host = Host(root=str(SCENARIO / "root"), environ={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "HOME": "/root"})
    events: List[str] = []
    collected: dict = {}
    running: List[int] = []

    def started() -> None:
        # pids, not command lines: a child just past exec() may not show its cmdline yet
        running.extend(pid for pid in hostproc.RUNNING if _alive(pid))
        events.append(f"started: {len(collected)} sections")

    options = Options(progress=lambda section: events.append(section), started=started, collected=collected)
    collect(host, options, sections=("host", "packages", "devices"))
    assert events == ["started: 0 sections", "host", "packages", "devices"]
    assert running == [int(Path(f"{log}.pid").read_text())]


def test_collect_without_commands_starts_nothing(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    _npu_smi(tmp_path / "bin", log)
    host = Host(root=str(SCENARIO / "root"), environ={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"}, commands=False)
    snapshot = collect(host, Options(), sections=("host", "devices"))
    assert snapshot.facts["devices"]["npu_smi"]["cause"] == "disabled"
    assert not log.exists()
