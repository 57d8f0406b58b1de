"""Terminal-safe one-line texts for the runtime commands (health, exec): imported on
health's quickest path, so it holds nothing else."""

from __future__ import annotations

#: Longest problem line printed (Docker keeps only the tail of the output).
LINE_LIMIT = 240


def printable(text: str, limit: int = LINE_LIMIT) -> str:
    """``text`` as one short terminal-safe line: control characters (garbled command
    output quoted in a title) become ``?``, whitespace runs one space, at most ``limit``
    characters."""
    out = "".join(ch if ch.isprintable() else (" " if ch.isspace() else "?") for ch in str(text))
    out = " ".join(out.split())
    return out if len(out) <= limit else out[: limit - 1] + "…"
