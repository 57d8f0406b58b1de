"""``npudoctor health``: the container health check.

The one quick evaluation (:func:`npudoctor.runtime.quick.evaluate_quick`: the probes
marked ``QUICK`` and every rule) under the one deadline mechanism
(:mod:`npudoctor.runtime.deadline`).

Contract (Docker ``HEALTHCHECK`` and Kubernetes exec probes):

* exit status **0** healthy (or unknown), **1** unhealthy (``ExitStatus.OK``/``PROBLEMS``)
  -- nothing else, ever: a bad option or an internal error is 1 with a reason (Docker
  reserves 2); SIGTERM is answered like a blown budget, never 143;
* one short line per problem on stdout (Docker keeps the tail of the output), or a
  JSON document with ``--json``;
* an area that was probed but could not be judged (no ``npu-smi``, ``--no-commands``, a
  timeout on a busy node) is *not checked*: the answer stays healthy and names it
  (``healthy: ...; not checked: devices (...)``), unless ``--require-checked AREA`` makes
  it mandatory (then unhealthy);
* the environment judged (``environment`` in ``--json``, ``--verbose`` on stderr): a
  named workload's (``--pid``, ``--env-file``, ``--exec-env``), else chosen by where the
  process runs -- its own in a container, pod or build step, or under systemd/Slurm/Ray;
  on a host node the node's, what its CANN ``set_env.sh`` would set
  (:mod:`npudoctor.runtime.judged`);
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
* a verdict whose inputs are all unchanged is reused: the run replays what the last full
  run read (files, listings, ``npu-smi`` output, ...) and prints that verdict when all of
  it is the same (:mod:`npudoctor.runtime.memo`; ``inputs_unchanged_s`` in ``--json``);
  ``--fresh`` judges everything anew;
* ``--from FILE`` judges a snapshot written by ``npudoctor collect`` instead of probing.

This module is the fast path: :mod:`npudoctor.entry` dispatches ``health`` here before
Typer or rich are imported, and a run that reuses the last verdict imports neither
argparse (:func:`parse_plain` reads the usual command lines, from the one option table
:data:`OPTIONS`), ``dataclasses`` nor ``typing`` (``tests/test_health_options.py``).
"""

from __future__ import annotations

import json
import math
import os
import sys
import time

from npudoctor.cli.request import ExitStatus, MachineRequest
from npudoctor.plainrecord import FrozenRecord
from npudoctor.runtime.deadline import Budget, process_started, run_within
from npudoctor.runtime.healthcache import cache_path as _cache_path
from npudoctor.runtime.healthcache import read_cache as _read_cache
from npudoctor.runtime.lines import printable

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up, issue 18)
if TYPE_CHECKING:
    import argparse
    from typing import Any, Callable, Dict, NoReturn, Optional, Sequence, Tuple

    from npudoctor.runtime.quick import Progress

DEFAULT_TIMEOUT = 0.9
_FAIL_ON = ("error", "warning")

