"""Turn raw snapshot JSON into typed, read-only views, and describe them as JSON Schema.

One generic converter driven by the type hints of the view classes (:mod:`npudoctor.facts._view`),
so a section's shape is written once (the view class) and both validation and the published schema follow from it.

Supported annotations (as :func:`typing.get_type_hints` resolves them): ``str``, ``int``,
``float``, ``bool``, ``Optional[X]`` (or ``Union``), ``Tuple[X, ...]`` and ``Sequence[X]`` (a
JSON list, read-only), ``List[X]``, ``Dict[str, X]`` and ``Mapping[str, X]``,
``Literal[...]``, nested view classes, and :data:`JSON` (``Any``: any JSON value, kept as is,
for open-ended data such as a parsed file's key/values).  Each annotation is reduced to a
*node* (:func:`node_of`: a small tuple such as ``("list", ("leaf", "str"))``) and each node is
compiled once into a converter (a view class into a plan of its fields: JSON key, converter),
so converting a value costs no type introspection.  The nodes of the package's own views are
generated (``npudoctor/facts/_view_nodes.py``, ``scripts/regen.py``): resolving annotations
with :func:`typing.get_type_hints` evaluates each annotation's text, the largest part of
converting a section the first time in a short command; a view the table does not know (or
knows with other fields) is resolved at run time the same way the generator does.

Validation is lenient in the direction a replayed or older snapshot needs: unknown keys are
ignored, missing keys take the field's default, and a value of the wrong type becomes the
default with a problem recorded (``"chips[2].hbm_used_mb: expected int, got str"``), never an
exception.  Depth and list lengths are bounded so hostile snapshots cannot exhaust the stack.
"""

from __future__ import annotations

import collections.abc
import sys
import types
from typing import TYPE_CHECKING, Any, Literal, Union, get_args, get_origin, get_type_hints

from npudoctor.facts._view import field_docs, is_view, view_fields

if TYPE_CHECKING:
    from typing import Callable, Dict, FrozenSet, List, Optional, Set, Tuple, Type, TypeVar

    T = TypeVar("T")

#: Any JSON value, passed through unchanged (open-ended data).
JSON = Any

#: Nesting deeper than this is reported instead of followed.
MAX_DEPTH = 40

_NONE = type(None)


class Problems:
    """Problems met while converting one section: ``"path: message"`` strings, capped."""

    LIMIT = 50

    def __init__(self, strict: bool = False) -> None:
        self.items: List[str] = []
        self.dropped = 0
        #: Also report keys the view does not declare (the contract test's mode).
        self.strict = strict

    def add(self, path: Path, message: str) -> None:
        if len(self.items) < self.LIMIT:
            self.items.append(f"{_text(path) or '<section>'}: {message}")
        else:
            self.dropped += 1

    def add_line(self, line: str) -> None:
        if len(self.items) < self.LIMIT:
            self.items.append(line)
        else:
            self.dropped += 1

    def __bool__(self) -> bool:
        return bool(self.items)

    def as_list(self) -> List[str]:
        """The problems, with a final line counting those over the cap."""
        if self.dropped:
            return [*self.items, f"… and {self.dropped} more"]
        return list(self.items)


if TYPE_CHECKING:
    #: What an annotation is to the converters: ``("any",)``, ``("leaf", "str" | "int" |
    #: "float" | "bool" | "null")``, ``("union", (node, ...))``, ``("literal", (value, ...))``,
    #: ``("list" | "tuple", item node)``, ``("dict", value node)`` (keys are strings) or
    #: ``("view", cls)`` (a view class, or its qualified name in the generated table).
    Node = Tuple[Any, ...]

_HINTS: Dict[type, Dict[str, Node]] = {}

#: ``X | Y`` (Python 3.10+) is a union too.
_UNION_TYPES: Tuple[Any, ...] = (Union, types.UnionType) if sys.version_info >= (3, 10) else (Union,)
_SEQUENCES = (list, tuple, collections.abc.Sequence)
_MAPPINGS = (dict, collections.abc.Mapping)
_LEAF_NAMES = {str: "str", int: "int", float: "float", bool: "bool", _NONE: "null"}


