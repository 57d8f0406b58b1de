"""Run npudoctor commands in this process (``npudoctor.cli.run`` with an injected
Environment): the fast way for tests.  Tests named ``test_e2e_*`` keep a real
``python -m npudoctor`` process on purpose."""

from __future__ import annotations

import contextlib
import io
import os
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Optional

from npudoctor.cli import run
from npudoctor.session.request import Environment


@dataclass
class Result:
    """What a command left: its exit status and what it wrote (like CompletedProcess)."""

    returncode: int
    stdout: Any
    stderr: Any


@contextlib.contextmanager
def _cwd(path: Optional[Any]) -> Iterator[None]:
    if path is None:
        yield
        return
    before = os.getcwd()
    os.chdir(str(path))
    try:
        yield
    finally:
        os.chdir(before)


@contextlib.contextmanager
def _own_settings(env: Optional[Mapping[str, str]]) -> Iterator[None]:
    """npudoctor reads its own settings (``NPUDOCTOR_CACHE_DIR``, ``NPUDOCTOR_ELF_CACHE``…)
    from the process environment, which in a process is ``env``: for the call, this
    process's environment carries ``env``'s ``NPUDOCTOR_*`` variables too."""
    own = {k: v for k, v in (env or {}).items() if k.startswith("NPUDOCTOR_")}
    saved = {k: os.environ.get(k) for k in own}
    os.environ.update(own)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def npudoctor(
    *argv: Any,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[Any] = None,
    input: Any = None,
    tty: bool = False,
    width: int = 80,
    text: bool = True,
    timeout: Optional[float] = None,
) -> Result:
    """``npudoctor ARGV…`` in-process.  ``env``: npudoctor's environment (and so the
    diagnosed one in live mode; default ``os.environ``; its ``NPUDOCTOR_*`` settings are
    also put in ``os.environ`` for the call); ``input``: standard input (str or
    bytes); ``tty``: stdout is a terminal ``width`` columns wide; ``text=False``: stdout
    and stderr as UTF-8 bytes (like ``subprocess.run`` without ``text``).  ``timeout`` is
    accepted for symmetry with ``subprocess.run`` and ignored (commands keep their own
    deadlines)."""
    out, err = io.StringIO(), io.StringIO()
    data = input.encode() if isinstance(input, str) else (input or b"")
    environment = Environment(
        stdout=out,
        stderr=err,
        environ=dict(os.environ if env is None else env),
        stdout_isatty=tty,
        width=width,
        stdin=io.BytesIO(data),
    )
    with _cwd(cwd), _own_settings(env):
        code = run([str(a) for a in argv], environment)
    if text:
        return Result(code, out.getvalue(), err.getvalue())
    return Result(code, out.getvalue().encode(), err.getvalue().encode())
