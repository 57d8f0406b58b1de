"""``matrix refresh`` of declared windows (issue 13, item 5), against recorded official documents.

Documents (tests/fixtures/official/, README there): the TorchNPU 26.0.0 and 7.3.0 release notes
(mapping table with a product-version column, "商用版/社区版" CANN cells, "版本兼容性说明"), the CANN
9.1.1 release notes (HTML pairing table + Y/N grid) and the CANN 9.0.1 release notes (pipe table
with <br> lists).  Refreshes run over real HTTP from loopback servers, as in test_matrix_refresh.py.
"""

import contextlib
import copy
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from npudoctor.knowledge import refresh as refresh_mod
from npudoctor.knowledge.matrix import bundled_dir, load_from
from npudoctor.knowledge.matrix.schema import _SCHEMA
from npudoctor.knowledge.refresh import _for_disk, refresh
from npudoctor.knowledge.refresh_merge import dropped
from npudoctor.parsers.official import _norm_cann, classify, parse_markdown
from npudoctor.parsers.release_notes import parse_cann_notes, parse_compat_grid

OFFICIAL = Path(__file__).resolve().parent / "fixtures" / "official"
NOTES_26 = "pytorch-v2.7.1-26.0.0-release_notes.md"
NOTES_73 = "pytorch-v2.7.1-7.3.0-release_notes.md"
CANN_911 = "hicann-release-management-9.1.1-release-notes.md"
CANN_901 = "hicann-release-management-9.0.1-release-notes.md"
PYPI = "pypi-torch-npu.json"


def _read(name):
    return (OFFICIAL / name).read_text(encoding="utf-8")