#: health's options, the one definition of them: ``(flags, dest, kind, type, default,
#: metavar, help)``; ``kind`` is ``"value"`` (one argument, converted by ``type``),
#: ``"append"`` (repeatable), ``"flag"`` (``store_true``) or ``"accepted"`` (a flag that
#: changes nothing).  :func:`build_parser` makes the argparse parser of it (``--help``,
#: usage errors) and :func:`parse_plain` parses the usual command lines without argparse.
OPTIONS: Tuple[Tuple[Tuple[str, ...], str, str, Optional[Callable[[str], Any]], Any, Optional[str], str], ...] = (
    (("--root",), "root", "value", str, None, "DIR", "inspect DIR as if it were /"),
    (("--python",), "python", "value", str, None, "PATH", "inspect this interpreter's packages"),
    (("--user",), "user", "value", str, None, "NAME|UID", "judge device access for this account"),
    (
        ("--env-file",),
        "env_file",
        "value",
        str,
        None,
        "FILE",
        "diagnose the environment in FILE (NAME=value lines) instead of this one",
    ),
    (
        ("--pid",),
        "pid",
        "value",
        int,
        None,
        "PID",
        "diagnose the environment of this workload process (/proc/PID/environ) instead of this one",
    ),
    (("--from",), "from_file", "value", str, None, "FILE", "judge a snapshot written by `npudoctor collect`"),
    (("--json",), "json", "flag", None, False, None, "print a JSON document"),
    (("--color", "--no-color"), "color", "accepted", None, None, None, "accepted (the output is plain)"),
    (("--timeout",), "timeout", "value", float, DEFAULT_TIMEOUT, "SECONDS", "hard total budget (default 0.9)"),
    (("--require",), "require", "value", int, None, "N", "at least N NPU chips must be visible"),
    (
        ("--require-checked",),
        "require_checked",
        "append",
        str,
        None,
        "AREA",
        "an area that must be checked: not checked (no npu-smi, --no-commands, a timeout) is unhealthy (repeatable)",
    ),
    (("--skip",), "skip", "append", str, None, "AREA", "leave out an area (repeatable)"),
    (("--only",), "only", "append", str, None, "AREA", "check only these areas"),
    (("--fail-on",), "fail_on", "value", str, "error", None, "severity that makes it unhealthy"),
    (("--ignore",), "ignore", "append", str, None, "CODE", "silence a finding code"),
    (("--matrix",), "matrix", "value", str, None, "FILE", "use this matrix file"),
    (("--no-commands",), "no_commands", "flag", None, False, None, "run no external command (npu-smi)"),
    (
        ("--exec-env",),
        "exec_env",
        "flag",
        None,
        False,
        None,
        "judge the environment `npudoctor exec` gives the workload (the CANN set_env.sh variables "
        "applied), not this process's: use it when the container's entrypoint is `npudoctor exec`, and "
        "from a systemd timer's service, whose own environment is the agent's (on a host node outside "
        "systemd/Slurm, e.g. cron or a shell, that is the default)",
    ),
    (("--cache-ttl",), "cache_ttl", "value", float, 0.0, "SECONDS", "reuse a result younger than this"),
    (
        ("--fresh",),
        "fresh",
        "flag",
        None,
        False,
        None,
        "judge everything anew (by default the last verdict is reused when every file, listing and "
        "command output it was made from is unchanged)",
    ),
    (
        ("-v", "--verbose"),
        "verbose",
        "flag",
        None,
        False,
        None,
        "say on stderr which environment was judged and why (by default: in a container, pod or "
        "systemd/Slurm job this process's; on a host node what its CANN set_env.sh would set)",
    ),
    (
        ("--fallback-ttl",),
        "fallback_ttl",
        "value",
        float,
        0.0,
        "SECONDS",
        "when the budget runs out, repeat the last finished verdict if younger than this (default 0: answer unknown)",
    ),
)
#: The choices of the options that have them.
_CHOICES = {"fail_on": _FAIL_ON}


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of :data:`OPTIONS`: ``--help``, and the usage errors of a
    command line :func:`parse_plain` leaves to it (reported as *unhealthy*, exit 1)."""
    import argparse

    class _Parser(argparse.ArgumentParser):
        """argparse that reports usage problems as *unhealthy* (exit 1), never exit 2."""

        def error(self, message: str) -> NoReturn:
            print(f"unhealthy: bad health-check option: {message}")
            sys.exit(ExitStatus.PROBLEMS)

    parser = _Parser(
        prog="npudoctor health",
        description=(
            "Fast container health check: devices visible and openable, driver files mounted, "
            "chips healthy, CANN environment applied, torch/torch_npu/CANN paired. "
            "Exit codes: 0 healthy, 1 unhealthy (also for bad options, internal errors and timeouts)."
        ),
    )
    for flags, dest, kind, kind_type, default, metavar, help_text in OPTIONS:
        if kind == "flag":
            parser.add_argument(*flags, dest=dest, action="store_true", help=help_text)
        elif kind == "accepted":
            parser.add_argument(*flags, dest=dest, action="store_const", const=None, help=help_text)
        elif kind == "append":
            parser.add_argument(*flags, dest=dest, action="append", default=[], metavar=metavar, help=help_text)
        elif dest in _CHOICES:
            parser.add_argument(*flags, dest=dest, choices=_CHOICES[dest], default=default, help=help_text)
        else:
            assert kind_type is not None  # a "value" row names its type
            parser.add_argument(*flags, dest=dest, type=kind_type, default=default, metavar=metavar, help=help_text)
    return parser


#: Each option string of :data:`OPTIONS` -> its row.
_BY_FLAG = {flag: row for row in OPTIONS for flag in row[0]}


def parse_plain(argv: Sequence[str]) -> Optional[Dict[str, Any]]:
    """The values (dest -> value, as ``vars()`` of :func:`build_parser`'s namespace) of a
    command line made only of :data:`OPTIONS`' exact option strings (``--opt value`` or
    ``--opt=value``), without importing argparse (~5 ms with building the parser, on every
    run of a check that runs every few seconds).  ``None`` for anything else -- ``--help``,
    an abbreviation, a positional argument, a value that looks like an option or does not
    convert, a choice not offered -- which argparse then parses and reports as it always
    did.  ``tests/test_health_options.py`` compares both on many command lines."""
    values: Dict[str, Any] = {}
    for _flags, dest, kind, _type, default, _metavar, _help in OPTIONS:
        values[dest] = [] if kind == "append" else default
    i = 0
    while i < len(argv):
        arg = argv[i]
        inline: Optional[str] = None
        if arg.startswith("--") and "=" in arg:
            arg, inline = arg.split("=", 1)
        row = _BY_FLAG.get(arg)
        if row is None:
            return None
        _flags, dest, kind, kind_type, _default, _metavar, _help = row
        if kind in ("flag", "accepted"):
            if inline is not None:
                return None
            values[dest] = True if kind == "flag" else None
            i += 1
            continue
        if inline is None:
            if i + 1 >= len(argv) or argv[i + 1].startswith("-"):
                return None
            inline = argv[i + 1]
            i += 1
        try:
            value = kind_type(inline) if kind_type is not None else inline
        except (TypeError, ValueError, OverflowError):
            return None
        if dest in _CHOICES and value not in _CHOICES[dest]:
            return None
        if kind == "append":
            values[dest].append(value)
        else:
            values[dest] = value
        i += 1
    return values


def parse_values(argv: Sequence[str]) -> Dict[str, Any]:
    """The option values of ``argv``: :func:`parse_plain`, else argparse (which exits with
    ``SystemExit`` for ``--help`` and usage errors, after printing them)."""
    values = parse_plain(argv)
    if values is None:
        values = vars(build_parser().parse_args(list(argv)))
    return values


class HealthOptions(FrozenRecord):
    """``npudoctor health``'s options, typed.

    ``machine``: ``--root --python --user --env-file --no-commands --from --json``.
    ``timeout``: the hard total budget, seconds in (0, 3600].  ``require``: chips that must
    be visible.  ``only``/``skip``: areas.  ``fail_on``: ``"error"`` or ``"warning"``.
    ``ignore``: codes or names to drop.  ``matrix``: a matrix file.  ``exec_env``: judge
    the environment ``npudoctor exec`` would give the workload.  ``cache_ttl``: seconds a
    previous result may be reused (0: never).  ``require_checked``: areas that must be
    checked.  ``fallback_ttl``: seconds a finished verdict stands in for one the budget
    cut short (0: never).  ``pid``: judge that process's environment (``/proc/PID/environ``).
    A frozen record (:class:`~npudoctor.plainrecord.FrozenRecord`).
    """

    FIELDS = (
        "machine",
        "timeout",
        "require",
        "only",
        "skip",
        "fail_on",
        "ignore",
        "matrix",
        "exec_env",
        "cache_ttl",
        "require_checked",
        "fallback_ttl",
        "pid",
        "verbose",
        "fresh",
    )
    machine: MachineRequest
    timeout: float
    require: Optional[int]
    only: Tuple[str, ...]
    skip: Tuple[str, ...]
    fail_on: str
    ignore: Tuple[str, ...]
    matrix: Optional[str]
    exec_env: bool
    cache_ttl: float
    require_checked: Tuple[str, ...]
    fallback_ttl: float
    pid: Optional[int]
    verbose: bool
    fresh: bool

    def __init__(
        self,
        machine: Optional[MachineRequest] = None,
        timeout: float = DEFAULT_TIMEOUT,
        require: Optional[int] = None,
        only: Tuple[str, ...] = (),
        skip: Tuple[str, ...] = (),
        fail_on: str = "error",
        ignore: Tuple[str, ...] = (),
        matrix: Optional[str] = None,
        exec_env: bool = False,
        cache_ttl: float = 0.0,
        require_checked: Tuple[str, ...] = (),
        fallback_ttl: float = 0.0,
        pid: Optional[int] = None,
        verbose: bool = False,
        fresh: bool = False,
    ) -> None:
        self._set(
            machine=MachineRequest() if machine is None else machine,
            timeout=timeout,
            require=require,
            only=only,
            skip=skip,
            fail_on=fail_on,
            ignore=ignore,
            matrix=matrix,
            exec_env=exec_env,
            cache_ttl=cache_ttl,
            require_checked=require_checked,
            fallback_ttl=fallback_ttl,
            pid=pid,
            verbose=verbose,
            fresh=fresh,
        )

    def problem(self) -> Optional[str]:
        """Why these options cannot be honoured (the reason of a "bad health-check
        option"), or ``None``."""
        if not (math.isfinite(self.timeout) and 0 < self.timeout <= 3600):
            return "--timeout must be a number of seconds in (0, 3600]"
        if not math.isfinite(self.cache_ttl) or self.require is not None and self.require < 0:
            return "--cache-ttl and --require must be finite and not negative"
        if not (math.isfinite(self.fallback_ttl) and self.fallback_ttl >= 0):
            return "--fallback-ttl must be a finite number of seconds, not negative"
        if self.pid is not None and (self.exec_env or self.machine.env_file or self.machine.from_file):
            return "--pid names the workload's environment: not with --exec-env, --env-file or --from"
        if self.only or self.skip or self.require_checked:
            from npudoctor.runtime.quick import areas

            try:
                areas(self.only + self.skip + self.require_checked)
            except ValueError as exc:
                return str(exc)
        return None


def options_from_values(values: Dict[str, Any]) -> HealthOptions:
    """The typed options from :func:`parse_values`' values."""
    return HealthOptions(
        machine=MachineRequest(
            root=values["root"],
            python=values["python"],
            user=values["user"],
            env_file=values["env_file"],
            no_commands=values["no_commands"],
            from_file=values["from_file"],
            json=values["json"],
        ),
        timeout=values["timeout"],
        require=values["require"],
        only=tuple(values["only"]),
        skip=tuple(values["skip"]),
        fail_on=values["fail_on"],
        ignore=tuple(values["ignore"]),
        matrix=values["matrix"],
        exec_env=values["exec_env"],
        cache_ttl=values["cache_ttl"],
        require_checked=tuple(values["require_checked"]),
        fallback_ttl=values["fallback_ttl"],
        pid=values["pid"],
        verbose=values["verbose"],
        fresh=values["fresh"],
    )


def _note(note: Optional[str]) -> None:
    """A note about the run (a refused cache) on stderr: stdout holds only the verdict."""
    if note:
        print(f"npudoctor health: {note}", file=sys.stderr)


def evaluate_health(options: HealthOptions, budget: Budget, progress: Optional[Progress] = None) -> Dict[str, Any]:
    """Run the quick evaluation; return the result document ``{"status": "healthy" |
    "unhealthy", "problems": [line], "findings": [finding dict], "chips": int,
    "duration_s": float, "summary": str, "not_checked": {area: reason}}``, plus
    ``"python_choice"`` (which interpreter was judged and how to point it elsewhere) when
    no ``--python`` was given and npudoctor runs from a venv of its own (pipx) or judged
    the active venv/conda environment instead of its own.

    ``budget.step`` names the step in progress; ``progress`` (when given) records the
    sections finished, for :func:`timed_out_verdict`.  With ``options.exec_env`` the
    environment judged is the one ``npudoctor exec`` would run the workload in.  Raises
    ``ValueError`` for a bad option found while working (the caller reports it as a bad
    option); anything else propagates.
    """
    from npudoctor.runtime.judged import judged_environment
    from npudoctor.runtime.quick import QuickRequest, QuickResult, areas, evaluate_quick

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
    failing = result.failing(options.fail_on)
    problems = [printable(f"{f.code} {f.title}") for f in failing]
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
    }
    if result.python_choice:
        doc["python_choice"] = result.python_choice
    return doc


