"""``npudoctor exec``: run a command in the CANN environment, after the quick checks.

The official CANN images start every container through an entrypoint that sources
``set_env.sh``.  ``npudoctor exec -- CMD [ARGS...]`` does the same job without running
any script of the machine:

1. compute the environment (:func:`npudoctor.runtime.environment.plan_environment`);
2. run the one quick evaluation (:func:`npudoctor.runtime.quick.evaluate_quick`) against
   that environment under a :class:`~npudoctor.runtime.deadline.Budget`, print one line
   per finding on stderr;
3. ``os.execvpe`` the command with that environment: the process is *replaced*, so the
   command keeps npudoctor's pid, receives the signals sent to it and its exit status is
   the container's (signal and exit pass-through without a forwarding parent).

Exit statuses (:class:`~npudoctor.session.request.ExitStatus`, as coreutils ``env(1)``):
``EXEC_REFUSED`` (125) when npudoctor refuses (``--strict`` and errors) or cannot prepare,
``EXEC_CANNOT_RUN`` (126) when the command is found but cannot be executed,
``EXEC_NOT_FOUND`` (127) when it is not found; otherwise the command's own status.

This module imports neither Typer nor rich (the Typer command is in
:mod:`npudoctor.cli.commands.exec_env`).
"""

from __future__ import annotations

import errno
import os
import signal
import sys
import time
from typing import Any, Dict, List, Mapping, Optional, TextIO, Tuple

from npudoctor.record import MutableRecord, Record, field, replace
from npudoctor.runtime.deadline import Budget, run_within
from npudoctor.runtime.environment import EnvPlan, LaunchError, plan_environment
from npudoctor.runtime.printable import follows, printable
from npudoctor.runtime.quick import Progress, QuickRequest, evaluate_quick, finished_findings, unfinished
from npudoctor.session.request import ExitStatus, MachineRequest

#: Default budget (seconds) of the quick checks before the command starts.
DEFAULT_CHECK_TIMEOUT = 5.0
#: Extra seconds to wait for the checks past their budget: Host.run enforces the command
#: deadlines itself, and a killed command should be reaped before the checks are given up.
CHECK_GRACE = 1.0


class ExecRequest(Record):
    """What ``npudoctor exec`` was asked to do.

    ``command``: the command and its arguments.  ``machine``: ``--root --python --user
    --env-file --no-commands`` (``from_file``/``json`` are not exec's: it runs a command on
    this machine).  ``strict``: refuse to start on errors.  ``quiet``: print errors only.
    ``timeout``: budget of the checks in seconds (> 0).  ``ignore``: finding codes or
    names to drop.
    """

    command: Tuple[str, ...]
    machine: MachineRequest = field(default_factory=MachineRequest)
    strict: bool = False
    quiet: bool = False
    timeout: float = DEFAULT_CHECK_TIMEOUT
    ignore: Tuple[str, ...] = ()


class CheckResult(MutableRecord):
    """The quick checks run before the command: their findings
    (:class:`npudoctor.findings.Finding`) or why there are none (``failure``: npudoctor
    failed, or an npu-smi hung on a node not starved of CPU -- an error; ``unknown``:
    ``{area: reason}`` the budget left unfinished, which is not an error: unknown is not
    unhealthy, as for ``npudoctor health``); ``unchecked``: ``{area: reason}`` of the areas
    probed but not judged (npu-smi not answering in time, not on PATH); ``python_choice``:
    which interpreter was judged without ``--python``; ``ignored``: the findings left out by
    ``--ignore`` or ``.npudoctor.toml``; ``ignore_notes``: what to say of those ignores (a
    config file not used, an entry that names no finding; these four as in
    :class:`npudoctor.runtime.quick.QuickResult`)."""

    findings: List[Any] = field(default_factory=list)
    failure: Optional[str] = None
    unknown: Dict[str, str] = field(default_factory=dict)
    unchecked: Dict[str, str] = field(default_factory=dict)
    python_choice: Optional[str] = None
    ignored: List[Dict[str, str]] = field(default_factory=list)
    ignore_notes: List[str] = field(default_factory=list)

    @property
    def errors(self) -> int:
        """Root causes of severity ``error`` (a follow-on symptom counts with its cause:
        :func:`npudoctor.report.build.causes_first`), plus one for a failure."""
        from npudoctor.report.build import causes_first

        causes = causes_first(self.findings)
        return sum(1 for f, cause in causes if f.severity == "error" and cause is None) + (1 if self.failure else 0)


