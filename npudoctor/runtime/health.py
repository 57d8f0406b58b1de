"""``npudoctor health``: the container health check.

The one quick evaluation (:func:`npudoctor.runtime.quick.evaluate_quick`: the probes
marked ``QUICK`` and every rule) under the one deadline mechanism
(:mod:`npudoctor.runtime.deadline`).

Contract (Docker ``HEALTHCHECK`` and Kubernetes exec probes):

* exit status **0** healthy (or unknown), **1** unhealthy (``ExitStatus.OK``/``PROBLEMS``)
  -- nothing else, ever: a bad option or an internal error is 1 with a reason (Docker
  reserves 2); SIGTERM is answered like a blown budget, never 143;
* one short line per problem on stdout (Docker keeps the tail of the output), or a
  JSON document with ``--json`` (always with the keys of :data:`JSON_KEYS`, whatever ended
  the run); a root cause comes first and each follow-on symptom folded under it (as
  ``check`` folds them) after it, ending in ``(follows from CODE)``;
* an area that was probed but could not be judged (no ``npu-smi``, ``--no-commands``, a
  timeout on a busy node) is *not checked*: the answer stays healthy and names it
  (``healthy: ...; not checked: devices (...)``), unless ``--require-checked AREA`` makes
  it mandatory (then unhealthy);
* the environment judged (``environment`` in ``--json``, ``--verbose`` on stderr): a
  named workload's (``--pid``, ``--env-file``, ``--exec-env``), else chosen by where the
  process runs -- its own in a container, pod or build step, or under systemd/Slurm/Ray;
  on a host node the node's, what its CANN ``set_env.sh`` would set
  (:mod:`npudoctor.runtime.workload_env`);
* ``--timeout SECONDS`` is one total budget measured from the start of the process
  (interpreter start-up included; default 0.9 s, inside Kubernetes' 1 s default probe
  timeout).  When it runs out the check answers with what it has: the areas that
  finished keep their findings (an error found before is still unhealthy), what was
  unfinished is **unknown** (``unknown: devices (...)``, exit 0) -- a busy node is not a sick one --
  except an ``npu-smi`` that hung on a node that was not starved of CPU (its process
  blocked or asleep, see :func:`npudoctor.facts.coverage.starved`): that is a device
  failure (DEV001, exit 1).  Documented policy: ``--fallback-ttl SECONDS`` repeats the
  last finished verdict instead, when it is younger than that (an unhealthy node stays
  unhealthy while it is too busy to be checked again);
* ``--cache-ttl SECONDS`` reuses a result younger than that and says how old it is;
* every run judges anew: nothing is reused unless the operator asks for it with
  ``--cache-ttl`` or ``--fallback-ttl``;
* ``--from FILE`` judges a snapshot written by ``npudoctor collect`` instead of probing.

This module is reached before Typer or rich are imported (:mod:`npudoctor.entry`
dispatches ``health`` here): a check that runs every few seconds pays only for what it
judges.  Its options are read by :mod:`npudoctor.runtime.healthopts`.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import TYPE_CHECKING

from npudoctor.runtime.deadline import Budget, process_started, run_within
from npudoctor.runtime.healthcache import cache_path as _cache_path
from npudoctor.runtime.healthcache import read_cache as _read_cache
from npudoctor.runtime.healthopts import HealthOptions, OptionError, options_from_values, parse_values
from npudoctor.runtime.printable import follows, printable
from npudoctor.session.request import ExitStatus

if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Sequence, Tuple

    from npudoctor.runtime.quick import Progress


def _note(note: Optional[str]) -> None:
    """A note about the run (a refused cache, an ignore that silences nothing) on stderr:
    stdout holds only the verdict."""
    if note:
        print(f"npudoctor health: {note}", file=sys.stderr)


def evaluate_health(options: HealthOptions, budget: Budget, progress: Optional[Progress] = None) -> Dict[str, Any]:
    """Run the quick evaluation; return the result document ``{"status": "healthy" |
    "unhealthy", "problems": [line], "findings": [finding dict], "chips": int or None,
    "duration_s": float, "summary": str, "not_checked": {area: reason}}``, plus
    ``"python_choice"`` (which interpreter was judged and how to point it elsewhere) when
    no ``--python`` was given and npudoctor runs from a venv of its own (pipx) or judged
    the active venv/conda environment instead of its own, and ``"ignore_notes"`` (what to
    say of the ignores: a config file not used, an ``--ignore`` or ``.npudoctor.toml`` entry
    that names no finding) when there is one.

    ``budget.step`` names the step in progress; ``progress`` (when given) records the
    sections finished, for :func:`timed_out_verdict`.  With ``options.exec_env`` the
    environment judged is the one ``npudoctor exec`` would run the workload in.  Raises
    ``ValueError`` for a bad option found while working (the caller reports it as a bad
    option); anything else propagates.
    """
    from npudoctor.runtime.quick import QuickRequest, QuickResult, areas, evaluate_quick
    from npudoctor.runtime.workload_env import judged_environment

    budget.step = "choosing the environment to judge"
    environ, judged = judged_environment(options.machine, options.pid, options.exec_env)
    request = QuickRequest(
        machine=options.machine,
        environ=environ,
        only=frozenset(areas(options.only)),
        skip=frozenset(areas(options.skip)),
        require=options.require,
        ignore=options.ignore,
        matrix=options.matrix,
        pid=options.pid,
        progress=progress,
    )
    result: QuickResult = evaluate_quick(request, budget)
    problems = problem_lines(result.failing(options.fail_on))
    required = set(areas(options.require_checked))
    problems += [
        printable(f"{area} not checked ({reason}) and --require-checked {area}")
        for area, reason in result.unchecked.items()
        if area in required
    ]
    doc: Dict[str, Any] = {
        "status": "unhealthy" if problems else "healthy",
        "problems": problems,
        "findings": [f.to_dict() for f in result.findings],
        "chips": result.chips,
        "duration_s": round(budget.elapsed(), 3),
        "summary": result.summary,
        "not_checked": dict(result.unchecked),
        "environment": judged,
        "ignored": result.ignored,
    }
    if result.python_choice:
        doc["python_choice"] = result.python_choice
    if result.ignore_notes:
        doc["ignore_notes"] = list(result.ignore_notes)
    return doc


def problem_lines(failing: Sequence[Any]) -> List[str]:
    """The problem lines of the ``failing`` findings: each root cause first, its follow-on
    symptoms after it ending in ``(follows from CODE)``
    (:func:`npudoctor.report.build.causes_first`, as ``check`` folds them)."""
    if not failing:  # a healthy run imports nothing more
        return []
    from npudoctor.report.build import causes_first

    return [follows(f"{f.code} {f.title}", cause) for f, cause in causes_first(failing)]


def _evaluate(options: HealthOptions, budget: Budget, watch: _Watch) -> Dict[str, Any]:
    """:func:`evaluate_health`, with ``watch.progress`` set first (what a cut-short run
    had finished)."""
    from npudoctor.runtime.quick import Progress

    watch.progress = Progress()
    return evaluate_health(options, budget, watch.progress)


#: The keys of every ``--json`` document, first and in this order, with the value printed
#: when a run did not tell it (a bad option, a budget that ran out, a stored verdict): one
#: shape for scripts.  ``chips`` ``None``: not counted; ``finished`` ``None``: the run was not
#: cut short (else the areas finished before the cut, ``unknown`` those left unknown);
#: ``duration_s`` ``None``: not measured.  Other keys follow when there is something to say
#: (``python_choice``, ``ignore_notes``, ``cache_age_s``, ``budget``).
JSON_KEYS: Dict[str, Any] = {
    "status": None,
    "problems": [],
    "findings": [],
    "chips": None,
    "summary": "",
    "not_checked": {},
    "unknown": {},
    "finished": None,
    "environment": None,
    "ignored": [],
    "duration_s": None,
}


def _unhealthy(line: str, **extra: Any) -> Dict[str, Any]:
    doc: Dict[str, Any] = {"status": "unhealthy", "problems": [printable(line)], "findings": []}
    doc.update(extra)
    return doc


def _emit(doc: Dict[str, Any], as_json: bool) -> ExitStatus:
    """Print the verdict; the one place that decides health's exit status (``"unknown"``
    is exit 0: what could not be finished never makes the answer unhealthy by itself)."""
    from npudoctor.config import ignored_line

    healthy = doc["status"] in ("healthy", "unknown")
    if as_json:
        from npudoctor.parsers.jsontext import utf8

        print(utf8(json.dumps({**JSON_KEYS, **doc}, ensure_ascii=False)))
    else:
        age = f" (cached result, {doc['cache_age_s']} s old)" if "cache_age_s" in doc else ""
        if doc["status"] == "unknown":
            for area, reason in doc.get("unknown", {}).items():
                print(printable(f"unknown: {area} ({reason})"))
        elif healthy:
            summary = f": {doc['summary']}" if doc.get("summary") else ""
            gaps = "; ".join(f"{area}: {reason}" for area, reason in (doc.get("not_checked") or {}).items())
            said = ignored_line(doc.get("ignored") or [])
            print(
                printable(
                    f"healthy{summary}{'; not checked: ' + gaps if gaps else ''}{'; ' + said if said else ''}{age}"
                )
            )
        else:
            for line in doc["problems"]:
                print(f"unhealthy: {line}{age}")
            if doc.get("ignored"):
                print(printable(ignored_line(doc["ignored"])))
    sys.stdout.flush()
    return ExitStatus.OK if healthy else ExitStatus.PROBLEMS


def main(argv: Sequence[str]) -> ExitStatus:
    """Run the health check with ``argv`` (without the ``health`` word); returns
    ``ExitStatus.OK`` or ``ExitStatus.PROBLEMS``.

    Any unexpected failure is "unhealthy" with a reason too (never a traceback, never
    another status).  A blown budget leaves the process (see :func:`run_health`).
    """
    as_json = "--json" in argv
    try:
        return run_health(options_from_values(parse_values(argv)))
    except OptionError as exc:  # as --json asked: a probe script parses every answer
        return _emit(_unhealthy(f"bad health-check option: {exc}"), as_json)
    except SystemExit as exc:  # argparse's own --help, should a caller ask for it
        return ExitStatus.OK if exc.code in (0, None) else ExitStatus.PROBLEMS
    except BaseException as exc:  # KeyboardInterrupt, BrokenPipeError, a bug
        try:
            return _emit(_unhealthy(f"npudoctor failed: {type(exc).__name__}: {exc}"), as_json)
        except Exception:
            return ExitStatus.PROBLEMS


def run_health(options: HealthOptions) -> ExitStatus:
    """The health check with typed ``options``; prints the verdict, returns its status.

    The work runs under a :class:`~npudoctor.runtime.deadline.Budget` of
    ``options.timeout`` counted from the start of the process
    (:func:`~npudoctor.runtime.deadline.process_started`); if it does not finish in time,
    the commands still running are killed and the process leaves with the verdict of
    :func:`timed_out_verdict` (``os._exit``, so a wedged probe cannot hold it).  SIGTERM
    is answered the same way (:func:`_on_sigterm`).
    """
    as_json = options.machine.json
    problem = options.problem()
    if problem:
        return _emit(_unhealthy(f"bad health-check option: {problem}"), as_json)
    cache = _cache_path(options) if options.cache_ttl > 0 or options.fallback_ttl > 0 else None
    if cache and options.cache_ttl > 0:
        cached, note = _read_cache(cache, options.cache_ttl)
        _note(note)
        if cached is not None:
            return _emit(cached, as_json)
    from npudoctor.hostproc import cpu_pressure_total

    budget = Budget(options.timeout, started=process_started())
    watch = _Watch(options, budget, cache, cpu_pressure_total(), time.monotonic())
    _on_sigterm(watch)
    outcome = run_within(
        budget,
        lambda: _evaluate(options, budget, watch),
        name="npudoctor-health",
        evidence=watch.evidence,
    )
    if outcome.timed_out:
        status = _emit(timed_out_verdict(watch, outcome.evidence or [], "ran out"), as_json)
        os._exit(status)
    exc = outcome.error
    if exc is not None or outcome.value is None:
        # ValueError: a bad option value found while working (--root, --user, --env-file, --from)
        reason = (
            f"bad health-check option: {exc}"
            if isinstance(exc, ValueError)
            else f"npudoctor failed: {type(exc).__name__}: {exc}"
        )
        return _emit(_unhealthy(reason), as_json)
    doc = outcome.value
    for note in doc.get("ignore_notes", ()):
        _note(note)
    judged = doc.get("environment") or {}
    if options.verbose and judged:
        _note(printable(f"judged the {judged.get('judged')} environment: {judged.get('because')}", limit=400))
    if cache:
        try:
            from npudoctor.redact import conceal
            from npudoctor.snapshot import atomic_write

            atomic_write(cache, json.dumps(conceal(doc)))  # a file npudoctor writes: no secret either
        except OSError:
            pass
    return _emit(doc, as_json)


class _Watch:
    """What the answer of a cut-short check needs: the options, the budget, the cache
    path, and a PSI sample (:func:`npudoctor.hostproc.cpu_pressure_total`) taken at
    ``sampled`` (a :func:`time.monotonic` instant); ``progress`` (the sections finished)
    and ``cut`` (them and the step, frozen when the budget ran out) are set later."""

    def __init__(
        self, options: HealthOptions, budget: Budget, cache: Optional[str], pressure: Optional[int], sampled: float
    ) -> None:
        self.options = options
        self.budget = budget
        self.cache = cache
        self.pressure = pressure
        self.sampled = sampled
        self.progress: Optional[Progress] = None
        self.cut: Optional[Tuple[Dict[str, Any], str]] = None

    def evidence(self) -> Any:
        """The commands running now and those killed for their deadline, with their state
        (:func:`npudoctor.hostproc.running_commands`, :data:`npudoctor.hostproc.TIMED_OUT`).
        Also freezes ``cut``: the sections finished and the step, as they are now, before
        the commands are killed (the probe thread goes on with a killed npu-smi)."""
        if self.progress is not None:
            self.cut = (self.progress.freeze(), self.budget.step)
        from npudoctor.hostproc import TIMED_OUT, running_commands

        return list(TIMED_OUT) + running_commands(self.pressure, time.monotonic() - self.sampled)

    def pressure_share(self) -> Optional[float]:
        from npudoctor.hostproc import cpu_pressure_share

        return cpu_pressure_share(self.pressure, time.monotonic() - self.sampled)


def _hung_npu_smi(evidence: Sequence[Any]) -> Optional[str]:
    """The line of an npu-smi that hung (not starved: see
    :func:`npudoctor.facts.coverage.starved`) among ``evidence``, or ``None``."""
    from npudoctor.facts.coverage import HANG_AFTER, starved

    for cmd in evidence:
        if not isinstance(cmd, dict) or not cmd.get("argv"):
            continue
        argv = [str(a) for a in cmd["argv"]]
        duration = float(cmd.get("duration") or 0.0)
        # /proc/PID/cmdline of a script names its interpreter first ("/bin/sh .../npu-smi info")
        names = [os.path.basename(a) for a in argv[:2]]
        if "npu-smi" not in names or duration < HANG_AFTER:  # cut short, not seen to hang
            continue
        argv = argv[names.index("npu-smi") :]
        cpu_s, state, pressure = cmd.get("cpu_s"), cmd.get("state"), cmd.get("cpu_pressure")
        if starved(pressure, state, cpu_s, duration):
            continue
        how = ", ".join(
            bit
            for bit in (
                f"state {state}" if state else "",
                f"{cpu_s:g} s of CPU used" if cpu_s is not None else "",
                f"CPU pressure {pressure:g} %" if pressure is not None else "",
            )
            if bit
        )
        name = " ".join(["npu-smi"] + argv[1:])
        return f"DEV001 `{name}` did not answer within {duration:.1f} s on a node not starved of CPU ({how})"
    return None


def timed_out_verdict(watch: _Watch, evidence: Sequence[Any], how: str) -> Dict[str, Any]:
    """The answer when the budget ``ran out`` (``how``) or SIGTERM came before the work
    finished: unhealthy for an npu-smi that hung (:func:`_hung_npu_smi`); else unhealthy
    for a failing finding of an area that had finished
    (:func:`npudoctor.runtime.quick.finished_findings`: what was judged before the budget
    ran out stands; nothing is judged at the deadline), the unfinished areas named ``unknown``; else the last finished verdict
    younger than ``--fallback-ttl`` (the documented policy); else ``{"status": "unknown",
    "unknown": {area: reason}, "findings": [of the finished areas]}`` -- exit 0."""
    from npudoctor.runtime.quick import LOAD_GRACE, finished_findings, unfinished

    budget, options = watch.budget, watch.options
    hung = _hung_npu_smi(evidence)
    if hung:
        return _unhealthy(hung, duration_s=round(budget.elapsed(), 3))
    facts, step = watch.cut if watch.cut is not None else (None, budget.step)
    gaps = unfinished(budget, how, watch.pressure_share(), step)
    # the verdict of the areas judged beside the probes: nothing is judged again here (a
    # budget that ran out has no time left); a SIGTERM before the deadline may wait for
    # the judging under way, never past the deadline
    wait = min(LOAD_GRACE, budget.remaining()) if facts is not None else 0.0
    findings, done = finished_findings(watch.progress, options.ignore, facts, wait)
    levels = ("error", "warning") if options.fail_on == "warning" else ("error",)
    failing = problem_lines([f for f in findings if f.severity in levels])
    if failing:
        return {
            "status": "unhealthy",
            "problems": failing,
            "findings": [f.to_dict() for f in findings],
            "finished": done,
            "unknown": gaps,
            "duration_s": round(budget.elapsed(), 3),
        }
    if watch.cache and options.fallback_ttl > 0:
        cached, note = _read_cache(watch.cache, options.fallback_ttl)
        _note(note)
        if cached is not None:
            cached["budget"] = f"{how} while {step}: the last finished verdict stands"
            return cached
    return {
        "status": "unknown",
        "problems": [],
        "findings": [f.to_dict() for f in findings],
        "finished": done,
        "unknown": gaps,
        "duration_s": round(budget.elapsed(), 3),
    }


def _on_sigterm(watch: _Watch) -> None:
    """Answer SIGTERM (an orchestrator giving up on the probe) in health's contract: kill
    the commands started, print the verdict of :func:`timed_out_verdict` and leave with
    0 or 1, never 143.  Only from the main thread (signal handlers can be set only there)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return

    def handler(signum: int, frame: Any) -> None:
        from npudoctor.hostproc import RUNNING, kill_tree
        from npudoctor.runtime.deadline import kill_children

        evidence = watch.evidence()
        for pid in list(RUNNING):
            kill_tree(pid)  # descendants that left the group with setsid() too
        kill_children()
        status = _emit(timed_out_verdict(watch, evidence, "was cut by SIGTERM"), watch.options.machine.json)
        os._exit(status)

    signal.signal(signal.SIGTERM, handler)
