"""File reading without surprises, and the records the :class:`~npudoctor.host.Host`
returns: :class:`FileRead`, :class:`CommandResult`, :func:`open_regular` (``O_NONBLOCK``,
``fstat`` first: regular files only unless devices or pipes are asked for),
:func:`read_capped` and :func:`read_capped_text` (never more than a byte limit).  Every
read of a path anywhere -- the judged root, compare inputs, caches, bundles -- goes through
these (``tests/test_host_seam.py``); :mod:`npudoctor.host` re-exports them.
"""

from __future__ import annotations

import errno
import os
import signal
import stat as stat_mod
from typing import TYPE_CHECKING

from npudoctor.record import MutableRecord

if TYPE_CHECKING:
    from typing import BinaryIO, Callable, Dict, Iterator, List, Optional, Set, Tuple

#: Largest file read by default (bytes).  Version and info files are tiny; logs are
#: streamed elsewhere and never read through this call.
DEFAULT_READ_LIMIT = 1 << 20


class FileRead(MutableRecord):
    """The outcome of reading one file of the diagnosed machine.

    ``path`` is the path on the diagnosed machine; ``text`` is ``None`` when the read
    failed, and then ``error`` is a short human reason ("not found", "permission
    denied", "symlink loop", "is a directory", "too large: 5242880 bytes").
    ``truncated`` is set when the file was longer than the limit (``text`` holds the
    head).  ``lossy`` is set when bytes were not valid UTF-8 and were replaced.
    """

    path: str
    text: Optional[str] = None
    error: Optional[str] = None
    truncated: bool = False
    lossy: bool = False

    @property
    def ok(self) -> bool:
        return self.text is not None


class CommandResult(MutableRecord):
    """The outcome of one command run through :meth:`Host.run`.

    ``returncode`` is ``None`` when the command did not finish (``timed_out``) or could
    not be started (``error`` says why: "not found", "permission denied",
    "commands disabled").  ``duration`` is wall time in seconds.  Output is decoded as
    UTF-8 with replacement and capped at :data:`OUTPUT_LIMIT` bytes per stream.
    ``cpu_s``, ``state``, ``cpu_pressure``: evidence of a timeout (else ``None``): CPU
    seconds the command had used, its state letter (``D``: blocked in the kernel) and the
    percent of its run during which the node's runnable tasks waited for a CPU (PSI) or
    its cgroup was throttled, all read just before it was killed.
    """

    argv: List[str]
    returncode: Optional[int] = None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    error: Optional[str] = None
    duration: float = 0.0
    abandoned: bool = False
    overflow: bool = False
    cpu_s: Optional[float] = None
    state: Optional[str] = None
    cpu_pressure: Optional[float] = None

    @property
    def signal(self) -> Optional[str]:
        """The name of the signal that killed the command (``"SIGSEGV"``), or ``None``.
        (A command npudoctor killed for its deadline or output is ``timed_out`` or
        ``overflow`` instead, with no return code.)"""
        if self.returncode is None or self.returncode >= 0:
            return None
        try:
            return signal.Signals(-self.returncode).name
        except ValueError:
            return f"signal {-self.returncode}"

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and self.error is None

    def describe(self) -> str:
        """One line saying how the command ended, for evidence."""
        return f"`{' '.join(self.argv)}`: {self.outcome()}"

    def outcome(self) -> str:
        """How the command ended, without the command line (which may be a whole script
        given with ``-c``): "exit 1", "no answer within 5.0 s (killed)", ..."""
        if self.error:
            return self.error
        if self.timed_out:
            return f"no answer within {self.duration:.1f} s (killed)"
        if self.signal:
            lines = len(self.stdout.splitlines())
            return f"killed by {self.signal} after printing {lines} line{'s' if lines != 1 else ''}"
        return f"exit {self.returncode}"

    def to_dict(self) -> Dict[str, object]:
        return {
            "argv": list(self.argv),
            "returncode": self.returncode,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "timed_out": self.timed_out,
            "error": self.error,
            "duration": round(self.duration, 3),
        }


#: ``errno`` of a refused special file (a FIFO, socket or device where a file was expected).
_ENOTREG = errno.EINVAL

_KINDS = (
    (stat_mod.S_ISFIFO, "a FIFO"),
    (stat_mod.S_ISSOCK, "a socket"),
    (stat_mod.S_ISCHR, "a character device"),
    (stat_mod.S_ISBLK, "a block device"),
    (stat_mod.S_ISDIR, "a directory"),
)


def file_kind(mode: int) -> str:
    """What a ``st_mode`` is, in words: ``"a regular file"``, ``"a FIFO"``, ``"a socket"``…"""
    if stat_mod.S_ISREG(mode):
        return "a regular file"
    for test, words in _KINDS:
        if test(mode):
            return words
    return "a special file"


