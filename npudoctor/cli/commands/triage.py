"""``npudoctor triage LOG...``: explain the errors in logs with the facts of this machine."""

import os
from typing import Any, Dict, List, Optional, Tuple

import typer

from npudoctor.cli.commands._common import (
    Annotated,
    EnvFileOpt,
    FromOpt,
    JsonOpt,
    MatrixOpt,
    NoCommandsOpt,
    PythonOpt,
    RootOpt,
    UserOpt,
    environment,
    fail_usage,
    judge,
    machine_request,
)
from npudoctor.host import open_regular
from npudoctor.report.jsonout import write_json
from npudoctor.session.request import Environment, ExitStatus, MachineRequest, UsageError

TRIAGE_HELP = """Find the known error signatures in logs and rank the likely causes of each.
The logs: training/inference output, CANN plog files or directories of them, a pasted
traceback ('-' reads stdin); repeats are grouped, and causes are ranked by the facts of this
machine (or of --root DIR / --python PATH / --from SNAPSHOT). Error-looking lines that match no known signature are listed as unknown.
Logs are streamed: memory stays constant however large they are. Logs compressed with
gzip, xz or bzip2 (app.log.gz, plog-*.log.xz) are read as streams; a binary file is named
as skipped, a truncated or corrupt archive as read up to the damage.

Run live on a machine with no Ascend stack (no CANN, driver, torch_npu or NPU device) and
without --root/--from/--python, triage does not judge the causes with this machine's facts
(the log came from another machine): they are listed unranked ("ranked": false,
"unranked": "no-npu-stack" in --json); give that machine's facts with --from/--root.

--env-file judges the workload environment of that file (its HCCL and visibility
variables) instead of this shell's; --user judges device access for that account;
--no-commands runs no npu-smi; --no-facts probes nothing (no machine option then).

Exit codes: 0 no known error found (noise, warnings and unknown lines do not count);
1 known errors found; 2 usage error (unreadable log: missing, not permitted, or no input a
text log; bad options)."""


def _facts(
    request: MachineRequest, env: Environment, no_facts: bool, matrix_path: Optional[str]
) -> Tuple[Dict[str, Any], List[Any], str, Optional[str]]:
    """``(facts, findings, mode, unranked)`` for ranking; raises :class:`UsageError`.

    ``unranked`` is ``None`` when the facts may judge the causes, else why they may not:
    ``"no-facts"`` (``--no-facts``) or ``"no-npu-stack"`` -- a live run (no ``--root``,
    ``--from`` or ``--python``) on a machine where
    :func:`npudoctor.rules.overview.npu_stack_present` finds nothing NPU-related.  Such a
    log came from another machine: this one's numpy or container state says nothing
    about it, so no fact of this machine is used (only what the log itself says).
    ``findings`` are the rule findings on ``facts`` (:func:`npudoctor.engine.evaluate`): the
    only judge of the causes; the workload environment judged is the ``--env-file``'s, else
    ``env.environ`` (with ``--from`` the snapshot's facts hold it).
    """
    if no_facts:
        return {}, [], "none", "no-facts"
    from npudoctor.context import Options
    from npudoctor.rules.overview import npu_stack_present

    options = Options()
    mode = "from" if request.from_file else ("root" if request.root else ("python" if request.python else "live"))
    live = mode == "live"
    snapshot, findings = judge(
        request,
        options,
        environ=env.environ,
        matrix_path=matrix_path,
        worth_judging=npu_stack_present if live else None,
    )
    if live and not npu_stack_present(snapshot):
        return {}, [], mode, "no-npu-stack"
    return snapshot.facts, findings, mode, None


