"""Robust parsing at the boundary (issue 20): JSON and TOML by content, deep nesting and
long numbers as clear errors, wrong-typed facts as a "could not read section" finding."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import clirun
import pytest

from npudoctor.knowledge.matrix import load
from npudoctor.parsers import jsontext, ranktable

REPO = Path(__file__).resolve().parent.parent


def _bundled_as_json(path: Path) -> Path:
    docs = [(str(f), load._read_doc(str(f))[0]) for f in sorted((REPO / "matrix").glob("*.toml"))]
    path.write_text(json.dumps(load.merge_documents(docs)))
    return path


def test_matrix_verify_reads_json_by_content_whatever_the_name(tmp_path: Path) -> None:
    prev = _bundled_as_json(tmp_path / "matrix.json.prev")
    proc = clirun.npudoctor("matrix", "verify", str(prev), cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "not valid TOML" not in proc.stdout + proc.stderr


def test_matrix_verify_deep_nesting_is_a_clear_error(tmp_path: Path) -> None:
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 50_000 + "]" * 50_000)
    proc = clirun.npudoctor("matrix", "verify", str(deep), cwd=REPO)
    assert proc.returncode == 1
    assert f"matrix file {deep} is not valid TOML: nested too deeply" in proc.stdout + proc.stderr


def test_a_broken_cache_copy_does_not_cost_a_command(tmp_path: Path) -> None:
    """A 5,000-digit number and deep nesting in the refreshed cache copy: check still runs
    (the bundled matrix is used, MTX004 says why)."""
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "matrix.json").write_text('{"schema_version": ' + "9" * 5000 + "}")
    env = dict(os.environ, NPUDOCTOR_CACHE_DIR=str(cache), PYTHONPATH=str(REPO))
    root = REPO / "tests/scenarios/k10-stale-other-cann/root"
    proc = subprocess.run(
        [sys.executable, "-m", "npudoctor", "check", "--root", str(root), "--no-commands", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 1, proc.stderr
    codes = {f["code"] for f in json.loads(proc.stdout)["findings"]}
    assert {"ENV001", "MTX004"} <= codes


def test_jsontext_says_what_plain_json_turns_into_other_errors() -> None:
    with pytest.raises(json.JSONDecodeError, match="nested too deeply"):
        jsontext.loads("[" * 100_000 + "]" * 100_000)
    with pytest.raises(json.JSONDecodeError, match="a number of 5000 digits"):
        jsontext.loads("9" * 5000)
    assert jsontext.loads('{"port": 60000, "neg": -12}') == {"port": 60000, "neg": -12}


def test_rank_table_with_a_5000_digit_number_is_a_fact_not_a_crash() -> None:
    parsed = ranktable.parse_ranktable('{"version": "1.0", "server_count": ' + "9" * 5000 + "}")
    assert parsed["ok"] is False
    assert "a number of 5000 digits" in parsed["error"]


def test_wrong_typed_facts_are_one_could_not_read_finding(tmp_path: Path) -> None:
    snap = tmp_path / "wrong.json"
    snap.write_text(
        json.dumps(
            {
                "schema_version": 1,
                "facts": {
                    "packages": {"installed": {"torch": [{"version": 5}], "torch_npu": "x"}},
                    "python": {"site_packages": 7},
                    "cann": {"selected": "x", "toolkits": 3},
                },
            }
        )
    )
    proc = clirun.npudoctor("check", "--from", str(snap), "--json", cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    found = {f["code"]: f for f in json.loads(proc.stdout)["findings"]}
    assert "HOST050" not in found  # "no NPU stack" is not concluded from sections not read
    unreadable = found["HOST005"]
    assert unreadable["data"]["sections"] == ["python", "packages", "cann"]
    assert unreadable["title"].startswith("could not read sections python, packages, cann of the facts: 5 value(s)")
    assert "packages.installed.torch[0].version: expected str or null, got int" in unreadable["evidence"]
    for form in ("--markdown", "--text"):
        rendered = clirun.npudoctor("check", "--from", str(snap), form, cwd=REPO)
        assert rendered.returncode in (0, 2) and "Traceback" not in rendered.stderr
