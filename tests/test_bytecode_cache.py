"""An install without bytecode that cannot be written (``pip install --no-compile`` into a
directory the user may not write, a read-only image) is compiled once, into npudoctor's
per-user cache, and read compiled from the second run on (``npudoctor.entry.keep_bytecode``).

Real venvs: npudoctor and its dependencies copied without ``__pycache__`` (what ``pip install
--no-compile`` leaves), the console script pip writes, the site-packages made read-only with
``chmod -R a-w``.  Root writes through any mode, so as root the runs go through ``setpriv``
without ``CAP_DAC_OVERRIDE``: they can write only where the modes allow, like a non-root user.
"""

from __future__ import annotations

import compileall
import contextlib
import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
import tomllib
from builders.sourcevenv import NO_PYC_REPORTER as REPORTER
from builders.sourcevenv import source_venv
from scenario_runner import environment

from npudoctor.entry import PYCACHE, _pycache_dir

MINE = f"{PYCACHE}-{os.geteuid()}"  # this account's directory of compiled modules

REPO = Path(__file__).resolve().parent.parent
SCENARIO = REPO / "tests" / "scenarios" / "health-910b3-8npu-healthy"
_DAC = "-dac_override,-dac_read_search"
AS_USER = [] if os.geteuid() != 0 else ["setpriv", f"--bounding-set={_DAC}", f"--inh-caps={_DAC}"]
needs_user = pytest.mark.skipif(
    bool(AS_USER) and shutil.which("setpriv") is None, reason="as root, needs setpriv to honour file modes"
)

#: What runs before the prefix can be set: compiled on every run of an install without bytecode.
BEFORE_PREFIX = ["npudoctor", "npudoctor.entry", "npudoctor.userdirs"]


def _install(tmp: Path, compiled: bool) -> Tuple[Path, Path]:
    """A venv holding npudoctor and its dependencies, with ``.pyc`` for every module
    (``compiled``) or none, its site-packages read-only; ``(venv, site-packages)``."""
    venv, site = source_venv(tmp / "venv")
    if compiled:
        assert compileall.compile_dir(str(site), quiet=1)
    assert any(site.rglob("*.pyc")) is compiled
    for path in [site, *site.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode & ~0o222)
    return venv, site


def _writable_again(site: Path) -> None:
    for path in [site, *site.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | 0o200)


def _env(tmp: Path) -> Dict[str, str]:
    scenario = tmp / SCENARIO.name
    if not scenario.exists():
        shutil.copytree(SCENARIO, scenario, symlinks=True)
    env = environment(scenario, tomllib.loads((scenario / "scenario.toml").read_text()))
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    env.update(HOME=str(home), COLUMNS="100")
    return env


