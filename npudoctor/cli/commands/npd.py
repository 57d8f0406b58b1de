"""``npudoctor npd``: a node-problem-detector custom-plugin check.

NPD's custom plugin contract (node-problem-detector docs, "Custom Plugin Monitor"): the
program exits 0 (OK), 1 (NonOK: the problem is present) or 2 (Unknown), prints one message on
stdout (NPD keeps its first ``max_output_length`` bytes, 80 by default: it cuts bytes, not
characters) and must finish within the rule's ``timeout``.  This command keeps that contract on
its own: every outcome, including npudoctor's own failure, a bad option or a probe that
overruns, maps to 0/1/2 with a message of at most 80 bytes of UTF-8, cut at a character.  Its deadline is the runtime's one mechanism
(:mod:`npudoctor.runtime.deadline`); a command left running past it is killed.
"""

import json
import os
import sys
import time
from typing import Any, Dict, List, NoReturn, Optional, Sequence, Set, Tuple

import typer

from npudoctor.cli.commands._common import (
    Annotated,
    EnvFileOpt,
    FromOpt,
    IgnoreOpt,
    JsonOpt,
    NoCommandsOpt,
    PythonOpt,
    RootOpt,
    UserOpt,
)
from npudoctor.record import MutableRecord, field
from npudoctor.session.request import ExitStatus, MachineRequest

#: Longest message, in bytes of UTF-8 (NPD's default ``max_output_length``).
MAX_MESSAGE = 80
#: What marks a cut message (3 bytes, within :data:`MAX_MESSAGE`).
ELLIPSIS = "…"
#: Seconds of the --timeout kept for the answer and a stuck probe.
ANSWER_RESERVE = 0.3

NPD_HELP = """Node-problem-detector custom plugin: check the NPU stack of this node and answer
in NPD's contract.

Exit codes: 0 OK; 1 problem (findings at or above --severity); 2 unknown (npudoctor could
not tell: a bad option, an internal failure, or the check overran --timeout).  Prints one
line of at most 80 bytes (UTF-8; --json: one JSON document with the status, the message and
the problem findings, for other agents).  --from FILE judges a snapshot written by
`npudoctor collect` instead of this node.

The node is judged in the environment its CANN set_env.sh would set (as `npudoctor env`
computes it), never in this agent's own; a workload's environment with --env-file or --pid.
An area that could not be checked (no npu-smi, a timeout on a busy node) answers 2, or 1
with --require-checked AREA.  A node with no Python environment at all (its workloads
bring theirs in images) is judged on its driver, devices and CANN: not 2.  Without
--python: $NPUDOCTOR_PYTHON, else the active VIRTUAL_ENV/CONDA_PREFIX, else npudoctor's own
interpreter."""


def size(text: str) -> int:
    """Bytes of ``text`` in UTF-8: what NPD counts."""
    return len(text.encode("utf-8", "replace"))


def shorten(text: str, limit: int = MAX_MESSAGE) -> str:
    """One printable line of at most ``limit`` bytes of UTF-8, cut at a character boundary
    (:data:`ELLIPSIS`, counted in ``limit``, marks a cut): NPD cuts its plugin's output by
    bytes, and a cut inside a character leaves invalid UTF-8 in the node condition."""
    from npudoctor.runtime.printable import printable

    line = printable(str(text), limit=1 << 20)
    if size(line) <= limit:
        return line
    room = max(0, limit - size(ELLIPSIS))
    return line.encode("utf-8", "replace")[:room].decode("utf-8", "ignore").rstrip() + ELLIPSIS


def message_for(problems: List[Any]) -> str:
    """``"HCCL007 the rank table's device_ip does not match (+2 more: DEV003,PKG001)"``
    within 80 bytes: the first root cause's code and title, and how many other causes
    there are (their codes when they fit, else only the count; a title too long is cut,
    never the count).  A follow-on symptom folded under its cause
    (:func:`npudoctor.report.build.causes_first`, as ``check`` folds it) is not another
    problem (``--json`` lists it, with its ``because``)."""
    from npudoctor.report.build import causes_first
    from npudoctor.runtime.printable import printable

    causes = [f for f, cause in causes_first(problems) if cause is None]
    first = causes[0]
    head = printable(f"{first.code} {first.title}", limit=1 << 20)
    others = sorted({p.code for p in causes[1:]} - {first.code})
    tails = [f" (+{len(causes) - 1} more: {','.join(others)})", f" (+{len(causes) - 1} more)"] if others else [""]
    for tail in tails:
        if size(head + tail) <= MAX_MESSAGE:
            return head + tail
    return shorten(head, MAX_MESSAGE - size(tails[-1])) + tails[-1]


