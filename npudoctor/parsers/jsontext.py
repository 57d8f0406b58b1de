"""JSON text of files and commands npudoctor did not write, parsed without surprises.

:func:`loads` is ``json.loads`` whose only exception is :class:`json.JSONDecodeError` (a
``ValueError``), with a clear message for what plain ``json.loads`` turns into other errors:
nesting deeper than the interpreter's recursion limit (``RecursionError``: "nested too
deeply") and integers longer than :data:`MAX_INT_DIGITS` digits (Python 3.11+ refuses
``int()`` of more than 4,300 digits with a ``ValueError`` from deep inside the scanner; no
value npudoctor reads -- a size, a port, a rank, a device id -- comes near 100 digits).
Every reader of a rank table, snapshot, ``direct_url.json``, probe reply, compare input or
matrix copy goes through it; a reader that decodes bytes with a typed msgspec decoder
instead (compare's one pass over each snapshot) first asks :func:`plain` whether ``loads``
would have read them without a refusal.
"""

from __future__ import annotations

import codecs
import json
import re
import sys
from itertools import accumulate
from typing import TYPE_CHECKING

import msgspec

from npudoctor import lazyre

if TYPE_CHECKING:
    from typing import Any, Optional

#: Longest integer literal accepted (digits, sign excluded).
MAX_INT_DIGITS = 100


class Refused(json.JSONDecodeError):
    """JSON :func:`loads` refuses to read whole (too many values, nested too deeply, a
    number too long): the message says why, with no position (it is about the whole text)."""

    def __str__(self) -> str:
        return self.msg


