"""The triage signatures: known error messages, what they mean and which findings decide their causes.

The data is ``signatures.toml`` beside this module (its header documents the format).  Each
signature (:class:`Entry`) has regex patterns, a meaning, the root-cause kinds (``K01``..``K22``,
its ``[kinds]`` table) and ranked candidate causes (:class:`Cause`).  A cause names the finding
codes of the rules that confirm it (``confirmed_by``) and optionally those that refute it
(``refuted_by``); a cause may also be stated by the log line itself (``stated_by``: captures
whose presence in the matched line establishes it).  Nothing here looks at a machine: the
rules judge the facts, and :meth:`Cause.confirming` / :meth:`Cause.refuting` only select
findings by code.

Used by ``npudoctor triage`` (npudoctor/triage/), the deep probe (to name the signature of a
failed import) and the deep rules (which static findings explain a deep failure).
"""

from __future__ import annotations

import re
import sys
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from npudoctor import lazyre
from npudoctor.findings import Finding
from npudoctor.knowledge._signatures_plan import KB_ANCHORS as PLANNED_ANCHORS
from npudoctor.knowledge._signatures_plan import PATTERNS as PLANNED_PATTERNS
from npudoctor.knowledge.error_codes import OfficialCode, lookup_label, official_text
from npudoctor.knowledge.error_codes import lookup as lookup_official
from npudoctor.knowledge.error_codes import tables as official_tables
from npudoctor.knowledge.kinds import KB_PATH
from npudoctor.record import MutableRecord, field

#: Longest line examined (bytes); the rest of a longer line is skipped.
MAX_LINE = 64 << 10

#: Severities of a signature: ``error`` counts as a known error; ``noise`` is known and harmless.
SEVERITIES = ("error", "warning", "noise")

#: Lines that look like errors but match no known signature (listed as unknown, not guessed).
#: A logger's ERROR before one of CANN's indented help lines (vLLM's ``ERROR ... [engine.py:448]
#:     Solution: 1.Check...``) is the level of the whole block, not a sign of its own.
GENERIC_ERROR = (
    r"^[ \t]*(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception)(?::|$)"
    r"|(?:\[ERROR\]|\bERROR\b)(?!.*\][ \t]+(?:Solution:|Possible Cause:|TraceBack \(most recent call last\):))"
    r"|\bFATAL\b|\bFatal\b"
    r"|\bE[A-Z0-9][0-9]{4}\b|\bERR[0-9]{5}\b"
    r"|error code is -?[0-9]+|runtime result = -?[0-9]+|ret is -[0-9]+"
    r"|\bfailed\b|\bFailed\b|\bcore dumped\b"
)

#: Substrings one of which every line matching :data:`GENERIC_ERROR` is expected to hold
#: (a line whose only error sign is a bare CANN code such as ``EE1001`` is not listed as unknown).
GENERIC_ANCHORS = (
    b"Error",
    b"ERROR",
    b"xception",
    b"FATAL",
    b"Fatal",
    b"Failed",
    b"failed",
    b"core dumped",
    b"ERR0",
    b"error code is",
    b"ret is -",
    b"runtime result =",
)

_KIND_RX = lazyre.pattern(r"^K(0[1-9]|1[0-9]|2[0-2])$")
_CODE_RX = lazyre.pattern(r"^[A-Z]{2,5}[0-9]{3}$")
_ID_RX = lazyre.pattern(r"^[a-z0-9]+(-[a-z0-9]+)*$")
#: The owners the last frame of a traceback may name (captures of an import error line).
FRAME_OWNERS = ("in_cann", "in_package", "in_code")
_CAUSE_KEYS = {"kind", "text", "here", "fix", "confirmed_by", "refuted_by", "stated_by", "subjects"}


