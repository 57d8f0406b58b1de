"""The children of :meth:`npudoctor.host.Host.run`: reading their output under a byte cap
and a deadline, and ending them -- their process group, their descendants, and the
grandchildren they orphaned (npudoctor becomes a child subreaper so that a grandchild that
called ``setsid()`` is re-parented to it instead of init).

Linux ``/proc`` is read here about npudoctor's *own* processes, never about the judged
machine.  This module imports no other npudoctor module.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from typing import TYPE_CHECKING

from npudoctor.record import MutableRecord

if TYPE_CHECKING:
    from typing import Dict, List, Optional, Sequence, Set, Tuple

    from npudoctor.hostio import CommandResult

#: Pids of the commands :meth:`npudoctor.host.Host.run` is running now (not orphans: see :func:`reap_orphans`).
RUNNING: Set[int] = set()
#: Those of :data:`RUNNING` that :meth:`npudoctor.host.Host.start` began and nobody waits on yet.
_BACKGROUND: Set[int] = set()
SPAWN_LOCK = threading.Lock()
#: The commands killed for their deadline in this process, latest last (at most 16):
#: ``{"argv", "duration", "cpu_s", "state", "cpu_pressure"}``, for a caller that must
#: answer after its own budget ran out (``npudoctor health``).
TIMED_OUT: List[Dict[str, object]] = []
_SUBREAPER: List[bool] = []
_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make this process a child subreaper (Linux ``prctl(PR_SET_CHILD_SUBREAPER)``), once:
    a grandchild orphaned by a command (one that called ``setsid()`` and lives on) is then
    re-parented to npudoctor instead of init, so :func:`reap_orphans` can end it.  Returns
    whether it worked (``False`` off Linux or without libc); never raises."""
    if not _SUBREAPER:
        ok = False
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                libc = ctypes.CDLL(None, use_errno=True)
                ok = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
            except (OSError, AttributeError):
                ok = False
        _SUBREAPER.append(ok)
    return _SUBREAPER[0]


def _children(pid: int) -> List[int]:
    """Direct children of ``pid`` (``/proc/<pid>/task/*/children``); empty when unknown."""
    out: List[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", encoding="ascii") as fh:  # procfs, not the judged machine
                out.extend(int(p) for p in fh.read().split())
        except (OSError, ValueError):
            continue
    return out


def _descendants(pid: int) -> List[int]:
    """Every descendant of ``pid`` still attached to it (children first), whatever their
    session or process group."""
    seen: List[int] = []
    todo = [pid]
    while todo and len(seen) < 10000:
        for child in _children(todo.pop()):
            if child not in seen:
                seen.append(child)
                todo.append(child)
    return seen


def kill_tree(pid: int) -> None:
    """SIGKILL the process group led by ``pid`` and every descendant of ``pid`` (those that
    left the group with ``setsid()`` included).  Never raises."""
    victims = _descendants(pid)
    for target in [pid] + victims:
        with contextlib.suppress(OSError):
            os.kill(target, signal.SIGSTOP)  # no more forking while we collect the rest
    victims = list(dict.fromkeys(victims + _descendants(pid)))
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)
    for target in [pid] + victims:
        with contextlib.suppress(OSError):
            os.kill(target, signal.SIGKILL)


#: Longest time, seconds, :func:`reap_orphans` goes on ending orphans that keep appearing
#: (a grandchild that forks and exits in a loop) or waits for one that will not die (D state).
REAP_FOR = 1.0


