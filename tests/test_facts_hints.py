"""The views are frozen records (``npudoctor.record.Record``) and their conversion plans come from
``typing.get_type_hints``: every view's annotations resolve in its own module, and the
annotation forms the converters accept (``Sequence``, ``Mapping``, ``X | None``, quoted
names, inherited fields) convert and describe themselves as JSON Schema."""

from __future__ import annotations

import pathlib
import sys
import types
from typing import Any, Dict, List, get_type_hints

import pytest

from npudoctor.facts import _typed
from npudoctor.facts._view import field_docs, view_fields
from npudoctor.record import Record

FACTS = pathlib.Path(_typed.__file__).resolve().parent


def _generator() -> Any:
    """``scripts/gen_view_nodes.py`` as a module (it lists every view and writes their nodes)."""
    import importlib.util

    path = pathlib.Path(__file__).resolve().parent.parent / "scripts" / "gen_view_nodes.py"
    spec = importlib.util.spec_from_file_location("gen_view_nodes", path)
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    return gen


def _every_view() -> List[type]:
    return list(_generator().views())


def test_every_view_is_a_frozen_record_whose_hints_resolve_in_its_module():
    views = _every_view()
    assert len(views) >= 80  # ninety-odd views today
    for cls in views:
        assert issubclass(cls, Record), cls
        names = [name for name, _key in view_fields(cls)]
        assert list(_typed._hints(cls)) == names, cls
        assert _typed._hints(cls) == _typed.resolve_hints(cls, by_name=True), cls  # the generated table
        hints = get_type_hints(cls)
        assert _typed.resolve_hints(cls) == {k: _typed.node_of(hints[k]) for k in names}, cls
        made = cls()
        with pytest.raises(AttributeError, match="immutable"):
            setattr(made, names[0], None)
        assert _typed.load(cls, {})[0] == made, cls


def _module(monkeypatch: pytest.MonkeyPatch, name: str, source: str) -> Dict[str, Any]:
    module = types.ModuleType(name)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(source, module.__name__, "exec", dont_inherit=True), module.__dict__)  # noqa: S102
    return module.__dict__


@pytest.mark.parametrize("future", [False, True], ids=["annotations-as-objects", "annotations-as-text"])
def test_sequence_mapping_quoted_and_inherited_fields_convert(monkeypatch, future):
    if future and sys.version_info < (3, 9):
        pytest.skip("Python 3.8's get_type_hints leaves a quoted name inside a text annotation unresolved")
    # A view module with or without ``from __future__ import annotations``: a subclass adding
    # fields, abstract collection types, quoted annotations and a name the module defines.
    ns = _module(
        monkeypatch,
        f"npudoctor_test_views_{future}",
        ("from __future__ import annotations\n" if future else "")
        + "from typing import Dict, Mapping, Optional, Sequence\n"
        "from npudoctor.facts._view import View, field\n"
        "Alias = Dict[str, int]\n"
        "class Base(View):\n"
        "    names: Sequence[str] = ()\n"
        "    b: 'Alias' = field(default_factory=dict)\n"
        "class Child(Base):\n"
        "    c: 'float' = 0.0\n"
        "    d: Optional[Mapping[str, Sequence[int]]] = None\n",
    )
    child = ns["Child"]
    raw = {"names": ["a", 2, "c"], "b": {"x": 1, "y": "no"}, "c": 3, "d": {"k": [1, 2]}}
    view, problems = _typed.load(child, raw)
    assert view == child(names=("a", "c"), b={"x": 1}, c=3.0, d={"k": (1, 2)})
    assert problems.as_list() == ["names[1]: expected str, got int", "b.y: expected int, got str"]
    schema = _typed.schema_of(child, defs := {})
    assert schema == {"$ref": "#/$defs/Child"}
    assert defs["Child"]["properties"]["names"] == {"type": "array", "items": {"type": "string"}}
    assert defs["Child"]["properties"]["d"] == {
        "anyOf": [
            {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "integer"}}},
            {"type": "null"},
        ]
    }


@pytest.mark.skipif(sys.version_info < (3, 10), reason="X | None is Python 3.10+")
def test_a_pipe_union_reads_as_optional(monkeypatch):
    ns = _module(
        monkeypatch,
        "npudoctor_test_views_pipe",
        "from npudoctor.facts._view import View\nclass Pipe(View):\n    n: int | None = None\n",
    )
    assert _typed.load(ns["Pipe"], {"n": 4})[0].n == 4
    assert _typed.load(ns["Pipe"], {"n": "4"})[1].as_list() == ["n: expected int or null, got str"]


