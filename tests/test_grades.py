"""The grade → severity policy (knowledge/grades.py) against the evidence grid's own rows
(tests/fixtures/grades/grid.toml: each row's grade and severity come from AUDIT.md and the
official source it names)."""

from __future__ import annotations

from pathlib import Path

import pytest

from npudoctor.knowledge.grades import Grade, Verdict, severity
from npudoctor.tomlread import loads

GRID = loads((Path(__file__).parent / "fixtures" / "grades" / "grid.toml").read_text(encoding="utf-8"))
ROWS = [r for r in GRID["row"] if r["grade"] != "undocumented"]  # undocumented: info or warning by case


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_severity_of_each_documented_grade_matches_the_grid(row):
    verdict = Verdict(Grade(row["grade"]), source=row["source"], unofficial=bool(row.get("unofficial")))
    # in a container only the host driver <-> image CANN relation is always reported
    always = row.get("context") == "container" and row["pairing"] == "cann-driver"
    got = severity(verdict, always_report=always)
    assert (got or "none") == row["severity"]


def test_undocumented_is_never_an_error():
    verdict = Verdict(Grade.UNDOCUMENTED, source="no statement either way")
    assert severity(verdict) == "warning" and severity(verdict, mild=True) == "info"
    undocumented = [r for r in GRID["row"] if r["grade"] == "undocumented"]
    assert undocumented and {r["severity"] for r in undocumented} <= {"info", "warning"}


def test_words_and_description():
    v = Verdict(Grade.DECLARED, source="the driver's own version.info lists C22")
    assert v.describe() == "declared compatible (the driver's own version.info lists C22)"
    own = Verdict(Grade.DECLARED, source="declared compatible by the toolkit's own ascend_toolkit_install.info")
    assert own.describe() == "declared compatible by the toolkit's own ascend_toolkit_install.info"  # said once
    assert (
        Verdict(Grade.SAME_LINE, "8.2.RC2 is a maintenance release of 8.2.RC1", unofficial=True)
        .describe()
        .endswith(", an unofficial build)")
    )
    assert [g.works for g in Grade] == [True, True, True, False, False, False]
