"""The lint codes (declared as data in ``knowledge/data/codes/lint.toml``) and the edits of
the unambiguous rewrites (``--fix``)."""

from __future__ import annotations

import ast
from typing import Dict, List, Optional

from npudoctor.findings import Code
from npudoctor.knowledge import codes
from npudoctor.lint.model import Edit

#: The codes whose rewrites are unambiguous, applied by ``--fix`` (the others are advice).
FIXABLE = ("LNT001", "LNT002", "LNT004", "LNT005", "LNT023")


def lint_codes() -> Dict[str, Code]:
    """Every lint code, by code (their default severity and title)."""
    return {
        c.code: c
        for c in (
            codes.get("LNT001"),
            codes.get("LNT002"),
            codes.get("LNT003"),
            codes.get("LNT004"),
            codes.get("LNT005"),
            codes.get("LNT006"),
            codes.get("LNT007"),
            codes.get("LNT008"),
            codes.get("LNT009"),
            codes.get("LNT010"),
            codes.get("LNT011"),
            codes.get("LNT012"),
            codes.get("LNT013"),
            codes.get("LNT014"),
            codes.get("LNT015"),
            codes.get("LNT016"),
            codes.get("LNT017"),
            codes.get("LNT018"),
            codes.get("LNT019"),
            codes.get("LNT020"),
            codes.get("LNT021"),
            codes.get("LNT022"),
            codes.get("LNT023"),
        )
    }


def _span(node: ast.AST, lines: List[str]) -> Optional[str]:
    """The source text of a one-line ``node`` (``None`` when it spans lines or is unknown)."""
    line, end = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
    col, end_col = getattr(node, "col_offset", None), getattr(node, "end_col_offset", None)
    if line is None or end != line or col is None or end_col is None or line > len(lines):
        return None
    # ast columns are UTF-8 byte offsets
    raw = lines[line - 1].encode("utf-8")
    return str(raw[col:end_col].decode("utf-8", errors="replace"))


def _chars(lines: List[str], line: int, byte_col: int) -> int:
    return len(lines[line - 1].encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))


def replace_string(node: ast.AST, lines: List[str], new: str) -> Optional[Edit]:
    """Replace a one-line string literal by ``new`` in the same quotes."""
    text = _span(node, lines)
    if text is None or len(text) < 2 or text[0] not in "'\"" or text[-1] != text[0] or text[:3] in ('"""', "'''"):
        return None
    line, col = node.lineno, _chars(lines, node.lineno, node.col_offset)  # type: ignore[attr-defined]
    return Edit(line, col, col + len(text), text, text[0] + new + text[0])


def rename_attr(func: ast.Attribute, lines: List[str], new: str) -> Optional[Edit]:
    """Rename the attribute of a one-line ``x.attr`` (``.cuda`` → ``.npu``)."""
    text = _span(func, lines)
    if text is None or not text.endswith("." + func.attr):
        return None
    end = _chars(lines, func.lineno, func.end_col_offset or 0)
    return Edit(func.lineno, end - len(func.attr), end, func.attr, new)


def replace_node(node: ast.AST, lines: List[str], new: str) -> Optional[Edit]:
    """Replace the whole one-line expression ``node`` (``torch.cuda.device_count``)."""
    text = _span(node, lines)
    if text is None or "\n" in text or not isinstance(node, ast.Attribute):
        return None
    col = _chars(lines, node.lineno, node.col_offset)
    return Edit(node.lineno, col, col + len(text), text, new)


def replace_call(call: ast.Call, lines: List[str], new: str) -> Optional[Edit]:
    """Replace the whole one-line call ``call`` by ``new``."""
    text = _span(call, lines)
    if text is None:
        return None
    col = _chars(lines, call.lineno, call.col_offset)
    return Edit(call.lineno, col, col + len(text), text, new)


def append_keyword(call: ast.Call, lines: List[str], keyword: str) -> Optional[Edit]:
    """Add ``keyword`` as the last argument of a one-line call that has arguments."""
    text = _span(call, lines)
    if text is None or not text.endswith(")") or not (call.args or call.keywords):
        return None
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    end = _chars(lines, call.lineno, call.end_col_offset or 0)
    return Edit(call.lineno, end - 1, end, ")", f", {keyword})")


def rename_call(func: ast.AST, lines: List[str], spelled: str, new_call: str) -> Optional[Edit]:
    """Rewrite ``spelled(`` (the callee written out in full, e.g. ``torch.cuda.amp.autocast``)
    to ``new_call`` (``torch.amp.autocast("npu")``): its callee, and its arguments first."""
    text = _span(func, lines)
    if text != spelled:
        return None
    col = _chars(lines, func.lineno, func.col_offset)  # type: ignore[attr-defined]
    line = lines[func.lineno - 1]  # type: ignore[attr-defined]
    after = col + len(text)
    if line[after : after + 1] != "(":
        return None
    callee, _, args = new_call.partition("(")
    args = args[:-1] if args.endswith(")") else args
    if not args:
        return Edit(func.lineno, col, after, text, callee)  # type: ignore[attr-defined]
    empty = line[after + 1 : after + 2] == ")"
    wrapped = not line[after + 1 :].strip()  # the arguments start on the next line
    joint = "" if empty else "," if wrapped else ", "
    return Edit(func.lineno, col, after + 1, text + "(", f"{callee}({args}{joint}")  # type: ignore[attr-defined]


def visible_devices_problem(value: str, npus: Optional[int]) -> Optional[str]:
    """What the Ascend runtime does not read of an ASCEND_RT_VISIBLE_DEVICES ``value``
    (``None``: all of it, or a value built from variables, which is not judged)."""
    value = value.strip().strip("'\"")
    if not value or "$" in value or "{" in value:
        return None
    parts = value.split(",")
    ids: List[int] = []
    for part in parts:
        if not part.isdigit():
            kept = ",".join(str(i) for i in ids) or "nothing"
            return f"{value!r} holds {part!r}: the runtime reads only {kept}"
        ids.append(int(part))
    if ids != sorted(ids) or len(set(ids)) != len(ids):
        return f"{value!r} is not in ascending order, which the runtime requires"
    if npus is not None:
        beyond = [i for i in ids if i >= npus]
        if beyond:
            kept = ",".join(str(i) for i in ids if i < beyond[0]) or "nothing"
            return (
                f"{value!r} names device {beyond[0]} but the machine has {npus} NPU(s): the runtime keeps only {kept}"
            )
    return None
