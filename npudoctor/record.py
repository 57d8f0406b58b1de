"""The one record mechanism: every record of npudoctor derives from :class:`Record`.

A record is a `msgspec <https://jcristharif.com/msgspec/structs.html>`_ ``Struct``: declared
by annotated fields with defaults, constructed by position or keyword, compared and hashed by
value, printed with its fields, and frozen; a record that changes after it is made derives
from :class:`MutableRecord` instead.  :func:`field` takes a ``default`` or a
``default_factory`` (and ``name``, the key under which the field is written when it differs
from the attribute).  A field is
documented by a string literal on the line after it (an attribute docstring), which the
snapshot schema reads from the source.  ``replace``, ``asdict`` and ``fields`` are
``msgspec.structs``'.

Why not :mod:`dataclasses`: on the Python versions npudoctor runs on (3.8-3.12),
``dataclass(frozen=True)`` compiles six methods per class with ``exec`` at import;
``health`` and ``devices`` define a hundred records, which was half of a run.  A ``Struct``
class is built in C, many times faster, and its instances are smaller and faster to make.
The measurements are in ``docs/performance.md``.
"""

from __future__ import annotations

import sys


def _import_msgspec() -> None:
    """Import msgspec without letting it import ``typing_extensions`` (on Python 3.11+).

    Why a start-up step: msgspec imports ``typing_extensions`` when it is first imported,
    only to prefer its ``get_type_hints`` to the standard one; ``typing_extensions`` in turn
    imports :mod:`inspect` (with ``ast``, ``dis`` and ``tokenize``).  ``health`` imports
    nothing else of that, and those modules were about a twentieth of its run
    (``docs/performance.md``).  From Python 3.11 on the standard ``get_type_hints``
    resolves everything a record declares (``typing`` has ``Required``, ``NotRequired``
    and ``include_extras``), so msgspec is imported with ``typing_extensions`` marked
    unimportable, and the mark is removed at once: a later ``import typing_extensions``
    works as usual.  Nothing changes when ``typing_extensions`` is
    already imported, on older Pythons (``dataclass_transform`` below needs it there), or
    when msgspec is already imported.  Another thread importing ``typing_extensions``
    during that one import would fail; npudoctor imports this module before it starts any."""
    if sys.version_info < (3, 11) or "typing_extensions" in sys.modules or "msgspec" in sys.modules:
        return
    sys.modules["typing_extensions"] = None  # type: ignore[assignment]  # msgspec falls back to typing
    try:
        import msgspec  # noqa: F401
    finally:
        del sys.modules["typing_extensions"]


_import_msgspec()

import msgspec  # noqa: E402
from msgspec import field  # noqa: E402
from msgspec.structs import asdict, fields, replace  # noqa: E402

if sys.version_info >= (3, 11):
    from typing import dataclass_transform
else:
    from typing_extensions import dataclass_transform

__all__ = ["MutableRecord", "Record", "asdict", "field", "fields", "replace"]


# frozen_default: type checkers learn that subclasses inherit ``frozen`` (msgspec's own stubs
# declare no default, so every subclass would be read as mutable)
@dataclass_transform(frozen_default=True, field_specifiers=(field,))
class Record(msgspec.Struct, frozen=True):
    """Base of every immutable record: a frozen ``msgspec.Struct``, hashable when its fields are."""


class MutableRecord(msgspec.Struct):
    """Base of the records that change after they are made (progress, accumulators, plans
    being built): not hashable, compared by value."""
