"""The annotations of the facts views, read without ``typing`` (issue 18: start-up).

The views' modules import ``typing`` for type checkers only, so their field annotations
(texts, under ``from __future__ import annotations``) are read here: :class:`_Parser`
turns ``Optional[Dict[str, JSON]]`` into a :class:`Form`, looking other names up in the
declaring module, and :func:`normalize` gives the same form for a ``typing`` construct.
``tests/test_facts_hints.py`` checks both against ``typing.get_type_hints`` on every view.
"""

from __future__ import annotations

import builtins
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Dict, List, Tuple

_NONE = type(None)

#: Generics nested deeper than this in one annotation text are refused (no view nests 5).
MAX_NESTING = 32


class _AnyValue:
    """The annotation ``Any`` (and :data:`JSON`): any value, kept as it is."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "Any"


#: ``Any`` as the converters read it (:func:`normalize`).
ANY = _AnyValue()


class Form:
    """A generic annotation as the converters read it: ``kind`` is ``"union"`` (``args``:
    the alternatives, ``NoneType`` for ``Optional``), ``"list"`` or ``"tuple"`` (``args``:
    the item), ``"dict"`` (``args``: key, value) or ``"literal"`` (``args``: the values).
    The other annotations are the types themselves (``str``, ``int``, ``float``, ``bool``,
    ``NoneType``, a view class) or :data:`ANY`.  Compared and hashed by value."""

    __slots__ = ("kind", "args")

    def __init__(self, kind: str, args: Tuple[Any, ...]) -> None:
        self.kind = kind
        self.args = args

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Form) and (self.kind, self.args) == (other.kind, other.args)

    def __hash__(self) -> int:
        return hash((self.kind, self.args))

    def __repr__(self) -> str:
        return f"{self.kind}[{', '.join(map(repr, self.args))}]"


#: Generic names of annotations (``typing``'s and the builtins'), by the kind of :class:`Form`.
_GENERIC = {
    "Optional": "optional",
    "Union": "union",
    "List": "list",
    "list": "list",
    "Tuple": "tuple",
    "tuple": "tuple",
    "Dict": "dict",
    "dict": "dict",
    "Literal": "literal",
}


def _form(kind: str, args: List[Any]) -> Any:
    """The :class:`Form` of ``kind`` subscripted with ``args`` (``Optional[X]`` is the union
    of ``X`` and ``NoneType``; a one-member union is its member, as in ``typing``)."""
    if kind in ("optional", "union"):
        flat: List[Any] = []
        for a in args + ([_NONE] if kind == "optional" else []):
            for member in a.args if isinstance(a, Form) and a.kind == "union" else (a,):
                if member not in flat:
                    flat.append(member)
        return flat[0] if len(flat) == 1 else Form("union", tuple(flat))
    if kind in ("list", "tuple"):
        return Form(kind, (args[0] if args else ANY,))
    if kind == "dict":
        return Form("dict", (args[0], args[1]) if len(args) == 2 else (str, ANY))
    return Form("literal", tuple(args))


class _Parser:
    """Reads one annotation text (``Optional[Dict[str, JSON]]``, ``Tuple[Chip, ...]``,
    ``Literal['a', 'b']``, ``X | None``) into its form; other names are looked up in the
    declaring module's namespace, then the builtins, without ``eval``."""

    def __init__(self, text: str, namespace: Dict[str, Any]) -> None:
        self.text = text
        self.pos = 0
        self.namespace = namespace
        self.depth = 0

    def fail(self, why: str) -> NameError:
        text = self.text if len(self.text) <= 80 else self.text[:77] + "..."
        return NameError(f"annotation {text!r}: {why}")

    def peek(self) -> str:
        while self.pos < len(self.text) and self.text[self.pos] in " \t\n":
            self.pos += 1
        return self.text[self.pos : self.pos + 1]

    def expect(self, char: str) -> None:
        if self.peek() != char:
            raise self.fail(f"expected {char!r} at {self.pos}")
        self.pos += 1

    def parse(self) -> Any:
        value = self.union()
        if self.peek():
            raise self.fail(f"unexpected {self.text[self.pos :]!r}")
        return value

    def union(self) -> Any:
        members = [self.term()]
        while self.peek() == "|":
            self.pos += 1
            members.append(self.term())
        return members[0] if len(members) == 1 else _form("union", members)

    def term(self) -> Any:
        char = self.peek()
        if char in ("'", '"'):
            end = self.text.find(char, self.pos + 1)
            if end < 0 or "\\" in self.text[self.pos : end]:
                raise self.fail("unterminated or escaped string")
            value = self.text[self.pos + 1 : end]
            self.pos = end + 1
            return value
        start = self.pos
        while self.pos < len(self.text) and (self.text[self.pos].isalnum() or self.text[self.pos] in "_.-"):
            self.pos += 1
        word = self.text[start : self.pos]
        if not word:
            raise self.fail(f"unexpected {self.text[start:]!r}")
        if word == "...":
            return Ellipsis
        if word.isdigit() or word[:1] == "-" and word[1:].isdigit():
            return int(word)
        head = word[7:] if word.startswith("typing.") else word
        if self.peek() == "[":
            kind = _GENERIC.get(head)
            if kind is None:
                raise self.fail(f"unsupported generic {word!r}")
            self.depth += 1
            if self.depth > MAX_NESTING:
                raise self.fail(f"nested deeper than {MAX_NESTING} levels")
            self.pos += 1
            args = [self.union()]
            while self.peek() == ",":
                self.pos += 1
                args.append(self.union())
            self.expect("]")
            self.depth -= 1
            if kind != "literal":  # a quoted name inside (List['Chip']) is an annotation too
                args = [self.nested(a) if isinstance(a, str) else a for a in args]
            return _form(kind, [a for a in args if a is not Ellipsis])
        if head in ("True", "False", "None"):
            return {"True": True, "False": False, "None": _NONE}[head]
        if head == "Any":
            return ANY
        if head in _GENERIC:
            return _form(_GENERIC[head], [])
        return self.lookup(word)

    def nested(self, text: str) -> Any:
        """A quoted annotation inside this one, read in the same namespace."""
        inner = _Parser(text, self.namespace)
        inner.depth = self.depth
        return inner.parse()

    def lookup(self, dotted: str) -> Any:
        """The object a (dotted) name stands for: a type, a view class or :data:`ANY`."""
        first, *rest = dotted.split(".")
        if first in self.namespace:
            value = self.namespace[first]
        elif hasattr(builtins, first):
            value = getattr(builtins, first)
        else:
            raise self.fail(f"name {first!r} is not defined")
        for attr in rest:
            if not attr or not hasattr(value, attr):
                raise self.fail(f"{dotted!r} names nothing")
            value = getattr(value, attr)
        if isinstance(value, str):  # an alias written as text
            return self.nested(value)
        try:
            return normalize(value)
        except TypeError as exc:
            raise self.fail(str(exc)) from None


