"""User configuration: finding codes to silence.

Read from ``.npudoctor.toml`` in the working directory or any parent (the project
file) and from ``config.toml`` in the user config directory (``platformdirs``:
``~/.config/npudoctor/config.toml`` on Linux).  Both may hold::

    ignore = ["PKG001", "numpy-too-new"]

A malformed file is reported (``errors``) and otherwise ignored.
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional, Tuple

from npudoctor import tomlread as _toml
from npudoctor.host import read_capped_text

PROJECT_FILE = ".npudoctor.toml"


def user_config_path() -> str:
    """Path of the user config file (it need not exist)."""
    from platformdirs import user_config_dir

    return os.path.join(user_config_dir("npudoctor", appauthor=False), "config.toml")


def _project_file(start: str) -> Optional[str]:
    current = os.path.abspath(start)
    while True:
        candidate = os.path.join(current, PROJECT_FILE)
        if os.path.exists(candidate) and not os.path.isdir(candidate):
            return candidate
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def load_ignores(cwd: Optional[str] = None, environ: Optional[Dict[str, str]] = None) -> Tuple[List[str], List[str]]:
    """``(codes to ignore, error messages)`` from the project and user config files.

    ``NPUDOCTOR_CONFIG`` in ``environ`` names the user file instead of the default.
    """
    env = os.environ if environ is None else environ
    files = [f for f in (_project_file(cwd or os.getcwd()), env.get("NPUDOCTOR_CONFIG") or user_config_path()) if f]
    ignores: List[str] = []
    errors: List[str] = []
    for path in files:
        if not os.path.exists(path) or os.path.isdir(path):
            continue
        try:
            data = _toml.loads(read_capped_text(path, 1 << 20, what="config file"))
        except RecursionError:
            errors.append(f"config {path} ignored: not valid TOML: nested too deeply")
            continue
        except (OSError, ValueError) as exc:
            errors.append(f"config {path} ignored: {exc}")
            continue
        raw = data.get("ignore", [])
        if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
            errors.append(f"config {path}: 'ignore' must be a list of codes")
            continue
        ignores.extend(raw)
    return ignores, errors