def utf8(text: str) -> str:
    """JSON ``text`` written with ``ensure_ascii=False``, made encodable as UTF-8: a lone
    surrogate (how Python holds the bytes of a path or variable that are not UTF-8; only a
    JSON string holds one) becomes its ``\\udcXX`` escape, as ``backslashreplace`` spells
    it, which :func:`loads` reads back as the same string."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def describe(exc: ValueError, text: str) -> str:
    """Words for an error of :func:`loads` on ``text``, the same for every reader: an empty
    text, a text that ends early (a truncated file: the parser ran out of input), a refusal
    (:class:`Refused`), or the line and column of malformed JSON."""
    if not text.strip():
        return "the file is empty"
    if isinstance(exc, Refused) or not isinstance(exc, json.JSONDecodeError):
        return str(exc)
    if ends_early(exc, text):
        return f"the document ends early, at line {exc.lineno} (truncated?)"
    return f"line {exc.lineno} column {exc.colno}: {exc.msg}"


def ends_early(exc: json.JSONDecodeError, text: str) -> bool:
    """Whether the parser of ``text`` ran out of input (a truncated file): it stopped at the
    end, or inside a string never closed."""
    return exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")


def _int(text: str) -> int:
    if len(text) - (text[:1] == "-") > MAX_INT_DIGITS:
        raise ValueError(f"a number of {len(text)} digits (more than {MAX_INT_DIGITS})")
    return int(text)


#: Every digit a ``0``, every other byte a space: a run of more than :data:`MAX_INT_DIGITS`
#: digits is then one substring search away.
_DIGITS_AS_ZERO = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_LONG_DIGITS = b"0" * (MAX_INT_DIGITS + 1)


#: Every how many bytes :func:`_long_digits` looks first: a run of more than
#: :data:`MAX_INT_DIGITS` digits covers at least ``(MAX_INT_DIGITS + 1) // _STRIDE``
#: consecutive bytes of ``data[::_STRIDE]``.
_STRIDE = 25
_SAMPLED_RUN = b"0" * ((MAX_INT_DIGITS + 1) // _STRIDE)


def _long_digits(data: bytes) -> bool:
    """Whether ``data`` holds a run of more than :data:`MAX_INT_DIGITS` digits (in a number
    or a string: only then are integers read one by one, to refuse a long one clearly).
    Every 25th byte is looked at first: without a run of digits among them (a snapshot,
    whose longest runs are hashes and ids) no long run can be there."""
    if _SAMPLED_RUN not in data[::_STRIDE].translate(_DIGITS_AS_ZERO):
        return False
    return _LONG_DIGITS in data.translate(_DIGITS_AS_ZERO)


#: A backslash escape (a backslash and the byte after it): what :func:`depth` removes first.
_ESCAPE = lazyre.pattern(rb"\\.", re.DOTALL)
#: Every byte but the quote and the brackets: what :func:`depth` deletes next.
_NOT_MARKS = bytes(b for b in range(256) if b not in b'"[]{}')
#: A JSON string literal once its escapes and other bytes are gone (a quote, the brackets
#: it held, a quote): what :func:`depth` then skips.  One repeated byte class, which the
#: regex engine matches without keeping a mark per byte.
_STRING = lazyre.pattern(rb'"[^"]*"')
_OPENING = frozenset(b"[{")
#: Opening brackets as ``(``, closing ones as ``)``: :func:`depth` peels innermost pairs.
_PARENS = bytes.maketrans(b"[{]}", b"(())")


def depth(text: str) -> int:
    """The deepest nesting of objects and arrays in JSON ``text`` (``0`` for a scalar),
    brackets inside strings ignored; measured without parsing (so without recursion).
    Linear in ``text`` and in the number of brackets, in time and in memory (a few copies
    of ``text`` at most, whatever its strings hold)."""
    return _depth(text.encode("utf-8", "surrogatepass"))


def _depth(data: bytes) -> int:
    """:func:`depth` of the UTF-8 bytes of a text (its brackets, quotes and backslashes are
    the text's: no other character's encoding holds an ASCII byte)."""
    if b"\\" in data:  # a snapshot seldom holds one: the regex pass only when it does
        data = _ESCAPE.sub(b"", data)
    marks = data.translate(None, _NOT_MARKS)
    if marks.count(b'"') % 2 == 0:
        # every string closed: two quotes side by side are an empty string, or the end of
        # one and the start of the next (which then read as one string): no bracket outside
        # a string is between them, so they go before the regex does
        marks = marks.replace(b'""', b"")
    brackets = _STRING.sub(b"", marks).replace(b'"', b"")  # and an unclosed quote
    if not brackets:
        return 0
    # a balanced, shallow nesting (every JSON document npudoctor writes): as many rounds of
    # peeling the innermost pairs as it is deep; anything else is counted bracket by bracket
    peeled, rounds = brackets.translate(_PARENS), 0
    while peeled and rounds < 64:
        shorter = peeled.replace(b"()", b"")
        if len(shorter) == len(peeled):
            break
        peeled, rounds = shorter, rounds + 1
    if not peeled:
        return rounds
    return max(0, max(accumulate(1 if c in _OPENING else -1 for c in brackets)))


#: Bytes decoded at a time by :func:`text_memory`.
_PIECE = 1 << 20


def text_memory(data: bytes) -> int:
    """The bytes the characters of ``data`` (UTF-8, decoded with replacement) take in
    memory as one text, measured by decoding a piece at a time: Python stores every
    character of a text in the width of its widest one (1, 2 or 4 bytes), so one character
    past U+FFFF in otherwise ASCII ``data`` makes the text four times the size of the bytes,
    and what parsing builds from it (its strings) as much again: a cap on the bytes read
    does not bound that, this measure does."""
    if data.isascii():
        return len(data)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    view = memoryview(data)
    chars = width = 0
    for start in range(0, len(data), _PIECE):
        piece = decoder.decode(view[start : start + _PIECE], final=start + _PIECE >= len(data))
        if piece:
            chars += len(piece)
            # the width of this piece's characters: what one more copy of them adds
            width = max(width, (sys.getsizeof(piece * 2) - sys.getsizeof(piece)) // len(piece))
    return chars * width


def _refusal(data: bytes, max_values: Optional[int], max_depth: Optional[int]) -> Optional[str]:
    """Why :func:`loads` refuses JSON ``data`` before parsing it (see there), or ``None``."""
    # every value counted is one byte of the text: a text of no more bytes than the bound
    # cannot hold more, and is not counted (three passes over it)
    if max_values is not None and len(data) > max_values:
        count = data.count(b"{") + data.count(b"[") + data.count(b",")
        if count > max_values:
            return f"more than {max_values} values (up to {count})"
    if max_depth is not None:
        deepest = _depth(data)
        if deepest > max_depth:
            return f"nested {deepest} levels deep (more than {max_depth})"
    return None


def plain(data: bytes, max_values: Optional[int] = None, max_depth: Optional[int] = None) -> bool:
    """Whether :func:`loads` would read the UTF-8 JSON ``data`` with no bound refused
    (``max_values``, ``max_depth``) and no integer read one digit run at a time: then a
    msgspec decoder may read ``data`` itself, and its only errors are malformed JSON
    (``msgspec.DecodeError``), a value of another type than asked for
    (``msgspec.ValidationError``) or, past every bound here, ``RecursionError``."""
    return _refusal(data, max_values, max_depth) is None and not _long_digits(data)


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
    data = text.encode("utf-8", "surrogatepass")  # the scans below read bytes (one per character here)
    refused = _refusal(data, max_values, max_depth)
    if refused is not None:
        raise Refused(refused, text, 0)
    try:
        if _long_digits(data):
            return json.loads(text, parse_int=_int)
        try:
            # msgspec's parser (about twice as fast); what only the standard one reads
            # (NaN, Infinity, 1e400, lone surrogates) and the messages of malformed JSON
            # are json.loads's
            return msgspec.json.decode(text)
        except (msgspec.DecodeError, UnicodeError):
            return json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise Refused("nested too deeply", text, 0) from None
    except ValueError as exc:
        raise Refused(str(exc), text, 0) from None
