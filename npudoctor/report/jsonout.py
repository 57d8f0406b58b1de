"""Writing a JSON document to an output stream in pieces.

``json.dumps(doc, indent=2)`` encodes in Python (the C encoder serves only ``indent=None``)
and keeps every token of the document in one list before joining them, then the joined
text is concealed and escaped whole: for the facts of a snapshot near the size bounds of
``check --from`` and ``compare`` that is several copies of the output at once.
:func:`write_json` writes the same text in pieces of about :data:`PIECE` characters, each
cut at the end of a line, so that what the stream's concealer and escaper see is whole
lines, as with one write (no pattern of theirs crosses a line).
"""

from __future__ import annotations

import json
from typing import Any, List, TextIO

__all__ = ["PIECE", "write_json"]

#: Characters gathered before a piece is written (it ends at the last newline gathered).
PIECE = 1 << 20


def write_json(stream: TextIO, doc: Any) -> None:
    """Write ``json.dumps(doc, indent=2, ensure_ascii=False) + "\\n"`` to ``stream``, in
    pieces of whole lines of about :data:`PIECE` characters."""
    encoder = json.JSONEncoder(indent=2, ensure_ascii=False)
    held: List[str] = []
    size = 0
    for token in encoder.iterencode(doc):
        held.append(token)
        size += len(token)
        if size >= PIECE:
            text = "".join(held)
            cut = text.rfind("\n") + 1
            if cut:
                stream.write(text[:cut])
                text = text[cut:]
            held, size = [text], len(text)
    held.append("\n")
    stream.write("".join(held))
