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
        "rc = main(['health', '--root', sys.argv[1], '--json'])\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'rich', 'click', 'requests', 'elftools'))\n"
        "print(json.dumps({'rc': rc, 'heavy': heavy}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, timeout=60)
    last = json.loads(proc.stdout.strip().splitlines()[-1])
    assert last["rc"] in (0, 1)
    assert last["heavy"] == [], last["heavy"]
