"""Whether the facts of an area were actually looked at: the third state beside "problem"
and "no problem".

An area whose section is present may still be unchecked: the devices section of a run with
``--no-commands`` or without ``npu-smi`` on ``PATH`` holds no chip at all, so "no finding" says
nothing about the chips.  Reports, triage and node agents ask here instead of each deciding it.
"""

from __future__ import annotations

from collections import abc
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Dict, Iterable, Mapping, Optional

#: npu-smi causes under which nothing about the chips was learnt (``probes/devices.py``);
#: a hung, crashed or failing npu-smi is itself a finding of the devices area -- except a
#: timeout on a CPU-starved node (:func:`starved`), which says nothing about the chips.
_SMI_NOT_RUN = {"disabled", "not-installed", "permission", "cut-short"}

#: Seconds without an answer after which npu-smi is hung (DEV001).  ``npu-smi info``
#: answers in well under a second on a healthy node, and more slowly under load or while
#: another npu-smi holds the machine-wide DCMI lock; five seconds -- the default deadline
#: of one command in ``check`` -- leaves that room.  Stopped earlier (by a shorter budget,
#: as ``health``'s default, or a signal), npu-smi was not seen to hang but was cut short:
#: the devices area is unknown.
HANG_AFTER = 5.0

#: Percent of a command's run during which it could be starved of CPU -- the node's runnable
#: tasks waited for a CPU, or its cgroup was throttled by a CPU limit
#: (:func:`npudoctor.hostproc.cpu_pressure_total`)
#: (PSI "some", Documentation/accounting/psi.rst) from which a timeout is blamed on the
#: node being busy rather than on the command.  Measured on a 2-core box: idle 0-6 %,
#: four busy loops 90-100 %.
BUSY_PRESSURE = 30.0


#: Share of its run a command must have spent on a CPU to count as working: a sleeping
#: command below it waited for something other than the CPU (a driver answer).
WORKING_SHARE = 0.02


def starved(
    pressure: Optional[float], state: Optional[str], cpu_s: Optional[float] = None, duration: Optional[float] = None
) -> bool:
    """True when a command killed for its deadline was starved of CPU rather than hung.

    ``state`` is its process state when killed, ``cpu_s`` the CPU seconds it had used,
    ``duration`` its run in seconds, ``pressure`` the percent of that run during which the
    node's runnable tasks waited for a CPU (PSI "some") or its cgroup was throttled.  Hung: blocked in the kernel
    (``"D"``), or asleep having used under :data:`WORKING_SHARE` of its run on a CPU (it
    was not waiting for a CPU but for an answer that never came), or -- on a node under
    :data:`BUSY_PRESSURE` -- whatever it was doing.  Starved: otherwise on a node at or
    over :data:`BUSY_PRESSURE` (without PSI: still runnable, ``"R"``).  For npu-smi, hung
    is a device or driver failure; starved says nothing about the chips."""
    if state == "D":
        return False
    if state == "S" and cpu_s is not None and duration and cpu_s / duration < WORKING_SHARE:
        return False
    if pressure is not None:
        return pressure >= BUSY_PRESSURE
    return state == "R"


def _timeout_on_busy_node(smi: Mapping[str, Any]) -> Optional[str]:
    if smi.get("cause") not in ("hung", "cut-short"):
        return None
    commands = smi.get("commands")
    first = commands[0] if isinstance(commands, list) and commands and isinstance(commands[0], abc.Mapping) else None
    if first is None or first.get("timed_out") is not True:
        return None
    pressure = first.get("cpu_pressure")
    pressure = float(pressure) if isinstance(pressure, (int, float)) and not isinstance(pressure, bool) else None
    state = first.get("state") if isinstance(first.get("state"), str) else None
    cpu_s, duration = first.get("cpu_s"), first.get("duration")
    cpu = float(cpu_s) if isinstance(cpu_s, (int, float)) and not isinstance(cpu_s, bool) else None
    run = float(duration) if isinstance(duration, (int, float)) and not isinstance(duration, bool) else None
    if not starved(pressure, state, cpu, run):
        return None
    why = f"CPU-starved {pressure:g} % of its run" if pressure is not None else "it was runnable"
    return f"npu-smi timed out on a busy node ({why})"