def _sre() -> Tuple[Any, Any]:
    if sys.version_info >= (3, 11):
        import re._constants as constants  # type: ignore[import-not-found]  # no stub in typeshed
        import re._parser as parser  # type: ignore[import-not-found]
    else:  # pragma: no cover - exercised on 3.8-3.10
        import sre_constants as constants
        import sre_parse as parser
    return parser, constants


def required_literals(pattern: str, parsed: Any = None) -> Optional[List[bytes]]:
    """Literals (3+ ASCII bytes) one of which occurs in every match of ``pattern``, or
    ``None`` when none can be derived.  Walks the parsed regex (``parsed``: the pattern
    already parsed, str or bytes, to parse it only once): runs of literal characters,
    mandatory groups, alternations (each branch must give one) and repeats of at least
    one.  Case-insensitive patterns are not supported (``None``)."""
    parser, c = _sre()
    if parsed is None:
        try:
            parsed = parser.parse(pattern)
        except re.error:
            return None
    if parsed.state.flags & re.IGNORECASE:
        return None

    def best(items: Any) -> Optional[List[bytes]]:
        run: List[int] = []
        cands: List[List[bytes]] = []

        def flush() -> None:
            if run:
                cands.append([bytes(run)])
            run.clear()

        for op, av in items:
            if op is c.LITERAL and av < 128:
                run.append(av)
                continue
            flush()
            if op is c.SUBPATTERN:
                sub = best(av[-1])
                if sub:
                    cands.append(sub)
            elif op is c.BRANCH:
                alts = [best(b) for b in av[1]]
                if alts and all(alts):
                    cands.append([x for a in alts for x in (a or [])])
            elif op in (c.MAX_REPEAT, c.MIN_REPEAT) and av[0] >= 1:
                sub = best(av[2])
                if sub:
                    cands.append(sub)
        flush()
        good = [x for x in cands if min(len(y) for y in x) >= 3]
        return max(good, key=lambda x: min(len(y) for y in x) - 0.1 * len(x)) if good else None

    return best(list(parsed))


def _compile_parsed(parsed: Any) -> Any:
    """A compiled pattern from a parse of :func:`_sre` (``re.compile`` would parse again)."""
    if sys.version_info >= (3, 11):
        import re._compiler as compiler  # type: ignore[import-not-found]
    else:  # pragma: no cover - exercised on 3.8-3.10
        import sre_compile as compiler
    return compiler.compile(parsed, re.M)


class KBError(ValueError):
    """The signatures file is malformed (a packaging bug; found by the tests)."""


def _serious(findings: Sequence[Finding], codes: Sequence[str]) -> List[Finding]:
    return [f for f in findings if f.code in codes and f.severity in ("error", "warning")]


def _about(finding: Finding, subjects: Mapping[str, Sequence[str]]) -> bool:
    """Whether ``finding`` counts for a cause whose ``subjects`` limit some codes to the
    findings about some subjects (a duplicate torch, not a duplicate numpy)."""
    wanted = subjects.get(finding.code)
    return wanted is None or (finding.subject or "") in wanted


class Cause(MutableRecord):
    """A candidate cause of a signature (``[[entry.causes]]`` in signatures.toml).

    ``confirmed_by``: finding codes whose error/warning findings confirm the cause;
    ``refuted_by``: finding codes whose findings (any severity) show it is not the cause;
    ``stated_by``: capture names; when every one was captured from the matched line, the
    line itself states the cause (no fact is needed).  A cause with none of the three is a
    fact-free statement that always stays "possible".  ``subjects``: for some of those
    codes, the finding subjects that count (a code that judges several packages, such as
    PKG003, confirms a torch/torch_npu mismatch only for torch or torch_npu).
    """

    kind: str
    text: str
    here: str
    fix: List[str]
    confirmed_by: List[str] = field(default_factory=list)
    refuted_by: List[str] = field(default_factory=list)
    stated_by: List[str] = field(default_factory=list)
    subjects: Dict[str, List[str]] = field(default_factory=dict)

    def confirming(self, findings: Sequence[Finding]) -> List[Finding]:
        """The error/warning findings of ``findings`` whose code is in ``confirmed_by`` (and
        whose subject ``subjects`` allows), in order."""
        return [f for f in _serious(findings, self.confirmed_by) if _about(f, self.subjects)]

    def refuting(self, findings: Sequence[Finding]) -> List[Finding]:
        """The findings of ``findings`` (any severity) whose code is in ``refuted_by`` (and
        whose subject ``subjects`` allows), in order."""
        return [f for f in findings if f.code in self.refuted_by and _about(f, self.subjects)]

    def stated(self, captures: Mapping[str, str]) -> bool:
        """True when the matched line's ``captures`` hold every name of ``stated_by``."""
        return bool(self.stated_by) and all(captures.get(name) for name in self.stated_by)


