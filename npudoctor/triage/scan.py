"""The streaming scanner: find the known signatures in logs in constant memory.

:class:`Scanner` streams any number of logs (training/inference output, CANN plog files,
a pasted traceback; UTF-16 told by its byte order mark, a UTF-8 one dropped; NUL bytes
dropped): fixed-size binary chunks, lines capped at :data:`MAX_LINE` bytes, a substring
prefilter (the anchors of every pattern) to find candidate lines, and bounded group tables
(repeats are counted with first/last line numbers, never stored).  It only finds and counts;
:mod:`npudoctor.triage.rank` says what the finds mean on a machine.
"""

from __future__ import annotations

import codecs
import io
import os
from typing import IO, Any, Callable, Dict, List, Optional, Sequence, Tuple, Type

from npudoctor import lazyre
from npudoctor.knowledge import _signatures_plan as plan
from npudoctor.knowledge.signatures import MAX_LINE, Entry, KnowledgeBase
from npudoctor.record import MutableRecord
from npudoctor.triage.evidence import FRAME_ANCHOR, PATH_ANCHOR, frame_owner, frame_package, frame_path, path_package
from npudoctor.triage.gate import gate_for

#: Bytes read from a log per step.
CHUNK = 1 << 20
#: Longest sample text kept per group (characters).
SAMPLE_CHARS = 600
#: Distinct capture variants kept per signature (further variants count in the first).
MAX_VARIANTS = 16
#: Distinct unknown error lines kept (further ones are only counted).
MAX_UNKNOWN = 200
#: Distinct packages of traceback frames kept.
MAX_FRAMES = 200

__all__ = [
    "CHUNK",
    "MAX_LINE",
    "MAX_UNKNOWN",
    "MAX_VARIANTS",
    "SAMPLE_CHARS",
    "Group",
    "Place",
    "Scanner",
    "SourceStats",
    "UnknownGroup",
    "iter_log_files",
    "looks_binary",
]

#: Compressed logs read as streams by the standard library (magic bytes, format name).
COMPRESSED = ((b"\x1f\x8b", "gzip"), (b"\xfd7zXZ\x00", "xz"), (b"BZh", "bzip2"))
#: File-name endings of compressed logs (a directory's ``app.log.gz`` is a log).
COMPRESSED_SUFFIXES = (".gz", ".xz", ".bz2")
#: Leading bytes of binary formats that are never logs (ELF, zip/wheel, PNG, JPEG, tar...).
_BINARY_MAGIC = (b"\x7fELF", b"PK\x03\x04", b"\x89PNG", b"\xff\xd8\xff", b"%PDF")
#: Control bytes that do not occur in text logs (tab, newlines, form feed, backspace and the
#: escape of terminal colours do).
_CONTROL = bytes(b for b in range(32) if b not in b"\t\n\r\x0c\x08\x1b") + b"\x7f"
#: Bytes of a stream examined to tell a binary file from a log.
SNIFF = 8192
#: NUL bytes in a row that are a hole in a log, not its text: what logrotate's copytruncate
#: leaves where a process goes on writing at its offset, a block lost in a crash.
_NUL_RUN = lazyre.pattern(rb"\0{8,}")
#: Byte order marks of UTF-16 (a log a Windows shell redirected, as PowerShell's ``>`` does).
UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
#: A terminal's escape sequence: colours and cursor moves (CSI), a title (OSC, ended by BEL or
#: ST), and the two- and three-byte ones (``ESC ( B``, ``ESC 7``).
_ESCAPE = lazyre.pattern(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b\n]*(?:\x07|\x1b\\)|[ -/]*[0-~])")
#: Markers of a warning line: the line before a crash may be one (linked, never counted).
#: Looked for only backwards from a crash line, so that warning lines cost nothing to a scan.
WARNING_RX = lazyre.pattern(rb"Warning|WARN|warning:")
#: How far back from a crash line a warning is looked for (bytes of the same chunk).
LOOKBACK = 64 << 10
#: How many lines an import error may follow the last traceback frame it is read with (the
#: frame, its source line, a caret line, the error; a few more for wrapped pastes).
FRAME_LINES = 4
#: The label of the import errors whose owner the last frame names.
NO_MODULE = "python:no-module"


class Place(MutableRecord):
    source: str
    line: int


class Preceding(MutableRecord):
    """The warning or error line just before a crash line (what the crash follows)."""

    place: Place
    text: str
    #: the signature id of that line, or ``None`` for an unknown line
    entry: Optional[str] = None


