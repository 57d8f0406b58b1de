"""Bundled TOML data is read through compiled JSON twins: in a checkout the twins are
current and equal to parsing the TOML; at run time the twin is loaded whole."""

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


def test_the_twin_is_used_whole_without_reading_the_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At run time the twin answers, whatever the TOML beside it holds (staleness is the
    checkout's test above, not a run-time check); only a missing or broken twin sends the
    load to the TOML."""
    src = tmp_path / "data.toml"
    src.write_text('title = "current"\n', encoding="utf-8")
    twin = Path(str(src) + tomlread.COMPILED_SUFFIX)
    twin.write_text(tomlread.twin_document(b'title = "old"\n', {"title": "old"}), encoding="utf-8")
    with monkeypatch.context() as mp:
        mp.setattr(tomlread, "loads", lambda text: pytest.fail("parsed the TOML"))
        mp.setattr(tomlread, "sha256_hex", lambda raw: pytest.fail("hashed the TOML"))
        assert tomlread.load_bundled(str(src)) == {"title": "old"}
    twin.write_text("{not json", encoding="utf-8")
    assert tomlread.load_bundled(str(src)) == {"title": "current"}
    twin.unlink()
    assert tomlread.load_bundled(str(src)) == {"title": "current"}
