"""What the official-document parsers share (:mod:`npudoctor.parsers.official`,
:mod:`npudoctor.parsers.release_notes`): the error they raise and the pipe-table cell split."""

from __future__ import annotations

from typing import List

__all__ = ["OfficialParseError", "cells"]


class OfficialParseError(ValueError):
    """The document is not a usable official source (message says why)."""


def cells(line: str) -> List[str]:
    """Cells of one Markdown pipe-table line, stripped: ``"| a | b |"`` -> ``["a", "b"]``."""
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|"):
        s = s[:-1]
    return [c.strip() for c in s.split("|")]