def _server(routes):
    """A loopback server answering ``/<name>`` from ``routes`` (name -> (status, body))."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):  # noqa: N802
            status, body = routes.get(self.path.lstrip("/"), (404, b"Not Found"))
            self.send_response(status)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}"


@pytest.fixture(scope="module")
def github():
    """The 'GitHub' mirror: serves every recorded document."""
    routes = {p.name: (200, p.read_bytes()) for p in OFFICIAL.iterdir() if p.is_file()}
    httpd, url = _server(routes)
    yield url
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def broken():
    """A mirror that is down for everything: an HTML error page or 404."""
    routes = {NOTES_26: (200, b"<!DOCTYPE html><html><head><title>502</title></head><body>Bad gateway</body></html>")}
    httpd, url = _server(routes)
    yield url
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("NPUDOCTOR_CACHE_DIR", str(d))
    return d


def _base_with(tmp_path, edit):
    """The bundled matrix edited by ``edit(data)``, written as a matrix JSON file."""
    data = copy.deepcopy(load_from(bundled_dir(), "bundled").data)
    edit(data)
    data["meta"] = {"name": "test base", "source": "the bundled matrix, edited by the test", "retrieved": "2026-12-01"}
    path = tmp_path / "base.json"
    path.write_text(json.dumps(_for_disk(data), ensure_ascii=False), encoding="utf-8")
    load_from(str(path), "file")  # the edited base is itself a valid matrix
    return str(path)


def _row(data, version):
    return next(r for r in data["torch_npu"] if r["torch_npu"] == version)


def _cann(data, version):
    return next(r for r in data["cann"] if r["version"] == version)


# ---------------------------------------------------------------- parsers
@pytest.mark.parametrize(
    ("name", "ext", "packages", "cann"),
    [
        (NOTES_26, "26.0.0", ["2.7.1.post4", "2.8.0.post4", "2.9.0.post2", "2.10.0"], "9.0.0"),
        (NOTES_73, "7.3.0", ["2.6.0.post5", "2.7.1.post2", "2.8.0.post2", "2.9.0"], "8.5.0"),
    ],
)
def test_product_version_column_is_not_the_package_column(name, ext, packages, cann):
    """ "TorchNPU版本" / "Ascend Extension for PyTorch版本" hold the product version (26.0.0):
    the package is the "…安装包版本" column; the product version becomes ext_version."""
    res = parse_markdown(_read(name))
    assert res.layout == "release_notes"
    assert [r.torch_npu for r in res.rows] == packages
    assert {r.ext_version for r in res.rows} == {ext}
    assert {r.cann for r in res.rows} == {cann}  # "商用版：X<br>社区版：X" -> X
    assert {r.section for r in res.rows} == {"release_notes"}
    assert not any(r.torch_npu == ext for r in res.rows)


def test_release_note_declared_ranges():
    res = parse_markdown(_read(NOTES_26))
    assert res.declared == {
        "26.0.0": ["9.0.0", "8.5.0", "8.3.RC1", "8.2.RC1", "8.1.RC1"],
        "7.3.0": ["8.5.0", "8.3.RC1", "8.2.RC1", "8.1.RC1", "8.0.0"],
        "7.2.0": ["8.3.RC1", "8.2.RC1", "8.1.RC1", "8.0.0", "8.0.RC3", "8.0.RC2"],
        "7.1.0": ["8.3.RC1", "8.2.RC1", "8.1.RC1", "8.0.0", "8.0.RC3", "8.0.RC2"],
    }
    assert not res.warnings


def test_commercial_and_community_cann_cells():
    assert _norm_cann("商用版：9.0.0<br>社区版：9.0.0") == "9.0.0"
    # the 6.0.0 notes name different editions (AUDIT W14): commercial first, the other kept
    text = (
        "|CANN版本|PyTorch版本|TorchNPU版本|TorchNPU代码分支名称|TorchNPU安装包版本|\n|--|--|--|--|--|\n"
        "|商用版：8.0.RC3.20<br>社区版：8.0.0|2.4.0|6.0.0|v2.4.0-6.0.0|2.4.0.post2|\n"
    )
    row = parse_markdown(text).rows[0]
    assert (row.torch_npu, row.cann, row.cann_also, row.ext_version) == (
        "2.4.0.post2",
        "8.0.RC3.20",
        ["8.0.0"],
        "6.0.0",
    )


def test_torchnpu_html_grid():
    """The 26.1.0 notes' grid (rows = TorchNPU lines, "Y" = compatible).  The 26.1.0 document is
    not recorded; this grid is built in its layout from the values the bundled matrix cites."""
    cells = "".join(f"<tr><td>{line}</td><td>Y</td><td>Y</td><td>Y</td></tr>" for line in ("7.3.X", "26.0.X", "26.1.X"))
    text = (
        '## 版本兼容性说明\n\n<table><thead><tr><th rowspan="2">TorchNPU版本</th><th colspan="3">CANN版本</th></tr>'
        f"<tr><th>8.5.X</th><th>9.0.X</th><th>9.1.X</th></tr></thead><tbody>{cells}</tbody></table>\n"
    )
    assert parse_compat_grid(text) == {line: ["8.5.X", "9.0.X", "9.1.X"] for line in ("7.3.X", "26.0.X", "26.1.X")}
    assert parse_markdown(text).declared["26.1.X"] == ["8.5.X", "9.0.X", "9.1.X"]


def test_cann_911_notes_pairing_and_grid():
    text = _read(CANN_911)
    assert classify(text) == "cann_notes"
    notes = parse_cann_notes(text)
    assert notes.version == "9.1.1" and notes.paired == {"9.1.1": ["26.1.1"]} and not notes.listed
    every = ["25.0.X", "25.2.X", "25.3.X", "25.5.X", "26.0.RC1", "25.7.RC1", "26.1.1"]
    assert notes.grid["8.5.2"] == dict.fromkeys(every, True)
    assert notes.grid["9.0.X"] == dict.fromkeys(every, True)
    assert notes.grid["9.1.X"] == {**dict.fromkeys(every, True), "25.0.X": False}


def test_cann_901_notes_lists():
    notes = parse_cann_notes(_read(CANN_901))
    assert notes.version == "9.0.1" and not notes.paired and not notes.grid
    assert notes.listed == {
        "9.0.1": ["26.0.RC3", "25.5.5", "26.0.RC1", "25.5.2", "25.5.1"],
        "9.0.0": ["26.0.RC1", "25.5.2", "25.5.1"],
        "8.5.2": ["26.0.RC1", "25.5.2", "25.5.1"],
    }


# ---------------------------------------------------------------- refresh over HTTP
def test_refresh_release_notes_fills_declared_ranges(github, cache, tmp_path):
    def edit(data):
        for v in ("2.9.0.post2", "2.10.0"):
            _row(data, v)["cann_compatible"] = []

    res = refresh([f"{github}/{NOTES_26}"], base_path=_base_with(tmp_path, edit), dry_run=True)
    assert not res.error, res.error
    want = ["9.0.0", "8.5.0", "8.3.RC1", "8.2.RC1", "8.1.RC1"]
    assert _row(res.data, "2.9.0.post2")["cann_compatible"] == want
    assert _row(res.data, "2.10.0")["cann_compatible"] == want
    assert NOTES_26 in _row(res.data, "2.10.0")["cann_compatible_source"]
    # no product version became a package row
    assert not [r for r in res.data["torch_npu"] if r["torch_npu"] in ("26.0.0", "7.3.0")]
    assert (
        "changed torch_npu 2.10.0: cann_compatible + 9.0.0, 8.5.0, 8.3.RC1, 8.2.RC1, 8.1.RC1 (line 26.0.0)"
        in res.changes
    )


def test_refresh_bundled_release_notes_change_nothing_declared(github, cache):
    """The bundled rows already hold what the 26.0.0 notes declare: a refresh adds nothing."""
    res = refresh([f"{github}/{NOTES_26}"], dry_run=True)
    assert not res.error, res.error
    assert not [c for c in res.changes if "cann_compatible" in c]


def test_new_row_inherits_its_line_range(github, cache, tmp_path):
    """2.9.0.post2 taken out of the base: PyPI brings it back, its release tag names line 26.0.0,
    and it inherits that line's declared CANN instead of empty lists."""
    line = _row(load_from(bundled_dir(), "bundled").data, "2.8.0.post4")["cann_compatible"]

    def edit(data):
        data["torch_npu"] = [r for r in data["torch_npu"] if r["torch_npu"] != "2.9.0.post2"]

    res = refresh([f"{github}/{PYPI}", f"{github}/{NOTES_73}"], base_path=_base_with(tmp_path, edit), dry_run=True)
    assert not res.error, res.error
    row = _row(res.data, "2.9.0.post2")
    assert row["status"] == "unmapped" and row["ext_version"] == "26.0.0"
    assert row["cann_compatible"] == line and line
    assert "inherited from its extension line 26.0.0" in row["cann_compatible_source"]