def run_triage(
    logs: List[str],
    request: MachineRequest,
    env: Optional[Environment] = None,
    *,
    no_facts: bool = False,
    matrix_path: Optional[str] = None,
) -> ExitStatus:
    """Scan ``logs`` (``-``: ``env.stdin``) and write the result (text, or JSON with
    ``request.json``) to ``env.stdout`` (default: the process's surroundings); returns the
    exit status (PROBLEMS when a known error was found, USAGE when no input is a text log:
    every one was skipped as binary; an empty log is read, and finds nothing).  Raises :class:`UsageError` for
    unreadable logs or bad options."""
    from npudoctor.report.triage import PROGRESS_MIN_BYTES, ProgressLine, conceal_result, render_text
    from npudoctor.triage import Scanner, iter_log_files, load_kb, rank

    env = env if env is not None else Environment.from_process()
    files: List[str] = []
    for log in logs:
        if log == "-":
            files.append("-")
            continue
        if not os.path.exists(log):
            raise UsageError(f"{log}: no such file or directory")
        found = iter_log_files(log)
        if os.path.isdir(log) and not found:
            raise UsageError(f"{log}: no log files in this directory")
        files.extend(found)
    for path in files:
        if path != "-" and not os.access(path, os.R_OK):
            raise UsageError(f"{path}: permission denied")
    facts, findings, mode, unranked = _facts(request, env, no_facts, matrix_path)
    scanner = Scanner(load_kb())
    for path in files:
        if path == "-":
            scanner.feed("<stdin>", env.stdin)
            continue
        try:
            with open_regular(path, pipes=path in logs) as fh:
                size = os.fstat(fh.fileno()).st_size
                bar = (
                    ProgressLine(env.stderr, path, size, env.clock, env.width)
                    if env.stderr_isatty and size >= PROGRESS_MIN_BYTES
                    else None
                )
                try:
                    scanner.feed(path, fh, bar)
                finally:
                    if bar is not None:
                        bar.done()
        except OSError as exc:
            raise UsageError(f"{path}: {exc.strerror or exc}") from None
    result = rank(scanner, findings, facts)
    result["facts_from"] = mode
    result["ranked"] = unranked is None
    result["unranked"] = unranked
    # Sections of the facts that could not be read (wrong-typed values, a section that is
    # not an object): said as check says it (HOST005), so that "no sign of it here" is
    # never read as a conclusion drawn from facts that were dropped.
    result["facts_unreadable"] = [
        {"code": f.code, "title": f.title, "evidence": list(f.evidence)} for f in findings if f.code == "HOST005"
    ]
    result = conceal_result(result)  # log lines quoted may carry tokens and passwords
    status = ExitStatus.PROBLEMS if result["summary"]["known_errors"] else ExitStatus.OK
    if all(src.get("skipped") for src in result["sources"]):
        # no input is a text log (each one binary): nothing could be read, the help's
        # "unreadable log" -- the report still names each input and why it was skipped
        status = ExitStatus.USAGE
    if request.json:
        from npudoctor import __version__

        doc = {"schema_version": 1, "npudoctor_version": __version__, "exit_code": int(status)}
        doc.update(result)
        write_json(env.stdout, doc)
    else:
        render_text(result, env.stdout, env.wrap_width())
    return status


def register(app: typer.Typer) -> None:
    @app.command(help=TRIAGE_HELP)
    def triage(
        ctx: typer.Context,
        logs: Annotated[List[str], typer.Argument(metavar="LOG...", help="Log files, directories of logs, or '-'.")],
        root: RootOpt = None,
        env_file: EnvFileOpt = None,
        python: PythonOpt = None,
        from_: FromOpt = None,
        user: UserOpt = None,
        as_json: JsonOpt = False,
        no_commands: NoCommandsOpt = False,
        matrix: MatrixOpt = None,
        no_facts: Annotated[
            bool, typer.Option("--no-facts", help="Do not probe the machine: explain the signatures only.")
        ] = False,
    ) -> None:
        env = environment(ctx)
        try:
            request = machine_request(root, python, user, env_file, no_commands, from_, as_json)
            if no_facts:
                given = [
                    name
                    for name, value in (
                        ("--root", root),
                        ("--python", python),
                        ("--user", user),
                        ("--env-file", env_file),
                        ("--no-commands", no_commands),
                        ("--from", from_),
                        ("--matrix", matrix),
                    )
                    if value
                ]
                if given:
                    raise UsageError(f"--no-facts gathers no facts; it cannot be combined with {' or '.join(given)}")
            code = run_triage(logs, request, env, no_facts=no_facts, matrix_path=matrix)
        except UsageError as exc:
            raise fail_usage(str(exc), env) from None
        raise typer.Exit(code)
