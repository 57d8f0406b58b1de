"""Options shared by every command that looks at a machine (the Typer half).  The one helper
that turns them into a :class:`~npudoctor.session.request.MachineRequest` and the code that turns
a request into a snapshot and a matrix live in the Typer-free :mod:`npudoctor.session.machine`
(re-exported here), which ``health`` and ``exec`` use too.

Commands use the ``Annotated`` aliases below so that ``check``, ``collect``, ``devices``
and ``triage`` spell the machine options the same way; each takes a ``typer.Context``
whose ``obj`` is the :class:`~npudoctor.session.request.Environment` it writes to (see
:func:`npudoctor.cli.run`).
"""

import sys
from typing import List, Optional

import typer

from npudoctor.session.machine import (
    diagnosed_environ,
    echo,
    judge,
    load_matrix_or_none,
    load_snapshot,
    machine_request,
    make_host,
    snapshot_for,
    usage_failure,
    warn,
)
from npudoctor.session.request import DEFAULT_DEADLINE, Environment

if sys.version_info >= (3, 9):
    from typing import Annotated
else:  # Python 3.8: the backport (a dependency there)
    from typing_extensions import Annotated

__all__ = [  # the Typer options and helpers below, and the Typer-free helpers the commands import from here
    "Annotated",
    "DeadlineOpt",
    "EnvFileOpt",
    "FromOpt",
    "IgnoreOpt",
    "JsonOpt",
    "MatrixOpt",
    "NoCommandsOpt",
    "PythonOpt",
    "RootOpt",
    "UserOpt",
    "VerboseOpt",
    "diagnosed_environ",
    "echo",
    "environment",
    "fail_usage",
    "judge",
    "load_matrix_or_none",
    "load_snapshot",
    "machine_request",
    "make_host",
    "snapshot_for",
    "usage_failure",
    "warn",
]

DeadlineOpt = Annotated[
    float,
    typer.Option(
        "--deadline",
        metavar="SECONDS",
        help=f"Overall deadline of probing the machine (default {DEFAULT_DEADLINE:g} s); "
        "commands still running then are killed and reported.",
    ),
]
RootOpt = Annotated[
    Optional[str],
    typer.Option("--root", metavar="DIR", help="Inspect DIR as if it were / (a container rootfs, a scenario)."),
]
PythonOpt = Annotated[
    Optional[str],
    typer.Option(
        "--python",
        metavar="PATH|DIR|ENV",
        help="Judge this interpreter: a python file, a venv or conda environment directory, or a conda "
        "environment's name (default: the active VIRTUAL_ENV/CONDA_PREFIX, else npudoctor's own).",
    ),
]
FromOpt = Annotated[
    Optional[str],
    typer.Option("--from", metavar="FILE", help="Replay a snapshot written by `npudoctor collect`."),
]
UserOpt = Annotated[
    Optional[str],
    typer.Option("--user", metavar="NAME|UID", help="Judge device access for this account."),
]
EnvFileOpt = Annotated[
    Optional[str],
    typer.Option(
        "--env-file",
        metavar="FILE",
        help="Diagnose the environment in FILE (NAME=value lines, as `docker run --env-file`) "
        "instead of this shell's; PATH stays this shell's unless FILE sets it.",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON (the documented contract).")]
NoCommandsOpt = Annotated[
    bool, typer.Option("--no-commands", help="Run no external command (npu-smi, the target python).")
]
MatrixOpt = Annotated[
    Optional[str],
    typer.Option("--matrix", metavar="FILE", help="Use this matrix file instead of the cached/bundled one."),
]
VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="Show evidence and the matrix provenance.")]
IgnoreOpt = Annotated[
    Optional[List[str]],
    typer.Option("--ignore", metavar="CODE", help="Silence a finding code or name (repeatable)."),
]


def environment(ctx: typer.Context) -> Environment:
    """The :class:`Environment` the command runs in: the one :func:`npudoctor.cli.run`
    put in the Click context, else the real process surroundings."""
    found = ctx.find_object(Environment)
    return found if found is not None else Environment.from_process()


def fail_usage(message: str, env: Optional[Environment] = None) -> typer.Exit:
    """Write ``npudoctor: message`` to ``env.stderr`` (default: the process's) and return
    the ``typer.Exit`` with :attr:`ExitStatus.USAGE` to raise (:func:`usage_failure`)."""
    return typer.Exit(usage_failure(message, env or Environment.from_process()))