@pytest.mark.skipif(
    "hdk_grid" in _SCHEMA["cann"], reason="the hdk_grid schema: see test_refresh_cann_notes_into_an_hdk_grid_field"
)
def test_refresh_cann_notes_merges_grid_pairing_and_new_release(github, cache):
    res = refresh([f"{github}/{CANN_911}", f"{github}/{CANN_901}"], dry_run=True)
    assert not res.error, res.error
    new = _cann(res.data, "9.1.1")
    assert new["hdk_paired"] == ["26.1.1"]
    assert new["hdk_compatible"][:1] == ["26.1.1"] and "25.2.X" in new["hdk_compatible"]
    assert "25.0.X" not in new["hdk_compatible"]  # N in the grid
    assert "added CANN 9.1.1 (CANN 9.1.1 release notes)" in res.changes
    for v in ("9.0.0", "9.0.1", "8.5.2"):
        assert "25.0.X" in _cann(res.data, v)["hdk_compatible"], v
    assert "25.0.X" not in _cann(res.data, "9.1.0")["hdk_compatible"]
    assert "25.2.X" in _cann(res.data, "9.1.0")["hdk_compatible"]
    assert "26.0.RC3" in _cann(res.data, "9.0.1")["hdk_compatible"]
    report = next(s for s in res.sources if s.source.endswith(CANN_911))
    assert report.kind == "cann_notes" and "1 paired" in report.summary
    # the bundled floors predate the grid: reported, not rewritten (the matrix data is edited by hand)
    assert _cann(res.data, "9.0.0")["hdk_minimum"] == "25.5.1"
    assert any(
        w.startswith("CANN 9.0.0: hdk_minimum 25.5.1 is newer than HDK 25.0.X, 25.2.X, 25.3.X") for w in report.warnings
    )
    assert any("9.1.X × HDK 25.0.X: 'N'" in w for w in report.warnings), report.warnings


