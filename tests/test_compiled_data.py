"""Bundled TOML data is read through compiled JSON twins (issue 18): the twins are
current, equal to parsing the TOML, and a stale twin is never used."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from npudoctor import tomlread

REPO = Path(__file__).resolve().parent.parent


def test_compiled_twins_are_current() -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gen_compiled_data.py")], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr


def test_every_twin_equals_its_toml() -> None:
    sources = sorted((REPO / "npudoctor" / "knowledge").rglob("*.toml"))
    assert len(sources) >= 15  # codes of every area, signatures, framework data
    for src in sources:
        twin = json.loads(Path(str(src) + tomlread.COMPILED_SUFFIX).read_text(encoding="utf-8"))
        assert twin["data"] == tomlread.loads(src.read_text(encoding="utf-8")), src


def test_a_stale_twin_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "data.toml"
    src.write_text('title = "current"\n', encoding="utf-8")
    Path(str(src) + tomlread.COMPILED_SUFFIX).write_text(
        tomlread.twin_document(b'title = "old"\n', {"title": "old"}), encoding="utf-8"
    )
    assert tomlread.load_bundled(str(src)) == {"title": "current"}
    # a current twin is used (the TOML parser is not called)
    Path(str(src) + tomlread.COMPILED_SUFFIX).write_text(
        tomlread.twin_document(src.read_bytes(), {"title": "from the twin"}), encoding="utf-8"
    )
    monkeypatch.setattr(tomlread, "loads", lambda text: pytest.fail("parsed the TOML"))
    assert tomlread.load_bundled(str(src)) == {"title": "from the twin"}
    # a broken twin is ignored
    Path(str(src) + tomlread.COMPILED_SUFFIX).write_text("{not json", encoding="utf-8")
    monkeypatch.undo()
    assert tomlread.load_bundled(str(src)) == {"title": "current"}
