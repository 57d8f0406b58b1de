"""The real torch 2.13.0(+cpu) + torch_npu 2.13.0 wheels on a machine without CANN:
`npudoctor check --python <venv>/bin/python --json` must name libhccl.so and the other
CANN libraries as unresolvable (fix: install CANN / source set_env.sh) and must not
claim torch's libraries are missing; the torch symbol check of the real pair is clean."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from builders.realwheel import realwheel_venv  # noqa: F401  (session fixture)

pytestmark = pytest.mark.slow


def _check(venv) -> dict:
    # A process, as the rule for real venvs and wheels keeps it (docs/architecture.md, Tests).
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASCEND_", "ATB_"))}
    env.pop("LD_LIBRARY_PATH", None)
    proc = subprocess.run(
        [sys.executable, "-m", "npudoctor", "check", "--python", str(venv.python), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.stdout, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def test_real_wheels_without_cann(realwheel_venv):  # noqa: F811
    if os.path.isdir("/usr/local/Ascend/ascend-toolkit") or os.path.isdir("/usr/local/Ascend/cann"):
        pytest.skip("a CANN toolkit is installed on this machine")
    doc = _check(realwheel_venv)
    libs = doc["facts"]["libraries"]
    assert libs["torch_npu"]["version"] == "2.13.0"
    for name in ("libhccl.so", "libascendcl.so", "libge_runner.so", "libgraph.so", "libacl_op_compiler.so"):
        assert name in libs["missing"], libs["missing"]
    statuses = {r["name"]: r["status"] for r in libs["resolution"]}
    for name in ("libc10.so", "libtorch.so", "libtorch_cpu.so", "libtorch_python.so"):
        assert statuses[name] == "torch"
    assert statuses["libtorch_npu.so"] == "found"
    assert not [m for m in libs["missing"] if m.startswith(("libtorch", "libc10"))]
    assert libs["torch_cxx11_abi"] is True
    assert libs["symbols"]["torch"]["checked"] > 500 and libs["symbols"]["torch"]["missing_count"] == 0
    assert libs["duration"] < 10

    lib001 = [f for f in doc["findings"] if f["code"] == "LIB001" and f["severity"] == "error"]
    assert lib001, [f["code"] for f in doc["findings"]]
    text = "\n".join(lib001[0]["evidence"] + [lib001[0]["title"]])
    assert "libhccl.so" in text and "libascendcl.so" in text
    fixes = " ".join(lib001[0]["fix"])
    assert "CANN toolkit" in fixes and "set_env.sh" in fixes
    for f in doc["findings"]:
        assert not ("libtorch_cpu.so" in f["title"] or "libc10.so" in f["title"]), f
    assert "LIB003" not in {f["code"] for f in doc["findings"]}


def test_real_wheels_first_day_folds_under_cann001(realwheel_venv):  # noqa: F811
    """The first day with the real wheels: torchair's modules (LIB005) and torch's own
    autoload of torch_npu (LIB012: the real torch 2.13.0 imports it at `import torch`)
    fold under the missing CANN; the real modules' C++ ABI matches torch's."""
    if os.path.isdir("/usr/local/Ascend/ascend-toolkit") or os.path.isdir("/usr/local/Ascend/cann"):
        pytest.skip("a CANN toolkit is installed on this machine")
    doc = _check(realwheel_venv)
    libs = doc["facts"]["libraries"]
    auto = libs["autoload"]
    assert auto["enabled"] is True
    assert [(b["dist"], b["value"]) for b in auto["backends"]] == [("torch_npu", "torch_npu:_autoload")]
    by_code = {}
    for f in doc["findings"]:
        by_code.setdefault(f["code"], []).append(f)
    (lib005,) = by_code["LIB005"]
    assert lib005["data"]["because"] == "CANN001"
    assert {"_npu_utils.so", "_torchair.so"} <= set(lib005["data"]["modules"])
    (lib012,) = by_code["LIB012"]
    assert lib012["data"]["because"] == "LIB001" and lib012["data"]["dist"] == "torch_npu"
    (cann001,) = by_code["CANN001"]
    assert cann001["data"]["cann"], cann001["title"]  # a CANN version is named, paired or nearest
    checks = libs["symbols"]["torch_extensions"]
    assert checks and all(c["abi"] is True and c["missing_count"] == 0 for c in checks), checks
    assert "LIB010" not in by_code and "LIB011" not in by_code