#: The environments judged whose every input a memo can replay (see :func:`_memo_file`).
_MEMO_JUDGED = ("process", "env-file", "exec-env", "node")


def _memo_file(options: HealthOptions) -> Optional[str]:
    """The memo file of this run (:mod:`npudoctor.runtime.memo`), or ``None`` when no
    verdict may be reused: ``--fresh``, ``--from`` (a snapshot), ``--pid`` (another
    process's environment: not kept in a file)."""
    machine = options.machine
    if options.fresh or machine.from_file or options.pid is not None:
        return None
    from npudoctor.runtime import memo

    return memo.memo_path(memo.judged_options(options))


def _evaluate_or_reuse(options: HealthOptions, budget: Budget, watch: _Watch) -> Dict[str, Any]:
    """:func:`evaluate_health`, or the last verdict when none of its inputs changed
    (:func:`npudoctor.runtime.memo.reuse`); a full run judged in this process's or the
    ``--env-file``'s environment is recorded for the next one.  ``watch.progress`` is
    set when the full evaluation starts (what a cut-short run had finished)."""
    path = _memo_file(options)
    if path is None:
        from npudoctor.runtime.quick import Progress

        watch.progress = Progress()
        return evaluate_health(options, budget, watch.progress)
    from npudoctor.runtime import memo

    budget.step = "reading the environment"
    environ = options.machine.workload_environ(os.environ)  # as runtime.quick.diagnosed_environ
    reused = memo.reuse(path, environ, budget)
    if reused is not None:
        return reused
    from npudoctor.runtime.quick import Progress

    journal = memo.Journal()
    watch.progress = Progress()
    with memo.recording(journal):
        doc = evaluate_health(options, budget, watch.progress)
    if (doc.get("environment") or {}).get("judged") in _MEMO_JUDGED and doc.get("status") in ("healthy", "unhealthy"):
        budget.step = "writing the memo"
        memo.save(path, journal, options.matrix, doc, options.machine.python, options.machine.root)
    return doc


