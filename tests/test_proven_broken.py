"""A compatibility verdict the documents leave open becomes "proven broken" when the deep
probe's import fails with a signature the finding explains (issue 13: the grade "proven broken
(a runtime probe or a log signature shows it)"; AUDIT §2: torch_npu 2.7.1 on CANN 9.0.0-beta.2 →
`undefined symbol: MsprofSysCycleTime`, triton-lang/triton-ascend#326/#328)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from clirun import npudoctor
from scenario_runner import environment

from npudoctor.tomlread import loads

CASE = Path(__file__).parent / "scenarios" / "case11-torch-npu-2.7.1-on-cann-9.0.0-beta.2"

#: The import failure of the field report, as the deep probe records a failed step.
FAILED_IMPORT = {
    "ran": True,
    "outcome": "completed",
    "failed_step": "import_torch_npu",
    "steps": [
        {"name": "import_torch", "status": "ok"},
        {
            "name": "import_torch_npu",
            "status": "failed",
            "error_type": "ImportError",
            "error": "ImportError: /usr/local/lib/python3.10/site-packages/torch_npu/lib/libtorch_npu.so: "
            "undefined symbol: MsprofSysCycleTime",
        },
    ],
}


def _cann003(doc):
    return next(f for f in doc["findings"] if f["code"] == "CANN003")


def test_undocumented_pairing_becomes_proven_broken_by_the_deep_import(tmp_path):
    scenario = tmp_path / CASE.name
    shutil.copytree(CASE, scenario, symlinks=True)
    spec = loads((scenario / "scenario.toml").read_text(encoding="utf-8"))
    env = environment(scenario, spec)
    snap = tmp_path / "snap.json"
    collected = npudoctor("collect", "--root", scenario / "root", "--no-redact", "-o", snap, env=env)
    assert collected.returncode == 0, collected.stderr

    before = json.loads(npudoctor("check", "--from", snap, "--json", env=env).stdout)
    assert (_cann003(before)["severity"], _cann003(before)["data"]["grade"]) == ("warning", "undocumented")

    doc = json.loads(snap.read_text())
    doc["facts"]["deep"] = FAILED_IMPORT
    snap.write_text(json.dumps(doc))
    after = json.loads(npudoctor("check", "--from", snap, "--json", env=env).stdout)
    cann003 = _cann003(after)
    assert cann003["severity"] == "error"
    assert cann003["data"]["grade"] == "proven-broken" and cann003["data"]["grade_was"] == "undocumented"
    assert "MsprofSysCycleTime" in cann003["data"]["source"]
    assert any(e.startswith("proven broken (the deep probe: ") for e in cann003["evidence"])
    deep = next(f for f in after["findings"] if f["code"] == "DEEP002")
    assert deep["severity"] == "info" and "CANN003" in deep["data"]["explained_by"]
