"""The Typer application.  Thin: options → request → probes → rules → report → exit status.
Run it with :func:`npudoctor.cli.run` (which hands the command its
:class:`~npudoctor.session.request.Environment` as the Click context object).

Commands live in :mod:`npudoctor.cli.commands` (one module per family, each with
``register(app)``); a run registers only the module of its command (:func:`prepare`,
:data:`COMMAND_MODULES`), help and unknown commands all of them.  ``npudoctor health`` does not come through here at all: see
:mod:`npudoctor.entry` (it must start fast and never exit 2).
"""

import importlib
import os
from typing import Dict, List, Optional, Sequence

import typer
from typer.core import TyperGroup

from npudoctor import __version__
from npudoctor.cli._click import Context, NoSuchOption
from npudoctor.cli.commands._common import environment
from npudoctor.lazyre import pattern
from npudoctor.session.request import ExitStatus
from npudoctor.session.terminal import close_options


def _suggest(exc: NoSuchOption) -> NoSuchOption:
    """``exc`` saying which of its own command's options the unknown one is probably a
    misspelling of (:func:`close_options`), or none (Click's guesses compare the dashes too)."""
    ctx = exc.ctx
    names = [n for p in ctx.command.get_params(ctx) for n in (*p.opts, *p.secondary_opts)] if ctx else []
    near = close_options(exc.option_name, names)
    if near:
        exc.message += ". Did you mean " + " or ".join(near) + "?"
    exc.possibilities = None
    return exc


class Group(TyperGroup):
    """npudoctor's command group: an unknown option is answered with suggestions from the
    options of the command it was given to (:func:`_suggest`)."""

    def parse_args(self, ctx: Context, args: List[str]) -> List[str]:
        try:
            return super().parse_args(ctx, args)
        except NoSuchOption as exc:
            raise _suggest(exc) from None

    def invoke(self, ctx: Context) -> object:
        try:
            return super().invoke(ctx)
        except NoSuchOption as exc:
            raise _suggest(exc) from None


app = typer.Typer(
    cls=Group,
    name="npudoctor",
    help="Diagnose PyTorch on Huawei Ascend NPUs: Python, torch, torch_npu, CANN, driver, devices.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion: Typer imports their code anyway
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(ctx: typer.Context, value: bool) -> None:
    if value:
        from npudoctor.knowledge.matrix_stamp import version_line

        environment(ctx).stdout.write(f"npudoctor {__version__}\n{version_line()}\n")
        raise typer.Exit(ExitStatus.OK)


@app.callback()
def main(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version."),
    color: Optional[bool] = typer.Option(
        None,
        "--color/--no-color",
        help="Colour on or off for every command (before or after its name); default: NO_COLOR, "
        "FORCE_COLOR/CLICOLOR_FORCE, CLICOLOR=0, then whether stdout is a terminal.",
    ),
) -> None:
    """npudoctor: find why PyTorch on Ascend NPU does not work here, and how to fix it."""


#: The module of :mod:`npudoctor.cli.commands` that registers each command, so that a run
#: imports only the module of the command it runs (importing every command module costs
#: more than some commands' own work).  ``tests/test_cli_app.py`` checks the table against
#: what each module registers.
COMMAND_MODULES: Dict[str, str] = {
    "check": "check",
    "collect": "check",
    "explain": "explain",
    "compare": "compare",
    "devices": "devices",
    "exec": "exec_env",
    "env": "exec_env",
    "health": "health",
    "lint": "lint",
    "matrix": "matrix",
    "npd": "npd",
    "plan": "plan",
    "triage": "triage",
}

_REGISTERED: List[str] = []


def _all_modules() -> List[str]:
    import npudoctor.cli.commands as pkg

    return sorted({n[:-3] for d in pkg.__path__ for n in os.listdir(d) if n.endswith(".py") and not n.startswith("_")})


def register(modules: Sequence[str]) -> None:
    """Register the commands of ``modules`` (names in :mod:`npudoctor.cli.commands`) on
    :data:`app`, each once.  Every module together is registered in name order, so ``--help``
    lists the commands in one order whatever ran before in this process."""
    every = _all_modules()
    if set(modules) >= set(every) and every != _REGISTERED:
        app.registered_commands.clear()
        app.registered_groups.clear()
        _REGISTERED.clear()
        modules = every
    for name in modules:
        if name in _REGISTERED:
            continue
        module = importlib.import_module(f"npudoctor.cli.commands.{name}")
        hook = getattr(module, "register", None)
        if hook is not None:
            hook(app)
        _REGISTERED.append(name)


#: The end of a first sentence: a full stop (not of "e.g." or "i.e.") before a space or the end.
_SENTENCE_END = pattern(r"(?<!e\.g)(?<!i\.e)\.(?=\s|$)")


def first_sentence(text: Optional[str]) -> str:
    """The first sentence of a command's help, whole, on one line: what ``npudoctor --help``
    lists for it (Click would cut it to a few words)."""
    paragraph = " ".join((text or "").strip().split("\n\n")[0].split())
    end = _SENTENCE_END.search(paragraph)
    return paragraph[: end.end()] if end else paragraph


def _short_helps(typer_app: typer.Typer) -> None:
    """Give every command and command group of ``typer_app`` (and of its groups) its first
    sentence as the short help its group lists."""
    for command in typer_app.registered_commands:
        if command.short_help is None:
            doc = command.help if isinstance(command.help, str) else getattr(command.callback, "__doc__", None)
            command.short_help = first_sentence(doc)
    for group in typer_app.registered_groups:
        sub = group.typer_instance
        if sub is None:
            continue
        if not isinstance(group.short_help, str):
            helptext = group.help if isinstance(group.help, str) else sub.info.help
            group.short_help = first_sentence(helptext if isinstance(helptext, str) else None)
        _short_helps(sub)


def prepare(argv: Sequence[str]) -> typer.Typer:
    """:data:`app` with the commands ``argv`` needs registered: the module of the command it
    names, or every module (help, a misspelt command, no command)."""
    command = next((word for word in argv if not word.startswith("-")), None)
    module = COMMAND_MODULES.get(command or "")
    register([module] if module is not None else _all_modules())
    _short_helps(app)
    return app