def _unhealthy(line: str, **extra: Any) -> Dict[str, Any]:
    doc: Dict[str, Any] = {"status": "unhealthy", "problems": [printable(line)], "findings": []}
    doc.update(extra)
    return doc


def _emit(doc: Dict[str, Any], as_json: bool) -> ExitStatus:
    """Print the verdict; the one place that decides health's exit status (``"unknown"``
    is exit 0: what could not be finished never makes the answer unhealthy by itself)."""
    healthy = doc["status"] in ("healthy", "unknown")
    if as_json:
        print(json.dumps(doc, ensure_ascii=False))
    else:
        age = f" (cached result, {doc['cache_age_s']} s old)" if "cache_age_s" in doc else ""
        if doc["status"] == "unknown":
            for area, reason in doc.get("unknown", {}).items():
                print(printable(f"unknown: {area} ({reason})"))
        elif healthy:
            summary = f": {doc['summary']}" if doc.get("summary") else ""
            gaps = "; ".join(f"{area}: {reason}" for area, reason in (doc.get("not_checked") or {}).items())
            print(printable(f"healthy{summary}{'; not checked: ' + gaps if gaps else ''}{age}"))
        else:
            for line in doc["problems"]:
                print(f"unhealthy: {line}{age}")
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
    except SystemExit as exc:  # argparse --help (0) or a usage error (1, see _Parser)
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
        lambda: _evaluate_or_reuse(options, budget, watch),
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
    judged = doc.get("environment") or {}
    if options.verbose and judged:
        _note(printable(f"judged the {judged.get('judged')} environment: {judged.get('because')}", limit=400))
    if cache:
        try:
            from npudoctor.snapshot import atomic_write

            atomic_write(cache, json.dumps(doc))
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
            self.cut = (dict(self.progress.facts), self.budget.step)
        from npudoctor.hostproc import TIMED_OUT, running_commands

        return list(TIMED_OUT) + running_commands(self.pressure, time.monotonic() - self.sampled)

    def pressure_share(self) -> Optional[float]:
        from npudoctor.hostproc import cpu_pressure_share

        return cpu_pressure_share(self.pressure, time.monotonic() - self.sampled)


