"""Records with a dataclass's value semantics, for the classes ``health`` builds on every run.

``npudoctor health`` runs every few seconds, and a run whose inputs are unchanged spends
most of its time starting up (issue 18): importing ``dataclasses`` (with ``inspect``,
``ast``, ``dis``, ``tokenize``) and ``typing`` costs about as much as the replay of the
last verdict's reads.  The classes on that path -- the machine request, the health options,
the Host's :class:`~npudoctor.hostio.FileRead` and :class:`~npudoctor.hostio.CommandResult`,
the deadline's outcome -- are plain classes on this base instead.  A class lists its fields
in ``FIELDS`` (in order) and writes its own ``__init__`` with those parameter names (typed,
defaults visible); it gets from here what the dataclass it replaces would have generated:

* ``==`` by value with an object of the same class only (``NotImplemented`` otherwise);
* ``repr`` as ``Name(field=value, ...)``;
* :meth:`PlainRecord.replace` (``dataclasses.replace``: a new object made by ``__init__``,
  unknown names raise ``TypeError``) and :meth:`PlainRecord.as_dict`
  (``dataclasses.asdict``: records, lists, tuples and dicts copied recursively);
* :class:`FrozenRecord`: assignment and deletion raise ``AttributeError``, and the record is
  hashable by its values (``@dataclass(frozen=True)``); a plain :class:`PlainRecord` is
  mutable and unhashable (``@dataclass``).

``tests/test_plainrecord.py`` checks each class built on it against a dataclass twin.
This module imports nothing (``typing`` is read by type checkers only).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~1.5 ms)
if TYPE_CHECKING:
    from typing import Any, Dict, Tuple, TypeVar

    _R = TypeVar("_R", bound="PlainRecord")

__all__ = ["FrozenRecord", "PlainRecord"]


class PlainRecord:
    """A mutable record: the ``__eq__``, ``__repr__``, ``replace`` and ``as_dict`` of a
    dataclass over the field names in ``FIELDS`` (see the module text)."""

    #: The field names, in the order of ``__init__``'s parameters.
    FIELDS: Tuple[str, ...] = ()
    __hash__ = None  # type: ignore[assignment]  # mutable: unhashable, as a dataclass with eq

    def _values(self) -> Tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.FIELDS)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, PlainRecord)
        return self._values() == other._values()

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.FIELDS)
        return f"{self.__class__.__qualname__}({shown})"

    def replace(self: _R, **changes: Any) -> _R:
        """A new record of this class with ``changes`` (field name -> value) applied, made
        by ``__init__`` (its checks run).  Raises ``TypeError`` for a name that is not a
        field."""
        unknown = sorted(set(changes) - set(self.FIELDS))
        if unknown:
            raise TypeError(f"{self.__class__.__name__} has no field {unknown[0]!r}")
        values = {name: getattr(self, name) for name in self.FIELDS}
        values.update(changes)
        return self.__class__(**values)

    def as_dict(self) -> Dict[str, Any]:
        """The fields as a new dict; records, lists, tuples and dicts inside are copied
        recursively (``dataclasses.asdict``)."""
        return {name: _plain(getattr(self, name)) for name in self.FIELDS}


class FrozenRecord(PlainRecord):
    """An immutable, hashable record (``@dataclass(frozen=True)``).  ``__init__`` sets its
    fields with :meth:`_set`."""

    def _set(self, **values: Any) -> None:
        """Set fields while the record is made (``__init__``): ``object.__setattr__``."""
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: a {self.__class__.__name__} is frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: a {self.__class__.__name__} is frozen")

    def __hash__(self) -> int:  # type: ignore[override]  # PlainRecord sets None
        return hash(self._values())


def _plain(value: Any) -> Any:
    if isinstance(value, PlainRecord):
        return value.as_dict()
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a namedtuple, as asdict keeps it
        return type(value)(*[_plain(v) for v in value])
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return type(value)((_plain(k), _plain(v)) for k, v in value.items())
    return value
