"""``npudoctor check`` and ``collect``: probe the machine; ``check`` judges it and prints the
findings (text, JSON, Markdown or Prometheus), ``collect`` writes the snapshot."""

import io
import os
from typing import Any, Dict, List, Optional

import typer

from npudoctor.cli.commands._common import (
    Annotated,
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
    judge,
    load_matrix_or_none,
    load_snapshot,
    machine_request,
    snapshot_for,
    usage_failure,
    warn,
)
from npudoctor.redact import conceal, conceal_text
from npudoctor.report.jsonout import write_json
from npudoctor.session.request import DEFAULT_DEADLINE, Environment, ExitStatus, MachineRequest, UsageError

CHECK_HELP = """Probe the NPU software stack, judge it against the compatibility matrix and
print findings with fix-it commands.

With --workload DIR the project's code and launch scripts are linted too (`npudoctor lint`,
advice by this machine's torch_npu and chip); its findings count like the others.

Exit codes: 0 no errors; 1 errors found (or warnings with --strict); 2 usage error;
3 npudoctor itself failed."""


#: Output names that mean the standard output of npudoctor (never opened, never renamed over).
STDOUT_NAMES = ("-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1")


#: The values of ``--format``.
FORMATS = ("text", "json", "markdown", "prometheus")


def run_check(
    request: MachineRequest,
    env: Environment,
    *,
    markdown: bool = False,
    verbose: bool = False,
    strict: bool = False,
    ignore: Optional[List[str]] = None,
    matrix_path: Optional[str] = None,
    deep: bool = False,
    deep_timeout: float = 120.0,
    probe_master: bool = False,
    prometheus: bool = False,
    quiet: bool = False,
    workload: Optional[List[str]] = None,
) -> ExitStatus:
    """Run a full check, write it to ``env.stdout`` (text, or JSON with ``request.json``,
    Markdown, Prometheus; ``quiet``: the text of the errors and warnings only) and return the exit status (OK/PROBLEMS, decided by
    :func:`npudoctor.report.build.exit_status`).  Raises :class:`UsageError` for bad options
    or unreadable inputs."""
    from npudoctor.config import load_ignore_entries, silenced, unknown_ignores
    from npudoctor.context import Options
    from npudoctor.report.build import document, exit_status

    options = Options(deep=deep, deep_timeout=deep_timeout, probe_master=probe_master, matrix_path=matrix_path)
    if deep and not request.json and env.stderr_isatty:

        def progress(step: str) -> None:
            env.stderr.write(f"  probing {step}…\n")

        options.progress = progress
    config_entries, config_errors = load_ignore_entries(environ=dict(env.environ))
    config_ignores = [code for code, _where in config_entries]
    ignored: List[Any] = []
    snapshot, findings = judge(
        request,
        options,
        environ=env.environ,
        matrix_path=matrix_path,
        ignore=list(ignore or []) + config_ignores,
        ignored=ignored,
        record_matrix=True,
    )
    for err in config_errors:
        warn(env, err)
    if workload:
        findings = findings + _lint_workload(workload, snapshot.facts, findings, ignore, config_ignores, env, request)
    origins = [(code, "--ignore") for code in ignore or []] + config_entries
    for message in unknown_ignores(origins):
        warn(env, message)
    status = exit_status(findings, strict)
    # secrets never leave in any form: --json says a secret is set, not what it is
    if request.json:
        doc = conceal(document(snapshot, findings, strict, silenced(ignored, origins)))
        write_json(env.stdout, doc)
    elif prometheus:
        from npudoctor.report.prometheus import render as render_prom

        env.stdout.write(conceal_text(render_prom(snapshot, findings, status)))
    elif markdown:
        from npudoctor.report.markdown import render as render_md

        env.stdout.write(conceal_text(render_md(snapshot, findings, _product_lines(snapshot, matrix_path))))
    else:
        from npudoctor.report.text import render

        buffer = io.StringIO()
        render(
            snapshot,
            findings,
            verbose=verbose,
            file=buffer,
            color=env.color(),
            width=env.wrap_width(),
            ignored=[f.code for f in ignored],
            quiet=quiet,
            product_lines=_product_lines(snapshot, matrix_path),
        )
        env.stdout.write(conceal_text(buffer.getvalue()))
    return status


