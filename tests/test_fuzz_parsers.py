"""Hypothesis: mutated captures and random text into every npu-smi / topo parser — no
exception, no hang (each example has a deadline), results keep their shape."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npudoctor.parsers import npu_smi, topo

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CAPTURES = sorted(
    p.read_text(encoding="utf-8", errors="replace")
    for p in list(FIXTURES.glob("npu-smi*")) + list(FIXTURES.glob("topo_*")) + list(FIXTURES.glob("error_npu-smi_*"))
)
PARSERS = [
    npu_smi.parse_info,
    npu_smi.parse_error,
    npu_smi.parse_version,
    npu_smi.parse_mapping,
    npu_smi.parse_list,
    npu_smi.parse_kv_blocks,
    npu_smi.parse_health,
    npu_smi.parse_board,
    npu_smi.parse_usages,
    npu_smi.parse_common,
    npu_smi.parse_proc_mem,
    topo.parse_topo,
]
TABLE_CHARS = st.sampled_from(list("|+-=/ \t\n.:0123456789ABCDEFxNPUOKChipHBMSXcpunAlarm-") + ["\r", "\u00a0", "…"])


def _run_all(text: str) -> None:
    for parse in PARSERS:
        parse(text)
    info = npu_smi.parse_info(text)
    assert isinstance(info["chips"], list) and isinstance(info["processes"], list)
    for chip in info["chips"]:
        assert isinstance(chip["npu_id"], int) and isinstance(chip["name"], str)
    t = topo.parse_topo(text)
    assert all(isinstance(n, int) for n in t["npus"])


@settings(max_examples=300, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(
    capture=st.sampled_from(CAPTURES),
    cut=st.integers(min_value=0, max_value=6000),
    start=st.integers(min_value=0, max_value=400),
    insert=st.text(alphabet=TABLE_CHARS, max_size=40),
    where=st.integers(min_value=0, max_value=6000),
)
def test_mutated_captures(capture, cut, start, insert, where):
    text = capture[start:cut]
    text = text[:where] + insert + text[where:]
    _run_all(text)


@settings(max_examples=300, deadline=2000)
@given(st.text(alphabet=TABLE_CHARS, max_size=3000))
def test_table_like_noise(text):
    _run_all(text)


@settings(max_examples=200, deadline=2000)
@given(st.text(max_size=2000))
def test_random_unicode(text):
    _run_all(text)


def test_long_lines_do_not_hang():
    for text in ("|" + " " * 200000 + "|", "dcmi " * 50000, "a" + " " * 100000, "Process id:1 Process name:" * 20000):
        _run_all(text)