def test_an_annotation_the_views_do_not_use_is_refused(monkeypatch):
    ns = _module(
        monkeypatch,
        "npudoctor_test_views_set",
        "from typing import FrozenSet\nfrom npudoctor.facts._view import View\n"
        "class Odd(View):\n    s: FrozenSet[int] = frozenset()\n",
    )
    with pytest.raises(TypeError, match="unsupported annotation"):
        _typed.load(ns["Odd"], {"s": [1]})


def test_field_docs_are_the_attribute_docstrings_of_the_view_and_its_bases(monkeypatch):
    from npudoctor.facts.devices import NpuSmiCommand, Visibility

    docs = field_docs(NpuSmiCommand)
    assert docs["duration"] == "seconds"
    assert docs["parsed"] == "its output gave what was asked"
    assert "argv" not in docs  # undocumented fields have no entry
    (key,) = [key for name, key in view_fields(Visibility) if name == "ascend_rt_visible_devices"]
    assert key == "ASCEND_RT_VISIBLE_DEVICES"
    assert field_docs(Visibility)["ascend_rt_visible_devices"].startswith("raw value of ASCEND_RT_VISIBLE_DEVICES")
    # a view defined where there is no source file is described without field docs
    ns = _module(
        monkeypatch,
        "npudoctor_test_views_nosource",
        'from npudoctor.facts._view import View\nclass Q(View):\n    n: int = 0\n    """a count"""\n',
    )
    assert field_docs(ns["Q"]) == {}


def test_the_generated_view_nodes_are_current():
    """``npudoctor/facts/_view_nodes.py`` is what its generator makes of the views now."""
    gen = _generator()
    assert gen.render() == gen.OUTPUT.read_text(encoding="utf-8"), "run: python scripts/regen.py"


def test_a_view_the_table_lists_with_other_fields_is_resolved_at_run_time(monkeypatch):
    """A stale entry (a field added since the table was made) is not trusted."""
    from npudoctor.facts import _view_nodes
    from npudoctor.facts.container import Capabilities

    name = f"{Capabilities.__module__}.{Capabilities.__qualname__}"
    monkeypatch.setitem(_view_nodes.NODES, name, (("source", ("leaf", "int")),))
    monkeypatch.delitem(_typed._HINTS, Capabilities, raising=False)
    hints = _typed._hints(Capabilities)
    assert hints["source"] == ("union", (("leaf", "str"), ("leaf", "null")))
    assert hints["groups"] == ("tuple", ("leaf", "int"))
    view, problems = _typed.load(Capabilities, {"source": "/proc/1/status", "groups": [1, "x"]})
    assert (view.source, view.groups) == ("/proc/1/status", (1,))
    assert problems.as_list() == ["groups[1]: expected int, got str"]


def test_values_taken_as_they_are_keep_every_check(monkeypatch):
    """A field whose value already has its type is taken without its converter; the
    converter still decides everything else: a bool is not an int, an int in a float field
    becomes a float, a str subclass is a str, and a problem deep inside says where."""
    ns = _module(
        monkeypatch,
        "npudoctor_test_as_is",
        "from typing import Dict, Optional, Tuple\n"
        "from npudoctor.facts._view import View, field\n"
        "class Leaf(View):\n"
        "    n: int = 0\n"
        "    x: float = 0.0\n"
        "    s: Optional[str] = None\n"
        "    tags: Tuple[str, ...] = ()\n"
        "class Top(View):\n"
        "    leaves: Dict[str, Tuple[Leaf, ...]] = field(default_factory=dict)\n",
    )

    class Text(str):
        pass

    raw = {"leaves": {"a": [{"n": True, "x": 2, "s": Text("t"), "tags": ["p", Text("q")]}, {"tags": ["r", 3]}]}}
    view, problems = _typed.load(ns["Top"], raw)
    first, second = view.leaves["a"]
    assert (first.n, first.x, type(first.x), first.s, first.tags) == (0, 2.0, float, "t", ("p", "q"))
    assert second.tags == ("r",)
    assert problems.as_list() == ["leaves.a[0].n: expected int, got bool", "leaves.a[1].tags[1]: expected str, got int"]