def _devices(tmp: Path, venv: Path, env: Dict[str, str], n: int) -> Tuple[str, List[str]]:
    """Run ``npudoctor devices`` on the scenario through the venv's python as the console
    script does; ``(sys.pycache_prefix, modules compiled from source)``."""
    out = tmp / f"report-{n}.txt"
    root = str(tmp / SCENARIO.name / "root")
    argv = [str(venv / "bin" / "python"), "-c", REPORTER, str(out), "devices", "--root", root]
    proc = subprocess.run(AS_USER + argv, env=env, cwd=tmp, timeout=120, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "910B3" in proc.stdout
    count, prefix, *missing = out.read_text().splitlines()
    assert int(count) > 200
    return prefix, missing


def _tree(top: Path) -> Dict[str, Tuple[int, int]]:
    return {str(p.relative_to(top)): (p.stat().st_size, p.stat().st_mtime_ns) for p in top.rglob("*.pyc")}


@pytest.mark.slow
@needs_user
def test_a_read_only_install_without_bytecode_runs_compiled_from_the_second_run(tmp_path: Path) -> None:
    venv, site = _install(tmp_path, compiled=False)
    try:
        env = _env(tmp_path)
        cache = tmp_path / "home" / ".cache" / "npudoctor" / MINE
        prefix, first = _devices(tmp_path, venv, env, 1)
        assert prefix == str(cache)
        assert stat.S_IMODE(cache.stat().st_mode) == 0o700
        written = _tree(cache)
        ours = [p for p in written if "/site-packages/npudoctor/" in p]
        assert len(ours) > 50 and any("/site-packages/typer/" in p for p in written)
        assert len(first) == len(BEFORE_PREFIX)  # the rest was compiled, and written, under the prefix
        # the second run: every module but those imported before the prefix is set comes from a
        # .pyc, and nothing under the prefix is compiled or written again
        prefix, second = _devices(tmp_path, venv, env, 2)
        assert prefix == str(cache)
        assert second == BEFORE_PREFIX
        assert _tree(cache) == written
        assert not any(site.rglob("*.pyc"))
    finally:
        _writable_again(site)


@pytest.mark.slow
@needs_user
def test_an_install_with_bytecode_gets_no_prefix(tmp_path: Path) -> None:
    venv, site = _install(tmp_path, compiled=True)
    try:
        prefix, missing = _devices(tmp_path, venv, _env(tmp_path), 1)
        assert prefix == "None" and missing == []
        assert not (tmp_path / "home" / ".cache").exists()
    finally:
        _writable_again(site)


@pytest.mark.slow
@needs_user
def test_the_users_own_bytecode_choice_is_kept(tmp_path: Path) -> None:
    """An explicit ``PYTHONPYCACHEPREFIX`` stays; ``PYTHONDONTWRITEBYTECODE`` gets no prefix
    (each run compiles, as asked)."""
    venv, site = _install(tmp_path, compiled=False)
    try:
        mine = tmp_path / "mine"
        env = _env(tmp_path)
        prefix, missing = _devices(tmp_path, venv, dict(env, PYTHONPYCACHEPREFIX=str(mine)), 1)
        assert prefix == str(mine) and missing == []  # written under the user's prefix...
        prefix, missing = _devices(tmp_path, venv, dict(env, PYTHONPYCACHEPREFIX=str(mine)), 2)
        assert prefix == str(mine) and missing == []  # ...and read from it
        prefix, missing = _devices(tmp_path, venv, dict(env, PYTHONDONTWRITEBYTECODE="1"), 3)
        assert prefix == "None" and "npudoctor.cli" in missing and "typer" in missing
        assert not (tmp_path / "home" / ".cache").exists()
    finally:
        _writable_again(site)


def test_the_cache_directory_is_made_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NPUDOCTOR_CACHE_DIR", str(tmp_path / "cache"))
    path = _pycache_dir(["devices"])
    assert path == str(tmp_path / "cache" / MINE)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o700


def test_a_relative_cache_directory_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NPUDOCTOR_CACHE_DIR", "cache")
    assert _pycache_dir(["devices"]) is None
    assert not (tmp_path / "cache").exists()


def test_a_cache_directory_others_may_write_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Python runs whatever ``.pyc`` it finds under the prefix."""
    (tmp_path / MINE).mkdir()
    (tmp_path / MINE).chmod(0o777)
    monkeypatch.setenv("NPUDOCTOR_CACHE_DIR", str(tmp_path))
    assert _pycache_dir(["devices"]) is None


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a directory another uid owns")
def test_a_cache_directory_another_user_owns_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / MINE).mkdir(mode=0o700)
    os.chown(tmp_path / MINE, 65534, 65534)
    monkeypatch.setenv("NPUDOCTOR_CACHE_DIR", str(tmp_path))
    assert _pycache_dir(["devices"]) is None


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a directory another uid owns")
def test_accounts_sharing_a_cache_directory_each_have_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An image's ``NPUDOCTOR_CACHE_DIR`` serves every account it runs as: the first one's
    private directory does not keep the next from caching."""
    other = tmp_path / f"{PYCACHE}-65534"
    other.mkdir(mode=0o700)
    os.chown(other, 65534, 65534)
    for name in (PYCACHE, f"{PYCACHE}-65534"):
        with contextlib.suppress(FileExistsError):
            (tmp_path / name).mkdir(mode=0o700)
            os.chown(tmp_path / name, 65534, 65534)
    monkeypatch.setenv("NPUDOCTOR_CACHE_DIR", str(tmp_path))
    assert _pycache_dir(["devices"]) == str(tmp_path / MINE)


def test_no_cache_directory_inside_the_judged_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "rootfs"
    root.mkdir()
    monkeypatch.setenv("NPUDOCTOR_CACHE_DIR", str(root / "var" / "cache" / "npudoctor"))
    assert _pycache_dir(["check", "--root", str(root)]) is None
    assert _pycache_dir(["check", f"--root={root}", "--json"]) is None
    assert not (root / "var").exists()
    # the live system as the root (``--root /``) is where the user's cache lives
    assert _pycache_dir(["check", "--root", "/"]) == str(root / "var" / "cache" / "npudoctor" / MINE)
