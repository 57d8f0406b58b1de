"""``npudoctor npd``: a node-problem-detector custom-plugin check.

NPD's custom plugin contract (node-problem-detector docs, "Custom Plugin Monitor"): the
program exits 0 (OK), 1 (NonOK: the problem is present) or 2 (Unknown), prints one message on
stdout (NPD keeps at most ``max_output_length`` characters, 80 by default) and must finish
within the rule's ``timeout``.  This command keeps that contract on its own: every outcome,
including npudoctor's own failure, a bad option or a probe that overruns, maps to 0/1/2 with a
message of at most 80 characters.  Its deadline is the runtime's one mechanism
(:mod:`npudoctor.runtime.deadline`); a command left running past it is killed.
"""

import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any, List, NoReturn

import typer
from typing_extensions import Annotated

from npudoctor.cli.commands._common import (
    EnvFileOpt,
    FromOpt,
    IgnoreOpt,
    JsonOpt,
    NoCommandsOpt,
    PythonOpt,
    RootOpt,
    UserOpt,
)
from npudoctor.cli.request import ExitStatus, MachineRequest

MAX_MESSAGE = 80
#: Seconds of the --timeout kept for the answer and a stuck probe.
ANSWER_RESERVE = 0.3

NPD_HELP = """Node-problem-detector custom plugin: check the NPU stack of this node and answer
in NPD's contract.

Exit codes: 0 OK; 1 problem (findings at or above --severity); 2 unknown (npudoctor could
not tell: a bad option, an internal failure, or the check overran --timeout).  Prints one
line of at most 80 characters (--json: one JSON document with the status, the message and
the problem findings, for other agents).  --from FILE judges a snapshot written by
`npudoctor collect` instead of this node."""


def shorten(text: str, limit: int = MAX_MESSAGE) -> str:
    """One line of at most ``limit`` characters (an ellipsis marks a cut)."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def message_for(problems: List[Any]) -> str:
    """``"HCCL007 rank-table-device-ip-mismatch (+2 more: DEV003,PKG001)"`` within 80 chars."""
    first = problems[0]
    head = f"{first.code} {first.name}"
    others = sorted({p.code for p in problems[1:]} - {first.code})
    if not others:
        return shorten(head)
    tail = f" (+{len(problems) - 1} more: {','.join(others)})"
    if len(head) + len(tail) > MAX_MESSAGE:
        tail = f" (+{len(problems) - 1} more)"
    return shorten(head + tail)


@dataclass
class Verdict:
    """npd's answer: ``status`` (``OK``, ``PROBLEMS`` or ``NPD_UNKNOWN``), the message,
    and the problem findings (``--json``)."""

    status: ExitStatus
    message: str
    problems: List[Any] = field(default_factory=list)


def judge(machine: MachineRequest, severity: str, ignore: List[str], budget: Any) -> Verdict:
    """Collect (or replay ``--from``) and judge the node within ``budget`` (a
    :class:`npudoctor.runtime.deadline.Budget`); the verdict in NPD's terms.  Raises
    :class:`npudoctor.cli.commands._common.UsageError` for bad options; anything else the
    engine raises propagates (the caller answers "unknown")."""
    from npudoctor.cli.commands._common import load_matrix_or_none, snapshot_for
    from npudoctor.config import load_ignores
    from npudoctor.engine import Options, evaluate

    options = Options(deadline=budget.probe_deadline(), command_timeout=min(5.0, budget.seconds / 3))
    snapshot = snapshot_for(machine, options)
    matrix, _err = load_matrix_or_none(None)
    config_ignores, _errs = load_ignores()
    findings = evaluate(snapshot, matrix, options, ignore=list(ignore) + config_ignores)
    levels = ("error",) if severity == "error" else ("error", "warning")
    problems = [f for f in findings if f.severity in levels and f.code != "HOST099"]
    internal = [f for f in findings if f.code == "HOST099"]
    if problems:
        return Verdict(ExitStatus.PROBLEMS, message_for(problems), problems)
    if internal:
        return Verdict(ExitStatus.NPD_UNKNOWN, f"npudoctor: a check failed internally ({internal[0].subject})")
    return Verdict(ExitStatus.OK, f"npudoctor: NPU stack OK ({budget.elapsed():.1f} s)")


def _answer(verdict: Verdict, as_json: bool) -> NoReturn:
    """Print the verdict and leave with its status: the one place npd's status is decided.
    ``os._exit`` also ends a probe thread still running past the deadline."""
    message = shorten(verdict.message)
    if as_json:
        doc = {
            "status": {ExitStatus.OK: "ok", ExitStatus.PROBLEMS: "problem"}.get(verdict.status, "unknown"),
            "message": message,
            "problems": [f.to_dict() for f in verdict.problems],
        }
        sys.stdout.write(json.dumps(doc, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(message + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(verdict.status)


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
    ) -> None:
        from npudoctor.cli.commands._common import UsageError
        from npudoctor.runtime.deadline import Budget, run_within

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
        budget = Budget(max(0.1, timeout - ANSWER_RESERVE))
        outcome = run_within(budget, lambda: judge(machine, severity, list(ignore or []), budget), name="npudoctor-npd")
        if outcome.timed_out:
            _answer(unknown(f"npudoctor: check did not finish within {timeout:g} s"), machine.json)
        exc = outcome.error
        if isinstance(exc, UsageError):
            _answer(unknown(f"npudoctor npd: {exc}"), machine.json)
        verdict = outcome.value
        if exc is not None or verdict is None:
            verdict = unknown(f"npudoctor failed: {type(exc).__name__}: {exc}")
        _answer(verdict, machine.json)