def _json_kind(value: Any) -> str:
    """``value``'s JSON type in words (``"a string"``, ``"null"``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return "a string" if isinstance(value, str) else "a list" if isinstance(value, list) else "not JSON"


def not_checked(facts: Mapping[str, Any], area: str) -> Optional[str]:
    """Why the rules of ``area`` could not judge it on ``facts`` (a snapshot's ``facts``
    object), in words for people; ``None`` when they could.  Never raises on malformed
    facts (a malformed section counts as not checked)."""
    section = facts.get(area) if isinstance(facts, abc.Mapping) else None
    errors = facts.get("_errors") if isinstance(facts, abc.Mapping) else None
    if isinstance(errors, abc.Mapping) and isinstance(errors.get(area), str):
        return "its probe failed: " + (str(errors[area]).splitlines() or ["internal error"])[0][:200]
    if isinstance(facts, abc.Mapping) and area in facts and not isinstance(section, abc.Mapping):
        # present but not an object (a hand-edited or damaged snapshot): HOST005 names it
        return f"could not read its facts: the section is {_json_kind(section)}, not an object"
    if not isinstance(section, abc.Mapping):
        return "not probed"
    if area == "devices":
        smi = section.get("npu_smi")
        if not isinstance(smi, abc.Mapping):
            return "no npu-smi facts"
        cause = smi.get("cause")
        nodes_error = section.get("nodes_error")
        also = f"; {nodes_error}" if isinstance(nodes_error, str) and nodes_error else ""
        if smi.get("available") is not True and cause == "cut-short":
            busy = _timeout_on_busy_node(smi)
            if busy is not None:
                return busy + also
        if smi.get("available") is not True and isinstance(cause, str) and cause in _SMI_NOT_RUN:
            error = smi.get("error")
            return (str(error) if isinstance(error, str) and error else "npu-smi was not run") + also
        if smi.get("available") is not True and also:
            return also[2:]
        if smi.get("available") is not True:
            return _timeout_on_busy_node(smi)
    if area == "packages":
        skipped = section.get("skipped")
        if isinstance(skipped, str) and skipped:
            return skipped
    if area == "python":
        error = section.get("error")
        if isinstance(error, str) and error:
            return error
    return None


def unchecked(facts: Mapping[str, Any], areas: Optional[Iterable[str]] = None) -> Dict[str, str]:
    """``{area: reason}`` for the areas that were probed but could not be judged, in
    report order.  ``areas``: the areas to ask about (default: every area whose section
    the snapshot holds or whose probe failed -- an area a mode does not probe, such as
    ``deep`` without ``--deep``, is a choice, not a gap).  Never raises."""
    from npudoctor.findings import AREAS

    if not isinstance(facts, abc.Mapping):
        return {}
    errors = facts.get("_errors")
    failed = set(errors) if isinstance(errors, abc.Mapping) else set()
    wanted = set(areas) if areas is not None else {a for a in AREAS if a in facts or a in failed}
    out: Dict[str, str] = {}
    for area in AREAS:
        if area in wanted:
            reason = not_checked(facts, area)
            if reason is not None:
                out[area] = reason
    return out


def absent(facts: Mapping[str, Any], named_python: Optional[str] = None) -> Dict[str, str]:
    """``{area: reason}`` for the areas of :func:`unchecked` that had nothing to judge on
    this machine by design, not for want of looking: a root holding no Python environment
    at all, where none was named (``--python``, ``named_python``), leaves ``python`` and
    ``packages`` empty -- a node whose workloads bring their Python in container images.
    Node agents judge such a node on what it has (driver, devices, CANN) instead of
    answering "unknown" for ever.  A named interpreter that could not be inspected, a probe
    that failed and a live run (which always has an interpreter) are never absent.  Never
    raises."""
    if not isinstance(facts, abc.Mapping):
        return {}
    errors = facts.get("_errors")
    failed = set(errors) if isinstance(errors, abc.Mapping) else set()
    python = facts.get("python")
    no_python = (
        not named_python
        and "python" not in failed
        and isinstance(python, abc.Mapping)
        and python.get("source") == "root"
        and bool(python.get("error"))
        and python.get("environments") == []
    )
    if not no_python:
        return {}
    gaps = unchecked(facts, ("python", "packages"))
    return {area: reason for area, reason in gaps.items() if area not in failed}
