"""``npudoctor check`` without Typer: probe, judge, report.  The Typer command
(:mod:`npudoctor.cli.commands.check`) and the fast path (:mod:`npudoctor.cli.fast`) both run
:func:`check_command`.
"""

from __future__ import annotations

import io
import json
from typing import Any, Dict, List, Optional

from npudoctor.cli.machine import load_matrix_or_none, machine_request, snapshot_for, usage_failure, warn
from npudoctor.cli.request import DEFAULT_DEADLINE, Environment, ExitStatus, MachineRequest, UsageError
from npudoctor.redact import conceal, conceal_text

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
) -> ExitStatus:
    """Run a full check, write it to ``env.stdout`` (text, or JSON with ``request.json``,
    Markdown, Prometheus) and return the exit status (OK/PROBLEMS, decided by
    :func:`npudoctor.report.build.exit_status`).  Raises :class:`UsageError` for bad options
    or unreadable inputs."""
    from npudoctor.config import load_ignore_entries
    from npudoctor.engine import Options, evaluate
    from npudoctor.knowledge.codes import lookup
    from npudoctor.report.build import document, exit_status

    options = Options(deep=deep, deep_timeout=deep_timeout, probe_master=probe_master, matrix_path=matrix_path)
    if deep and not request.json and env.stderr_isatty:

        def progress(step: str) -> None:
            env.stderr.write(f"  probing {step}…\n")

        options.progress = progress
    snapshot = snapshot_for(request, options, environ=env.environ)
    matrix, matrix_error = load_matrix_or_none(matrix_path)
    if matrix is not None:
        snapshot.matrix = dict(matrix.provenance)
    else:
        snapshot.matrix = {"error": matrix_error}
    config_entries, config_errors = load_ignore_entries(environ=dict(env.environ))
    config_ignores = [code for code, _where in config_entries]
    for err in config_errors:
        warn(env, err)
    ignored: List[Any] = []
    findings = evaluate(snapshot, matrix, options, ignore=list(ignore or []) + config_ignores, ignored=ignored)
    origins = [(code, "--ignore") for code in ignore or []] + config_entries
    for code, where in origins:
        if lookup(code) is None:
            what = f"--ignore {code}" if where == "--ignore" else f"{where}: ignore {code!r}"
            warn(env, f"{what}: no such finding code (see `npudoctor explain --list`)")
    status = exit_status(findings, strict)
    # secrets never leave in any form: --json says a secret is set, not what it is
    if request.json:
        by: Dict[str, str] = {}
        for code, where in reversed(origins):  # the first entry naming a code says why
            known = lookup(code)
            by[known.code if known is not None else code] = where
        silenced = [{"code": f.code, "title": f.title, "by": by.get(f.code, "--ignore")} for f in ignored]
        doc = conceal(document(snapshot, findings, strict, silenced))
        env.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    elif prometheus:
        from npudoctor.report.prometheus import render as render_prom

        env.stdout.write(conceal_text(render_prom(snapshot, findings, status)))
    elif markdown:
        from npudoctor.report.markdown import render as render_md

        env.stdout.write(conceal_text(render_md(snapshot, findings)))
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
        )
        env.stdout.write(conceal_text(buffer.getvalue()))
    return status


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
        )
    except UsageError as exc:
        return usage_failure(str(exc), env)
