"""Precision and recall of ``npudoctor lint`` on the corpus of tests/fixtures/lint_corpus (see
its README): each file mirrors a named public pattern; ``# lint-expect: CODE`` marks what must
be found.  A drop below the committed baseline fails."""

from __future__ import annotations

from pathlib import Path

from tests import lintcorpus

CORPUS = Path(__file__).parent / "fixtures" / "lint_corpus"


def measure() -> dict:
    return lintcorpus.measure(CORPUS)


def test_the_corpus_is_large_enough_and_names_what_it_mirrors() -> None:
    files = lintcorpus.files(CORPUS)
    assert len(files) >= 60
    for path in files:
        head = path.read_text(encoding="utf-8").splitlines()[:2]
        assert any("Mirrors " in line for line in head), path.name


def test_precision_and_recall_do_not_drop_below_the_baseline() -> None:
    got, base = measure(), lintcorpus.baseline(CORPUS)
    assert got["precision"] >= base["precision"], got
    assert got["recall"] >= base["recall"], got


def test_npu_ports_are_silent() -> None:
    found = lintcorpus.found(CORPUS)
    ported = sorted({name for name, _line, _code in found if "_npu." in name})
    assert ported == []
