"""The product-line and chip-name catalogue (issue 29): every chip name npu-smi prints across
generations maps to its family and official product line (matrix/chips.toml, each with its
source and date); per-product-line CANN floors ([[cann_floor]]) give CANN013, an error only
where an official note requires the newer CANN, a warning where release notes only announce
the support; `check` and `devices` name the product line beside the chip."""

from __future__ import annotations

import copy
import io

import pytest

from npudoctor.context import Options
from npudoctor.engine import evaluate
from npudoctor.knowledge.chips import product_lines
from npudoctor.knowledge.matrix import Matrix, bundled_dir, load_from, validate
from npudoctor.report import devices as devices_view
from npudoctor.report.summary import area_lines
from npudoctor.snapshot import Snapshot

A2 = "Atlas A2 training products / Atlas A2 inference products"
A3 = "Atlas A3 training products / Atlas A3 inference products"


@pytest.fixture(autouse=True)
def _no_home_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NPUDOCTOR_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def m():
    return load_from(bundled_dir(), "bundled")


@pytest.mark.parametrize(
    "name, family, line",
    [
        ("910A", "910", "Atlas training products"),
        ("910ProB", "910", "Atlas training products"),
        ("910B", "910", "Atlas training products"),  # npu-smi 22.x: the first-generation 910
        ("910B1", "910B", A2),
        ("910B2C", "910B", A2),
        ("Ascend 910B3", "910B", A2),
        ("910B4-1", "910B", A2),
        ("Ascend910", "910_93", A3),  # A3 npu-smi Name
        ("Ascend910_9391", "910_93", A3),
        ("Ascend910_9362", "910_93", A3),
        ("310P3", "310P", "Atlas inference products"),
        ("310B4", "310B", "Atlas 200I/500 A2 inference products"),
        ("310", "310", "Atlas 200/300/500 inference products"),
        ("Ascend950PR", "950", "Atlas 350 accelerator card"),
        ("Ascend950DT", "950", "Ascend 950PR/Ascend 950DT products"),
    ],
)
def test_every_generation_maps_to_family_and_product_line(m, name, family, line):
    chip = m.chip(name)
    assert (chip.family, chip.product_line) == (family, line)
    assert "http" in chip.product_line_source


def test_every_family_has_a_sourced_dated_product_line(m):
    for row in m.table("family"):
        assert row["product_line"] and row["product_line_source"], row["family"]
        assert row["product_line_retrieved"] == "2026-12-06", row["family"]


def test_a_950_board_name_keeps_its_chip_and_an_unknown_950_name_only_its_family(m):
    dt = m.chip("Ascend950DT_9582")
    assert dt.name == "Ascend950DT" and [f.cann for f in m.floors_for(dt)] == ["9.1.0"]
    other = m.chip("Ascend950ZZ")
    # the family is known; the product of the Ascend950PR row is not claimed for it
    assert other.family == "950" and other.product_line == "Ascend 950PR/Ascend 950DT products"
    assert m.floors_for(other) == []


def test_floors_per_product_line(m):
    pr = m.floors_for(m.chip("Ascend950PR"))
    assert [(f.cann, f.statement, f.documented_unsupported) for f in pr] == [("9.0.0", "first-supported", False)]
    assert "CANN 9.0.0 release notes" in pr[0].source
    b4 = m.floors_for(m.chip("910B4"))
    assert [(f.cann, f.statement, f.chips_inferred, f.documented_unsupported) for f in b4] == [
        ("8.0.RC1", "requires", True, False)
    ]
    assert m.floors_for(m.chip("910B3")) == []


def _chips_doc(**changes):
    family = {
        "family": "910B",
        "label": "A2",
        "bf16": True,
        "kernels_dir": "ascend910b",
        "package_chip": "910b",
        "supported": "yes",
        "source": "s",
        "retrieved": "2026-12-06",
    }
    chip = {"name": "910B3", "soc_version": "Ascend910B3", "family": "910B", "source": "s", "retrieved": "2026-12-06"}
    floor = {
        "family": "910B",
        "chips": ["910B3"],
        "product": "A2",
        "cann": "8.0.RC1",
        "statement": "requires",
        "source": "s",
        "retrieved": "2026-12-06",
    }
    doc = {"schema_version": 1, "family": [family], "chip": [chip], "cann_floor": [floor]}
    for table, fields in changes.items():
        doc[table][0].update(fields)
    return doc