class Decision(MutableRecord):
    """``[[entry.decided_by]]``: when the log also holds a line of signature ``entry`` (an
    E-code whose causes are known), the causes of this signature are among ``kinds``."""

    entry: str
    kinds: List[str]


class Entry(MutableRecord):
    """One signature of the knowledge base (``[[entry]]`` in signatures.toml)."""

    id: str
    title: str
    severity: str
    patterns: List[str]
    meaning: str
    kinds: List[str]
    decide: List[str]
    fix: List[str]
    sources: List[str]
    causes: List[Cause]
    follow_on: bool = False
    #: what the line is, in the vocabulary ``<family>:<code>`` (``acl:{code}``, ``loader:version-not-found``);
    #: empty for message signatures without one
    label: str = ""
    #: official meanings of the codes a family entry names (``code`` capture -> meaning)
    codes: Dict[str, str] = field(default_factory=dict)
    #: the family's meaning for a code not in ``codes``
    unlisted: str = ""
    #: the lint codes whose rules find the CUDA-ism behind this line in the user's code
    lint: List[str] = field(default_factory=list)
    #: for an import error: the owners (``in_cann``, ``in_package``, ``in_code``: see
    #: :func:`npudoctor.triage.evidence.frame_owner`) the traceback's last frame may name for
    #: this entry to claim the line; empty: any.  A line whose frame names another owner is
    #: left to the next entry (a CANN dependency missing under the user's own code is theirs)
    frame_owners: List[str] = field(default_factory=list)
    #: the signatures whose lines, when the log holds one, narrow this one's causes to some
    #: kinds (a 507033 next to E30006 comes from the OPP, not from the device mapping)
    decided_by: List[Decision] = field(default_factory=list)
    #: the bytes patterns, compiled on first use (:meth:`match_bytes`) from ``parsed``: a triage
    #: only ever tries the entries whose anchors a candidate line holds
    compiled: List[Any] = field(default_factory=list)
    #: the parses of the bytes patterns (made at load for validation and the anchors; empty
    #: when the anchors come from the build-time plan)
    parsed: List[Any] = field(default_factory=list)
    #: per pattern, literals one of which every match contains (see :func:`required_literals`)
    anchors: List[List[bytes]] = field(default_factory=list)

    def match_bytes(self, line: bytes) -> Optional[Dict[str, str]]:
        """Captures (possibly empty dict) when a pattern matches ``line``, else ``None``."""
        if len(self.compiled) < len(self.patterns):
            if self.parsed:
                self.compiled = [_compile_parsed(p) for p in self.parsed]
            else:
                self.compiled = [re.compile(p.encode("utf-8"), re.M) for p in self.patterns]
        for rx, anchors in zip(self.compiled, self.anchors):
            if anchors and not any(a in line for a in anchors):
                continue
            m = rx.search(line)
            if m:
                return {k: v.decode("utf-8", "replace") for k, v in m.groupdict().items() if v is not None}
        return None

    def match_text(self, text: str) -> Optional[Dict[str, str]]:
        """Like :meth:`match_bytes` for a ``str`` (one line or a whole message).  The
        ``str`` patterns are compiled on first use (the scanner only needs the bytes ones)."""
        if self._text_rx is None:
            self._text_rx = [re.compile(p, re.M) for p in self.patterns]
        for rx in self._text_rx:
            m = rx.search(text)
            if m:
                return {k: v for k, v in m.groupdict().items() if v is not None}
        return None

    _text_rx: Optional[List[Any]] = None

    def official(self, code: str) -> Optional[OfficialCode]:
        """The entry of the official code tables for ``code`` of this family (the family is
        the ``<family>:`` of the label), or ``None``."""
        family = self.label.partition(":")[0]
        return lookup_official(family, code) if family and code else None

    def code_meaning(self, code: str) -> str:
        """The official meaning of ``code`` in this family: its entry in the official code
        tables, else the entry's own ``codes``, else ``unlisted`` (the family's meaning)."""
        found = self.official(code)
        if found is not None:
            return found.summary()
        return self.codes.get(code, self.unlisted)

    def values(self, captures: Mapping[str, str]) -> Dict[str, str]:
        """``captures`` plus ``code_meaning`` (for a family entry): the values its title,
        meaning and label are filled with."""
        out = dict(captures)
        if "code" in captures and (self.codes or self.unlisted):
            out["code_meaning"] = self.code_meaning(captures["code"])
        return out