class Verdict(MutableRecord):
    """npd's answer: ``status`` (``OK``, ``PROBLEMS`` or ``NPD_UNKNOWN``), the message,
    the problem findings, the areas not checked with the reason (what makes the answer
    unknown), the areas with nothing to check on this node
    (:func:`npudoctor.facts.coverage.absent`: no Python on the host) and the findings left
    out by ``--ignore``/``.npudoctor.toml`` with what silenced each (``--json``), and what to
    say of those ignores (on stderr: a config file not used, an entry that names no finding)."""

    status: ExitStatus
    message: str
    problems: List[Any] = field(default_factory=list)
    not_checked: Dict[str, str] = field(default_factory=dict)
    absent: Dict[str, str] = field(default_factory=dict)
    ignored: List[Dict[str, str]] = field(default_factory=list)
    ignore_notes: List[str] = field(default_factory=list)


def judge(
    machine: MachineRequest,
    severity: str,
    ignore: List[str],
    budget: Any,
    pid: Optional[int] = None,
    require_checked: Sequence[str] = (),
) -> Verdict:
    """Collect (or replay ``--from``) and judge the node within ``budget`` (a
    :class:`npudoctor.runtime.deadline.Budget`) in the environment of :func:`node_environ`
    (``pid``: a workload process); the verdict in NPD's terms.  An area that was probed but
    not checked (:func:`npudoctor.facts.coverage.unchecked`: no npu-smi, a timeout on a
    busy node) is NPD_UNKNOWN, or PROBLEMS when ``require_checked`` names it.  An area with
    nothing to check on the node (:func:`npudoctor.facts.coverage.absent`: no Python
    environment on a host whose workloads bring theirs in images) is not unknown: the node
    is judged on what it has, unless ``require_checked`` names that area.  Raises
    :class:`npudoctor.session.request.UsageError` for bad options; anything else the
    engine raises propagates (the caller answers "unknown")."""
    from npudoctor.cli.commands._common import judge, load_matrix_or_none
    from npudoctor.config import load_ignore_entries, silenced, unknown_ignores
    from npudoctor.context import Options
    from npudoctor.runtime.quick import areas

    required = set(areas(list(require_checked)))
    options = Options(deadline=budget.probe_deadline(), command_timeout=min(5.0, budget.seconds / 3), pid=pid)
    budget.step = "computing the node's environment"
    entries, config_errors = load_ignore_entries()
    origins = [(code, "--ignore") for code in ignore] + entries
    ignored: List[Any] = []

    def matrix() -> Tuple[Any, Optional[str]]:
        loaded = load_matrix_or_none(None)
        budget.step = "judging"
        return loaded

    snapshot, findings = judge(
        machine,
        options,
        environ=node_environ(machine, pid),
        matrix=matrix,
        ignore=[code for code, _where in origins],
        ignored=ignored,
    )
    verdict = _verdict(snapshot, findings, severity, required, budget, silenced(ignored, origins))
    verdict.ignore_notes = config_errors + unknown_ignores(origins)
    return verdict


