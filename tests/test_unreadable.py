"""Unreadable is not absent (issue 20), run unprivileged for real.

Root reads through ``chmod 000``, so each run drops to ``nobody`` with ``setpriv --reuid=nobody
--regid=nogroup --clear-groups`` and runs ``npudoctor check --json`` on a copy of a real scenario
tree where one thing is ``chmod 000``: the toolkit directory, the site-packages directory or
``/etc/hccn.conf``.  The same tree read as root is the control."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Dict, Iterator, List, Optional

import pytest

from npudoctor.facts import Facts
from npudoctor.host import Host
from npudoctor.tomlread import loads

REPO = Path(__file__).resolve().parent.parent
SCENARIOS = REPO / "tests" / "scenarios"
SITE = "usr/local/python3.11.13/lib/python3.11/site-packages"
TOOLKIT = "usr/local/Ascend/cann-8.5.0"
SETPRIV = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
LIMIT = 60.0


def _paths() -> List[str]:
    """This checkout and the installed dependencies, for a python started as nobody."""
    return [str(REPO), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]


def _boot(argv: List[str]) -> List[str]:
    code = f"import sys; sys.path[:0] = {_paths()!r}; sys.argv[0] = 'npudoctor'; from npudoctor.entry import run; run()"
    return ["-c", code, *argv]


def _nobody_python() -> Optional[str]:
    """An interpreter of this Python version that ``nobody`` may run (this one may live
    under a private /root), or ``None``."""
    if shutil.which("setpriv") is None or os.geteuid() != 0:
        return None
    short = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    for candidate in (sys.executable, f"/usr/bin/{short}", f"/usr/local/bin/{short}"):
        try:
            probe = subprocess.run(
                [*SETPRIV, candidate, "-c", f"import sys; sys.path[:0] = {_paths()!r}; import typer, rich, npudoctor"],
                capture_output=True,
                timeout=30,
                env={"PATH": "/usr/bin:/bin"},
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if probe.returncode == 0:
            return candidate
    return None


PYTHON = _nobody_python()
needs_nobody = pytest.mark.skipif(PYTHON is None, reason="needs root, setpriv and a python nobody may run")


def _scenario_env(name: str) -> Dict[str, str]:
    data = loads((SCENARIOS / name / "scenario.toml").read_text())
    env = {"PATH": "/usr/bin:/bin"}
    env.update({str(k): str(v) for k, v in data.get("env", {}).items()})
    return env


@pytest.fixture
def tree() -> Iterator[Path]:
    """A directory every account may traverse (pytest's tmp_path is private to root)."""
    base = Path(tempfile.mkdtemp(prefix="npd-unreadable-", dir="/tmp"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        for dirpath, dirnames, _files in os.walk(base):
            for d in dirnames:
                os.chmod(os.path.join(dirpath, d), 0o755)
        shutil.rmtree(base, ignore_errors=True)


def _copy(tree: Path, scenario: str, locked: str, extra: Optional[str] = None) -> Path:
    root = tree / "root"
    shutil.copytree(SCENARIOS / scenario / "root", root, symlinks=True)
    if extra:
        shutil.copytree(SCENARIOS / extra / "root", root, symlinks=True, dirs_exist_ok=True)
    subprocess.run(["chmod", "-R", "a+rX", str(root)], check=True)
    (root / locked).chmod(0)
    return root


def _check(root: Path, env: Dict[str, str], unprivileged: bool) -> dict:
    argv = _boot(["check", "--root", str(root), "--no-commands", "--json"])
    cmd = [*SETPRIV, str(PYTHON), *argv] if unprivileged else [sys.executable, *argv]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=LIMIT, env=env, cwd="/")
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    return json.loads(proc.stdout)


def _codes(doc: dict) -> Dict[str, dict]:
    return {f["code"]: f for f in doc["findings"]}


@needs_nobody
def test_unreadable_site_packages_is_not_fourteen_missing_packages(tree: Path) -> None:
    scenario = "k10-stale-other-cann"
    root = _copy(tree, scenario, SITE)
    env = _scenario_env(scenario)
    as_root = _codes(_check(root, env, unprivileged=False))
    assert "PKG006" in as_root and "HOST004" not in as_root  # the control: root reads through chmod 000
    doc = _check(root, env, unprivileged=True)
    found = _codes(doc)
    assert "PKG006" not in found
    unreadable = found["HOST004"]
    assert unreadable["severity"] == "warning"
    assert unreadable["data"]["denied"] == [f"/{SITE}"]
    assert unreadable["title"].startswith(f"cannot read /{SITE} as uid 65534")
    assert "not judged while unreadable: PKG006" in unreadable["evidence"]
    assert f"chmod o+rX /{SITE}  # only if uid 65534 should read it" in unreadable["fix"]
    assert doc["facts"]["access"] == {"uid": 65534, "gid": 65534, "denied": [f"/{SITE}"]}


@needs_nobody
def test_unreadable_toolkit_is_not_another_cann(tree: Path) -> None:
    scenario = "k10-stale-other-cann"
    root = _copy(tree, scenario, TOOLKIT)
    env = _scenario_env(scenario)
    # As root the toolkit in use is 8.5.0 and the environment still names 8.2.RC1 (ENV002).
    assert "8.2.RC1" in _codes(_check(root, env, unprivileged=False))["ENV002"]["title"]
    found = _codes(_check(root, env, unprivileged=True))
    # Unprivileged, 8.5.0 cannot be read: no verdict built on 8.2.RC1 being "the toolkit in use".
    assert not {"ENV002", "ENV003", "ENV004", "CANN001", "CANN004", "PKG006"} & set(found)
    unreadable = found["HOST004"]
    assert unreadable["data"]["denied"] == [f"/{TOOLKIT}"]
    assert "not judged while unreadable: CANN004, ENV002, ENV003, ENV004, PKG006" in unreadable["evidence"]


@needs_nobody
def test_unreadable_hccn_conf_is_one_finding(tree: Path) -> None:
    scenario = "hccl-clean-two-nodes"
    root = _copy(tree, scenario, "etc/hccn.conf")
    env = _scenario_env(scenario)
    assert "HCCL014" not in _codes(_check(root, env, unprivileged=False))
    doc = _check(root, env, unprivileged=True)
    found = _codes(doc)
    assert found["HCCL014"]["title"] == "/etc/hccn.conf cannot be read: permission denied"
    assert "HCCL007" not in found
    assert "HOST004" not in found  # HCCL014 already says it: one root cause, one finding
    assert doc["facts"]["access"]["denied"] == ["/etc/hccn.conf"]


def test_readable_tree_has_no_access_section(tmp_path: Path) -> None:
    doc = _check(SCENARIOS / "k10-stale-other-cann" / "root", _scenario_env("k10-stale-other-cann"), False)
    assert "access" not in doc["facts"]
    assert "HOST004" not in _codes(doc)


def test_access_view_blocking() -> None:
    view = Facts({"access": {"uid": 1000, "gid": 1000, "denied": ["/usr/local/Ascend/cann-8.5.0", "/etc/hccn.conf"]}})
    assert view.access.uid == 1000
    assert view.access.blocking("/usr/local/Ascend/cann-8.5.0/lib64") == "/usr/local/Ascend/cann-8.5.0"
    assert view.access.blocking("/usr/local/Ascend/cann-8.5.0") == "/usr/local/Ascend/cann-8.5.0"
    assert view.access.blocking("/usr/local/Ascend/cann-8.5.0x") is None
    assert view.access.blocking(None) is None
    assert Facts({}).access.denied == ()


def test_host_missing_is_not_denied(tmp_path: Path) -> None:
    host = Host(root=str(tmp_path))
    assert host.read_text("/etc/hccn.conf").error == "not found"
    assert not host.exists("/usr/local/Ascend/cann/set_env.sh")
    assert host.listdir("/usr/local/Ascend") == []
    assert host.denied == {}
