"""Rules MTX001-MTX004 and the not_in_matrix helper other rules use."""

import json
import os
from pathlib import Path

import pytest
from clirun import npudoctor

from npudoctor.context import Options, RuleContext
from npudoctor.engine import evaluate
from npudoctor.knowledge.matrix import bundled_dir, load_from
from npudoctor.rules.matrix import not_in_matrix, not_in_matrix_finding, refresh_hint
from npudoctor.snapshot import Snapshot


@pytest.fixture(autouse=True)
def _no_home_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NPUDOCTOR_CACHE_DIR", str(tmp_path / "cache"))


def _old_matrix(tmp_path: Path, date: str) -> str:
    out = tmp_path / "old"
    out.mkdir()
    for f in Path(bundled_dir()).glob("*.toml"):
        text = f.read_text(encoding="utf-8")
        for day in ("2026-11-29", "2026-12-01", "2026-12-06"):  # the bundled rows' retrieval dates
            text = text.replace(f'retrieved = "{day}"', f'retrieved = "{date}"')
        (out / f.name).write_text(text, encoding="utf-8")
    return str(out)


def _codes(snapshot, matrix):
    return [f for f in evaluate(snapshot, matrix, Options()) if f.area == "matrix"]


def test_old_matrix_is_reported_through_check(tmp_path):
    path = _old_matrix(tmp_path, "2025-10-01")
    env = dict(os.environ, NPUDOCTOR_CACHE_DIR=str(tmp_path / "cache"))
    res = npudoctor("check", "--json", "--matrix", path, env=env)
    doc = json.loads(res.stdout)
    mtx = [f for f in doc["findings"] if f["code"] == "MTX002"]
    assert len(mtx) == 1
    assert mtx[0]["severity"] == "warning"  # more than a year old
    assert "npudoctor matrix refresh" in mtx[0]["fix"]
    assert doc["matrix"]["retrieved"] == "2025-10-01" and doc["matrix"]["origin"] == "file"


def test_matrix_age_thresholds(tmp_path):
    import datetime

    recent = (datetime.date.today() - datetime.timedelta(days=30)).isoformat()
    months = (datetime.date.today() - datetime.timedelta(days=200)).isoformat()
    for date, expected in ((recent, []), (months, ["info"])):
        snap = Snapshot(matrix={"source": "x", "origin": "file", "retrieved": date})
        got = [f.severity for f in _codes(snap, object()) if f.code == "MTX002"]
        assert got == expected, date


def test_unloadable_matrix_and_broken_cache():
    snap = Snapshot(
        matrix={"error": "invalid matrix: cann.toml: [[cann]] row 2 (version = ?): missing field 'version'"}
    )
    found = _codes(snap, None)
    assert [f.code for f in found] == ["MTX001"]
    assert "missing field 'version'" in found[0].evidence[0]
    snap = Snapshot(matrix={"source": "b", "origin": "bundled", "retrieved": "2026-11-29", "cache_error": "bad toml"})
    assert [f.code for f in _codes(snap, object())] == ["MTX004"]


def test_not_in_matrix_helper_and_dedup():
    m = load_from(bundled_dir(), "bundled")
    snap = Snapshot(matrix=dict(m.provenance))
    ctx = RuleContext(snapshot=snap, matrix=m, options=Options())
    found = not_in_matrix(ctx, "torch_npu", "2.15.0", evidence=["torch_npu 2.15.0 from /x/METADATA"])
    assert len(found) == 1
    f = found[0]
    # newer than every torch_npu the data knows: a warning naming the data date (issue 29)
    assert (f.code, f.name, f.severity, f.subject) == ("MTX003", "version-not-in-matrix", "warning", "torch_npu 2.15.0")
    assert f.evidence[0] == "torch_npu 2.15.0 from /x/METADATA" and "retrieved 2026-12-06" in f.evidence[1]
    assert f.fix == [refresh_hint("torch_npu 2.15.0")]
    # no matrix loaded: nothing to say (MTX001 covers it)
    assert not_in_matrix(RuleContext(snapshot=snap, matrix=None, options=Options()), "CANN", "9.2.0") == []
    # context-free form
    assert not_in_matrix_finding("CANN", "9.2.0", ["ev"]).subject == "CANN 9.2.0"
    assert "CANN 9.2.0" in refresh_hint("CANN 9.2.0")
    # two rules reporting the same version end up as one finding with both evidence lines
    from npudoctor.rules import POSTPROCESSORS

    dup = found + not_in_matrix(ctx, "torch_npu", "2.15.0", evidence=["seen by another rule"])
    for name, post in POSTPROCESSORS:
        if name == "matrix.merge_not_in_matrix":
            merged = post(ctx, dup)
    assert len(merged) == 1 and "seen by another rule" in merged[0].evidence