class Group(MutableRecord):
    """Repeats of one signature with the same captures."""

    entry: Entry
    captures: Dict[str, str]
    count: int
    first: Place
    last: Place
    sample: str
    #: for a crash line (label ``sys:crash``): the warning/error line just before its first one
    after: Optional[Preceding] = None


class UnknownGroup(MutableRecord):
    key: str
    count: int
    first: Place
    last: Place
    sample: str


class SourceStats(MutableRecord):
    name: str
    lines: int = 0
    bytes: int = 0
    error: Optional[str] = None
    long_lines: int = 0
    #: the compression the log was read through (``gzip``, ``xz``, ``bzip2``), or ``None``
    compressed: Optional[str] = None
    #: why the stream was not scanned (a binary file), or ``None``
    skipped: Optional[str] = None


_NORMALIZE = [
    (lazyre.pattern(r"0x[0-9a-fA-F]+"), "0x#"),
    (lazyre.pattern(r"[0-9]+"), "#"),
    (lazyre.pattern(r"\s+"), " "),
]


def looks_binary(head: bytes) -> bool:
    """True when ``head`` (the first bytes of a stream) is not text: a known binary format,
    or more than one byte in twenty a control byte no log holds (random bytes hold one in
    ten).  A run of :data:`_NUL_RUN` NULs is a hole, not a byte of the file's own, and is
    not counted (the scanner drops NULs: :meth:`Scanner.feed`)."""
    if not head:
        return False
    if head.startswith(_BINARY_MAGIC):
        return True
    text = _NUL_RUN.sub(b"", head)
    control = len(text) - len(text.translate(None, _CONTROL))
    return control * 20 > len(text)


def _plain(line: bytes) -> bytes:
    """``line`` as a terminal shows it: its escape sequences (colours a logger wrote, an
    unclosed one too, a window title) left out, so that what triage quotes holds none."""
    return _ESCAPE.sub(b"", line) if b"\x1b" in line else line


def is_utf16(head: bytes) -> bool:
    """Whether ``head`` (the first bytes of a stream) is UTF-16 text: a byte order mark, and
    one character in four or more ASCII (a NUL byte beside each: digits, spaces, punctuation
    and line ends, which a log in any script holds) -- not latin-1 text that starts ``ÿþ``."""
    if not head.startswith(UTF16_BOMS):
        return False
    high = head[3::2] if head.startswith(codecs.BOM_UTF16_LE) else head[2::2]
    return high.count(0) * 4 >= len(high)


