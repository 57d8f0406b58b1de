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

:func:`record` goes further, for the classes defined on every short run (``devices``,
issue 18): ``@record(frozen=True, eq=False, repr=False)`` in place of ``@dataclass(...)``
(the same arguments; type checkers see :func:`dataclasses.dataclass` itself, and
:func:`field` is :func:`dataclasses.field` to them) makes a class whose ``__init__``,
``__eq__``, ``__hash__``, ``__repr__`` and frozen ``__setattr__``/``__delattr__`` are shared
functions instead of code generated and compiled per class, without importing
:mod:`dataclasses` (~7 ms with the ``inspect`` it imports, measured against ``python -c
pass`` here).  It is still a dataclass to the standard library: ``dataclasses.fields``,
``is_dataclass``, ``asdict`` and ``replace`` work, the ``Field`` objects made on first use
(``__dataclass_fields__`` is computed then, importing :mod:`dataclasses`).  Defaults,
``default_factory``, ``FrozenInstanceError``, the mutable-default and field-order errors
and the error of a missing or unexpected argument are those of the dataclass; what it does
not support (``init=False`` fields, ``InitVar``, keyword-only fields, ``order``, ``slots``,
``__post_init__``, a dataclass base) is refused with ``TypeError`` when the class is
defined.  ``tests/test_valuerecord.py`` compares every class made by it with its plain
dataclass twin.
"""

from __future__ import annotations

from _thread import get_ident
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Optional, Set, Tuple

__all__ = ["ValueRecord", "asdict", "field", "record", "replace"]

# Per class: (compared, hashed, shown) field names, computed on first use.
_NAMES: Dict[type, Tuple[Tuple[str, ...], Tuple[str, ...], Tuple[str, ...]]] = {}
# (id(object), thread) pairs whose repr is being made: a recursive reference shows "...".
_IN_REPR: Set[Tuple[int, int]] = set()
#: Every class :func:`record` made, with its ``(repr, eq, frozen)`` (the tests compare each
#: with its plain dataclass twin).
RECORDS: List[Tuple[type, Tuple[bool, bool, bool]]] = []


def _names(cls: type) -> Tuple[Tuple[str, ...], Tuple[str, ...], Tuple[str, ...]]:
    found = _NAMES.get(cls)
    if found is None:
        fields: Any = getattr(cls, "__record_fields__", None)
        if fields is None:  # a plain dataclass on ValueRecord
            import dataclasses

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
        key = (id(self), get_ident())
        if key in _IN_REPR:
            return "..."
        _IN_REPR.add(key)
        try:
            shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in _names(self.__class__)[2])
        finally:
            _IN_REPR.discard(key)
        return f"{self.__class__.__qualname__}({shown})"


class _Missing:
    """No value given (:data:`dataclasses.MISSING` once the fields are materialised)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


_MISSING: Any = _Missing()


class _Field:
    """What :func:`field` was told (the arguments of :func:`dataclasses.field`), and the
    field's ``name`` and ``type`` once its class is made."""

    __slots__ = ("name", "type", "default", "default_factory", "init", "repr", "hash", "compare", "metadata", "kw_only")

    def __init__(
        self,
        default: Any = _MISSING,
        default_factory: Any = _MISSING,
        init: bool = True,
        repr: bool = True,
        hash: Optional[bool] = None,
        compare: bool = True,
        metadata: Any = None,
        kw_only: Any = _MISSING,
    ) -> None:
        if default is not _MISSING and default_factory is not _MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name = ""
        self.type: Any = None
        self.default = default
        self.default_factory = default_factory
        self.init = init
        self.repr = repr
        self.hash = hash
        self.compare = compare
        self.metadata = metadata
        self.kw_only = kw_only


if TYPE_CHECKING:
    from dataclasses import asdict, field, replace
    from dataclasses import dataclass as record
