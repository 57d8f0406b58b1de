"""JSON text of files and commands npudoctor did not write, parsed without surprises.

:func:`loads` is ``json.loads`` whose only exception is :class:`json.JSONDecodeError` (a
``ValueError``), with a clear message for what plain ``json.loads`` turns into other errors:
nesting deeper than the interpreter's recursion limit (``RecursionError``: "nested too
deeply") and integers longer than :data:`MAX_INT_DIGITS` digits (Python 3.11+ refuses
``int()`` of more than 4,300 digits with a ``ValueError`` from deep inside the scanner; no
value npudoctor reads -- a size, a port, a rank, a device id -- comes near 100 digits).
Every reader of a rank table, snapshot, ``direct_url.json``, probe reply, compare input or
matrix copy goes through it.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import TYPE_CHECKING

from npudoctor import lazyre

if TYPE_CHECKING:
    from typing import Any, Optional

#: Longest integer literal accepted (digits, sign excluded).
MAX_INT_DIGITS = 100


def _int(text: str) -> int:
    if len(text) - (text[:1] == "-") > MAX_INT_DIGITS:
        raise ValueError(f"a number of {len(text)} digits (more than {MAX_INT_DIGITS})")
    return int(text)


#: A JSON string literal (its escapes included): what :func:`depth` skips.
_STRING = lazyre.pattern(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
#: What is not a bracket, once strings are gone.
_NOT_BRACKET = lazyre.pattern(r"[^\[\]{}]+")


def depth(text: str) -> int:
    """The deepest nesting of objects and arrays in JSON ``text`` (``0`` for a scalar),
    brackets inside strings ignored; measured without parsing (so without recursion).
    Linear in ``text`` and in the number of brackets."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    if not brackets:
        return 0
    return max(0, max(accumulate(1 if c in "[{" else -1 for c in brackets)))


def loads(text: str, max_values: Optional[int] = None, max_depth: Optional[int] = None) -> Any:
    """Parse ``text`` as JSON.  Raises only :class:`json.JSONDecodeError` (a ``ValueError``):
    malformed JSON as ``json.loads`` says, "nested too deeply", or "a number of N digits".

    ``max_values``: refuse, before parsing, a text that may hold more values than this (its
    ``{``, ``[`` and ``,`` counted: an upper bound on objects, arrays and members).  Each
    parsed value costs tens of bytes: a text of tiny objects grows about thirty times in
    memory, so a size cap alone does not bound what parsing takes.

    ``max_depth``: refuse, before parsing, objects and arrays nested deeper than this
    (:func:`depth`): whatever walks the parsed value later (redaction, the typed views,
    rules) must not meet a nesting that exhausts the interpreter's stack."""
    if max_values is not None:
        count = text.count("{") + text.count("[") + text.count(",")
        if count > max_values:
            raise json.JSONDecodeError(f"more than {max_values} values (up to {count})", text, 0)
    if max_depth is not None:
        deepest = depth(text)
        if deepest > max_depth:
            raise json.JSONDecodeError(f"nested {deepest} levels deep (more than {max_depth})", text, 0)
    try:
        return json.loads(text, parse_int=_int)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", text, 0) from None
    except ValueError as exc:
        raise json.JSONDecodeError(str(exc), text, 0) from None
