"""The bundled matrix shipped compiled (issue 18): made by ``scripts/gen_matrix.py``, used
only while the TOML files it was made from are unchanged, and equal to parsing them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from npudoctor.knowledge.matrix import load as matrix_load

REPO = Path(__file__).resolve().parent.parent


def test_compiled_matrix_is_current() -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gen_matrix.py")], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr


def _compiled() -> dict:
    """The compiled file as one document: ``{"sha256", "files", "data"}`` (JSON Lines: a
    header, then one line per table named in its ``tables``)."""
    lines = Path(matrix_load.COMPILED_FILE).read_bytes().decode("utf-8").split("\n")[:-1]
    head = json.loads(lines[0])
    data = {"schema_version": head["schema_version"]}
    data.update((name, json.loads(line)) for name, line in zip(head["tables"], lines[1:], strict=True))
    return {"sha256": head["sha256"], "files": head["files"], "data": data}


def _parsed(directory: str) -> dict:
    files = matrix_load._files_of(directory)
    return matrix_load.merge_documents((f, matrix_load._read_doc(f)[0]) for f in files)


def test_compiled_equals_parsed_and_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    bundled = matrix_load.bundled_dir()
    compiled = _compiled()
    assert compiled["data"] == _parsed(bundled)

    # Used: with the TOML parser made to fail, the bundled matrix still loads.
    def no_parse(file: str, raw: bytes) -> dict:
        raise AssertionError(f"parsed {file} although the compiled matrix matches")

    monkeypatch.setattr(matrix_load, "_parse_doc", no_parse)
    m = matrix_load.load_from(bundled, "bundled")
    assert m.provenance["sha256"] == compiled["sha256"]
    assert m.provenance["files"] == compiled["files"] == ["cann.toml", "chips.toml", "torch_npu.toml"]


def test_edited_matrix_is_parsed_not_the_stale_copy(tmp_path: Path) -> None:
    copy = tmp_path / "matrix"
    shutil.copytree(matrix_load.bundled_dir(), copy)
    cann = copy / "cann.toml"
    cann.write_text(cann.read_text(encoding="utf-8") + "\n# an edit\n", encoding="utf-8")
    m = matrix_load.load_from(str(copy), "bundled")
    compiled = _compiled()
    assert m.provenance["sha256"] != compiled["sha256"]
    # An edit that breaks the schema is caught, because the edited files are validated.
    cann.write_text(cann.read_text(encoding="utf-8") + '\n[[cann]]\nversion = "not a version"\n', encoding="utf-8")
    with pytest.raises(matrix_load.MatrixError, match="invalid matrix"):
        matrix_load.load_from(str(copy), "bundled")