else:

    def replace(obj: Any, **changes: Any) -> Any:
        """:func:`dataclasses.replace`: a new object of ``obj``'s class made by its
        ``__init__`` with ``changes`` (field name -> value) applied; for a :func:`record`
        without importing :mod:`dataclasses`.  Raises ``TypeError`` for a name that is not
        a field (from ``__init__``, as :func:`dataclasses.replace` does)."""
        fields = getattr(type(obj), "__record_fields__", None)
        if fields is None:
            import dataclasses

            return dataclasses.replace(obj, **changes)
        values = {f.name: getattr(obj, f.name) for f in fields}
        values.update(changes)
        return type(obj)(**values)

    def asdict(obj: Any) -> Dict[str, Any]:
        """:func:`dataclasses.asdict`: the fields as a new dict, records, dataclasses,
        lists, tuples (named ones too) and dicts inside copied recursively; for a
        :func:`record` without importing :mod:`dataclasses`."""
        if getattr(type(obj), "__record_fields__", None) is None:
            import dataclasses

            return dataclasses.asdict(obj)
        copied: Dict[str, Any] = _plain(obj)
        return copied

    def field(**arguments: Any) -> Any:
        """:func:`dataclasses.field` for a :func:`record` class: the same keyword arguments
        (those of :class:`_Field`; an unknown one is a ``TypeError``)."""
        return _Field(**arguments)

    def record(
        cls: Any = None,
        *,
        init: bool = True,
        repr: bool = True,
        eq: bool = True,
        frozen: bool = False,
        **unsupported: Any,
    ) -> Any:
        """``@record(...)``: :func:`dataclasses.dataclass` with the same arguments, its
        methods shared instead of generated (see the module docstring).  Raises
        ``TypeError`` for what it does not support."""

        def wrap(cls: Any) -> Any:
            return _record(cls, repr=repr, eq=eq, frozen=frozen)

        if unsupported or not init:
            raise TypeError(f"record() does not support {sorted(unsupported) or ['init=False']}: use dataclass")
        return wrap if cls is None else wrap(cls)


def _is_pseudo(annotation: Any, *names: str) -> bool:
    """Whether ``annotation`` (a string under ``from __future__ import annotations``) is
    ``ClassVar[...]``/``InitVar[...]`` (``names``), as :mod:`dataclasses` tells them."""
    if isinstance(annotation, str):
        head = annotation.split("[", 1)[0].strip()
        return head in names or head.rsplit(".", 1)[-1] in names and head.split(".", 1)[0] in ("typing", "dataclasses")
    origin = getattr(annotation, "__origin__", annotation)
    return getattr(origin, "_name", None) in names or type(annotation).__name__ in names


def _fields_of(cls: Any) -> Tuple[_Field, ...]:
    """The fields of ``cls`` from its own annotations, its class attributes set as a
    dataclass sets them.  Raises ``TypeError``/``ValueError`` as :mod:`dataclasses` does,
    and ``TypeError`` for what :func:`record` does not support."""
    for base in cls.__mro__[1:]:
        if "__dataclass_fields__" in base.__dict__ or "__record_fields__" in base.__dict__:
            raise TypeError(f"{cls.__qualname__}: record() does not support a dataclass base ({base.__qualname__})")
    out: List[_Field] = []
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        if _is_pseudo(annotation, "ClassVar"):
            continue
        if _is_pseudo(annotation, "InitVar"):
            raise TypeError(f"{cls.__qualname__}.{name}: record() does not support InitVar")
        value = cls.__dict__.get(name, _MISSING)
        if type(value).__module__ == "dataclasses":
            raise TypeError(f"{cls.__qualname__}.{name}: a record's fields use npudoctor.valuerecord.field")
        spec = value if isinstance(value, _Field) else _Field(default=value)
        spec.name, spec.type = name, annotation
        if not spec.init or spec.kw_only is True:
            raise TypeError(f"{cls.__qualname__}.{name}: record() does not support init=False or keyword-only fields")
        if spec.default is not _MISSING and type(spec.default).__hash__ is None:
            raise ValueError(
                f"mutable default {type(spec.default)} for field {name} is not allowed: use default_factory"
            )
        if isinstance(value, _Field):  # as dataclass: the default stays a class attribute
            if spec.default is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, spec.default)
        out.append(spec)
    seen_default = False
    for spec in out:
        if spec.default is not _MISSING or spec.default_factory is not _MISSING:
            seen_default = True
        elif seen_default:
            raise TypeError(f"non-default argument {spec.name!r} follows default argument")
    return tuple(out)


class _LazyFields:
    """``__dataclass_fields__`` of a :func:`record` class: the :class:`dataclasses.Field`
    objects, made on first use by :mod:`dataclasses` itself (on a twin class with the same
    annotations and field arguments), then stored on the class."""

    def __get__(self, obj: Any, owner: Any) -> Dict[str, Any]:
        import dataclasses

        klass = next(k for k in owner.__mro__ if "__record_fields__" in k.__dict__)
        ns: Dict[str, Any] = {"__annotations__": {}, "__module__": klass.__module__, "__qualname__": klass.__qualname__}
        for spec in klass.__record_fields__:
            ns["__annotations__"][spec.name] = spec.type
            kw: Dict[str, Any] = {
                "init": spec.init,
                "repr": spec.repr,
                "hash": spec.hash,
                "compare": spec.compare,
                "metadata": spec.metadata,
            }
            if spec.default is not _MISSING:
                kw["default"] = spec.default
            if spec.default_factory is not _MISSING:
                kw["default_factory"] = spec.default_factory
            ns[spec.name] = dataclasses.field(**kw)
        twin: Any = dataclasses.dataclass(init=False, repr=False, eq=False)(type(klass.__name__, (), ns))
        fields: Dict[str, Any] = dict(twin.__dataclass_fields__)
        type.__setattr__(klass, "__dataclass_fields__", fields)
        return fields


