"""The committed JSON Schemas (docs/schema/) are what scripts/gen_schema.py generates from the
typed facts views; they change only through ``python scripts/gen_schema.py --write``."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import jsonschema

from npudoctor.facts import SECTIONS

REPO = Path(__file__).resolve().parent.parent


def _gen():
    spec = importlib.util.spec_from_file_location("gen_schema", REPO / "scripts" / "gen_schema.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_schemas_are_generated_from_the_views() -> None:
    gen = _gen()
    assert gen.stale() == {}, "run: python scripts/gen_schema.py --write"
    assert gen.main([]) == 0


def test_the_schemas_are_valid_and_describe_every_section() -> None:
    for name in ("check.schema.json", "snapshot.schema.json"):
        schema = json.loads((REPO / "docs" / "schema" / name).read_text(encoding="utf-8"))
        jsonschema.Draft202012Validator.check_schema(schema)
        facts = schema["properties"]["facts"]["properties"]
        assert set(facts) == set(SECTIONS), name
        for section, entry in facts.items():
            assert entry != {"type": "object"}, (name, section)  # typed, not a bare object
        assert schema["$defs"]["DevicesFacts"]["properties"]["chips"] == {
            "type": "array",
            "items": {"$ref": "#/$defs/Chip"},
        }


def test_a_stale_schema_is_reported_not_rewritten(tmp_path: Path, monkeypatch) -> None:
    gen = _gen()
    for name in gen.FILES:
        (tmp_path / name).write_text((REPO / "docs" / "schema" / name).read_text(encoding="utf-8"))
    (tmp_path / "check.schema.json").write_text('{"type": "object"}\n')
    monkeypatch.setattr(gen, "SCHEMA_DIR", tmp_path)
    assert list(gen.stale()) == ["check.schema.json"]
    assert gen.main([]) == 1
    assert (tmp_path / "check.schema.json").read_text() == '{"type": "object"}\n'
    assert gen.main(["--write"]) == 0 and gen.stale() == {}
