"""``npudoctor check``, ``collect`` and ``explain`` (the Typer registration; check's work is
:func:`npudoctor.cli.check.check_command`, explain's :func:`npudoctor.cli.explain.run_explain`,
both Typer-free so that :mod:`npudoctor.cli.fast` runs the same functions)."""

from typing import Optional

import typer
from typing_extensions import Annotated

from npudoctor.cli import explain as explain_page
from npudoctor.cli.check import check_command
from npudoctor.cli.commands._common import (
    DeadlineOpt,
    EnvFileOpt,
    FromOpt,
    IgnoreOpt,
    JsonOpt,
    MatrixOpt,
    NoCommandsOpt,
    PythonOpt,
    RootOpt,
    UserOpt,
    VerboseOpt,
    environment,
    fail_usage,
    load_matrix_or_none,
    load_snapshot,
    machine_request,
    snapshot_for,
)
from npudoctor.cli.request import DEFAULT_DEADLINE, Environment, ExitStatus, MachineRequest, UsageError
from npudoctor.redact import conceal

CHECK_HELP = """Probe the NPU software stack, judge it against the compatibility matrix and
print findings with fix-it commands.

Exit codes: 0 no errors; 1 errors found (or warnings with --strict); 2 usage error;
3 npudoctor itself failed."""


#: Output names that mean the standard output of npudoctor (never opened, never renamed over).
STDOUT_NAMES = ("-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1")


def collect_snapshot(
    request: MachineRequest,
    env: Environment,
    output: Optional[str],
    redact: bool = True,
    matrix_path: Optional[str] = None,
) -> ExitStatus:
    """``collect``: probe the machine (or, with ``--from``, re-read a snapshot or a ``check
    --json`` document: its facts, target and matrix stamp are kept) and write the snapshot,
    redacted unless ``redact`` is false, to ``output`` (``-`` or ``request.json``: to
    ``env.stdout``).  Returns OK; raises :class:`UsageError` for bad options or an
    unwritable output."""
    from npudoctor.engine import Options
    from npudoctor.snapshot import atomic_write
    from npudoctor.snapshot import redact as redact_snapshot

    if request.json and output not in (None, *STDOUT_NAMES):
        raise UsageError("--json writes the snapshot to standard output; it cannot be combined with --output FILE")
    if not request.json and output is None:
        raise UsageError("give --output FILE ('-' or --json: standard output)")
    if request.from_file:
        snapshot = load_snapshot(request.from_file)
    else:
        snapshot = snapshot_for(request, Options(), environ=env.environ)
        loaded, error = load_matrix_or_none(matrix_path)
        snapshot.matrix = dict(loaded.provenance) if loaded is not None else {"error": error}
    if redact:
        snapshot = redact_snapshot(snapshot)
    else:  # personal data kept as asked; secrets never
        snapshot.facts, snapshot.target = conceal(snapshot.facts), conceal(snapshot.target)
    text = snapshot.to_json() + "\n"
    if request.json or output in STDOUT_NAMES:
        env.stdout.write(text)
        return ExitStatus.OK
    assert output is not None
    try:
        atomic_write(output, text, named=True)
    except OSError as exc:
        raise UsageError(f"cannot write {output}: {exc.strerror or exc}") from None
    env.stderr.write(f"snapshot written to {output}\n")
    return ExitStatus.OK


COLLECT_HELP = """Write the snapshot (all facts, no judgement) to a file for `check --from`,
`compare` and `plan`.  Every machine option applies as in `check` (--user records that
account's identity, --env-file that environment, --no-commands runs no npu-smi).  --json
writes the snapshot to standard output (the same as `-o -`); --from FILE re-writes a
snapshot or a `check --json` document as a plain snapshot (redacted unless --no-redact),
e.g. to share one that was written with --no-redact.

Exit codes: 0 written; 2 usage error; 3 npudoctor failed."""

EXPLAIN_HELP = """Explain a finding code (or name): what it means, why it matters, how to fix it.

Exit codes: 0 shown; 2 unknown code or usage error."""


