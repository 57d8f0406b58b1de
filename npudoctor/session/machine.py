"""The Typer-free half of the machine commands: the one helper that turns the machine options
into a :class:`~npudoctor.session.request.MachineRequest`, the code that turns a request into a
snapshot (live, ``--root``, ``--python``, ``--from``) and a matrix, and how a command ends
on a usage error.  Typer-free because ``health`` and ``exec`` use it too; the Typer options
are in :mod:`npudoctor.cli.commands._common`, which re-exports these names.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from npudoctor.session.request import DEFAULT_DEADLINE, Environment, ExitStatus, MachineRequest, UsageError

if TYPE_CHECKING:
    from typing import Any, Dict, Mapping, Optional, Sequence, Tuple


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
    from npudoctor.session import pyselect

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


def usage_failure(message: str, env: Environment) -> ExitStatus:
    """Write ``npudoctor: message`` to ``env.stderr`` and return :attr:`ExitStatus.USAGE`:
    how a command ends on a :class:`UsageError`."""
    env.stderr.write(f"npudoctor: {message}\n")
    return ExitStatus.USAGE


def warn(env: Environment, message: str) -> None:
    """Write ``npudoctor: message`` to ``env.stderr``."""
    env.stderr.write(f"npudoctor: {message}\n")


def echo(stream: Any, text: str = "") -> None:
    """Write ``text`` and a newline to ``stream`` (an :class:`Environment` stream)."""
    stream.write(f"{text}\n")
