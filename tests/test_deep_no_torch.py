"""`check --deep` when the target interpreter has no torch: nothing to try, so DEEP007
(info, exit 0) instead of DEEP001 -- decided from the packages facts before any child
runs.  An installed torch that fails to import is still DEEP001.  Real venvs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from strict_facts import undeclared

from npudoctor.probes.deep import torch_not_installed

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A real venv without pip, torch or anything else."""
    base = tmp_path_factory.mktemp("deep-venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(base)], check=True, timeout=120)
    return base


def _python(env: Path) -> str:
    return str(env / "bin" / "python")


def _site(env: Path) -> Path:
    return next((env / "lib").glob("python3*/site-packages"))


def _check_deep(env: Path):
    # A process, as the rule for real venvs and wheels keeps it (docs/architecture.md, Tests).
    proc = subprocess.run(
        [sys.executable, "-m", "npudoctor", "check", "--deep", "--python", _python(env), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        # This checkout's npudoctor, not whichever one the interpreter has installed.
        env={"PATH": "/usr/bin:/bin", "HOME": "/root", "PYTHONPATH": str(REPO)},
        cwd=str(env.parent),
    )
    doc = json.loads(proc.stdout)
    assert undeclared(doc["facts"]) == []  # the typed views declare every key a --deep --python run writes
    return proc.returncode, doc


def _deep(doc):
    return [f for f in doc["findings"] if f["area"] == "deep"]


def test_no_torch_is_not_run_and_exits_zero(venv):
    code, doc = _check_deep(venv)
    (finding,) = _deep(doc)
    assert finding["code"] == "DEEP007" and finding["severity"] == "info"
    assert finding["title"].startswith(f"the deep probe was not run: torch is not installed in {_python(venv)}")
    facts = doc["facts"]["deep"]
    assert facts["ran"] is False and facts["outcome"] == "not_run" and facts["torch_installed"] is False
    assert facts["interpreter"] == _python(venv) and facts["steps"] == []
    assert "DEEP001" not in {f["code"] for f in doc["findings"]}
    assert code == 0 and doc["exit_code"] == 0, [f["code"] for f in doc["findings"] if f["severity"] == "error"]


def test_installed_torch_that_fails_to_import_is_deep001(tmp_path):
    """A torch with its dist-info whose import raises: the child runs and DEEP001 stands."""
    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True, timeout=120)
    site = _site(env)
    (site / "torch").mkdir()
    (site / "torch" / "__init__.py").write_text(
        'raise ImportError("libtorch_cpu.so: cannot open shared object file: No such file or directory")\n',
        encoding="utf-8",
    )
    info = site / "torch-2.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.1.0\n", encoding="utf-8")
    code, doc = _check_deep(env)
    assert "torch" in doc["facts"]["packages"]["installed"]
    (finding,) = _deep(doc)
    assert finding["code"] == "DEEP001" and finding["severity"] == "error"
    assert finding["title"] == (
        "import torch failed with ImportError: libtorch_cpu.so: cannot open shared object file: "
        "No such file or directory"
    )
    assert doc["facts"]["deep"]["ran"] is True and doc["facts"]["deep"]["failed_step"] == "import_torch"
    assert code == 1


def test_torch_not_installed_decision():
    py = "/opt/env/bin/python"
    none = {"packages": {"installed": {"numpy": [{"version": "1.26.4"}]}, "interpreter": py}}
    assert torch_not_installed(none, py) is True
    with_torch = {"packages": {"installed": {"torch": [{"version": "2.1.0"}]}, "interpreter": py}}
    assert torch_not_installed(with_torch, py) is False
    # importable without metadata (a copy on PYTHONPATH): the python probe found its directory
    copied = dict(none, python={"shadowing": {"torch": {"origin": "/work/fake-site/torch"}}})
    assert torch_not_installed(copied, py) is False
    # facts that cannot tell: run the child
    assert torch_not_installed({}, py) is False
    assert torch_not_installed({"packages": {"installed": {}, "skipped": "no interpreter to inspect"}}, py) is False
    assert torch_not_installed(none, "/other/bin/python") is False
