"""Runtime tunables: the records of ``knowledge/data/tunables.toml`` and the
parsers that read a value the way its reader does.

* :func:`npudoctor.parsers.numbers.strtol` (C's ``strtol``) is how torch_npu reads its numeric
  options (``OptionsManager.cpp``), hence ``TASK_QUEUE_ENABLE=true`` is 0: the queue is off.
* :func:`alloc_tokens` splits ``PYTORCH_NPU_ALLOC_CONF`` as the allocator's lexer does: on
  ``,`` ``:`` ``[`` ``]``, blanks dropped, keys case-sensitive.
* :func:`since_ok` tells whether a torch_npu pip version knows an allocator key, from the
  first version of each release line that does.

The records are plain frozen dataclasses, loaded once per process from the compiled twin.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Tuple

from npudoctor import tomlread
from npudoctor.knowledge.versions import parse_pep440, pep440_line
from npudoctor.record import Record, field


class Variable(Record):
    """One ``[[variable]]`` (field meanings in the data file's header)."""

    name: str
    reader: str
    grammar: str
    default: str
    source: str
    values: Tuple[int, ...] = ()
    words: Tuple[str, ...] = ()
    outside: str = "warning"
    text: str = "warning"
    off_note: str = ""
    on_note: str = ""
    on_severity: str = ""
    chips: Tuple[str, ...] = ()
    minimum: Optional[int] = None
    maximum: Optional[int] = None
    verbose: Tuple[int, ...] = ()
    unit_mb: bool = False
    above: str = ""
    note: str = ""
    number_format: str = "int"
    newer_values: Tuple[int, ...] = ()
    newer_since: Tuple[str, ...] = ()
    outside_acts_as: str = ""
    excluded: Tuple[int, ...] = ()


class AllocKey(Record):
    """One ``[[alloc_key]]`` of PYTORCH_NPU_ALLOC_CONF."""

    name: str
    value: str
    since: Tuple[str, ...]
    source: str
    minimum: Optional[int] = None
    maximum: Optional[int] = None
    words: Tuple[str, ...] = ()
    needs_expandable: bool = False
    conflicts_expandable: bool = False


class Twin(Record):
    """One ``[[twin]]``: a CUDA-named variable and the variable the NPU stack reads."""

    name: str
    npu: str
    same_value: bool
    source: str


class HcclRange(Record):
    """One ``[[hccl_range]]``: the values an HCCL variable takes on some chips and modes."""

    name: str
    source: str
    minimum: float
    maximum: float
    chips: Tuple[str, ...] = ()
    modes: Tuple[str, ...] = ()
    min_open: bool = False
    decimals: int = 0
    cap: bool = False
    floor: Optional[int] = None
    multiple_of: Optional[int] = None
    decimals_since_cann: str = ""


class HcclModes(Record):
    """One ``[hccl_mode.<chip>]``: the HCCL_OP_EXPANSION_MODE values a chip supports."""

    chip: str
    default: str
    modes: Tuple[str, ...]
    source: str


class Reference(Record):
    """One ``[[reference]]``: the variables an official reference documents."""

    name: str
    source: str
    retrieved: str
    names: Tuple[str, ...]
    commit: str = ""


class Table(Record):
    """The whole data file."""

    variables: Dict[str, Variable]
    alloc_keys: Dict[str, AllocKey]
    twins: Dict[str, Twin]
    not_judged: Dict[str, str]
    references: Tuple[Reference, ...]
    retrieved: str
    context: Tuple[str, ...] = ()
    hccl_ranges: Tuple[HcclRange, ...] = ()
    hccl_modes: Dict[str, HcclModes] = field(default_factory=dict)


def data_path() -> str:
    """Path of the bundled tunables.toml."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "tunables.toml")


def _opt_int(value: Any) -> Optional[int]:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def _strs(values: Any) -> Tuple[str, ...]:
    return tuple(str(v) for v in (values or ()))


def parse_table(doc: Dict[str, Any]) -> Table:
    """The records of a parsed tunables.toml (``KeyError``/``ValueError`` when malformed)."""
    variables = {}
    for raw in doc.get("variable", []):
        var = Variable(
            name=str(raw["name"]),
            reader=str(raw["reader"]),
            grammar=str(raw["grammar"]),
            default=str(raw.get("default", "")),
            source=str(raw.get("source", "")),
            values=tuple(int(v) for v in raw.get("values", ())),
            words=_strs(raw.get("words")),
            outside=str(raw.get("outside", "warning")),
            text=str(raw.get("text", "warning")),
            off_note=str(raw.get("off_note", "")),
            on_note=str(raw.get("on_note", "")),
            on_severity=str(raw.get("on_severity", "")),
            chips=_strs(raw.get("chips")),
            minimum=_opt_int(raw.get("min")),
            maximum=_opt_int(raw.get("max")),
            verbose=tuple(int(v) for v in raw.get("verbose", ())),
            unit_mb=bool(raw.get("unit_mb", False)),
            above=str(raw.get("above", "")),
            note=str(raw.get("note", "")),
            number_format=str(raw.get("format", "int")),
            newer_values=tuple(int(v) for v in raw.get("newer_values", ())),
            newer_since=_strs(raw.get("newer_since")),
            outside_acts_as=str(raw.get("outside_acts_as", "")),
            excluded=tuple(int(v) for v in raw.get("excluded", ())),
        )
        variables[var.name] = var
    keys = {}
    for raw in doc.get("alloc_key", []):
        key = AllocKey(
            name=str(raw["name"]),
            value=str(raw["value"]),
            since=_strs(raw.get("since")),
            source=str(raw.get("source", "")),
            minimum=_opt_int(raw.get("min")),
            maximum=_opt_int(raw.get("max")),
            words=_strs(raw.get("words")),
            needs_expandable=bool(raw.get("needs_expandable", False)),
            conflicts_expandable=bool(raw.get("conflicts_expandable", False)),
        )
        keys[key.name] = key
    twins = {}
    for raw in doc.get("twin", []):
        twin = Twin(str(raw["name"]), str(raw["npu"]), bool(raw.get("same_value", False)), str(raw.get("source", "")))
        twins[twin.name] = twin
    not_judged = {str(n): str(raw.get("reason", "")) for raw in doc.get("not_judged", []) for n in raw.get("names", ())}
    references = tuple(
        Reference(
            name=str(raw["name"]),
            source=str(raw.get("source", "")),
            retrieved=str(raw.get("retrieved", "")),
            names=_strs(raw.get("names")),
            commit=str(raw.get("commit", "")),
        )
        for raw in doc.get("reference", [])
    )
    ranges = tuple(
        HcclRange(
            name=str(raw["name"]),
            source=str(raw.get("source", "")),
            minimum=float(raw["min"]),
            maximum=float(raw["max"]),
            chips=_strs(raw.get("chips")),
            modes=_strs(raw.get("modes")),
            min_open=bool(raw.get("min_open", False)),
            decimals=int(raw.get("decimals", 0)),
            cap=bool(raw.get("cap", False)),
            floor=_opt_int(raw.get("floor")),
            multiple_of=_opt_int(raw.get("multiple_of")),
            decimals_since_cann=str(raw.get("decimals_since_cann", "")),
        )
        for raw in doc.get("hccl_range", [])
    )
    modes = {
        str(chip): HcclModes(str(chip), str(raw["default"]), _strs(raw.get("modes")), str(raw.get("source", "")))
        for chip, raw in doc.get("hccl_mode", {}).items()
    }
    return Table(
        variables=variables,
        alloc_keys=keys,
        twins=twins,
        not_judged=not_judged,
        references=references,
        hccl_ranges=ranges,
        hccl_modes=modes,
        retrieved=str(doc.get("retrieved", "")),
        context=_strs(doc.get("context", {}).get("names")),
    )


_CACHE: Dict[str, Table] = {}


def table() -> Table:
    """The bundled table, loaded once per process."""
    if "t" not in _CACHE:
        _CACHE["t"] = parse_table(tomlread.load_bundled(data_path()))
    return _CACHE["t"]


def watched_names() -> Tuple[str, ...]:
    """Every variable the tunables probe records: judged variables, CUDA-named twins, their
    NPU counterparts and the context variables."""
    t = table()
    return tuple(sorted(set(t.variables) | set(t.twins) | {tw.npu for tw in t.twins.values()} | set(t.context)))


# --------------------------------------------------------------------------- readers
def alloc_tokens(value: str) -> List[str]:
    """The allocator lexer's tokens: separators ``, : [ ]`` are tokens of their own, runs of
    other non-blank characters are words, blanks are dropped."""
    out: List[str] = []
    word = ""
    for ch in value:
        if ch in ",:[]":
            if word:
                out.append(word)
                word = ""
            out.append(ch)
        elif ch in " \t\n\r":
            if word:
                out.append(word)
                word = ""
        else:
            word += ch
    if word:
        out.append(word)
    return out


def alloc_pairs(value: str) -> Tuple[List[Tuple[str, str]], List[str]]:
    """``key:value`` pairs of an allocator option list, in order, and what could not be
    read as such (a key without ``:value``, a stray separator).  A bracketed list value
    (``[...]``) is kept as its text."""
    toks = alloc_tokens(value)
    pairs: List[Tuple[str, str]] = []
    bad: List[str] = []
    i = 0
    while i < len(toks):
        tok = toks[i]
        if tok == ",":
            i += 1
            continue
        if tok in ":[]":
            bad.append(tok)
            i += 1
            continue
        if i + 2 < len(toks) and toks[i + 1] == ":":
            if toks[i + 2] == "[":
                end = i + 3
                while end < len(toks) and toks[end] != "]":
                    end += 1
                pairs.append((tok, "".join(toks[i + 2 : end + 1])))
                i = end + 1
            else:
                pairs.append((tok, toks[i + 2]))
                i += 3
            continue
        bad.append(tok)
        i += 1
    return pairs, bad


#: The oldest torch_npu line the allocator-key table speaks for (the 2.1.0 line: the
#: first with max_split_size_mb, garbage_collection_threshold and expandable_segments).
OLDEST_LINE = (2, 1, 0)


def since_ok(version: Optional[str], since: Tuple[str, ...]) -> Optional[bool]:
    """Whether torch_npu ``version`` knows a key first shipped in ``since`` (the first pip
    version of each release line that has it).  A line listed: at or after its floor; a line
    newer than every listed one: yes; another line: no.  ``None``: the version is unknown,
    or older than the oldest line the table speaks for (:data:`OLDEST_LINE`)."""
    if not version or not since:
        return None
    have = parse_pep440(version.split("+")[0])
    parsed = [parse_pep440(s) for s in since]
    floors = [f for f in parsed if f is not None]
    if have is None or len(floors) != len(parsed):
        return None
    if pep440_line(have) < OLDEST_LINE:
        return None
    for floor in floors:
        if pep440_line(floor) == pep440_line(have):
            return have >= floor
    return pep440_line(have) > max(pep440_line(f) for f in floors)


def float_value(text: str) -> Optional[float]:
    """``stod``-like: a decimal number, or ``None``."""
    try:
        return float(text)
    except ValueError:
        return None


#: Most CPUs a list may name (a longer list is treated as malformed).
MAX_CPUS = 1 << 16


def cpu_set(text: str) -> Optional[List[int]]:
    """The CPUs of a list such as ``0-3,8`` in ascending order (``None`` when malformed)."""
    out: List[int] = []
    for part in text.strip().split(","):
        low, sep, high = part.strip().partition("-")
        if not low.isdigit() or (sep and not high.isdigit()):
            return None
        first, last = int(low), int(high) if sep else int(low)
        if last < first or last >= MAX_CPUS or len(out) + last - first >= MAX_CPUS:
            return None
        out.extend(range(first, last + 1))
    return sorted(set(out))


def affinity_parts(value: str) -> Tuple[Optional[int], Dict[int, Tuple[int, int]], List[str]]:
    """CPU_AFFINITY_CONF as torch_npu splits it: the mode (``None`` when not 0, 1 or 2),
    the explicit ``npuN:a-b`` ranges by N, and the parts that are malformed (a range with
    a > b, a part that is neither ``npuN:a-b`` nor ``key:0|1``)."""
    parts = [p.strip() for p in value.split(",")]
    mode = int(parts[0]) if parts[0] in ("0", "1", "2") else None
    ranges: Dict[int, Tuple[int, int]] = {}
    bad: List[str] = [] if mode is not None else [parts[0]]
    for part in parts[1:]:
        key, sep, rest = part.partition(":")
        if key.startswith("npu") and key[3:].isdigit() and sep:
            low, dash, high = rest.partition("-")
            if low.isdigit() and dash and high.isdigit() and int(low) <= int(high):
                ranges[int(key[3:])] = (int(low), int(high))
                continue
        elif sep and key and rest in ("0", "1"):
            continue
        bad.append(part)
    return mode, ranges, bad


# --------------------------------------------------------------------------- HCCL numbers
def hccl_number(value: str, number_format: str) -> Optional[Tuple[float, int]]:
    """An HCCL variable's value as HCCL reads it: ``(number, decimal places)``, or ``None``
    when HCCL refuses the text (EI0001).  ``int``: digits only (``IsAllDigit``);
    ``decimal2``: digits with at most one point and two decimals after it
    (``ParseExecTimeout``'s format check).  No blanks, signs or exponents in either."""
    whole, dot, frac = value.partition(".")
    if not whole.isdigit() or not whole.isascii():
        return None
    if not dot:
        return float(int(whole)), 0
    if number_format != "decimal2" or not frac.isdigit() or not frac.isascii() or len(frac) > 2:
        return None
    return float(f"{whole}.{frac}"), len(frac)


def hccl_mode(chip: Optional[str], given: Optional[str]) -> Tuple[Optional[str], str]:
    """``(mode in effect, how it was chosen)`` for ``chip`` with HCCL_OP_EXPANSION_MODE
    ``given`` (``None``: unset).  A chip without a mode table: ``(None, ...)``."""
    modes = table().hccl_modes.get(chip or "")
    if modes is None:
        return None, "the mode does not change this chip's range"
    if given is None:
        return modes.default, f"HCCL_OP_EXPANSION_MODE unset: the default {modes.default}"
    if given in modes.modes:
        return given, f"HCCL_OP_EXPANSION_MODE={given}"
    return modes.default, f"HCCL_OP_EXPANSION_MODE={given} is not supported here: the default {modes.default}"


def hccl_range(name: str, chip: str, mode: Optional[str]) -> Optional[HcclRange]:
    """The first ``[[hccl_range]]`` of ``name`` for ``chip`` in ``mode`` (records without
    chips or modes match any), or ``None``."""
    for rec in table().hccl_ranges:
        if rec.name != name or (rec.chips and chip not in rec.chips):
            continue
        if rec.modes and mode not in rec.modes:
            continue
        return rec
    return None


def hccl_range_problem(rec: HcclRange, number: float, decimals: int) -> Optional[Tuple[str, Optional[str]]]:
    """What HCCL makes of ``number`` under ``rec``: ``(claim, value to set instead)``, or
    ``None`` when the value is inside the range."""

    def shown(x: float) -> str:
        return str(int(x)) if x.is_integer() else f"{x:.2f}".rstrip("0")

    low, high = shown(rec.minimum), shown(rec.maximum)
    bounds = f"{'(' if rec.min_open else '['}{low}, {high}]"
    if rec.cap and (number == 0 or number > rec.maximum):
        return f"acts as {high} (the range here is {bounds}; 0 or more than {high} is treated as {high})", high
    if decimals > rec.decimals:
        return f"has decimals, but only whole numbers are documented here (range {bounds})", shown(float(int(number)))
    if number > rec.maximum or number < rec.minimum or (rec.min_open and number == rec.minimum):
        return f"is outside the documented range {bounds}", high if number > rec.maximum else low
    if rec.floor is not None and number < rec.floor:
        return f"acts as {rec.floor} (a value below {rec.floor} is treated as {rec.floor})", str(rec.floor)
    if rec.multiple_of and int(number) % rec.multiple_of:
        return f"is not a multiple of {rec.multiple_of} (range {bounds})", str(
            int(number) // rec.multiple_of * rec.multiple_of
        )
    return None
