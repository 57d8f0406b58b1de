"""Reading the snapshots given to ``npudoctor compare``: files, JSON lines, directories
and standard input, each file read once (through the Host's capped, FIFO-safe
:func:`~npudoctor.host.read_capped`), and -- for many files on a machine with several
CPUs that are idle -- read, parsed and reduced to what compare needs in worker processes, so
that 10,000 snapshots take about the time of parsing them on one CPU divided by the idle
CPUs.  What a snapshot is reduced to is the caller's ``convert`` function
(:func:`npudoctor.cluster.compare.entry`), or its ``quick`` reader of the bytes
(:func:`npudoctor.cluster.compare.quick`) tried first; this module knows nothing of
fingerprints.
"""

from __future__ import annotations

import os
import sys
import zlib
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from npudoctor.host import read_capped
from npudoctor.parsers import jsontext
from npudoctor.record import Record
from npudoctor.snapshot import SNAPSHOT_DEPTH, SNAPSHOT_LIMIT, SNAPSHOT_MEMORY, SNAPSHOT_VALUES, too_wide

#: Files given at least this many, the reading is spread over worker processes.
PARALLEL_MIN = 256
#: Worker processes at most.
MAX_WORKERS = 8


class CompareInputError(ValueError):
    """A path given to compare does not exist or cannot be listed (a usage error)."""


class Repeated(Record):
    """The value :func:`iter_inputs` yields for a file already read (``first``: the
    source name it was read under)."""

    first: str


class Document(Record):
    """A snapshot as :func:`iter_inputs` read it: the parsed JSON ``data`` and ``key``,
    the length and CRC-32 of its bytes (:meth:`read`).  Two documents with the same key
    whose node, ``created`` and fingerprint also agree are one snapshot read twice (a copy
    under another name); hashing the bytes read costs a fraction of re-serialising the
    parsed document (docs/performance.md)."""

    data: Any
    key: int

    @classmethod
    def read(cls, data: Any, raw: bytes) -> Document:
        """The document of ``data`` parsed from the bytes ``raw``."""
        return cls(data, byte_key(raw))


def byte_key(raw: bytes) -> int:
    """The key of a document's bytes (:class:`Document`): their length and CRC-32, as one
    int (compare keeps one per snapshot)."""
    return len(raw) << 32 | zlib.crc32(raw)


#: A reader that reduces one document's bytes to its converted value in one pass, or
#: declines with ``None`` (the bytes are then parsed as JSON and converted as usual).
Quick = Callable[[bytes], Any]


class _Converted(Record):
    """The value a :data:`Quick` reader gave for one document: passed on unconverted."""

    value: Any


def iter_inputs(paths: Iterable[str], stdin: Optional[Any] = None) -> Iterator[Tuple[str, Any]]:
    """Yield ``(source label, a Document, an error string, or a Repeated)`` for every
    snapshot.

    A path may be a file holding one snapshot (JSON), several (JSON lines), or a directory
    (its ``*.json`` and ``*.jsonl`` files, sorted; not recursive).  ``-`` (or ``stdin`` given
    with no paths) reads JSON lines from standard input (once).  A file reached a second
    time (same real path) is not read again: :class:`Repeated` is yielded instead.  Raises
    :class:`CompareInputError` for a path that does not exist.
    """
    for source, item in _plan(paths, stdin):
        if isinstance(item, _FileTask):
            yield from _file(item.path, item.named)
        else:
            yield source, item


def _file(path: str, named: bool, quick: Optional[Quick] = None) -> Iterator[Tuple[str, Any]]:
    """The documents of one input file; a FIFO or device found in a directory is refused
    (a FIFO named on the command line, as ``<(…)``, is read)."""
    try:
        data, truncated = read_capped(path, SNAPSHOT_LIMIT, pipes=named, whole=True)
    except OSError as exc:
        yield path, f"cannot read: {exc.strerror or exc}"
        return
    if truncated:
        yield path, f"cannot read: over {SNAPSHOT_LIMIT >> 20} MB"
        return
    memory = jsontext.text_memory(data)
    if memory > SNAPSHOT_MEMORY:
        yield path, too_wide(memory)
        return
    if not data.strip():  # a node whose collect wrote nothing must not drop out unseen
        yield path, "not valid JSON: the file is empty"
        return
    yield from _documents(path, data, quick)


