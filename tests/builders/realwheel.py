"""A real Python 3.11 venv holding the real torch 2.13.0 (CPU build) and torch_npu 2.13.0.

Shared by every test that needs real wheels (``from realwheel import realwheel_venv``
and list it as a fixture: it is session-scoped).  The venv is built once and cached in
``$TMPDIR/npudoctor-realwheel-<hash>`` (the hash covers the Python version and the
pinned requirements), so later runs take milliseconds.  Build steps::

    python3.11 -m venv <dir>
    <dir>/bin/python -m pip install torch==2.13.0 torch_npu==2.13.0

``torch==2.13.0`` is always pinned, and the CPU build is preferred: when PyTorch's CPU
index (https://download.pytorch.org/whl/cpu) answers ``pip index versions torch``, it is
added with ``--extra-index-url`` (its ``2.13.0+cpu`` sorts above the plain PyPI release and
still matches the pin); when it does not answer (no network to it, as on the CI machines),
pip uses its configured indexes alone -- on the CI machines pip's ``find-links`` holds
``torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl`` -- and the build says so (a
line in the log and a pytest warning), because elsewhere PyPI's plain torch pulls the CUDA
build and about twenty nvidia wheels (several GB).  torch_npu 2.13.0 comes from PyPI with
whatever it requires (numpy, pyyaml).

A build is complete only when ``<dir>/.complete`` exists; a half-built directory (an
interrupted run) is removed and rebuilt.  Concurrent sessions serialize on a lock file.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

import pytest

PYTHON_VERSION = "3.11"
REQUIREMENTS = ["torch==2.13.0", "torch_npu==2.13.0"]
#: Seconds allowed for the whole pip install (downloads included).
INSTALL_TIMEOUT = 1800
#: PyTorch's index of CPU-only wheels.
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


@dataclass
class RealVenv:
    """A finished venv: ``path`` (its prefix), ``python`` (its interpreter) and
    ``site_packages`` (``<path>/lib/python3.11/site-packages``)."""

    path: Path
    python: Path
    site_packages: Path


def _base_python() -> Optional[str]:
    if sys.version_info[:2] == (3, 11):
        return sys.executable
    return shutil.which(f"python{PYTHON_VERSION}")


def cache_dir() -> Path:
    """``$TMPDIR/npudoctor-realwheel-<hash>`` for this Python version and these pins."""
    key = hashlib.sha256(("|".join([PYTHON_VERSION] + REQUIREMENTS)).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"npudoctor-realwheel-{key}"


def _run(argv: List[str], log: Path) -> None:
    with open(log, "ab") as fh:
        fh.write(("\n$ " + " ".join(argv) + "\n").encode())
        fh.flush()
        proc = subprocess.run(argv, stdout=fh, stderr=subprocess.STDOUT, timeout=INSTALL_TIMEOUT)
    if proc.returncode != 0:
        tail = log.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{' '.join(argv)} failed with exit {proc.returncode}:\n{tail}")


def cpu_index_reachable(python: str, index: str = CPU_INDEX, timeout: float = 15.0) -> bool:
    """Whether ``index`` itself answers pip (``pip --isolated index versions torch``: pip's
    configured indexes and find-links left out, no retry) within ``timeout`` seconds."""
    argv = [python, "-m", "pip", "--isolated", "index", "versions", "torch", "--index-url", index, "--retries", "0"]
    try:
        proc = subprocess.run(argv + ["--timeout", str(int(timeout))], capture_output=True, timeout=timeout * 2)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def install_argv(python: str, cpu_index: bool) -> List[str]:
    """The pip command that installs :data:`REQUIREMENTS` (with the CPU index when reachable)."""
    extra = ["--extra-index-url", CPU_INDEX] if cpu_index else []
    return [python, "-m", "pip", "install", "--disable-pip-version-check", *extra, *REQUIREMENTS]


def build(target: Optional[Path] = None) -> RealVenv:
    """Build (or reuse) the venv and return it.  Raises ``RuntimeError`` when the
    base interpreter is missing or pip fails (the message holds pip's last output)."""
    target = target or cache_dir()
    venv = RealVenv(
        path=target,
        python=target / "bin" / "python",
        site_packages=target / "lib" / f"python{PYTHON_VERSION}" / "site-packages",
    )
    target.parent.mkdir(parents=True, exist_ok=True)
    lock_path = target.parent / (target.name + ".lock")
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / ".complete").is_file() and venv.python.exists():
            return venv
        base = _base_python()
        if base is None:
            raise RuntimeError(f"python{PYTHON_VERSION} is not installed")
        if target.exists():
            shutil.rmtree(target)
        log = target.parent / (target.name + ".log")
        log.write_text("")
        _run([base, "-m", "venv", str(target)], log)
        env_python = str(venv.python)
        cpu = cpu_index_reachable(env_python)
        if not cpu:
            note = (
                f"{CPU_INDEX} is not reachable: installing torch from pip's configured indexes "
                "(PyPI's torch is the CUDA build unless a +cpu wheel is in find-links)"
            )
            with open(log, "a") as fh:
                fh.write(f"\n# {note}\n")
            import warnings

            warnings.warn(note, stacklevel=2)
        _run(install_argv(env_python, cpu), log)
        (target / ".complete").write_text("\n".join(REQUIREMENTS) + "\n")
    return venv


@pytest.fixture(scope="session")
def realwheel_venv() -> RealVenv:
    """Session fixture: the real torch 2.13.0(+cpu) + torch_npu 2.13.0 venv."""
    return build()


if __name__ == "__main__":  # warm the cache: python tests/builders/realwheel.py
    print(build().path)
