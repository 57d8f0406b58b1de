"""``npudoctor devices`` starts with only what it needs (issue 18: <= 6x ``python -c pass``):
neither ``typing`` (the modules it imports name typing's types for type checkers only; the
facts views' annotations are read by ``facts/_annotations.py``) nor argparse, ``dataclasses``
or ``inspect``.  Each costs 1-4 ms of a run that takes ~50 ms beyond the interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from scenario_runner import environment, prepare

try:
    import tomllib
except ImportError:  # pragma: no cover - Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parent.parent
HEAVY = ("argparse", "dataclasses", "typing", "inspect", "packaging")


@pytest.mark.parametrize("as_json", [False, True], ids=["table", "json"])
def test_devices_imports_no_typing_argparse_dataclasses_or_inspect(tmp_path: Path, as_json: bool) -> None:
    scenario = prepare(REPO / "tests" / "scenarios" / "health-910b3-8npu-healthy", tmp_path / "s")
    spec = tomllib.loads((scenario / "scenario.toml").read_text(encoding="utf-8"))
    env = dict(environment(scenario, spec), PYTHONPATH=str(REPO), COLUMNS="100")
    argv = ["npudoctor", "devices", "--root", str(scenario / "root")] + (["--json"] if as_json else [])
    code = (
        "import atexit, sys\n"
        f"atexit.register(lambda: print('LOADED', sorted(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr))\n"
        "from npudoctor.entry import run\n"
        f"sys.argv = {argv!r}\n"
        "sys.exit(run())\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, cwd=str(REPO)
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stderr.splitlines()[-1] == "LOADED []", proc.stderr
    if as_json:
        data = json.loads(proc.stdout)
        assert len(data["devices"]["chips"]) == 8
        assert {chip["name"] for chip in data["devices"]["chips"]} == {"910B3"}
    else:
        assert "910B3" in proc.stdout
