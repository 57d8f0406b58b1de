"""Turn raw snapshot JSON into typed, read-only views, and describe them as JSON Schema.

One generic converter driven by the type hints of frozen dataclasses, so a section's shape is
written once (the view class) and both validation and the published schema follow from it.

Supported annotations: ``str``, ``int``, ``float``, ``bool``, ``Optional[X]``, ``Tuple[X, ...]`` (a JSON list, read-only), ``List[X]``,
``Dict[str, X]``, ``Literal[...]``, nested view dataclasses, and :data:`JSON` (any JSON value,
kept as is, for open-ended data such as a parsed file's key/values).

Validation is lenient in the direction a replayed or older snapshot needs: unknown keys are
ignored, missing keys take the field's default, and a value of the wrong type becomes the
default with a problem recorded (``"chips[2].hbm_used_mb: expected int, got str"``), never an
exception.  Depth and list lengths are bounded so hostile snapshots cannot exhaust the stack.
"""

from __future__ import annotations

import dataclasses
import sys
import typing
from typing import Any, Dict, List, Literal, Optional, Tuple, Type, TypeVar, Union, get_args, get_origin

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

    def add(self, path: str, message: str) -> None:
        if len(self.items) < self.LIMIT:
            self.items.append(f"{path or '<section>'}: {message}")
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


_HINTS: Dict[type, Dict[str, Any]] = {}


def _hints(cls: type) -> Dict[str, Any]:
    hints = _HINTS.get(cls)
    if hints is None:
        module = sys.modules.get(cls.__module__)
        hints = typing.get_type_hints(cls, vars(module) if module else None)
        _HINTS[cls] = hints
    return hints


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


def _default(field: dataclasses.Field) -> Any:  # type: ignore[type-arg]
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return None


def _sub(path: str, key: object) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


_MISSING = object()


def _convert(tp: Any, raw: Any, path: str, problems: Problems, depth: int) -> Any:
    """``raw`` as ``tp``, or ``_MISSING`` (with a problem recorded) when it does not fit."""
    if depth > MAX_DEPTH:
        problems.add(path, f"nested deeper than {MAX_DEPTH} levels")
        return _MISSING
    if tp is Any:
        return raw
    origin = get_origin(tp)
    if origin is Union:
        args = get_args(tp)
        if raw is None and _NONE in args:
            return None
        for arg in args:
            if arg is _NONE:
                continue
            probe = Problems(problems.strict)
            value = _convert(arg, raw, path, probe, depth)
            if value is not _MISSING:
                for item in probe.items:
                    problems.add_line(item)
                return value
        problems.add(path, f"expected {_describe(tp)}, got {_type_name(raw)}")
        return _MISSING
    if origin is Literal:
        if any(raw == choice and type(raw) is type(choice) for choice in get_args(tp)):
            return raw
        problems.add(path, f"expected one of {list(get_args(tp))}, got {_short(raw)}")
        return _MISSING
    if origin in (list, List, tuple, Tuple):
        if not isinstance(raw, list):
            problems.add(path, f"expected list, got {_type_name(raw)}")
            return _MISSING
        item_tp = (get_args(tp) or (Any,))[0]
        out = []
        for i, item in enumerate(raw):
            value = _convert(item_tp, item, _sub(path, i), problems, depth + 1)
            if value is not _MISSING:
                out.append(value)
        return tuple(out) if origin in (tuple, Tuple) else out
    if origin in (dict, Dict):
        if not isinstance(raw, dict):
            problems.add(path, f"expected object, got {_type_name(raw)}")
            return _MISSING
        args = get_args(tp) or (str, Any)
        result: Dict[str, Any] = {}
        for key, item in raw.items():
            value = _convert(args[1], item, _sub(path, key), problems, depth + 1)
            if value is not _MISSING:
                result[str(key)] = value
        return result
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(raw, dict):
            problems.add(path, f"expected object, got {_type_name(raw)}")
            return _MISSING
        return _build(tp, raw, path, problems, depth + 1)
    if tp is bool:
        if isinstance(raw, bool):
            return raw
    elif tp is int:
        if isinstance(raw, int) and not isinstance(raw, bool):
            return raw
    elif tp is float:
        if isinstance(raw, (int, float)) and not isinstance(raw, bool):
            return float(raw)
    elif tp is str:
        if isinstance(raw, str):
            return raw
    else:  # pragma: no cover - a view declared an unsupported annotation
        raise TypeError(f"unsupported annotation {tp!r} in a facts view")
    problems.add(path, f"expected {_describe(tp)}, got {_type_name(raw)}")
    return _MISSING


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _build(cls: Type[T], raw: Dict[str, Any], path: str, problems: Problems, depth: int) -> T:
    hints = _hints(cls)
    kwargs: Dict[str, Any] = {}
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    if problems.strict:
        declared = {f.metadata.get("key", f.name) for f in fields}
        for key in raw:
            if key not in declared:
                problems.add(_sub(path, key), f"not declared in {cls.__name__}")
    for field in fields:
        key = field.metadata.get("key", field.name)
        if key not in raw:
            kwargs[field.name] = _default(field)
            continue
        value = _convert(hints[field.name], raw[key], _sub(path, key), problems, depth)
        kwargs[field.name] = _default(field) if value is _MISSING else value
    return cls(**kwargs)


