"""Render a :class:`~npudoctor.lint.model.LintResult`: text grouped by file with the source
line, JSON (``schema_version`` 1, a ``findings`` list), SARIF 2.1.0 (code-scanning UIs) and
GitHub Actions workflow annotations (a notebook finding names its cell in each of them).  The
exit policy is :func:`exit_status`, in one place."""

from __future__ import annotations

import json
from typing import Any, Dict, List
from urllib.parse import quote

from npudoctor import __version__
from npudoctor.lint.model import LintFinding, LintResult
from npudoctor.lint.rules import lint_codes
from npudoctor.report.escape import one_line
from npudoctor.session.status import ExitStatus

SCHEMA_VERSION = 1
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
#: The code of a file that could not be linted.
UNREADABLE = "LNT016"


def exit_status(result: LintResult, strict: bool = False) -> ExitStatus:
    """0 no error (warnings and notes do not count unless ``strict``), 1 errors."""
    counts = result.counts()
    if counts["error"] or (strict and counts["warning"]):
        return ExitStatus.PROBLEMS
    return ExitStatus.OK


def _summary(result: LintResult) -> str:
    c = result.counts()
    files = f"{result.files} file{'s' if result.files != 1 else ''}"
    if not result.findings:
        return f"No CUDA-isms found in {files}.\n"
    unread = len({f.path for f in result.findings if f.code == UNREADABLE})
    not_linted = f"; {unread} not linted (LNT016)" if unread else ""
    return f"{c['error']} error(s), {c['warning']} warning(s), {c['info']} note(s) in {files}{not_linted}.\n"


def text(result: LintResult) -> str:
    out: List[str] = []
    current = None
    for f in result.findings:
        if f.path != current:
            if current is not None:
                out.append("")
            out.append(one_line(f.path))
            current = f.path
        where = f"cell {f.cell}, {f.line}:{f.col + 1}" if f.cell is not None else f"{f.line}:{f.col + 1}"
        out.append(f"  {where}  {f.severity}  {f.code}  {f.message}")
        if f.source:
            out.append(f"      | {f.source}")
        out.append(f"      fix: {f.fix}")
    if out:
        out.append("")
    return "\n".join(out) + ("\n" if out else "") + _summary(result)


def as_json(result: LintResult) -> Dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "npudoctor lint", "version": __version__},
        "files": result.files,
        "summary": result.counts(),
        "findings": [f.to_dict() for f in result.findings],
    }


def _uri(path: str) -> str:
    """A path as the URI reference SARIF's ``artifactLocation.uri`` must be (RFC 3986): "/"
    separators, every other byte outside the unreserved set percent-encoded (a space, "#", "%",
    ":" or non-ASCII letter in a file name would otherwise break or change the URI); a file
    name that is not UTF-8 keeps its own bytes."""
    return quote(path.replace("\\", "/"), safe="/", errors="surrogateescape")


def sarif(result: LintResult) -> Dict[str, Any]:
    table = lint_codes()
    used = sorted({f.code for f in result.findings})
    rules = [
        {
            "id": code,
            "name": table[code].name,
            "shortDescription": {"text": table[code].title},
            "fullDescription": {"text": table[code].explain.strip()},
            "defaultConfiguration": {"level": _SARIF_LEVEL[table[code].severity]},
        }
        for code in used
    ]
    index = {code: i for i, code in enumerate(used)}

    def one(f: LintFinding) -> Dict[str, Any]:
        region: Dict[str, Any] = {"startLine": f.line, "endLine": max(f.end_line, f.line), "startColumn": f.col + 1}
        physical: Dict[str, Any] = {"artifactLocation": {"uri": _uri(f.path)}}
        location: Dict[str, Any] = {"physicalLocation": physical}
        if f.cell is None:
            physical["region"] = region
        else:  # lines count in the cell, not in the notebook's JSON: no region of the file is claimed
            location["logicalLocations"] = [{"name": f"cell {f.cell}"}]
            location["properties"] = {"cell": f.cell, "cellRegion": region}
        out: Dict[str, Any] = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": _SARIF_LEVEL[f.severity],
            "message": {"text": f"{_where(f)}{f.message.rstrip('.')}. Fix: {f.fix}"},
            "locations": [location],
        }
        return out

    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "npudoctor",
                        "version": __version__,
                        "rules": rules,
                    }
                },
                "results": [one(f) for f in result.findings],
            }
        ],
    }


def _escape(value: str, prop: bool = False) -> str:
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        value = value.replace(":", "%3A").replace(",", "%2C")
    return value


def _where(f: LintFinding) -> str:
    """``cell N, line L: `` before the message of a notebook finding ("" for other files)."""
    return f"cell {f.cell}, line {f.line}: " if f.cell is not None else ""


def github(result: LintResult) -> str:
    """One GitHub Actions workflow command per finding (``::error file=…,line=…::…``); a
    notebook finding names its cell and line in the message and is annotated on the file
    (its lines count in the cell, not in the notebook's JSON)."""
    level = {"error": "error", "warning": "warning", "info": "notice"}
    out = []
    for f in result.findings:
        if f.cell is None:
            at = f",line={f.line},endLine={max(f.end_line, f.line)},col={f.col + 1}"
        else:
            at = ""
        props = f"file={_escape(f.path, True)}{at},title={f.code}"
        message = f.message.rstrip(".")
        out.append(f"::{level[f.severity]} {props}::{_escape(f'{_where(f)}{message}. Fix: {f.fix}')}")
    return "".join(line + "\n" for line in out)


def render(result: LintResult, form: str) -> str:
    if form == "json":
        return json.dumps(as_json(result), indent=2) + "\n"
    if form == "sarif":
        return json.dumps(sarif(result), indent=2) + "\n"
    if form == "github":
        return github(result)
    return text(result)