def quick_checks(plan: EnvPlan, request: ExecRequest) -> CheckResult:
    """The quick evaluation of the machine with the planned environment, within
    ``request.timeout`` seconds (plus :data:`CHECK_GRACE`); when it does not finish, the
    commands it started are killed, the areas that finished keep their findings and the
    result names the unfinished areas as ``unknown`` -- unless an npu-smi hung on a node not starved of CPU, a device failure
    (``failure``: DEV001), as in ``npudoctor health``.  Never raises."""
    from npudoctor.hostproc import TIMED_OUT, cpu_pressure_share, cpu_pressure_total, running_commands

    budget = Budget(request.timeout)
    pressure, sampled = cpu_pressure_total(), time.monotonic()

    progress = Progress()
    cut: Dict[str, Any] = {}

    def evidence() -> List[Any]:
        # before the commands are killed and the work moves on
        cut.update(step=budget.step, facts=progress.freeze())
        return list(TIMED_OUT) + running_commands(pressure, time.monotonic() - sampled)

    quick = QuickRequest(machine=request.machine, environ=plan.environ, ignore=tuple(request.ignore), progress=progress)
    outcome = run_within(
        budget,
        lambda: evaluate_quick(quick, budget),
        grace=CHECK_GRACE,
        name="npudoctor-exec-checks",
        evidence=evidence,
    )
    if outcome.timed_out:
        # the policy of `npudoctor health`: a hung npu-smi on a node not starved of CPU is a
        # device failure; anything else unfinished is unknown and the workload starts
        from npudoctor.runtime.health import _hung_npu_smi

        hung = _hung_npu_smi(outcome.evidence or [])
        if hung:
            return CheckResult(failure=hung)
        share = cpu_pressure_share(pressure, time.monotonic() - sampled)
        found, _done = finished_findings(progress, request.ignore, cut.get("facts"))
        return CheckResult(findings=found, unknown=unfinished(budget, "ran out", share, cut.get("step")))
    if outcome.error is not None or outcome.value is None:
        exc = outcome.error
        return CheckResult(failure=f"npudoctor failed: {type(exc).__name__}: {exc}")
    value = outcome.value
    return CheckResult(
        findings=list(value.findings),
        unchecked=dict(value.unchecked),
        python_choice=value.python_choice,
        ignored=list(value.ignored),
        ignore_notes=list(value.ignore_notes),
    )


def finding_lines(result: CheckResult, quiet: bool = False) -> List[str]:
    """One line per finding, each root cause followed by its follow-on symptoms ending in
    ``(follows from CODE)`` (:func:`npudoctor.report.build.causes_first`; ``quiet``: errors
    only; routine notes never: they inform no decision at a container's start), then what
    was ignored and what to say of the ignores (not with ``quiet``),
    terminal-safe."""
    from npudoctor.config import ignored_line
    from npudoctor.report.build import causes_first

    lines = []
    for f, cause in causes_first(result.findings):
        if (quiet and f.severity != "error") or (f.severity == "info" and f.data.get("routine")):
            continue
        lines.append(follows(f"npudoctor: {f.severity} {f.code} {f.title}", cause))
    if result.failure:
        lines.append(printable(f"npudoctor: error {result.failure}"))
    for area, reason in result.unknown.items():
        lines.append(printable(f"npudoctor: unknown: {area} ({reason})"))
    if not quiet:  # as health says them: an area not judged is neither healthy nor broken
        lines += [printable(f"npudoctor: not checked: {area} ({reason})") for area, reason in result.unchecked.items()]
    if result.ignored and not quiet:
        lines.append(printable(f"npudoctor: {ignored_line(result.ignored)}"))
    if not quiet:
        lines += [printable(f"npudoctor: {note}") for note in result.ignore_notes]
    return lines


def resolve_command(name: str, environ: Mapping[str, str]) -> str:
    """The file ``name`` runs (looked up on ``environ['PATH']`` unless it holds a ``/``).

    Raises ``FileNotFoundError`` (not found) or ``PermissionError`` (found, not
    executable), as ``execvpe`` would."""
    if "/" in name:
        if not os.path.exists(name):
            raise FileNotFoundError(errno.ENOENT, "no such file", name)
        if os.path.isdir(name) or not os.access(name, os.X_OK):
            raise PermissionError(errno.EACCES, "not executable", name)
        return name
    found_unexecutable = None
    for directory in (environ.get("PATH") or os.defpath).split(":"):
        candidate = os.path.join(directory or ".", name)
        if os.path.isfile(candidate):
            if os.access(candidate, os.X_OK):
                return candidate
            found_unexecutable = found_unexecutable or candidate
    if found_unexecutable:
        raise PermissionError(errno.EACCES, "not executable", found_unexecutable)
    raise FileNotFoundError(errno.ENOENT, "command not found", name)


