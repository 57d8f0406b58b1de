"""``npudoctor compare SNAPSHOT…``: drift across the nodes of a cluster."""

import json
import sys
from typing import List, Optional

import typer
from typing_extensions import Annotated

from npudoctor.cli.commands._common import JsonOpt, fail_usage

COMPARE_HELP = """Compare the snapshots of several nodes (written by `npudoctor collect`): one
stack fingerprint per node (Python, torch, torch_npu, CANN toolkit/kernels/NNAL, driver,
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


def register(app: typer.Typer) -> None:
    @app.command(help=COMPARE_HELP)
    def compare(
        snapshots: Annotated[
            Optional[List[str]], typer.Argument(metavar="SNAPSHOT...", help="Files, directories or '-'.")
        ] = None,
        as_json: JsonOpt = False,
        limit: Annotated[int, typer.Option("--limit", metavar="N", help="Nodes listed in full in text output.")] = 50,
    ) -> None:
        from npudoctor.cluster.compare import CompareInputError, iter_inputs, render_text
        from npudoctor.cluster.compare import compare as run_compare

        paths = list(snapshots or [])
        stdin = None
        if not paths:
            if sys.stdin is None or sys.stdin.isatty():
                raise fail_usage("give snapshot files or a directory, or pipe JSON lines on stdin")
            stdin = sys.stdin
        elif "-" in paths:
            stdin = sys.stdin
        try:
            report = run_compare(iter_inputs(paths, stdin=stdin))
        except CompareInputError as exc:
            raise fail_usage(str(exc)) from None
        if report["nodes"] == 0 and not report["unreadable"]:
            raise fail_usage("no snapshot found in the input")
        if as_json:
            sys.stdout.write(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
        else:
            sys.stdout.write(render_text(report, limit=max(1, limit)))
        raise typer.Exit(1 if report["drift"] else 0)