def _hints(cls: type) -> Dict[str, Node]:
    """The nodes of a view class's fields (field name → node), read once per class: from
    the generated table when it knows the class with these fields, else resolved here
    (:func:`resolve_hints`)."""
    hints = _HINTS.get(cls)
    if hints is None:
        from npudoctor.facts._view_nodes import NODES

        names = tuple(name for name, _key in view_fields(cls))
        known = NODES.get(f"{cls.__module__}.{cls.__qualname__}")
        if known is not None and tuple(name for name, _node in known) == names:
            hints = dict(known)
        else:
            hints = resolve_hints(cls)
        _HINTS[cls] = hints
    return hints


def resolve_hints(cls: type, by_name: bool = False) -> Dict[str, Node]:
    """The nodes of a view class's fields, from :func:`typing.get_type_hints` (the views'
    modules import the names their annotations use).  ``by_name``: view classes as their
    qualified names (what the generated table holds)."""
    every = get_type_hints(cls)
    return {name: node_of(every[name], by_name) for name, _key in view_fields(cls)}


def node_of(tp: Any, by_name: bool = False) -> Node:
    """The node of a resolved annotation (see ``Node``).  Raises ``TypeError`` for an
    annotation the views do not use."""
    if tp is Any:
        return ("any",)
    if tp is None or tp in _LEAF_NAMES:
        return ("leaf", _LEAF_NAMES[_NONE if tp is None else tp])
    origin, args = get_origin(tp), get_args(tp)
    if origin in _UNION_TYPES:
        return ("union", tuple(node_of(a, by_name) for a in args))
    if origin is Literal:
        return ("literal", tuple(args))
    if origin in _SEQUENCES or tp in (list, tuple):
        items = [a for a in args if a is not Ellipsis]
        kind = "list" if origin is list or tp is list else "tuple"
        return (kind, node_of(items[0] if items else Any, by_name))
    if origin in _MAPPINGS or tp is dict:
        return ("dict", node_of(args[1] if len(args) == 2 else Any, by_name))
    if is_view(tp):
        if by_name and "." in tp.__qualname__:  # its name would not lead back to it
            raise TypeError(f"view class {tp.__qualname__} is not defined at module level")
        return ("view", f"{tp.__module__}.{tp.__qualname__}" if by_name else tp)
    raise TypeError(f"unsupported annotation {tp!r} in a facts view")


def _view_class(ref: Any) -> type:
    """The class of a ``("view", ref)`` node: the class itself, or its qualified name."""
    if isinstance(ref, str):
        import importlib

        module, _dot, name = ref.rpartition(".")
        return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]
    return ref  # type: ignore[no-any-return]


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return type(value).__name__
    if isinstance(value, str):
        return "str"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


if TYPE_CHECKING:
    #: Where a value is: ``""`` (the section), or ``(parent, key)`` pairs spelt out as
    #: ``"chips[2].hbm_used_mb"`` (:func:`_text`) only when a problem is recorded there.
    Path = Union[str, Tuple[Any, Any]]


def _text(path: Path) -> str:
    if isinstance(path, str):
        return path
    keys = []
    while not isinstance(path, str):
        path, key = path
        keys.append(key)
    for key in reversed(keys):
        if isinstance(key, int):
            path = f"{path}[{key}]"
        else:
            path = f"{path}.{key}" if path else str(key)
    return path


_MISSING = object()
#: The ``key`` of a section's own value (its path is the section itself).
_ROOT = object()

if TYPE_CHECKING:
    #: A compiled converter: ``(raw, parent_path, key, problems, depth)`` → the value, or
    #: ``_MISSING`` with a problem recorded at ``parent_path`` + ``key``.  Paths are only turned
    #: into strings for containers and for problems, never for a leaf that fits.
    Converter = Callable[[Any, Path, Any, Problems, int], Any]

_CONVERTERS: Dict[Any, Converter] = {}


def _path(parent: Path, key: Any) -> Path:
    return parent if key is _ROOT else (parent, key)


def _is_int(raw: Any) -> bool:
    return isinstance(raw, int) and not isinstance(raw, bool)


