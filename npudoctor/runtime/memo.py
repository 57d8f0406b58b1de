"""A health verdict reused while every input it was made from is unchanged (issue 18).

``npudoctor health`` runs every few seconds, and on a healthy node nothing it reads
changes between two runs.  A verdict is a function of what the probes read through the
:class:`~npudoctor.host.Host` seam (files, directory listings, symlinks, ``PATH``
look-ups, command output), of the diagnosed environment, the options, the matrix and
config files, and npudoctor's own code -- rules never read anything else (the seam is
enforced by ``tests/test_host_seam.py``; verdicts are judged anew from replayed facts by
``tests/test_replay_verdicts.py``).  So:

* a full run is *recorded*: :func:`recording` sets :data:`npudoctor.host.OBSERVER`, which
  notes every outermost read of every Host with a fingerprint of its outcome
  (:func:`fingerprint`); the verdict and that journal are written to a memo file;
* the next run *replays* the journal (:func:`reuse`): the same reads on a fresh Host, the
  same commands run again (``npu-smi info`` is always asked again: a chip that turned
  Critical is a new output), the matrix and config files stat'ed again, and prints the
  recorded verdict only when every fingerprint is equal and it was made today (rules
  judge by the date: the matrix's age, a torch_npu line's end of life).  The first difference ends the
  replay and the full check runs (no stale verdict is ever printed).

What is fingerprinted, and how (:func:`fingerprint`): file contents by length, CRC-32
and Adler-32 of the bytes read (not by mtime: a file rewritten within one timestamp tick
is still seen); ``stat`` by mode, ids, size, mtime, ctime, inode and device -- for the
kernel's files (``/proc``, ``/sys``, ``/dev`` of a live system) by mode, ids and device
number only, and ``/proc/PID/status`` by the fields npudoctor reads of it
(:func:`npudoctor.parsers.procstatus.parse_proc_status`: capabilities and ids; its pid
and memory counters differ in every process); directory listings by their names;
commands by exit status and output -- ``npu-smi info``'s table by what the rules judge of
it (:func:`same_outcome`): on a real node its power, temperature, AI Core and HBM columns
move every second, and no verdict depends on them for a chip without processes
(:data:`TELEMETRY`; ``tests/test_health_memo_telemetry.py``).

No memo is written (the next run is a full one again) for a run that timed out, was cut
short, had a read refused (EACCES: who may read changes with the reader), walked a
directory tree, ran a command with an environment of its own or one that timed out,
judged ``--from`` or ``--pid`` (a snapshot, another process's environment), or with
``--fresh``.  The environment ``--exec-env`` and a host node judge (what ``set_env.sh``
would set) is made from reads through the Host, recorded like the others; the memo keeps
only the variables it adds (:data:`_DELTA_NAME`).

Memo files: ``$XDG_RUNTIME_DIR`` (else ``$TMPDIR``, else ``/tmp``)
``/npudoctor-memo-UID-KEY.json``, written atomically, trusted only when a regular file
(not a symlink) owned by this user and not writable by others, and its verdict is
printable text (as a ``--cache-ttl`` result is checked); KEY hashes the options, this process's environment,
working directory, ids, interpreter and npudoctor's code (size and mtime of each of its
files, and of the bundled matrix's), so another setting never meets this one's memo.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import sys
import time
from typing import TYPE_CHECKING

from npudoctor.runtime.deadline import Budget
from npudoctor.runtime.memokey import FORMAT, digest, secure_digest

if TYPE_CHECKING:
    from typing import Any, Dict, Iterator, List, Optional, Tuple

#: Largest memo file read (bytes).
MEMO_LIMIT = 8 << 20
#: Parameters of each observed Host method, in order (to store a call by name).
_PARAMS: Dict[str, Tuple[str, ...]] = {
    "real": ("path",),
    "stat": ("path", "follow"),
    "readlink": ("path",),
    "resolve": ("path",),
    "listdir": ("path",),
    "read_bytes": ("path", "limit", "devices"),
    "which": ("name",),
    "run": ("argv", "timeout", "env"),
}
#: Variables a Host's environment may differ from this process's in, for its memo to be
#: replayable: those ``set_env.sh`` of the CANN toolkit and NNAL set (and ``--user``'s
#: login variables).  The memo keeps their values -- paths, never secrets (a name like a
#: secret's, :data:`npudoctor.redact.SECRET_NAME`, is not kept); a Host whose
#: environment differs in another variable is replayed only when it is the one
#: diagnosed (the ``--env-file``'s or this process's).
_DELTA_NAME = (
    r"(PATH|LD_LIBRARY_PATH|LD_PRELOAD|PYTHONPATH|HOME|USER|LOGNAME|TOOLCHAIN_HOME"
    r"|(ASCEND|ATB|ASDOPS|LCCL|TBE|OPP|HCCL|CANN)_[A-Z0-9_]+)\Z"
)  # matched with re.match (re's cache) when a memo is recorded: not compiled on reuse
#: Directories of a live system whose files the kernel makes: stat'ed by mode, ids and
#: device number only (their times and inodes change without meaning anything).
_KERNEL_DIRS = ("/proc/", "/sys/", "/dev/")


def _kernel_path(host: Any, path: str) -> bool:
    return bool(host.live) and host.display(path).startswith(_KERNEL_DIRS)


def _stat_print(st: Optional[os.stat_result], kernel: bool) -> Any:
    if st is None:
        return None
    if kernel:
        return [st.st_mode, st.st_uid, st.st_gid, st.st_rdev]
    return [st.st_mode, st.st_uid, st.st_gid, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


def _status_file(path: str) -> bool:
    parts = path.strip("/").split("/")
    return len(parts) == 3 and parts[0] == "proc" and parts[2] == "status"


def fingerprint(op: str, host: Any, call: Dict[str, Any], outcome: Any) -> Any:
    """What must be equal for ``host.<op>(**call)`` to have told the same: a JSON-able
    value (see the module text).  Raises ``ValueError`` for an outcome no memo may rest
    on (a command that timed out, overflowed or was abandoned)."""
    if isinstance(outcome, OSError):
        return ["raised", outcome.errno]
    if op == "stat":
        return _stat_print(outcome, _kernel_path(host, call["path"]))
    if op == "read_bytes":
        data, error, truncated = outcome
        if data is None:
            return [None, error, truncated]
        shown = host.display(call["path"])
        if host.live and _status_file(shown):
            from npudoctor.parsers.procstatus import parse_proc_status

            parsed = parse_proc_status(data.decode("utf-8", errors="replace"))
            return ["status", json.dumps(parsed, sort_keys=True), truncated]
        return [digest(data), error, truncated]
    if op == "listdir":
        return digest("\0".join(outcome).encode("utf-8", errors="surrogateescape"))
    if op == "run":
        printed = _run_print(outcome)
        if _is_npu_smi_info(outcome.argv):
            printed.append(judged_table(outcome.stdout))
        return printed
    return outcome  # real, resolve, readlink, which: a path or None


def _run_print(outcome: Any) -> List[Any]:
    if outcome.timed_out or outcome.overflow or outcome.abandoned:
        raise ValueError(f"`{' '.join(outcome.argv[:3])}` did not finish normally")
    out = digest(outcome.stdout.encode("utf-8", errors="surrogateescape"))
    err = digest(outcome.stderr.encode("utf-8", errors="surrogateescape"))
    return [outcome.returncode, out, err, outcome.error]


def _is_npu_smi_info(argv: Any) -> bool:
    return (
        isinstance(argv, list) and len(argv) == 2 and os.path.basename(str(argv[0])) == "npu-smi" and argv[1] == "info"
    )


#: Columns of ``npu-smi info`` that move from one second to the next on a working chip
#: (power, temperature, AI Core use, huge pages, memory and HBM in use) and that no verdict
#: depends on for a chip without processes: DEV011 (processes on an NPU) reads the memory in
#: use only of the chips that have some.  ``tests/test_health_memo_telemetry.py`` checks on
#: every scenario that moving them changes no verdict.
TELEMETRY = ("power_w", "temp_c", "aicore_pct", "hugepages_used", "memory_used_mb", "hbm_used_mb")


def judged_table(stdout: str) -> Optional[str]:
    """A fingerprint of what the rules judge of an ``npu-smi info`` table (parsed by the
    probe's own parser, :func:`npudoctor.parsers.npu_smi.parse_info`): everything but the
    :data:`TELEMETRY` of the chips without processes -- or ``None`` when ``stdout`` holds
    no chip table (then only the same bytes are the same answer)."""
    from npudoctor.parsers.npu_smi import parse_info

    info = parse_info(stdout)
    if not info.get("chips"):
        return None
    busy = {(p.get("npu_id"), p.get("chip_id")) for p in info.get("processes") or []}
    for chip in info["chips"]:
        if (chip.get("npu_id"), chip.get("chip_id")) not in busy:
            for name in TELEMETRY:
                chip.pop(name, None)
    return secure_digest(json.dumps(info, sort_keys=True, default=str).encode("utf-8", errors="surrogateescape"))


def same_outcome(op: str, host: Any, call: Dict[str, Any], outcome: Any, expected: Any) -> bool:
    """True when ``host.<op>(**call)`` told today (``outcome``) what it told when recorded
    (``expected``, a :func:`fingerprint`): the fingerprints are equal, or -- for ``npu-smi
    info`` -- its status and error output are, and its table is the same but for the
    :data:`TELEMETRY` of idle chips (the table is parsed only when its bytes differ).
    Raises ``ValueError`` as :func:`fingerprint` does."""
    if op == "run" and _is_npu_smi_info(getattr(outcome, "argv", None)):
        now = _run_print(outcome)
        if not (isinstance(expected, list) and len(expected) == 5):
            return False
        if now == expected[:4]:
            return True  # the same bytes
        if now[0] != expected[0] or now[2:] != expected[2:4] or expected[4] is None:
            return False
        return bool(judged_table(outcome.stdout) == expected[4])
    return bool(fingerprint(op, host, call, outcome) == expected)  # lists and scalars, as JSON reads them


def environ_digest(environ: Dict[str, str]) -> str:
    """A fingerprint of an environment mapping (names and values, in sorted order)."""
    return secure_digest(json.dumps(sorted(environ.items())).encode("utf-8", errors="surrogateescape"))


class Journal:
    """The reads of one recorded run: ``ops`` (``[op, host number, call, fingerprint]``),
    ``hosts`` (``[root, environ digest, commands, delta, gone]`` of each Host read
    through, by number: ``delta`` the variables its environment sets otherwise than this
    process's, when all are :data:`_DELTA_NAME` ones, else ``None``; ``gone`` the names it
    lacks)
    and ``refused`` (why no memo may be written, ``None`` while one may); ``started``
    the time the run began."""

    def __init__(self) -> None:
        self.ops: List[List[Any]] = []
        self.hosts: List[List[Any]] = []
        self.refused: Optional[str] = None
        #: When the recorded run started (seconds since the epoch): the time its verdict
        #: is of (a run that crosses midnight judged by the day it started on).
        self.started = time.time()
        self._numbers: Dict[int, int] = {}
        self._kept: List[Any] = []  # the hosts themselves: their id()s stay unique
        #: (op, host number, call) -> fingerprint of the reads noted: a read repeated with
        #: the same outcome is noted once (a quarter of a health run's reads are repeats)
        self._seen: Dict[Tuple[str, int, str], Any] = {}

    def refuse(self, why: str) -> None:
        """No memo for this run, because ``why`` (the first reason is kept)."""
        if self.refused is None:
            self.refused = why

    def observe(self, op: str, host: Any, args: Tuple[Any, ...], kwargs: Dict[str, Any], outcome: Any) -> None:
        """:data:`npudoctor.host.OBSERVER`: note one read."""
        if self.refused is not None:
            return
        params = _PARAMS.get(op)
        if params is None:
            self.refuse(f"a {op} of {args[0] if args else '?'}")
            return
        call = dict(zip(params, args))
        call.update(kwargs)
        if op == "run" and call.get("env") is not None:
            self.refuse("a command run with an environment of its own")
            return
        number = self._numbers.get(id(host))
        if number is None:
            from npudoctor.redact import SECRET_NAME

            number = self._numbers[id(host)] = len(self.hosts)
            delta: Optional[Dict[str, str]] = {k: v for k, v in host.environ.items() if os.environ.get(k) != v}
            if delta and not all(re.match(_DELTA_NAME, name) and not SECRET_NAME.search(name) for name in delta):
                delta = None  # kept only in digest: replayed only as the diagnosed environment
            gone = sorted(k for k in os.environ if k not in host.environ)
            self.hosts.append([host.root, environ_digest(host.environ), bool(host.commands), delta, gone])
            self._kept.append(host)
        try:
            printed = fingerprint(op, host, call, outcome)
        except ValueError as exc:
            self.refuse(str(exc))
            return
        seen = (op, number, repr(sorted(call.items())))
        if seen in self._seen and self._seen[seen] == printed:
            return  # told the same before: replaying it again tells nothing more
        self._seen[seen] = printed
        self.ops.append([op, number, call, printed])

    def denied(self) -> bool:
        """True when a read was refused to some host of this run."""
        return any(host.denied for host in self._kept)


@contextlib.contextmanager
def recording(journal: Journal) -> Iterator[Journal]:
    """Observe every Host read into ``journal`` while the block runs."""
    from npudoctor import host as host_module

    host_module.OBSERVER = journal.observe
    try:
        yield journal
    finally:
        host_module.OBSERVER = None


def outside_files(matrix: Optional[str], python: Optional[str] = None, root: Optional[str] = None) -> List[str]:
    """The files outside the Host a verdict depends on: the matrix in use (``matrix``, or
    the refreshed copy in the user cache, present or not), the config files that could
    silence codes (``.npudoctor.toml`` in the working directory and each parent, the
    user's config file or ``$NPUDOCTOR_CONFIG``), and what chooses the interpreter judged
    (:mod:`npudoctor.cli.pyselect`: ``python`` as given, in ``root`` too; the active
    virtualenv/conda directories; this interpreter's ``conda-meta``)."""
    from npudoctor import config
    from npudoctor.knowledge.matrix.load import cache_path

    files = [matrix] if matrix else [cache_path()]
    if python:
        files.append(python)
        if root:
            files.append(os.path.join(root, python.lstrip("/")))
    files.extend(os.environ[name] for name in ("VIRTUAL_ENV", "CONDA_PREFIX") if os.environ.get(name))
    files.append(os.path.join(sys.prefix, "conda-meta"))
    current = os.path.abspath(os.getcwd())
    while True:
        files.append(os.path.join(current, config.PROJECT_FILE))
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    files.append(os.environ.get("NPUDOCTOR_CONFIG") or config.user_config_path())
    return files


def _outside_print(path: str) -> Any:
    try:
        st = os.stat(path)
    except OSError as exc:
        return ["absent", exc.errno]
    if st.st_mode & 0o170000 != 0o100000:  # not a regular file
        return ["not a file", st.st_mode]
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


# --------------------------------------------------------------------- outside, write, reuse


def save(
    path: str,
    journal: Journal,
    matrix: Optional[str],
    doc: Dict[str, Any],
    python: Optional[str] = None,
    root: Optional[str] = None,
) -> None:
    """Write the memo of a finished run (nothing when ``journal`` was refused or a read
    was denied); ``matrix``, ``python``, ``root``: the options that name files outside
    the Host (:func:`outside_files`).  Never raises for an unwritable directory."""
    if journal.refused is not None or journal.denied():
        return
    if matrix and os.path.isdir(matrix):
        return  # a directory of matrix files: not fingerprinted
    from npudoctor.snapshot import atomic_write

    memo = {
        "format": FORMAT,
        "written": journal.started,
        "outside": [[f, _outside_print(f)] for f in outside_files(matrix, python, root)],
        "hosts": journal.hosts,
        "ops": journal.ops,
        "doc": doc,
    }
    with contextlib.suppress(OSError, ValueError, TypeError):
        atomic_write(path, json.dumps(memo, ensure_ascii=False))
    _remove_stale(path)


#: A memo file of this user not written for this long (seconds) is removed when a memo is
#: written: it could only serve a run of another day, which never reuses it.
STALE_AFTER_S = 24 * 3600


def _remove_stale(kept: str) -> None:
    """Remove this user's memo files in :func:`state_dir` other than ``kept`` whose last
    write is older than :data:`STALE_AFTER_S` (another setting's, or a changed key's:
    they would pile up in the runtime directory).  Never raises."""
    directory, prefix = os.path.dirname(kept), f"npudoctor-memo-{os.getuid()}-"
    now = time.time()
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        path = os.path.join(directory, name)
        if not name.startswith(prefix) or not name.endswith(".json") or path == kept:
            continue
        with contextlib.suppress(OSError):
            st = os.lstat(path)
            if st.st_uid == os.getuid() and now - st.st_mtime > STALE_AFTER_S:
                os.unlink(path)


def _load(path: str) -> Optional[Dict[str, Any]]:
    """The memo at ``path`` when it is this user's own, well formed and of this format."""
    from npudoctor.hostio import read_capped_text
    from npudoctor.parsers.jsontext import loads
    from npudoctor.runtime.lines import verdict_problem

    try:
        st = os.lstat(path)  # a symlink (planted in a shared /tmp) is not followed
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        return None
    try:
        memo = loads(read_capped_text(path, MEMO_LIMIT, what="health memo"))
    except (OSError, ValueError):
        return None
    ok = (
        isinstance(memo, dict)
        and memo.get("format") == FORMAT
        and isinstance(memo.get("ops"), list)
        and isinstance(memo.get("hosts"), list)
        and isinstance(memo.get("outside"), list)
        and isinstance(memo.get("doc"), dict)
        and verdict_problem(memo["doc"]) is None  # printed as health prints a cached verdict
    )
    return memo if ok else None


def _host_environ(spec: List[Any], environ: Dict[str, str], mine: str) -> Optional[Dict[str, str]]:
    """The environment of a recorded Host today: the diagnosed ``environ`` (digest
    ``mine``) when it was that, else this process's with the recorded ``delta`` and
    ``gone`` applied -- ``None`` when neither gives the recorded digest."""
    if spec[1] == mine:
        return environ
    delta, gone = spec[3], spec[4]
    if not isinstance(delta, dict) or not isinstance(gone, list):
        return None
    env = {k: v for k, v in os.environ.items() if k not in gone}
    env.update({str(k): str(v) for k, v in delta.items()})
    return env if environ_digest(env) == spec[1] else None


def _call_ok(call: Dict[str, Any]) -> bool:
    """True when each argument of a stored call has a type a recorded run gives it."""
    for name, value in call.items():
        if name in ("path", "name"):
            ok = isinstance(value, str)
        elif name in ("follow", "devices"):
            ok = isinstance(value, bool)
        elif name == "limit":
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif name == "argv":
            ok = isinstance(value, list) and bool(value) and all(isinstance(a, str) for a in value)
        elif name == "timeout":
            ok = value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))
        else:  # env: a run with an environment of its own is never recorded
            ok = value is None
        if not ok:
            return False
    return True


def _replay(memo: Dict[str, Any], environ: Dict[str, str], budget: Budget) -> bool:
    """True when every recorded read tells the same today (see the module text)."""
    from npudoctor.host import Host

    for entry in memo["outside"]:
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)):
            return False
        if _outside_print(entry[0]) != entry[1]:
            return False
    mine = environ_digest(environ)
    hosts: List[Host] = []
    for spec in memo["hosts"]:
        if not (isinstance(spec, list) and len(spec) == 5 and isinstance(spec[0], str)):
            return False
        env = _host_environ(spec, environ, mine)
        if env is None:
            return False
        hosts.append(Host(root=spec[0], environ=env, commands=bool(spec[2])))
    for entry in memo["ops"]:
        if not (isinstance(entry, list) and len(entry) == 4):
            return False
        op, number, call, expected = entry
        if op not in _PARAMS or not isinstance(call, dict) or not isinstance(number, int):
            return False
        if not 0 <= number < len(hosts) or not set(call) <= set(_PARAMS[op]) or not _call_ok(call):
            return False
        host = hosts[number]
        if op == "run":
            call = dict(call, timeout=min(float(call.get("timeout") or 5.0), budget.command_timeout()))
        try:
            outcome: Any = getattr(host, op)(**call)
        except OSError as exc:
            outcome = exc
        except (TypeError, ValueError):
            return False
        try:
            if not same_outcome(op, host, call, outcome, expected):
                return False
        except ValueError:
            return False
    return True


