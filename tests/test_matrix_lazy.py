"""The bundled matrix decodes only the tables a command uses (issue 18): ``compiled.jsonl``
holds one table per line; the lazy matrix answers like one made from the parsed TOML; a
stale, corrupt or truncated compiled file is not used (the TOML is) or fails with
MatrixError; ``devices`` on a 910B3 decodes only ``chip``, ``family`` and ``metas``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable, Dict, List

import pytest
import tomllib
from scenario_runner import environment, prepare

from npudoctor.knowledge.matrix import Matrix, MatrixError
from npudoctor.knowledge.matrix import load as matrix_load
from npudoctor.knowledge.matrix.hdk import Packages
from npudoctor.tomlread import sha256_hex

REPO = Path(__file__).resolve().parent.parent
COMPILED = Path(matrix_load.COMPILED_FILE)


def _parsed() -> dict:
    """The bundled TOML files parsed and merged (no compiled file involved)."""
    files = matrix_load._files_of(matrix_load.bundled_dir())
    return matrix_load.merge_documents((f, matrix_load._read_doc(f)[0]) for f in files)


@pytest.fixture(scope="module")
def both() -> tuple:
    lazy = matrix_load.load_from(matrix_load.bundled_dir(), "bundled")
    assert lazy.decoded_tables() == ("metas",)  # provenance only, so far
    # The parsed data with its keys sorted, as gen_matrix.py writes them (and the single
    # compiled.json did before): a verdict that lists an hdk_grid names its columns in the
    # order of the dict (sorted in the compiled matrix, the release notes' order in the TOML).
    eager = Matrix(json.loads(json.dumps(_parsed(), sort_keys=True)), dict(lazy.provenance))
    return lazy, eager


def test_lazy_matrix_holds_the_same_rows(both: tuple) -> None:
    lazy, eager = both
    assert lazy.torch_npu_rows == eager.torch_npu_rows
    assert len(lazy.torch_npu_rows) == len(eager.data["torch_npu"]) > 50
    assert lazy.families == eager.families and "910B" in lazy.families
    assert lazy.chips == eager.chips and lazy.chip("910B3") == eager.chip("910B3") is not None
    assert lazy.cann_rows == eager.cann_rows
    assert lazy.torch_npu == eager.torch_npu
    assert lazy.known_cann_lines() == eager.known_cann_lines()
    assert lazy.cann_python_deps() == eager.cann_python_deps() and "numpy" in lazy.cann_python_deps()
    for name in eager.data:
        if name != "schema_version":
            assert lazy.table(name) == eager.table(name), name
    assert lazy.table("no_such_table") == [] == eager.table("no_such_table")
    assert lazy.data == eager.data  # merged on first access, for `npudoctor matrix` and refresh


def test_lazy_matrix_answers_queries_like_the_eager_one(both: tuple) -> None:
    lazy, eager = both
    canns = sorted({str(r["version"]) for r in eager.data["cann"]}) + ["8.0.RC3.alpha001", "8.2.RC2", "7.9.9"]
    drivers = ["23.0.3", "24.1.rc2", "24.1.rc2.2", "25.2.0", "25.5.1", "26.0.rc1", "22.0.0"]
    versions = [r.torch_npu for r in eager.torch_npu_rows][::3] + ["2.1.0.post10", "2.4.0.post9", "9.9.9"]
    for v in versions:
        assert lazy.find_torch_npu(v) == eager.find_torch_npu(v), v
        assert lazy.ext_version_of(v) == eager.ext_version_of(v), v
        assert lazy.python_verdict(v, "3.10", "aarch64") == eager.python_verdict(v, "3.10", "aarch64"), v
        for family in ("910B", "910_93", "310P", "950", "nope"):
            assert lazy.family_supported(family, v) == eager.family_supported(family, v), (family, v)
        for cann in canns[::4]:
            assert lazy.cann_verdict(v, cann) == eager.cann_verdict(v, cann), (v, cann)
    for row in eager.torch_npu_rows[::5]:
        assert lazy.support(row) == eager.support(row), row.torch_npu
    for cann in canns:
        assert lazy.rows_for_cann(cann) == eager.rows_for_cann(cann), cann
        assert lazy.driver_requirement(cann) == eager.driver_requirement(cann), cann
        assert lazy.numpy_verdict("1.26.4", cann, "3.10") == eager.numpy_verdict("1.26.4", cann, "3.10"), cann
        assert lazy.cann_python_range(cann) == eager.cann_python_range(cann), cann
        for driver in drivers:
            assert lazy.driver_verdict(cann, driver) == eager.driver_verdict(cann, driver), (cann, driver)
            assert lazy.driver_verdict(cann, driver, Packages(), family="910B", chip="910B3") == eager.driver_verdict(
                cann, driver, Packages(), family="910B", chip="910B3"
            ), (cann, driver)
    for py in ("3.8", "3.10", "3.11"):
        assert lazy.fits(python=py, platform="aarch64") == eager.fits(python=py, platform="aarch64"), py
        got = lazy.newest_for("910B", "aarch64", py, "24.1.rc2")
        assert got == eager.newest_for("910B", "aarch64", py, "24.1.rc2"), py
    assert lazy.newest_for("910B", "aarch64", "3.10") is not None


def test_compiled_file_is_one_line_per_table() -> None:
    lines = COMPILED.read_bytes().split(b"\n")
    assert lines[-1] == b""  # ends with a newline
    head = json.loads(lines[0])
    assert head["files"] == ["cann.toml", "chips.toml", "torch_npu.toml"]
    assert head["schema_version"] == 1
    assert {"torch_npu", "cann", "chip", "family", "metas"} <= set(head["tables"])
    assert len(lines) == len(head["tables"]) + 2
    parsed = _parsed()
    for name, line in zip(head["tables"], lines[1:]):
        assert json.loads(line) == parsed[name], name


# ------------------------------------------------------------------ broken compiled files
def _compiled_lines() -> List[bytes]:
    return COMPILED.read_bytes().split(b"\n")[:-1]


def _header_edit(**changes: object) -> Callable[[List[bytes]], List[bytes]]:
    def edit(lines: List[bytes]) -> List[bytes]:
        head = json.loads(lines[0])
        head.update(changes)
        return [json.dumps(head).encode()] + lines[1:]

    return edit


BAD_AT_LOAD: Dict[str, Callable[[List[bytes]], List[bytes]]] = {
    "header not JSON": lambda lines: [b'{"sha256": "'] + lines[1:],
    "header not an object": lambda lines: [b"[]"] + lines[1:],
    "wrong digest": _header_edit(sha256="0" * 64),
    "other files": _header_edit(files=["cann.toml", "chips.toml"]),
    "other schema version": _header_edit(schema_version=2),
    "tables not names": _header_edit(tables="cann"),
    "a table line missing": lambda lines: lines[:-1],
    "a table line too many": lambda lines: lines + [b"[]"],
    "truncated to the header": lambda lines: lines[:1],
    "empty": lambda lines: [],
}


def _write(path: Path, lines: List[bytes]) -> None:
    path.write_bytes(b"".join(line + b"\n" for line in lines))


@pytest.mark.parametrize("case", sorted(BAD_AT_LOAD))
def test_a_stale_or_broken_header_sends_the_load_to_the_toml(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "compiled.jsonl"
    _write(broken, BAD_AT_LOAD[case](_compiled_lines()))
    monkeypatch.setattr(matrix_load, "COMPILED_FILE", str(broken))
    m = matrix_load.load_from(matrix_load.bundled_dir(), "bundled")
    # Made from the parsed TOML: every table at hand at once, equal to the parse.
    assert "torch_npu" in m.decoded_tables() and "cann" in m.decoded_tables()
    assert m.data == _parsed()
    assert m.provenance["retrieved"] == "2026-12-06"


def test_a_missing_compiled_file_sends_the_load_to_the_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(matrix_load, "COMPILED_FILE", str(tmp_path / "absent.jsonl"))
    m = matrix_load.load_from(matrix_load.bundled_dir(), "bundled")
    assert m.data == _parsed() and len(m.decoded_tables()) > 4


@pytest.mark.parametrize(
    "line",
    [b'[{"torch_npu": "2.1.0.post10", "tor', b"not json", b'{"torch_npu": []}', b"[1, 2]", b"[" * 100000],
    ids=["truncated", "not-json", "not-an-array", "not-tables", "nested-too-deeply"],
)
def test_a_corrupt_table_line_falls_back_to_the_toml_when_used(
    line: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = _compiled_lines()
    names = json.loads(lines[0])["tables"]
    lines[1 + names.index("torch_npu")] = line
    broken = tmp_path / "compiled.jsonl"
    _write(broken, lines)
    monkeypatch.setattr(matrix_load, "COMPILED_FILE", str(broken))
    m = matrix_load.load_from(matrix_load.bundled_dir(), "bundled")
    assert m.decoded_tables() == ("metas",)  # the header matched: lazy
    eager = Matrix(_parsed(), {})
    assert m.torch_npu_rows == eager.torch_npu_rows  # from the TOML, not the corrupt line
    assert m.find_torch_npu("2.1.0.post10") == eager.find_torch_npu("2.1.0.post10") is not None
    assert m.table("cann") == eager.table("cann")
    assert m.data == eager.data


def test_a_corrupt_line_over_invalid_toml_is_a_matrix_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A compiled file claiming the digest of TOML files that do not validate (nothing
    gen_matrix.py writes; a forged file): the corrupt line's fallback parses the TOML and
    raises MatrixError naming the problem, never another exception."""
    copy = tmp_path / "matrix"
    shutil.copytree(matrix_load.bundled_dir(), copy)
    cann = copy / "cann.toml"
    cann.write_text(cann.read_text(encoding="utf-8") + '\n[[cann]]\nversion = "not a version"\n', encoding="utf-8")
    files = matrix_load._files_of(str(copy))
    digest = sha256_hex(b"".join(Path(f).read_bytes() for f in files))
    lines = _header_edit(sha256=digest)(_compiled_lines())
    names = json.loads(lines[0])["tables"]
    lines[1 + names.index("cann")] = b"[{"
    broken = tmp_path / "compiled.jsonl"
    _write(broken, lines)
    monkeypatch.setattr(matrix_load, "COMPILED_FILE", str(broken))
    m = matrix_load.load_from(str(copy), "bundled")
    assert m.chip("910B3") is not None  # the lines that decode are used
    with pytest.raises(MatrixError, match="invalid matrix"):
        m.cann_row("8.0.0")


