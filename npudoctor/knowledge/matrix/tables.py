"""The compiled bundled matrix (``compiled.jsonl``), one table decoded at a time (issue 18).

The file is JSON Lines, written by ``scripts/gen_matrix.py --write``::

    {"files": ["cann.toml", ...], "schema_version": 1, "sha256": "...", "tables": ["cann", ...]}
    [... the rows of the first table named in "tables" ...]
    [... the rows of the second ...]

Line 1 is the header: the SHA-256 of the TOML bytes the file was made from, their file
names, the schema version and the table names in the order of the lines after it.  Each
further line is one table as compact JSON (which never holds a raw newline byte: JSON
escapes ``\\n`` in strings, and no UTF-8 sequence contains the byte 0x0A).  Reading the
file splits it into lines and decodes only the header; a table is decoded when a query
first asks for it (``npudoctor devices`` reads 4 of the 11 tables).

The header is checked when the file is read (digest, file names, schema version, one line
per table); a table line that is not a JSON array of tables is found when it is decoded,
and then the matrix falls back to the TOML files (parsed and validated, as without a
compiled file).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from npudoctor.knowledge.matrix.model import SCHEMA_VERSION

if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

    #: The merged data of the TOML files, parsed and validated (raises ``MatrixError``).
    Fallback = Callable[[], Dict[str, Any]]


def render_compiled(sha256: str, files: Sequence[str], data: Dict[str, Any]) -> str:
    """The text of ``compiled.jsonl`` for merged matrix ``data`` made from TOML files
    ``files`` (base names) whose bytes have digest ``sha256``.  Deterministic: tables in
    name order, keys sorted.  Raises ``ValueError`` for a top-level key other than
    ``schema_version`` that is not an array of tables (a merged matrix has none)."""
    names = sorted(k for k in data if k != "schema_version")
    header = {"sha256": sha256, "files": list(files), "schema_version": data.get("schema_version"), "tables": names}
    lines = [_compact(header)]
    for name in names:
        rows = data[name]
        if not _is_rows(rows):
            raise ValueError(f"matrix key {name!r} is not an array of tables")
        lines.append(_compact(rows))
    return "\n".join(lines) + "\n"


def _compact(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if "\n" in text:  # pragma: no cover - json.dumps escapes newlines
        raise ValueError("compact JSON with a raw newline")
    return text


def _is_rows(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(r, dict) for r in value)


class CompiledTables:
    """The tables of one ``compiled.jsonl`` whose header matched: each decoded on first
    :meth:`decode`.  ``fallback`` gives the TOML's merged data when a line turns out
    corrupt; from then on every table comes from it."""

    def __init__(self, names: Tuple[str, ...], lines: Dict[str, bytes], schema_version: Any, fallback: Fallback):
        self.names = names
        self.schema_version = schema_version
        self._lines = lines
        self._fallback = fallback
        self._toml: Optional[Dict[str, Any]] = None

    @property
    def fell_back(self) -> bool:
        """Whether a corrupt line made these tables come from the TOML files."""
        return self._toml is not None

    def decode(self, name: str) -> List[Dict[str, Any]]:
        """The rows of table ``name`` (``[]`` when the matrix has no such table).  Raises
        ``MatrixError`` only when a corrupt line sends it to TOML files that do not validate."""
        if self._toml is None:
            line = self._lines.get(name)
            if line is None:
                return []
            try:
                rows = json.loads(line)
            except (ValueError, RecursionError):
                rows = None
            if _is_rows(rows):
                found: List[Dict[str, Any]] = rows
                return found
            self._toml = self._fallback()
        value = self._toml.get(name)
        return value if isinstance(value, list) else []


def read_compiled(path: str, files: Sequence[str], sha256: str, fallback: Fallback) -> Optional[CompiledTables]:
    """The tables of the compiled matrix at ``path`` when its header says it was made from
    TOML files named ``files`` (base names, in order) with bytes of digest ``sha256``, for
    this schema version, and it has one line per table; else ``None`` (a missing, stale,
    truncated or unreadable file is simply not used).  Only the header is decoded here."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    lines = raw.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    if not lines:
        return None
    try:
        head = json.loads(lines[0])
    except (ValueError, RecursionError):
        return None
    if not isinstance(head, dict) or head.get("sha256") != sha256 or head.get("files") != list(files):
        return None
    names = head.get("tables")
    if head.get("schema_version") != SCHEMA_VERSION or not isinstance(names, list):
        return None
    if not all(isinstance(n, str) for n in names) or len(set(names)) != len(names) or "metas" not in names:
        return None
    if len(lines) != len(names) + 1:  # a table line lost (or one too many)
        return None
    return CompiledTables(tuple(names), dict(zip(names, lines[1:])), head["schema_version"], fallback)
