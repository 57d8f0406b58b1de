"""``scripts/regen.py``: the one entry that regenerates every generated file, run on a copy
of the parts of the checkout the generators read and write."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

#: What the generators read and write, relative to the checkout.
PARTS = ("npudoctor", "matrix", "scripts", "docs", "tests/golden", "tests/fixtures/grades")


def _regen(tree: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(tree / "scripts" / "regen.py"), *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=str(tree),
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for part in PARTS:
        shutil.copytree(REPO / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


@pytest.mark.slow
def test_check_names_the_stale_files_and_the_default_rewrites_them(tree: Path) -> None:
    assert _regen(tree, "--check").returncode == 0
    grades = tree / "docs" / "grades.md"
    twin = tree / "npudoctor" / "knowledge" / "data" / "codes" / "packages.toml.compiled.json"
    want_grades, want_twin = grades.read_text(encoding="utf-8"), twin.read_text(encoding="utf-8")
    grades.write_text(want_grades + "edited by hand\n", encoding="utf-8")
    twin.unlink()

    stale = _regen(tree, "--check")
    assert stale.returncode == 1
    last = stale.stderr.strip().splitlines()[-1]
    assert last == (
        "stale generated files: npudoctor/knowledge/**/*.toml.compiled.json, docs/grades.md; "
        "run: python scripts/regen.py"
    )
    assert "npudoctor/knowledge/data/codes/packages.toml.compiled.json" in stale.stderr
    assert not twin.exists()  # --check writes nothing

    assert _regen(tree).returncode == 0
    assert grades.read_text(encoding="utf-8") == want_grades
    assert twin.read_text(encoding="utf-8") == want_twin
    assert _regen(tree, "--check").returncode == 0