def _lint_workload(
    paths: List[str],
    facts: Dict[str, Any],
    findings: List[Any],
    ignore: Optional[List[str]],
    config_ignores: List[str],
    env: Environment,
    request: MachineRequest,
) -> List[Any]:
    """``--workload``: lint the project at ``paths`` with the advice of the machine just judged
    (its torch_npu, its chip's bfloat16, its NPU count); the lint findings, area ``lint``, less
    the ignored codes."""
    from npudoctor.knowledge.codes import lookup
    from npudoctor.lint.machine import advice_from, as_findings
    from npudoctor.lint.run import lint_paths

    advice = advice_from(facts, findings)
    result = lint_paths(paths, torch_npu=advice.torch_npu, no_bf16=advice.no_bf16, npus=advice.npus)
    known = [lookup(code) for code in list(ignore or []) + config_ignores]
    skipped = {c.code for c in known if c is not None}
    if not request.json:
        env.stderr.write(
            f"npudoctor check: linted {result.files} file(s) of the workload ({advice.said}): "
            f"{len(result.findings)} finding(s)\n"
        )
    return [f for f in as_findings(result) if f.code not in skipped]


def check_command(
    env: Environment,
    *,
    root: Optional[str] = None,
    env_file: Optional[str] = None,
    python: Optional[str] = None,
    from_: Optional[str] = None,
    user: Optional[str] = None,
    as_json: bool = False,
    markdown: bool = False,
    verbose: bool = False,
    strict: bool = False,
    ignore: Optional[List[str]] = None,
    no_commands: bool = False,
    matrix: Optional[str] = None,
    deep: bool = False,
    deep_timeout: float = 120.0,
    probe_master: bool = False,
    deadline: float = DEFAULT_DEADLINE,
    fmt: Optional[str] = None,
    quiet: bool = False,
    workload: Optional[List[str]] = None,
) -> ExitStatus:
    """``npudoctor check`` with its options as parsed (keyword names: the Typer command's
    parameters; ``fmt`` is ``--format``): check the combination of the output options, build
    the request and run :func:`run_check`; a :class:`UsageError` is written to ``env.stderr``
    and ends with :attr:`ExitStatus.USAGE`."""
    try:
        if as_json and markdown:
            raise UsageError("--json and --markdown are mutually exclusive")
        if fmt is not None:
            if fmt not in FORMATS:
                raise UsageError(f"--format {fmt}: use text, json, markdown or prometheus")
            if as_json or markdown:
                raise UsageError("--format cannot be combined with --json or --markdown")
            as_json, markdown = fmt == "json", fmt == "markdown"
        if quiet and (as_json or markdown or fmt not in (None, "text")):
            raise UsageError(
                "--quiet shortens the text report; it cannot be combined with --json, --markdown or --format"
            )
        if quiet and verbose:
            raise UsageError("--quiet and --verbose are mutually exclusive")
        missing = [p for p in workload or [] if not os.path.isdir(p)]
        if missing:
            raise UsageError(f"--workload {missing[0]}: not a directory")
        request = machine_request(root, python, user, env_file, no_commands, from_, as_json, deadline)
        return run_check(
            request,
            env,
            markdown=markdown,
            verbose=verbose,
            strict=strict,
            ignore=ignore,
            matrix_path=matrix,
            deep=deep,
            deep_timeout=deep_timeout,
            probe_master=probe_master,
            prometheus=fmt == "prometheus",
            quiet=quiet,
            workload=workload,
        )
    except UsageError as exc:
        return usage_failure(str(exc), env)


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
    from npudoctor.context import Options
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


def register(app: typer.Typer) -> None:
    """Add ``check`` and ``collect`` to ``app``."""
    _register_check(app)
    _register_collect(app)


def _register_check(app: typer.Typer) -> None:
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
        quiet: Annotated[
            bool,
            typer.Option(
                "--quiet",
                "-q",
                help="Print only the errors and warnings with their fixes: no headline, summary or notes "
                "(a clean run prints nothing); the exit code is the same.",
            ),
        ] = False,
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
        workload: Annotated[
            Optional[List[str]],
            typer.Option(
                "--workload",
                metavar="DIR",
                help="Also lint the project in DIR for CUDA-isms (as `npudoctor lint`, with this machine's "
                "facts); its findings join the report under 'lint'. Repeatable.",
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
            quiet=quiet,
            workload=workload,
        )
        raise typer.Exit(code)


def _register_collect(app: typer.Typer) -> None:
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


def _product_lines(snapshot: Any, matrix_path: Optional[str]) -> Dict[str, str]:
    """The official product line of each chip name of the snapshot, from the matrix the
    judgement used (loaded once per process); ``{}`` without a matrix."""
    from npudoctor.facts import Facts
    from npudoctor.knowledge.chips import product_lines
    from npudoctor.session.machine import load_matrix_or_none

    matrix, _why = load_matrix_or_none(matrix_path)
    return product_lines(matrix, Facts(snapshot.facts).devices.chips)