class _Rejoined(io.RawIOBase):
    """A stream whose first bytes were already read (``head``) followed by the rest of ``rest``."""

    def __init__(self, head: bytes, rest: IO[bytes]) -> None:
        super().__init__()
        self._head = head
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        view = memoryview(buf).cast("B")
        if self._head:
            n = min(len(view), len(self._head))
            view[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._rest.read(len(view))
        if not data:
            return 0
        view[: len(data)] = data
        return len(data)


def _decompressor(kind: str, raw: IO[bytes]) -> io.BufferedIOBase:
    """A decompressing stream of ``kind`` over ``raw`` (the standard library's, read in steps:
    what it holds at a time is bounded by the reads, not by the archive)."""
    if kind == "gzip":
        import gzip

        return gzip.GzipFile(fileobj=raw, mode="rb")
    if kind == "bzip2":
        import bz2

        return bz2.BZ2File(raw, mode="rb")
    import lzma

    return lzma.LZMAFile(raw, mode="rb")


def _read_errors() -> Tuple[Type[BaseException], ...]:
    """The exceptions a read of a log may raise: the OS's, and those of a truncated or
    corrupt archive (``EOFError``, ``zlib.error``, ``lzma.LZMAError`` when lzma is built)."""
    import zlib  # only when a log is read: not part of the start-up work

    errors: Tuple[Type[BaseException], ...] = (OSError, EOFError, zlib.error)
    try:
        import lzma
    except ImportError:  # pragma: no cover - a Python built without _lzma
        return errors
    return errors + (lzma.LZMAError,)


def entry_candidates(
    entries: Sequence[Entry], gate_anchors: Sequence[bytes]
) -> Tuple[Tuple[int, ...], Dict[bytes, Tuple[Tuple[int, Optional[bytes]], ...]]]:
    """Which entries a line can match, from the gate's anchors it holds: the indexes of the
    entries with a pattern that has no anchor (tried on every candidate line), and per gate
    anchor the (entry index, its longer anchor to look for, or ``None`` when the gate's anchor
    is the entry's) of the entries whose anchors contain it.  An entry's own anchor always
    contains one of the gate's (the gate keeps the shortest of nested ones)."""
    always: List[int] = []
    by_anchor: Dict[bytes, List[Tuple[int, Optional[bytes]]]] = {}
    for i, entry in enumerate(entries):
        for anchors in entry.anchors or [[]]:
            if not anchors:
                always.append(i)
            for a in anchors:
                for g in gate_anchors:
                    if g in a:
                        by_anchor.setdefault(g, []).append((i, None if g == a else a))
    return tuple(always), {g: tuple(v) for g, v in by_anchor.items()}


def _normalize(text: str) -> str:
    for rx, repl in _NORMALIZE:
        text = rx.sub(repl, text)
    return text.strip()[:200]


class Scanner:
    """Streams logs and groups what it finds.  Memory is bounded by the group caps,
    not by the size of the input.  Usage::

        sc = Scanner(load_kb())
        with open(path, "rb") as fh:
            sc.feed(path, fh)
        sc.groups, sc.unknown, sc.sources
    """

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb
        self._gate = gate_for(kb, (FRAME_ANCHOR,))
        self.groups: Dict[Tuple[str, Tuple[Tuple[str, str], ...]], Group] = {}
        self._variants: Dict[str, int] = {}
        self.unknown: Dict[str, UnknownGroup] = {}
        self.unknown_dropped = 0
        self.sources: List[SourceStats] = []
        #: top-level packages traceback frames ran through -> first place (capped)
        self.frames: Dict[str, Place] = {}
        #: top-level packages or extension modules whose files error lines name (an import
        #: error, a loader message) -> first place (capped with the frames)
        self.named: Dict[str, Place] = {}
        gate_anchors = tuple(kb.anchors) + (FRAME_ANCHOR,)
        if kb.planned and gate_anchors == plan.GATE_ANCHORS and tuple(e.id for e in kb.entries) == plan.ENTRY_IDS:
            # the packaged signatures: worked out at build time (scripts/gen_triage_plan.py)
            always, by_anchor = plan.ALWAYS, plan.CANDIDATES
        else:
            always, by_anchor = entry_candidates(kb.entries, gate_anchors)
        self._always = frozenset(always)
        self._by_anchor = by_anchor
        #: the last error line of the current stream (a crash line follows it)
        self._last: Optional[Preceding] = None
        #: the block being examined, where its span starts, and the start of the current line
        #: (to look back from a crash line for a warning; see :meth:`_warning_before`)
        self._view: Tuple[bytes, int, int] = (b"", 0, 0)
        #: the last traceback frame of the current stream: its line number and the file of the
        #: last frame outside the import machinery (one slot)
        self._frame: Optional[Tuple[int, str]] = None

    # -- lines
    def _line(self, raw: bytes, stats: SourceStats, lineno: int) -> None:
        raw = _plain(raw.rstrip(b"\r"))
        if FRAME_ANCHOR in raw:
            path = frame_path(raw)
            if path:
                self._frame = (lineno, path)
            elif path is not None and self._frame is not None:
                # a frame of the import machinery: the owner stays the frame that called it,
                # as long as the frames follow one another
                near = lineno - self._frame[0] <= FRAME_LINES
                self._frame = (lineno, self._frame[1]) if near else None
        if PATH_ANCHOR in raw and len(self.frames) + len(self.named) < MAX_FRAMES:
            # a traceback frame, or an import/loader error naming a file of a distribution
            package = frame_package(raw) if FRAME_ANCHOR in raw else None
            if package is not None:
                self.frames.setdefault(package, Place(stats.name, lineno))
            else:
                package = path_package(raw)
                if package is not None:
                    self.named.setdefault(package, Place(stats.name, lineno))
        maybe = set(self._always)
        by_anchor = self._by_anchor
        for a in self._gate.anchors_in(raw):
            for i, longer in by_anchor.get(a, ()):
                if longer is None or longer in raw:
                    maybe.add(i)
        entries = self.kb.entries
        for i in sorted(maybe):
            entry = entries[i]
            caps = entry.match_bytes(raw)
            if caps is None:
                continue
            if entry.label == NO_MODULE and self._frame is not None and 0 < lineno - self._frame[0] <= FRAME_LINES:
                # the owner of an import error is the code of the frame it was raised in
                owner = frame_owner(self._frame[1], self.kb.cann_frames, self.kb.cann_packages)
                if entry.frame_owners and owner and not set(owner) & set(entry.frame_owners):
                    continue  # another owner's import error: a later entry's line
                caps.update(owner)
            key = (entry.id, tuple(sorted(caps.items())))
            place = Place(stats.name, lineno)
            crash = entry.label == "sys:crash"
            group = self.groups.get(key)
            if group is None:
                n = self._variants.get(entry.id, 0)
                if n >= MAX_VARIANTS:
                    group = next(g for (eid, _c), g in self.groups.items() if eid == entry.id)
                else:
                    self._variants[entry.id] = n + 1
                    text = raw[: SAMPLE_CHARS * 4].decode("utf-8", "replace").strip()[:SAMPLE_CHARS]
                    after = self._warning_before(stats.name, lineno) if crash else None
                    self.groups[key] = Group(entry, caps, 1, place, place, text, after)
                    if not crash and entry.severity != "noise":
                        self._last = Preceding(place, text, entry.id)
                    return
            group.count += 1
            group.last = place
            if not crash and entry.severity != "noise":
                self._last = Preceding(place, group.sample, entry.id)
            return
        if not self.kb.generic.search(raw):
            return
        text = raw[: SAMPLE_CHARS * 4].decode("utf-8", "replace").strip()
        if not text:
            return
        shape = _normalize(text)
        place = Place(stats.name, lineno)
        self._last = Preceding(place, text[:SAMPLE_CHARS])
        unknown = self.unknown.get(shape)
        if unknown is not None:
            unknown.count += 1
            unknown.last = place
        elif len(self.unknown) < MAX_UNKNOWN:
            self.unknown[shape] = UnknownGroup(shape, 1, place, place, text[:SAMPLE_CHARS])
        else:
            self.unknown_dropped += 1

    def _warning_before(self, source: str, lineno: int) -> Optional[Preceding]:
        """What the crash line at ``lineno`` follows: the last error line before it, or a
        warning line between that one and the crash (looked for backwards in the block being
        examined, at most :data:`LOOKBACK` bytes), whichever is nearer."""
        last = self._last
        block, lo, start = self._view
        floor = max(lo, start - LOOKBACK)
        end = start - 1  # the newline before the crash line
        n = lineno
        while end > floor:
            begin = block.rfind(b"\n", floor, end) + 1
            if begin <= 0 and floor > 0:
                begin = floor
            n -= 1
            if last is not None and (last.place.source != source or n <= last.place.line):
                break
            line = block[begin:end]
            if WARNING_RX.search(line):
                text = _plain(line[: SAMPLE_CHARS * 4]).decode("utf-8", "replace").strip()[:SAMPLE_CHARS]
                return Preceding(Place(source, n), text)
            end = begin - 1
        return last

    def _block(self, block: bytes, base: int, stats: SourceStats, lo: int = 0, hi: int = -1) -> int:
        """Examine the complete lines of ``block[lo:hi]`` (``hi`` -1: to the end) without
        copying it; ``base`` lines precede it.  Returns the number of newlines in that span
        (counted once, on the way to the candidates)."""
        if hi < 0:
            hi = len(block)
        find, count = block.find, block.count
        starts = self._gate.starts(block, lo, hi)
        counted_pos, counted = lo, base
        for start in sorted(starts):
            end = find(b"\n", start, hi)
            if end < 0:
                end = hi
            counted += count(b"\n", counted_pos, start)
            counted_pos = start
            self._view = (block, lo, start)
            self._line(block[start:end], stats, counted + 1)
        return counted - base + count(b"\n", counted_pos, hi)

    def _cut(self, line: bytes, base: int, stats: SourceStats) -> Optional[bytes]:
        """Examine the first :data:`MAX_LINE` bytes of an over-long ``line`` (line ``base`` + 1,
        the rest of it still to come) and start :func:`_last_shown` on what follows them."""
        stats.long_lines += 1
        self._block(line[:MAX_LINE], base, stats)
        return _last_shown(None, line[MAX_LINE:])

    def feed(self, name: str, stream: IO[bytes], progress: Optional[Callable[[int], None]] = None) -> SourceStats:
        """Scan one binary stream to its end.  Read errors end the stream and are
        recorded in the returned stats (never raised).  ``progress`` is called after each
        chunk with the bytes of this stream read so far.

        Each chunk is examined in place: only the line a chunk boundary cuts (the ``tail``
        of one chunk and the head of the next) is copied."""
        stats = SourceStats(name)
        self.sources.append(stats)
        self._gate.reset()
        self._last = None
        self._frame = None
        tail = b""
        base = 0
        skipping = False
        shown: Optional[bytes] = None  # of the over-long line being skipped: see _last_shown
        read_errors = _read_errors()
        try:
            reader: Any = stream  # the log, or the decompressing stream over it
            data = reader.read(CHUNK) or b""
            kind = next((k for magic, k in COMPRESSED if data.startswith(magic)), None)
            if kind is not None:
                stats.compressed = kind
                reader = _decompressor(kind, io.BufferedReader(_Rejoined(data, stream)))
                data = reader.read(CHUNK) or b""
            if is_utf16(data[:SNIFF]):  # read as the UTF-8 it means (the codec drops the mark)
                reader = codecs.EncodedFile(io.BufferedReader(_Rejoined(data, reader)), "utf-8", "utf-16", "replace")
                data = reader.read(CHUNK) or b""
            elif data.startswith(codecs.BOM_UTF8):
                # a UTF-8 byte order mark (Notepad, PowerShell's utf8 encoding): not text of
                # the first line, which would be quoted with an invisible U+FEFF in front
                stats.bytes += len(codecs.BOM_UTF8)
                data = data[len(codecs.BOM_UTF8) :] or reader.read(CHUNK) or b""
            while data and not data.lstrip(b"\0"):
                # NULs only: the hole at the start of a log that logrotate's copytruncate
                # emptied while a process went on writing it at its offset
                stats.bytes += len(data)
                data = reader.read(CHUNK) or b""
            if looks_binary(data.lstrip(b"\0")[:SNIFF]):
                stats.skipped = "a binary file, not a text log"
                stats.bytes += len(data)
                return stats
            first = True
            while True:
                if not first:
                    data = reader.read(CHUNK)
                first = False
                if not data:
                    break
                stats.bytes += len(data)
                if progress is not None:
                    progress(stats.bytes)
                data = data.replace(b"\0", b"")  # NULs are no text (a hole, padding): dropped
                if skipping:
                    idx = data.find(b"\n")
                    if idx < 0:
                        shown = _last_shown(shown, data)
                        continue
                    shown = _last_shown(shown, data[:idx].rstrip(b"\r"))
                    if shown:
                        self._block(shown, base, stats)
                    data = data[idx + 1 :]
                    base += 1
                    skipping = False
                cut = data.rfind(b"\n")
                if cut < 0:
                    tail = tail + data if tail else data
                    if len(tail) > MAX_LINE:
                        shown = self._cut(tail, base, stats)
                        tail = b""
                        skipping = True
                    continue
                lo = 0
                if tail:
                    lo = data.find(b"\n") + 1
                    head = tail + data[:lo]
                    base += self._block(head, base, stats)
                base += self._block(data, base, stats, lo, cut + 1)
                tail = data[cut + 1 :]
                if len(tail) > MAX_LINE:
                    shown = self._cut(tail, base, stats)
                    tail = b""
                    skipping = True
        except read_errors as exc:
            why = (getattr(exc, "strerror", None) or str(exc) or type(exc).__name__).rstrip(".")
            if stats.compressed:
                why = f"truncated or corrupt {stats.compressed} archive ({why})"
            stats.error = why
        if tail:
            self._block(tail, base, stats)
            base += 1
        elif skipping:
            if shown:
                self._block(shown, base, stats)
            base += 1
        stats.lines = base
        return stats


def _last_shown(shown: Optional[bytes], piece: bytes) -> Optional[bytes]:
    """What an over-long line shows last on a terminal, after the next ``piece`` of it: the
    text after its last carriage return (a progress bar redrawn with ``\\r`` hundreds of times,
    and the error printed over it), at most :data:`MAX_LINE` bytes; ``None`` when no carriage
    return has come since the cut, or the text after it is longer than that."""
    cr = piece.rfind(b"\r")
    if cr >= 0:
        shown = piece[cr + 1 :]
    elif shown is not None:
        shown += piece
    return shown if shown is None or len(shown) <= MAX_LINE else None


def iter_log_files(path: str) -> List[str]:
    """``path`` itself, or for a directory every regular file below it that looks like
    a log (``*.log``, ``*.txt``, ``*.out``, ``*.err``, CANN ``plog-*``; each also compressed:
    ``*.log.gz``, ``*.xz``, ``*.bz2``), sorted."""
    if not os.path.isdir(path):
        return [path]
    out = []
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames.sort()
        for name in sorted(filenames):
            bare = name
            for suffix in COMPRESSED_SUFFIXES:
                if bare.endswith(suffix):
                    bare = bare[: -len(suffix)]
                    break
            if bare.startswith("plog") or bare.endswith((".log", ".txt", ".out", ".err")):
                out.append(os.path.join(dirpath, name))
    return out