def test_refresh_cann_notes_into_an_hdk_grid_field(github, cache, monkeypatch):
    """With the verdict-drv schema (``hdk_grid``: column -> "Y" | "N"), the grid is kept cell by
    cell, N included, and hdk_compatible is not widened from another CANN's grid."""
    monkeypatch.setitem(_SCHEMA["cann"], "hdk_grid", ("table", False))
    monkeypatch.setitem(_SCHEMA["cann"], "hdk_grid_source", ("string", False))
    res = refresh([f"{github}/{CANN_911}"], dry_run=True)
    assert not res.error, res.error
    every = ["25.0.X", "25.2.X", "25.3.X", "25.5.X", "26.0.RC1", "25.7.RC1", "26.1.1"]
    bundled_data = load_from(bundled_dir(), "bundled").data

    def grid_after(version, from_notes):
        # refresh only adds: the bundled grid (e.g. 9.2.0's later columns) stays, the notes' cells are merged in
        return {**(_cann(bundled_data, version) or {}).get("hdk_grid", {}), **from_notes}

    assert _cann(res.data, "9.1.0")["hdk_grid"] == grid_after("9.1.0", {**dict.fromkeys(every, "Y"), "25.0.X": "N"})
    assert _cann(res.data, "9.1.1")["hdk_grid"] == grid_after("9.1.1", {**dict.fromkeys(every, "Y"), "25.0.X": "N"})
    assert _cann(res.data, "8.5.2")["hdk_grid"] == grid_after("8.5.2", dict.fromkeys(every, "Y"))
    source = _cann(res.data, "8.5.2")["hdk_grid_source"]
    bundled_grid = _cann(bundled_data, "8.5.2").get("hdk_grid", {})
    if grid_after("8.5.2", dict.fromkeys(every, "Y")) != bundled_grid:
        assert CANN_911 in source  # the notes added cells: they are named as the grid's source
    else:
        assert source == _cann(bundled_data, "8.5.2")["hdk_grid_source"]  # nothing new: the source stays
    bundled = _cann(load_from(bundled_dir(), "bundled").data, "8.5.2")["hdk_compatible"]
    assert _cann(res.data, "8.5.2")["hdk_compatible"] == bundled
    report = res.sources[0]
    assert not any("not stored" in w for w in report.warnings)
    # a later refresh that would lose a grid column is refused
    base = {"cann": [{"version": "9.1.0", "hdk_grid": {"25.0.X": "N"}}]}
    assert dropped(base, {"cann": [{"version": "9.1.0", "hdk_grid": {}}]}) == ["[[cann]] 9.1.0 hdk_grid 25.0.X"]


def test_mirrors_are_tried_in_order(github, broken, cache):
    res = refresh(
        [(f"{broken}/{NOTES_26}", f"{github}/{NOTES_26}"), (f"{broken}/{CANN_911}", f"{github}/{CANN_911}")],
        dry_run=True,
    )
    assert not res.error and not res.failed
    first, second = res.sources
    assert first.source == f"{github}/{NOTES_26}" and first.tried == [
        f"{broken}/{NOTES_26}: got an HTML page instead of the document"
    ]
    assert second.source == f"{github}/{CANN_911}" and second.tried == [f"{broken}/{CANN_911}: HTTP 404 Not Found"]


def test_all_mirrors_failing_names_each(broken, cache):
    res = refresh([(f"{broken}/a.md", f"{broken}/b.md")])
    assert res.error and not res.written and not (cache / "matrix.json").exists()
    (only,) = res.sources
    assert not only.ok and f"{broken}/a.md: HTTP 404" in only.error and f"{broken}/b.md: HTTP 404" in only.error


def test_default_sources_have_a_gitcode_mirror():
    for group in refresh_mod.DEFAULT_SOURCES[:2]:
        assert group[0].startswith("https://raw.githubusercontent.com/") and group[1].startswith(
            "https://raw.gitcode.com/"
        )
    base = load_from(bundled_dir(), "bundled").data
    notes = refresh_mod.cann_note_sources(base)
    newest = notes[0][0].split("/master/")[1].split("/")[0]  # the newest final CANN the bundled matrix knows
    assert notes[0] == (
        f"https://raw.githubusercontent.com/hicann/release-management/master/{newest}/release-notes.md",
        f"https://raw.gitcode.com/cann/release-management/raw/master/{newest}/release-notes.md",
    )
    finals = [c["version"] for c in base["cann"] if c["version"][0].isdigit() and "-" not in c["version"]]
    assert newest in finals


def test_refresh_that_would_drop_rows_is_refused(github, cache, monkeypatch):
    real = refresh_mod.merge

    def lossy(base, parsed, today, warnings=None, replace=False):
        data, changes = real(base, parsed, today, warnings, replace)
        data["torch_npu"] = [r for r in data["torch_npu"] if r["torch_npu"] != "2.1.0.post10"]
        data["cann"] = [r for r in data["cann"] if r["version"] != "7.0.0"]
        return data, changes

    monkeypatch.setattr(refresh_mod, "merge", lossy)
    res = refresh([f"{github}/{NOTES_26}"])
    assert res.written is None and not (cache / "matrix.json").exists()
    assert res.dropped == ["[[torch_npu]] 2.1.0.post10", "[[cann]] 7.0.0"]
    assert "would drop 2 known row(s)" in res.error and "nothing written" in res.error