def normalize(tp: Any) -> Any:
    """An annotation object (a type, a view class, ``None``, :data:`ANY`, a ``typing``
    construct such as ``Optional[int]``, or a :class:`Form`) as the converters read it.
    ``typing`` is imported only for a ``typing`` construct.  Raises ``TypeError`` for an
    annotation the views do not use."""
    if tp is None:
        return _NONE
    if isinstance(tp, (Form, _AnyValue)):
        return tp
    typing = sys.modules.get("typing")
    if typing is not None and tp is typing.Any:  # a class since Python 3.11
        return ANY
    if isinstance(tp, type) and not hasattr(tp, "__origin__"):
        return tp
    if typing is None or _not_annotation(tp):
        raise TypeError(f"unsupported annotation {tp!r} in a facts view")
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union:
        return _form("union", [normalize(a) for a in args])
    if origin is typing.Literal:
        return _form("literal", list(args))
    kind = {list: "list", tuple: "tuple", dict: "dict"}.get(origin)
    if kind is None:
        raise TypeError(f"unsupported annotation {tp!r} in a facts view")
    return _form(kind, [normalize(a) for a in args if a is not Ellipsis])


def _not_annotation(tp: Any) -> bool:
    """Whether ``tp`` is an object no annotation names (a module, a function, a number)."""
    return not isinstance(tp, type) and not hasattr(tp, "__origin__") and tp is not None
