"""Console entry point.

``npudoctor health …`` is dispatched before Typer/rich are imported (it runs every
few seconds in containers and may exit only 0 or 1); its ``--help`` goes to the Typer app,
which lists its options in the layout of every other command.  Everything else goes to the
Typer app through :func:`npudoctor.cli.run` (an unexpected exception becomes exit 3 with
a short "please report" line instead of a traceback; ``NPUDOCTOR_DEBUG=1`` shows it).
"""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import List, Optional


def main(argv: Optional[List[str]] = None) -> int:
    """Run one command line with ``sys.stdout``/``sys.stderr`` escaping control characters
    (:class:`npudoctor.report.escape.SafeStream`): whatever a command prints, text from the
    judged machine cannot drive the terminal."""
    from npudoctor.report.escape import safe

    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = safe(sys.stdout), safe(sys.stderr)
    try:
        return _main(argv)
    finally:
        sys.stdout, sys.stderr = saved


def _main(argv: Optional[List[str]]) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if "health" in args:
        from npudoctor.session.terminal import take_color_flags

        words, _flag = take_color_flags(args)  # health's output is plain: the flag changes nothing
        if words and words[0] == "health":
            args = words
    if args and args[0] == "health" and not {"-h", "--help"} & set(args[1:]):
        from npudoctor.runtime.health import main as health_main

        return health_main(args[1:])
    from npudoctor.cli import run as run_cli

    _end_children_on_exit()
    return run_cli(args)


def _end_children_on_exit() -> None:
    """On SIGTERM, and at exit, kill the process groups of the commands still running
    (npu-smi, hccn_tool, the judged python): each runs in its own group, so the signal that
    ends npudoctor would not reach them.  (``health`` and ``npd`` answer SIGTERM
    themselves; ``exec`` replaces itself, which resets the handler.)  The exit status is
    ``ExitStatus.INTERRUPTED`` (130), one of the documented set, not the shell's 128 + 15."""
    import atexit
    import os
    import signal

    from npudoctor.hostproc import end_all
    from npudoctor.session.status import ExitStatus

    def on_sigterm(signum: int, _frame: object) -> None:
        end_all()
        with contextlib.suppress(Exception):
            sys.stderr.write("npudoctor: stopped by SIGTERM\n")
            sys.stderr.flush()
        os._exit(int(ExitStatus.INTERRUPTED))

    with contextlib.suppress(ValueError):  # not the main thread (an embedding caller): leave signals alone
        signal.signal(signal.SIGTERM, on_sigterm)
    atexit.register(end_all)


def run() -> None:
    """Console-script wrapper: exit with :func:`main`'s code."""
    sys.exit(main())
