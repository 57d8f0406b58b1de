"""knowledge.matrix.load.cache_dir answers the common Linux case without importing
platformdirs (4-13 ms per run), and its answer is platformdirs' in every environment."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import platformdirs
import pytest

from npudoctor.knowledge.matrix import load

ENVIRONMENTS = [
    {"HOME": "/root"},
    {"HOME": "/home/ascend/"},
    {"HOME": "/"},
    {"HOME": "/root", "XDG_CACHE_HOME": ""},
    {"HOME": "/root", "XDG_CACHE_HOME": "/var/cache/users/ascend"},
    {"HOME": "/root", "XDG_CACHE_HOME": "relative/cache"},
    {"HOME": "/root", "XDG_CACHE_HOME": "   "},
    {"HOME": "relative/home"},
    {"HOME": ""},
]


@pytest.mark.parametrize("env", ENVIRONMENTS, ids=[repr(e) for e in ENVIRONMENTS])
def test_cache_dir_is_platformdirs_answer(monkeypatch, env):
    for name in ("NPUDOCTOR_CACHE_DIR", "XDG_CACHE_HOME", "HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    try:
        expected = platformdirs.user_cache_dir("npudoctor", appauthor=False)
    except RuntimeError:  # newer platformdirs: a relative HOME with no passwd entry
        pytest.skip("platformdirs cannot answer here")
    assert load.cache_dir() == expected


def test_cache_dir_env_override_wins(monkeypatch, tmp_path):
    monkeypatch.setenv("NPUDOCTOR_CACHE_DIR", str(tmp_path))
    assert load.cache_dir() == str(tmp_path)


@pytest.mark.skipif(sys.platform != "linux", reason="the fast answer is Linux's")
def test_the_common_linux_case_does_not_import_platformdirs():
    code = textwrap.dedent(
        """
        import sys
        from npudoctor.knowledge.matrix.load import cache_dir
        print(cache_dir(), "platformdirs" in sys.modules)
        """
    )
    env = {"HOME": "/home/ascend", "PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(p for p in sys.path if p)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["/home/ascend/.cache/npudoctor", "False"]