def register(app: typer.Typer) -> None:
    @app.command(help=CHECK_HELP)
    def check(
        ctx: typer.Context,
        root: RootOpt = None,
        env_file: EnvFileOpt = None,
        python: PythonOpt = None,
        from_: FromOpt = None,
        user: UserOpt = None,
        as_json: JsonOpt = False,
        markdown: Annotated[bool, typer.Option("--markdown", help="Print a redacted Markdown report.")] = False,
        verbose: VerboseOpt = False,
        strict: Annotated[bool, typer.Option("--strict", help="Exit 1 on warnings too.")] = False,
        ignore: IgnoreOpt = None,
        no_commands: NoCommandsOpt = False,
        matrix: MatrixOpt = None,
        deep: Annotated[
            bool, typer.Option("--deep", help="Also import torch/torch_npu in a child process and try a tensor op.")
        ] = False,
        deep_timeout: Annotated[
            float, typer.Option("--deep-timeout", metavar="SECONDS", help="Deadline of the deep probe.")
        ] = 120.0,
        probe_master: Annotated[
            bool, typer.Option("--probe-master", help="Try one TCP connect to MASTER_ADDR:MASTER_PORT.")
        ] = False,
        deadline: DeadlineOpt = DEFAULT_DEADLINE,
        fmt: Annotated[
            Optional[str],
            typer.Option(
                "--format",
                metavar="FORMAT",
                help="text, json, markdown or prometheus (node_exporter textfile collector).",
            ),
        ] = None,
    ) -> None:
        code = check_command(
            environment(ctx),
            root=root,
            env_file=env_file,
            python=python,
            from_=from_,
            user=user,
            as_json=as_json,
            markdown=markdown,
            verbose=verbose,
            strict=strict,
            ignore=ignore,
            no_commands=no_commands,
            matrix=matrix,
            deep=deep,
            deep_timeout=deep_timeout,
            probe_master=probe_master,
            deadline=deadline,
            fmt=fmt,
        )
        raise typer.Exit(code)

    @app.command(help=COLLECT_HELP)
    def collect(
        ctx: typer.Context,
        output: Annotated[
            Optional[str], typer.Option("--output", "-o", metavar="FILE", help="Where to write ('-' = stdout).")
        ] = None,
        root: RootOpt = None,
        env_file: EnvFileOpt = None,
        python: PythonOpt = None,
        from_: FromOpt = None,
        user: UserOpt = None,
        as_json: Annotated[
            bool, typer.Option("--json", help="Write the snapshot (JSON) to standard output, as `-o -`.")
        ] = False,
        no_commands: NoCommandsOpt = False,
        redact_: Annotated[
            bool, typer.Option("--redact/--no-redact", help="Remove host names, user names, IPs (default on).")
        ] = True,
        matrix: MatrixOpt = None,
        deadline: DeadlineOpt = DEFAULT_DEADLINE,
    ) -> None:
        env = environment(ctx)
        try:
            request = machine_request(root, python, user, env_file, no_commands, from_, as_json, deadline)
            if from_ and matrix:
                raise UsageError("--matrix stamps a new snapshot; --from keeps the snapshot's own matrix stamp")
            code = collect_snapshot(request, env, output, redact=redact_, matrix_path=matrix)
        except UsageError as exc:
            raise fail_usage(str(exc), env) from None
        raise typer.Exit(code)

    @app.command(help=EXPLAIN_HELP)
    def explain(
        ctx: typer.Context,
        code: Annotated[Optional[str], typer.Argument(help="A code such as PKG001, or its name.")] = None,
        list_: Annotated[bool, typer.Option("--list", help="List every code.")] = False,
        as_json: JsonOpt = False,
    ) -> None:
        env = environment(ctx)
        try:
            status = explain_page.run_explain(env, code, list_=list_, as_json=as_json)
        except UsageError as exc:
            raise fail_usage(str(exc), env) from None
        raise typer.Exit(status)
