"""SHA-256 by the interpreter's built-in implementation: ``hashlib`` loads OpenSSL's
``libcrypto`` when it is imported, a few milliseconds of a short command
(``docs/performance.md``), for the same digest."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["sha256", "sha256_hex"]


def sha256(data: bytes) -> Any:
    """A SHA-256 hash object of ``data`` (``digest()``, ``hexdigest()``, ``update()``): the
    built-in module's when the interpreter has one, else ``hashlib``'s."""
    for name in ("_sha2", "_sha256"):  # CPython 3.12+, CPython 3.8-3.11
        try:
            return importlib.import_module(name).sha256(data)
        except (ImportError, AttributeError):
            continue
    import hashlib  # another interpreter

    return hashlib.sha256(data)


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of ``data``, in hex."""
    return str(sha256(data).hexdigest())