def run_exec(
    request: ExecRequest, environ: Optional[Mapping[str, str]] = None, stderr: Optional[TextIO] = None
) -> ExitStatus:
    """Prepare the environment, run the quick checks, then replace this process with
    ``request.command``.  Returns only when the command does not start:
    ``EXEC_REFUSED`` (refused by ``strict``, no command, or npudoctor cannot prepare),
    ``EXEC_CANNOT_RUN`` (not executable), ``EXEC_NOT_FOUND`` (not found).  ``environ``:
    the starting environment (default: the ``--env-file``'s, else ``os.environ``).
    Output goes to ``stderr`` (default ``sys.stderr``); stdout stays the command's."""
    err = stderr or sys.stderr

    def say(line: str) -> None:
        print(line, file=err)

    command = list(request.command)
    if not command:
        say("npudoctor exec: no command given (usage: npudoctor exec -- CMD [ARGS...])")
        return ExitStatus.EXEC_REFUSED
    try:
        # --user judges that account's device access; the command still runs as this
        # process's account, in this process's environment (not the account's login).
        plan = plan_environment(replace(request.machine, user=None), environ=environ)
    except LaunchError as exc:
        say(f"npudoctor exec: {exc}")
        return ExitStatus.EXEC_REFUSED
    if not request.quiet:
        for note in plan.notes:
            say(f"npudoctor: {note}")
    result = quick_checks(plan, request)
    if result.python_choice and not request.quiet:
        say(printable(f"npudoctor: {result.python_choice}", limit=600))
    for line in finding_lines(result, quiet=request.quiet):
        say(line)
    if request.strict and result.errors:
        say(f"npudoctor: refusing to start {command[0]}: {result.errors} error(s) found (--strict)")
        return ExitStatus.EXEC_REFUSED
    try:
        path = resolve_command(command[0], plan.environ)
    except FileNotFoundError:
        say(f"npudoctor exec: {command[0]}: command not found")
        return ExitStatus.EXEC_NOT_FOUND
    except PermissionError as exc:
        say(f"npudoctor exec: {exc.filename}: not executable")
        return ExitStatus.EXEC_CANNOT_RUN
    err.flush()
    sys.stdout.flush()
    restore_signal_defaults()
    try:
        os.execvpe(path, command, plan.environ)
    except OSError as exc:  # ENOEXEC (no #! line), a race with the file going away, ...
        say(f"npudoctor exec: cannot run {path}: {exc.strerror or exc}")
        return ExitStatus.EXEC_NOT_FOUND if exc.errno == errno.ENOENT else ExitStatus.EXEC_CANNOT_RUN
    return ExitStatus.EXEC_REFUSED  # not reached: execvpe does not return


#: Ignored dispositions that a caller sets on purpose, kept across ``exec``.
_KEEP_IGNORED = {
    getattr(signal, name)
    for name in ("SIGKILL", "SIGSTOP", "SIGHUP", "SIGINT", "SIGQUIT", "SIGTTIN", "SIGTTOU", "SIGTSTP")
    if hasattr(signal, name)
}


def restore_signal_defaults() -> List[str]:
    """Give back the default disposition of every signal this process ignores (Python
    ignores SIGPIPE and SIGXFSZ at start-up; ``execve`` keeps ignored signals ignored), so
    that the workload sees what a shell would give it: ``yes | head -1`` ends on SIGPIPE.
    Signals a caller ignores on purpose stay ignored (:data:`_KEEP_IGNORED`: ``nohup``'s
    SIGHUP, a background job's SIGINT/SIGQUIT, job control).  Returns the names restored; never raises."""
    restored: List[str] = []
    for sig in signal.valid_signals():
        if sig in _KEEP_IGNORED:
            continue
        try:
            if signal.getsignal(sig) == signal.SIG_IGN:
                signal.signal(sig, signal.SIG_DFL)
                restored.append(signal.Signals(sig).name)
        except (OSError, ValueError, RuntimeError):
            continue
    return restored
