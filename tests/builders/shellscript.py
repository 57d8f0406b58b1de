"""Write the small ``/bin/sh`` stand-ins (an ``npu-smi`` that logs, sleeps or hangs) that the
command-running tests put on ``PATH``."""

from __future__ import annotations

import textwrap
from pathlib import Path


def write_script(directory: Path, name: str, body: str) -> Path:
    """Write ``directory/name`` as an executable ``#!/bin/sh`` script of ``body`` (dedented),
    creating ``directory`` if needed; returns its path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    path.chmod(0o755)
    return path
