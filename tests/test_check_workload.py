"""``check --workload DIR``: the project's code is linted beside the machine checks, with
that machine's facts (its torch_npu, its chip, its NPU count); the lint findings join the
same report and JSON under area ``lint`` and count for check's exit status."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import jsonschema

from tests.clirun import npudoctor

SCHEMA = json.loads((Path(__file__).parent.parent / "docs" / "schema" / "check.schema.json").read_text("utf-8"))


def _snapshot(tmp_path: Path, chip: str) -> Path:
    doc = {
        "schema_version": 1,
        "created": "2025-01-01T00:00:00Z",
        "node": "n1",
        "target": {},
        "facts": {
            "devices": {"chips": [{"npu_id": 0, "name": chip}]},
            "packages": {"installed": {"torch-npu": [{"name": "torch_npu", "version": "2.1.0.post10"}]}},
        },
    }
    path = tmp_path / f"{chip}.json"
    path.write_text(json.dumps(doc))
    return path


def _project(tmp_path: Path, text: str) -> Path:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "train.py").write_text(text, encoding="utf-8")
    (project / "run.sh").write_text("#!/bin/bash\nexport CUDA_VISIBLE_DEVICES=0\npython src/train.py\n")
    return project


def _lint_findings(doc: Dict[str, Any]) -> List[Dict[str, Any]]:
    return [f for f in doc["findings"] if f["area"] == "lint"]


def test_workload_findings_join_the_check_report_with_this_machines_advice(tmp_path: Path) -> None:
    project = _project(
        tmp_path,
        "import torch\nmodel = model.cuda()\nwith torch.cuda.amp.autocast():\n    y = x.to(torch.bfloat16)\n",
    )
    snap = _snapshot(tmp_path, "910A")
    base = npudoctor("check", "--json", "--from", snap)
    res = npudoctor("check", "--json", "--from", snap, "--workload", project)
    assert res.returncode == 1, res.stderr
    jsonschema.Draft202012Validator(SCHEMA).validate(json.loads(res.stdout))
    found = _lint_findings(json.loads(res.stdout))
    assert [(Path(f["data"]["path"]).name, f["data"]["line"], f["code"]) for f in found] == [
        ("run.sh", 2, "LNT013"),
        ("train.py", 1, "LNT023"),
        ("train.py", 2, "LNT001"),
        ("train.py", 3, "LNT004"),
        ("train.py", 4, "LNT017"),
    ]
    amp = next(f for f in found if f["code"] == "LNT004")
    assert amp["fix"] == ["torch.npu.amp.autocast()"]  # the API of the torch_npu 2.1 of the snapshot
    assert "910A" in next(f for f in found if f["code"] == "LNT017")["title"]
    assert found[2]["severity"] == "error" and found[2]["name"] == "lint-cuda-device"
    # the machine's own findings are unchanged
    machine = [f["code"] for f in json.loads(base.stdout)["findings"]]
    assert [f["code"] for f in json.loads(res.stdout)["findings"] if f["area"] != "lint"] == machine


def test_text_report_lists_the_workload_under_code_lint(tmp_path: Path) -> None:
    project = _project(tmp_path, "import torch\ntorch.cuda.synchronize()\n")
    res = npudoctor("check", "--from", _snapshot(tmp_path, "910B3"), "--workload", project)
    assert res.returncode == 1
    assert "✗ Code lint (CUDA-isms in user code)" in res.stdout
    assert "LNT003" in res.stdout and "torch.npu.synchronize" in res.stdout
    assert "linted 2 file(s) of the workload" in res.stderr


def test_a_clean_workload_leaves_checks_exit_status(tmp_path: Path) -> None:
    project = _project(tmp_path, "import torch\nimport torch_npu\nmodel = model.npu()\n")
    (project / "run.sh").write_text("#!/bin/bash\nexport ASCEND_RT_VISIBLE_DEVICES=0\n")
    snap = _snapshot(tmp_path, "910B3")
    base = npudoctor("check", "--json", "--from", snap)
    res = npudoctor("check", "--json", "--from", snap, "--workload", project)
    assert res.returncode == base.returncode
    assert _lint_findings(json.loads(res.stdout)) == []


def test_a_lint_warning_counts_as_a_warning_and_ignored_codes_are_dropped(tmp_path: Path) -> None:
    project = _project(tmp_path, "import torch\nstate = torch.load(path)\n")
    (project / "run.sh").unlink()
    snap = _snapshot(tmp_path, "910B3")
    base = json.loads(npudoctor("check", "--json", "--from", snap).stdout)
    warned = npudoctor("check", "--json", "--from", snap, "--workload", project)
    doc = json.loads(warned.stdout)
    assert [f["code"] for f in _lint_findings(doc)] == ["LNT005"]
    assert doc["summary"]["warning"] == base["summary"]["warning"] + 1
    assert doc["summary"]["error"] == base["summary"]["error"] and warned.returncode == base["exit_code"]
    quiet = npudoctor("check", "--json", "--from", snap, "--workload", project, "--ignore", "LNT005")
    assert _lint_findings(json.loads(quiet.stdout)) == []


def test_a_workload_that_is_not_a_directory_is_a_usage_error(tmp_path: Path) -> None:
    res = npudoctor("check", "--from", _snapshot(tmp_path, "910B3"), "--workload", tmp_path / "missing")
    assert res.returncode == 2
    assert "--workload" in res.stderr and "not a directory" in res.stderr
