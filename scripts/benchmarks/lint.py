"""``npudoctor lint`` on a 2,000-file Python tree against the floor of a Python-AST linter:
reading and ``ast.parse``-ing every file in one process (issue 34 target: at most 3x).

The tree is generated into a temporary directory from the lint test corpus
(tests/fixtures/lint_corpus): each file is repeated with a numbered suffix, padded with
ordinary code so that files have realistic sizes.  Both sides run as child processes (the
start-up of Python counts for both); each round runs them back to back and the ratio reported
is the median of the rounds' ratios (the machine may be shared).  Peak RSS of the lint child
comes from ``getrusage(RUSAGE_CHILDREN)``.
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import List

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "fixtures" / "lint_corpus"
FILES = int(os.environ.get("NPUDOCTOR_BENCH_LINT_FILES", "2000"))
_PAD = "".join(
    f"def helper_{i}(x, y=1):\n    total = x + y * {i}\n    return [total for _ in range(3)]\n\n" for i in range(40)
)

_FLOOR = (
    "import ast, os, sys\n"
    "for d, _s, names in os.walk(sys.argv[1]):\n"
    "    for n in names:\n"
    "        if n.endswith('.py'):\n"
    "            with open(os.path.join(d, n), 'rb') as fh:\n"
    "                ast.parse(fh.read().decode('utf-8'))\n"
)


def _tree(where: str) -> None:
    sources = sorted(p for p in CORPUS.iterdir() if p.suffix == ".py")
    for i in range(FILES):
        src = sources[i % len(sources)]
        sub = Path(where) / f"pkg{i // 100}"
        sub.mkdir(exist_ok=True)
        (sub / f"{src.stem}_{i}.py").write_text(src.read_text(encoding="utf-8") + "\n" + _PAD, encoding="utf-8")


def _time(argv: List[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, cwd=str(REPO))
    return time.perf_counter() - start


def run(repeat: int) -> List[str]:
    tmp = tempfile.mkdtemp(prefix="npudoctor-bench-lint-")
    try:
        _tree(tmp)
        env_python = sys.executable
        ratios, floors, lints = [], [], []
        for _ in range(max(1, repeat)):
            floor = _time([env_python, "-c", _FLOOR, tmp])
            lint = _time([env_python, "-m", "npudoctor", "lint", "--json", tmp])
            floors.append(floor)
            lints.append(lint)
            ratios.append(lint / floor)
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        return [
            f"lint {FILES} files: {statistics.median(lints):.2f} s (median of {len(lints)})",
            f"ast.parse floor: {statistics.median(floors):.2f} s",
            f"ratio lint / floor: {statistics.median(ratios):.2f}x (target <= 3x)",
            f"peak RSS of a child: {rss:.0f} MiB",
        ]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