def test_a_matrix_needs_data_or_tables() -> None:
    with pytest.raises(ValueError, match="needs data or compiled tables"):
        Matrix(None, {})


# ------------------------------------------------------------------ what devices decodes
SCRIPT = """
import sys
from npudoctor.entry import main
code = main(sys.argv[1:])
from npudoctor.knowledge.matrix import load_matrix
sys.stderr.write("decoded: " + ",".join(load_matrix().decoded_tables()) + "\\n")
sys.exit(code)
"""


@pytest.mark.parametrize("argv", [["devices"], ["devices", "--json"]])
def test_devices_decodes_only_the_tables_it_reads(argv: List[str], tmp_path: Path) -> None:
    scenario = prepare(REPO / "tests" / "scenarios" / "health-910b3-8npu-healthy", tmp_path / "s")
    env = environment(scenario, tomllib.loads((scenario / "scenario.toml").read_text(encoding="utf-8")))
    env["NPUDOCTOR_CACHE_DIR"] = str(tmp_path / "cache")  # no refreshed matrix: the bundled one
    env["NPUDOCTOR_CONFIG"] = str(tmp_path / "no-config.toml")
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, *argv, "--root", str(scenario / "root")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(REPO),  # -c puts the working directory first on sys.path: this checkout
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "910B3" in proc.stdout
    # The 910B3 has no first torch_npu line of its own (knowledge/socs.SOC_FIRST_EXT): the
    # torch_npu rows are not needed, and not decoded.
    assert proc.stderr.splitlines()[-1] == "decoded: chip,family,metas"
    assert os.path.basename(matrix_load.COMPILED_FILE) == "compiled.jsonl"
