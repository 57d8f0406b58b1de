"""``npudoctor health`` in the Typer app: listed in ``npudoctor --help``, answering
``health --help`` in the layout of every other command, and runnable through
:func:`npudoctor.cli.run`.  The console entry point dispatches a health check (not its help)
before Typer is imported (:mod:`npudoctor.entry`); this command hands its words to the same
argparse parser (:func:`npudoctor.runtime.health.main`), so both ways accept the same options
and exit only 0 or 1."""

from typing import Any, List

import typer
from typer.core import TyperCommand

from npudoctor.runtime.healthopts import DESCRIPTION, help_rows


class HealthCommand(TyperCommand):
    """health's command: its options are health's own parser's, listed from it
    (:func:`~npudoctor.runtime.healthopts.help_rows`) as Typer lists any command's."""

    def collect_usage_pieces(self, ctx: Any) -> List[str]:
        return ["[OPTIONS]"]

    def format_options(self, ctx: Any, formatter: Any) -> None:
        rows = help_rows()
        option = self.get_help_option(ctx)
        record = option.get_help_record(ctx) if option is not None else None
        if record is not None:
            rows.append(record)
        with formatter.section("Options"):
            formatter.write_dl(rows)

    def shell_complete(self, ctx: Any, incomplete: str) -> List[Any]:
        """Shell completion of health's options (its parser's, which Click does not see)."""
        try:
            from typer._click.shell_completion import CompletionItem
        except ImportError:  # Typer before 0.26 (Python 3.8): Click is its own distribution
            from click.shell_completion import CompletionItem  # type: ignore[import-not-found,no-redef,unused-ignore]

        items: List[Any] = list(super().shell_complete(ctx, incomplete))
        if incomplete.startswith("-"):
            for names, text in help_rows():
                for name in (part.split(" ")[0] for part in names.split(", ")):
                    if name.startswith(incomplete):
                        items.append(CompletionItem(name, help=text))
        return items


def register(app: typer.Typer) -> None:
    @app.command(
        cls=HealthCommand,
        help=DESCRIPTION,
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )
    def health(ctx: typer.Context) -> None:
        from npudoctor.runtime.health import main as health_main

        args: List[str] = list(ctx.args)
        raise typer.Exit(int(health_main(args)))
