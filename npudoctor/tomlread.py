"""TOML for every Python npudoctor runs on: the standard library's ``tomllib`` from 3.11, the
``tomli`` backport (a declared dependency below 3.11) before."""

from __future__ import annotations

import sys
from typing import Any, Dict

if sys.version_info >= (3, 11):
    import tomllib as _toml
else:  # pragma: no cover - exercised on 3.8-3.10
    import tomli as _toml

#: Raised for malformed TOML (a ``ValueError``).
TOMLDecodeError = _toml.TOMLDecodeError


def loads(text: str) -> Dict[str, Any]:
    """Parse TOML ``text``; raises :class:`TOMLDecodeError` (a ``ValueError``) when malformed."""
    return _toml.loads(text)