def _is_number(raw: Any) -> bool:
    if isinstance(raw, float):
        return True
    if not isinstance(raw, int) or isinstance(raw, bool):
        return False
    try:  # an int of 309 digits or more has no float: a problem, not an OverflowError later
        float(raw)
    except OverflowError:
        return False
    return True


def _is_str(raw: Any) -> bool:
    return isinstance(raw, str)


def _is_bool(raw: Any) -> bool:
    return isinstance(raw, bool)


#: Leaf name → (fits, coerce or None).
_LEAVES: Dict[str, Tuple[Callable[[Any], bool], Optional[Callable[[Any], Any]]]] = {
    "str": (_is_str, None),
    "int": (_is_int, None),
    "float": (_is_number, float),
    "bool": (_is_bool, None),
    "null": (lambda raw: raw is None, None),
}


def _any(raw: Any, parent: Path, key: Any, problems: Problems, depth: int) -> Any:
    return raw


def _compile(node: Node) -> Converter:
    """The converter of ``node`` (:func:`_hints`), built once per node (the per-class field
    plans, the leaf checks and the messages are decided here, not per value)."""
    conv = _CONVERTERS.get(node)
    if conv is None:
        conv = _make(node)
        _CONVERTERS[node] = conv
    return conv


def _leaf(name: str, expected: str) -> Converter:
    fits, coerce = _LEAVES[name]

    def leaf(raw: Any, parent: Path, key: Any, problems: Problems, depth: int) -> Any:
        if fits(raw):
            return coerce(raw) if coerce is not None else raw
        problems.add(_path(parent, key), f"expected {expected}, got {_type_name(raw)}")
        return _MISSING

    return leaf


def _make(node: Node) -> Converter:
    kind = node[0]
    if kind == "any":
        return _any
    if kind == "union":
        return _union(node)
    if kind == "literal":
        choices = node[1]
        message = f"expected one of {list(choices)}, got "

        def literal(raw: Any, parent: Path, key: Any, problems: Problems, depth: int) -> Any:
            if any(raw == choice and type(raw) is type(choice) for choice in choices):
                return raw
            problems.add(_path(parent, key), message + _short(raw))
            return _MISSING

        return literal
    if kind in ("list", "tuple"):
        return _sequence(node[1], kind == "tuple")
    if kind == "dict":
        return _mapping(node[1])
    if kind == "view":
        return _record(_view_class(node[1]))
    return _leaf(node[1], _describe(node))


_NULL = ("leaf", "null")


def _union(node: Node) -> Converter:
    nullable = _NULL in node[1]
    options = [a for a in node[1] if a != _NULL]
    expected = f"expected {_describe(node)}, got "
    if len(options) == 1 and options[0][0] == "leaf":  # Optional[str] and friends: no trial run
        fits, coerce = _LEAVES[options[0][1]]

        def optional_leaf(raw: Any, parent: Path, key: Any, problems: Problems, depth: int) -> Any:
            if raw is None and nullable:
                return None
            if fits(raw):
                return coerce(raw) if coerce is not None else raw
            problems.add(_path(parent, key), expected + _type_name(raw))
            return _MISSING

        return optional_leaf
    convs = [_compile(a) for a in options]

    def union(raw: Any, parent: Path, key: Any, problems: Problems, depth: int) -> Any:
        if raw is None and nullable:
            return None
        for conv in convs:
            trial = Problems(problems.strict)
            value = conv(raw, parent, key, trial, depth)
            if value is not _MISSING:
                for item in trial.items:
                    problems.add_line(item)
                return value
        problems.add(_path(parent, key), expected + _type_name(raw))
        return _MISSING

    return union


def _too_deep(parent: Path, key: Any, problems: Problems) -> Any:
    problems.add(_path(parent, key), f"nested deeper than {MAX_DEPTH} levels")
    return _MISSING


_TYPES = {"str": str, "int": int, "float": float, "bool": bool, "null": _NONE}


def _as_is(node: Node) -> FrozenSet[type]:
    """The types of a value that ``node``'s converter returns unchanged, without a problem
    (``Optional[str]``: ``str`` and ``None``): a plan takes such a value without calling
    the converter.  Empty for the nodes whose converters build something."""
    if node[0] == "leaf" and node[1] != "float":  # a float field makes an int a float
        return frozenset((_TYPES[node[1]],))
    if node[0] == "union" and all(a[0] == "leaf" and a[1] != "float" for a in node[1]):
        return frozenset(_TYPES[a[1]] for a in node[1])
    return frozenset()


