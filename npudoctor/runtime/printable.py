"""Terminal-safe one-line texts for the runtime commands (health, exec): imported on
health's quickest path, so it holds nothing else (and the check that a stored
verdict is such text)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Optional

#: Longest problem line printed (Docker keeps only the tail of the output).
LINE_LIMIT = 240


def printable(text: str, limit: int = LINE_LIMIT) -> str:
    """``text`` as one short terminal-safe line: control characters (garbled command
    output quoted in a title) become ``?``, whitespace runs one space, at most ``limit``
    characters."""
    out = "".join(ch if ch.isprintable() else (" " if ch.isspace() else "?") for ch in str(text))
    out = " ".join(out.split())
    return out if len(out) <= limit else out[: limit - 1] + "…"


def follows(text: str, cause: Optional[str], limit: int = LINE_LIMIT) -> str:
    """:func:`printable` ``text``; with a ``cause`` (the code of the root cause a follow-on
    symptom is folded under) ending in ``(follows from CODE)``, kept whole within ``limit``."""
    if not cause:
        return printable(text, limit)
    tail = f" (follows from {printable(cause, 40)})"
    return printable(text, max(1, limit - len(tail))) + tail


def _clean(value: Any) -> bool:
    """A cached string that may be printed as it is: printable, no escape sequence."""
    return isinstance(value, str) and value.isprintable() and len(value) <= 4096


def verdict_problem(doc: Any) -> Optional[str]:
    """Why a stored document (a ``--cache-ttl`` or ``--fallback-ttl`` result) is not a verdict
    health wrote (``None``: it is one): every
    field printed is a printable string (an ANSI escape or a control character is refused,
    not echoed), ``problems`` a list of them, ``not_checked`` a mapping of them."""
    if not isinstance(doc, dict) or doc.get("status") not in ("healthy", "unhealthy"):
        return "no healthy/unhealthy status"
    problems = doc.get("problems", [])
    if not isinstance(problems, list) or not all(_clean(p) for p in problems):
        return "its problems are not printable strings"
    if not _clean(doc.get("summary", "")):
        return "its summary is not a printable string"
    gaps = doc.get("not_checked", {})
    if not isinstance(gaps, dict) or not all(_clean(k) and _clean(v) for k, v in gaps.items()):
        return "its not_checked entries are not printable strings"
    if not isinstance(doc.get("findings", []), list):
        return "its findings are not a list"
    return None
