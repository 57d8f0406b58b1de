"""The Typer-free half of the machine commands: the one helper that turns the machine options
into a :class:`~npudoctor.session.request.MachineRequest`, the one service that turns a
request into a snapshot (live, ``--root``, ``--python``, ``--from``) and findings
(:func:`judge`), and how a command ends on a usage error.  Typer-free because ``health`` and ``exec`` use it too; the Typer options
are in :mod:`npudoctor.cli.commands._common`, which re-exports these names.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from npudoctor.session.request import DEFAULT_DEADLINE, Environment, ExitStatus, MachineRequest, UsageError

if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple


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
    from npudoctor.host import started_environ

    if not request.env_file and environ is None:
        return None
    try:
        return request.workload_environ(started_environ() if environ is None else environ)
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
    workload: Optional[Mapping[str, str]] = None,
) -> Any:
    """Collect (or load, with ``--from``) the snapshot; ``sections`` limits the probes
    run (see :func:`npudoctor.engine.collect`); ``environ`` as for :func:`make_host`.
    ``workload``: the diagnosed environment when the caller decided it (``health`` and
    ``exec``: the workload's or the node's); it is probed, and without ``--python`` it
    chooses the interpreter; default: ``environ`` replaced by the ``--env-file``.  Sets
    ``options.python`` and ``options.user`` from the request.  Raises
    :class:`UsageError`."""
    from npudoctor.engine import collect

    conflict = request.replay_conflict()
    if conflict:
        raise UsageError(conflict)
    if request.from_file:
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
        python, choice = pyselect.default_choice(own if workload is None else workload)
    if workload is None:
        host = make_host(request, environ)
    else:
        from npudoctor.host import Host

        root = request.root or "/"
        if not os.path.isdir(root):
            raise UsageError(f"--root {root}: not a directory")
        host = Host(root=root, environ=dict(workload), commands=request.commands)
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


def judge(
    request: MachineRequest,
    options: Any,
    *,
    sections: Optional[Sequence[str]] = None,
    environ: Optional[Mapping[str, str]] = None,
    workload: Optional[Mapping[str, str]] = None,
    matrix_path: Optional[str] = None,
    matrix: Optional[Callable[[], Tuple[Any, Optional[str]]]] = None,
    ignore: Sequence[str] = (),
    ignored: Optional[List[Any]] = None,
    record_matrix: bool = False,
    worth_judging: Optional[Callable[[Any], bool]] = None,
    shared: Optional[Dict[str, Any]] = None,
) -> Tuple[Any, List[Any]]:
    """The one service of every command that judges a machine (``check``, ``devices``,
    ``triage``, ``npd``, ``health``, ``exec``): request -> Host -> snapshot -> findings.

    The snapshot is collected (or replayed) by :func:`snapshot_for` (``sections``,
    ``environ``, ``workload`` as there); the matrix comes from ``matrix`` once the
    snapshot is in (a callable returning ``(matrix, None)`` or ``(None, reason)``: the
    quick evaluation loads it while ``npu-smi`` runs), else from :func:`load_matrix_or_none`
    of ``matrix_path``.  ``record_matrix``: the snapshot records the matrix's provenance
    (or why none loaded), as ``check`` reports it.  ``ignore``/``ignored`` as for
    :func:`npudoctor.engine.evaluate`.  ``worth_judging``: when it says a snapshot is not
    worth judging (``triage`` on a machine without an NPU stack), no matrix is loaded and
    the findings are empty.  ``shared``: views of earlier snapshots of this run to reuse
    (:data:`npudoctor.facts.SharedViews`).  Returns ``(snapshot, findings)``; raises :class:`UsageError`
    for a bad option."""
    from npudoctor.engine import evaluate

    snapshot = snapshot_for(request, options, sections=sections, environ=environ, workload=workload)
    if worth_judging is not None and not worth_judging(snapshot):
        return snapshot, []
    loaded, error = matrix() if matrix is not None else load_matrix_or_none(matrix_path)
    if record_matrix:
        snapshot.matrix = dict(loaded.provenance) if loaded is not None else {"error": error}
    findings = evaluate(snapshot, loaded, options, ignore=list(ignore), ignored=ignored, shared=shared)
    return snapshot, findings


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
