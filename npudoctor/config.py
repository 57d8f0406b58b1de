"""User configuration: finding codes to silence.

Read from ``.npudoctor.toml`` in the working directory or any parent (the project
file) and from ``config.toml`` in the user config directory (``platformdirs``:
``~/.config/npudoctor/config.toml`` on Linux).  Both may hold::

    ignore = ["PKG001", "numpy-too-new"]

A malformed file is reported (``errors``) and otherwise ignored.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from npudoctor import tomlread as _toml
from npudoctor import userdirs
from npudoctor.host import read_capped_text

PROJECT_FILE = ".npudoctor.toml"


def user_config_path() -> str:
    """Path of the user config file (it need not exist): ``config.toml`` in
    ``platformdirs.user_config_dir("npudoctor")`` (:mod:`npudoctor.userdirs`)."""
    return os.path.join(userdirs.user_config_dir(), "config.toml")


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
    entries, errors = load_ignore_entries(cwd, environ)
    return [code for code, _where in entries], errors


def _line_of(text: str, value: str) -> int:
    """The 1-based line of ``text`` where the string ``value`` is written (quoted), else 1."""
    for number, line in enumerate(text.splitlines(), start=1):
        if f'"{value}"' in line or f"'{value}'" in line:
            return number
    return 1


def load_ignore_entries(
    cwd: Optional[str] = None, environ: Optional[Dict[str, str]] = None
) -> Tuple[List[Tuple[str, str]], List[str]]:
    """``([(code, "FILE:LINE"), ...], error messages)``: each code to ignore with where it is
    written (so a bad code names its file and line), from the project and user config files
    (``NPUDOCTOR_CONFIG`` in ``environ`` names the user file).  A file that cannot be read or
    parsed, or whose ``ignore`` is not a list of strings, is an error message naming it and
    is otherwise skipped."""
    env = os.environ if environ is None else environ
    files = [f for f in (_project_file(cwd or os.getcwd()), env.get("NPUDOCTOR_CONFIG") or user_config_path()) if f]
    ignores: List[Tuple[str, str]] = []
    errors: List[str] = []
    for path in files:
        if not os.path.exists(path) or os.path.isdir(path):
            continue
        try:
            text = read_capped_text(path, 1 << 20, what="config file")
            data = _toml.loads(text)
        except RecursionError:
            errors.append(f"config {path} ignored: not valid TOML: nested too deeply")
            continue
        except (OSError, ValueError) as exc:
            errors.append(f"config {path} ignored: {exc}")
            continue
        raw = data.get("ignore", [])
        if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
            line = next((n for n, t in enumerate(text.splitlines(), 1) if t.strip().startswith("ignore")), 1)
            errors.append(f"config {path}:{line}: 'ignore' must be a list of codes")
            continue
        ignores.extend((code, f"{path}:{_line_of(text, code)}") for code in raw)
    return ignores, errors


def silenced(ignored: Sequence[Any], origins: Sequence[Tuple[str, str]]) -> List[Dict[str, str]]:
    """The ``ignored`` list of a command's JSON: each finding left out (``ignored``, as the
    judging collected them) as ``{"code", "title", "by"}``, ``by`` naming what silenced it:
    the first of ``origins`` (``(code or name, "FILE:LINE" or "--ignore")``) naming its code
    or name."""
    out: List[Dict[str, str]] = []
    for f in ignored:
        names = {str(f.code).upper(), str(f.name).upper()}
        by = next((where for code, where in origins if code.strip().upper() in names), "--ignore")
        out.append({"code": f.code, "title": f.title, "by": by})
    return out


def unknown_ignores(origins: Sequence[Tuple[str, str]]) -> List[str]:
    """What to say of each entry of ``origins`` (``(code or name, "FILE:LINE" or
    "--ignore")``) that names no finding code or name: ``--ignore PKG999: no such finding
    code (see `npudoctor explain --list`)``.  A typo silences nothing, so it is said, as a
    warning: never an error."""
    from npudoctor.knowledge.codes import lookup

    out: List[str] = []
    for code, where in origins:
        if lookup(code) is None:
            what = f"--ignore {code}" if where == "--ignore" else f"{where}: ignore {code!r}"
            out.append(f"{what}: no such finding code (see `npudoctor explain --list`)")
    return out


def ignored_line(entries: Sequence[Dict[str, str]]) -> str:
    """One line saying which findings were ignored and by what (empty when none):
    ``ignored: PKG007 (by /srv/app/.npudoctor.toml:2), DRV002 (by --ignore)``."""
    return "ignored: " + ", ".join(f"{e['code']} (by {e['by']})" for e in entries) if entries else ""
