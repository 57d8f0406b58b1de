"""Chip identity (:mod:`npudoctor.knowledge.chips`): a chip's matrix row, its family and the
chip part of the package names come from the matrix's chips.toml, never from a table in
code.  The edited-matrix tests change one family's package chip in a copy of the bundled
matrix and see the edit in every answer."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from npudoctor.facts._typed import load
from npudoctor.facts.devices import DevicesFacts
from npudoctor.knowledge.chips import chip_identity, family_package_chip, matrix_chip, package_chip
from npudoctor.knowledge.matrix import Matrix, load_matrix
from npudoctor.knowledge.matrix import load as matrix_load


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    return load_matrix()


def _devices(*names: str) -> DevicesFacts:
    return load(DevicesFacts, {"chips": [{"npu_id": i, "name": n} for i, n in enumerate(names)]})[0]


@pytest.mark.parametrize(
    ("family", "expected"),
    [("910B", "910b"), ("910_93", "A3"), ("310P", "310p"), ("910", "910"), ("310", None), ("9999", None), (None, None)],
)
def test_family_package_chip_reads_the_family_rows(matrix: Matrix, family: object, expected: object) -> None:
    assert family_package_chip(matrix, family) == expected  # type: ignore[arg-type]
    assert family_package_chip(None, family) is None  # type: ignore[arg-type]


def test_machine_package_chip_is_the_first_chip_the_matrix_knows(matrix: Matrix) -> None:
    assert package_chip(matrix, _devices("910Z9", "Ascend 910B3")) == "910b"
    assert package_chip(matrix, _devices("310P3")) == "310p"
    assert package_chip(matrix, _devices("910Z9")) is None
    assert package_chip(None, _devices("910B3")) is None
    assert package_chip(matrix, _devices()) is None


def test_matrix_chip_names_and_a_matrix_that_cannot_answer(matrix: Matrix) -> None:
    row = matrix_chip(matrix, "Ascend 910B4")
    assert row is not None and (row.name, row.family) == ("910B4", "910B")
    assert matrix_chip(matrix, "nothing") is None

    class Broken(Matrix):
        def chip(self, npu_smi_name: str) -> None:
            raise ValueError("no chips table")

    broken = Broken({}, {})
    assert matrix_chip(broken, "910B3") is None
    assert chip_identity(broken, {"name": "910B3"})["known"] is False


def _edited(tmp_path: Path) -> Matrix:
    copy = tmp_path / "matrix"
    shutil.copytree(matrix_load.bundled_dir(), copy)
    chips = copy / "chips.toml"
    text = chips.read_text(encoding="utf-8")
    assert text.count('package_chip = "910b"') == 1
    chips.write_text(text.replace('package_chip = "910b"', 'package_chip = "910bx"'), encoding="utf-8")
    return matrix_load.load_from(str(copy), "file")


def test_an_edited_chips_table_is_what_every_answer_says(tmp_path: Path) -> None:
    edited = _edited(tmp_path)
    assert family_package_chip(edited, "910B") == "910bx"
    assert package_chip(edited, _devices("910B3")) == "910bx"
    assert chip_identity(edited, {"name": "910B3"})["family"] == "910B"
