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
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Optional

#: Longest integer literal accepted (digits, sign excluded).
MAX_INT_DIGITS = 100


def _int(text: str) -> int:
    if len(text) - (text[:1] == "-") > MAX_INT_DIGITS:
        raise ValueError(f"a number of {len(text)} digits (more than {MAX_INT_DIGITS})")
    return int(text)


def loads(text: str, max_values: Optional[int] = None) -> Any:
    """Parse ``text`` as JSON.  Raises only :class:`json.JSONDecodeError` (a ``ValueError``):
    malformed JSON as ``json.loads`` says, "nested too deeply", or "a number of N digits".

    ``max_values``: refuse, before parsing, a text that may hold more values than this (its
    ``{``, ``[`` and ``,`` counted: an upper bound on objects, arrays and members).  Each
    parsed value costs tens of bytes: a text of tiny objects grows about thirty times in
    memory, so a size cap alone does not bound what parsing takes."""
    if max_values is not None:
        count = text.count("{") + text.count("[") + text.count(",")
        if count > max_values:
            raise json.JSONDecodeError(f"more than {max_values} values (up to {count})", text, 0)
    try:
        return json.loads(text, parse_int=_int)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", text, 0) from None
    except ValueError as exc:
        raise json.JSONDecodeError(str(exc), text, 0) from None
