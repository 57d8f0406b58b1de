"""TOML for every Python npudoctor runs on: the standard library's ``tomllib`` from 3.11, the
``tomli`` backport (a declared dependency below 3.11) before."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from npudoctor.digest import sha256_hex

if TYPE_CHECKING:
    from typing import Any, Dict


def _parser() -> Any:
    """The TOML parser module, imported on first use (most runs read only compiled twins)."""
    if sys.version_info >= (3, 11):
        import tomllib as parser
    else:  # pragma: no cover - exercised on 3.8-3.10
        import tomli as parser
    return parser


def __getattr__(name: str) -> Any:
    """``TOMLDecodeError`` (a ``ValueError``: raised for malformed TOML), resolved lazily."""
    if name == "TOMLDecodeError":
        return _parser().TOMLDecodeError
    raise AttributeError(name)


def loads(text: str) -> Dict[str, Any]:
    """Parse TOML ``text``; raises ``TOMLDecodeError`` (a ``ValueError``) when malformed."""
    result: Dict[str, Any] = _parser().loads(text)
    return result


#: Suffix of the compiled twin of a bundled TOML file (``signatures.toml`` →
#: ``signatures.toml.compiled.json``), made by ``scripts/gen_compiled_data.py --write``.
COMPILED_SUFFIX = ".compiled.json"


def twin_document(raw: bytes, data: Dict[str, Any]) -> str:
    """The text of the compiled twin of a TOML file whose bytes are ``raw`` and whose
    parsed document is ``data`` (deterministic: sorted keys)."""
    import json

    doc = {"sha256": sha256_hex(raw), "data": data}
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"


_LOADED: Dict[str, Dict[str, Any]] = {}


def bundled_document(path: str) -> Dict[str, Any]:
    """:func:`load_bundled`, read once per process and shared by every reader (package data
    does not change while npudoctor runs); callers must not change what it returns."""
    doc = _LOADED.get(path)
    if doc is None:
        doc = _LOADED[path] = load_bundled(path)
    return doc


def load_bundled(path: str) -> Dict[str, Any]:
    """Parse one of npudoctor's own TOML data files (package data, never a file of the
    judged machine): its compiled twin (``path`` + :data:`COMPILED_SUFFIX`, JSON made by
    ``scripts/gen_compiled_data.py --write``) loaded whole, the TOML itself neither read nor
    hashed; a stale twin is caught in a checkout by ``tests/test_compiled_data.py``.  Only a
    file with no usable twin is parsed as TOML.  Raises ``OSError`` for an unreadable file
    and :class:`TOMLDecodeError` for malformed TOML."""
    import msgspec  # the records' library: decodes JSON faster than the json module

    try:
        with open(path + COMPILED_SUFFIX, "rb") as fh:
            twin = msgspec.json.decode(fh.read())
    except (OSError, ValueError, RecursionError):  # msgspec.DecodeError is a ValueError
        twin = None
    data = twin.get("data") if isinstance(twin, dict) else None
    if isinstance(data, dict):
        return data
    with open(path, "rb") as fh:
        return loads(fh.read().decode("utf-8"))
