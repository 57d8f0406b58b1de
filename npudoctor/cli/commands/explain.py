"""``npudoctor explain``: what a finding code, root-cause kind, triage signature or error
code means."""

import json
from typing import TYPE_CHECKING, Any, Dict, Optional

import typer

from npudoctor.cli.commands._common import Annotated, JsonOpt, environment, fail_usage
from npudoctor.session.request import Environment, ExitStatus, UsageError

if TYPE_CHECKING:
    from npudoctor.findings import Code

EXPLAIN_HELP = """Explain a finding code (or name): what it means, why it matters, how to fix it.

Exit codes: 0 shown; 2 unknown code or usage error."""


def run_explain(env: Environment, code: Optional[str], list_: bool = False, as_json: bool = False) -> ExitStatus:
    """``explain``: write one code (or, with ``list_``, every code) to ``env.stdout``.
    Returns OK; raises :class:`UsageError` for no code or an unknown one."""
    from npudoctor.knowledge.codes import all_codes, lookup

    out = env.stdout
    if list_:
        codes = all_codes()
        if as_json:
            out.write(json.dumps([_code_dict(c) for c in codes], indent=2, ensure_ascii=False) + "\n")
        else:
            for c in codes:
                out.write(f"{c.code:8} {c.severity:8} {c.name:40} {c.title}\n")
        return ExitStatus.OK
    if not code:
        raise UsageError("give a CODE, or --list")
    found = lookup(code)
    if found is None:
        return _explain_triage_label(env, code, as_json)
    if as_json:
        out.write(json.dumps(_code_dict(found), indent=2, ensure_ascii=False) + "\n")
        return ExitStatus.OK
    title = _wrapped(env, found.title)
    out.write(f"{found.code} {found.name} ({found.severity}, area {found.area})\n{title}\n")
    if found.kinds:
        out.write("root-cause kinds (see `npudoctor explain KIND`):\n")
        for kind in found.kinds:
            title = _wrapped(env, _kind_title(kind), first=len(kind) + 4, indent=len(kind) + 4)
            out.write(f"  {kind}  {title}\n")
    text = "\n\n".join(_wrapped(env, p) for p in found.explain.strip().split("\n\n"))
    out.write(f"\n{text}\n")
    return ExitStatus.OK


def _wrapped(env: Environment, text: str, first: int = 0, indent: int = 0) -> str:
    """``text`` wrapped to the terminal (or ``COLUMNS``); unchanged when piped without it."""
    width = env.wrap_width()
    if not width:
        return text
    from npudoctor.report.wrapping import wrap

    return "\n".join(wrap(text, width, first=first, indent=indent))


def _kind_title(kind: str) -> str:
    """The name of a root-cause kind (``K16`` → "container / Kubernetes device plumbing …"),
    so a kind label is never printed without it."""
    from npudoctor.knowledge.kinds import kind_titles

    return kind_titles().get(kind, "(no description)")


def _explain_triage_label(env: Environment, name: str, as_json: bool) -> ExitStatus:
    """``explain`` of a label triage prints: a root-cause kind (K10), a signature id, an error
    code (507033, EZ9999, ERR02005, hccl:6).  Raises :class:`UsageError` when it is none."""
    from npudoctor.knowledge.signatures import load_kb

    page = load_kb().explain(name)
    if page is None:
        raise UsageError(
            f"unknown code {name!r}: not a finding code, root-cause kind, triage signature or error code; "
            "see `npudoctor explain --list`"
        )
    out = env.stdout
    if as_json:
        out.write(json.dumps(page, indent=2, ensure_ascii=False) + "\n")
        return ExitStatus.OK
    out.write(f"{page['name']} ({page['what']})\n{page['title']}\n\n{page['explain'].strip()}\n")
    if page["entry"] and page["entry"] != page["name"]:
        out.write(f"triage signature: {page['entry']}\n")
    if page.get("lint"):
        out.write(f"found in the code by `npudoctor lint`: {', '.join(page['lint'])}\n")
    for src in page["sources"]:
        out.write(f"source: {src}\n")
    return ExitStatus.OK


def _code_dict(c: "Code") -> Dict[str, Any]:
    return {
        "code": c.code,
        "name": c.name,
        "area": c.area,
        "severity": c.severity,
        "title": c.title,
        "kinds": list(c.kinds),
        "explain": c.explain,
    }


def register(app: typer.Typer) -> None:
    @app.command(help=EXPLAIN_HELP)
    def explain(
        ctx: typer.Context,
        code: Annotated[Optional[str], typer.Argument(help="A code such as PKG001, or its name.")] = None,
        list_: Annotated[bool, typer.Option("--list", help="List every code.")] = False,
        as_json: JsonOpt = False,
    ) -> None:
        env = environment(ctx)
        try:
            status = run_explain(env, code, list_=list_, as_json=as_json)
        except UsageError as exc:
            raise fail_usage(str(exc), env) from None
        raise typer.Exit(status)
