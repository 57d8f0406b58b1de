"""The Typer application.  Thin: options → request → probes → rules → report → exit status.
Run it with :func:`npudoctor.cli.run` (which hands the command its
:class:`~npudoctor.cli.request.Environment` as the Click context object).

Commands live in :mod:`npudoctor.cli.commands` (one module per family, each with
``register(app)``); they are discovered here, so a new command module needs no edit
of this file.  ``npudoctor health`` does not come through here at all: see
:mod:`npudoctor.entry` (it must start fast and never exit 2).
"""

import importlib
import pkgutil
from typing import Optional

import typer

from npudoctor import __version__
from npudoctor.cli.commands._common import environment
from npudoctor.cli.request import ExitStatus

app = typer.Typer(
    name="npudoctor",
    help="Diagnose PyTorch on Huawei Ascend NPUs: Python, torch, torch_npu, CANN, driver, devices.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(ctx: typer.Context, value: bool) -> None:
    if value:
        environment(ctx).stdout.write(f"npudoctor {__version__}\n")
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


def _register_all() -> None:
    import npudoctor.cli.commands as pkg

    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"npudoctor.cli.commands.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(app)


_register_all()
