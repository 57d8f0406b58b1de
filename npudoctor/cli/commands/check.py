"""``npudoctor check``, ``collect`` and ``explain``."""

import json
import sys
from typing import List, Optional

import typer
from typing_extensions import Annotated

from npudoctor.cli.commands._common import (
    EnvFileOpt,
    FromOpt,
    IgnoreOpt,
    JsonOpt,
    MatrixOpt,
    NoCommandsOpt,
    PythonOpt,
    RootOpt,
    Target,
    UsageError,
    UserOpt,
    VerboseOpt,
    fail_usage,
    load_matrix_or_none,
    snapshot_for,
)

CHECK_HELP = """Probe the NPU software stack, judge it against the compatibility matrix and
print findings with fix-it commands.

Exit codes: 0 no errors; 1 errors found (or warnings with --strict); 2 usage error;
3 npudoctor itself failed."""


def run_check(
    target: Target,
    *,
    as_json: bool = False,
    markdown: bool = False,
    verbose: bool = False,
    strict: bool = False,
    ignore: Optional[List[str]] = None,
    matrix_path: Optional[str] = None,
    deep: bool = False,
    deep_timeout: float = 120.0,
    probe_master: bool = False,
    prometheus: bool = False,
) -> int:
    """Run a full check and print it; returns the exit code (0/1).  Raises
    :class:`UsageError` for bad options or unreadable inputs."""
    from npudoctor.config import load_ignores
    from npudoctor.engine import Options, evaluate
    from npudoctor.report.build import document, exit_code

    options = Options(deep=deep, deep_timeout=deep_timeout, probe_master=probe_master, matrix_path=matrix_path)
    if deep and not as_json and sys.stderr.isatty():
        options.progress = lambda step: print(f"  probing {step}…", file=sys.stderr)
    snapshot = snapshot_for(target, options)
    matrix, matrix_error = load_matrix_or_none(matrix_path)
    if matrix is not None:
        snapshot.matrix = dict(matrix.provenance)
    else:
        snapshot.matrix = {"error": matrix_error}
    config_ignores, config_errors = load_ignores()
    for err in config_errors:
        print(f"npudoctor: {err}", file=sys.stderr)
    findings = evaluate(snapshot, matrix, options, ignore=list(ignore or []) + config_ignores)
    from npudoctor.knowledge.codes import lookup

    for code in list(ignore or []) + config_ignores:
        if lookup(code) is None:
            print(f"npudoctor: --ignore {code}: no such finding code (see `npudoctor explain --list`)", file=sys.stderr)
    code = exit_code(findings, strict)
    if as_json:
        print(json.dumps(document(snapshot, findings, strict), indent=2, ensure_ascii=False))
    elif prometheus:
        from npudoctor.report.prometheus import render as render_prom

        sys.stdout.write(render_prom(snapshot, findings, code))
    elif markdown:
        from npudoctor.report.markdown import render as render_md

        sys.stdout.write(render_md(snapshot, findings))
    else:
        from npudoctor.report.text import render

        render(snapshot, findings, verbose=verbose)
    return code


