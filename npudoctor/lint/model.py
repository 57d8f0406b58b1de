"""The records of ``npudoctor lint``: one finding per problem line, and one edit per
unambiguous rewrite (``--fix``)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from npudoctor.record import MutableRecord, Record, field


class Edit(Record):
    """Replace ``old`` by ``new`` at ``line`` (1-based), columns ``col`` to ``end_col``
    (0-based, characters of that line)."""

    line: int
    col: int
    end_col: int
    old: str
    new: str


class LintFinding(Record):
    """A CUDA-ism (or an unreadable file) at ``path`` lines ``line``..``end_line``."""

    path: str
    line: int
    end_line: int
    col: int
    code: str
    severity: str
    message: str
    fix: str
    source: str = ""
    cell: Optional[int] = None
    edits: Tuple[Edit, ...] = ()

    def sort_key(self) -> Tuple[str, int, int, int, str]:
        return (self.path, self.cell or 0, self.line, self.col, self.code)

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {
            "path": self.path,
            "line": self.line,
            "end_line": self.end_line,
            "column": self.col + 1,
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "fix": self.fix,
            "source": self.source,
            "fixable": bool(self.edits),
        }
        if self.cell is not None:
            out["cell"] = self.cell
        return out


class LintResult(MutableRecord):
    """What one run found: the findings (sorted) and the number of files linted."""

    findings: List[LintFinding] = field(default_factory=list)
    files: int = 0

    def counts(self) -> Dict[str, int]:
        out = {"error": 0, "warning": 0, "info": 0}
        for f in self.findings:
            out[f.severity] = out.get(f.severity, 0) + 1
        return out
