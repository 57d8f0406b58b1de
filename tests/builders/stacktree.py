"""Build small but real stack trees (a --root scenario of one node) for the multi-node
tests: torch/torch_npu dist-info, a CANN toolkit with its install.info and a `latest`
symlink, the driver's version.info, /etc/hostname, optional /etc/hccn.conf and rank table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Optional

import clirun
import pytest

REPO = Path(__file__).resolve().parents[2]


def build_root(
    root: Path,
    hostname: str,
    cann: str = "8.0.0",
    driver: str = "24.1.rc2",
    torch: str = "2.1.0",
    torch_npu: str = "2.1.0.post3",
    hccn_conf: Optional[str] = None,
) -> Path:
    """Write one node's tree under ``root`` and return it."""
    sp = root / "usr/local/lib/python3.10/site-packages"
    for name, ver in (("torch", torch), ("torch_npu", torch_npu)):
        d = sp / f"{name}-{ver}.dist-info"
        d.mkdir(parents=True, exist_ok=True)
        (d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {ver}\n")
    tk = root / f"usr/local/Ascend/ascend-toolkit/{cann}/aarch64-linux"
    tk.mkdir(parents=True, exist_ok=True)
    (tk / "ascend_toolkit_install.info").write_text(f"package_name=Ascend-cann-toolkit\nversion={cann}\narch=aarch64\n")
    latest = root / "usr/local/Ascend/ascend-toolkit/latest"
    if not latest.is_symlink():
        latest.symlink_to(cann)
    drv = root / "usr/local/Ascend/driver"
    drv.mkdir(parents=True, exist_ok=True)
    (drv / "version.info").write_text(f"Version={driver}\n")
    (root / "etc").mkdir(parents=True, exist_ok=True)
    (root / "etc/hostname").write_text(hostname + "\n")
    if hccn_conf is not None:
        (root / "etc/hccn.conf").write_text(hccn_conf)
    return root


def clean_env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": "/root"}
    env.update(extra or {})
    return env


def collect(root: Path, out: Path, env: Optional[Dict[str, str]] = None, redact: bool = True) -> dict:
    """`npudoctor collect --root ROOT -o OUT` (in-process); returns the snapshot."""
    args = ["collect", "--root", str(root), "-o", str(out)]
    if not redact:
        args.append("--no-redact")
    proc = clirun.npudoctor(*args, env=clean_env(env), cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text())


def npudoctor_inprocess(*args: str, input: Optional[str] = None, env: Optional[Dict[str, str]] = None) -> Any:
    """``npudoctor ARGS…`` in-process, ``env`` added to this process's environment."""
    return clirun.npudoctor(*args, input=input, env=dict(os.environ, **(env or {})))


def npudoctor(*args: str, input: Optional[str] = None, env: Optional[Dict[str, str]] = None, timeout: float = 120):
    """``python -m npudoctor ARGS…`` as a process (``npd`` ends its process with os._exit)."""
    return subprocess.run(
        [sys.executable, "-m", "npudoctor", *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ, **(env or {})),
    )


def need(executable: str) -> str:
    path = None
    for d in [str(Path(sys.executable).parent)] + os.environ.get("PATH", "").split(":"):
        candidate = Path(d) / executable
        if candidate.is_file() and os.access(candidate, os.X_OK):
            path = str(candidate)
            break
    if path is None:
        pytest.skip(f"{executable} not installed (pip install -e '.[test]')")
    return path
