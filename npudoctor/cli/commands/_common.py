"""Options shared by every command that looks at a machine, and the code that turns
them into a snapshot (live, ``--root``, ``--python``, ``--from``) and a matrix.

Commands use the ``Annotated`` aliases below so that ``check``, ``health``,
``collect``, ``devices`` and ``triage`` spell the common options the same way.
"""

import os
import sys
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Tuple

import typer
from typing_extensions import Annotated

RootOpt = Annotated[
    Optional[str],
    typer.Option("--root", metavar="DIR", help="Inspect DIR as if it were / (a container rootfs, a scenario)."),
]
PythonOpt = Annotated[
    Optional[str],
    typer.Option("--python", metavar="PATH", help="Inspect this interpreter (e.g. a conda env's python)."),
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


class UsageError(Exception):
    """Bad combination of options or unreadable input named by the user (exit 2)."""


@dataclass
class Target:
    """Resolved common options."""

    root: Optional[str] = None
    python: Optional[str] = None
    from_file: Optional[str] = None
    user: Optional[str] = None
    commands: bool = True
    env_file: Optional[str] = None


def read_env_file(path: str) -> dict:
    """The environment described by an ``--env-file`` (PATH taken from this process
    when the file has none).  Raises :class:`UsageError` for an unreadable file or bad
    lines."""
    from npudoctor.parsers.envfile import load_env_file

    try:
        return load_env_file(path, os.environ.get("PATH", "/usr/bin:/bin"))
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def make_host(target: Target, environ: Optional[dict] = None) -> Any:
    """The :class:`~npudoctor.host.Host` for these options.  Raises
    :class:`UsageError` when ``--root`` is not a directory or ``--env-file`` is bad."""
    from npudoctor.host import Host

    root = target.root or "/"
    if not os.path.isdir(root):
        raise UsageError(f"--root {root}: not a directory")
    if environ is None and target.env_file:
        environ = read_env_file(target.env_file)
    return Host(root=root, environ=environ, commands=target.commands)


def snapshot_for(target: Target, options: Any, sections: Optional[Sequence[str]] = None) -> Any:
    """Collect (or load, with ``--from``) the snapshot; ``sections`` limits the probes
    run (see :func:`npudoctor.engine.collect`).  Raises :class:`UsageError`."""
    from npudoctor.engine import collect
    from npudoctor.snapshot import Snapshot, SnapshotError

    if target.from_file:
        if target.root or target.python:
            raise UsageError("--from replays a snapshot; it cannot be combined with --root or --python")
        try:
            snap = Snapshot.load(target.from_file)
        except SnapshotError as exc:
            raise UsageError(str(exc)) from None
        snap.target = dict(snap.target, mode="from", **{"from": target.from_file})
        return snap
    if target.python and not (os.path.isfile(target.python) or target.root):
        raise UsageError(f"--python {target.python}: no such file")
    host = make_host(target)
    if target.user:
        from npudoctor.probes.host import user_problem

        problem = user_problem(host, target.user)
        if problem:
            raise UsageError(problem)
    options.python = target.python
    options.user = target.user
    return collect(host, options, sections=sections)


def load_matrix_or_none(path: Optional[str]) -> Tuple[Any, Optional[str]]:
    """``(matrix, None)`` or ``(None, reason)`` when it cannot be loaded.  A matrix
    named explicitly with ``--matrix`` that fails raises :class:`UsageError`."""
    from npudoctor.knowledge.matrix import MatrixError, load_matrix

    try:
        return load_matrix(path), None
    except MatrixError as exc:
        if path:
            raise UsageError(str(exc)) from None
        return None, str(exc)


def fail_usage(message: str) -> typer.Exit:
    """Print ``message`` to stderr and return an Exit(2) to raise."""
    print(f"npudoctor: {message}", file=sys.stderr)
    return typer.Exit(2)
