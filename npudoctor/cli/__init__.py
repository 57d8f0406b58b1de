"""The command line: options → one :class:`~npudoctor.session.request.MachineRequest` → one
function per command → one :class:`~npudoctor.session.request.ExitStatus`.

``app`` (the Typer application) lives in :mod:`npudoctor.cli.app`; importing this package
does not import Typer (``health`` starts without it).  :func:`run` runs one command line
in-process against an injected :class:`~npudoctor.session.request.Environment`: the console
entry point uses it with the real process surroundings, tests with string buffers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npudoctor.session.terminal import Environment, take_color_flags

if TYPE_CHECKING:
    from typing import Optional, Sequence

PLEASE_REPORT = "This is a bug in npudoctor; please report it (rerun with NPUDOCTOR_DEBUG=1 for the traceback)."


def run(argv: Sequence[str], env: Optional[Environment] = None) -> int:
    """Run ``npudoctor ARGV…`` (Typer commands; not the fast ``health`` path of
    :mod:`npudoctor.entry`) in this process and return its exit status.

    ``env`` (default: :meth:`Environment.from_process`) is handed to the command through
    the Click context (``ctx.obj``); Typer's own help and usage messages, which Click
    writes to ``sys.stdout``/``sys.stderr``, are redirected to ``env.stdout``/``env.stderr``
    for the duration.  ``--color``/``--no-color`` are taken out of ``argv`` first, wherever
    they stand (:func:`~npudoctor.session.request.take_color_flags`).  ``SystemExit`` becomes its status; an unexpected exception becomes
    :attr:`ExitStatus.INTERNAL` with a short "please report" line on ``env.stderr``
    (``NPUDOCTOR_DEBUG`` set in ``env.environ``: the exception propagates).  Never raises
    ``SystemExit``.
    """
    from npudoctor.report.escape import safe

    env = env if env is not None else Environment.from_process()
    env.stdout, env.stderr = safe(env.stdout), safe(env.stderr)  # control characters escaped
    argv, flag = take_color_flags(argv)
    if flag is not None:
        env.color_flag = flag
    try:
        import contextlib

        from npudoctor.cli.app import prepare

        app = prepare(argv)

        with contextlib.redirect_stdout(env.stdout), contextlib.redirect_stderr(env.stderr):
            app(args=list(argv), prog_name="npudoctor", standalone_mode=True, obj=env)
    except SystemExit as exc:
        from npudoctor.session.status import ExitStatus

        code = exc.code
        if code is None:
            return int(ExitStatus.OK)
        if isinstance(code, int):
            return int(code)
        env.stderr.write(f"{code}\n")
        return int(ExitStatus.PROBLEMS)
    except KeyboardInterrupt:
        from npudoctor.session.status import ExitStatus

        env.stderr.write("npudoctor: interrupted\n")
        return int(ExitStatus.INTERRUPTED)
    except Exception as exc:  # the last line of defence: never a bare traceback
        if env.environ.get("NPUDOCTOR_DEBUG"):
            raise
        from npudoctor.session.status import ExitStatus

        env.stderr.write(f"npudoctor failed: {type(exc).__name__}: {exc}\n{PLEASE_REPORT}\n")
        return int(ExitStatus.INTERNAL)
    return 0  # ExitStatus.OK