#: An npu-smi running at least this long (seconds) when the budget ran out may be judged hung.
HUNG_MIN_S = 0.3


def _hung_npu_smi(evidence: Sequence[Any]) -> Optional[str]:
    """The line of an npu-smi that hung (not starved: see
    :func:`npudoctor.facts.coverage.starved`) among ``evidence``, or ``None``."""
    from npudoctor.facts.coverage import starved

    for cmd in evidence:
        if not isinstance(cmd, dict) or not cmd.get("argv"):
            continue
        argv = [str(a) for a in cmd["argv"]]
        duration = float(cmd.get("duration") or 0.0)
        # /proc/PID/cmdline of a script names its interpreter first ("/bin/sh .../npu-smi info")
        names = [os.path.basename(a) for a in argv[:2]]
        if "npu-smi" not in names or duration < HUNG_MIN_S:
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
    (:func:`npudoctor.runtime.quick.finished_findings`: what was found before the budget
    ran out stands), the unfinished areas named ``unknown``; else the last finished verdict
    younger than ``--fallback-ttl`` (the documented policy); else ``{"status": "unknown",
    "unknown": {area: reason}, "findings": [of the finished areas]}`` -- exit 0."""
    from npudoctor.runtime.quick import finished_findings, unfinished

    budget, options = watch.budget, watch.options
    hung = _hung_npu_smi(evidence)
    if hung:
        return _unhealthy(hung, duration_s=round(budget.elapsed(), 3))
    facts, step = watch.cut if watch.cut is not None else (None, budget.step)
    gaps = unfinished(budget, how, watch.pressure_share(), step)
    findings, done = finished_findings(watch.progress, options.ignore, facts)
    levels = ("error", "warning") if options.fail_on == "warning" else ("error",)
    failing = [printable(f"{f.code} {f.title}") for f in findings if f.severity in levels]
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