def reuse(path: str, environ: Dict[str, str], budget: Budget) -> Optional[Dict[str, Any]]:
    """The verdict recorded at ``path`` when every input it was made from is unchanged
    (the reads replayed against ``environ``, the environment diagnosed), with
    ``duration_s`` of this run and ``inputs_unchanged_s`` (seconds since it was made);
    else ``None`` (no memo, or something changed: the caller runs the full check)."""
    memo = _load(path)
    if memo is None:
        return None
    written = memo.get("written")
    budget.step = "comparing with the last verdict's inputs"
    try:
        # verdicts depend on the date (matrix age, end of life of a torch_npu line)
        if not isinstance(written, (int, float)) or not _same_day(float(written), time.time()):
            return None
        if not _replay(memo, environ, budget):
            return None
    except (ValueError, TypeError, OverflowError, OSError, RecursionError):
        return None  # a memo garbled in a way the shape checks let through: a full run
    doc = dict(memo["doc"])
    doc["duration_s"] = round(budget.elapsed(), 3)
    doc["inputs_unchanged_s"] = round(max(0.0, time.time() - float(written)), 1)
    return doc


def _same_day(then: float, now: float) -> bool:
    """True when the times ``then`` and ``now`` (seconds since the epoch) fall on one
    local calendar day, the day the rules judge by (``datetime.date.today()``: MTX002's
    matrix age, a torch_npu line's support state,
    :meth:`~npudoctor.knowledge.matrix.queries.Matrix.support`), and
    ``then`` is not in the future (a clock set back)."""
    return then <= now and time.localtime(then)[:3] == time.localtime(now)[:3]
