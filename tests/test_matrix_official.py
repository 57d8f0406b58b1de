"""Parsing the recorded official documents (tests/fixtures/official/, copied from
../shared/matrix/official/, recorded 2026-11-29): each yields exactly the rows it holds."""

import re
from pathlib import Path

import pytest

from npudoctor.knowledge.matrix import bundled_dir, load_from
from npudoctor.parsers.official import (
    MappingRow,
    OfficialParseError,
    ext_version_from_branch,
    parse_markdown,
    parse_pypi_json,
)

OFFICIAL = Path(__file__).resolve().parent / "fixtures" / "official"


def read(name: str) -> str:
    return (OFFICIAL / name).read_text(encoding="utf-8")


def independent_rows(text: str):
    """A deliberately naive second reading of the COMPATIBILITY table: 4-cell rows whose
    first cell starts with a version and whose last cell says CANN."""
    out = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and re.match(r"^\d+\.\d+\.\d+", cells[0]) and cells[3].startswith("CANN "):
            pkg = re.sub(r"\s*[（(]beta[)）]", "", cells[0])
            out.append((pkg, cells[2], cells[3][5:], cells[1]))
    return out


@pytest.mark.parametrize("name", ["pytorch-master-COMPATIBILITY.md", "pytorch-master-COMPATIBILITY.en.md"])
def test_compatibility_document(name):
    text = read(name)
    res = parse_markdown(text)
    assert res.layout == "compatibility" and res.warnings == []
    got = [(r.torch_npu, r.torch, r.cann, r.branch) for r in res.rows]
    assert got == independent_rows(text)
    assert len(res.rows) == 62
    assert sum(r.section == "active" for r in res.rows) == 26
    assert sum(r.section == "historical" for r in res.rows) == 36
    assert res.rows[0] == MappingRow("2.12.0", "2.12.0", "9.1.0", "v2.12.0-26.1.0", "active")
    assert MappingRow("2.1.0.post10", "2.1.0", "8.0.0", "v2.1.0-6.0.0", "active") in res.rows
    # historical section (inside <details>)
    assert MappingRow("2.4.0", "2.4.0", "8.0.RC3", "v2.4.0-6.0.rc3", "historical") in res.rows
    assert MappingRow("1.11.0.post3", "1.11.0", "6.3.RC3.1", "v1.11.0-5.0.rc2.2", "historical") in res.rows
    assert MappingRow("1.5.0.post3", "1.8.1", "5.0.3", "2.0.3.tr5", "historical") in res.rows  # table typo kept
    beta = [r for r in res.rows if r.torch_npu == "1.11.0.rc2"][0]
    assert beta.note == "beta" and beta.cann == "6.0.1"
    assert res.python_lines["2.13.0"] == ["3.10", "3.11", "3.12", "3.13", "3.14"]
    assert res.python_lines["1.11.0"] == ["3.7", "3.8", "3.9", "3.10"]
    assert len(res.python_lines) == 14


def test_v260_readme_cann_first_layout():
    res = parse_markdown(read("pytorch-v2.6.0-README.md"))
    assert res.layout == "readme"
    assert len(res.rows) == 55
    assert {r.section for r in res.rows} == {"readme"}
    # blank CANN cells continue the CANN of the row above
    assert MappingRow("2.6.0.post5", "2.6.0", "8.5.0", "v2.6.0-7.3.0", "readme") in res.rows
    assert MappingRow("2.1.0.post12", "2.1.0", "8.1.RC1", "v2.1.0-7.0.0", "readme") in res.rows
    assert MappingRow("2.6.0rc1", "2.6.0", "8.1.RC1.alpha002", "v2.6.0", "readme") in res.rows
    assert MappingRow("1.5.0.post2", "1.5.0", "5.0.2", "2.0.2.tr5", "readme") == res.rows[-1]
    assert res.python_lines["2.8.0"] == ["3.9", "3.10", "3.11"]


