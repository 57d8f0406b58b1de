"""Drift across a cluster: one stack fingerprint per node, the majority, and what differs.

A fingerprint is a flat ``{field: value}`` read from a snapshot's facts (the contract of
each section is the docstring of its probe module):

==================  ===============================================================
field               source
==================  ===============================================================
arch                ``host.arch``
python              ``python.version`` (+ implementation when not CPython)
torch, torch_npu    ``packages.installed["torch"|"torch-npu"][0].version`` (the
                    record import would see), also torchvision, numpy
cann.toolkit        ``cann.selected.version``
cann.kernels        ``cann.selected.kernels.version`` and its SoC directories
cann.nnal           ``cann.nnal.version``
driver, firmware    ``driver.driver.version``, ``driver.firmware.version``
chips               ``devices.chips``: "<count> x <npu-smi Name>" per kind (a
                    ``family`` an older snapshot stored is ignored)
chips.health        ``devices.chips``: "<count> <npu-smi Health>" per state ("8 OK";
                    "1 Critical, 7 OK")
env.<NAME>          HCCL_* variables (``hccl.variables``; HCCL_IF_IP is per node and
                    left out) and the visibility variables (``devices.visibility`` or
                    ``hccl.variables``): ASCEND_RT_VISIBLE_DEVICES,
                    ASCEND_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES
==================  ===============================================================

Every section is read through the typed views (:class:`npudoctor.facts.Facts`), only the
fields compared (``Facts.fields_of``, ``Facts.packages_of``): a value of the wrong type
reads as unknown (``None``) or as its section's default.  A snapshot file is first read
in one pass for only those fields (:func:`quick`: msgspec skips the rest of the bytes
without building it); one it cannot read so -- odd types, a bound passed, not JSON -- is
parsed whole and read as above, with the same result.  A value is a string; ``"(none)"``
means the section ran and found nothing (package not installed, variable unset); ``None``
means unknown (the section is absent from that snapshot) and is never counted as drift.

The majority of a field is the value held by more than half of the nodes that know it; a
field without one is *split*.  Nodes are named by the snapshot's ``node`` label (host name
or, once redacted, its stable pseudonym), else by the file they came from.

Every machine counts once, so that a repeated input cannot outvote the others:

* the same file given twice (twice on the command line, or also inside a directory given)
  is read once, and the same snapshot under two file names (byte-identical content, or
  for documents handed to :func:`compare` directly equal JSON: same ``created``, node and
  facts) counts once; both are listed under ``repeated``;
* several snapshots with the same ``node`` label are one node, listed under
  ``duplicates``.  When their stacks are identical (a copy, or a re-collection with nothing
  changed) it is only noted.  When they differ the newest snapshot (``created``; the last
  given on a tie) stands for the node, the fields that differ between the copies are listed,
  and the report counts as drift: either a stale snapshot lies next to a fresh one, or two
  machines share a host name -- both hide what a node really runs, so the operator must look.
  Snapshots without a node label are told apart by their file and never merged.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from functools import lru_cache
from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    Iterable,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Protocol,
    Sequence,
    Tuple,
    Union,
)

from npudoctor.cluster.inputs import Document, Repeated, byte_key, iter_converted
from npudoctor.facts import Facts
from npudoctor.facts.partial import Reader
from npudoctor.parsers import jsontext
from npudoctor.snapshot import SNAPSHOT_DEPTH, SNAPSHOT_VALUES

if TYPE_CHECKING:
    from npudoctor.facts.devices import DevicesFacts, Visibility
    from npudoctor.facts.hccl import HcclFacts
    from npudoctor.facts.stack import CannFacts, DriverFacts
    from npudoctor.facts.system import HostFacts, PackagesFacts, PythonFacts


class Sections(Protocol):
    """What the fingerprint asks of a snapshot's facts: :class:`npudoctor.facts.Facts`
    (parsed JSON) and :class:`npudoctor.facts.partial.PartialFacts` (decoded bytes)."""

    def present(self, name: str) -> bool: ...

    def fields_of(self, name: str, *fields: str) -> Any: ...

    def packages_of(self, *names: str) -> PackagesFacts: ...


NONE = "(none)"

#: Variables compared across nodes (besides every HCCL_* variable).
VISIBILITY_VARS = ("ASCEND_RT_VISIBLE_DEVICES", "ASCEND_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")
#: HCCL variables that legitimately differ per node.
PER_NODE_VARS = ("HCCL_IF_IP",)
#: Packages compared, by canonical name → field name.
PACKAGES = (("torch", "torch"), ("torch-npu", "torch_npu"), ("torchvision", "torchvision"), ("numpy", "numpy"))

#: The top-level fields of each section the fingerprint reads (``Facts.fields_of``): all
#: that :func:`quick` decodes of a snapshot, besides the packages' records.
READS: Dict[str, Tuple[str, ...]] = {
    "host": ("arch",),
    "python": ("version", "implementation"),
    "cann": ("selected", "nnal"),
    "driver": ("driver", "firmware"),
    "devices": ("chips", "visibility"),
    "hccl": ("variables",),
}
#: The fields of a package record the fingerprint reads.
RECORD_FIELDS = ("version",)

#: Field display order.
ORDER = (
    "arch",
    "python",
    "torch",
    "torch_npu",
    "torchvision",
    "numpy",
    "cann.toolkit",
    "cann.kernels",
    "cann.nnal",
    "driver",
    "firmware",
    "chips",
    "chips.health",
)


def _packages(view: Sections) -> Dict[str, Optional[str]]:
    """The compared packages' fields (``None``: no packages section).  Only the records of
    the compared projects are converted: the view of every installed distribution (150 and
    more on a training node) would cost more than the rest of the fingerprint together."""
    if not view.present("packages"):
        return {field: None for _name, field in PACKAGES}
    packages = view.packages_of(*_COMPARED)
    out: Dict[str, Optional[str]] = {}
    for name, field in PACKAGES:
        first = packages.first(name)
        out[field] = (first.version or "?") if first is not None else NONE
    return out


_COMPARED = tuple(name for name, _field in PACKAGES)


def fingerprint(facts: Mapping[str, Any]) -> Dict[str, Optional[str]]:
    """The stack fingerprint of one snapshot's ``facts`` (see the module docstring), read
    through the typed views (:class:`npudoctor.facts.Facts`).  Never raises on odd facts:
    a field of the wrong type reads as unknown."""
    return _fingerprint(Facts(facts))


def _fingerprint(view: Sections) -> Dict[str, Optional[str]]:
    """The fingerprint of the sections ``view`` reads (only the fields :data:`READS` and
    :data:`RECORD_FIELDS` name)."""
    fp: Dict[str, Optional[str]] = {}
    host: HostFacts = view.fields_of("host", *READS["host"])
    fp["arch"] = host.arch if view.present("host") else None

    if view.present("python"):
        py: PythonFacts = view.fields_of("python", *READS["python"])
        version = py.version
        if version and py.implementation and py.implementation.lower() != "cpython":
            version = f"{py.implementation} {version}"
        fp["python"] = version or NONE
    else:
        fp["python"] = None

    fp.update(_packages(view))

    if view.present("cann"):
        cann: CannFacts = view.fields_of("cann", *READS["cann"])
        sel = cann.selected
        fp["cann.toolkit"] = (sel.version or "?") if sel else NONE
        kernels = sel.kernels if sel else None
        if kernels and (kernels.installed or kernels.version):
            value = kernels.version or "?"
            fp["cann.kernels"] = value + (f" [{','.join(sorted(kernels.socs))}]" if kernels.socs else "")
        else:
            fp["cann.kernels"] = NONE
        fp["cann.nnal"] = (cann.nnal.version or "?") if cann.nnal else NONE
    else:
        fp["cann.toolkit"] = fp["cann.kernels"] = fp["cann.nnal"] = None

    if view.present("driver"):
        drv: DriverFacts = view.fields_of("driver", *READS["driver"])
        fp["driver"] = drv.driver.version or NONE
        fp["firmware"] = drv.firmware.version or NONE
    else:
        fp["driver"] = fp["firmware"] = None

    devices_known = view.present("devices")
    devices: Optional[DevicesFacts] = view.fields_of("devices", *READS["devices"]) if devices_known else None
    if devices is not None:
        # The npu-smi Name is the fact compared; what a chip *is* (its family) is knowledge
        # the rules judge with the current matrix, and a family an older snapshot stored is
        # ignored (knowledge/chips.py chip_identity).
        kinds: Counter[str] = Counter(chip.name or "?" for chip in devices.chips)
        fp["chips"] = ", ".join(f"{n} x {k}" for k, n in sorted(kinds.items())) if kinds else NONE
        # a node whose chip npu-smi calls Critical cannot run the jobs the others can
        health: Counter[str] = Counter(chip.health or "?" for chip in devices.chips)
        fp["chips.health"] = ", ".join(f"{n} {h}" for h, n in sorted(health.items())) if health else NONE
    else:
        fp["chips"] = fp["chips.health"] = None

    hccl_known = view.present("hccl")
    variables: Dict[str, str] = {}
    if hccl_known:
        hccl: HcclFacts = view.fields_of("hccl", *READS["hccl"])
        variables = hccl.variables
    for name, value in variables.items():
        if name.startswith("HCCL_") and name not in PER_NODE_VARS:
            fp[f"env.{name}"] = value
    for name in VISIBILITY_VARS:
        visible = _visible(devices.visibility, name) if devices is not None else None
        visible = visible if visible is not None else variables.get(name)
        if visible is not None:
            fp[f"env.{name}"] = visible
    fp["_env_known"] = "1" if (devices_known or hccl_known) else None
    return fp


def _visible(visibility: Visibility, name: str) -> Optional[str]:
    return {
        "ASCEND_RT_VISIBLE_DEVICES": visibility.ascend_rt_visible_devices,
        "ASCEND_VISIBLE_DEVICES": visibility.ascend_visible_devices,
        "CUDA_VISIBLE_DEVICES": visibility.cuda_visible_devices,
    }[name]


def _field_key(field: str) -> Tuple[int, str]:
    return (ORDER.index(field), field) if field in ORDER else (len(ORDER), field)


# ------------------------------------------------------------------------- compare
class Read(NamedTuple):
    """What compare keeps of one readable snapshot: ``key`` tells two copies of one
    snapshot apart from two snapshots (the length and CRC-32 of its bytes, or for a
    document handed over parsed a hash of its JSON), the ``node`` label, ``created`` and
    the :func:`fingerprint`."""

    key: Any
    label: Optional[str]
    created: str
    fingerprint: Dict[str, Optional[str]]


@lru_cache(maxsize=None)
def _reader() -> Reader:
    return Reader(READS, RECORD_FIELDS)


def quick(data: bytes) -> Optional[Read]:
    """The :class:`Read` of one snapshot's JSON bytes, decoded in one pass for only the
    fields the fingerprint reads (:class:`npudoctor.facts.partial.Reader`); ``None`` when
    the bytes are not a plain, well-typed snapshot of a supported schema -- past a bound of
    :func:`npudoctor.parsers.jsontext.loads`, not JSON msgspec reads, a value of another
    type than its view declares, no ``facts`` object, another ``schema_version`` -- and
    must be read as :func:`entry` reads them (which says why, or reads the odd values as
    unknown).  What it returns for a snapshot is what :func:`entry` returns for it."""
    if not jsontext.plain(data, SNAPSHOT_VALUES, SNAPSHOT_DEPTH):
        return None
    doc = _reader().read(data)
    if doc is None or doc.schema_version != 1:
        return None
    return Read(byte_key(data), doc.node or None, doc.created or "", _fingerprint(doc.facts))


def entry(source: str, item: Any) -> Union[Read, Repeated, str]:
    """One input reduced to what :func:`compare` needs: a :class:`Read`, the
    :class:`Repeated` as given, or an error string (unreadable, not a snapshot, an
    unsupported schema).  ``item``: a :class:`Document`, parsed JSON or an error string."""
    if isinstance(item, (Repeated, str)):
        return item
    raw = item.data if isinstance(item, Document) else item
    if not isinstance(raw, dict) or not isinstance(raw.get("facts"), dict):
        return "not a snapshot (no 'facts' object)"
    if raw.get("schema_version") not in (1,):
        return f"unsupported schema_version {raw.get('schema_version')!r}"
    key = item.key if isinstance(item, Document) else _digest(raw)
    return Read(key, str(raw.get("node") or "") or None, str(raw.get("created") or ""), fingerprint(raw["facts"]))


def compare_inputs(paths: Sequence[str], stdin: Optional[Any] = None, workers: Optional[int] = None) -> Dict[str, Any]:
    """:func:`compare` of the snapshots in ``paths`` (see
    :func:`npudoctor.cluster.inputs.iter_inputs`), each read in one pass where it can be
    (:func:`quick`); many files are read and fingerprinted in ``workers`` processes
    (:func:`npudoctor.cluster.inputs.iter_converted`).  Raises :class:`CompareInputError`
    for a path that does not exist."""
    return compare(iter_converted(paths, entry, stdin=stdin, workers=workers, quick=quick))


def compare(items: Iterable[Tuple[str, Any]]) -> Dict[str, Any]:
    """Compare snapshots given as ``(source, item)`` pairs: a :class:`Document` or
    :class:`Repeated` from :func:`iter_inputs`, parsed JSON, an error string, or a
    :class:`Read` from :func:`entry`.

    Returns the report (the ``compare --json`` contract)::

        nodes        number of snapshots compared
        fields       [field, ...] compared (known on at least one node), display order
        majority     {field: value} (a field without a majority is absent here)
        majority_nodes  number of nodes identical to the majority on every field
        split        [{"field", "values": {value: [node, ...]}}]  no value held by > half
        differing    [{"node", "source", "differences": [{"field", "value", "majority"}]}]
        unknown      [{"node", "fields": [...]}]  fields a node's snapshot does not tell
        unreadable   [{"source", "error"}]
        repeated     [{"source", "same_as"}]  a file given again, or a copy of a snapshot
                     already read (identical content): counted once
        duplicates   [{"node", "sources": [...], "used", "identical": bool,
                       "differences": [{"field", "values": {source: value}}]}]
                     one node label in several snapshots: counted once (``used``)
        drift        bool: some node differs, a field is split, a snapshot is unreadable,
                     or one node label has snapshots with different stacks
    """
    fps = _Interned()
    readable, unreadable, repeated = _read_stream(items, fps)
    nodes, duplicates = _one_per_node(readable, fps.table)
    table = fps.table
    # Per-field aggregates over the distinct fingerprints, each weighed by its nodes.
    weight: Counter[int] = Counter(number for _n, _s, number in nodes)
    fields = sorted(
        {f for number in weight for f, v in table[number].items() if v is not None and not f.startswith("_")},
        key=_field_key,
    )
    majority, split = _majorities(fields, weight, table, nodes)
    differing, unknown, same = _node_verdicts(nodes, _fingerprint_verdicts(fields, weight, table, majority), split)
    return {
        "nodes": len(nodes),
        "fields": fields,
        "majority": majority,
        "majority_nodes": same,
        "split": split,
        "differing": differing,
        "unknown": unknown,
        "unreadable": unreadable,
        "repeated": repeated,
        "duplicates": duplicates,
        "drift": bool(differing or split or unreadable or any(not d["identical"] for d in duplicates)),
    }


def _read_stream(
    items: Iterable[Tuple[str, Any]], fps: _Interned
) -> Tuple[List[Tuple[Optional[str], str, int, str]], List[Dict[str, str]], List[Dict[str, str]]]:
    """Reduce each input to its fingerprint as it arrives (interned in ``fps``): returns
    ``(readable, unreadable, repeated)``, a readable snapshot as ``(label, source,
    fingerprint number, created)``."""
    # Streaming: only the fingerprint is kept, interned (a fleet holds few distinct stacks,
    # so each distinct fingerprint is one dict however many nodes share it); per snapshot
    # one small tuple remains (its label, source, created and the number of its
    # fingerprint).  Memory grows by that tuple per snapshot, never by a snapshot's facts.
    readable: List[Tuple[Optional[str], str, int, str]] = []
    unreadable: List[Dict[str, str]] = []
    repeated: List[Dict[str, str]] = []
    contents: Dict[Tuple[Any, Optional[str], str, int], str] = {}
    for source, item in items:
        got = item if isinstance(item, (Read, Repeated, str)) else entry(source, item)
        if isinstance(got, Repeated):
            repeated.append({"source": source, "same_as": got.first})
            continue
        if isinstance(got, str):
            unreadable.append({"source": source, "error": got})
            continue
        number = fps.number(got.fingerprint)
        content = (got.key, got.label, got.created, number)
        if content in contents:
            repeated.append({"source": source, "same_as": contents[content]})
            continue
        contents[content] = source
        readable.append((got.label, source, number, got.created))
    return readable, unreadable, repeated


def _majorities(
    fields: List[str],
    weight: Counter[int],
    table: List[Dict[str, Optional[str]]],
    nodes: List[Tuple[str, str, int]],
) -> Tuple[Dict[str, str], List[Dict[str, Any]]]:
    """The value held by more than half of the nodes that know each field, and the
    fields without one (``split``, with the nodes holding each value)."""
    majority: Dict[str, str] = {}
    split: List[Dict[str, Any]] = []
    for field in fields:
        counts: Counter[str] = Counter()
        for number, n in weight.items():
            value = _value(table[number], field)
            if value is not None:
                counts[value] += n
        total = sum(counts.values())
        value, count = counts.most_common(1)[0]
        if count * 2 > total:
            majority[field] = value
        elif len(counts) > 1:
            groups: Dict[str, List[str]] = {}
            for name, _s, number in nodes:
                v = _value(table[number], field)
                if v is not None:
                    groups.setdefault(v, []).append(name)
            split.append({"field": field, "values": dict(sorted(groups.items()))})
    return majority, split


def _fingerprint_verdicts(
    fields: List[str], weight: Counter[int], table: List[Dict[str, Optional[str]]], majority: Dict[str, str]
) -> Dict[int, Tuple[List[Dict[str, str]], List[str]]]:
    """What each distinct fingerprint differs in and does not tell, judged once."""
    verdicts: Dict[int, Tuple[List[Dict[str, str]], List[str]]] = {}
    for number in weight:
        fp = table[number]
        diffs = []
        missing = []
        for field in fields:
            value = _value(fp, field)
            if value is None:
                missing.append(field)
            elif field in majority and value != majority[field]:
                diffs.append({"field": field, "value": value, "majority": majority[field]})
        verdicts[number] = (diffs, missing)
    return verdicts


def _node_verdicts(
    nodes: List[Tuple[str, str, int]],
    verdicts: Dict[int, Tuple[List[Dict[str, str]], List[str]]],
    split: List[Dict[str, Any]],
) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]], int]:
    """``(differing, unknown, majority_nodes)``: the verdict of each node's fingerprint."""
    differing: List[Dict[str, Any]] = []
    unknown: List[Dict[str, Any]] = []
    same = 0
    for name, source, number in nodes:
        diffs, missing = verdicts[number]
        if diffs:
            differing.append({"node": name, "source": source, "differences": [dict(d) for d in diffs]})
        elif not missing and not split:
            same += 1
        if missing:
            unknown.append({"node": name, "fields": list(missing)})
    return differing, unknown, same