def reap_orphans(since: Optional[int]) -> int:
    """End the processes re-parented to npudoctor (a subreaper: :func:`become_subreaper`)
    that were born at or after ``since`` (clock ticks since boot, the start of the command
    that just ended) and that no running :meth:`npudoctor.host.Host.run` nor :func:`track` knows --
    grandchildren left behind by a command -- with their process group and descendants, and
    reap them; again until no new one appears (one that forks and exits in a loop re-parents
    its child to npudoctor each time; killing its whole group at once ends them all), for at
    most :data:`REAP_FOR` seconds.  Returns how many were ended; never raises."""
    if not _SUBREAPER or not _SUBREAPER[0] or since is None:
        return 0
    ended: Set[int] = set()
    waiting: Set[int] = set()
    own_group = os.getpgrp()
    give_up = time.monotonic() + REAP_FOR
    while time.monotonic() < give_up:
        with SPAWN_LOCK:
            known = set(RUNNING) | _TRACKED
            orphans = [
                p for p in _children(os.getpid()) if p not in known and p not in ended and (starttime(p) or -1) >= since
            ]
        for pid in orphans:
            with contextlib.suppress(OSError):
                group = os.getpgid(pid)
                if group != own_group:
                    os.killpg(group, signal.SIGKILL)  # the orphan and every process of its group
            kill_tree(pid)
        ended.update(orphans)
        waiting.update(orphans)
        for pid in list(waiting):
            try:
                done, _status = os.waitpid(pid, os.WNOHANG)
            except OSError:
                done = pid  # not ours to reap after all
            if done:
                waiting.discard(pid)
        if not orphans and not waiting:
            break
        time.sleep(0.01)
    return len(ended)


#: Pids of children started outside :meth:`npudoctor.host.Host.run` that orphan reaping must leave alone.
_TRACKED: Set[int] = set()


def track(pid: int, on: bool = True) -> None:
    """Declare (``on``) or forget a child this process started itself outside
    :meth:`npudoctor.host.Host.run` (``subprocess.Popen`` in a probe), so :func:`reap_orphans` leaves it."""
    with SPAWN_LOCK:
        if on:
            _TRACKED.add(pid)
        else:
            _TRACKED.discard(pid)


def starttime(pid: int) -> Optional[int]:
    """Start time of a process in clock ticks since boot (``/proc/<pid>/stat`` field 22),
    or ``None``."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:  # procfs, not the judged machine
            tail = fh.read(4096).rsplit(b")", 1)[1].split()
        return int(tail[19])
    except (OSError, IndexError, ValueError):
        return None


def drain(proc: subprocess.Popen[bytes], deadline: float, limit: int) -> Tuple[bytes, bytes, str]:
    """Read ``proc``'s stdout and stderr until both end, keeping at most ``limit`` bytes
    each: ``(out, err, ending)``.  ``ending`` is ``""`` (both pipes ended), ``"timeout"``
    (``deadline``, a :func:`time.monotonic` instant, passed) or ``"overflow"`` (a stream
    passed ``limit`` bytes: reading stopped there).  When the command has exited but a
    process it left holds the pipes open, reading stops after a short grace."""
    bufs: Dict[int, bytearray] = {}
    sel = selectors.DefaultSelector()
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            fd = stream.fileno()
            os.set_blocking(fd, False)
            bufs[fd] = bytearray()
            sel.register(fd, selectors.EVENT_READ)
    order = list(bufs)
    ending = ""
    exited_at: Optional[float] = None
    try:
        while sel.get_map():
            now = time.monotonic()
            if now >= deadline:
                ending = "timeout"
                break
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > EXIT_GRACE:
                break  # the command ended; what holds the pipe is left over
            wait = min(deadline - now, 0.05 if exited_at is not None else 0.25)
            for key, _mask in sel.select(timeout=max(wait, 0.0)):
                fd = int(key.fd)
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                except OSError:
                    chunk = b""
                if not chunk:
                    sel.unregister(fd)
                    continue
                buf = bufs[fd]
                buf += chunk
                if len(buf) > limit:
                    del buf[limit:]
                    ending = "overflow"
            if ending:
                break
    finally:
        sel.close()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
    out = bytes(bufs[order[0]]) if order else b""
    err = bytes(bufs[order[1]]) if len(order) > 1 else b""
    return out, err, ending


#: Seconds the pipes may stay open after the command itself exited.
EXIT_GRACE = 0.5


def cpu_state(pid: int) -> Tuple[Optional[float], Optional[str]]:
    """CPU seconds a process has used (``utime + stime``, ``/proc/<pid>/stat`` fields 14
    and 15, in clock ticks) and its state letter (field 3: ``R`` running or runnable,
    ``S`` sleeping, ``D`` uninterruptible -- blocked in the kernel, e.g. in a driver
    call); ``(None, None)`` when it cannot be read (proc(5))."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:  # procfs, not the judged machine
            tail = fh.read(4096).rsplit(b")", 1)[1].split()
        hz = os.sysconf("SC_CLK_TCK")
        return (int(tail[11]) + int(tail[12])) / hz, tail[0].decode("ascii", "replace")
    except (OSError, IndexError, ValueError):
        return None, None