#: Entries from which a list or map holding view records is first offered to
#: :func:`_bulk` (a record costs the field plans about five times what it costs msgspec;
#: msgspec's first use of a class costs about what a hundred records do).
BULK = 64
#: Node -> ``(the annotation msgspec converts it as, its nesting)``, or ``None``: the node
#: is not for msgspec.
_BULK_TYPES: Dict[Any, Optional[Tuple[Any, int]]] = {}


def _bulk(node: Node, raw: Any, problems: Problems, depth: int) -> Any:
    """``raw`` (a list or map of :data:`BULK` entries or more, of the container ``node``)
    converted in one ``msgspec.convert`` call when every value in it is what its view
    declares: then the result is the one the field plans build.  ``_MISSING`` otherwise
    (a value of another type: the plans convert it and record the problem), in the
    contract test's strict mode, and for nodes msgspec would not convert as the plans do
    (:func:`_bulk_type`)."""
    if node not in _BULK_TYPES:
        _BULK_TYPES[node] = _bulk_type(node)
    found = _BULK_TYPES[node]
    if found is None or problems.strict or depth + found[1] > MAX_DEPTH:
        return _MISSING
    import msgspec

    try:
        return msgspec.convert(raw, found[0])
    except TypeError:  # msgspec refuses the type itself: the plans convert this node from now on
        _BULK_TYPES[node] = None
        return _MISSING
    except Exception:  # a value it does not take (``ValidationError``; older msgspec: others)
        return _MISSING


def _bulk_type(node: Node) -> Optional[Tuple[Any, int]]:
    """``(annotation, nesting)`` of ``node`` for msgspec when it holds a view and msgspec's
    reading of every annotation inside matches the plans' (:func:`_exact`); else ``None``."""
    try:
        tp = _annotation(node)
        exact = _exact(tp, set()) if tp is not None else None
    except Exception:  # an annotation msgspec cannot resolve: not for msgspec
        return None
    if exact is None or not exact[1]:
        return None
    return tp, exact[0]


def _annotation(node: Node) -> Any:
    """The annotation a node stands for (``("tuple", X)``: ``Tuple[X, ...]``), or ``None``
    when it holds a literal."""
    from typing import Dict, List, Tuple

    kind = node[0]
    if kind == "any":
        return Any
    if kind == "leaf":
        return {v: k for k, v in _LEAF_NAMES.items()}[node[1]]
    if kind == "view":
        return _view_class(node[1])
    if kind == "union":
        args = [_annotation(a) for a in node[1]]
        return None if None in args else Union[tuple(args)]
    inner: Any = _annotation(node[1]) if kind in ("list", "tuple", "dict") else None
    if inner is None:
        return None  # a literal, or inside one
    if kind == "list":
        return List[inner]
    if kind == "tuple":
        return Tuple[inner, ...]
    return Dict[str, inner]


def _exact(tp: Any, seen: Set[type]) -> Optional[Tuple[int, bool]]:
    """``(nesting, holds a view)`` when msgspec converts a JSON value of the annotation
    ``tp`` (a view's fields as msgspec resolves them) as the plans do: leaves, ``Any``,
    ``Optional[X]``, unions of leaves and at most one view, ``Tuple[X, ...]``, ``List[X]``,
    ``Dict[str, X]`` and views that do not contain themselves; ``None`` for anything else
    (a ``Sequence`` field, which msgspec makes a list and the plans a tuple; a literal)."""
    if tp is Any or tp is None or tp in _LEAF_NAMES:
        return (0, False)
    origin, args = get_origin(tp), get_args(tp)
    if origin in _UNION_TYPES:
        others = [a for a in args if a is not _NONE]  # Optional[X]: None, else X's reading
        if len(others) > 1 and (
            sum(map(is_view, others)) > 1 or any(not is_view(a) and a not in _LEAF_NAMES for a in others)
        ):
            return None
        inner = list(args)
    elif (origin is tuple and args[1:] == (Ellipsis,)) or (origin is list and len(args) == 1):
        inner = [args[0]]
    elif origin is dict and len(args) == 2 and args[0] is str:
        inner = [args[1]]
    elif is_view(tp) and tp not in seen:
        from npudoctor.record import fields

        inner, seen = [f.type for f in fields(tp)], seen | {tp}
    else:
        return None
    found = [_exact(a, seen) for a in inner]
    parts = [p for p in found if p is not None]
    if len(parts) < len(found):
        return None
    return 1 + max((p[0] for p in parts), default=0), is_view(tp) or any(p[1] for p in parts)


