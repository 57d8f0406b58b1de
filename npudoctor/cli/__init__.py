"""The command line: options → one :class:`~npudoctor.cli.request.MachineRequest` → one
function per command → one :class:`~npudoctor.cli.request.ExitStatus`.

``app`` (the Typer application) lives in :mod:`npudoctor.cli.app`; importing this package
does not import Typer (``health`` must start fast).
"""