def cpu_pressure_total() -> Optional[int]:
    """A sample of how long this process's tasks could have been starved of CPU, in
    microseconds since boot: the ``total`` of the ``some`` line of ``/proc/pressure/cpu``
    (PSI, Linux >= 4.20: time during which at least one runnable task waited for a CPU) plus
    the time this process's own cgroup was throttled by its CPU limit (``cpu.stat``:
    ``throttled_usec`` on cgroup v2, ``throttled_time`` in ns on v1 -- a pod with a CPU limit
    starves on an idle node, and PSI does not count it).  ``None`` when neither can be read.
    Two samples give the share of a window (see :func:`cpu_pressure_share`).  The kernel's
    own files, not the judged machine's."""
    psi, throttled = _psi_some_total(), _throttled_usec()
    if psi is None and throttled is None:
        return None
    return (psi or 0) + (throttled or 0)


def _psi_some_total() -> Optional[int]:
    try:
        with open("/proc/pressure/cpu", "rb") as fh:
            for line in fh.read(4096).decode("ascii", "replace").splitlines():
                if line.startswith("some "):
                    for word in line.split():
                        if word.startswith("total="):
                            return int(word[6:])
    except (OSError, ValueError):
        return None
    return None


def _throttled_usec() -> Optional[int]:
    """Microseconds this process's cgroup was throttled (cgroup v2 ``throttled_usec``, or
    v1 ``throttled_time`` / 1000 of the ``cpu`` controller), or ``None``."""
    try:
        with open("/proc/self/cgroup", "rb") as fh:
            lines = fh.read(8192).decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    candidates = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            candidates.append((f"/sys/fs/cgroup{parts[2].rstrip('/')}/cpu.stat", "throttled_usec", 1))
        elif "cpu" in parts[1].split(","):
            base = "/sys/fs/cgroup/" + parts[1]
            candidates.append((f"{base}{parts[2].rstrip('/')}/cpu.stat", "throttled_time", 1000))
    for path, key, per_usec in candidates:
        try:
            with open(path, "rb") as fh:  # the kernel's cgroup files of this process
                for line in fh.read(8192).decode("ascii", "replace").splitlines():
                    name, _, value = line.partition(" ")
                    if name == key:
                        return int(value) // per_usec
        except (OSError, ValueError):
            continue
    return None


def cpu_pressure_share(since: Optional[int], seconds: float) -> Optional[float]:
    """Percent (0-100) of the last ``seconds`` during which a runnable task waited for a
    CPU, from a :func:`cpu_pressure_total` sample ``since`` taken that long ago; ``None``
    when either sample is missing or the window is empty."""
    now = cpu_pressure_total()
    if since is None or now is None or seconds <= 0:
        return None
    return round(max(0.0, min(100.0, (now - since) / (seconds * 1e6) * 100.0)), 1)


def note_timeout(
    argv: Sequence[str], duration: float, cpu_s: Optional[float], state: Optional[str], pressure: Optional[float]
) -> None:
    """Remember a command killed for its deadline in :data:`TIMED_OUT`."""
    TIMED_OUT.append(
        {"argv": list(argv), "duration": duration, "cpu_s": cpu_s, "state": state, "cpu_pressure": pressure}
    )
    del TIMED_OUT[:-16]


def background(pid: int) -> None:
    """Mark a child of :data:`RUNNING` as started ahead (:meth:`npudoctor.host.Host.start`):
    nobody waits on it until :func:`foreground`."""
    with SPAWN_LOCK:
        _BACKGROUND.add(pid)


