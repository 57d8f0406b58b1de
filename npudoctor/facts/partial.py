"""A snapshot's JSON bytes read in one pass for a few fields of a few sections.

:class:`Reader` decodes a document with a msgspec decoder whose schema holds only what
its caller reads: ``schema_version``, ``node``, ``created`` and, of each section named,
the top-level fields named (each with the type its view declares, nested views whole) --
plus, when asked, some fields of every ``packages.installed`` record.  msgspec skips
every other key in C without building it, so a reader of ten fields out of a 120 KB
snapshot pays for walking the bytes, not for thousands of dicts and strings.

It reads only well-typed documents: a value of another type than the view declares
(anywhere in the fields decoded), a section that is not an object, or JSON that msgspec
refuses gives ``None``, and the caller reads that document the lenient way
(:class:`npudoctor.facts.Facts` over the parsed JSON), which reads such values as their
defaults.  What :class:`PartialFacts` answers for a document it did read is what
``Facts.fields_of`` and ``Facts.packages_of`` answer for the same document.

The bounds ``loads`` checks (values, nesting, long integers:
:func:`npudoctor.parsers.jsontext.plain`) are the caller's to check first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Tuple, Union, get_type_hints

import msgspec

from npudoctor.facts import SECTIONS, _canonical
from npudoctor.facts._view import view_fields
from npudoctor.facts.system import Distribution, PackagesFacts
from npudoctor.record import Record

if TYPE_CHECKING:
    from typing import FrozenSet, List, Type


class PartialSnapshot(Record):
    """What :meth:`Reader.read` decoded of one snapshot."""

    schema_version: int
    node: Optional[str]
    created: Optional[str]
    facts: PartialFacts


class PartialFacts:
    """The sections a :class:`Reader` decoded, answering ``present``, ``fields_of`` and
    ``packages_of`` as :class:`npudoctor.facts.Facts` does (only for what was decoded)."""

    def __init__(self, decoded: Any, reader: Reader) -> None:
        self._decoded = decoded
        self._reader = reader

    def present(self, name: str) -> bool:
        """Whether section ``name`` is in the snapshot (``AttributeError`` for a section
        the reader was not asked to decode)."""
        return getattr(self._decoded, name) is not msgspec.UNSET

    def fields_of(self, name: str, *fields: str) -> Any:
        """The view of section ``name`` with only ``fields`` read (the others keep their
        defaults), as ``Facts.fields_of``.  Raises ``KeyError`` for a field the reader was
        not asked to decode."""
        read = self._reader.sections[name]
        for wanted in fields:
            if wanted not in read:
                raise KeyError(f"{name}.{wanted} is not decoded")
        section = getattr(self._decoded, name)
        if section is msgspec.UNSET:
            return SECTIONS[name]()
        return SECTIONS[name](**{f: getattr(section, f) for f in fields})

    def packages_of(self, *names: str) -> PackagesFacts:
        """A ``packages`` view whose ``installed`` holds only the records of the projects
        ``names`` (any spelling), each record with only the fields decoded, as
        ``Facts.packages_of``."""
        section = self._decoded.packages
        if section is msgspec.UNSET:
            return PackagesFacts()
        keep = self._reader.records
        want = {_canonical(name) for name in names}
        # a key names a project of ``want`` only if its first letter starts one of them
        # (canonical names keep the first character, lower-cased): most keys stop there
        initials = {w[:1] for w in want}
        subset = {
            key: tuple(Distribution(**{f: getattr(rec, f) for f in keep}) for rec in records)
            for key, records in section.installed.items()
            if key[:1].lower()[:1] in initials and _canonical(key) in want
        }
        return PackagesFacts(installed=subset)


def _partial(cls: Type[Any], names: Tuple[str, ...]) -> Type[msgspec.Struct]:
    """A struct of view class ``cls`` with only the fields ``names``: each under its JSON
    key, with the view's own type (resolved from its annotations) and default."""
    hints = get_type_hints(cls)
    keys = dict(view_fields(cls))
    defaults = {f.name: f for f in msgspec.structs.fields(cls)}
    fields: List[Tuple[str, Any, Any]] = []
    for name in names:
        spec = defaults[name]
        if spec.default_factory is not msgspec.NODEFAULT:
            default = msgspec.field(default_factory=spec.default_factory)
        else:
            default = spec.default
        fields.append((name, hints[name], default))
    return msgspec.defstruct(f"Partial{cls.__name__}", fields, rename={n: keys[n] for n in names})


class Reader:
    """Decodes snapshot documents for the top-level fields ``sections`` names (section
    name -> field attribute names) and, when ``records`` names fields of
    :class:`~npudoctor.facts.system.Distribution`, those fields of every
    ``packages.installed`` record."""

    def __init__(self, sections: Mapping[str, Tuple[str, ...]], records: Tuple[str, ...] = ()) -> None:
        self.sections: Dict[str, FrozenSet[str]] = {name: frozenset(fields) for name, fields in sections.items()}
        self.records = records
        members: List[Tuple[str, Any, Any]] = [
            (name, Union[_partial(SECTIONS[name], fields), msgspec.UnsetType], msgspec.UNSET)
            for name, fields in sections.items()
        ]
        if records:
            record = _partial(Distribution, records)
            installed = Dict[str, Tuple[record, ...]]  # type: ignore[valid-type]
            packages = msgspec.defstruct(
                "PartialPackagesFacts", [("installed", installed, msgspec.field(default_factory=dict))]
            )
            members.append(("packages", Union[packages, msgspec.UnsetType], msgspec.UNSET))
        facts = msgspec.defstruct("PartialFactsSections", members)
        document = msgspec.defstruct(
            "PartialDocument",
            [
                ("schema_version", int),
                ("facts", facts),
                ("node", Optional[str], None),
                ("created", Optional[str], None),
            ],
        )
        self._decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(document)

    def read(self, data: bytes) -> Optional[PartialSnapshot]:
        """The document of the JSON bytes ``data``, or ``None`` when msgspec refuses them,
        a value decoded has another type than its view declares, or ``schema_version`` or
        ``facts`` is missing (see the module docstring)."""
        try:
            doc = self._decoder.decode(data)
        except (msgspec.DecodeError, RecursionError):  # ValidationError is a DecodeError
            return None
        return PartialSnapshot(doc.schema_version, doc.node, doc.created, PartialFacts(doc.facts, self))