class KnowledgeBase(MutableRecord):
    """The parsed signatures file: ``entries`` in match order and the combined prefilter
    (``anchors``: byte strings one of which every candidate line holds; ``generic``: the
    compiled :data:`GENERIC_ERROR` over bytes)."""

    entries: List[Entry]
    path: str
    anchors: List[bytes] = field(default_factory=list)
    generic: Any = None
    #: regexes (bytes sources, each starting with a literal byte) one of which every match of a
    #: pattern without a literal anchor contains: the ``code`` groups of the code families
    code_gates: List[bytes] = field(default_factory=list)
    #: the root-cause kinds causes print (``K01`` -> one line), from the ``[kinds]`` table
    kinds: Dict[str, str] = field(default_factory=dict)
    #: substrings of a traceback frame's path that place it in the CANN toolkit's code, and the
    #: toolkit's import names under a site-packages directory (the ``[frames]`` table)
    cann_frames: List[str] = field(default_factory=list)
    cann_packages: List[str] = field(default_factory=list)
    #: True when every entry's anchors come from the build-time plan (the packaged file)
    planned: bool = False

    def explain(self, name: str) -> Optional[Dict[str, Any]]:
        """What a label triage prints means, or ``None``: a root-cause kind (``K10``), a
        signature id (``acl-code``), a label (``acl:507033``, ``loader:version-not-found``)
        or an error code (``507033``, ``EZ9999``, ``ERR02005``).  Keys: ``what`` ("kind",
        "signature", "error code"), ``name``, ``title``, ``explain``, ``sources``, ``entry``
        (the signature id, or ``None`` for a kind) and, for a signature, ``lint`` (the lint codes
        that find its cause in code)."""
        key = name.strip()
        if _KIND_RX.match(key.upper()) and key.upper() in self.kinds:
            kind = key.upper()
            users = [e.id for e in self.entries if kind in e.kinds or any(c.kind == kind for c in e.causes)]
            text = f"Root-cause kind {kind}: {self.kinds[kind]}."
            if users:
                text += " Triage names it as a candidate cause of: " + ", ".join(users) + "."
            return {
                "what": "kind",
                "name": kind,
                "title": self.kinds[kind],
                "explain": text,
                "sources": [],
                "entry": None,
            }
        entry = self.by_id(key) or next((e for e in self.entries if e.label and e.label == key), None)
        if entry is not None:
            official = lookup_label(entry.label) if "{" not in entry.label else None
            return {
                "what": "signature",
                "name": entry.id,
                "title": _PLACEHOLDER.sub(r"<\1>", entry.title),
                "explain": _PLACEHOLDER.sub(r"<\1>", fill(entry.meaning, _NO_MACHINE)) + official_text(official),
                "sources": ([official.source] if official else []) + list(entry.sources),
                "entry": entry.id,
                "lint": list(entry.lint),
            }
        code = key.split(":", 1)[-1].strip()
        code = code.upper() if code[:1].isalpha() else code
        found = self.lookup_code(key)
        if found is None:
            # a code only the official tables know (a DCMI return code, say)
            family = key.split(":", 1)[0].strip() if ":" in key else ""
            listed = [t[code] for f, t in official_tables().items() if code in t and family in ("", f)]
            if not listed:
                return None
            official = listed[0]
            return {
                "what": "error code",
                "name": f"{official.family}:{official.code}",
                "title": official.summary(),
                "explain": official_text(official).strip(),
                "sources": [official.source],
                "entry": None,
            }
        fam, meaning = found
        values = fam.values({"code": code, "what": meaning})
        official = fam.official(code)
        return {
            "what": "error code",
            "name": fill(fam.label, values),
            "title": meaning,
            "explain": fill(fam.meaning, values) + official_text(official),
            "sources": ([official.source] if official else []) + list(fam.sources),
            "entry": fam.id,
        }

    def lookup_code(self, code: str) -> Optional[Tuple[Entry, str]]:
        """The family entry naming an error ``code`` (``507033``, ``EZ9999``, ``ERR02005``,
        ``hccl:6``, ``acl:107020``) and the code's official meaning, or ``None``.  A code only
        a family's range covers (not listed) is found with the family's meaning."""
        raw = code.strip()
        family = ""
        if ":" in raw:
            family, raw = raw.split(":", 1)
        key = raw.upper() if raw[:1].isalpha() else raw
        fams = [e for e in self.entries if e.codes or e.unlisted]
        for e in fams:
            if (not family or e.label.startswith(family + ":")) and key in e.codes:
                return e, e.code_meaning(key)
        for e in fams:
            if family and not e.label.startswith(family + ":"):
                continue
            probe = e.label.split(":", 1)[0]
            line = {"hccl": f"HcclFoo, error code is {key}", "pta": f"{key} PTA x"}.get(
                probe, f"error code is {key}" if key.isdecimal() else f"{key}: x"
            )
            caps = e.match_text(line)
            if caps is not None and caps.get("code") == key:
                return e, e.code_meaning(key)
        return None

    def by_id(self, entry_id: str) -> Optional[Entry]:
        """The entry with this id, or ``None``."""
        return next((e for e in self.entries if e.id == entry_id), None)

    def classify(self, text: str) -> List[Tuple[Entry, Dict[str, str]]]:
        """Every entry matching somewhere in ``text`` (a message of several lines), in KB
        order, with the captures of the first matching line; used by the deep rules."""
        out: List[Tuple[Entry, Dict[str, str]]] = []
        lines = text.splitlines() or [text]
        for entry in self.entries:
            for line in lines:
                caps = entry.match_text(line[:MAX_LINE])
                if caps is not None:
                    out.append((entry, caps))
                    break
        return out


