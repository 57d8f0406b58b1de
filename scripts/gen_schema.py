#!/usr/bin/env python3
"""Write the JSON Schemas of npudoctor's JSON outputs from one definition.

* ``docs/schema/snapshot.schema.json`` -- what ``npudoctor collect`` writes (and ``check
  --from`` reads);
* ``docs/schema/check.schema.json`` -- ``npudoctor check --json``: the snapshot's keys plus
  findings, summary and exit code;
* ``docs/schema/lint.schema.json`` -- ``npudoctor lint --json`` (:mod:`npudoctor.lint.schema`).

The envelope (schema_version, target, findings, ...) is written here; the ``facts`` object is
generated from the typed views (:func:`npudoctor.facts.facts_schema`), so every section and
record is described, with the views' field docs.  Views are lenient (unknown keys are ignored
so older and newer snapshots still read), and so is the schema: records do not forbid
additional properties.

Usage::

    python scripts/gen_schema.py           # exit 1 (and say which) when a committed file differs
    python scripts/gen_schema.py --write   # regenerate the committed files

``tests/test_schema_files.py`` runs the check, so a view change without regenerated schemas
fails the suite.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Dict

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script from anywhere: this checkout's npudoctor
    sys.path.insert(0, str(REPO))

from npudoctor.facts import facts_schema  # noqa: E402
from npudoctor.findings import AREAS, SEVERITIES  # noqa: E402
from npudoctor.remedies.steps import KINDS  # noqa: E402

SCHEMA_DIR = REPO / "docs" / "schema"
DRAFT = "https://json-schema.org/draft/2020-12/schema"

FINDING: Dict[str, Any] = {
    "type": "object",
    "required": ["code", "name", "severity", "area", "title", "evidence", "fix"],
    "properties": {
        "code": {"type": "string", "pattern": "^[A-Z]{2,5}[0-9]{3}$"},
        "name": {"type": "string", "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$"},
        "severity": {"enum": list(SEVERITIES)},
        "area": {"enum": list(AREAS)},
        "title": {"type": "string", "minLength": 1},
        "evidence": {"type": "array", "items": {"type": "string"}},
        "fix": {"type": "array", "items": {"type": "string"}},
        "subject": {"type": ["string", "null"]},
        "data": {"type": "object"},
        "after": {"type": "array", "items": {"type": "string"}},
        "confirmed_by": {"type": "array", "items": {"type": "string"}},
        "remedies": {"type": "array", "items": {"$ref": "#/$defs/remedy"}},
    },
}

#: One step of a finding's fix as data; the kinds come from the remedies package itself.
REMEDY: Dict[str, Any] = {
    "description": "One step of a finding's fix as data (npudoctor/remedies/steps.py); shell is the fix line it renders to",
    "type": "object",
    "required": ["kind", "shell"],
    "properties": {
        "kind": {"enum": list(KINDS.values())},
        "shell": {"type": "string"},
        "command": {
            "type": ["string", "null"],
            "description": "the pasteable part of shell (no lead, no note; the flags of docker-flags); null: prose",
        },
        "lead": {"type": "string"},
        "note": {"type": "string"},
    },
}


def _facts() -> Dict[str, Any]:
    """The ``facts`` object and the ``$defs`` of its records."""
    generated = facts_schema()
    facts = {
        "type": "object",
        "description": (
            "One object per probed section, in the shape of its typed view (npudoctor/facts/); "
            "_errors maps a section whose probe raised to the error. A section this version "
            "does not know is an object."
        ),
        "properties": generated["properties"],
        "additionalProperties": {"type": "object"},
    }
    return {"facts": facts, "$defs": generated["$defs"]}


def _envelope() -> Dict[str, Any]:
    """The snapshot keys shared by ``collect`` output and ``check --json``."""
    return {
        "schema_version": {"const": 1},
        "npudoctor_version": {"type": "string"},
        "created": {"type": "string"},
        "node": {"type": "string"},
        "redacted": {"type": "boolean"},
        "target": {
            "type": "object",
            "properties": {
                "mode": {"enum": ["live", "root", "from"]},
                "root": {"type": ["string", "null"]},
                "python": {"type": ["string", "null"]},
                "user": {"type": ["string", "null"]},
            },
            "required": ["mode"],
        },
        "matrix": {"type": "object"},
    }


def snapshot_schema() -> Dict[str, Any]:
    """JSON Schema of a snapshot (``npudoctor collect``)."""
    facts = _facts()
    return {
        "$schema": DRAFT,
        "$id": "https://npudoctor.invalid/schema/snapshot-1.json",
        "title": "npudoctor collect snapshot (schema_version 1)",
        "type": "object",
        "required": ["schema_version", "npudoctor_version", "created", "node", "redacted", "target", "matrix", "facts"],
        "properties": {**_envelope(), "facts": facts["facts"]},
        "$defs": facts["$defs"],
    }


def check_schema() -> Dict[str, Any]:
    """JSON Schema of ``npudoctor check --json``."""
    facts = _facts()
    defs = {"finding": FINDING, "remedy": REMEDY, **facts["$defs"]}
    return {
        "$schema": DRAFT,
        "$id": "https://npudoctor.invalid/schema/check-1.json",
        "title": "npudoctor check --json (schema_version 1)",
        "type": "object",
        "required": [
            "schema_version",
            "npudoctor_version",
            "created",
            "node",
            "target",
            "matrix",
            "facts",
            "findings",
            "summary",
            "exit_code",
        ],
        "properties": {
            **_envelope(),
            "facts": facts["facts"],
            "findings": {"type": "array", "items": {"$ref": "#/$defs/finding"}},
            "summary": {
                "type": "object",
                "required": ["error", "warning", "info"],
                "properties": {
                    "error": {"type": "integer", "minimum": 0},
                    "warning": {"type": "integer", "minimum": 0},
                    "info": {"type": "integer", "minimum": 0},
                },
            },
            "exit_code": {"enum": [0, 1]},
            "not_checked": {
                "type": "object",
                "description": "areas that were probed but could not be judged, with the reason "
                "(npudoctor.facts.coverage.unchecked): neither a problem nor a clean bill",
                "additionalProperties": {"type": "string"},
            },
            "ignored": {
                "type": "array",
                "description": "findings silenced by --ignore or an ignore list of .npudoctor.toml: "
                "their code, title and what silenced them (left out of findings, summary and exit_code)",
                "items": {
                    "type": "object",
                    "required": ["code", "title", "by"],
                    "properties": {
                        "code": {"type": "string"},
                        "title": {"type": "string"},
                        "by": {"type": "string"},
                    },
                },
            },
        },
        "$defs": defs,
    }


#: Committed file name → its generator.
def lint_schema() -> Dict[str, Any]:
    from npudoctor.lint.schema import lint_schema as build

    return build()


FILES = {"check.schema.json": check_schema, "snapshot.schema.json": snapshot_schema, "lint.schema.json": lint_schema}


def render(schema: Dict[str, Any]) -> str:
    """The committed text of a schema (stable: 2-space indent, a final newline)."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def stale() -> Dict[str, str]:
    """File name → generated text, for every committed schema that differs (or is missing)."""
    out: Dict[str, str] = {}
    for name, build in FILES.items():
        text = render(build())
        path = SCHEMA_DIR / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            out[name] = text
    return out


def main(argv: Any = None) -> int:
    """Check (default) or ``--write`` the committed schemas; exit 1 when stale in check mode."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="regenerate docs/schema/*.schema.json")
    args = parser.parse_args(argv)
    changed = stale()
    if args.write:
        for name, text in changed.items():
            (SCHEMA_DIR / name).write_text(text, encoding="utf-8")
            print(f"wrote docs/schema/{name}")
        return 0
    for name in changed:
        print(f"docs/schema/{name} differs from the views: run python scripts/gen_schema.py --write", file=sys.stderr)
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