def _sequence(item: Node, as_tuple: bool) -> Converter:
    conv = _compile(item)  # a view class compiles lazily: recursion is fine
    as_is = _as_is(item)
    node = ("tuple" if as_tuple else "list", item)

    def sequence(raw: Any, parent: Path, key: Any, problems: Problems, depth: int) -> Any:
        if depth > MAX_DEPTH:
            return _too_deep(parent, key, problems)
        if not isinstance(raw, list):
            problems.add(_path(parent, key), f"expected list, got {_type_name(raw)}")
            return _MISSING
        if len(raw) >= BULK and not as_is:
            done = _bulk(node, raw, problems, depth)
            if done is not _MISSING:
                return done
        if conv is _any or (as_is and all(type(x) in as_is for x in raw)):
            out = list(raw)
        else:
            path = _path(parent, key)
            out = []
            for i, item in enumerate(raw):
                value = conv(item, path, i, problems, depth + 1)
                if value is not _MISSING:
                    out.append(value)
        return tuple(out) if as_tuple else out

    return sequence


def _mapping(value: Node) -> Converter:
    conv = _compile(value)
    node = ("dict", value)

    def mapping(raw: Any, parent: Path, key: Any, problems: Problems, depth: int) -> Any:
        if depth > MAX_DEPTH:
            return _too_deep(parent, key, problems)
        if not isinstance(raw, dict):
            problems.add(_path(parent, key), f"expected object, got {_type_name(raw)}")
            return _MISSING
        if len(raw) >= BULK and conv is not _any:
            done = _bulk(node, raw, problems, depth)
            if done is not _MISSING:
                return done
        path = _path(parent, key)
        result: Dict[str, Any] = {}
        for name, item in raw.items():
            value = conv(item, path, name, problems, depth + 1)
            if value is not _MISSING:
                result[str(name)] = value
        return result

    return mapping


class _Plan:
    """How to build one view class: per field its name, JSON key and converter."""

    def __init__(self, cls: type) -> None:
        self.cls = cls
        hints = _hints(cls)
        self.fields: List[Tuple[str, str, Converter, FrozenSet[type]]] = []
        for name, key in view_fields(cls):
            node = hints[name]
            self.fields.append((name, key, _compile(node), _as_is(node)))
        self.declared = frozenset(key for _n, key, _c, _a in self.fields)

    def build(
        self, raw: Dict[str, Any], path: Path, problems: Problems, depth: int, only: Optional[FrozenSet[str]] = None
    ) -> Any:
        if problems.strict:
            for key in raw:
                if key not in self.declared:
                    problems.add((path, key), f"not declared in {self.cls.__name__}")
        values: Dict[str, Any] = {}
        for name, key, conv, as_is in self.fields:
            if key in raw and (only is None or name in only):
                value = raw[key]
                if type(value) not in as_is:
                    value = conv(value, path, key, problems, depth)
                if value is not _MISSING:
                    values[name] = value
        return self.cls(**values)


_PLANS: Dict[type, _Plan] = {}


def _plan(cls: type) -> _Plan:
    plan = _PLANS.get(cls)
    if plan is None:  # field converters of nested view classes compile lazily (_record)
        plan = _PLANS[cls] = _Plan(cls)
    return plan