def _documents(label: str, data: bytes, quick: Optional[Quick] = None) -> Iterator[Tuple[str, Any]]:
    """The documents of one input: one JSON document, or JSON Lines -- when the first
    line that is not blank is a JSON document of its own.  A pretty-printed document cut
    short (its first line ``{`` is not one) is one error for the input, saying where it
    ends, not one "not valid JSON" per line.  Blank input holds no document (a blank file
    is an error of its reader).  ``quick``: tried first on the whole input and on each line
    (a value it gives is yielded as :class:`_Converted`)."""
    if not data.strip():
        return
    if quick is not None:
        done = quick(data)
        if done is not None:
            yield label, _Converted(done)
            return
    try:
        yield label, Document.read(_json(data), data)
        return
    except (ValueError, RecursionError) as exc:  # RecursionError: absurdly deep nesting
        error = exc
    first = next((line for line in data.splitlines() if line.strip()), b"")
    if data.count(b"\n") > 1 and _is_document(first):
        yield from _lines(label, data, quick)
        return
    why = (
        jsontext.describe(error, data.decode("utf-8", errors="replace"))
        if isinstance(error, ValueError)
        else "nested too deeply"
    )
    yield label, f"not valid JSON: {why}"


def _is_document(line: bytes) -> bool:
    """Whether ``line`` alone is a JSON document (the first line of JSON Lines is)."""
    try:
        _json(line)
    except (ValueError, RecursionError):
        return False
    return True


