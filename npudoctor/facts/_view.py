"""The base of every facts view: a :class:`View` is a :class:`~npudoctor.record.Record`.

Declare a view as::

    class Toolkit(View):
        path: str = ""
        kernels: Kernels = field(default_factory=Kernels)
        version: Optional[str] = None
        \"\"\"public CANN version ("8.0.0")\"\"\"

Every field needs a default (views describe facts that may be absent).  The string on the
line after a field documents it in the snapshot schema; ``field(name=...)`` gives the JSON
key when it differs from the attribute.  The base exists so the converters know a view from
any other record (:func:`is_view`).
"""

from __future__ import annotations

from typing import Dict, Tuple, Type

from npudoctor.record import Record, field

__all__ = ["View", "field", "field_docs", "is_view", "view_fields"]


class View(Record):
    """Base of the facts views (frozen records)."""


def view_fields(cls: Type[View]) -> Tuple[Tuple[str, str], ...]:
    """``(attribute, JSON key)`` of each declared field of a view class, in declaration order
    (base classes' first), read from the class (``msgspec.structs.fields`` would resolve every
    annotation on each call)."""
    return tuple(zip(cls.__struct_fields__, cls.__struct_encode_fields__))


def is_view(tp: object) -> bool:
    """Whether ``tp`` is a view class."""
    return isinstance(tp, type) and issubclass(tp, View) and tp is not View


def field_docs(cls: type) -> Dict[str, str]:
    """The attribute docstrings of ``cls`` and its bases (field name → text), read from the
    source: for the schema, built by ``scripts/``, never on a command's path."""
    import ast
    import inspect
    import textwrap

    docs: Dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not is_view(klass):
            continue
        try:
            source = inspect.getsource(klass)
        except (OSError, TypeError):  # defined where no source file is (exec'd code)
            continue
        body = ast.parse(textwrap.dedent(source)).body[0]
        if not isinstance(body, ast.ClassDef):
            continue
        for prev, node in zip(body.body, body.body[1:]):
            if (
                isinstance(prev, ast.AnnAssign)
                and isinstance(prev.target, ast.Name)
                and isinstance(node, ast.Expr)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
            ):
                docs[prev.target.id] = node.value.value
    return docs
