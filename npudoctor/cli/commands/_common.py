"""Options shared by every command that looks at a machine, the one helper that turns
them into a :class:`~npudoctor.cli.request.MachineRequest`, and the code that turns a
request into a snapshot (live, ``--root``, ``--python``, ``--from``) and a matrix.

Commands use the ``Annotated`` aliases below so that ``check``, ``collect``, ``devices``
and ``triage`` spell the machine options the same way; each takes a ``typer.Context``
whose ``obj`` is the :class:`~npudoctor.cli.request.Environment` it writes to (see
:func:`npudoctor.cli.run`).
"""

import os
import time
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import typer
from typing_extensions import Annotated

from npudoctor.cli.request import DEFAULT_DEADLINE, Environment, ExitStatus, MachineRequest, UsageError

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


def machine_request(
    root: Optional[str] = None,
    python: Optional[str] = None,
    user: Optional[str] = None,
    env_file: Optional[str] = None,
    no_commands: bool = False,
    from_: Optional[str] = None,
    as_json: bool = False,
    deadline: float = DEFAULT_DEADLINE,
) -> MachineRequest:
    """The :class:`MachineRequest` for the machine options as Typer parsed them.  Raises
    :class:`UsageError` for combinations no command accepts: ``--from`` replays a snapshot,
    so it cannot be combined with an option that would probe a machine (``--root``,
    ``--python``, ``--user``, ``--env-file``, ``--no-commands``) -- or a ``deadline`` that
    is not a positive number of seconds."""
    if not deadline > 0:
        raise UsageError(f"--deadline {deadline}: give a positive number of seconds")
    request = MachineRequest(
        root=root,
        python=python,
        user=user,
        env_file=env_file,
        no_commands=no_commands,
        from_file=from_,
        json=as_json,
        deadline=deadline,
    )
    conflict = request.replay_conflict()
    if conflict:
        raise UsageError(conflict)
    return request


def environment(ctx: typer.Context) -> Environment:
    """The :class:`Environment` the command runs in: the one :func:`npudoctor.cli.run`
    put in the Click context, else the real process surroundings."""
    found = ctx.find_object(Environment)
    return found if found is not None else Environment.from_process()


def diagnosed_environ(request: MachineRequest, environ: Optional[Mapping[str, str]] = None) -> Optional[Dict[str, str]]:
    """The environment of the diagnosed workload (:meth:`MachineRequest.workload_environ`):
    the ``--env-file``'s when given, else ``environ`` (npudoctor's own; ``None`` means this
    process's, left to the Host).  Raises :class:`UsageError` for a bad env file."""
    if not request.env_file and environ is None:
        return None
    try:
        return request.workload_environ(os.environ if environ is None else environ)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def make_host(request: MachineRequest, environ: Optional[Mapping[str, str]] = None) -> Any:
    """The :class:`~npudoctor.host.Host` for this request; ``environ`` is npudoctor's own
    environment (``None``: ``os.environ``), replaced by the ``--env-file`` when given.
    Raises :class:`UsageError` when ``--root`` is not a directory or ``--env-file`` is bad."""
    from npudoctor.host import Host

    root = request.root or "/"
    if not os.path.isdir(root):
        raise UsageError(f"--root {root}: not a directory")
    return Host(root=root, environ=diagnosed_environ(request, environ), commands=request.commands)


def load_snapshot(path: str) -> Any:
    """The :class:`~npudoctor.snapshot.Snapshot` in ``path`` (written by ``collect`` or
    ``check --json``), as it was written.  Raises :class:`UsageError` naming the file."""
    from npudoctor.snapshot import Snapshot, SnapshotError

    try:
        return Snapshot.load(path)
    except SnapshotError as exc:
        raise UsageError(str(exc)) from None


def snapshot_for(
    request: MachineRequest,
    options: Any,
    sections: Optional[Sequence[str]] = None,
    environ: Optional[Mapping[str, str]] = None,
) -> Any:
    """Collect (or load, with ``--from``) the snapshot; ``sections`` limits the probes
    run (see :func:`npudoctor.engine.collect`); ``environ`` as for :func:`make_host`.
    Sets ``options.python`` and ``options.user`` from the request.  Raises
    :class:`UsageError`."""
    from npudoctor.engine import collect

    if request.from_file:
        if request.root or request.python:
            raise UsageError("--from replays a snapshot; it cannot be combined with --root or --python")
        snap = load_snapshot(request.from_file)
        snap.target = dict(snap.target, mode="from", **{"from": request.from_file})
        return snap
    from npudoctor.cli import pyselect

    own = os.environ if environ is None else environ
    python, choice = request.python, None
    if python:
        try:
            python = pyselect.resolve(python, request.root, own)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    elif not request.root:
        python, choice = pyselect.default_choice(own)
    host = make_host(request, environ)
    if request.user:
        from npudoctor.probes.host import user_problem

        problem = user_problem(host, request.user)
        if problem:
            raise UsageError(problem)
    options.python = python
    options.user = request.user
    if options.deadline is None:
        extra = float(options.deep_timeout) if options.deep else 0.0
        options.deadline = time.monotonic() + request.deadline + extra
    snapshot = collect(host, options, sections=sections)
    if choice:
        snapshot.target["python_choice"] = choice
    return snapshot


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


def fail_usage(message: str, env: Optional[Environment] = None) -> typer.Exit:
    """Write ``npudoctor: message`` to ``env.stderr`` (default: the process's) and return
    the ``typer.Exit`` with :attr:`ExitStatus.USAGE` to raise."""
    stream = (env or Environment.from_process()).stderr
    stream.write(f"npudoctor: {message}\n")
    return typer.Exit(ExitStatus.USAGE)


def warn(env: Environment, message: str) -> None:
    """Write ``npudoctor: message`` to ``env.stderr``."""
    env.stderr.write(f"npudoctor: {message}\n")


def echo(stream: Any, text: str = "") -> None:
    """Write ``text`` and a newline to ``stream`` (an :class:`Environment` stream)."""
    stream.write(f"{text}\n")
