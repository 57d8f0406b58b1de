"""``npudoctor lint --format sarif`` checked against what the SARIF 2.1.0 schema states
(tests/sarif_2_1_0.py), and the checker shown to catch planted violations."""

from __future__ import annotations

import copy
import json
import os
import shutil
from pathlib import Path
from typing import Any, Dict

import pytest

from npudoctor.lint.rules import lint_codes
from tests.clirun import npudoctor
from tests.sarif_2_1_0 import violations

CORPUS = Path(__file__).parent / "fixtures" / "lint_corpus"


def _sarif(*paths: Path) -> Dict[str, Any]:
    res = npudoctor("lint", "--format", "sarif", *paths)
    assert res.stderr == "" and res.returncode in (0, 1)
    doc: Dict[str, Any] = json.loads(res.stdout)
    return doc


def _varied_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "my project"
    shutil.copytree(CORPUS, tree / "corpus")
    nb = {
        "cells": [
            {"cell_type": "markdown", "source": ["model.cuda()\n"]},
            {"cell_type": "code", "source": ["import torch\n", "model = model.cuda()\n"]},
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tree / "nb.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    (tree / "broken.ipynb").write_text("{not json", encoding="utf-8")
    (tree / "run.sh").write_text("export CUDA_VISIBLE_DEVICES=0,1\nnvidia-smi\n", encoding="utf-8")
    (tree / "bad.py").write_text("def f(:\n", encoding="utf-8")
    (tree / "latin1.py").write_bytes(b"x = '\xe9'\n")
    (tree / "sub dir").mkdir()
    (tree / "sub dir" / "caf\u00e9 #1.py").write_text("dist.init_process_group('nccl')\n", encoding="utf-8")
    return tree


def test_sarif_of_a_varied_tree_breaks_nothing_the_schema_states(tmp_path: Path) -> None:
    doc = _sarif(_varied_tree(tmp_path))
    assert violations(doc) == []
    run = doc["runs"][0]
    fired = {r["ruleId"] for r in run["results"]}
    corpus = {f["code"] for f in json.loads(npudoctor("lint", "--json", CORPUS).stdout)["findings"]}
    assert corpus <= fired and "LNT016" in fired
    assert len(corpus) >= 10
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == sorted(fired)
    assert set(fired) <= set(lint_codes())


def test_sarif_uris_are_percent_encoded_uri_references(tmp_path: Path) -> None:
    tree = tmp_path / "sub dir"
    tree.mkdir()
    (tree / "caf\u00e9 #1.py").write_text("m = m.cuda()\n", encoding="utf-8")
    with open(os.path.join(os.fsencode(tree), b"x\xff.py"), "wb") as fh:
        fh.write(b"m = m.cuda()\n")
    doc = _sarif(tree)
    assert violations(doc) == []
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in doc["runs"][0]["results"]]
    assert sorted(u.rsplit("/", 2)[-2] + "/" + u.rsplit("/", 1)[-1] for u in uris) == [
        "sub%20dir/caf%C3%A9%20%231.py",
        "sub%20dir/x%FF.py",
    ]


def test_sarif_of_an_empty_tree_is_valid_with_no_results(tmp_path: Path) -> None:
    doc = _sarif(tmp_path)
    assert violations(doc) == []
    assert doc["runs"][0]["results"] == [] and doc["runs"][0]["tool"]["driver"]["rules"] == []


def _one(tmp_path: Path) -> Dict[str, Any]:
    (tmp_path / "a.py").write_text("m = m.cuda()\n", encoding="utf-8")
    doc = _sarif(tmp_path)
    assert violations(doc) == []
    return doc


def _result(doc: Dict[str, Any]) -> Dict[str, Any]:
    r: Dict[str, Any] = doc["runs"][0]["results"][0]
    return r


@pytest.mark.parametrize(
    "plant, expected",
    [
        (lambda d: d.update(extra=1), "$: property 'extra' not allowed in sarifLog"),
        (lambda d: d.pop("version"), "$: sarifLog requires 'version'"),
        (lambda d: d.update(version="2.0.0"), "$.version: '2.0.0' not one of ['2.1.0']"),
        (lambda d: d["runs"][0].pop("tool"), "$.runs[0]: run requires 'tool'"),
        (lambda d: d["runs"][0]["tool"]["driver"].pop("name"), "$.runs[0].tool.driver: toolComponent requires 'name'"),
        (
            lambda d: d["runs"][0]["tool"]["driver"]["rules"][0]["shortDescription"].pop("text"),
            "$.runs[0].tool.driver.rules[0].shortDescription: multiformatMessageString requires 'text'",
        ),
        (
            lambda d: d["runs"][0]["tool"]["driver"]["rules"].append(d["runs"][0]["tool"]["driver"]["rules"][0]),
            "$.runs[0].tool.driver.rules: items not unique",
        ),
        (
            lambda d: d["runs"][0]["tool"]["driver"]["rules"][0]["defaultConfiguration"].update(level="info"),
            "$.runs[0].tool.driver.rules[0].defaultConfiguration.level: 'info' not one of"
            " ['none', 'note', 'warning', 'error']",
        ),
        (
            lambda d: _result(d).update(level="info"),
            "$.runs[0].results[0].level: 'info' not one of ['none', 'note', 'warning', 'error']",
        ),
        (lambda d: _result(d).update(ruleIndex=-2), "$.runs[0].results[0].ruleIndex: -2 below the minimum -1"),
        (lambda d: _result(d).update(ruleIndex="0"), "$.runs[0].results[0].ruleIndex: not an integer"),
        (lambda d: _result(d).pop("message"), "$.runs[0].results[0]: result requires 'message'"),
        (
            lambda d: _result(d).update(message={"markdown": "x"}),
            "$.runs[0].results[0].message: message needs one of ['text', 'id']",
        ),
        (
            lambda d: _result(d)["locations"][0]["physicalLocation"]["region"].update(startLine=0),
            "$.runs[0].results[0].locations[0].physicalLocation.region.startLine: 0 below the minimum 1",
        ),
        (
            lambda d: _result(d)["locations"][0]["physicalLocation"]["region"].update(startColumn=0),
            "$.runs[0].results[0].locations[0].physicalLocation.region.startColumn: 0 below the minimum 1",
        ),
        (
            lambda d: _result(d)["locations"][0]["physicalLocation"]["region"].pop("startLine"),
            "$.runs[0].results[0].locations[0].physicalLocation.region: region needs one of"
            " ['startLine', 'charOffset', 'byteOffset']",
        ),
        (
            lambda d: _result(d)["locations"][0]["physicalLocation"].pop("artifactLocation"),
            "$.runs[0].results[0].locations[0].physicalLocation: physicalLocation needs one of"
            " ['address', 'artifactLocation']",
        ),
        (
            lambda d: _result(d)["locations"][0]["physicalLocation"]["artifactLocation"].update(uri="a b.py"),
            "$.runs[0].results[0].locations[0].physicalLocation.artifactLocation.uri: 'a b.py' is not a URI reference",
        ),
        (
            lambda d: _result(d)["locations"][0].update(line=1),
            "$.runs[0].results[0].locations[0]: property 'line' not allowed in location",
        ),
    ],
)
def test_the_checker_catches_planted_violations(tmp_path: Path, plant: Any, expected: str) -> None:
    doc = copy.deepcopy(_one(tmp_path))
    plant(doc)
    found = violations(doc)
    assert any(v.startswith(expected) for v in found), found
