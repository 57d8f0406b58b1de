"""Real ``torch/lib/libc10.so`` of both C++ ABIs, from PyPI's torch wheels.

PyPI's torch wheels use the old (pre-C++11) libstdc++ ABI up to 2.5 on aarch64 and 2.6
on x86_64, the C++11 ABI after.  The aarch64 CPU wheels are the cheap ones (about 92
and 96 MB; PyPI's x86_64 wheels are CUDA builds of several hundred MB), so we take:

* old ABI: ``torch-2.5.1-cp311-cp311-manylinux2014_aarch64.whl``;
* C++11 ABI: ``torch-2.6.0-cp311-cp311-manylinux_2_28_aarch64.whl``.

Each is fetched once with ``pip download torch==X --no-deps --platform P
--python-version 3.11 --only-binary=:all:`` into ``$TMPDIR/npudoctor-realc10/wheels``,
only ``torch/lib/libc10.so`` is extracted (to ``$TMPDIR/npudoctor-realc10/<version>/``),
its SHA-256 is checked against the pin below, and the wheel is then deleted (the
extracted file is the cache; ``KEEP_WHEELS=1`` keeps the wheels).  A finished
extraction is marked by ``<version>/.complete``; concurrent sessions serialize on a lock.

Tests use the session fixture ``real_c10`` (import :func:`real_c10_fixture`) and are marked ``slow``, as the
repository marks its other pip-from-PyPI tests (``tests/builders/realwheel.py``): PyPI is
reachable wherever the project runs, CI included, so they run by default; ``network``
is kept for tests that reach other sites and is off unless ``--run-network``.  When pip
cannot download (offline) the fixture skips instead of failing.  See
``tests/fixtures/elf/README.md`` for the wheels, sizes and the exact symbols.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Optional

import pytest

MEMBER = "torch/lib/libc10.so"
#: Seconds allowed for one pip download.
DOWNLOAD_TIMEOUT = 900


@dataclass(frozen=True)
class C10Pin:
    """One wheel: torch ``version``, pip ``platform`` tag, the ``wheel`` file name pip
    saves, its ``size`` in bytes, the ``sha256`` of its libc10.so, and ``abi``
    (0: old ABI, 1: C++11 ABI)."""

    version: str
    platform: str
    wheel: str
    size: int
    sha256: str
    abi: int


PINS: Dict[str, C10Pin] = {
    "old": C10Pin(
        "2.5.1",
        "manylinux2014_aarch64",
        "torch-2.5.1-cp311-cp311-manylinux2014_aarch64.whl",
        91919450,
        "3cc5e3d6ee91a106deb1604f1db5ca1fc5df1faab4f70528f5325244a12079ed",
        0,
    ),
    "new": C10Pin(
        "2.6.0",
        "manylinux_2_28_aarch64",
        "torch-2.6.0-cp311-cp311-manylinux_2_28_aarch64.whl",
        95759416,
        "4d28a7d208af84dadbe1fb5f8af811dd1bd482eca864601c0f73d59ac3eec352",
        1,
    ),
}

#: ``c10::detail::torchCheckFail(char const*, char const*, unsigned int, std::string const&)``
#: as each ABI mangles it (``nm -D`` of the real files).
TORCH_CHECK_FAIL = {
    0: "_ZN3c106detail14torchCheckFailEPKcS2_jRKSs",
    1: "_ZN3c106detail14torchCheckFailEPKcS2_jRKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE",
}


def cache_root() -> Path:
    return Path(tempfile.gettempdir()) / "npudoctor-realc10"


def cached(kind: str) -> Optional[Path]:
    """The extracted libc10.so of ``kind`` (``old``/``new``) when already cached, else ``None``."""
    pin = PINS[kind]
    out = cache_root() / pin.version / MEMBER
    return out if (cache_root() / pin.version / ".complete").is_file() and out.is_file() else None


def fetch(kind: str) -> Path:
    """Download (or reuse) the wheel of ``kind`` and return its extracted libc10.so.

    Raises ``RuntimeError`` (with pip's output) when pip fails, e.g. offline."""
    pin = PINS[kind]
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    done = root / pin.version / ".complete"
    out = root / pin.version / MEMBER
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.is_file() and out.is_file():
            return out
        wheels = root / "wheels"
        wheels.mkdir(exist_ok=True)
        wheel = wheels / pin.wheel
        if not wheel.is_file() or wheel.stat().st_size != pin.size:
            argv = [
                sys.executable,
                "-m",
                "pip",
                "download",
                f"torch=={pin.version}",
                "--no-deps",
                "--platform",
                pin.platform,
                "--python-version",
                "3.11",
                "--only-binary=:all:",
                "--disable-pip-version-check",
                "-d",
                str(wheels),
            ]
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT)
            if proc.returncode != 0 or not wheel.is_file():
                raise RuntimeError(
                    f"{' '.join(argv)} failed ({proc.returncode}):\n{(proc.stdout + proc.stderr)[-2000:]}"
                )
        if wheel.stat().st_size != pin.size:
            raise RuntimeError(f"{wheel.name}: {wheel.stat().st_size} bytes, expected {pin.size}")
        target = root / pin.version
        if target.exists():
            shutil.rmtree(target)
        with zipfile.ZipFile(wheel) as zf:
            zf.extract(MEMBER, target)
        digest = hashlib.sha256(out.read_bytes()).hexdigest()
        if digest != pin.sha256:
            raise RuntimeError(f"{out}: sha256 {digest}, expected {pin.sha256}")
        done.write_text(f"{pin.wheel}\n{pin.size}\n{pin.sha256}\n")
        if not os.environ.get("KEEP_WHEELS"):
            wheel.unlink()
    return out


@pytest.fixture(scope="session", name="real_c10")
def real_c10_fixture() -> Dict[str, Path]:
    """Session fixture: ``{"old": libc10.so (torch 2.5.1 aarch64), "new": libc10.so (2.6.0)}``.

    Skips (never fails) when a download is impossible, e.g. offline."""
    files: Dict[str, Path] = {}
    for kind in PINS:
        try:
            files[kind] = fetch(kind)
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
            pytest.skip(f"real torch wheel for libc10.so not available: {str(exc)[-300:]}")
    return files


if __name__ == "__main__":  # warm the cache: python tests/builders/realc10.py
    for k in PINS:
        print(k, fetch(k))
