"""``npudoctor compare SNAPSHOT…``: drift across the nodes of a cluster."""

import io
from typing import Any, Dict, List, Optional

import typer

from npudoctor.cli.commands._common import Annotated, JsonOpt, environment, fail_usage
from npudoctor.report.jsonout import write_json
from npudoctor.session.request import Environment, ExitStatus, UsageError

COMPARE_HELP = """Compare the snapshots of several nodes (written by `npudoctor collect`).  It
shows one stack fingerprint per node (Python, torch, torch_npu, CANN toolkit/kernels/NNAL, driver,
firmware, chips, HCCL and visibility variables), the majority, and each node that differs.

SNAPSHOT may be a file (one snapshot, or JSON lines), a directory (its *.json and *.jsonl
files) or `-` for JSON lines on standard input (the default when no path is given and
input is piped).  Nodes are named by the snapshot's node label (host name, or its stable
pseudonym when redacted).

Every machine counts once: a file given twice is read once, and snapshots sharing a node
label are one node. If their stacks are identical this is only noted; if they differ the
newest snapshot stands for the node, the differences are listed and it counts as drift (a
stale snapshot, or two machines with one host name).

Exit codes: 0 no drift; 1 drift found (or a snapshot could not be read); 2 usage error."""


def status(report: Dict[str, Any]) -> ExitStatus:
    """The exit status of ``compare``: PROBLEMS on drift (or an unreadable snapshot)."""
    return ExitStatus.PROBLEMS if report["drift"] else ExitStatus.OK


def run_compare(env: Environment, paths: List[str], as_json: bool = False, limit: int = 50) -> ExitStatus:
    """Compare the snapshots in ``paths`` (none, or ``-``: JSON lines on ``env.stdin``),
    write the report (text, or JSON) to ``env.stdout`` and return the exit status.
    Raises :class:`UsageError` for a missing path, no input or no snapshot at all."""
    from npudoctor.cluster.compare import compare_inputs
    from npudoctor.cluster.inputs import CompareInputError
    from npudoctor.snapshot import SNAPSHOT_LIMIT

    stdin: Optional[Any] = None
    if not paths and env.stdin_isatty:
        raise UsageError("give snapshot files or a directory, or pipe JSON lines on stdin")
    if not paths or "-" in paths:
        # one byte past the cap is enough to refuse it (never the whole of a pipe)
        stdin = io.StringIO(env.stdin.read(SNAPSHOT_LIMIT + 1).decode("utf-8", errors="replace"))
    try:
        report = compare_inputs(paths, stdin=stdin)
    except CompareInputError as exc:
        raise UsageError(str(exc)) from None
    if report["nodes"] == 0 and not report["unreadable"]:
        raise UsageError("no snapshot found in the input")
    if as_json:
        write_json(env.stdout, report)
    else:
        from npudoctor.report.compare import render

        env.stdout.write(render(report, limit=max(1, limit)))
    return status(report)


def register(app: typer.Typer) -> None:
    @app.command(help=COMPARE_HELP)
    def compare(
        ctx: typer.Context,
        snapshots: Annotated[
            Optional[List[str]], typer.Argument(metavar="SNAPSHOT...", help="Files, directories or '-'.")
        ] = None,
        as_json: JsonOpt = False,
        limit: Annotated[int, typer.Option("--limit", metavar="N", help="Nodes listed in full in text output.")] = 50,
    ) -> None:
        env = environment(ctx)
        try:
            code = run_compare(env, list(snapshots or []), as_json=as_json, limit=limit)
        except UsageError as exc:
            raise fail_usage(str(exc), env) from None
        raise typer.Exit(code)