def test_v260_readme_zh_with_merge_conflict_markers():
    res = parse_markdown(read("pytorch-v2.6.0-README.zh.md"))
    en = parse_markdown(read("pytorch-v2.6.0-README.md"))
    assert [(r.torch_npu, r.cann, r.branch) for r in res.rows] == [(r.torch_npu, r.cann, r.branch) for r in en.rows]
    # the Python table is split by <<<<<<< / ======= / >>>>>>> lines; rows on both sides count
    assert set(res.python_lines) == set(en.python_lines)
    assert any("merge-conflict" in w for w in res.warnings)


def test_v210_60rc1_readme_with_image_column():
    res = parse_markdown(read("pytorch-v2.1.0-6.0.rc1-README.md"))
    assert len(res.rows) == 29
    assert res.rows[1] == MappingRow("2.1.0.post3", "2.1.0", "8.0.RC1", "v2.1.0-6.0.rc1", "readme")
    assert MappingRow("1.8.1.post2", "1.8.1", "6.3.RC2", "v1.8.1-5.0.rc2", "readme") in res.rows
    assert res.python_lines == {
        "1.11.0": ["3.7", "3.8", "3.9", "3.10"],
        "2.1.0": ["3.8", "3.9", "3.10"],
        "2.2.0": ["3.8", "3.9", "3.10"],
    }


def test_renamed_column_is_refused_with_the_headers_seen():
    text = re.sub(r"\|\s*CANN version\s*\|", "| Toolkit version |", read("pytorch-master-COMPATIBILITY.en.md"))
    assert text.count("Toolkit version") == 2
    with pytest.raises(OfficialParseError) as err:
        parse_markdown(text)
    assert "no torch_npu mapping table" in str(err.value) and "Toolkit version" in str(err.value)


@pytest.mark.parametrize(
    "text, message",
    [
        ("<!DOCTYPE html><html><head><title>404</title></head><body>Not Found</body></html>", "HTML page"),
        ("", "empty"),
        ("# Title\n\nno tables here\n", "no Markdown table"),
    ],
)
def test_markdown_garbage(text, message):
    with pytest.raises(OfficialParseError, match=message):
        parse_markdown(text)


def test_pypi_json_matches_the_bundled_python_columns():
    rel = parse_pypi_json(read("pypi-torch-npu.json"))
    assert len(rel) == 67
    assert rel["2.10.0.post6"].python == {"aarch64": ["3.10", "3.11", "3.12"], "x86_64": ["3.10", "3.11"]}
    assert rel["2.1.0"].platform_tags["x86_64"] == ["manylinux_2_17.manylinux2014", "manylinux_2_27"]
    assert rel["2.14.0"].python["aarch64"] == ["3.10", "3.11", "3.12", "3.13", "3.14"]
    m = load_from(bundled_dir(), "bundled")
    for version, r in rel.items():
        row = m.find_torch_npu(version)
        assert row is not None, version
        assert row.python == r.python, version
    on_pypi = {r.torch_npu for r in m.torch_npu_rows if r.on_pypi}
    assert len(on_pypi) == 67


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"info": {"name": "torch"}, "releases": {"2.1.0": []}}', "project 'torch'"),
        ('{"releases": {"2.1.0": []}}', "lists no wheel"),
        ('{"releases": {"2.1.0": [', "not JSON"),
        ("[1, 2]", "not a PyPI JSON"),
    ],
)
def test_pypi_garbage(text, message):
    with pytest.raises(OfficialParseError, match=message):
        parse_pypi_json(text)


def test_ext_version_from_branch():
    assert ext_version_from_branch("v2.1.0-6.0.rc3") == "6.0.rc3"
    assert ext_version_from_branch("v1.11.0-5.0.rc2.2") == "5.0.rc2.2"
    assert ext_version_from_branch("v2.6.0") == ""
    assert ext_version_from_branch("2.0.4.tr5") == ""
