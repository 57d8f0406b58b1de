"""Precision and recall of ``npudoctor lint`` over an annotated corpus directory: each file
mirrors a named public pattern; ``# lint-expect: CODE[,CODE]`` ends a line that lint must
report, and every other finding is a false positive.  Used by the corpus written with the
rules (tests/fixtures/lint_corpus) and by the held-out one written after them
(tests/fixtures/lint_heldout)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Dict, Set, Tuple

from tests.clirun import npudoctor

SUFFIXES = (".py", ".sh", ".yaml")
_EXPECT = re.compile(r"#\s*lint-expect:\s*([A-Z0-9, ]+)")

Key = Tuple[str, int, str]


def files(corpus: Path) -> list:
    return sorted(p for p in corpus.iterdir() if p.suffix in SUFFIXES)


def expected(corpus: Path) -> Set[Key]:
    out: Set[Key] = set()
    for path in files(corpus):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = _EXPECT.search(line)
            if m:
                out.update((path.name, number, code.strip()) for code in m.group(1).split(",") if code.strip())
    return out


#: Findings about the fixes of other findings, not a CUDA-ism of their own line: LNT023 (the
#: NPU fixes of a file need torch_npu, which it never imports) follows from the findings the
#: corpus labels, so the measure leaves it out (tests/test_lint.py checks it).
DERIVED = ("LNT023",)


def found(corpus: Path) -> Set[Key]:
    res = npudoctor("lint", "--json", corpus)
    assert res.returncode == 1, res.stderr
    doc = json.loads(res.stdout)
    return {(Path(f["path"]).name, f["line"], f["code"]) for f in doc["findings"] if f["code"] not in DERIVED}


def measure(corpus: Path) -> Dict[str, float]:
    want, got = expected(corpus), found(corpus)
    tp = len(want & got)
    return {
        "precision": round(tp / len(got), 4) if got else 1.0,
        "recall": round(tp / len(want), 4) if want else 1.0,
        "expected": len(want),
        "found": len(got),
    }


def baseline(corpus: Path) -> Dict[str, float]:
    return dict(json.loads((corpus / "baseline.json").read_text(encoding="utf-8")))
