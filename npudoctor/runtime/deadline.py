"""The one deadline mechanism of the runtime commands (``health``, ``exec``, ``npd``).

A :class:`Budget` is a total number of seconds from a start instant, split into the share
the probes may use (:meth:`Budget.probe_deadline`), the longest one command may take
(:meth:`Budget.command_timeout`) and the rest (rules, the answer).  :func:`run_within` runs
the work in a daemon thread and gives up on it when the budget is spent: the commands the
work started are killed (:func:`kill_children`) and the caller gets an :class:`Outcome`
saying so, with the step that was running (:attr:`Budget.step`).

:data:`OVER_BUDGET_CODE` and :meth:`Budget.over_budget_line` are the one text of a blown
budget (the code is registered with its explanation in :mod:`npudoctor.rules.health`).

This module imports neither Typer nor rich, nor any other npudoctor module.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Callable, Dict, Optional, Set

#: Finding code of a blown budget (see ``npudoctor explain HOST090``).
OVER_BUDGET_CODE = "HOST090"
#: Share of the budget after which probes give up (the rest is for rules and the answer).
PROBE_SHARE = 0.85
#: Share of the budget one external command may take: all the probes' share.  ``npu-smi``
#: is the one slow command of a real node and the rest waits for it anyway (the file
#: probes run while it runs, the rules of the finished areas are judged beside it), so
#: cutting it earlier than the probes' deadline would only turn a slow answer into an
#: unknown one.
COMMAND_SHARE = PROBE_SHARE
#: Shortest command timeout handed to probes, seconds.
MIN_COMMAND_TIMEOUT = 0.1
#: Longest wait of :func:`run_within` between two looks at pending signal handlers, seconds.
JOIN_SLICE = 0.05


def process_started() -> Optional[float]:
    """The :func:`time.monotonic` instant this process started, or ``None`` when it
    cannot be told (not Linux, no ``/proc``, no ``CLOCK_BOOTTIME``).

    ``/proc/self/stat`` field 22 (``starttime``) is the start in clock ticks since boot
    (proc(5)); ``CLOCK_BOOTTIME`` is the time since boot including suspend, the clock
    ``starttime`` is counted on (Linux >= 2.6.39).  The age of the process is their
    difference, so interpreter start-up and imports count against a budget.  An age
    that is negative or over a day (a clock oddity) is not believed."""
    try:
        with open("/proc/self/stat", "rb") as fh:  # procfs of this process, not the judged machine
            tail = fh.read(4096).rsplit(b")", 1)[1].split()
        ticks = int(tail[19])
        hz = os.sysconf("SC_CLK_TCK")
        boot = getattr(time, "CLOCK_BOOTTIME", None)
        if boot is None or hz <= 0:
            return None
        age = time.clock_gettime(boot) - ticks / hz
    except (OSError, IndexError, ValueError, AttributeError):
        return None
    if not 0 <= age < 86400:
        return None
    return time.monotonic() - age


class Budget:
    """A hard total budget of ``seconds`` (> 0) counted from ``started`` (a
    :func:`time.monotonic` value; default: now).  ``step`` names what the work is doing,
    for the line of a blown budget; the work updates it (a plain attribute, written by one
    thread and read by another)."""

    def __init__(self, seconds: float, started: Optional[float] = None) -> None:
        self.seconds = float(seconds)
        self.started = time.monotonic() if started is None else float(started)
        self.step = "starting"

    def elapsed(self) -> float:
        """Seconds since the start."""
        return time.monotonic() - self.started

    def remaining(self) -> float:
        """Seconds left (never negative)."""
        return max(0.0, self.seconds - self.elapsed())

    def probe_deadline(self) -> float:
        """The :func:`time.monotonic` instant after which probes give up
        (:data:`PROBE_SHARE` of the budget)."""
        return self.started + self.seconds * PROBE_SHARE

    def command_timeout(self) -> float:
        """Seconds one external command may take (:data:`COMMAND_SHARE` of the budget,
        at least :data:`MIN_COMMAND_TIMEOUT`)."""
        return max(MIN_COMMAND_TIMEOUT, self.seconds * COMMAND_SHARE)

    def over_budget_line(self) -> str:
        """The one line of a blown budget: ``"HOST090 health check exceeded its 0.9 s
        budget while probing devices"``."""
        return f"{OVER_BUDGET_CODE} health check exceeded its {self.seconds:g} s budget while {self.step}"


class Outcome:
    """What :func:`run_within` got: ``value`` (what the work returned, ``None`` when it
    did not), ``error`` (the work raised: any exception, ``KeyboardInterrupt`` included),
    or ``timed_out`` (with ``evidence``)."""

    def __init__(
        self, value: Any = None, error: Optional[BaseException] = None, timed_out: bool = False, evidence: Any = None
    ) -> None:
        self.value = value
        self.error = error
        self.timed_out = timed_out
        self.evidence = evidence


def run_within(
    budget: Budget,
    work: Callable[[], Any],
    grace: float = 0.0,
    name: str = "npudoctor-runtime",
    evidence: Optional[Callable[[], Any]] = None,
) -> Outcome:
    """Run ``work()`` in a daemon thread for what is left of ``budget`` plus ``grace``
    seconds.  When it has not finished by then, ``evidence()`` (if given) is called and
    its value kept in the outcome (e.g. the state of the commands still running), the
    commands the work started are killed (:func:`kill_children`) and the outcome is
    ``timed_out`` (the thread is abandoned; the caller leaves the process or ignores it).
    Never raises (an ``evidence`` that raises leaves ``evidence`` ``None``)."""
    box: Dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # reported to the caller, never a traceback
            box["error"] = exc

    worker = threading.Thread(target=target, name=name, daemon=True)
    worker.start()
    until = time.monotonic() + budget.remaining() + max(0.0, grace)
    # short waits: a signal the kernel delivered to another thread (the work's) leaves its
    # Python handler pending until the main thread wakes; a long join would hold SIGTERM's
    # answer for the whole budget
    while worker.is_alive() and time.monotonic() < until:
        worker.join(min(JOIN_SLICE, max(0.0, until - time.monotonic())))
    if worker.is_alive():
        seen = None
        if evidence is not None:
            try:
                seen = evidence()
            except Exception:  # evidence is a bonus; the answer must still come
                seen = None
        kill_children()
        return Outcome(timed_out=True, evidence=seen)
    if "error" in box:
        return Outcome(error=box["error"])
    return Outcome(value=box.get("value"))


def kill_children() -> None:
    """SIGKILL the process group of every child of this process (commands run by
    :meth:`npudoctor.host.Host.run` lead their own session), so that leaving on a blown
    budget does not orphan a wedged ``npu-smi`` that ignores SIGTERM.  Children are read
    from ``/proc/self/task/<tid>/children`` (Linux >= 3.5); never raises."""
    pids: Set[int] = set()
    try:
        for tid in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{tid}/children", encoding="ascii") as fh:
                    pids.update(int(p) for p in fh.read().split())
            except (OSError, ValueError):
                continue
    except OSError:
        return
    for pid in pids:
        try:
            if os.getpgid(pid) == pid:
                os.killpg(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
        except OSError:
            continue
