"""Precision and recall of ``npudoctor lint`` on the corpus of tests/fixtures/lint_corpus (see
its README): each file mirrors a named public pattern; ``# lint-expect: CODE`` marks what must
be found.  A drop below the committed baseline fails."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Dict, Set, Tuple

from tests.clirun import npudoctor

CORPUS = Path(__file__).parent / "fixtures" / "lint_corpus"
BASELINE = json.loads((CORPUS / "baseline.json").read_text(encoding="utf-8"))
SUFFIXES = (".py", ".sh", ".yaml")
_EXPECT = re.compile(r"#\s*lint-expect:\s*([A-Z0-9, ]+)")

Key = Tuple[str, int, str]


def _expected() -> Set[Key]:
    out: Set[Key] = set()
    for path in sorted(CORPUS.iterdir()):
        if path.suffix not in SUFFIXES:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = _EXPECT.search(line)
            if m:
                out.update((path.name, number, code.strip()) for code in m.group(1).split(",") if code.strip())
    return out


def _found() -> Set[Key]:
    res = npudoctor("lint", "--json", CORPUS)
    assert res.returncode == 1, res.stderr
    doc = json.loads(res.stdout)
    return {(Path(f["path"]).name, f["line"], f["code"]) for f in doc["findings"]}


def measure() -> Dict[str, float]:
    expected, found = _expected(), _found()
    tp = len(expected & found)
    return {
        "precision": round(tp / len(found), 4) if found else 1.0,
        "recall": round(tp / len(expected), 4) if expected else 1.0,
        "expected": len(expected),
        "found": len(found),
    }


def test_the_corpus_is_large_enough_and_names_what_it_mirrors() -> None:
    files = [p for p in CORPUS.iterdir() if p.suffix in SUFFIXES]
    assert len(files) >= 60
    for path in files:
        head = path.read_text(encoding="utf-8").splitlines()[:2]
        assert any("Mirrors " in line for line in head), path.name


def test_precision_and_recall_do_not_drop_below_the_baseline() -> None:
    got = measure()
    assert got["precision"] >= BASELINE["precision"], got
    assert got["recall"] >= BASELINE["recall"], got


def test_npu_ports_are_silent() -> None:
    found = _found()
    ported = sorted({name for name, _line, _code in found if "_npu." in name})
    assert ported == []