class _Interned:
    """Distinct fingerprints, each kept once and numbered in order of first appearance."""

    def __init__(self) -> None:
        self.table: List[Dict[str, Optional[str]]] = []
        self._numbers: Dict[Tuple[Tuple[str, Optional[str]], ...], int] = {}

    def number(self, fp: Dict[str, Optional[str]]) -> int:
        key = tuple(sorted(fp.items()))
        number = self._numbers.get(key)
        if number is None:
            number = self._numbers[key] = len(self.table)
            self.table.append(fp)
        return number


def _digest(raw: Dict[str, Any]) -> str:
    """A hash of a whole parsed snapshot (documents handed to :func:`compare` without their
    bytes): equal only for the same snapshot (same ``created``, node and facts)."""
    import hashlib

    text = json.dumps(raw, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


def _one_per_node(
    readable: List[Tuple[Optional[str], str, int, str]],
    table: List[Dict[str, Optional[str]]],
) -> Tuple[List[Tuple[str, str, int]], List[Dict[str, Any]]]:
    """``(nodes, duplicates)``: one ``(name, source, fingerprint number)`` per node label
    (see the module docstring), in order of first appearance; unlabeled snapshots are named
    by their file (the base name, or the whole source when two base names collide).
    ``readable``: ``(label, source, fingerprint number, created)`` per snapshot, numbers
    into ``table``."""
    # a group holds the index of its one snapshot, a list only from its second (most
    # groups have one: no list per node)
    groups: Dict[Tuple[str, str], Union[int, List[int]]] = {}
    for i, (label, source, _fp, _created) in enumerate(readable):
        group = ("node", label) if label else ("file", source)
        held = groups.setdefault(group, i)
        if held != i:
            if isinstance(held, int):
                groups[group] = held = [held]
            held.append(i)
    basenames = Counter(os.path.basename(src) for label, src, _f, _c in readable if not label)
    nodes: List[Tuple[str, str, int]] = []
    duplicates: List[Dict[str, Any]] = []
    for (kind, key), held in groups.items():
        members = [held] if isinstance(held, int) else held
        # the newest snapshot stands for the node; on a tie (or no timestamps) the last given
        used = max(members, key=lambda i: (readable[i][3], i))
        _label, source, fp, _created = readable[used]
        if kind == "node":
            name = str(key)
        else:
            base = os.path.basename(source)
            name = base if basenames[base] == 1 else source
        nodes.append((name, source, fp))
        if len(members) < 2:
            continue
        fields = sorted(
            {f for i in members for f in table[readable[i][2]] if not f.startswith("_")},
            key=_field_key,
        )
        differences = []
        for field in fields:
            values = {readable[i][1]: _value(table[readable[i][2]], field) for i in members}
            if len(set(values.values())) > 1:
                differences.append({"field": field, "values": values})
        duplicates.append(
            {
                "node": name,
                "sources": [readable[i][1] for i in members],
                "used": source,
                "identical": not differences,
                "differences": differences,
            }
        )
    return nodes, duplicates


def _value(fp: Dict[str, Optional[str]], field: str) -> Optional[str]:
    """A node's value of ``field``; an env variable absent on a node whose environment is
    known is ``(none)`` (unset), not unknown."""
    value = fp.get(field)
    if value is None and field.startswith("env.") and fp.get("_env_known"):
        return NONE
    return value
