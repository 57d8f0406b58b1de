"""The streaming scanner: find the known signatures in logs in constant memory.

:class:`Scanner` streams any number of logs (training/inference output, CANN plog files,
a pasted traceback): fixed-size binary chunks, lines capped at :data:`MAX_LINE` bytes, a
substring prefilter (the anchors of every pattern) to find candidate lines, and bounded
group tables (repeats are counted with first/last line numbers, never stored).  It only
finds and counts; :mod:`npudoctor.triage.rank` says what the finds mean on a machine.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import IO, Callable, Dict, List, Optional, Tuple

from npudoctor.knowledge.signatures import MAX_LINE, Entry, KnowledgeBase
from npudoctor.triage.evidence import FRAME_ANCHOR, PATH_ANCHOR, frame_package, path_package
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
]


@dataclass
class Place:
    source: str
    line: int


@dataclass
class Group:
    """Repeats of one signature with the same captures."""

    entry: Entry
    captures: Dict[str, str]
    count: int
    first: Place
    last: Place
    sample: str


@dataclass
class UnknownGroup:
    key: str
    count: int
    first: Place
    last: Place
    sample: str


@dataclass
class SourceStats:
    name: str
    lines: int = 0
    bytes: int = 0
    error: Optional[str] = None
    long_lines: int = 0


_NORMALIZE = [
    (re.compile(r"0x[0-9a-fA-F]+"), "0x#"),
    (re.compile(r"[0-9]+"), "#"),
    (re.compile(r"\s+"), " "),
]


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
        # which entries a line can match, from the gate's anchors it holds: an entry's own
        # anchor always contains one of the gate's (the gate keeps the shortest of nested ones)
        # (entry, its longer anchor to look for, or None when the gate's anchor is the entry's)
        gate_anchors = list(kb.anchors) + [FRAME_ANCHOR]
        always: List[int] = []
        by_anchor: Dict[bytes, List[Tuple[int, Optional[bytes]]]] = {}
        for i, entry in enumerate(kb.entries):
            for anchors in entry.anchors or [[]]:
                if not anchors:
                    always.append(i)
                for a in anchors:
                    for g in gate_anchors:
                        if g in a:
                            by_anchor.setdefault(g, []).append((i, None if g == a else a))
        self._always = frozenset(always)
        self._by_anchor = by_anchor

    # -- lines
    def _line(self, raw: bytes, stats: SourceStats, lineno: int) -> None:
        raw = raw.rstrip(b"\r")
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
            key = (entry.id, tuple(sorted(caps.items())))
            place = Place(stats.name, lineno)
            group = self.groups.get(key)
            if group is None:
                n = self._variants.get(entry.id, 0)
                if n >= MAX_VARIANTS:
                    group = next(g for (eid, _c), g in self.groups.items() if eid == entry.id)
                else:
                    self._variants[entry.id] = n + 1
                    text = raw[: SAMPLE_CHARS * 4].decode("utf-8", "replace").strip()[:SAMPLE_CHARS]
                    self.groups[key] = Group(entry, caps, 1, place, place, text)
                    return
            group.count += 1
            group.last = place
            return
        if not self.kb.generic.search(raw):
            return
        text = raw[: SAMPLE_CHARS * 4].decode("utf-8", "replace").strip()
        if not text:
            return
        shape = _normalize(text)
        place = Place(stats.name, lineno)
        unknown = self.unknown.get(shape)
        if unknown is not None:
            unknown.count += 1
            unknown.last = place
        elif len(self.unknown) < MAX_UNKNOWN:
            self.unknown[shape] = UnknownGroup(shape, 1, place, place, text[:SAMPLE_CHARS])
        else:
            self.unknown_dropped += 1

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
            self._line(block[start:end], stats, counted + 1)
        return counted - base + count(b"\n", counted_pos, hi)

    def feed(self, name: str, stream: IO[bytes], progress: Optional[Callable[[int], None]] = None) -> SourceStats:
        """Scan one binary stream to its end.  Read errors end the stream and are
        recorded in the returned stats (never raised).  ``progress`` is called after each
        chunk with the bytes of this stream read so far.

        Each chunk is examined in place: only the line a chunk boundary cuts (the ``tail``
        of one chunk and the head of the next) is copied."""
        stats = SourceStats(name)
        self.sources.append(stats)
        self._gate.reset()
        tail = b""
        base = 0
        skipping = False
        try:
            while True:
                data = stream.read(CHUNK)
                if not data:
                    break
                stats.bytes += len(data)
                if progress is not None:
                    progress(stats.bytes)
                if skipping:
                    idx = data.find(b"\n")
                    if idx < 0:
                        continue
                    data = data[idx + 1 :]
                    base += 1
                    skipping = False
                cut = data.rfind(b"\n")
                if cut < 0:
                    tail = tail + data if tail else data
                    if len(tail) > MAX_LINE:
                        stats.long_lines += 1
                        self._block(tail[:MAX_LINE], base, stats)
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
                    stats.long_lines += 1
                    self._block(tail[:MAX_LINE], base, stats)
                    tail = b""
                    skipping = True
        except OSError as exc:
            stats.error = exc.strerror or str(exc)
        if tail:
            self._block(tail, base, stats)
            base += 1
        elif skipping:
            base += 1
        stats.lines = base
        return stats


def iter_log_files(path: str) -> List[str]:
    """``path`` itself, or for a directory every regular file below it that looks like
    a log (``*.log``, ``*.txt``, ``*.out``, ``*.err``, CANN ``plog-*``), sorted."""
    if not os.path.isdir(path):
        return [path]
    out = []
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames.sort()
        for name in sorted(filenames):
            if name.startswith("plog") or name.endswith((".log", ".txt", ".out", ".err")):
                out.append(os.path.join(dirpath, name))
    return out
