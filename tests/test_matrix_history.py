"""Every pairing and every compatibility cell the official tables ever published, checked
against the verdict ``check`` gives (issue 29): an official pairing or a declared set is never
a finding.  The cases are data: ``tests/fixtures/official/history.toml`` is generated from a
clone of Ascend/pytorch by ``tests/fixtures/official/make_history.py`` (every revision of
README/COMPATIBILITY.md on master, every branch tip's README and release notes); the rows of
the TorchNPU 26.1.1 / 26.2.0 releases, newer than that clone, are listed in ``RECENT``."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib

from npudoctor.knowledge.grades import Grade, severity
from npudoctor.knowledge.matrix import load_matrix
from npudoctor.knowledge.matrix.verdicts import line_key
from npudoctor.knowledge.versions import parse_cann, tokens

HISTORY = tomllib.loads((Path(__file__).parent / "fixtures" / "official" / "history.toml").read_text("utf-8"))

#: pairings published after the clone the history was generated from (2026-08-21), each with
#: its source: COMPATIBILITY.md's TorchNPU 26.1.1 rows ('CANN 9.1.X') and the 26.2.0 release
#: notes' package table (every 26.2.0 package <-> CANN 9.2.0)
NOTES_26_2 = "TorchNPU 26.2.0 release notes (Ascend/pytorch docs/zh/release_notes.md, commit 04937a13212a)"
RECENT = [
    ("2.12.0.post2", "2.12.0", "9.1.1", "COMPATIBILITY.md 26.1.1: CANN 9.1.X"),
    ("2.11.0.post2", "2.11.0", "9.1.1", "COMPATIBILITY.md 26.1.1: CANN 9.1.X"),
    ("2.10.0.post6", "2.10.0", "9.1.0", "COMPATIBILITY.md 26.1.1: CANN 9.1.X"),
    ("2.9.0.post8", "2.9.0", "9.1.1", "COMPATIBILITY.md 26.1.1: CANN 9.1.X"),
    ("2.7.1.post10", "2.7.1", "9.1.0", "COMPATIBILITY.md 26.1.1: CANN 9.1.X"),
    ("2.9.0.post9", "2.9.0", "9.2.0", "TorchNPU 26.2.0 release notes"),
    ("2.13.0", "2.13.0", "9.2.0", "TorchNPU 26.2.0 release notes + the wheel's README (v2.13.0-26.2.0)"),
    ("2.7.1.post11", "2.7.1", "9.2.0", NOTES_26_2),
    ("2.10.0.post7", "2.10.0", "9.2.0", NOTES_26_2),
    ("2.11.0.post3", "2.11.0", "9.2.0", NOTES_26_2),
    ("2.12.0.post3", "2.12.0", "9.2.0", NOTES_26_2),
    ("2.14.0", "2.14.0", "9.2.0", NOTES_26_2),
]
#: every cell of the TorchNPU 26.2.0 release notes' compatibility grid (all 'Y')
RECENT_DECLARED = [
    (line, cann) for line in ("7.3.X", "26.0.X", "26.1.X", "26.2.X") for cann in ("8.5.X", "9.0.X", "9.1.X", "9.2.X")
]

PAIRINGS = [(p["torch_npu"], p["torch"], p["cann"], p["source"]) for p in HISTORY["pairing"]] + RECENT
DECLARED = [(d["line"], d["cann"]) for d in HISTORY["declared"]] + RECENT_DECLARED


@pytest.fixture(scope="module")
def m():
    return load_matrix()


def test_the_history_is_substantial():
    # a regenerated file that lost its tables would make the checks below vacuous
    assert len(HISTORY["pairing"]) >= 70 and len(HISTORY["declared"]) >= 30
    assert ("2.9.0.post3", "2.9.0", "9.1.0") in {(p, t, c) for p, t, c, _ in PAIRINGS}  # a beta build, once listed


@pytest.mark.parametrize("torch_npu,torch,cann,source", PAIRINGS, ids=[f"{p}-{c}" for p, _, c, _ in PAIRINGS])
def test_every_official_pairing_is_no_finding(m, torch_npu, torch, cann, source):
    v = m.cann_verdict(torch_npu, cann, torch)
    assert v.grade in (Grade.PAIRED, Grade.DECLARED), (source, v.grade, v.source)
    assert severity(v) is None


def _pre(cann):
    v = parse_cann(cann)
    return v is None or v.is_prerelease


def _members(m, cann):
    """The published CANN releases a grid column names: ``9.0.X`` -> every [[cann]] row of
    the 9.0 line (at least ``9.0.0``; its alpha/beta builds are not "9.0.X" releases); a plain
    version -> itself."""
    parts = tokens(cann)
    if parts and parts[-1] in ("x", "*"):
        line = parts[:-1]
        rows = [
            str(r["version"])
            for r in m.cann_rows
            if tokens(str(r["version"]))[: len(line)] == line and not _pre(str(r["version"]))
        ]
        return sorted(set(rows) | {".".join(line + ["0"])})
    return [cann]


@pytest.mark.parametrize("line,cann", DECLARED, ids=[f"{ln}x{c}" for ln, c in DECLARED])
def test_every_declared_cell_is_no_finding_for_every_build_of_the_line(m, line, cann):
    key = line_key(line.replace("X", "0").replace("x", "0"))
    builds = [
        r
        for r in m.torch_npu_rows
        if r.status in ("active", "historical", "release-notes-only")
        and line_key(m.ext_version_of(r.torch_npu) or "") == key
    ]
    assert builds, f"no official build of the TorchNPU {line} line in the matrix"
    for r in builds:
        for c in _members(m, cann):
            v = m.cann_verdict(r.torch_npu, c, r.torch)
            assert severity(v) is None, (r.torch_npu, c, v.grade, v.source)


#: CANN <-> Ascend HDK statements of the CANN beta releases (hicann/release-management
#: <version>/release-notes.md, commits named in matrix/cann.toml) and a driver the grids do not
#: name between two documented ones: (cann, driver, grade, severity)
HDK_CASES = [
    ("9.2.0-beta.1", "26.1.0", Grade.PAIRED, None),  # 'CANN软件版本配套表: 9.2.0-beta.1 | 26.1.0'
    ("9.2.0-beta.1", "25.5.1", Grade.DECLARED, None),  # its grid: 25.5.X = Y
    ("9.2.0-beta.2", "26.0.rc1", Grade.DECLARED, None),  # its table: 26.0.RC1
    ("9.1.0-beta.2", "25.5.2", Grade.DECLARED, None),  # its table: 26.0.RC1, 25.5.2, 25.5.1
    ("9.0.1", "26.0.rc3", Grade.DECLARED, None),  # its table: 26.0.RC3 ...
    # 26.0.RC3 is no column of the 9.2.0 / 9.1.1 grids but lies between Y columns: inside the window
    ("9.2.0", "26.0.rc3", Grade.UNDOCUMENTED, "info"),
    ("9.1.1", "26.0.rc3", Grade.UNDOCUMENTED, "info"),
    # the Atlas 950 SuperPoD's own HDK: paired only on that product line; the chip is unknown here
    ("9.1.0", "25.1.rc1", Grade.UNDOCUMENTED, "info"),
    ("9.1.0", "25.7.rc1", Grade.DECLARED, None),  # also a column of the general grid (26.0.RC1/25.7.RC1)
]


@pytest.mark.parametrize("cann,driver,grade,sev", HDK_CASES, ids=[f"{c}-{d}" for c, d, _g, _s in HDK_CASES])
def test_hdk_statements_of_beta_releases_and_drivers_inside_the_window(m, cann, driver, grade, sev):
    dv = m.driver_verdict(cann, driver)
    assert (dv.verdict.grade, dv.severity()) == (grade, sev), dv.verdict.source


def test_a_product_line_pairing_holds_on_that_product_line(m):
    assert m.driver_verdict("9.1.0", "25.1.rc1", family="950").verdict.grade is Grade.PAIRED


#: rc wheels' own pairings: the README row naming the build in its METADATA (recorded in
#: npudoctor/knowledge/data/frameworks/prerelease_torch_npu.toml): paired, not the final's CANN
RC_OWN = [
    ("2.2.0rc1", "8.0.RC1.alpha001"),
    ("2.5.1rc1", "8.0.0.alpha001"),
    ("2.9.0rc1", "8.3.RC1.alpha003"),
    ("2.10.0rc1", "8.5.0"),
]


@pytest.mark.parametrize("torch_npu,cann", RC_OWN)
def test_rc_wheels_are_paired_with_the_cann_their_own_readme_names(m, torch_npu, cann):
    v = m.cann_verdict(torch_npu, cann)
    assert v.grade is Grade.PAIRED and not v.unofficial, v.source
    assert "its own README" in m.find_torch_npu(torch_npu).note
