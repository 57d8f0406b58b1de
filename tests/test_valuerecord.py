"""valuerecord.ValueRecord: a ``dataclass(frozen=True, eq=False, repr=False)`` on it
answers ``==``, ``hash``, ``repr``, ``fields``, ``asdict``, ``replace`` and assignment as a
plain ``dataclass(frozen=True)`` does; checked for every class that uses it."""

from __future__ import annotations

import dataclasses
import importlib
import pathlib
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import pytest

from npudoctor.valuerecord import ValueRecord

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "npudoctor"


def _users() -> List[type]:
    for path in sorted(PACKAGE.rglob("*.py")):
        if "ValueRecord" in path.read_text(encoding="utf-8") and path.name != "valuerecord.py":
            parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
            importlib.import_module(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    out: List[type] = []
    todo = list(ValueRecord.__subclasses__())
    while todo:
        cls = todo.pop()
        out.append(cls)
        todo.extend(cls.__subclasses__())
    return out


def _twin(cls: type) -> type:
    """The same fields as a plain ``dataclass(frozen=True)``."""
    ns: Dict[str, Any] = {"__module__": cls.__module__, "__qualname__": cls.__qualname__, "__annotations__": {}}
    for f in dataclasses.fields(cls):
        ns["__annotations__"][f.name] = f.type
        ns[f.name] = dataclasses.field(
            default=f.default, default_factory=f.default_factory, compare=f.compare, hash=f.hash, repr=f.repr
        )
    return dataclass(frozen=True)(type(cls.__name__, (), ns))


def _samples(cls: type) -> List[Dict[str, Any]]:
    """Keyword sets: the required fields filled, then each field changed in turn."""
    base: Dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            base[f.name] = f"{f.name}-value"
    out = [base]
    for f in dataclasses.fields(cls):
        out.append({**base, f.name: ("changed", f.name)})
    return out


def test_every_user_behaves_as_its_plain_frozen_dataclass_twin():
    users = _users()
    assert len(users) >= 16  # the remedy steps
    for cls in users:
        twin = _twin(cls)
        made = [(cls(**kw), twin(**kw)) for kw in _samples(cls)]
        for ours, theirs in made:
            assert repr(ours) == repr(theirs)
            assert hash(ours) == hash(theirs)
            assert dataclasses.asdict(ours) == dataclasses.asdict(theirs)
            assert dataclasses.replace(ours) == ours and dataclasses.replace(ours) is not ours
            with pytest.raises(dataclasses.FrozenInstanceError):
                ours.lead = "x"  # type: ignore[misc]
        for ours, theirs in made:
            for ours2, theirs2 in made:
                assert (ours == ours2) == (theirs == theirs2)
                assert (ours != ours2) == (theirs != theirs2)
        assert ours.__eq__(theirs) is NotImplemented and ours != theirs


@dataclass(frozen=True, eq=False, repr=False)
class _Odd(ValueRecord):
    shown: str
    hidden: str = field(default="h", repr=False)
    ignored: str = field(default="i", compare=False)
    unhashed: str = field(default="u", hash=False)
    again: Optional[_Odd] = None


def test_field_options_and_recursion_as_dataclass_has_them():
    twin = _twin(_Odd)
    for kw in ({"shown": "s"}, {"shown": "s", "hidden": "x", "ignored": "y", "unhashed": "z"}):
        ours, theirs = _Odd(**kw), twin(**kw)
        assert repr(ours) == repr(theirs) and hash(ours) == hash(theirs)
    assert _Odd("s", ignored="a") == _Odd("s", ignored="b")
    assert _Odd("s", unhashed="a") != _Odd("s", unhashed="b")
    assert hash(_Odd("s", unhashed="a")) == hash(_Odd("s", unhashed="b"))
    loop: List[Any] = []
    holder = _Odd(shown=loop)  # type: ignore[arg-type]
    loop.append(holder)
    assert repr(holder) == "_Odd(shown=[...], ignored='i', unhashed='u', again=None)"
    twin_loop: List[Any] = []
    twin_holder = twin(shown=twin_loop)
    twin_loop.append(twin_holder)
    assert repr(holder) == repr(twin_holder)
