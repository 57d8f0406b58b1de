"""The bundled matrix ships compiled: made by ``scripts/gen_matrix.py`` (in a checkout a test
fails while it is stale), equal to parsing the TOML files, loaded whole at run time without
reading or hashing them, and a broken compiled file is a MatrixError, never another path."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from npudoctor.knowledge.matrix import Matrix, MatrixError
from npudoctor.knowledge.matrix import load as matrix_load
from npudoctor.knowledge.matrix.hdk import Packages

REPO = Path(__file__).resolve().parent.parent
COMPILED = Path(matrix_load.COMPILED_FILE)


def test_compiled_matrix_is_current() -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gen_matrix.py")], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr


def _parsed() -> dict:
    """The bundled TOML files parsed and merged (no compiled file involved)."""
    files = matrix_load._files_of(matrix_load.bundled_dir())
    return matrix_load.merge_documents((f, matrix_load._read_doc(f)[0]) for f in files)


@pytest.fixture(scope="module")
def both() -> tuple:
    compiled = matrix_load.load_bundled()
    # The parsed data with its keys sorted, as gen_matrix.py writes them: a verdict that
    # lists an hdk_grid names its columns in the order of the dict (sorted in the compiled
    # matrix, the release notes' order in the TOML).
    eager = Matrix(json.loads(json.dumps(_parsed(), sort_keys=True)), dict(compiled.provenance))
    return compiled, eager


def test_compiled_equals_parsed_and_is_loaded_without_the_toml(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = json.loads(COMPILED.read_text(encoding="utf-8"))
    assert set(doc) == {"sha256", "files", "data"}
    assert doc["data"] == _parsed()
    files = matrix_load._files_of(matrix_load.bundled_dir())
    assert doc["sha256"] == matrix_load.sha256_hex(b"".join(Path(f).read_bytes() for f in files))

    def refused(*args: object) -> None:
        raise AssertionError(f"read, parsed or hashed the bundled TOML: {args[:1]}")

    monkeypatch.setattr(matrix_load, "_parse_doc", refused)
    monkeypatch.setattr(matrix_load, "sha256_hex", refused)
    monkeypatch.setattr(matrix_load, "_files_of", refused)
    monkeypatch.setenv("NPUDOCTOR_CACHE_DIR", str(Path(__file__).parent / "no-such-cache"))
    m = matrix_load.load_uncached()
    assert m.provenance["origin"] == "bundled"
    assert m.provenance["source"] == matrix_load.bundled_dir()
    assert m.provenance["sha256"] == doc["sha256"]
    assert m.provenance["files"] == doc["files"] == ["cann.toml", "chips.toml", "torch_npu.toml"]
    assert m.provenance["retrieved"] == max(meta["retrieved"] for meta in doc["data"]["metas"])
    # schema_version first, then the tables by name (the order the lazy matrix merged them in)
    assert list(m.data) == ["schema_version"] + sorted(k for k in doc["data"] if k != "schema_version")


def test_compiled_matrix_holds_the_same_rows(both: tuple) -> None:
    compiled, eager = both
    assert compiled.torch_npu_rows == eager.torch_npu_rows
    assert len(compiled.torch_npu_rows) == len(eager.data["torch_npu"]) > 50
    assert compiled.families == eager.families and "910B" in compiled.families
    assert compiled.chips == eager.chips and compiled.chip("910B3") == eager.chip("910B3") is not None
    assert compiled.cann_rows == eager.cann_rows
    assert compiled.torch_npu == eager.torch_npu
    assert compiled.known_cann_lines() == eager.known_cann_lines()
    assert compiled.cann_python_deps() == eager.cann_python_deps() and "numpy" in compiled.cann_python_deps()
    for name in eager.data:
        if name != "schema_version":
            assert compiled.table(name) == eager.table(name), name
    assert compiled.table("no_such_table") == [] == eager.table("no_such_table")
    assert compiled.data == eager.data


def test_compiled_matrix_answers_queries_like_the_parsed_one(both: tuple) -> None:
    compiled, eager = both
    canns = sorted({str(r["version"]) for r in eager.data["cann"]}) + ["8.0.RC3.alpha001", "8.2.RC2", "7.9.9"]
    drivers = ["23.0.3", "24.1.rc2", "24.1.rc2.2", "25.2.0", "25.5.1", "26.0.rc1", "22.0.0"]
    versions = [r.torch_npu for r in eager.torch_npu_rows][::3] + ["2.1.0.post10", "2.4.0.post9", "9.9.9"]
    for v in versions:
        assert compiled.find_torch_npu(v) == eager.find_torch_npu(v), v
        assert compiled.ext_version_of(v) == eager.ext_version_of(v), v
        assert compiled.python_verdict(v, "3.10", "aarch64") == eager.python_verdict(v, "3.10", "aarch64"), v
        for family in ("910B", "910_93", "310P", "950", "nope"):
            assert compiled.family_supported(family, v) == eager.family_supported(family, v), (family, v)
        for cann in canns[::4]:
            assert compiled.cann_verdict(v, cann) == eager.cann_verdict(v, cann), (v, cann)
    for row in eager.torch_npu_rows[::5]:
        assert compiled.support(row) == eager.support(row), row.torch_npu
    for cann in canns:
        assert compiled.rows_for_cann(cann) == eager.rows_for_cann(cann), cann
        assert compiled.driver_requirement(cann) == eager.driver_requirement(cann), cann
        assert compiled.numpy_verdict("1.26.4", cann, "3.10") == eager.numpy_verdict("1.26.4", cann, "3.10"), cann
        assert compiled.cann_python_range(cann) == eager.cann_python_range(cann), cann
        for driver in drivers:
            assert compiled.driver_verdict(cann, driver) == eager.driver_verdict(cann, driver), (cann, driver)
            assert compiled.driver_verdict(
                cann, driver, Packages(), family="910B", chip="910B3"
            ) == eager.driver_verdict(cann, driver, Packages(), family="910B", chip="910B3"), (cann, driver)
    for py in ("3.8", "3.10", "3.11"):
        assert compiled.fits(python=py, platform="aarch64") == eager.fits(python=py, platform="aarch64"), py
        got = compiled.newest_for("910B", "aarch64", py, "24.1.rc2")
        assert got == eager.newest_for("910B", "aarch64", py, "24.1.rc2"), py
    assert compiled.newest_for("910B", "aarch64", "3.10") is not None


BROKEN = {
    "missing": None,
    "not JSON": b'{"sha256": "',
    "not an object": b"[]",
    "no data": b'{"sha256": "0", "files": []}',
    "other schema version": b'{"sha256": "0", "files": [], "data": {"schema_version": 2, "metas": []}}',
    "no metas": b'{"sha256": "0", "files": [], "data": {"schema_version": 1}}',
    "nested too deeply": b"[" * 100000,
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_compiled_matrix_is_a_matrix_error(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = tmp_path / "compiled.json"
    if BROKEN[case] is not None:
        broken.write_bytes(BROKEN[case])
    monkeypatch.setattr(matrix_load, "COMPILED_FILE", str(broken))
    with pytest.raises(MatrixError, match="compiled bundled matrix .* reinstall npudoctor"):
        matrix_load.load_bundled()


def test_an_edited_matrix_file_is_parsed_and_validated(tmp_path: Path) -> None:
    copy = tmp_path / "matrix"
    shutil.copytree(matrix_load.bundled_dir(), copy)
    cann = copy / "cann.toml"
    cann.write_text(cann.read_text(encoding="utf-8") + "\n# an edit\n", encoding="utf-8")
    m = matrix_load.load_from(str(copy), "file")
    assert m.provenance["sha256"] != json.loads(COMPILED.read_text(encoding="utf-8"))["sha256"]
    assert m.data == _parsed()
    # An edit that breaks the schema is caught, because the edited files are validated.
    cann.write_text(cann.read_text(encoding="utf-8") + '\n[[cann]]\nversion = "not a version"\n', encoding="utf-8")
    with pytest.raises(MatrixError, match="invalid matrix"):
        matrix_load.load_from(str(copy), "file")