def foreground(pid: int) -> None:
    """A started child is now waited on (or ended): :func:`running_commands` lists it."""
    with SPAWN_LOCK:
        _BACKGROUND.discard(pid)


def running_commands(pressure_since: Optional[int], window: float) -> List[Dict[str, object]]:
    """The commands :meth:`npudoctor.host.Host.run` is running and waiting on now (not one
    started ahead that nobody waits on yet, :func:`background`: a verdict cut short while
    the file probes ran is not that command's fault), with the evidence of
    :data:`TIMED_OUT` (``duration``: seconds since each started; ``cpu_pressure`` over the
    last ``window`` seconds from the :func:`cpu_pressure_total` sample ``pressure_since``)."""
    out: List[Dict[str, object]] = []
    pressure = cpu_pressure_share(pressure_since, window)
    hz = os.sysconf("SC_CLK_TCK")
    boot = getattr(time, "CLOCK_BOOTTIME", None)
    with SPAWN_LOCK:
        waited = sorted(RUNNING - _BACKGROUND)
    for pid in waited:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:  # procfs: our own child
                argv = [a.decode("utf-8", "replace") for a in fh.read(4096).split(b"\0") if a]
        except OSError:
            continue
        born = starttime(pid)
        age = time.clock_gettime(boot) - born / hz if born is not None and boot is not None else 0.0
        cpu_s, state = cpu_state(pid)
        out.append({"argv": argv, "duration": age, "cpu_s": cpu_s, "state": state, "cpu_pressure": pressure})
    return out


class Started(MutableRecord, eq=False):
    """A child that :meth:`npudoctor.host.Host.run` or ``start`` began: the result to fill,
    the process (``None`` once collected), when it began (monotonic seconds), its start
    time in clock ticks (the orphans born since are its own), the CPU pressure counter then
    (:func:`cpu_pressure_total`) and the npu-smi lock it holds (``None``: none)."""

    result: CommandResult
    proc: Optional[subprocess.Popen[bytes]]
    began: float
    born: Optional[int]
    pressure: Optional[int]
    lock: Optional[threading.Lock] = None

    @classmethod
    def done(cls, result: CommandResult) -> Started:
        """A child already collected: its :meth:`npudoctor.host.Host.run` returns ``result``."""
        return cls(result, None, 0.0, None, None)

    @property
    def pid(self) -> int:
        """The child's pid (``-1`` once collected)."""
        return self.proc.pid if self.proc is not None else -1


def runnable(exe: str, root: str, live: bool) -> bool:
    """Whether ``exe`` may be run: on a live host any path the caller named; with a
    ``--root``, only an absolute path that is not, and does not resolve to, a path inside
    ``root`` (nothing inside ``--root`` is executed)."""
    if "\0" in exe:
        return False
    if live:
        return True
    if not os.path.isabs(exe):
        return False
    roots = {root, os.path.realpath(root)}
    for path in (os.path.abspath(exe), os.path.realpath(exe)):
        if any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots):
            return False
    return True


def end_all() -> None:
    """SIGKILL the process group (and descendants) of every command still running
    (:data:`RUNNING`): on SIGTERM and at exit nothing npudoctor started outlives it.  Never
    raises."""
    # a signal handler may run while this thread holds SPAWN_LOCK: never wait on it long
    locked = SPAWN_LOCK.acquire(timeout=0.2)
    try:
        pids = sorted(RUNNING)
    finally:
        if locked:
            SPAWN_LOCK.release()
    # a command forked while the signal came (its Popen not yet returned, so not in RUNNING:
    # the child may already be running): every child of this process that leads a process
    # group of its own is one of the commands npudoctor started
    own_group = os.getpgrp()
    for child in _children(os.getpid()):
        with contextlib.suppress(OSError):
            if child not in pids and os.getpgid(child) == child != own_group:
                pids.append(child)
    for pid in pids:
        kill_tree(pid)
