"""docs/grades.md is what scripts/gen_grades_doc.py generates from the evidence grid
(tests/fixtures/grades/grid.toml); it changes only through ``python scripts/gen_grades_doc.py --write``."""

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _gen():
    spec = importlib.util.spec_from_file_location("gen_grades_doc", REPO / "scripts" / "gen_grades_doc.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_committed_page_is_the_generated_one():
    gen = _gen()
    committed = (REPO / "docs" / "grades.md").read_text(encoding="utf-8")
    assert committed == gen.render(gen.load_grid()), "run: python scripts/gen_grades_doc.py --write"
    assert gen.main([]) == 0


def test_every_grade_has_an_example_and_its_source():
    gen = _gen()
    page = gen.render(gen.load_grid())
    for grade in gen.Grade:
        section = page.split(f"### {grade.words} (`{grade.value}`)", 1)[1].split("\n### ", 1)[0]
        assert "*Example" in section and "source:" in section, grade
        assert "What you see:" in section, grade
    # every grid row appears with its source
    for row in gen.load_grid()["row"]:
        assert f"| `{row['id']}` |" in page


def test_an_example_must_match_the_grid(tmp_path):
    gen = _gen()
    grid = gen.load_grid()
    for row in grid["row"]:
        if row["id"] == "cd-07":
            row["grade"] = "undocumented"
    with pytest.raises(ValueError, match="cd-07"):
        gen.render(grid)


def test_check_mode_reports_a_stale_page(tmp_path, monkeypatch):
    gen = _gen()
    page = tmp_path / "grades.md"
    page.write_text("# hand edit\n", encoding="utf-8")
    monkeypatch.setattr(gen, "PAGE", page)
    monkeypatch.setattr(gen, "REPO", tmp_path)
    assert gen.main([]) == 1
    assert gen.main(["--write"]) == 0
    assert gen.main([]) == 0 and page.read_text(encoding="utf-8") == gen.render(gen.load_grid())
