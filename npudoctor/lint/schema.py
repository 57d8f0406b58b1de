"""The JSON Schema of ``npudoctor lint --json`` (written to ``docs/schema/lint.schema.json`` by
``scripts/gen_schema.py``; ``tests/test_lint.py`` validates real output against it)."""

from __future__ import annotations

from typing import Any, Dict

from npudoctor.lint.report import SCHEMA_VERSION


def lint_schema() -> Dict[str, Any]:
    finding = {
        "type": "object",
        "required": ["path", "line", "end_line", "column", "code", "severity", "message", "fix", "source", "fixable"],
        "properties": {
            "path": {"type": "string", "description": "the file, as reached from the paths given"},
            "line": {"type": "integer", "minimum": 1, "description": "first line (in the cell for notebooks)"},
            "end_line": {"type": "integer", "minimum": 1},
            "column": {"type": "integer", "minimum": 1},
            "code": {"type": "string", "pattern": "^LNT[0-9]{3}$", "description": "npudoctor explain CODE"},
            "severity": {"enum": ["error", "warning", "info"]},
            "message": {"type": "string"},
            "fix": {"type": "string", "description": "the NPU fix, said once"},
            "source": {"type": "string", "description": "the source line, stripped (at most 200 characters)"},
            "fixable": {"type": "boolean", "description": "whether --fix rewrites it"},
            "cell": {"type": "integer", "minimum": 1, "description": "notebook code cell (1-based over all cells)"},
        },
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "npudoctor lint --json",
        "type": "object",
        "required": ["schema_version", "tool", "files", "summary", "findings"],
        "properties": {
            "schema_version": {"const": SCHEMA_VERSION},
            "tool": {
                "type": "object",
                "required": ["name", "version"],
                "properties": {"name": {"const": "npudoctor lint"}, "version": {"type": "string"}},
            },
            "files": {"type": "integer", "minimum": 0, "description": "files linted"},
            "summary": {
                "type": "object",
                "required": ["error", "warning", "info"],
                "properties": {s: {"type": "integer", "minimum": 0} for s in ("error", "warning", "info")},
            },
            "findings": {"type": "array", "items": finding},
        },
    }
