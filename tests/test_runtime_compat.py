"""Runtime code must run in users' environments (Python 3.8+) and the health path must
stay lean (no Typer, no rich)."""

from __future__ import annotations

import glob
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
OLDEST = sorted(glob.glob("/root/.pyenv/versions/3.8.*/bin/python"))


@pytest.mark.skipif(not OLDEST, reason="no Python 3.8 interpreter on this machine")
def test_runtime_code_compiles_on_python_38(tmp_path):
    sources = sorted(str(p) for p in (REPO / "npudoctor").rglob("*.py"))
    script = (
        "import sys, ast\n"
        "bad = []\n"
        "for f in sys.argv[1:]:\n"
        "    try:\n"
        "        compile(open(f, encoding='utf-8').read(), f, 'exec')\n"
        "    except SyntaxError as e:\n"
        "        bad.append(f'{f}:{e.lineno}: {e.msg}')\n"
        "print('\\n'.join(bad))\n"
    )
    proc = subprocess.run([OLDEST[-1], "-c", script, *sources], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and not proc.stdout.strip(), proc.stdout + proc.stderr


def test_health_path_imports_neither_typer_nor_rich(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    code = (
        "import sys, json\n"
        "from npudoctor.entry import main\n"
        "rc = main(['health', '--root', sys.argv[1], '--json', '--timeout', '120'])\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'rich', 'click', 'requests', 'elftools'))\n"
        "print(json.dumps({'rc': rc, 'heavy': heavy}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, timeout=60)
    last = json.loads(proc.stdout.strip().splitlines()[-1])
    assert last["rc"] in (0, 1)
    assert last["heavy"] == [], last["heavy"]


@pytest.mark.slow
@pytest.mark.skipif(not OLDEST, reason="no Python 3.8 interpreter on this machine")
def test_every_command_parses_its_arguments_on_python_38(tmp_path):
    """Users' envs run Python 3.8, where pip resolves an older Typer (0.20): arguments
    declared with Annotated must still be seen (they were not, under postponed
    annotations)."""
    venv = tmp_path / "py38"
    subprocess.run([OLDEST[-1], "-m", "venv", str(venv)], check=True, timeout=120)
    pip = subprocess.run(
        [str(venv / "bin/python"), "-m", "pip", "install", "-q", "-e", str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert pip.returncode == 0, pip.stdout[-2000:] + pip.stderr[-2000:]
    exe = str(venv / "bin/npudoctor")
    example = REPO / "examples/numpy-2-with-cann-8.0"
    site = REPO / "tests/fixtures/plan/site_aarch64_py3.9_910B3_drv24.1.rc2.json"
    other = REPO / "tests/fixtures/plan/site_aarch64_py3.10_910B3_drv25.5.1.json"
    sample = REPO / "tests/fixtures/error_torch_npu_207004_ASCEND_RT_VISIBLE_DEVICES-out-of-range.txt"
    env = {"PATH": f"{example / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path), "NPUDOCTOR_CACHE_DIR": str(tmp_path)}
    cases = [
        ([exe, "explain", "PKG007"], 0, "PKG007 numpy-2-with-cann"),
        ([exe, "check", "--root", str(example / "root"), "--env-file", str(example / "env")], 1, "PKG007"),
        ([exe, "devices", "--root", str(example / "root")], 0, "910B3"),
        ([exe, "compare", str(site), str(other)], 1, "Compared 2 node(s)"),
        ([exe, "plan", "--for", str(site)], 0, "plan: torch_npu"),
        ([exe, "triage", str(sample), "--no-facts"], 1, "207004"),
        ([exe, "matrix", "show", "--cann", "8.0.0"], 0, "2.4.0.post2"),
        ([exe, "env", "--root", str(example / "root")], 0, "export ASCEND_HOME_PATH="),
        ([exe, "health", "--root", str(example / "root"), "--timeout", "5"], 1, "PKG007"),
    ]
    for argv, code, text in cases:
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
        assert proc.returncode == code, (argv[1:], proc.returncode, proc.stdout[-1500:], proc.stderr[-1500:])
        assert text in proc.stdout, (argv[1:], proc.stdout[-1500:])
