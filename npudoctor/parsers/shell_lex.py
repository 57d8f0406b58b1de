"""The tokenizer of the shell subset :mod:`npudoctor.parsers.set_env` interprets: logical
lines (backslash continuations), commands separated by ``;``/``&&``/``||``, pipeline
stages, assignment words and matching brackets -- all quote-aware, none expanding
anything.  Pure functions of text; :class:`Unsupported` for input outside the subset."""

from __future__ import annotations

from typing import List, Optional, Tuple

#: Lines of one script interpreted at most (a guard against huge inputs).
MAX_LINES = 5000


class Unsupported(Exception):
    """A construct outside the interpreted shell subset (the message says which)."""


def split_commands(line: str) -> List[Tuple[str, str]]:
    """Split a logical line on unquoted ``;``, ``&&``, ``||`` (and drop a ``#`` comment).

    Returns ``[(operator_before, command)]``; the first operator is ``";"``.
    """
    out: List[Tuple[str, str]] = []
    buf: List[str] = []
    op = ";"
    i, n = 0, len(line)
    quote: Optional[str] = None
    depth = 0
    while i < n:
        c = line[i]
        if quote:
            buf.append(c)
            if c == "\\" and quote == '"' and i + 1 < n:
                buf.append(line[i + 1])
                i += 2
                continue
            if c == quote:
                quote = None
            i += 1
            continue
        if c in "'\"`":
            quote = c
            buf.append(c)
        elif c == "\\" and i + 1 < n:
            buf.append(line[i : i + 2])
            i += 2
            continue
        elif c == "$" and line[i + 1 : i + 2] in ("(", "{"):
            depth += 1
            buf.append(line[i : i + 2])
            i += 2
            continue
        elif c in "({" and depth:
            depth += 1
            buf.append(c)
        elif c in ")}" and depth:
            depth -= 1
            buf.append(c)
        elif depth:
            buf.append(c)
        elif c == "#" and (not buf or buf[-1] in " \t"):
            break
        elif c == ";":
            out.append((op, "".join(buf).strip()))
            buf, op = [], ";"
        elif line.startswith("&&", i) or line.startswith("||", i):
            out.append((op, "".join(buf).strip()))
            buf, op = [], line[i : i + 2]
            i += 2
            continue
        else:
            buf.append(c)
        i += 1
    out.append((op, "".join(buf).strip()))
    return [(o, c) for o, c in out if c]


def find_close(text: str, start: int, open_c: str, close_c: str) -> int:
    """Index of the bracket closing the one opened just before ``start``."""
    depth = 1
    i = start
    quote: Optional[str] = None
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "'\"" and open_c == "(":
            quote = c
        elif c == "\\":
            i += 2
            continue
        elif c == open_c:
            depth += 1
        elif c == close_c:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise Unsupported(f"unbalanced {open_c}")


def split_pipe(command: str) -> List[str]:
    """Split a command on unquoted, unparenthesized ``|`` (not ``||``) into its stripped,
    non-empty pipeline stages."""
    parts: List[str] = []
    buf: List[str] = []
    quote: Optional[str] = None
    depth = 0
    for idx, c in enumerate(command):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0 and command[idx + 1 : idx + 2] != "|":
            parts.append("".join(buf))
            buf = []
            continue
        buf.append(c)
    parts.append("".join(buf))
    return [p.strip() for p in parts if p.strip()]


def split_assignments(text: str) -> List[str]:
    """Split ``A=x B="y z"`` into assignment words keeping quotes (for later expansion)."""
    words: List[str] = []
    buf: List[str] = []
    quote: Optional[str] = None
    depth = 0
    for c in text:
        if quote:
            buf.append(c)
            if c == quote:
                quote = None
            continue
        if c in "'\"`":
            quote = c
        elif c in "({":
            depth += 1
        elif c in ")}":
            depth -= 1
        elif c in " \t" and depth <= 0:
            if buf:
                words.append("".join(buf))
                buf = []
            continue
        buf.append(c)
    if buf:
        words.append("".join(buf))
    return words


def logical_lines(text: str) -> List[Tuple[int, str]]:
    """Join backslash continuations; return ``(first line number, text)``."""
    out: List[Tuple[int, str]] = []
    buf, start = "", 0
    for n, raw in enumerate(text.splitlines()[:MAX_LINES], 1):
        if not buf:
            start = n
        if raw.endswith("\\") and not raw.endswith("\\\\"):
            buf += raw[:-1]
            continue
        buf += raw
        out.append((start, buf))
        buf = ""
    if buf:
        out.append((start, buf))
    return out
