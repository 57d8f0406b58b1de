"""facts._typed reads the views' field annotations itself (typing.get_type_hints costs
~8 ms per health run, and the views' modules import typing for type checkers only): for
every view class the result equals get_type_hints', with typing's names in scope, in the
converters' form (``_annotations.normalize``)."""

from __future__ import annotations

import importlib
import os
import pathlib
import sys
import types
import typing
from typing import Any, Dict, List, Optional, Tuple, get_type_hints

import pytest

from npudoctor.facts import _annotations, _typed
from npudoctor.facts._view import View, view_fields

FACTS = pathlib.Path(_typed.__file__).resolve().parent


def _every_view() -> List[type]:
    for path in sorted(FACTS.glob("*.py")):
        if path.stem != "__init__":
            importlib.import_module(f"npudoctor.facts.{path.stem}")
    seen: List[type] = []
    todo = list(View.__subclasses__())
    while todo:
        cls = todo.pop()
        if cls not in seen:
            seen.append(cls)
            todo.extend(cls.__subclasses__())
    return seen


def test_the_hints_of_every_view_equal_get_type_hints():
    views = _every_view()
    assert len(views) >= 80  # ninety-odd views today
    for cls in views:
        names = {f.name for f in view_fields(cls)}
        hints = get_type_hints(cls, localns=vars(typing))  # typing's names, as type checkers see them
        expected = {k: _annotations.normalize(v) for k, v in hints.items() if k in names}
        assert _typed._hints(cls) == expected, cls


@pytest.mark.parametrize("future", [False, True], ids=["annotations-as-objects", "annotations-as-text"])
def test_inherited_fields_quoted_names_and_none(monkeypatch, future):
    # A view module with or without ``from __future__ import annotations``, a subclass
    # adding fields, quoted annotations (text inside the text under the future import) and
    # a name the module defines.
    module = types.ModuleType(f"npudoctor_test_views_{future}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    source = (
        ("from __future__ import annotations\n" if future else "") + "from typing import Dict, Optional\n"
        "from npudoctor.facts._view import View\n"
        "Alias = Dict[str, int]\n"
        "class Base(View):\n"
        "    a: Optional[str] = None\n"
        "    b: 'Alias' = None\n"
        "class Child(Base):\n"
        "    c: 'float' = 0.0\n"
        "    d: None = None\n"
    )
    exec(compile(source, module.__name__, "exec", dont_inherit=True), module.__dict__)  # noqa: S102
    child = module.__dict__["Child"]
    want = {"a": Optional[str], "b": Dict[str, int], "c": float, "d": type(None)}
    assert _typed._hints(child) == {k: _annotations.normalize(v) for k, v in want.items()}
    assert _typed._hints(child) == {
        k: _annotations.normalize(v) for k, v in get_type_hints(child, localns=vars(typing)).items() if k in "abcd"
    }
    assert _typed._hints(child)["a"] == _annotations.Form("union", (str, type(None)))


@pytest.mark.parametrize(
    "text, want",
    [
        ("Optional[int]", Optional[int]),
        ("Tuple[str, ...]", Tuple[str, ...]),
        ("Dict[str, JSON]", Dict[str, Any]),
        ("Optional[Dict[str, Tuple[int, ...]]]", Optional[Dict[str, Tuple[int, ...]]]),
        ("List[Optional[str]]", List[Optional[str]]),
        ("typing.Union[int, str, None]", typing.Union[int, str, None]),
        ("Literal['a', \"b\", 3]", typing.Literal["a", "b", 3]),
        ("Optional[Optional[float]]", Optional[float]),
        ("int | None", Optional[int]),
        ("'Optional[bool]'", Optional[bool]),
        ("Any", Any),
    ],
)
def test_annotation_texts_read_like_typing(text, want):
    """The reader of annotation texts gives what typing's evaluation gives, normalised."""
    assert _typed._resolve(text, "npudoctor.facts.system") == _annotations.normalize(want)


@pytest.mark.parametrize(
    "text",
    [
        "Optional[int",
        "Set[int]",
        "NoSuchView",
        "Dict[str, int]]",
        "'unterminated",
        "",
        "int..",
        "os.nope",
        "None.x",
        "os",
        "os.path.join",
        "--1",
        "List[" * 5000,
        "List['NoSuchView']",
    ],
)
def test_bad_annotation_texts_are_name_errors(text):
    """Whatever the text, a NameError naming it (shortened), never another exception."""
    with pytest.raises(NameError) as caught:
        _annotations._Parser(text, {"os": os}).parse()
    assert len(str(caught.value)) < 300


def test_a_quoted_name_inside_a_generic_is_read_as_get_type_hints_reads_it():
    namespace = {"Chip": int}
    assert _annotations._Parser("List['Chip']", namespace).parse() == _annotations.normalize(List[int])
    assert _annotations._Parser("Optional['Chip']", namespace).parse() == _annotations.normalize(Optional[int])
    # inside Literal a string is a value, not a name
    assert _annotations._Parser("Literal['Chip']", namespace).parse() == _annotations.normalize(typing.Literal["Chip"])
