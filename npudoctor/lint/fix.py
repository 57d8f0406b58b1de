"""``npudoctor lint --fix``: apply the unambiguous rewrites only -- ``"nccl"`` → ``"hccl"``
where lint found a backend value, ``.cuda()`` → ``.npu()``, ``"cuda:N"`` → ``"npu:N"``,
``map_location="cpu"`` added to ``torch.load``, ``torch.cuda.amp.autocast``/``GradScaler``
→ the AMP API of the torch_npu line (only when it is known: ``--torch-npu`` or a machine), and
``import torch_npu`` after ``import torch`` when these rewrites need it (LNT023) -- to Python
files, formatting preserved (a text edit at the columns of the finding) and written in the
encoding the file was read in (its coding declaration, its byte-order mark).  A file is
written atomically (a temporary file beside it, then ``os.replace``), never through a
symbolic link, and only when it parsed (a file with an LNT016 finding has no edits)."""

from __future__ import annotations

import difflib
import os
import tempfile
from typing import Dict, List, Tuple

from npudoctor.hostio import read_capped
from npudoctor.lint.model import Edit, LintFinding
from npudoctor.lint.rules import FIXABLE
from npudoctor.lint.run import MAX_FILE_BYTES, decode_python

#: ``(path, old text, new text, encoding)`` of a file the rewrites change.
Change = Tuple[str, str, str, str]


def edits_by_file(findings: List[LintFinding]) -> Dict[str, List[Edit]]:
    out: Dict[str, List[Edit]] = {}
    for f in findings:
        if f.code in FIXABLE and f.cell is None:
            out.setdefault(f.path, []).extend(f.edits)
    return out


def apply(text: str, edits: List[Edit]) -> str:
    """``text`` with ``edits`` applied (right to left on each line; an edit whose ``old``
    text is not where it says is skipped)."""
    lines = text.splitlines(keepends=True)
    for e in sorted(set(edits), key=lambda e: (e.line, e.col), reverse=True):
        if not 0 < e.line <= len(lines):
            continue
        line = lines[e.line - 1]
        if line[e.col : e.end_col] != e.old:
            continue
        lines[e.line - 1] = line[: e.col] + e.new + line[e.end_col :]
    return "".join(lines)


def plan(findings: List[LintFinding]) -> List[Change]:
    """The :data:`Change` of each file the rewrites change (a file that no longer reads as
    it did when it was linted is left alone)."""
    out = []
    for path, edits in sorted(edits_by_file(findings).items()):
        if os.path.islink(path):
            continue
        raw, over = read_capped(path, MAX_FILE_BYTES, whole=True)
        if over:
            continue
        try:
            old, encoding = decode_python(raw)
        except ValueError:
            continue
        new = apply(old, edits)
        if new != old:
            out.append((path, old, new, encoding))
    return out


def diff(changes: List[Change]) -> str:
    return "".join(
        "".join(
            difflib.unified_diff(
                old.splitlines(True), new.splitlines(True), "a/" + path.lstrip("/"), "b/" + path.lstrip("/")
            )
        )
        for path, old, new, _encoding in changes
    )


def write(changes: List[Change]) -> int:
    """Write each changed file atomically, in its encoding; the number written."""
    written = 0
    for path, _old, new, encoding in changes:
        if os.path.islink(path):
            continue
        directory = os.path.dirname(os.path.abspath(path))
        mode = os.stat(path).st_mode & 0o7777
        fd, tmp = tempfile.mkstemp(prefix=".npudoctor-fix-", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding=encoding, newline="") as fh:
                fh.write(new)
            os.chmod(tmp, mode)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        written += 1
    return written
