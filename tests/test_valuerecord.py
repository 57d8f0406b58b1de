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

from npudoctor import valuerecord
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


def _made_by_record() -> List[Any]:
    """Every class :func:`npudoctor.valuerecord.record` made in npudoctor, with its
    ``(repr, eq, frozen)``: the modules using it imported first."""
    from npudoctor.valuerecord import RECORDS

    for path in sorted(PACKAGE.rglob("*.py")):
        if "@record" in path.read_text(encoding="utf-8"):
            parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
            importlib.import_module(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return [(cls, params) for cls, params in RECORDS if cls.__module__.startswith("npudoctor.")]


def _plain_twin(cls: type, repr_: bool, eq: bool, frozen: bool) -> type:
    """``cls``'s fields as the plain dataclass its decorator's arguments describe (its
    methods and base classes kept: a ValueRecord base answers eq/hash/repr as before)."""
    ns: Dict[str, Any] = {"__module__": cls.__module__, "__qualname__": cls.__qualname__, "__annotations__": {}}
    for f in dataclasses.fields(cls):
        ns["__annotations__"][f.name] = f.type
        ns[f.name] = dataclasses.field(
            default=f.default, default_factory=f.default_factory, compare=f.compare, hash=f.hash, repr=f.repr
        )
    bases = tuple(b for b in cls.__bases__ if b is not object)
    return dataclass(frozen=frozen, eq=eq, repr=repr_)(type(cls.__name__, bases, ns))


def _calls(cls: type) -> List[Any]:
    """``(args, kwargs)`` pairs: right and wrong calls of the constructor."""
    required = [
        f.name
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    names = [f.name for f in dataclasses.fields(cls)]
    base = {n: f"{n}-value" for n in required}
    out: List[Any] = [((), base), (tuple(base.values()), {}), ((), {})]
    out += [((), {**base, n: ("changed", n)}) for n in names]
    out += [(tuple(f"{n}-pos" for n in names), {})]  # every field positionally
    out += [(tuple(f"{n}-pos" for n in names) + ("extra",), {})]  # one too many
    out += [((), {**base, "no_such_field": 1})]
    if names:
        out.append((("first",), {**base, names[0]: "again"}))  # a value twice
    return out


def _outcome(make: Any, args: Any, kwargs: Any) -> Any:
    try:
        obj = make(*args, **kwargs)
    except TypeError as exc:
        return "TypeError", str(exc)
    return obj


def test_every_record_behaves_as_its_plain_dataclass_twin():
    made = _made_by_record()
    names = {cls.__qualname__ for cls, _p in made}
    # the classes defined on every devices run (issue 18)
    assert {"Options", "ProbeContext", "RuleContext", "ProbeSpec", "Snapshot", "Verdict", "Command", "Line"} <= names
    for cls, (repr_, eq, frozen) in made:
        twin = _plain_twin(cls, repr_, eq, frozen)
        pairs = []
        for args, kwargs in _calls(cls):
            ours, theirs = _outcome(cls, args, kwargs), _outcome(twin, args, kwargs)
            if isinstance(theirs, tuple):
                assert ours == theirs, (cls, args, kwargs)
                continue
            assert not isinstance(ours, tuple), (cls, ours)
            pairs.append((ours, theirs))
            assert repr(ours) == repr(theirs)
            assert dataclasses.asdict(ours) == dataclasses.asdict(theirs)
            assert [f.name for f in dataclasses.fields(ours)] == [f.name for f in dataclasses.fields(theirs)]
            copy = dataclasses.replace(ours)
            assert copy is not ours and dataclasses.asdict(copy) == dataclasses.asdict(ours)
            # valuerecord's own asdict and replace (no dataclasses import) answer alike
            assert valuerecord.asdict(ours) == dataclasses.asdict(theirs)
            mine = valuerecord.replace(ours)
            assert mine is not ours and type(mine) is cls and valuerecord.asdict(mine) == valuerecord.asdict(ours)
            first_name = dataclasses.fields(cls)[0].name
            assert getattr(valuerecord.replace(ours, **{first_name: "new"}), first_name) == "new"
            with pytest.raises(TypeError):
                valuerecord.replace(ours, no_such_field=1)
            assert (theirs.__hash__ is None) == (ours.__hash__ is None)
            if frozen and (eq or isinstance(ours, ValueRecord)):  # else both hash by identity
                assert hash(ours) == hash(theirs)
            first = dataclasses.fields(cls)[0].name
            if frozen:
                with pytest.raises(dataclasses.FrozenInstanceError):
                    setattr(ours, first, "x")
                with pytest.raises(dataclasses.FrozenInstanceError):
                    delattr(ours, first)
            else:
                setattr(ours, first, "x")
                setattr(theirs, first, "x")
                assert repr(ours) == repr(theirs)
        for ours, theirs in pairs:
            for ours2, theirs2 in pairs:
                assert (ours == ours2) == (theirs == theirs2)
                assert (ours != ours2) == (theirs != theirs2)


def test_record_refuses_what_it_does_not_support():
    from npudoctor.valuerecord import record

    with pytest.raises(TypeError):

        @record(order=True)
        class _Ordered:
            a: int

    with pytest.raises(TypeError):

        @record
        class _Post:
            a: int

            def __post_init__(self) -> None:
                pass

    with pytest.raises(TypeError):

        @record
        class _Hidden:
            a: int
            b: int = field(default=0, init=False)

    with pytest.raises(TypeError):  # a dataclass base: its fields would be missed

        @record
        class _Derived(_Odd):
            more: int = 0

    with pytest.raises(TypeError):  # dataclasses.field would be taken for a default

        @record
        class _WrongField:
            a: List[int] = field(default_factory=list)


def test_record_keeps_the_dataclass_errors():
    from npudoctor.valuerecord import field as rfield
    from npudoctor.valuerecord import record

    with pytest.raises(ValueError, match="mutable default"):

        @record
        class _Mutable:
            a: List[int] = []  # noqa: RUF012

    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):

        @record
        class _Order:
            a: int = 0
            b: int  # type: ignore[misc]

    with pytest.raises(ValueError, match="both default and default_factory"):
        rfield(default=1, default_factory=list)

    @record
    class _Kept:
        a: int = 1
        b: List[int] = rfield(default_factory=list)

    # as dataclass: a default stays a class attribute, a factory's field is none
    assert _Kept.a == 1 and not hasattr(_Kept, "b") and _Kept().b == [] and _Kept().b is not _Kept().b
    assert dataclasses.is_dataclass(_Kept) and [f.name for f in dataclasses.fields(_Kept)] == ["a", "b"]


def test_record_modules_do_not_import_dataclasses():
    """A record class is made without :mod:`dataclasses` (~7 ms with inspect): no module
    defining one imports it at its top (only where a Field, asdict or replace is needed)."""
    import re

    users = [p for p in sorted(PACKAGE.rglob("*.py")) if "@record" in p.read_text(encoding="utf-8")]
    assert len(users) >= 10
    for path in users:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"^(from dataclasses import|import dataclasses)", text, re.M), path
    code = (
        "import sys;"
        "import npudoctor.valuerecord, npudoctor.remedies.steps, npudoctor.knowledge.grades, "
        "npudoctor.report.layout, npudoctor.knowledge.chip_support;"
        "print('dataclasses' in sys.modules)"
    )
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(PACKAGE.parent))
    assert out.stdout.strip() == "False", out.stderr


def test_asdict_copies_nested_records_and_containers_as_dataclasses_does():
    from npudoctor.cli.request import MachineRequest
    from npudoctor.hostio import CommandResult
    from npudoctor.runtime.healthopts import HealthOptions

    options = HealthOptions(machine=MachineRequest(root="/r"), only=("devices", "container"))
    assert valuerecord.asdict(options) == dataclasses.asdict(options)
    assert valuerecord.asdict(options)["machine"] == {**dataclasses.asdict(MachineRequest(root="/r"))}
    result = CommandResult(argv=["npu-smi", "info"])
    copied = valuerecord.asdict(result)
    copied["argv"].append("-m")
    assert result.argv == ["npu-smi", "info"]  # a copy
    assert valuerecord.replace(options, timeout=5.0) == dataclasses.replace(options, timeout=5.0)
