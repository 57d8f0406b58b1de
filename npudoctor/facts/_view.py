"""The base of every facts view: a subclass of :class:`View` is a standard frozen dataclass.

Declare a view as::

    class Toolkit(View):
        path: str = ""
        kernels: Kernels = field(default_factory=Kernels)
        version: Optional[str] = field(default=None, metadata={"doc": '"8.0.0"'})

:class:`View` applies ``dataclasses.dataclass(frozen=True)`` to each subclass when it is
defined (the base-class form of PEP 681's ``dataclass_transform``, which tells type checkers
the same), so ``dataclasses.fields``, ``replace`` and ``asdict`` work on every view and
:func:`field` is :func:`dataclasses.field`.  The base exists so that a view cannot forget
the decorator and so the converters know a view from any other class (:func:`is_view`).

Every field needs a default (views describe facts that may be absent).  ``metadata`` may
hold ``doc`` (schema description) and ``key`` (the JSON key, when it differs from the name).
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import field
from typing import TYPE_CHECKING, Any, Dict, Tuple

if sys.version_info >= (3, 11):
    from typing import dataclass_transform
else:
    from typing_extensions import dataclass_transform

if TYPE_CHECKING:
    from dataclasses import Field

__all__ = ["View", "doc", "field", "is_view", "view_fields"]


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
class View:
    """Base of the facts views: each subclass is a ``dataclass(frozen=True)``."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        doc = cls.__dict__.get("__doc__")
        dataclasses.dataclass(frozen=True)(cls)
        cls.__doc__ = doc  # the schema describes a view by its docstring, not by a made-up signature


def doc(text: str) -> Dict[str, str]:
    """The ``metadata`` of a field described by ``text`` in the schema."""
    return {"doc": text}


def view_fields(cls: type) -> Tuple[Field[Any], ...]:
    """The declared fields of a view class, in declaration order (base classes' first)."""
    return dataclasses.fields(cls)


def is_view(tp: object) -> bool:
    """Whether ``tp`` is a view class."""
    return isinstance(tp, type) and issubclass(tp, View) and tp is not View
