"""A cheaper frozen dataclass: the value methods shared instead of generated per class.

``@dataclass(frozen=True)`` ``exec``-compiles six methods per class (``__init__``,
``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__``, ``__delattr__``): 0.3-1 ms a class
on the 2-core machine, and ``health`` defines some fifty dataclasses on every run.  A class
declared ::

    @dataclass(frozen=True, eq=False, repr=False)
    class Export(ValueRecord):
        var: str
        value: Optional[str]

gets only ``__init__`` and the frozen ``__setattr__``/``__delattr__`` generated (about half
the cost) and inherits :class:`ValueRecord`'s ``__eq__``, ``__hash__`` and ``__repr__``,
which give what ``dataclass(frozen=True)`` would generate: equality of the same class only
(``NotImplemented`` otherwise) over the fields with ``compare=True``, the hash of the tuple
of the fields with ``hash=True`` (or ``hash=None`` and ``compare=True``), and
``QualName(a=1, b='x')`` over the fields with ``repr=True`` ("..." for a recursive
reference).  ``dataclasses.fields``, ``asdict``, ``replace`` and ``FrozenInstanceError``
work as for any dataclass.  ``tests/test_valuerecord.py`` compares every class that uses
it with a plain ``dataclass(frozen=True)`` twin.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Dict, Set, Tuple

__all__ = ["ValueRecord"]

# Per class: (compared, hashed, shown) field names, computed on first use.
_NAMES: Dict[type, Tuple[Tuple[str, ...], Tuple[str, ...], Tuple[str, ...]]] = {}
# (id(object), thread) pairs whose repr is being made: a recursive reference shows "...".
_IN_REPR: Set[Tuple[int, int]] = set()


def _names(cls: type) -> Tuple[Tuple[str, ...], Tuple[str, ...], Tuple[str, ...]]:
    found = _NAMES.get(cls)
    if found is None:
        fields = dataclasses.fields(cls)
        found = (
            tuple(f.name for f in fields if f.compare),
            tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash)),
            tuple(f.name for f in fields if f.repr),
        )
        _NAMES[cls] = found
    return found


class ValueRecord:
    """Base of ``@dataclass(frozen=True, eq=False, repr=False)`` classes: the ``__eq__``,
    ``__hash__`` and ``__repr__`` of a frozen dataclass (see the module docstring)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        names = _names(self.__class__)[0]
        return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, n) for n in _names(self.__class__)[1]))

    def __repr__(self) -> str:
        key = (id(self), threading.get_ident())
        if key in _IN_REPR:
            return "..."
        _IN_REPR.add(key)
        try:
            shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in _names(self.__class__)[2])
        finally:
            _IN_REPR.discard(key)
        return f"{self.__class__.__qualname__}({shown})"