def _json(data: bytes) -> Any:
    """Parse JSON bytes; bytes that are not UTF-8 are read with replacement characters
    (a garbled field reads as unknown, the rest of the snapshot still counts)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
    return jsontext.loads(text, max_values=SNAPSHOT_VALUES, max_depth=SNAPSHOT_DEPTH)


def _lines(label: str, data: bytes, quick: Optional[Quick]) -> Iterator[Tuple[str, Any]]:
    count = data.count(b"{") + data.count(b"[") + data.count(b",")
    if count > SNAPSHOT_VALUES:  # all the lines' documents are kept: one bound for them all
        yield label, f"not read: more than {SNAPSHOT_VALUES} JSON values in all (up to {count})"
        return
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{label}:{number}"
        done = quick(line) if quick is not None else None
        if done is not None:
            yield where, _Converted(done)
            continue
        try:
            yield where, Document.read(_json(line), line)
        except (ValueError, RecursionError) as exc:
            yield where, f"not valid JSON: {exc}"


def _plan(paths: Iterable[str], stdin: Optional[Any], quick: Optional[Quick] = None) -> List[Tuple[str, Any]]:
    """The inputs in order, as :func:`iter_inputs` would read them, without reading the
    files: ``(source, item)`` pairs whose item is ``_FileTask`` for a file still to read."""
    out: List[Tuple[str, Any]] = []
    seen: Dict[str, str] = {}
    for path in list(paths) or (["-"] if stdin is not None else []):
        if path == "-":
            if "-" in seen:
                out.append(("stdin", Repeated("stdin")))
                continue
            seen["-"] = "stdin"
            stream = stdin if stdin is not None else sys.stdin
            buffer = getattr(stream, "buffer", None)
            data = (
                buffer.read(SNAPSHOT_LIMIT + 1)
                if buffer is not None
                else stream.read(SNAPSHOT_LIMIT + 1).encode("utf-8", "surrogateescape")
            )
            if len(data) > SNAPSHOT_LIMIT:
                out.append(("stdin", f"cannot read: over {SNAPSHOT_LIMIT >> 20} MB"))
                continue
            memory = jsontext.text_memory(data)
            if memory > SNAPSHOT_MEMORY:
                out.append(("stdin", too_wide(memory)))
                continue
            out.extend(_documents("stdin", data, quick))
            continue
        if os.path.isdir(path):
            try:
                names = sorted(n for n in os.listdir(path) if n.endswith((".json", ".jsonl")))
            except OSError as exc:
                raise CompareInputError(f"cannot list {path}: {exc.strerror or exc}") from None
            files = [(os.path.join(path, n), False) for n in names]
        elif not os.path.exists(path):
            raise CompareInputError(f"{path}: no such file or directory")
        else:
            files = [(path, True)]
        for file, named in files:
            key = os.path.realpath(file)
            if key in seen:
                out.append((file, Repeated(seen[key])))
                continue
            seen[key] = file
            out.append((file, _FileTask(file, named)))
    return out


class _FileTask(Record):
    path: str
    named: bool


def _convert(convert: Callable[[str, Any], Any], source: str, item: Any) -> Any:
    return item.value if isinstance(item, _Converted) else convert(source, item)


def _convert_file(job: Tuple[str, bool, Callable[[str, Any], Any], Optional[Quick]]) -> List[Tuple[str, Any]]:
    path, named, convert, quick = job
    return [(source, _convert(convert, source, item)) for source, item in _file(path, named, quick)]


def workers_for(count: int, cpus: Optional[int] = None, load: Optional[float] = None) -> int:
    """Worker processes for ``count`` files: 1 (read here) below :data:`PARALLEL_MIN` files;
    else one per CPU this process may run on (``cpus``, at most :data:`MAX_WORKERS`) that is
    idle, going by the 1-minute load average (``load``).  Workers only pay where a core
    is free: on busy cores they add the cost of sending every fingerprint back and of
    forking to the same CPU time, and a pool of one is this process with that cost."""
    if count < PARALLEL_MIN:
        return 1
    if cpus is None:
        try:
            cpus = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cpus = os.cpu_count() or 1
    if load is None:
        try:
            load = os.getloadavg()[0]
        except (AttributeError, OSError):
            load = 0.0
    idle = int(cpus - load + 0.5)  # a core more than half idle counts
    return max(1, min(idle, cpus, MAX_WORKERS))


def iter_converted(
    paths: Sequence[str],
    convert: Callable[[str, Any], Any],
    stdin: Optional[Any] = None,
    workers: Optional[int] = None,
    quick: Optional[Quick] = None,
) -> Iterator[Tuple[str, Any]]:
    """``(source, convert(source, item))`` for every input of :func:`iter_inputs`, in the
    same order; a :class:`Repeated` is passed through unconverted.  ``quick``: a reader of
    one document's bytes tried before they are parsed (:data:`Quick`): what it gives is
    passed on as the converted value.  Files are read and converted in ``workers``
    processes (default :func:`workers_for`; ``convert`` and ``quick`` must be module-level
    functions) -- on Linux by ``fork``; where a pool cannot start, in this process.  Raises
    :class:`CompareInputError` as :func:`iter_inputs` does."""
    plan = _plan(paths, stdin, quick)
    tasks = [item for _s, item in plan if isinstance(item, _FileTask)]
    count = workers if workers is not None else workers_for(len(tasks))
    results: Iterator[List[Tuple[str, Any]]]
    pool = None
    if count > 1 and sys.platform.startswith("linux"):
        try:
            import multiprocessing

            pool = multiprocessing.get_context("fork").Pool(count)
        except (OSError, ValueError, ImportError):
            pool = None
    jobs = ((t.path, t.named, convert, quick) for t in tasks)
    if pool is not None:
        results = pool.imap(_convert_file, jobs, chunksize=16)
    else:
        results = map(_convert_file, jobs)
    try:
        for source, item in plan:
            if isinstance(item, _FileTask):
                yield from next(results)
            elif isinstance(item, Repeated):
                yield source, item
            else:
                yield source, _convert(convert, source, item)
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()
