"""`check --deep --python <venv>` on the real torch 2.13.0 (CPU) + torch_npu 2.13.0 wheels:
the import fails on libhccl.so, the failure is tied to the static "no CANN" finding, and the
probe finishes well inside its deadline."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from builders.realwheel import realwheel_venv  # noqa: F401  (session fixture)

from npudoctor.facts import Facts
from npudoctor.rules.deep import deep_signatures

pytestmark = pytest.mark.slow


def test_deep_probe_on_the_real_wheel(realwheel_venv, tmp_path):  # noqa: F811
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    # A process, as the rule for real venvs and wheels keeps it (docs/architecture.md, Tests).
    start = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "npudoctor",
            "check",
            "--deep",
            "--deep-timeout",
            "120",
            "--python",
            str(realwheel_venv.python),
            "--json",
        ],
        capture_output=True,
        timeout=300,
        env=env,
        cwd=str(tmp_path),
    )
    elapsed = time.monotonic() - start
    doc = json.loads(proc.stdout)
    d = doc["facts"]["deep"]
    assert d["interpreter"] == str(realwheel_venv.python)
    assert d["torch_version"] == "2.13.0+cpu"
    assert d["outcome"] == "failed" and d["failed_step"] == "import_torch_npu"
    assert "libhccl.so: cannot open shared object file" in d["error"]
    sigs = deep_signatures(Facts({"deep": d}).deep)
    assert sigs[0]["id"] == "cann-library-not-found" and sigs[0]["captures"] == {"lib": "libhccl.so"}
    findings = {f["code"]: f for f in doc["findings"]}
    assert "CANN001" in findings, sorted(findings)
    note = [
        c
        for c in findings["CANN001"]["confirmed_by"]
        if c.startswith("deep probe: import torch_npu failed with ImportError: libhccl.so")
    ]
    assert note, findings["CANN001"]
    deep_findings = [f for f in doc["findings"] if f["area"] == "deep"]
    assert [(f["code"], f["severity"]) for f in deep_findings] == [("DEEP002", "info")]
    assert "CANN001" in deep_findings[0]["data"]["explained_by"]
    assert d["duration"] < 60 and elapsed < 120
    assert proc.returncode == 1
