"""``npudoctor npd``: a node-problem-detector custom-plugin check.

NPD's custom plugin contract (node-problem-detector docs, "Custom Plugin Monitor"): the
program exits 0 (OK), 1 (NonOK: the problem is present) or 2 (Unknown), prints one message on
stdout (NPD keeps at most ``max_output_length`` characters, 80 by default) and must finish
within the rule's ``timeout``.  This command keeps that contract on its own: every outcome,
including npudoctor's own failure, a bad option or a probe that overruns, maps to 0/1/2 with a
message of at most 80 characters.  It does not share code with ``npudoctor health``.
"""

import os
import sys
import threading
import time
from typing import Any, Dict, List, Optional

import typer
from typing_extensions import Annotated

from npudoctor.cli.commands._common import IgnoreOpt, NoCommandsOpt, RootOpt

NPD_OK, NPD_PROBLEM, NPD_UNKNOWN = 0, 1, 2
MAX_MESSAGE = 80

NPD_HELP = """Node-problem-detector custom plugin: check the NPU stack of this node and answer
in NPD's contract.

Exit codes: 0 OK; 1 problem (findings at or above --severity); 2 unknown (npudoctor could
not tell: a bad option, an internal failure, or the check overran --timeout).  Prints one
line of at most 80 characters."""


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


def _finish(code: int, message: str) -> None:
    sys.stdout.write(shorten(message) + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # also ends a probe thread still running past the deadline


def _work(
    root: Optional[str], commands: bool, severity: str, ignore: List[str], budget: float, out: Dict[str, Any]
) -> None:
    try:
        from npudoctor.cli.commands._common import load_matrix_or_none, snapshot_for
        from npudoctor.cli.request import MachineRequest
        from npudoctor.config import load_ignores
        from npudoctor.engine import Options, evaluate

        options = Options(deadline=time.monotonic() + budget, command_timeout=min(5.0, budget / 3))
        snapshot = snapshot_for(MachineRequest(root=root, no_commands=not commands), options)
        matrix, _err = load_matrix_or_none(None)
        config_ignores, _errs = load_ignores()
        findings = evaluate(snapshot, matrix, options, ignore=list(ignore) + config_ignores)
        levels = ("error",) if severity == "error" else ("error", "warning")
        out["problems"] = [f for f in findings if f.severity in levels and f.code != "HOST099"]
        out["internal"] = [f for f in findings if f.code == "HOST099"]
    except Exception as exc:  # the contract has no traceback: an internal failure is "unknown"
        out["error"] = f"{type(exc).__name__}: {exc}"


def register(app: typer.Typer) -> None:
    @app.command(help=NPD_HELP)
    def npd(
        root: RootOpt = None,
        timeout: Annotated[
            float, typer.Option("--timeout", metavar="SECONDS", help="Answer within this many seconds.")
        ] = 25.0,
        severity: Annotated[
            str,
            typer.Option("--severity", metavar="LEVEL", help="error (default) or warning: what counts as a problem."),
        ] = "error",
        ignore: IgnoreOpt = None,
        no_commands: NoCommandsOpt = False,
    ) -> None:
        if severity not in ("error", "warning"):
            _finish(NPD_UNKNOWN, f"npudoctor npd: --severity {severity}: use error or warning")
        if not timeout > 0:
            _finish(NPD_UNKNOWN, "npudoctor npd: --timeout must be positive")
        if root is not None and not os.path.isdir(root):
            _finish(NPD_UNKNOWN, f"npudoctor npd: --root is not a directory: {root}")
        started = time.monotonic()
        out: Dict[str, Any] = {}
        # Probes get 80 % of the budget; the rest is for rules, the answer and a stuck probe.
        worker = threading.Thread(
            target=_work,
            args=(root, not no_commands, severity, list(ignore or []), max(0.1, timeout * 0.8), out),
            daemon=True,
        )
        worker.start()
        worker.join(max(0.1, timeout - 0.3))
        if worker.is_alive():
            _finish(NPD_UNKNOWN, f"npudoctor: check did not finish within {timeout:g} s")
        if "error" in out:
            _finish(NPD_UNKNOWN, f"npudoctor failed: {out['error']}")
        problems = out.get("problems") or []
        if problems:
            _finish(NPD_PROBLEM, message_for(problems))
        if out.get("internal"):
            _finish(NPD_UNKNOWN, f"npudoctor: a check failed internally ({out['internal'][0].subject})")
        _finish(NPD_OK, f"npudoctor: NPU stack OK ({time.monotonic() - started:.1f} s)")
