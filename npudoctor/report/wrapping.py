"""Prose wrapped to a width with words never split (:func:`wrap`), re-exported by
:mod:`npudoctor.report.layout`.  Kept apart because ``npudoctor explain`` wraps its page with
it and needs nothing else of the layout (which imports ``dataclasses`` and the
findings)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import List


def wrap(text: str, width: int, first: int = 0, indent: int = 0) -> List[str]:
    """``text`` wrapped to ``width`` columns: the first row after ``first`` columns already
    used (returned without them), the other rows indented by ``indent`` spaces (returned
    with them).  Words -- paths, versions, ``--flags`` -- are never split: a word longer
    than a row stands alone on its row.  Always at least one row."""
    room = max(20, width - first)
    words = _units(text.split())
    if not words:
        return [""]
    rows: List[str] = []
    current = ""
    limit = room
    for word in words:
        candidate = f"{current} {word}" if current else word
        if current and len(candidate) > limit:
            rows.append(current)
            current = word
            limit = max(20, width - indent)
        else:
            current = candidate
    rows.append(current)
    return rows[:1] + [" " * indent + r for r in rows[1:]]


def _units(words: List[str]) -> List[str]:
    """Words as units that are never split: a short option with its value (``-v /a:/a``,
    ``-e K=V``) and a command quoted in prose between backticks (```bash -c '…'```)."""
    out: List[str] = []
    glue = False
    quoted = False
    for word in words:
        if glue or quoted:
            out[-1] += " " + word
        else:
            out.append(word)
        glue = not glue and not quoted and len(word) == 2 and word.startswith("-") and word[1].isalpha()
        if word.count("`") % 2:
            quoted = not quoted
    return out