class _Kept(Dict[str, str]):
    """Placeholder values; a name not among them is kept as it was written (``{name}``)."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def fill(text: str, values: Mapping[str, str]) -> str:
    """``text`` with ``{name}`` placeholders replaced from ``values`` (unknown ones kept)."""
    try:
        return text.format_map(_Kept(values))
    except (ValueError, IndexError, KeyError, AttributeError):
        return text


_KB_CACHE: Dict[Tuple[str, bool], KnowledgeBase] = {}


def default_kb_path() -> str:
    """Path of the packaged ``signatures.toml``."""
    return KB_PATH


def _toml_loads(text: str) -> Dict[str, Any]:
    from npudoctor.tomlread import loads

    return loads(text)


def _strs(raw: Mapping[str, Any], where: str, key: str) -> List[str]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise KBError(f"{where}: {key} must be a list of strings")
    return list(value)


def _codes(raw: Mapping[str, Any], where: str, key: str) -> List[str]:
    codes = _strs(raw, where, key)
    for code in codes:
        if not _CODE_RX.match(code):
            raise KBError(f"{where}: {key} {code!r} is not a finding code")
    return codes


def _cause(c: Mapping[str, Any], where: str) -> Cause:
    unknown = sorted(set(c) - _CAUSE_KEYS)
    if unknown:
        raise KBError(f"{where}: unknown cause key(s) {unknown} (a cause names finding codes, not checks)")
    kind = c.get("kind", "")
    if kind and not _KIND_RX.match(kind):
        raise KBError(f"{where}: cause kind {kind!r} is not K01..K22")
    confirmed_by = _codes(c, where, "confirmed_by")
    refuted_by = _codes(c, where, "refuted_by")
    both = sorted(set(confirmed_by) & set(refuted_by))
    if both:
        raise KBError(f"{where}: {both} both confirm and refute one cause")
    subjects = _subjects(c, where, confirmed_by + refuted_by)
    return Cause(
        kind=kind,
        text=str(c.get("text", "")),
        here=str(c.get("here", "")),
        fix=_strs(c, where, "fix"),
        confirmed_by=confirmed_by,
        refuted_by=refuted_by,
        stated_by=_strs(c, where, "stated_by"),
        subjects=subjects,
    )


def _subjects(c: Mapping[str, Any], where: str, codes: Sequence[str]) -> Dict[str, List[str]]:
    """A cause's ``subjects`` table: each key one of its ``codes``, each value the subjects
    (strings) of the findings of that code that count."""
    raw = c.get("subjects", {})
    if not isinstance(raw, dict):
        raise KBError(f"{where}: subjects must be a table of code = [subjects]")
    out: Dict[str, List[str]] = {}
    for code, names in raw.items():
        if code not in codes:
            raise KBError(f"{where}: subjects names {code!r}, which the cause neither confirms nor refutes by")
        if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
            raise KBError(f"{where}: subjects.{code} must be a non-empty list of strings")
        out[str(code)] = list(names)
    return out


def _entry(
    item: Mapping[str, Any], where: str, planned: Optional[Sequence[Tuple[str, Tuple[bytes, ...]]]] = None
) -> Entry:
    severity = item.get("severity", "error")
    if severity not in SEVERITIES:
        raise KBError(f"{where}: severity {severity!r} not in {SEVERITIES}")
    kinds = _strs(item, where, "kinds")
    for k in kinds:
        if not _KIND_RX.match(k):
            raise KBError(f"{where}: kind {k!r} is not K01..K22")
    patterns = _strs(item, where, "patterns")
    if not patterns:
        raise KBError(f"{where}: no patterns")
    entry = Entry(
        id=str(item["id"]),
        title=str(item.get("title", item["id"])),
        severity=severity,
        patterns=patterns,
        meaning=str(item.get("meaning", "")),
        kinds=kinds,
        decide=_strs(item, where, "decide"),
        fix=_strs(item, where, "fix"),
        sources=_strs(item, where, "sources"),
        causes=[_cause(c, where) for c in item.get("causes", [])],
        follow_on=bool(item.get("follow_on", False)),
        label=str(item.get("label", "")),
        codes={str(k): str(v) for k, v in dict(item.get("codes", {})).items()},
        unlisted=str(item.get("unlisted", "")),
        lint=_codes(item, where, "lint"),
        frame_owners=_strs(item, where, "frame_owners"),
        decided_by=_decisions(item, where),
    )
    unknown_owners = sorted(set(entry.frame_owners) - set(FRAME_OWNERS))
    if unknown_owners:
        raise KBError(f"{where}: frame_owners {unknown_owners} not in {FRAME_OWNERS}")
    if planned is not None and [p for p, _ in planned] == patterns:
        # derived and checked when the plan was generated: the patterns are compiled on
        # first use, and only those of the signatures a log's lines call for
        entry.anchors = [list(a) for _, a in planned]
        return entry
    for p in patterns:
        try:
            # parsed once: the literals are read off the parse the compiled pattern is built from
            parsed = _sre()[0].parse(p.encode("utf-8"), re.M)
            entry.parsed.append(parsed)
        except re.error as exc:
            raise KBError(f"{where}: bad regex {p!r}: {exc}") from None
        # Only a code family (its label names the captured `code`: `E[A-Z0-9]\d{4}:`) may have
        # a pattern without a literal of 3+ bytes; the code shape is its anchor.
        literals = required_literals(p, parsed)
        family = "{code}" in entry.label and "(?P<code>" in p
        if not literals and not family:
            raise KBError(f"{where}: pattern {p!r} has no literal of 3+ characters that every match contains")
        # a code family whose code starts with a literal byte (E..., ERR...) is gated by the
        # code shape itself (see npudoctor.triage.gate), not by the words around it
        gate = code_group(p) if family else None
        entry.anchors.append([] if gate and gate[:1].isalnum() else literals or [])
    return entry


def _decisions(item: Mapping[str, Any], where: str) -> List[Decision]:
    raw = item.get("decided_by", [])
    if not isinstance(raw, list) or not all(isinstance(d, dict) for d in raw):
        raise KBError(f"{where}: decided_by must be a list of tables")
    out = []
    for d in raw:
        if set(d) != {"entry", "kinds"} or not isinstance(d["entry"], str):
            raise KBError(f"{where}: each decided_by names an entry and its kinds")
        kinds = _strs(d, where, "kinds")
        if not kinds or not all(_KIND_RX.match(k) for k in kinds):
            raise KBError(f"{where}: decided_by kinds must be K01..K22")
        out.append(Decision(entry=d["entry"], kinds=kinds))
    return out


def _check_decisions(entries: Sequence[Entry], path: str) -> None:
    """Each ``decided_by`` names another entry, one that is decided by nothing itself."""
    by_id = {e.id: e for e in entries}
    for e in entries:
        for d in e.decided_by:
            target = by_id.get(d.entry)
            if target is None or target is e or target.decided_by:
                raise KBError(f"{path}: {e.id}: decided_by {d.entry!r} is not an entry decided by nothing")


_PLACEHOLDER = lazyre.pattern(r"\{(\w+)\}")

#: Placeholders of meanings that triage fills with a sentence about the machine (the HCCL
#: timeouts in use) and that read as nothing without one (``explain``, no facts).
MACHINE_NOTES = ("hccl_connect_timeout", "hccl_exec_timeout")
_NO_MACHINE = dict.fromkeys(MACHINE_NOTES, "")
_GROUP_NAME = lazyre.pattern(r"\(\?P<\w+>")


def code_group(pattern: str) -> Optional[str]:
    """The regex inside ``(?P<code>...)`` of ``pattern`` (``None`` without one)."""
    start = pattern.find("(?P<code>")
    if start < 0:
        return None
    depth, i = 1, start + len("(?P<code>")
    while i < len(pattern) and depth:
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        depth += {"(": 1, ")": -1}.get(ch, 0)
        i += 1
    return pattern[start + len("(?P<code>") : i - 1] if depth == 0 else None


def _code_gates(entries: Sequence[Entry]) -> List[bytes]:
    gates: List[bytes] = []
    for e in entries:
        for p, a in zip(e.patterns, e.anchors):
            if a:
                continue
            gate = code_group(p) or ""
            if not gate[:1].isalnum():
                raise KBError(f"{e.id}: pattern {p!r}: its code group must start with a literal character")
            gates.append(_GROUP_NAME.sub("(?:", gate).encode("utf-8"))
    return list(dict.fromkeys(gates))


def load_kb(path: Optional[str] = None, use_plan: bool = True) -> KnowledgeBase:
    """Load and validate the signatures (default: the packaged ``signatures.toml``).

    Raises :class:`KBError` for a malformed or unreadable file: duplicate or non-kebab ids,
    bad regexes, patterns without a literal anchor, unknown severities, kinds outside
    K01..K22, malformed finding codes, unknown cause keys.  Cached per path.

    The packaged file's patterns are not parsed here when ``use_plan``: their anchors come
    from the plan ``scripts/gen_triage_plan.py`` derived (and validated) at build time,
    for every pattern still equal to the plan's.
    """
    path = path or default_kb_path()
    key = (path, use_plan)
    if key in _KB_CACHE:
        return _KB_CACHE[key]
    plan: Mapping[str, Sequence[Tuple[str, Tuple[bytes, ...]]]] = {}
    try:
        if path == default_kb_path():  # package data: through its compiled twin
            from npudoctor.tomlread import load_bundled

            raw = load_bundled(path)
            if use_plan:
                plan = PLANNED_PATTERNS
        else:
            from npudoctor.host import read_capped_text  # another file only: not on the packaged path

            raw = _toml_loads(read_capped_text(path, 8 << 20, what="error knowledge base"))
    except (OSError, ValueError) as exc:
        raise KBError(f"cannot read the error knowledge base {path}: {exc}") from None
    entries: List[Entry] = []
    seen = set()
    for i, item in enumerate(raw.get("entry", [])):
        where = f"{path}: entry {i} ({item.get('id', '?')})"
        eid = item.get("id")
        if not isinstance(eid, str) or not _ID_RX.match(eid):
            raise KBError(f"{where}: id must be kebab-case")
        if eid in seen:
            raise KBError(f"{where}: duplicate id")
        seen.add(eid)
        entries.append(_entry(item, where, plan.get(eid)))
    if not entries:
        raise KBError(f"{path}: no entries")
    _check_decisions(entries, path)
    # Candidate lines are found with plain substring search (bytes.find runs at memory
    # speed; one big regex alternation ran at under 1 MB/s): the anchors of every pattern
    # plus those of the generic error shapes.  An anchor containing another is redundant.
    planned_whole = len(plan) == len(entries) and all(e.id in plan and not e.parsed for e in entries)
    anchors: List[bytes] = []
    if planned_whole:  # the plan holds the outcome of the pool below for exactly these patterns
        anchors = list(PLANNED_ANCHORS)
    else:
        pool = {a for e in entries for lits in e.anchors for a in lits} | set(GENERIC_ANCHORS)
        for a in sorted(pool, key=lambda a: (len(a), a)):
            if not any(b in a for b in anchors):
                anchors.append(a)
    kinds = raw.get("kinds", {})
    if not isinstance(kinds, dict) or not all(_KIND_RX.match(k) and isinstance(v, str) for k, v in kinds.items()):
        raise KBError(f"{path}: [kinds] must map K01..K22 to one line each")
    used = {k for e in entries for k in e.kinds} | {c.kind for e in entries for c in e.causes if c.kind}
    if used - set(kinds):
        raise KBError(f"{path}: kinds {sorted(used - set(kinds))} are used but not described in [kinds]")
    frames = raw.get("frames", {})
    if not isinstance(frames, dict):
        raise KBError(f"{path}: [frames] must be a table")
    kb = KnowledgeBase(
        entries=entries,
        path=path,
        anchors=anchors,
        generic=re.compile(GENERIC_ERROR.encode(), re.M),
        kinds=dict(kinds),
        code_gates=_code_gates(entries),
        cann_frames=_strs(frames, f"{path}: [frames]", "cann"),
        cann_packages=_strs(frames, f"{path}: [frames]", "cann_packages"),
        planned=planned_whole,
    )
    _KB_CACHE[key] = kb
    return kb