def _record(cls: type) -> Converter:
    def record(raw: Any, parent: Path, key: Any, problems: Problems, depth: int) -> Any:
        if depth > MAX_DEPTH:
            return _too_deep(parent, key, problems)
        if not isinstance(raw, dict):
            problems.add(_path(parent, key), f"expected object, got {_type_name(raw)}")
            return _MISSING
        return _plan(cls).build(raw, _path(parent, key), problems, depth + 1)

    return record


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def load(
    cls: Type[T], raw: Any, problems: Optional[Problems] = None, only: Optional[FrozenSet[str]] = None
) -> Tuple[T, Problems]:
    """``(view, problems)``: ``raw`` (a JSON object) as an instance of the view class
    ``cls`` (or of a ``Dict[str, X]`` annotation, for a section that is a plain map).  Never
    raises on bad data: a non-object gives the all-defaults view with one problem; fields of
    the wrong type take their defaults (map entries of the wrong type are dropped) and are
    listed in ``problems``.  ``only``: the names of the view's top-level fields to read (the
    others keep their defaults and are not converted); ``None``: every field."""
    problems = problems if problems is not None else Problems()
    if not isinstance(raw, dict):
        problems.add("", f"expected object, got {_type_name(raw)}")
        raw = {}
    plan = _PLANS.get(cls)
    if plan is not None or is_view(cls):
        return (plan or _plan(cls)).build(raw, "", problems, 0, only), problems
    # A section that is a plain map (``_errors``): a dict in, a dict out, never _MISSING.
    return _compile(node_of(cls))(raw, "", _ROOT, problems, 0), problems


def _describe(node: Node) -> str:
    kind = str(node[0])
    if kind == "union":
        return " or ".join(_describe(a) for a in node[1])
    if kind in ("list", "tuple"):
        return "list"
    if kind in ("dict", "view"):
        return "object"
    if kind == "leaf":
        return str(node[1])
    if kind == "literal":
        return f"one of {list(node[1])}"
    return kind


_SCHEMA_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "null": "null"}


def schema_of(tp: Any, defs: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """JSON Schema (draft 2020-12) of a view annotation (a view class, a ``typing``
    construct); nested view classes go to ``defs`` (``$defs``) and are referenced by name.
    Field docs are the views' attribute docstrings (:func:`~npudoctor.facts._view.field_docs`)."""
    return _schema(node_of(tp), {} if defs is None else defs)


def _schema(node: Node, defs: Dict[str, Any]) -> Dict[str, Any]:
    kind = node[0]
    if kind == "any":
        return {}
    if kind == "union":
        parts = [_schema(a, defs) for a in node[1]]
        if all(set(p) == {"type"} and isinstance(p["type"], str) for p in parts):
            return {"type": [p["type"] for p in parts]}  # Optional[str] → ["string", "null"]
        return {"anyOf": parts}
    if kind == "literal":
        return {"enum": list(node[1])}
    if kind in ("list", "tuple"):
        return {"type": "array", "items": _schema(node[1], defs)}
    if kind == "dict":
        return {"type": "object", "additionalProperties": _schema(node[1], defs)}
    if kind == "view":
        cls = _view_class(node[1])
        name = cls.__name__
        if name not in defs:
            defs[name] = {}  # placeholder: recursion guard
            hints = _hints(cls)
            props: Dict[str, Any] = {}
            docs = field_docs(cls)
            for attr, key in view_fields(cls):
                prop = _schema(hints[attr], defs)
                doc = docs.get(attr)
                if doc:
                    prop = dict(prop, description=doc)
                props[key] = prop
            entry: Dict[str, Any] = {"type": "object", "properties": props}
            if cls.__doc__:
                entry["description"] = " ".join(cls.__doc__.split())
            defs[name] = entry
        return {"$ref": f"#/$defs/{name}"}
    return {"type": _SCHEMA_TYPES[node[1]]}


def dump(value: Any) -> Any:
    """The JSON value of a view (the inverse of :func:`load`): a view becomes an
    object with every declared field under its snapshot key (``field(name=...)``), tuples become lists, maps and open-ended :data:`JSON` values are copied.  For
    outputs that publish facts (``devices --json``) in the snapshot's own shape."""
    if is_view(type(value)):
        return {key: dump(getattr(value, name)) for name, key, _conv, _as_is in _plan(type(value)).fields}
    if isinstance(value, (tuple, list)):
        return [dump(item) for item in value]
    if isinstance(value, dict):
        return {key: dump(item) for key, item in value.items()}
    return value
