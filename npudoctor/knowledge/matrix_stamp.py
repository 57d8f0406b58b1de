"""Where the compatibility matrix lives and its date, known without loading it.

``npudoctor --version`` names the matrix's date and source; importing
:mod:`npudoctor.knowledge.matrix` costs several times the rest of ``--version`` (its
validation, queries and verdicts), so the locations and the ``[meta] retrieved`` dates are
read here with a regular expression, and :mod:`npudoctor.knowledge.matrix.load` takes its
locations from this module.
"""

from __future__ import annotations

import os
import re
from typing import Dict

from npudoctor import lazyre, userdirs

#: Name of the refreshed matrix file inside the cache directory (JSON: the same document
#: as the TOML files, read ~30x faster than TOML by the C JSON parser).
CACHE_FILE = "matrix.json"
#: Environment variable overriding the user cache directory (tests, read-only homes).
CACHE_ENV = "NPUDOCTOR_CACHE_DIR"

_META_RETRIEVED = lazyre.pattern(r'^\[meta\][^\[]*?^retrieved\s*=\s*"([0-9]{4}-[0-9]{2}-[0-9]{2})"', re.M | re.S)
_JSON_FIELD = r'"{name}":\s*"((?:[^"\\]|\\.)*)"'


def bundled_dir() -> str:
    """Directory of the bundled matrix: ``npudoctor/_matrix`` in a wheel, else the
    repository's top-level ``matrix/``."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    inside = os.path.join(package, "_matrix")
    if os.path.isdir(inside):
        return inside
    return os.path.join(os.path.dirname(package), "matrix")


def cache_dir() -> str:
    """The user cache directory of npudoctor: ``$NPUDOCTOR_CACHE_DIR`` if set, else
    ``platformdirs.user_cache_dir("npudoctor")`` (``~/.cache/npudoctor`` on Linux; the
    common Linux case without importing platformdirs: :mod:`npudoctor.userdirs`)."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return env
    return userdirs.user_cache_dir()


def cache_path() -> str:
    """Path of the refreshed matrix in the cache (may not exist)."""
    return os.path.join(cache_dir(), CACHE_FILE)


def bundled_retrieved(directory: str) -> str:
    """Newest ``[meta] retrieved`` date of the bundled files, read without parsing the
    TOML (``""`` when none is found)."""
    best = ""
    try:
        names = [n for n in os.listdir(directory) if n.endswith(".toml")]
    except OSError:
        return best
    for name in names:
        try:
            with open(os.path.join(directory, name), encoding="utf-8", errors="replace") as fh:
                m = _META_RETRIEVED.search(fh.read())
        except OSError:
            continue
        if m and m.group(1) > best:
            best = m.group(1)
    return best


def _cache_meta(path: str) -> Dict[str, str]:
    """``retrieved`` and ``source`` of the refreshed copy's ``meta`` (written first in the
    file), or ``{}`` when there is no readable copy."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            head = fh.read(8192)
    except OSError:
        return {}
    out: Dict[str, str] = {}
    for name in ("retrieved", "source"):
        m = re.search(_JSON_FIELD.format(name=name), head)
        if m:
            out[name] = m.group(1).encode("utf-8").decode("unicode_escape", errors="replace")
    return out


def version_line() -> str:
    """The matrix line of ``npudoctor --version``: the bundled matrix's date, and the
    refreshed copy's date and sources when one is newer (the loader uses it when it
    validates, ``npudoctor matrix verify``)."""
    bundled = bundled_retrieved(bundled_dir()) or "?"
    line = f"matrix: bundled, data of {bundled} (official tables; sources: `npudoctor matrix verify`)"
    cached = _cache_meta(cache_path())
    if cached.get("retrieved", "") >= bundled and cached.get("retrieved"):
        line = (
            f"matrix: refreshed copy {cache_path()}, data of {cached['retrieved']} "
            f"({cached.get('source', '?')}); bundled data of {bundled}"
        )
    return line