def _verdict(
    snapshot: Any, findings: List[Any], severity: str, required: Set[str], budget: Any, said: List[Dict[str, str]]
) -> Verdict:
    """The verdict in NPD's terms of the judged ``snapshot`` (see :func:`judge`)."""
    from npudoctor.facts.coverage import absent, unchecked

    levels = ("error",) if severity == "error" else ("error", "warning")
    problems = [f for f in findings if f.severity in levels and f.code != "HOST099"]
    internal = [f for f in findings if f.code == "HOST099"]
    if problems:
        return Verdict(ExitStatus.PROBLEMS, message_for(problems), problems, ignored=said)
    if internal:
        why = f"npudoctor: a check failed internally ({internal[0].subject})"
        return Verdict(ExitStatus.NPD_UNKNOWN, why, ignored=said)
    everything = unchecked(snapshot.facts)
    must = {a: r for a, r in everything.items() if a in required}
    nothing_there = {a: r for a, r in absent(snapshot.facts, snapshot.target.get("python")).items() if a not in must}
    gaps = {a: r for a, r in everything.items() if a not in nothing_there}
    if must:
        area, reason = next(iter(must.items()))
        return Verdict(
            ExitStatus.PROBLEMS,
            f"{area} not checked: {reason}",
            not_checked=gaps,
            absent=nothing_there,
            ignored=said,
        )
    if gaps:
        area, reason = next(iter(gaps.items()))
        more = f" (+{len(gaps) - 1} more)" if len(gaps) > 1 else ""
        return Verdict(
            ExitStatus.NPD_UNKNOWN,
            f"not checked: {area}: {reason}{more}",
            not_checked=gaps,
            absent=nothing_there,
            ignored=said,
        )
    codes = ", ".join(sorted({e["code"] for e in said}))
    return Verdict(
        ExitStatus.OK,
        f"npudoctor: NPU stack OK ({budget.elapsed():.1f} s{'; ignored: ' + codes if codes else ''})",
        absent=nothing_there,
        ignored=said,
    )


def node_environ(machine: MachineRequest, pid: Optional[int]) -> Optional[Dict[str, str]]:
    """The environment npd judges: a named workload's (``--pid N``: that process's
    ``/proc/N/environ``; ``--env-file``: ``None``, the file is read by the Host), else the
    node's -- this agent's environment with what the node's CANN ``set_env.sh`` would set
    (:func:`npudoctor.runtime.environment.plan_environment`, as ``npudoctor env``), so that
    ENV findings are about a workload and never about the agent's own process.  ``--python``
    alone names an interpreter, not an environment: it is judged in the node's.  ``None``
    for ``--from`` (the snapshot's).  Raises
    :class:`~npudoctor.session.request.UsageError` for a bad ``--pid``/``--root``."""
    from npudoctor.runtime.environment import LaunchError, pid_environ, plan_environment
    from npudoctor.session.request import UsageError

    if machine.from_file or machine.env_file:
        return None
    try:
        if pid is not None:
            return pid_environ(machine.root, pid)
        return plan_environment(machine).environ
    except LaunchError as exc:
        raise UsageError(str(exc)) from None


