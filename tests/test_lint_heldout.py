"""The held-out measure of ``npudoctor lint`` (tests/fixtures/lint_heldout, see its README):
files written after the rules.  Precision and recall must not drop below the committed
baseline nor below the issue's bar (85 % recall, 90 % precision), and files that carry no
expected finding (NPU ports, framework-owned settings) must be silent."""

from __future__ import annotations

from pathlib import Path

from tests import lintcorpus

HELDOUT = Path(__file__).parent / "fixtures" / "lint_heldout"


def test_the_held_out_corpus_is_large_enough_and_names_what_it_mirrors() -> None:
    files = lintcorpus.files(HELDOUT)
    assert len(files) >= 20
    for path in files:
        head = "\n".join(path.read_text(encoding="utf-8").splitlines()[:3])
        assert "Mirrors " in head, path.name


def test_held_out_precision_and_recall() -> None:
    got, base = lintcorpus.measure(HELDOUT), lintcorpus.baseline(HELDOUT)
    assert got["precision"] >= base["precision"], got
    assert got["recall"] >= base["recall"], got
    assert got["precision"] >= 0.90 and got["recall"] >= 0.85, got


def test_files_without_expected_findings_are_silent() -> None:
    labelled = {name for name, _line, _code in lintcorpus.expected(HELDOUT)}
    noisy = sorted({name for name, _line, _code in lintcorpus.found(HELDOUT) if name not in labelled})
    assert noisy == []
    assert any("_npu." in p.name for p in lintcorpus.files(HELDOUT))
