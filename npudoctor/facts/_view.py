"""The base of every facts view: a read-only record declared like a dataclass.

``@dataclass(frozen=True)`` generates and ``exec``-compiles five methods per class, about
0.7 ms each on the 2-core machine; the facts views are some ninety classes and ``health``
imports them on every run (every few seconds in a container).  A :class:`View` subclass only
records its annotated fields when it is defined (microseconds); construction, equality and
``repr`` are shared generic methods.  ``dataclass_transform`` (PEP 681) tells type checkers
that subclasses behave as frozen, keyword-only dataclasses, so mypy checks construction and
forbids assignment as it would for a dataclass.

Declare a view as::

    class Toolkit(View):
        path: str = ""
        kernels: Kernels = field(default_factory=Kernels)
        version: Optional[str] = field(default=None, metadata={"doc": '"8.0.0"'})

Every field needs a default (views describe facts that may be absent).  ``metadata`` may
hold ``doc`` (schema description) and ``key`` (the JSON key, when it differs from the name).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Callable, ClassVar, Dict, Mapping, Optional, Tuple

    from typing_extensions import dataclass_transform
else:  # the decorator only informs type checkers; importing typing_extensions costs ~5 ms

    def dataclass_transform(**_kwargs):
        return lambda cls: cls


#: No default given.
MISSING: Any = object()


class ViewField:
    """One declared field of a view: name, default or default factory, metadata."""

    __slots__ = ("name", "default", "default_factory", "metadata")

    def __init__(
        self,
        default: Any = MISSING,
        default_factory: Any = MISSING,
        metadata: Optional[Mapping[str, str]] = None,
    ) -> None:
        self.name = ""
        self.default = default
        self.default_factory: Optional[Callable[[], Any]] = None if default_factory is MISSING else default_factory
        self.metadata: Mapping[str, str] = dict(metadata or {})

    def make_default(self) -> Any:
        """A fresh default value (``None`` when the field declared none)."""
        if self.default_factory is not None:
            return self.default_factory()
        return None if self.default is MISSING else self.default


def field(
    *,
    default: Any = MISSING,
    default_factory: Any = MISSING,
    metadata: Optional[Mapping[str, str]] = None,
) -> Any:
    """Declare a view field with a default (or a factory for mutable defaults) and
    ``metadata`` (``doc``, ``key``), as ``dataclasses.field`` does."""
    return ViewField(default, default_factory, metadata)


@dataclass_transform(frozen_default=True, kw_only_default=True, field_specifiers=(field,))
class View:
    """Base of the facts views: frozen, keyword-constructed, compared by value."""

    __view_fields__: ClassVar[Tuple[ViewField, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declared: Dict[str, ViewField] = {f.name: f for f in cls.__view_fields__}
        for name in cls.__dict__.get("__annotations__", {}):
            value = cls.__dict__.get(name, MISSING)
            if isinstance(value, ViewField):
                spec = value
                delattr(cls, name)  # instances hold the value; the class keeps no marker
            else:
                spec = ViewField(default=value)
            spec.name = name
            declared[name] = spec
        cls.__view_fields__ = tuple(declared.values())

    def __init__(self, **values: Any) -> None:
        store = self.__dict__
        for spec in self.__view_fields__:
            store[spec.name] = values.pop(spec.name) if spec.name in values else spec.make_default()
        if values:
            raise TypeError(f"{type(self).__name__} has no field {', '.join(sorted(values))}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is a read-only view of the facts")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is a read-only view of the facts")

    def _values(self) -> Tuple[Any, ...]:
        return tuple(self.__dict__[spec.name] for spec in self.__view_fields__)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, View)
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash((type(self), self._values()))

    def __repr__(self) -> str:
        inner = ", ".join(f"{spec.name}={self.__dict__[spec.name]!r}" for spec in self.__view_fields__)
        return f"{type(self).__name__}({inner})"


def view_fields(cls: type) -> Tuple[ViewField, ...]:
    """The declared fields of a view class, in declaration order."""
    return getattr(cls, "__view_fields__", ())


def is_view(tp: object) -> bool:
    """Whether ``tp`` is a view class."""
    return isinstance(tp, type) and issubclass(tp, View) and tp is not View