def open_regular(path: str, devices: bool = False, pipes: bool = False) -> BinaryIO:
    """Open ``path`` (a path of *this* machine) for binary reading without ever blocking.

    The file is opened with ``O_NONBLOCK | O_NOCTTY`` and its type checked with ``fstat``
    before anything is read: anything but a regular file (a FIFO, socket, directory, or a
    device node unless ``devices`` is true) raises ``OSError(EINVAL)`` whose ``strerror``
    names it ("not a regular file: a FIFO").  A file that would block on read (``/proc/kmsg``)
    raises ``OSError(EAGAIN)`` from the read.  ``pipes`` accepts a FIFO too, read blocking
    (only for a path the user named, as ``--from <(…)``: with no writer it reads as empty).
    Every read of a file npudoctor did not write
    itself goes through this function (or :func:`read_capped`)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        device = stat_mod.S_ISCHR(mode) or stat_mod.S_ISBLK(mode)
        if stat_mod.S_ISDIR(mode):
            raise OSError(errno.EISDIR, "is a directory", path)
        if pipes and stat_mod.S_ISFIFO(mode):
            os.set_blocking(fd, True)
        elif not stat_mod.S_ISREG(mode) and not (devices and device):
            raise OSError(_ENOTREG, f"not a regular file: {file_kind(mode)}", path)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_capped(
    path: str, limit: int = DEFAULT_READ_LIMIT, devices: bool = False, pipes: bool = False, whole: bool = False
) -> Tuple[bytes, bool]:
    """Read at most ``limit`` bytes of ``path`` (of this machine) through :func:`open_regular`:
    ``(data, truncated)``.  Raises ``OSError`` (a FIFO, a device, a read that would block,
    the usual errno); ``truncated`` says the file held more than ``limit`` bytes.  ``whole``:
    the caller wants the whole file or nothing, so a regular file whose size is over
    ``limit`` is not read at all (``(b"", True)``)."""
    with open_regular(path, devices=devices, pipes=pipes) as fh:
        want = limit
        if whole:
            st = os.fstat(fh.fileno())
            if stat_mod.S_ISREG(st.st_mode) and st.st_size > limit:
                return b"", True
            if stat_mod.S_ISREG(st.st_mode) and st.st_size > 0:
                want = min(limit, st.st_size + 4096)  # read() allocates what it is asked for first
        data = fh.read(want + 1)
    if data is None:  # a non-blocking read with nothing to give
        raise OSError(errno.EAGAIN, "no data without blocking", path)
    if len(data) > want:
        return data[:want], True
    return data, False


def read_capped_text(path: str, limit: int = DEFAULT_READ_LIMIT, what: str = "file", pipes: bool = False) -> str:
    """The UTF-8 text (bad bytes replaced) of a small file of this machine read through
    :func:`read_capped`.  Raises ``OSError`` as that does, and ``OSError(EFBIG)`` when the
    file is over ``limit`` bytes (``what`` names it in the message); ``pipes`` as for
    :func:`open_regular`."""
    data, truncated = read_capped(path, limit, pipes=pipes)
    if truncated:
        raise OSError(errno.EFBIG, f"{what} over {limit} bytes", path)
    return data.decode("utf-8", errors="replace")


def _errno_reason(exc: OSError) -> str:
    if exc.errno == errno.ENOENT:
        return "not found"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if exc.errno == errno.ELOOP:
        return "symlink loop"
    if exc.errno == errno.EISDIR:
        return "is a directory"
    if exc.errno == errno.ENOTDIR:
        return "not a directory"
    if exc.errno == errno.EAGAIN:
        return "would block on read"
    return exc.strerror or str(exc)


def walk_tree(top: str, onerror: Callable[[OSError], None]) -> Iterator[Tuple[str, List[str], List[str]]]:
    """``os.walk(top)`` top down, symlinks not followed, names sorted: ``(dirpath,
    dirnames, filenames)``; prune ``dirnames`` in place to skip a subtree; a directory that
    cannot be listed is given to ``onerror`` and skipped.  A loop with its own stack: the
    ``os.walk`` of Python before 3.12 recurses, so a tree a few thousand levels deep was a
    RecursionError."""
    stack = [top]
    while stack:
        dirpath = stack.pop()
        dirnames: List[str] = []
        filenames: List[str] = []
        links: Set[str] = set()
        try:
            with os.scandir(dirpath) as it:
                for entry in it:  # one pass; the type from the directory entry where it says
                    try:
                        is_dir = entry.is_dir()
                    except OSError:
                        is_dir = False
                    if is_dir:
                        dirnames.append(entry.name)
                        if entry.is_symlink():
                            links.add(entry.name)
                    else:
                        filenames.append(entry.name)
        except OSError as exc:
            onerror(exc)
            continue
        dirnames.sort()
        filenames.sort()
        yield dirpath, dirnames, filenames
        prefix = dirpath if dirpath.endswith(os.sep) else dirpath + os.sep
        stack.extend(prefix + d for d in reversed(dirnames) if d not in links)
