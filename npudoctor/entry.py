"""Console entry point.

``npudoctor health …`` is dispatched before Typer/rich are imported (it runs every
few seconds in containers and may exit only 0 or 1); its ``--help`` goes to the Typer app,
which lists its options in the layout of every other command.  Everything else goes to the
Typer app through :func:`npudoctor.cli.run` (an unexpected exception becomes exit 3 with
a short "please report" line instead of a traceback; ``NPUDOCTOR_DEBUG=1`` shows it).

The console script first makes sure an install without bytecode is not compiled again on
every run (:func:`keep_bytecode`).
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import List, Optional

#: The directory of compiled modules under npudoctor's cache directory, one per user
#: (``pycache-<uid>``): an ``NPUDOCTOR_CACHE_DIR`` may be shared by every account of an image.
PYCACHE = "pycache"


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


def keep_bytecode(args: List[str]) -> Optional[str]:
    """Point ``sys.pycache_prefix`` at npudoctor's per-user cache when its install has no
    bytecode and none can be written beside it; return that directory (``None``: unchanged).

    Why a start-up step: Python reads a module's ``.pyc`` from the ``__pycache__`` beside it
    and, when there is none, compiles the source and tries to write one there.  An install
    without ``.pyc`` whose directories this user cannot write (``pip install --no-compile``
    or uv's default into a system path or a root-owned venv, a read-only image) is then
    compiled on every run, npudoctor and its dependencies alike: two to three times the
    time of a short command (``docs/performance.md``).  With a prefix, Python reads and
    writes every ``.pyc`` under it instead, so from the second run on the modules come
    compiled.  It reads ``.pyc`` *only* there, ignoring every ``__pycache__`` (the standard
    library's too), so the prefix is set only when npudoctor's own ``.pyc`` is missing and
    cannot be written; the user's choice wins: ``PYTHONPYCACHEPREFIX`` / ``-X
    pycache_prefix`` and ``PYTHONDONTWRITEBYTECODE`` / ``-B`` leave everything as it is.
    The first run with the prefix compiles the standard library modules it imports as well,
    so it costs more than a run without; what is imported before the prefix is set
    (``npudoctor/__init__``, this module, :mod:`npudoctor.userdirs`) is compiled every time.

    The directory is ``$NPUDOCTOR_CACHE_DIR/pycache-<uid>``, else ``pycache-<uid>`` in the user
    cache directory (``~/.cache/npudoctor/pycache-1000``), created mode 0700.  Python would run any
    ``.pyc`` found there, so a directory this user does not own, one others may write, and
    one inside the tree ``--root`` names (npudoctor writes nothing into what it judges) are
    not used; neither is one that cannot be created or written: Python's default stays."""
    if sys.pycache_prefix is not None or sys.dont_write_bytecode:
        return None
    cached = globals().get("__cached__")  # where this module's .pyc is, or would be written
    if not isinstance(cached, str) or os.path.exists(cached):
        return None
    pycache = os.path.dirname(cached)
    if os.access(pycache if os.path.isdir(pycache) else os.path.dirname(pycache), os.W_OK):
        return None  # Python writes the .pyc there during this run
    directory = _pycache_dir(args)
    if directory is not None:
        sys.pycache_prefix = directory
    return directory


def _pycache_dir(args: List[str]) -> Optional[str]:
    """The per-user bytecode directory, made if need be; ``None`` when it may not be used."""
    import stat

    from npudoctor.userdirs import user_cache_dir

    try:
        base = os.environ.get("NPUDOCTOR_CACHE_DIR") or user_cache_dir()
    except Exception:  # platformdirs could not name one: no cache
        return None
    if not os.path.isabs(base):  # one per working directory would be no cache
        return None
    path = os.path.realpath(os.path.join(base, f"{PYCACHE}-{os.geteuid()}"))
    root = _root_option(args)
    if root is not None and _inside(path, root):
        return None
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700)
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        return None
    return path if os.access(path, os.W_OK | os.X_OK) else None


def _root_option(args: List[str]) -> Optional[str]:
    """The value of ``--root`` on the command line, if any (the last one wins)."""
    root = None
    for i, word in enumerate(args):
        if word == "--":
            break
        if word == "--root" and i + 1 < len(args):
            root = args[i + 1]
        elif word.startswith("--root="):
            root = word[len("--root=") :]
    return root


def _inside(path: str, root: str) -> bool:
    """Whether ``path`` (real) is ``root`` or below it; a root of ``/`` (the live system,
    where npudoctor's own cache lives) holds nothing npudoctor avoids."""
    top = os.path.realpath(root)
    if top == os.sep:
        return False
    return path == top or path.startswith(top.rstrip(os.sep) + os.sep)


def run() -> None:
    """Console-script wrapper: keep bytecode (:func:`keep_bytecode`), then exit with
    :func:`main`'s code, without the interpreter's last collections (:func:`exit_quickly`)."""
    keep_bytecode(sys.argv[1:])
    code = main()
    exit_quickly()
    sys.exit(code)


def exit_quickly() -> None:
    """Leave every object alive now out of the collections the interpreter runs at exit.

    Why an exit step: when a process ends, Python tears its modules down and runs the cyclic
    garbage collector over what they held, which for npudoctor is every class, function and
    record a command imported or built (msgspec structs, the decoded knowledge, the rules):
    a tenth of a ``health`` run, spent freeing memory that the operating system takes back
    at once anyway (``docs/performance.md``).  :func:`gc.freeze` moves those objects into
    the permanent generation, which the collector skips; nothing else of the exit changes:
    ``atexit`` handlers and ``weakref.finalize`` callbacks still run, the standard streams are
    still flushed, and what is not in a reference cycle is still freed as its module goes.
    Only the console script calls it (a process about to end): a caller that imports
    npudoctor keeps its collector as it was."""
    import gc

    gc.freeze()
