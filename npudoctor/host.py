"""The Host seam: the only door between npudoctor and the machine it diagnoses.

Every probe reads files, environment variables and command output through a
:class:`Host`.  A host has

* ``root`` -- a directory seen as ``/`` (``/`` itself on a live system, a container
  rootfs, or a test scenario's ``root/``).  Paths handed to the host are paths *of the
  diagnosed machine*; symlinks inside the root (absolute ones too) resolve inside the
  root, as under ``chroot``.
* ``environ`` -- the process environment being diagnosed (a plain mapping).
* ``run(argv, timeout)`` -- runs a command found on ``environ['PATH']`` with a hard
  deadline.  Commands are never taken from the root.

Reads never raise for ordinary trouble: a missing, unreadable or oversized file, a
symlink loop, non-UTF-8 bytes -- each comes back as a :class:`FileRead` whose ``error``
says what happened, so a probe can record it as a fact.
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import signal
import stat as stat_mod
import subprocess
import threading
import time
from typing import TYPE_CHECKING

from npudoctor.hostio import (
    DEFAULT_READ_LIMIT,
    CommandResult,
    FileRead,
    _errno_reason,
    file_kind,
    open_regular,
    read_capped,
    read_capped_text,
    walk_tree,
)
from npudoctor.hostproc import (
    EXIT_GRACE,
    RUNNING,
    SPAWN_LOCK,
    Started,
    background,
    become_subreaper,
    cpu_pressure_share,
    cpu_pressure_total,
    cpu_state,
    drain,
    foreground,
    kill_tree,
    note_timeout,
    reap_orphans,
    runnable,
    starttime,
)

if TYPE_CHECKING:
    from typing import Dict, Iterator, List, Mapping, Optional, Sequence, Tuple


__all__ = [
    "DEFAULT_READ_LIMIT",
    "DEFAULT_TIMEOUT",
    "OUTPUT_LIMIT",
    "CommandResult",
    "FileRead",
    "Host",
    "file_kind",
    "open_regular",
    "read_capped",
    "read_capped_text",
]

#: Default deadline of one command (seconds).
DEFAULT_TIMEOUT = 5.0

#: Largest command output kept per stream (bytes); the rest is dropped and flagged.
OUTPUT_LIMIT = 4 << 20

_MAX_SYMLINKS = 40

# npu-smi must not run concurrently with itself (the DCMI layer serializes badly).
_NPU_SMI_LOCK = threading.Lock()
#: Most bytes of ``/proc/self/environ`` read (the kernel caps a new program's arguments and
#: environment together well below this).
_ENVIRON_LIMIT = 16 << 20


def started_environ() -> Dict[str, str]:
    """This process's environment as it was started: ``os.environ`` without the ``LC_CTYPE``
    that Python's locale coercion (PEP 538) sets when it starts in the C locale, which the
    judged workload never had and the one ``npudoctor exec`` starts must not get.  The
    environment the process was started with is read back from ``/proc/self/environ``;
    where it cannot be read whole, ``os.environ`` as it is."""
    env = dict(os.environ)
    if "LC_CTYPE" not in env:
        return env
    try:
        with open("/proc/self/environ", "rb") as fh:
            block = fh.read(_ENVIRON_LIMIT)
    except OSError:
        return env
    if len(block) >= _ENVIRON_LIMIT:
        return env
    started = [item[len(b"LC_CTYPE=") :] for item in block.split(b"\0") if item.startswith(b"LC_CTYPE=")]
    if started:
        env["LC_CTYPE"] = os.fsdecode(started[-1])
    else:
        del env["LC_CTYPE"]
    return env


class Host:
    """A machine to diagnose: a root directory, an environment and a command runner.

    ``root`` is a directory path (``"/"`` for the live system).  ``environ`` is the
    environment of the diagnosed process (defaults to ``os.environ``).  With
    ``commands=False`` :meth:`run` runs nothing and answers "commands disabled"
    (``--no-commands``).  A host is cheap to create and holds no open resources but the
    commands :meth:`start` began, until :meth:`run` collects them or :meth:`close` ends them.
    """

    def __init__(
        self,
        root: str = "/",
        environ: Optional[Mapping[str, str]] = None,
        commands: bool = True,
    ) -> None:
        self.root = os.path.abspath(root)
        self.environ: Dict[str, str] = started_environ() if environ is None else dict(environ)
        self.commands = commands
        self.live = self.root == "/"
        self._dirs: Dict[str, str] = {}  # real() of directories, see there
        #: Paths refused to this process (EACCES/EPERM): the first component refused -> why.
        self.denied: Dict[str, str] = {}
        #: Commands :meth:`start` began, by argv, until :meth:`run` collects them.
        self._started: Dict[Tuple[str, ...], Started] = {}

    def _note(self, path: str, exc: OSError) -> None:
        """Record a refusal of ``path``: refused is not absent (see :meth:`blocker`)."""
        if exc.errno in (errno.EACCES, errno.EPERM):
            self.denied.setdefault(self.resolve(self.blocker(path)), "permission denied")

    def blocker(self, path: str) -> str:
        """The first component of ``path`` (a path of the diagnosed machine) this process
        may not search: a directory without search permission on the way, else ``path``
        itself (a file it may not read, a directory it may not list)."""
        shown = self.display(path)
        parts = [p for p in shown.split("/") if p]
        for depth in range(1, len(parts)):
            prefix = "/" + "/".join(parts[:depth])
            real = self._safe_real(prefix)
            if real is None:
                break
            try:
                os.stat(real)
            except OSError as exc:
                if exc.errno in (errno.EACCES, errno.EPERM):
                    return "/" + "/".join(parts[: depth - 1]) if depth > 1 else "/"
                break
            if not os.access(real, os.X_OK):
                return prefix
        return shown

    def access_facts(self) -> Dict[str, object]:
        """The ``access`` section: who read (``uid``, ``gid`` of this process) and the
        paths refused to it (``denied``, sorted), for "cannot read X as uid N" findings."""
        return {"uid": os.geteuid(), "gid": os.getegid(), "denied": sorted(self.denied)}

    # ------------------------------------------------------------------ paths
    def real(self, path: str) -> str:
        """Map a path of the diagnosed machine to a path on this machine.

        Symlinks are followed inside the root (an absolute target is re-rooted); a
        missing component ends the walk and the rest is appended as is.  Raises
        ``OSError(ELOOP)`` on a symlink loop, ``OSError(EINVAL)`` for a path with a NUL
        byte (never a ``ValueError``).  On a live host this is ``path`` itself.
        """
        if "\0" in path:
            raise OSError(errno.EINVAL, "NUL byte in path", path.replace("\0", "\\0"))
        if self.live:
            return path
        parts = [p for p in path.split("/") if p]
        if len(parts) > 1 and "." not in parts and ".." not in parts:
            # Parents resolved once (100k dist-info dirs share one site-packages).
            key = "/".join(parts[:-1])
            head = self._dirs.get(key)
            if head is None:
                head = self.real(key)
                if len(self._dirs) > 65536:
                    self._dirs.clear()
                self._dirs[key] = head
            candidate = os.path.join(head, parts[-1])
            try:
                if not stat_mod.S_ISLNK(os.lstat(candidate).st_mode):
                    return candidate
            except OSError:
                return candidate
        return self._walk_real(path, parts)

    def _walk_real(self, path: str, parts: List[str]) -> str:
        resolved: List[str] = []
        hops = 0
        while parts:
            part = parts.pop(0)
            if part == "..":
                if resolved:
                    resolved.pop()
                continue
            if part == ".":
                continue
            candidate = os.path.join(self.root, *resolved, part)
            try:
                is_link = stat_mod.S_ISLNK(os.lstat(candidate).st_mode)
            except OSError:
                resolved.append(part)
                resolved.extend(parts)
                break
            if not is_link:
                resolved.append(part)
                continue
            hops += 1
            if hops > _MAX_SYMLINKS:
                raise OSError(errno.ELOOP, "symlink loop", path)
            target = os.readlink(candidate)
            target_parts = [p for p in target.split("/") if p]
            if target.startswith("/"):
                resolved = []
            parts = target_parts + parts
        return os.path.join(self.root, *resolved)

    def display(self, path: str) -> str:
        """The path as the diagnosed machine sees it (for evidence and fix-its)."""
        return posixpath.normpath("/" + path.lstrip("/"))

    def _safe_real(self, path: str) -> Optional[str]:
        try:
            return self.real(path)
        except OSError:
            return None

    def exists(self, path: str) -> bool:
        """True when ``path`` exists on the diagnosed machine (symlinks followed).  A path
        behind a directory this process may not search is not known to exist: it is
        recorded in :attr:`denied`."""
        return self.stat(path) is not None

    def is_dir(self, path: str) -> bool:
        st = self.stat(path)
        return st is not None and stat_mod.S_ISDIR(st.st_mode)

    def is_file(self, path: str) -> bool:
        st = self.stat(path)
        return st is not None and stat_mod.S_ISREG(st.st_mode)

    def stat(self, path: str, follow: bool = True) -> Optional[os.stat_result]:
        """``os.stat`` (or ``lstat`` with ``follow=False``) of a path; ``None`` if absent
        or refused (a refusal is recorded in :attr:`denied`)."""
        try:
            if follow:
                return os.stat(self.real(path))
            parent, name = posixpath.split(self.display(path))
            return os.lstat(os.path.join(self.real(parent), name))
        except OSError as exc:
            self._note(path, exc)
            return None
        except ValueError:  # a NUL byte in the name
            return None

    def readlink(self, path: str) -> Optional[str]:
        """The target text of a symlink on the diagnosed machine, or ``None``."""
        try:
            parent, name = posixpath.split(self.display(path))
            return os.readlink(os.path.join(self.real(parent), name))
        except (OSError, ValueError):
            return None

    def resolve(self, path: str) -> str:
        """The canonical path on the diagnosed machine (symlinks resolved in the root)."""
        if self.live and "\0" not in path:
            return os.path.realpath(path)
        try:
            real = self.real(path)
        except OSError:
            return self.display(path)
        rel = os.path.relpath(real, self.root)
        return "/" if rel == "." else "/" + rel

    def listdir(self, path: str) -> List[str]:
        """Sorted entry names of a directory; an empty list if it cannot be read (a
        refusal is recorded in :attr:`denied`)."""
        try:
            return sorted(os.listdir(self.real(path)))
        except OSError as exc:
            self._note(path, exc)
            return []

    def walk(self, path: str) -> Iterator[Tuple[str, List[str], List[str]]]:
        """``os.walk`` of a directory of the diagnosed machine, top down, symlinks not
        followed: ``(dirpath, dirnames, filenames)`` with ``dirpath`` as the diagnosed
        machine sees it, names sorted; prune ``dirnames`` in place as with ``os.walk``.  A directory that
        cannot be listed is skipped (a refusal is recorded in :attr:`denied`)."""
        try:
            top = self.real(path)
        except OSError:
            return
        base = self.display(path)

        def refused(exc: OSError) -> None:
            self._note(base, exc)

        prefix = top if top.endswith(os.sep) else top + os.sep
        shown = base if base.endswith("/") else base + "/"
        for dirpath, dirnames, filenames in walk_tree(top, refused):
            # walk_tree joins names onto ``top``: the part after it is the relative path
            rel = dirpath[len(prefix) :] if dirpath.startswith(prefix) else os.path.relpath(dirpath, top)
            yield (base if dirpath == top or rel == "." else shown + rel.replace(os.sep, "/")), dirnames, filenames

    def glob(self, directory: str, prefix: str = "", suffix: str = "") -> List[str]:
        """Paths (of the diagnosed machine) of entries in ``directory`` whose names
        start with ``prefix`` and end with ``suffix``, sorted."""
        base = self.display(directory)
        return [
            posixpath.join(base, name)
            for name in self.listdir(directory)
            if name.startswith(prefix) and name.endswith(suffix)
        ]

    # ------------------------------------------------------------------ reads
    def read_bytes(
        self, path: str, limit: int = DEFAULT_READ_LIMIT, devices: bool = False
    ) -> Tuple[Optional[bytes], Optional[str], bool]:
        """Read up to ``limit`` bytes: ``(data, error, truncated)``; never raises.

        Only regular files are read (a device node too when ``devices``): a FIFO, socket
        or directory is the error "not a regular file: a FIFO" (see :func:`open_regular`),
        never a hang."""
        try:
            data, truncated = read_capped(self.real(path), limit, devices=devices)
        except OSError as exc:
            self._note(path, exc)
            return None, _errno_reason(exc), False
        return data, None, truncated

    def read_text(self, path: str, limit: int = DEFAULT_READ_LIMIT) -> FileRead:
        """Read a text file of the diagnosed machine (UTF-8, bad bytes replaced)."""
        shown = self.display(path)
        data, error, truncated = self.read_bytes(path, limit)
        if data is None:
            return FileRead(shown, error=error)
        try:
            text = data.decode("utf-8")
            lossy = False
        except UnicodeDecodeError:
            text = data.decode("utf-8", errors="replace")
            lossy = True
        return FileRead(shown, text=text, truncated=truncated, lossy=lossy)

    # ------------------------------------------------------------ environment
    def getenv(self, name: str, default: Optional[str] = None) -> Optional[str]:
        return self.environ.get(name, default)

    def env_paths(self, name: str) -> List[str]:
        """A ``:``-separated variable split into its non-empty entries."""
        return [p for p in self.environ.get(name, "").split(":") if p]

    def which(self, name: str) -> Optional[str]:
        """Full path of an executable found on this host's ``PATH``, or ``None``.  Only
        absolute entries are searched (``.`` or ``usr/bin`` would depend on the working
        directory), never inside the root (:func:`npudoctor.hostproc.runnable`)."""
        for directory in self.env_paths("PATH"):
            candidate = os.path.join(directory, name)
            ok = os.path.isabs(directory) and runnable(candidate, self.root, self.live)
            if ok and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
        return None

    # --------------------------------------------------------------- commands
    def run(
        self,
        argv: Sequence[str],
        timeout: float = DEFAULT_TIMEOUT,
        env: Optional[Mapping[str, str]] = None,
    ) -> CommandResult:
        """Run ``argv`` (``argv[0]`` looked up on ``PATH``) with a hard deadline of
        ``timeout`` seconds.

        The child runs in its own process group with ``stdin`` closed; on timeout the
        whole group gets SIGKILL, and a child that will not die within a short grace
        is abandoned (``abandoned=True``).  ``npu-smi`` calls are serialized.  A command
        :meth:`start` began earlier with the same ``argv`` (and ``env`` ``None``) is not
        run again: it is collected, waited for at most ``timeout`` seconds from now (what
        it printed before is always read: an early start never turns a finished command
        into a timed-out one), its ``duration`` counted from its start.  Never raises for
        a missing or failing command: see :class:`CommandResult`.
        """
        argv = [str(a) for a in argv]
        key = tuple(argv)
        if env is None and key in self._started:
            return self._collect(self._started.pop(key), timeout)
        result = CommandResult(argv=argv)
        if not self.commands:
            result.error = "commands disabled"
            return result
        exe = argv[0] if "/" in argv[0] else self.which(argv[0])
        if exe is None:
            result.error = "command not found"
            return result
        if not runnable(exe, self.root, self.live):
            result.error = "refused: not an absolute path outside the root"
            return result
        lock = _NPU_SMI_LOCK if _serialized(exe) else None
        if lock is not None:
            self._settle(timeout)  # an npu-smi this host started first: it holds the lock
            if not lock.acquire(timeout=max(timeout, 0.01)):
                result.timed_out = True
                result.duration = timeout
                return result
        try:
            started = self._spawn(exe, argv, env, result)
            return result if started is None else self._collect(started, timeout)
        finally:
            if lock is not None:
                lock.release()

    def start(self, argv: Sequence[str]) -> bool:
        """Start ``argv`` now, in the background, so that the :meth:`run` of the same
        ``argv`` later only collects it: a slow command (``npu-smi info``: hundreds of
        milliseconds on a real node) runs while the other probes read files.  Its deadline
        is set by that :meth:`run` (``timeout`` from when it asks), so the head start only
        ever helps.  Returns whether it started; nothing starts with commands disabled, for
        a command not found, for one already started, or for an ``npu-smi`` while another
        runs (they are serialized).  Until collected it is not among the commands anyone
        waits on (:func:`npudoctor.hostproc.running_commands`: health does not blame a
        verdict cut short on it).  What is not collected is ended by :meth:`close`.  Never
        raises."""
        argv = [str(a) for a in argv]
        key = tuple(argv)
        if not self.commands or key in self._started:
            return False
        exe = argv[0] if "/" in argv[0] else self.which(argv[0])
        if exe is None or not runnable(exe, self.root, self.live):
            return False
        lock = _NPU_SMI_LOCK if _serialized(exe) else None
        if lock is not None and not lock.acquire(blocking=False):
            return False
        started = self._spawn(exe, argv, None, CommandResult(argv=argv))
        if started is None:
            if lock is not None:
                lock.release()
            return False
        started.lock = lock
        background(started.pid)
        self._started[key] = started
        return True

    def close(self) -> None:
        """End the commands :meth:`start` began that no :meth:`run` collected (their
        process trees killed, reaped; their output dropped).  Never raises."""
        while self._started:
            _key, started = self._started.popitem()
            proc = started.proc
            if proc is None:
                continue
            foreground(proc.pid)
            kill_tree(proc.pid)
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.5)
            self._end(started)

    def _settle(self, timeout: float) -> None:
        """Wait (at most ``timeout`` seconds each) for the started ``npu-smi`` commands and
        keep their results for their :meth:`run`: the lock they hold is free again."""
        for key, started in list(self._started.items()):
            if started.lock is not None:
                self._started[key] = Started.done(self._collect(started, timeout))

    def _spawn(
        self,
        exe: str,
        argv: List[str],
        env: Optional[Mapping[str, str]],
        result: CommandResult,
    ) -> Optional[Started]:
        """Start the child; ``None`` with ``result.error`` set when it could not start."""
        start = time.monotonic()
        become_subreaper()
        try:
            with SPAWN_LOCK:
                proc = subprocess.Popen(
                    [exe] + argv[1:],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    env=dict(self.environ if env is None else env),
                    start_new_session=True,
                )
                RUNNING.add(proc.pid)
            born = starttime(proc.pid)
            pressure = cpu_pressure_total()
        except ValueError:  # a NUL byte in an argument or the environment
            result.error = "NUL byte in an argument or the environment"
            return None
        except OSError as exc:
            result.error = _errno_reason(exc)
            if result.error == "not found":
                result.error = "command not found"
            return None
        return Started(result, proc, start, born, pressure)

    @staticmethod
    def _end(started: Started) -> None:
        """What follows a child's end: the rest of its process group killed, the orphans
        it left reaped, the npu-smi lock it held released."""
        proc = started.proc
        if proc is not None:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)  # what is left of its group
            with SPAWN_LOCK:
                RUNNING.discard(proc.pid)
            reap_orphans(started.born)
        if started.lock is not None:
            started.lock.release()
            started.lock = None

    def _collect(self, started: Started, timeout: float) -> CommandResult:
        """Read a started child until it ends or ``timeout`` seconds from now pass, end
        what is left of it, fill its result.  A child that has ended already is read in
        full whatever ``timeout`` says (it printed all it had; a pipe left open by what it
        left behind is given up after :data:`npudoctor.hostproc.EXIT_GRACE`)."""
        result, proc = started.result, started.proc
        if proc is None:  # collected already (:meth:`_settle`)
            return result
        foreground(proc.pid)
        start, now = started.began, time.monotonic()
        deadline = now + max(timeout, 0.0)
        if proc.poll() is not None:
            deadline = max(deadline, now + EXIT_GRACE + 0.1)
        try:
            out, err, ending = drain(proc, deadline, OUTPUT_LIMIT)
            if ending == "timeout":
                result.cpu_s, result.state = cpu_state(proc.pid)
                result.cpu_pressure = cpu_pressure_share(started.pressure, time.monotonic() - start)
                note_timeout(result.argv, time.monotonic() - start, result.cpu_s, result.state, result.cpu_pressure)
            if ending:
                kill_tree(proc.pid)
            try:
                proc.wait(timeout=0.5 if ending else max(0.05, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                ending = ending or "timeout"
                kill_tree(proc.pid)
                try:
                    proc.wait(timeout=0.5)
                except subprocess.TimeoutExpired:
                    result.abandoned = True
        finally:
            self._end(started)
        result.duration = time.monotonic() - start
        if ending == "timeout":
            result.timed_out = True
        elif ending == "overflow":
            result.overflow = True
            result.error = f"output over {OUTPUT_LIMIT} bytes (killed)"
        else:
            result.returncode = proc.returncode
        result.stdout = _decode(out)
        result.stderr = _decode(err)
        return result


def _serialized(exe: str) -> bool:
    """Whether ``exe`` runs one at a time in this process (``npu-smi``: see :data:`_NPU_SMI_LOCK`)."""
    return posixpath.basename(exe) == "npu-smi"


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace") if data else ""
