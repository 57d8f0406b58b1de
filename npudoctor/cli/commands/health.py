"""``npudoctor health`` in the Typer app: listed in ``npudoctor --help`` and runnable
through :func:`npudoctor.cli.run`.  The console entry point never comes here: it
dispatches ``health`` before Typer is imported (:mod:`npudoctor.entry`), and this
command hands its words to the same parser (:func:`npudoctor.runtime.health.main`), so both
ways accept the same options and exit only 0 or 1."""

from typing import List

import typer

HEALTH_HELP = """Fast container health check (Docker HEALTHCHECK, Kubernetes probes): devices
visible and openable, driver files mounted, chips healthy, CANN environment applied,
torch/torch_npu/CANN paired.  Options: `npudoctor health -h`.

Exit codes: 0 healthy; 1 unhealthy (also for bad options, internal errors and timeouts)."""


def register(app: typer.Typer) -> None:
    @app.command(
        help=HEALTH_HELP,
        add_help_option=False,
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )
    def health(ctx: typer.Context) -> None:
        from npudoctor.runtime.health import main as health_main

        args: List[str] = list(ctx.args)
        raise typer.Exit(int(health_main(args)))
