"""The candidate-line gate: which lines of a chunk may hold a known signature or an error shape.

Every signature pattern holds a literal anchor (``undefined symbol: ``) or, for the code
families, a code shape starting with a literal byte (``E[A-Z0-9]\\d{4}``); the generic error
shapes add theirs (``rror``, ``ailed`` ...).  A line is a candidate when it holds one of them.

Finding them is the whole cost of a triage on a large log, so it is planned for CPython: a
``bytes.find`` of one byte is ``memchr``, far cheaper than any ``re`` pass; an ``re`` pattern
whose first item is one literal byte is one pass, while an alternation of many literals, or one
starting with a set of bytes, is tried at every position, tens to hundreds of times slower.  So
the anchors are grouped by a *pivot* byte each contains, chosen by a greedy set cover weighing
how common each byte is in log text against the cost of finding it (:func:`_cost`), and each
group is one regex ``<pivot>(?:rest1(?<=anchor1)|rest2(?<=anchor2)|...)``.  :meth:`Gate.starts` finds a rare
pivot with ``memchr`` and tries the group's regex at each hit, and switches to ``re`` passes
where a pivot turns out frequent (docs/performance.md has the figures).  The candidates are
exactly the lines holding an anchor or a code shape;
:class:`npudoctor.triage.scan.Scanner` checks each against the patterns.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Pattern, Sequence, Set, Tuple

from npudoctor.knowledge import _signatures_plan as plan
from npudoctor.knowledge.signatures import KnowledgeBase

__all__ = ["Gate", "gate_for", "plan_pivots"]

#: Approximate share of each byte in English-language log text (training output, CANN plogs);
#: bytes not listed count as rare (0.0002).  It steers the pivots away from bytes that would
#: make every line a candidate, and toward bytes ``memchr`` finds a few times per MiB.
_FREQ: Dict[int, float] = {
    **{
        ord(c): f
        for c, f in zip(
            " etaoinsrhldcumfpgwybvkxjqz",
            (
                0.15,
                0.09,
                0.065,
                0.06,
                0.06,
                0.055,
                0.055,
                0.05,
                0.05,
                0.03,
                0.03,
                0.03,
                0.025,
                0.02,
                0.02,
                0.015,
                0.015,
                0.015,
                0.01,
                0.01,
                0.01,
                0.007,
                0.005,
                0.002,
                0.001,
                0.001,
                0.001,
            ),
        )
    },
    **{ord(c): 0.025 for c in "0123456789"},
    ord("0"): 0.05,
    **{ord(c): 0.03 for c in ".:-/"},
    **{ord(c): 0.01 for c in "_=,"},
    **{ord(c): 0.005 for c in "[]()'\"\t|<>"},
    **{ord(c): 0.002 for c in "STACLPMH"},
    # the letters of log levels (INFO, WARNING, DEBUG, ERROR) are on most lines
    **{ord(c): 0.01 for c in "INFOWARGDEBU"},
    **{ord(c): 0.0003 for c in "KVYXJQZ"},
}
#: Costs of the two ways to find a pivot byte, in milliseconds per MiB of log (measured on the
#: machine of docs/performance.md with a 1 MiB chunk in cache): one ``bytes.find`` of a single
#: byte (``memchr``) over the chunk; the Python work per hit (one ``match`` of the group's regex
#: at the hit and the next ``find``); one ``re`` search pass over the chunk; and the engine's
#: extra work per pivot byte it meets during that pass.
_MEMCHR = 0.012
_HIT = 0.0006
_PASS = 0.4
_PASS_HIT = 0.000011
_MIB = 1 << 20
#: Blocks a group stays with ``re`` passes after its hits made ``memchr`` the slower way.
_DENSE_BLOCKS = 8


def _freq(byte: int) -> float:
    return _FREQ.get(byte, 0.0002)


def _cost(byte: int) -> float:
    """Expected ms/MiB of finding every ``byte`` of a log: ``memchr`` while hits are rare, one
    ``re`` pass where they are not (:meth:`Gate.starts` chooses by itself at run time)."""
    hits = _freq(byte) * _MIB
    return _MEMCHR + min(hits * _HIT, _PASS + hits * _PASS_HIT)


def plan_pivots(
    anchors: Sequence[bytes], code_gates: Sequence[bytes] = (), members: Optional[Dict[int, List[bytes]]] = None
) -> Dict[int, List[bytes]]:
    """Group the literal ``anchors`` and the ``code_gates`` (regex sources starting with a
    literal byte) by pivot byte: ``{pivot: [regex source of what follows the pivot, ...]}``.

    Each code gate is pivoted on its first byte; the anchors by a greedy weighted set cover
    (cheapest ``cost of the byte / anchors newly covered`` first, see :func:`_cost`; a byte
    already chosen costs only the engine's tries of its longer alternation).  An anchor's
    source is its rest after the pivot and then a look-behind for the whole anchor, so the
    candidates are exactly the lines holding an anchor (``default`` is none for ``result``).
    ``members``, when given, receives the anchors of each pivot."""
    groups: Dict[int, List[bytes]] = {}
    for gate in code_gates:
        groups.setdefault(gate[0], []).append(gate[1:])
    left = list(dict.fromkeys(anchors))
    chosen: List[int] = list(groups)
    while left:
        best: Tuple[float, int] = (float("inf"), -1)
        for byte in sorted({b for a in left for b in a}):
            covered = sum(1 for a in left if byte in a)
            cost = _freq(byte) * _MIB * _PASS_HIT if byte in chosen else _cost(byte)
            if all(a.rfind(bytes([byte])) >= len(a) - 2 for a in left if byte in a):
                cost *= 3  # only a look-behind would make it selective
            best = min(best, (cost / covered, byte))
        pivot = best[1]
        chosen.append(pivot)
        for a in [a for a in left if pivot in a]:
            # pivot at its last-but-most position that leaves a rest of 2+ bytes when possible
            positions = [i for i, b in enumerate(a) if b == pivot]
            i = next((p for p in positions if len(a) - p - 1 >= 2), positions[0])
            rest = re.escape(a[i + 1 :])
            if i > 0:
                rest += b"(?<=" + re.escape(a) + b")"
            groups.setdefault(pivot, []).append(rest)
            if members is not None:
                members.setdefault(pivot, []).append(a)
            left.remove(a)
    return groups


def _alternation(rests: Sequence[bytes]) -> bytes:
    """``(?:r1|r2|...)`` with the literal rests sharing a first byte factored out, so the
    engine tries one branch per distinct first byte instead of one per rest."""
    by_first: Dict[bytes, List[bytes]] = {}
    for r in sorted(set(rests), key=len, reverse=True):
        first = r[:2] if r[:1] == b"\\" else r[:1]
        literal = first and first != b"(" and first != b"["
        by_first.setdefault(first if literal else r, []).append(r[len(first) :] if literal else b"")
    alts = []
    for first, tails in by_first.items():
        if len(tails) == 1:
            alts.append(first + tails[0])
        else:
            alts.append(first + b"(?:" + b"|".join(tails) + b")")
    return b"(?:" + b"|".join(alts) + b")"


class Gate:
    """The compiled gate of one knowledge base (see the module doc)."""

    def __init__(
        self,
        anchors: Sequence[bytes],
        code_gates: Sequence[bytes] = (),
        planned: Optional[Tuple[Dict[int, List[bytes]], Dict[int, List[bytes]]]] = None,
    ) -> None:
        members: Dict[int, List[bytes]] = {}
        if planned is not None:  # (groups, members) planned at build time for these anchors
            self.groups, members = planned
        else:
            self.groups = plan_pivots(anchors, code_gates, members)
        #: per group: the pivot byte and ``<pivot>(?:rest1|rest2|...)``
        self.regexes: List[Tuple[bytes, Pattern[bytes]]] = [
            (bytes([pivot]), re.compile(re.escape(bytes([pivot])) + _alternation(rests)))
            for pivot, rests in sorted(self.groups.items())
        ]
        #: per group: blocks left to search with ``re`` passes (0: ``memchr`` first)
        self._dense = [0] * len(self.regexes)
        #: per group: its regex and the literal anchors it stands for
        self._members: List[Tuple[Pattern[bytes], Tuple[bytes, ...]]] = [
            (rx, tuple(members.get(pivot[0], ()))) for pivot, rx in self.regexes
        ]

    def anchors_in(self, line: bytes) -> List[bytes]:
        """The literal anchors ``line`` holds: one search per group (a group without a
        match holds none of its anchors), then its anchors one by one."""
        found: List[bytes] = []
        for rx, anchors in self._members:
            if anchors and rx.search(line) is not None:
                found.extend(a for a in anchors if a in line)
        return found

    def reset(self) -> None:
        """Forget what earlier blocks said about how often each pivot occurs (a new log)."""
        self._dense = [0] * len(self.regexes)

    def starts(self, block: bytes, lo: int = 0, hi: int = -1) -> Set[int]:
        """Offsets in ``block`` of the starts of the candidate lines of ``block[lo:hi]``
        (``hi`` -1: to the end; ``lo`` is a line start).

        Each group's pivot byte is found with ``bytes.find`` (``memchr``) and the group's regex
        tried at each hit; past the number of hits at which one ``re`` pass over the block
        costs less (``_PASS / _HIT`` per MiB) the rest of the block is searched by ``re``, and
        so are the next :data:`_DENSE_BLOCKS` blocks.  Both ways find the same lines."""
        if hi < 0:
            hi = len(block)
        starts: Set[int] = set()
        find, rfind = block.find, block.rfind
        limit = max(16, int((hi - lo) * _PASS / _HIT / _MIB))
        for i, (pivot, rx) in enumerate(self.regexes):
            pos = lo
            if self._dense[i]:
                self._dense[i] -= 1
            else:
                match = rx.match
                hits = 0
                pos = find(pivot, lo, hi)
                while pos >= 0:
                    hits += 1
                    if hits > limit:
                        self._dense[i] = _DENSE_BLOCKS
                        break
                    if match(block, pos, hi) is not None:
                        starts.add(max(lo, rfind(b"\n", lo, pos) + 1))
                        pos = find(b"\n", pos, hi)
                        if pos < 0:
                            break
                    pos = find(pivot, pos + 1, hi)
                if pos < 0:
                    continue
            search = rx.search
            m = search(block, pos, hi)
            while m is not None:
                pos = m.start()
                starts.add(max(lo, rfind(b"\n", lo, pos) + 1))
                end = find(b"\n", pos, hi)
                if end < 0:
                    break
                m = search(block, end + 1, hi)
        return starts


_GATES: Dict[Tuple[str, int, Tuple[bytes, ...]], Gate] = {}


def gate_for(kb: KnowledgeBase, extra: Tuple[bytes, ...] = ()) -> Gate:
    """The gate of ``kb`` plus the ``extra`` literal anchors (built once per knowledge base,
    extras and process)."""
    key = (kb.path, id(kb), extra)
    gate = _GATES.get(key)
    if gate is None:
        anchors = list(kb.anchors) + list(extra)
        planned = None
        if tuple(anchors) == plan.GATE_ANCHORS and tuple(kb.code_gates) == plan.CODE_GATES:
            planned = (plan.GROUPS, plan.MEMBERS)
        gate = _GATES[key] = Gate(anchors, kb.code_gates, planned)
    return gate