def test_product_lines_and_floors_are_validated():
    assert validate(_chips_doc(), "chips.toml", partial=True) == []
    cases = [
        (
            {"family": {"product_line": "Atlas A2"}},
            "[[family]] row 1 (family = 910B): field 'product_line' needs 'product_line_source'",
        ),
        (
            {"chip": {"product_line": "X", "product_line_source": "s", "product_line_retrieved": "today"}},
            "[[chip]] row 1 (name = 910B3): field 'product_line' needs 'product_line_retrieved' (a date YYYY-MM-DD)",
        ),
        (
            {"chip": {"product_line_source": "s"}},
            "[[chip]] row 1 (name = 910B3): field 'product_line_source' without 'product_line'",
        ),
        (
            {"cann_floor": {"statement": "maybe"}},
            "[[cann_floor]] row 1 (product = A2): field 'statement' must be one of requires, first-supported",
        ),
        ({"cann_floor": {"cann": "nine"}}, "field 'cann' is not a CANN version: 'nine'"),
        ({"cann_floor": {"family": "920"}}, "field 'family' names no [[family]] row: '920'"),
        ({"cann_floor": {"chips": ["310P3"]}}, "field 'chips' holds '310P3', not a [[chip]] of family '910B'"),
    ]
    for change, needle in cases:
        problems = validate(_chips_doc(**change), "chips.toml", partial=True)
        assert any(needle in p for p in problems), (needle, problems)


# ---------------------------------------------------------------- CANN013
TK = {
    "path": "/usr/local/Ascend/ascend-toolkit/latest",
    "kind": "toolkit",
    "version": "8.5.0",
    "arch": "aarch64",
    "source": "/usr/local/Ascend/ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info",
}


def _findings(matrix, chip, cann):
    tks = [dict(TK, version=cann)] if cann else []
    facts = {
        "host": {"arch": "aarch64"},
        "cann": {"toolkits": tks, "selected": copy.deepcopy(tks[0]) if tks else None, "env": {}},
        "packages": {"installed": {}},
        "devices": {"chips": [{"name": chip}, {"name": chip, "npu_id": 1}]},
    }
    return [f for f in evaluate(Snapshot(facts=facts), matrix, Options()) if f.code == "CANN013"]


def test_a_cann_older_than_the_first_release_of_the_product_line_is_a_warning(m):
    (f,) = _findings(m, "Ascend950PR", "8.5.0")  # one finding for both chips of the name
    assert f.severity == "warning"
    assert f.title == (
        "CANN 8.5.0 predates the support of Atlas 350 accelerator card (Ascend 950PR) (Ascend950PR): "
        "first supporting release 9.0.0"
    )
    assert f.evidence[0] == "npu-smi Name Ascend950PR → family 950, product line Atlas 350 accelerator card"
    assert "its release notes add the support" in f.evidence[2] and "CANN 9.0.0 release notes" in f.evidence[2]
    assert any("Ascend-cann-toolkit_9.0.0_linux-aarch64.run" in line for line in f.fix)
    assert f.data["first_supporting"] == "9.0.0"
    # the first supporting release, a beta of it, and newer releases are quiet
    for cann in ("9.0.0", "9.0.0-beta.2", "9.1.0"):
        assert _findings(m, "Ascend950PR", cann) == [], cann
    # Ascend 950DT: from 9.1.0
    assert [f.data["first_supporting"] for f in _findings(m, "Ascend950DT", "9.0.1")] == ["9.1.0"]
    # no floor for the chip, no CANN, or an unknown chip: nothing
    assert _findings(m, "910B3", "7.0.0") == []
    assert _findings(m, "Ascend950PR", None) == []
    assert _findings(m, "910C9", "7.0.0") == []


def test_an_inferred_chip_to_product_link_stays_a_warning(m):
    (f,) = _findings(m, "910B4", "7.0.0")
    assert f.severity == "warning"
    assert "the chip → product link is an inference" in f.evidence[2]


def test_only_an_official_requirement_with_a_stated_chip_is_an_error(m):
    rows = [
        dict(r, chips_inferred=False) if r["product"] == "Atlas A2 inference products" else r
        for r in m.table("cann_floor")
    ]
    stated = Matrix(dict(m.data, cann_floor=rows), m.provenance)
    (f,) = _findings(stated, "910B4", "7.0.0")
    assert f.severity == "error"
    assert f.title == (
        "CANN 7.0.0 does not support Atlas A2 inference products (910B4); first supporting release 8.0.RC1"
    )
    assert _findings(stated, "910B4", "8.0.RC1") == []


# ---------------------------------------------------------------- check and devices name it
def test_check_and_devices_name_the_product_line_beside_the_chip(m):
    chips = [{"name": "910B3", "npu_id": 0, "chip_id": 0}, {"name": "910B3", "npu_id": 1, "chip_id": 0}]
    lines = product_lines(m, chips)
    assert lines == {"910B3": A2}
    assert product_lines(None, chips) == {} and product_lines(m, [{"name": "910C9"}]) == {}
    facts = {"devices": {"chips": chips, "npu_smi": {"available": True}}}
    (dev,) = [a for a in area_lines(facts, [], lines) if a.area == "devices"]
    assert dev.found == f"2 × 910B3 ({A2})"
    (bare,) = [a for a in area_lines(facts, []) if a.area == "devices"]
    assert bare.found == "2 × 910B3"
    data = {"devices": {"chips": [dict(c, product_line=A2) for c in chips]}, "findings": []}
    out = io.StringIO()
    devices_view.render(data, out, terminal=False, width=80)
    assert f"Product line: 910B3 → {A2}\n" in out.getvalue()
