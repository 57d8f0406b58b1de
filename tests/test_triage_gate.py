"""The candidate-line gate (npudoctor/triage/gate.py) finds the same lines whichever way it
searches a block: ``memchr`` hits checked one by one, or ``re`` passes once a pivot byte turns
out to be frequent (issue 17).  The lines are the real ones of the triage corpus; the reference
is the plain definition (a line is a candidate when it holds an anchor or a code shape)."""

import re
from pathlib import Path

try:
    import tomllib  # type: ignore[import-not-found]
except ImportError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

from npudoctor.knowledge.signatures import load_kb
from npudoctor.triage import gate as gate_mod
from npudoctor.triage.evidence import FRAME_ANCHOR
from npudoctor.triage.gate import Gate

LINES = Path(__file__).resolve().parent / "fixtures" / "triage_corpus" / "lines.toml"


def _corpus_lines():
    data = tomllib.loads(LINES.read_text(encoding="utf-8"))
    return [item["text"].encode("utf-8") for item in data["line"]]


def _reference(kb, lines):
    anchors = list(kb.anchors) + [FRAME_ANCHOR]
    codes = [re.compile(g) for g in kb.code_gates]
    return [any(a in line for a in anchors) or any(rx.search(line) for rx in codes) for line in lines]


def _candidates(gate, block, lo=0, hi=-1):
    return sorted(gate.starts(block, lo, hi))


def _block(lines):
    offsets, pos = [], 0
    for line in lines:
        offsets.append(pos)
        pos += len(line) + 1
    return b"\n".join(lines) + b"\n", offsets


def test_both_ways_find_exactly_the_reference_lines():
    kb = load_kb()
    lines = [line for line in _corpus_lines() if b"\n" not in line]
    assert len(lines) >= 150
    expected = _reference(kb, lines)
    # the corpus lines, repeated until every pivot byte is frequent enough to switch to re passes
    many = lines * 40
    block, offsets = _block(many)
    want = sorted(off for off, hit in zip(offsets, expected * 40) if hit)
    assert 0 < len(want) < len(many)

    sparse = Gate(list(kb.anchors) + [FRAME_ANCHOR], kb.code_gates)
    small, small_offsets = _block(lines)
    assert _candidates(sparse, small) == [off for off, hit in zip(small_offsets, expected) if hit]

    dense = Gate(list(kb.anchors) + [FRAME_ANCHOR], kb.code_gates)
    assert _candidates(dense, block) == want
    assert any(dense._dense)  # 40 copies: at least one pivot switched to re passes
    # the next block starts with re passes for those pivots and still finds the same lines
    assert _candidates(dense, block) == want
    dense.reset()
    assert not any(dense._dense)


def test_bounds_are_respected():
    kb = load_kb()
    lines = _corpus_lines()[:60]
    block, offsets = _block([line for line in lines if b"\n" not in line])
    gate = Gate(list(kb.anchors) + [FRAME_ANCHOR], kb.code_gates)
    whole = _candidates(gate, block)
    lo, hi = offsets[10], offsets[40]
    assert _candidates(gate, block, lo, hi) == [s for s in whole if lo <= s < hi]


def test_plan_prefers_rare_pivots():
    # a byte the frequency table calls rare is found by memchr: cheaper than any re pass
    assert gate_mod._cost(ord("`")) < gate_mod._PASS
    assert gate_mod._cost(ord("e")) > gate_mod._PASS


def test_every_pattern_compiles_on_first_use():
    # the bytes patterns are parsed (validated) when the plan is made, or at load without
    # one, and compiled when first tried
    for kb in (load_kb(), load_kb(use_plan=False)):
        for entry in kb.entries:
            assert entry.match_bytes(b"") is None or entry.match_bytes(b"") == {}
            assert len(entry.compiled) == len(entry.patterns)
            assert len(entry.parsed) == (0 if kb is load_kb() else len(entry.patterns))


def test_anchors_in_names_exactly_the_anchors_a_line_holds():
    # the scanner tries a candidate line only against the signatures of the anchors it holds
    kb = load_kb()
    anchors = list(kb.anchors) + [FRAME_ANCHOR]
    gate = Gate(anchors, kb.code_gates)
    lines = _corpus_lines()
    held = 0
    for line in lines:
        want = {a for a in anchors if a in line}
        assert set(gate.anchors_in(line)) == want, line
        held += bool(want)
    assert held > len(lines) // 3