_LAZY_FIELDS = _LazyFields()


def _record(cls: Any, repr: bool, eq: bool, frozen: bool) -> Any:
    if hasattr(cls, "__post_init__") or any(k in cls.__dict__ for k in ("__init__", "__setattr__", "__delattr__")):
        raise TypeError(f"{cls.__qualname__}: record() does not support __post_init__ or own __init__/__setattr__")
    own_hash = "__hash__" in cls.__dict__
    fields = _fields_of(cls)
    cls.__record_fields__ = fields
    cls.__dataclass_fields__ = _LAZY_FIELDS
    if "__match_args__" not in cls.__dict__:
        setattr(cls, "__match_args__", tuple(f.name for f in fields))  # noqa: B010 (mypy refuses the attribute)
    cls.__init__ = _init(cls, fields)
    if repr and "__repr__" not in cls.__dict__:
        cls.__repr__ = ValueRecord.__repr__
    if eq and "__eq__" not in cls.__dict__:
        cls.__eq__ = ValueRecord.__eq__
        if not own_hash:  # as dataclass: eq and frozen hash the fields, eq alone is unhashable
            cls.__hash__ = ValueRecord.__hash__ if frozen else None
    if frozen:
        cls.__setattr__, cls.__delattr__ = _frozen(cls, fields)
    RECORDS.append((cls, (repr, eq, frozen)))
    return cls


def _init(cls: Any, fields: Tuple[_Field, ...]) -> Callable[..., None]:
    """The ``__init__`` of ``cls``: positional or keyword arguments in field order, defaults
    and default factories, and the ``TypeError`` a dataclass raises for a wrong call."""
    names = tuple(f.name for f in fields)
    known = frozenset(names)
    defaults = tuple(f.default for f in fields)
    factories = tuple(f.default_factory for f in fields)
    missing = _MISSING
    put = object.__setattr__
    where = f"{cls.__qualname__}.__init__()"
    least = 1 + sum(1 for d, f in zip(defaults, factories) if d is missing and f is missing)
    most = 1 + len(names)
    takes = f"{most}" if least == most else f"from {least} to {most}"
    spec = tuple(zip(names, defaults, factories))

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        given = len(args)
        if given:
            if given >= most:
                raise TypeError(f"{where} takes {takes} positional arguments but {given + 1} were given")
            for name, value in zip(names, args):
                if name in kwargs:
                    raise TypeError(f"{where} got multiple values for argument '{name}'")
                put(self, name, value)
        if kwargs:
            for name in kwargs:
                if name not in known:
                    raise TypeError(f"{where} got an unexpected keyword argument '{name}'")
        for name, default, factory in spec[given:] if given else spec:
            if name in kwargs:
                put(self, name, kwargs[name])
            elif default is not missing:
                put(self, name, default)
            elif factory is not missing:
                put(self, name, factory())
            else:
                raise _missing(where, names[given:], defaults[given:], factories[given:], kwargs)

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


def _missing(where: str, names: Any, defaults: Any, factories: Any, given: Any) -> TypeError:
    """The ``TypeError`` Python raises for the required arguments not given."""
    left = [
        f"'{n}'" for n, d, f in zip(names, defaults, factories) if n not in given and d is _MISSING and f is _MISSING
    ]
    listed = left[0] if len(left) == 1 else ", ".join(left[:-1]) + ("," if len(left) > 2 else "") + " and " + left[-1]
    plural = "argument" if len(left) == 1 else "arguments"
    return TypeError(f"{where} missing {len(left)} required positional {plural}: {listed}")


def _frozen(cls: Any, fields: Tuple[_Field, ...]) -> Tuple[Any, Any]:
    """The ``__setattr__`` and ``__delattr__`` of a frozen dataclass ``cls``
    (``dataclasses.FrozenInstanceError``, imported when raised)."""
    names = frozenset(f.name for f in fields)

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            from dataclasses import FrozenInstanceError

            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            from dataclasses import FrozenInstanceError

            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return __setattr__, __delattr__


def _plain(value: Any) -> Any:
    """``value`` copied as :func:`dataclasses.asdict` copies what a field holds."""
    if value is None or isinstance(value, (str, int, float, bytes)):
        return value  # what deepcopy gives back as it is
    if getattr(type(value), "__record_fields__", None) is not None:
        return {f.name: _plain(getattr(value, f.name)) for f in type(value).__record_fields__}
    if hasattr(type(value), "__dataclass_fields__"):
        import dataclasses

        return dataclasses.asdict(value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*[_plain(v) for v in value])
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return type(value)((_plain(k), _plain(v)) for k, v in value.items())
    import copy

    return copy.deepcopy(value)