def test_dropped_declared_entries():
    base = {"torch_npu": [{"torch_npu": "2.9.0", "cann_compatible": ["8.5.0", "9.0.X"]}], "cann": []}
    now = {"torch_npu": [{"torch_npu": "2.9.0", "cann_compatible": ["8.5.0"]}], "cann": []}
    assert dropped(base, now) == ["[[torch_npu]] 2.9.0 cann_compatible 9.0.X"]
    assert dropped(base, base) == []


def _grid(rows):
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return (
        '## 版本兼容性说明\n\n<table><thead><tr><th rowspan="2">TorchNPU</th><th colspan="3">CANN版本</th></tr>'
        f"<tr><th>8.5.X</th><th>9.0.X</th><th>9.1.X</th></tr></thead><tbody>{body}</tbody></table>\n"
    )


def test_a_grid_with_a_short_row_or_an_odd_cell_is_refused_naming_row_and_cell():
    from npudoctor.parsers.official import OfficialParseError

    good = _grid([["7.3.X", "Y", "", "/"], ["26.1.X", "Y", "N", "Y"]])
    assert parse_compat_grid(good) == {"7.3.X": ["8.5.X"], "26.1.X": ["8.5.X", "9.1.X"]}
    with pytest.raises(OfficialParseError, match=r"row 2 \(26\.1\.X\): 3 cells under a header of 4 columns"):
        parse_compat_grid(_grid([["7.3.X", "Y", "Y", "Y"], ["26.1.X", "Y", "Y"]]))
    with pytest.raises(
        OfficialParseError, match=r"row 1 \(7\.3\.X\), column '9\.0\.X': cell '是' is not Y, N or empty"
    ):
        parse_compat_grid(_grid([["7.3.X", "Y", "是", "Y"]]))
    with pytest.raises(OfficialParseError, match="refused"):
        parse_markdown(_grid([["7.3.X", "Y", "Y", "?"]]))


#: COMPATIBILITY.md's layout from TorchNPU 26.1.1 on (as published on master after 2026-08-29):
#: product version next to the package, no branch column, 'CANN 9.1.X' for the 26.1.1 packages.
#: The rows are the published ones, plus an invented 2.15.0.post1 to see a new row added.
COMPAT_2611 = """# 版本配套

## TorchNPU 版本配套表

| TorchNPU版本 | TorchNPU安装包版本 | PyTorch版本 | CANN版本 |
|---|---|---|---|
| 26.1.1 | 2.15.0.post1 | 2.15.0 | CANN 9.1.X |
| 26.1.1 | 2.12.0.post2 | 2.12.0 | CANN 9.1.X |
| 26.1.1 | 2.11.0.post2 | 2.11.0 | CANN 9.1.X |
| 26.1.1 | 2.10.0.post6 | 2.10.0 | CANN 9.1.X |
| 26.1.1 | 2.9.0.post8 | 2.9.0 | CANN 9.1.X |
| 26.1.1 | 2.7.1.post10 | 2.7.1 | CANN 9.1.X |
| 26.1.0 | 2.12.0 | 2.12.0 | CANN 9.1.0 |
| 26.0.0 | 2.10.0 | 2.10.0 | CANN 9.0.0 |
"""


def test_the_2611_compatibility_layout_refreshes(cache, tmp_path):
    parsed = parse_markdown(COMPAT_2611)
    assert parsed.layout == "compatibility" and len(parsed.rows) == 8
    first = parsed.rows[0]
    assert (first.torch_npu, first.cann, first.branch, first.ext_version) == ("2.15.0.post1", "9.1.X", "", "26.1.1")
    doc = tmp_path / "COMPATIBILITY.md"
    doc.write_text(COMPAT_2611, encoding="utf-8")
    res = refresh([str(doc)], dry_run=True)
    assert not res.error, res.error
    new = _row(res.data, "2.15.0.post1")
    assert new["cann"] == [] and "9.1.X" in new["cann_compatible"] and new["ext_version"] == "26.1.1"
    known = _row(res.data, "2.12.0.post2")
    assert known["cann"] == [] and "9.1.X" in known["cann_compatible"] and known["status"] == "active"
    assert _row(res.data, "2.12.0")["branch"] == "v2.12.0-26.1.0"  # a table without branches keeps them
