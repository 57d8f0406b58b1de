"""Writing a JSON document to an output stream: ``json.dumps(doc, indent=2,
ensure_ascii=False)``'s text, made fast for the usual document and bounded for a huge one.

The usual document (a ``check --json`` of a machine: about 120 KB) is encoded by msgspec in
C, compact, and indented by ``msgspec.json.format``: the same text as ``json.dumps`` but for
how a float with an exponent is spelt (``1e16`` for ``1e+16``, ``0.00001`` for ``1e-05``: the
same numbers) and a NaN or infinity (``null``, where ``json`` writes ``NaN``, which is not
JSON), in a twentieth of the time (``indent`` turns ``json``'s C encoder off).  A document
whose compact text is over :data:`PIECE` bytes, or which msgspec cannot encode (a lone
surrogate in a string: the bytes of a path or variable that are not UTF-8), is written by
``json``'s encoder in pieces of about :data:`PIECE` characters, a lone surrogate written as
its ``\\uXXXX`` escape (so that the text stays UTF-8, and ``json.loads`` gives the string
back), each piece cut at the end of a line: for the facts of a snapshot near the size bounds
of ``check --from`` and ``compare`` the whole text would be several copies of the output at
once, and what the stream's concealer and escaper see is whole lines, as with one write (no
pattern of theirs crosses a line).
"""

from __future__ import annotations

import json
from typing import Any, List, TextIO

__all__ = ["PIECE", "write_json"]

#: Characters gathered before a piece is written (it ends at the last newline gathered).
PIECE = 1 << 20


def write_json(stream: TextIO, doc: Any) -> None:
    """Write ``json.dumps(doc, indent=2, ensure_ascii=False) + "\\n"`` to ``stream`` (see
    the module docstring): at once when it is small, else in pieces of whole lines of about
    :data:`PIECE` characters."""
    import msgspec

    from npudoctor.parsers.jsontext import utf8

    try:
        compact = msgspec.json.encode(doc)
    except Exception:  # what msgspec cannot write (a lone surrogate): json's encoder below
        compact = b""
    if compact and len(compact) <= PIECE:
        stream.write(msgspec.json.format(compact, indent=2).decode("utf-8") + "\n")
        return
    del compact  # (a huge document's compact text lives this long: the pieces below peak higher)
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
                stream.write(utf8(text[:cut]))
                text = text[cut:]
            held, size = [text], len(text)
    held.append("\n")
    stream.write(utf8("".join(held)))