def register(app: typer.Typer) -> None:
    @app.command(help=CHECK_HELP)
    def check(
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
        fmt: Annotated[
            Optional[str],
            typer.Option(
                "--format",
                metavar="FORMAT",
                help="text, json, markdown or prometheus (node_exporter textfile collector).",
            ),
        ] = None,
    ) -> None:
        target = Target(
            root=root, python=python, from_file=from_, user=user, commands=not no_commands, env_file=env_file
        )
        if as_json and markdown:
            raise fail_usage("--json and --markdown are mutually exclusive")
        if fmt is not None:
            if fmt not in ("text", "json", "markdown", "prometheus"):
                raise fail_usage(f"--format {fmt}: use text, json, markdown or prometheus")
            if as_json or markdown:
                raise fail_usage("--format cannot be combined with --json or --markdown")
            as_json, markdown = fmt == "json", fmt == "markdown"
        try:
            code = run_check(
                target,
                as_json=as_json,
                markdown=markdown,
                verbose=verbose,
                strict=strict,
                ignore=ignore,
                matrix_path=matrix,
                deep=deep,
                deep_timeout=deep_timeout,
                probe_master=probe_master,
                prometheus=fmt == "prometheus",
            )
        except UsageError as exc:
            raise fail_usage(str(exc)) from None
        raise typer.Exit(code)

    @app.command(
        help="Write the snapshot (all facts, no judgement) to a file for `check --from`, "
        "`compare` and `plan`.\n\nExit codes: 0 written; 2 usage error; 3 npudoctor failed."
    )
    def collect(
        output: Annotated[str, typer.Option("--output", "-o", metavar="FILE", help="Where to write ('-' = stdout).")],
        root: RootOpt = None,
        env_file: EnvFileOpt = None,
        python: PythonOpt = None,
        user: UserOpt = None,
        no_commands: NoCommandsOpt = False,
        redact_: Annotated[
            bool, typer.Option("--redact/--no-redact", help="Remove host names, user names, IPs (default on).")
        ] = True,
        matrix: MatrixOpt = None,
    ) -> None:
        from npudoctor.engine import Options
        from npudoctor.snapshot import atomic_write, redact

        target = Target(root=root, python=python, user=user, commands=not no_commands, env_file=env_file)
        try:
            snapshot = snapshot_for(target, Options())
            loaded, error = load_matrix_or_none(matrix)
        except UsageError as exc:
            raise fail_usage(str(exc)) from None
        snapshot.matrix = dict(loaded.provenance) if loaded is not None else {"error": error}
        if redact_:
            snapshot = redact(snapshot)
        text = snapshot.to_json() + "\n"
        if output == "-":
            sys.stdout.write(text)
        else:
            try:
                atomic_write(output, text)
            except OSError as exc:
                raise fail_usage(f"cannot write {output}: {exc.strerror or exc}") from None
            print(f"snapshot written to {output}", file=sys.stderr)

    @app.command(
        help="Explain a finding code (or name): what it means, why it matters, how to fix it.\n\n"
        "Exit codes: 0 shown; 2 unknown code or usage error."
    )
    def explain(
        code: Annotated[Optional[str], typer.Argument(help="A code such as PKG001, or its name.")] = None,
        list_: Annotated[bool, typer.Option("--list", help="List every code.")] = False,
        as_json: JsonOpt = False,
    ) -> None:
        from npudoctor.knowledge.codes import all_codes, lookup

        if list_:
            codes = all_codes()
            if as_json:
                print(json.dumps([_code_dict(c) for c in codes], indent=2, ensure_ascii=False))
            else:
                for c in codes:
                    print(f"{c.code:8} {c.severity:8} {c.name:40} {c.title}")
            return
        if not code:
            raise fail_usage("give a CODE, or --list")
        found = lookup(code)
        if found is None:
            raise fail_usage(f"unknown finding code {code!r}; see `npudoctor explain --list`")
        if as_json:
            print(json.dumps(_code_dict(found), indent=2, ensure_ascii=False))
            return
        print(f"{found.code} {found.name} ({found.severity}, area {found.area})")
        print(found.title)
        if found.kinds:
            print(f"root-cause kinds: {', '.join(found.kinds)}")
        print()
        print(found.explain.strip())


def _code_dict(c: object) -> dict:
    return {
        "code": c.code,  # type: ignore[attr-defined]
        "name": c.name,  # type: ignore[attr-defined]
        "area": c.area,  # type: ignore[attr-defined]
        "severity": c.severity,  # type: ignore[attr-defined]
        "title": c.title,  # type: ignore[attr-defined]
        "kinds": list(c.kinds),  # type: ignore[attr-defined]
        "explain": c.explain,  # type: ignore[attr-defined]
    }