def _answer(verdict: Verdict, as_json: bool) -> NoReturn:
    """Print the verdict and leave with its status: the one place npd's status is decided.
    ``os._exit`` also ends a probe thread still running past the deadline."""
    message = shorten(verdict.message)
    for note in verdict.ignore_notes:
        sys.stderr.write(f"npudoctor npd: {note}\n")
    if as_json:
        doc = {
            "status": {ExitStatus.OK: "ok", ExitStatus.PROBLEMS: "problem"}.get(verdict.status, "unknown"),
            "message": message,
            "problems": [f.to_dict() for f in verdict.problems],
            "not_checked": dict(verdict.not_checked),
            "absent": dict(verdict.absent),
            "ignored": list(verdict.ignored),
        }
        sys.stdout.write(json.dumps(doc, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(message + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(verdict.status)


def _on_sigterm(budget: Any, as_json: bool) -> None:
    """Answer SIGTERM (NPD or a Slurm/NHC wrapper giving up) in NPD's contract: kill the
    commands started and answer unknown (2), never 143.  Main thread only."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return

    def handler(signum: int, frame: Any) -> None:
        from npudoctor.hostproc import RUNNING, kill_tree
        from npudoctor.runtime.deadline import kill_children

        for pid in list(RUNNING):
            kill_tree(pid)  # descendants that left the group with setsid() too
        kill_children()
        _answer(Verdict(ExitStatus.NPD_UNKNOWN, f"npudoctor: stopped by SIGTERM while {budget.step}"), as_json)

    signal.signal(signal.SIGTERM, handler)


def register(app: typer.Typer) -> None:
    @app.command(help=NPD_HELP)
    def npd(
        root: RootOpt = None,
        python: PythonOpt = None,
        user: UserOpt = None,
        env_file: EnvFileOpt = None,
        no_commands: NoCommandsOpt = False,
        from_file: FromOpt = None,
        as_json: JsonOpt = False,
        timeout: Annotated[
            float, typer.Option("--timeout", metavar="SECONDS", help="Answer within this many seconds.")
        ] = 25.0,
        severity: Annotated[
            str,
            typer.Option("--severity", metavar="LEVEL", help="error (default) or warning: what counts as a problem."),
        ] = "error",
        ignore: IgnoreOpt = None,
        pid: Annotated[
            Optional[int],
            typer.Option(
                "--pid",
                metavar="PID",
                help="Judge the environment of this workload process (/proc/PID/environ; under --root, "
                "the root's /proc) instead of the node's set_env.sh environment.",
            ),
        ] = None,
        require_checked: Annotated[
            Optional[List[str]],
            typer.Option(
                "--require-checked",
                metavar="AREA",
                help="An area that must be checked: not checked (no npu-smi, a timeout) is a problem (exit 1) "
                "instead of unknown (exit 2); repeatable.",
            ),
        ] = None,
    ) -> None:
        from npudoctor.runtime.deadline import Budget, process_started, run_within
        from npudoctor.runtime.quick import areas
        from npudoctor.session.request import UsageError

        # NPD passes its own environment to plugins: NPUDOCTOR_PYTHON names the workloads'
        # interpreter where the plugin config cannot (deploy/k8s/npd/daemonset.yaml).
        python = python or os.environ.get("NPUDOCTOR_PYTHON") or None
        machine = MachineRequest(
            root=root,
            python=python,
            user=user,
            env_file=env_file,
            no_commands=no_commands,
            from_file=from_file,
            json=as_json,
        )

        def unknown(message: str) -> Verdict:
            return Verdict(ExitStatus.NPD_UNKNOWN, message)

        if severity not in ("error", "warning"):
            _answer(unknown(f"npudoctor npd: --severity {severity}: use error or warning"), machine.json)
        if not timeout > 0:
            _answer(unknown("npudoctor npd: --timeout must be positive"), machine.json)
        conflict = machine.replay_conflict()
        if conflict:
            _answer(unknown(f"npudoctor npd: {conflict}"), machine.json)
        if root is not None and not os.path.isdir(root):
            _answer(unknown(f"npudoctor npd: --root is not a directory: {root}"), machine.json)
        # The work gets the timeout less a reserve for the answer; probes give up after
        # 85 % of that (Budget.probe_deadline), the rest is for the rules.
        # counted from process start (interpreter start-up included), unless this process is
        # older than the whole budget (npd called inside a long-lived one): then from now
        seconds = max(0.1, timeout - ANSWER_RESERVE)
        started = process_started()
        fresh = started is not None and time.monotonic() - started < seconds
        budget = Budget(seconds, started=started if fresh else None)
        try:
            areas(list(require_checked or []))
        except ValueError as bad:
            _answer(unknown(f"npudoctor npd: --require-checked: {bad}"), machine.json)
        if pid is not None and (env_file or from_file):
            _answer(
                unknown("npudoctor npd: --pid names the workload's environment: not with --env-file/--from"),
                machine.json,
            )
        _on_sigterm(budget, machine.json)
        outcome = run_within(
            budget,
            lambda: judge(machine, severity, list(ignore or []), budget, pid, list(require_checked or [])),
            name="npudoctor-npd",
        )
        if outcome.timed_out:
            _answer(unknown(f"npudoctor: check did not finish within {timeout:g} s"), machine.json)
        exc = outcome.error
        if isinstance(exc, UsageError):
            _answer(unknown(f"npudoctor npd: {exc}"), machine.json)
        verdict = outcome.value
        if exc is not None or verdict is None:
            verdict = unknown(f"npudoctor failed: {type(exc).__name__}: {exc}")
        _answer(verdict, machine.json)
