"""npudoctor.userdirs answers the common Linux case without importing platformdirs (4-13
ms per run), and its answers are platformdirs' in every environment; the matrix cache and
the user config file are found there."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import platformdirs
import pytest

from npudoctor import config, userdirs
from npudoctor.knowledge.matrix import load

ENVIRONMENTS = [
    {"HOME": "/root"},
    {"HOME": "/home/ascend/"},
    {"HOME": "/"},
    {"HOME": "/root", "XDG_CACHE_HOME": "", "XDG_CONFIG_HOME": ""},
    {"HOME": "/root", "XDG_CACHE_HOME": "/var/cache/users/ascend", "XDG_CONFIG_HOME": "/etc/users/ascend"},
    {"HOME": "/root", "XDG_CACHE_HOME": "relative/cache", "XDG_CONFIG_HOME": "relative/config"},
    {"HOME": "/root", "XDG_CACHE_HOME": "   ", "XDG_CONFIG_HOME": "   "},
    {"HOME": "relative/home"},
    {"HOME": ""},
]


@pytest.mark.parametrize("env", ENVIRONMENTS, ids=[repr(e) for e in ENVIRONMENTS])
def test_the_directories_are_platformdirs_answers(monkeypatch, env):
    for name in ("NPUDOCTOR_CACHE_DIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    try:
        cache = platformdirs.user_cache_dir("npudoctor", appauthor=False)
        conf = platformdirs.user_config_dir("npudoctor", appauthor=False)
    except RuntimeError:  # newer platformdirs: a relative HOME and no passwd entry
        pytest.skip("platformdirs cannot answer here")
    assert userdirs.user_cache_dir() == load.cache_dir() == cache
    assert userdirs.user_config_dir() == conf
    assert config.user_config_path() == f"{conf}/config.toml"


def test_the_cache_variable_wins(monkeypatch, tmp_path):
    monkeypatch.setenv("NPUDOCTOR_CACHE_DIR", str(tmp_path))
    assert load.cache_dir() == str(tmp_path)


@pytest.mark.skipif(sys.platform != "linux", reason="the fast answer is Linux's")
def test_the_common_linux_case_does_not_import_platformdirs():
    code = textwrap.dedent(
        """
        import sys
        from npudoctor.knowledge.matrix.load import cache_dir
        from npudoctor.config import user_config_path
        print(cache_dir(), user_config_path(), "platformdirs" in sys.modules)
        """
    )
    env = {"HOME": "/home/ascend", "PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(p for p in sys.path if p)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["/home/ascend/.cache/npudoctor", "/home/ascend/.config/npudoctor/config.toml", "False"]
