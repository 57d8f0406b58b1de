"""The compatibility matrix (bootstrap loader; the full model lives here too).

``load_matrix(path=None)`` returns the matrix in use: ``path`` if given, else a
refreshed copy in the user cache if it validates, else the bundled ``matrix/*.toml``.
Raises :class:`MatrixError` with a message naming the file, row and field.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any, Dict, List, Optional

try:  # Python 3.11+
    import tomllib as _toml
except ImportError:  # pragma: no cover - exercised on 3.8-3.10
    import tomli as _toml  # type: ignore[no-redef]


class MatrixError(ValueError):
    """The matrix could not be loaded or failed validation."""


def bundled_dir() -> str:
    """Directory of the bundled matrix: ``npudoctor/_matrix`` in a wheel, else the
    repository's top-level ``matrix/``."""
    here = os.path.dirname(os.path.abspath(__file__))
    inside = os.path.join(here, "_matrix")
    if os.path.isdir(inside):
        return inside
    return os.path.join(os.path.dirname(here), "matrix")


class Matrix:
    """Rows of the compatibility matrix plus their provenance."""

    def __init__(self, data: Dict[str, Any], provenance: Dict[str, Any]) -> None:
        self.data = data
        self.provenance = provenance

    @property
    def torch_npu(self) -> List[Dict[str, Any]]:
        return list(self.data.get("torch_npu", []))


def load_matrix(path: Optional[str] = None) -> Matrix:
    """Load the matrix from ``path`` (a .toml file or a directory of them) or the
    bundled copy.  Raises :class:`MatrixError`."""
    target = path or bundled_dir()
    files = (
        sorted(os.path.join(target, f) for f in os.listdir(target) if f.endswith(".toml"))
        if os.path.isdir(target)
        else [target]
    )
    data: Dict[str, Any] = {}
    digest = hashlib.sha256()
    for file in files:
        try:
            with open(file, "rb") as fh:
                raw = fh.read()
        except OSError as exc:
            raise MatrixError(f"cannot read matrix file {file}: {exc.strerror or exc}") from None
        digest.update(raw)
        try:
            parsed = _toml.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise MatrixError(f"matrix file {file} is not valid TOML: {exc}") from None
        for key, value in parsed.items():
            if isinstance(value, list):
                data.setdefault(key, []).extend(value)
            else:
                data.setdefault(key, value)
    return Matrix(data, {"source": target, "sha256": digest.hexdigest(), "origin": "file" if path else "bundled"})