def load(cls: Type[T], raw: Any, problems: Optional[Problems] = None) -> Tuple[T, Problems]:
    """``(view, problems)``: ``raw`` (a JSON object) as an instance of the view dataclass
    ``cls`` (or of a ``Dict[str, X]`` annotation, for a section that is a plain map).  Never
    raises on bad data: a non-object gives the all-defaults view with one problem; fields of
    the wrong type take their defaults (map entries of the wrong type are dropped) and are
    listed in ``problems``."""
    problems = problems if problems is not None else Problems()
    if not isinstance(raw, dict):
        problems.add("", f"expected object, got {_type_name(raw)}")
        raw = {}
    if isinstance(cls, type) and dataclasses.is_dataclass(cls):
        return _build(cls, raw, "", problems, 0), problems
    # A section that is a plain map (``_errors``): a dict in, a dict out, never _MISSING.
    return _convert(cls, raw, "", problems, 0), problems


def _describe(tp: Any) -> str:
    origin = get_origin(tp)
    if origin is Union:
        return " or ".join(_describe(a) for a in get_args(tp))
    if origin in (list, List, tuple, Tuple):
        return "list"
    if origin in (dict, Dict):
        return "object"
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return "object"
    if tp is _NONE:
        return "null"
    return getattr(tp, "__name__", str(tp))


def schema_of(tp: Any, defs: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """JSON Schema (draft 2020-12) of a view annotation; nested view classes go to
    ``defs`` (``$defs``) and are referenced by name.  Field docs come from
    ``field(metadata={"doc": ...})``."""
    defs = defs if defs is not None else {}
    if tp is Any:
        return {}
    origin = get_origin(tp)
    if origin is Union:
        parts = [schema_of(a, defs) for a in get_args(tp)]
        if all(set(p) == {"type"} and isinstance(p["type"], str) for p in parts):
            return {"type": [p["type"] for p in parts]}  # Optional[str] → ["string", "null"]
        return {"anyOf": parts}
    if origin is Literal:
        return {"enum": list(get_args(tp))}
    if origin in (list, List, tuple, Tuple):
        item_tp = (get_args(tp) or (Any,))[0]
        return {"type": "array", "items": schema_of(item_tp, defs)}
    if origin in (dict, Dict):
        args = get_args(tp) or (str, Any)
        return {"type": "object", "additionalProperties": schema_of(args[1], defs)}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        name = tp.__name__
        if name not in defs:
            defs[name] = {}  # placeholder: recursion guard
            hints = _hints(tp)
            props: Dict[str, Any] = {}
            for field in dataclasses.fields(tp):
                key = field.metadata.get("key", field.name)
                prop = schema_of(hints[field.name], defs)
                doc = field.metadata.get("doc")
                if doc:
                    prop = dict(prop, description=doc)
                props[key] = prop
            entry: Dict[str, Any] = {"type": "object", "properties": props}
            if tp.__doc__:
                entry["description"] = " ".join(tp.__doc__.split())
            defs[name] = entry
        return {"$ref": f"#/$defs/{name}"}
    if tp is _NONE:
        return {"type": "null"}
    simple = {str: "string", int: "integer", float: "number", bool: "boolean"}
    return {"type": simple[tp]}
