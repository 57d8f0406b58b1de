"""Error triage: find the known signatures in logs and rank their causes by the facts.

Two halves:

* :class:`Scanner` streams any number of logs (training/inference output, CANN plog files,
  a pasted traceback) in constant memory: fixed-size binary chunks, lines capped at
  :data:`MAX_LINE` bytes, one combined regex over each chunk to find candidate lines, and
  bounded group tables (repeats are counted with first/last line numbers, never stored).
* :func:`rank` takes what the scanner found and the facts of the machine (a live
  collection, ``--root``, or a ``--from`` snapshot) plus the findings of the rules, and
  orders the candidate causes of each signature: "the cause here", "possible (not
  checked)", "no sign of it here", "ruled out".

The signatures, their meanings, kinds and fixes are data: ``npudoctor/data/errors.toml``
(see the header of that file for the entry format); this module holds one fact check per
named ``check`` of that file (:data:`CHECKS`).

Facts read (all optional; every check answers "unknown" when its section is absent):

* ``packages.installed`` {canonical name: [record]} -- record ``version``,
  ``requires_dist`` (probes/packages.py)
* ``cann.toolkits`` / ``cann.selected`` (``path``, ``version``, ``set_env``, ``kernels``),
  ``cann.nnal``, ``cann.env``, ``cann.searched`` (probes/cann.py)
* ``environment`` -- any of ``current``/``set``/``vars``/``values`` {NAME: value}; else the
  environment of the host being diagnosed (live or ``--root``) is used
* ``driver.driver`` {``exists``, ``version``} (probes/driver.py)
* ``devices.npu_smi`` {``error``, ``cause``, ``code``}, ``devices.chips``,
  ``devices.nodes``, ``devices.visibility``, ``devices.visible_count`` (probes/devices.py)
* ``container.in_container`` (probes/container.py)
* ``python.shadowing.torch_npu.shadowed``, ``python.executable`` (probes/python.py)
* ``host.arch``, ``host.identity.has_passwd_entry`` (probes/host.py)
* ``hccl.variables``, ``hccl.hccn_conf`` (probes/hccl.py)
* findings: a finding (error or warning) whose code declares a cause's kind, or whose code
  the cause's ``confirmed_by`` names, confirms it.
"""

from __future__ import annotations

import os
import re
import string
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

#: Bytes read from a log per step.
CHUNK = 1 << 20
#: Longest line examined (bytes); the rest of a longer line is skipped.
MAX_LINE = 64 << 10
#: Longest sample text kept per group (characters).
SAMPLE_CHARS = 600
#: Distinct capture variants kept per signature (further variants count in the first).
MAX_VARIANTS = 16
#: Distinct unknown error lines kept (further ones are only counted).
MAX_UNKNOWN = 200

SEVERITIES = ("error", "warning", "noise")

# Lines that look like errors but match no known signature (listed as unknown, not guessed).
_GENERIC_ERROR = (
    r"^[ \t]*(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception)(?::|$)"
    r"|\[ERROR\]|\bERROR\b|\bFATAL\b|\bFatal\b"
    r"|\bE[A-Z0-9]\d{4}\b|\bERR\d{5}\b"
    r"|error code is -?\d+|runtime result = -?\d+|ret is -\d+"
    r"|\bfailed\b|\bFailed\b|\bcore dumped\b"
)


#: Substrings one of which every line matching :data:`_GENERIC_ERROR` is expected to hold
#: (a line whose only error sign is a bare CANN code such as ``EE1001`` is not listed as unknown).
_GENERIC_ANCHORS = (
    b"rror",
    b"RROR",
    b"xception",
    b"FATAL",
    b"Fatal",
    b"ailed",
    b"core dumped",
    b"ERR0",
    b"ret is -",
    b"runtime result =",
)


def _sre():
    try:
        import re._constants as constants  # type: ignore[import-not-found]
        import re._parser as parser  # type: ignore[import-not-found]
    except ImportError:  # Python < 3.11
        import sre_constants as constants  # type: ignore[no-redef]
        import sre_parse as parser  # type: ignore[no-redef]
    return parser, constants


def required_literals(pattern: str) -> Optional[List[bytes]]:
    """Literals (3+ ASCII bytes) one of which occurs in every match of ``pattern``, or
    ``None`` when none can be derived.  Walks the parsed regex: runs of literal
    characters, mandatory groups, alternations (each branch must give one) and repeats
    of at least one.  Case-insensitive patterns are not supported (``None``)."""
    parser, c = _sre()
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


class KBError(ValueError):
    """The knowledge-base file is malformed (a packaging bug; found by the tests)."""


@dataclass
class Cause:
    """A candidate cause of a signature (``[[entry.causes]]`` in errors.toml)."""

    kind: str
    text: str
    here: str
    fix: List[str]
    check: Optional[str] = None
    #: finding codes that confirm this cause besides the findings of its kind
    confirmed_by: List[str] = field(default_factory=list)


@dataclass
class Entry:
    """One signature of the knowledge base (``[[entry]]`` in errors.toml)."""

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
    compiled: List[Any] = field(default_factory=list, repr=False)
    compiled_text: List[Any] = field(default_factory=list, repr=False)
    #: per pattern, literals one of which every match contains (see :func:`required_literals`)
    anchors: List[List[bytes]] = field(default_factory=list, repr=False)

    def match_bytes(self, line: bytes) -> Optional[Dict[str, str]]:
        """Captures (possibly empty dict) when a pattern matches ``line``, else ``None``."""
        for rx, anchors in zip(self.compiled, self.anchors):
            if not any(a in line for a in anchors):
                continue
            m = rx.search(line)
            if m:
                return {k: v.decode("utf-8", "replace") for k, v in m.groupdict().items() if v is not None}
        return None

    def match_text(self, text: str) -> Optional[Dict[str, str]]:
        """Like :meth:`match_bytes` for a ``str`` (one line or a whole message)."""
        for rx in self.compiled_text:
            m = rx.search(text)
            if m:
                return {k: v for k, v in m.groupdict().items() if v is not None}
        return None


@dataclass
class KnowledgeBase:
    """The parsed ``errors.toml``: ``entries`` in match order and the combined prefilter."""

    entries: List[Entry]
    path: str
    anchors: List[bytes] = field(default_factory=list)
    generic: Any = None

    def by_id(self, entry_id: str) -> Optional[Entry]:
        return next((e for e in self.entries if e.id == entry_id), None)

    def classify(self, text: str) -> List[Tuple[Entry, Dict[str, str]]]:
        """Every entry matching somewhere in ``text`` (a message of several lines), in KB
        order, with the captures of the first matching line; used by the deep probe."""
        out: List[Tuple[Entry, Dict[str, str]]] = []
        lines = text.splitlines() or [text]
        for entry in self.entries:
            for line in lines:
                caps = entry.match_text(line[:MAX_LINE])
                if caps is not None:
                    out.append((entry, caps))
                    break
        return out


_KB_CACHE: Dict[str, KnowledgeBase] = {}


def default_kb_path() -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "errors.toml")


def _toml_loads(text: str) -> Dict[str, Any]:
    try:
        import tomllib  # type: ignore[import-not-found]
    except ImportError:  # Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]
    return tomllib.loads(text)


def _strs(raw: Any, where: str, key: str) -> List[str]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise KBError(f"{where}: {key} must be a list of strings")
    return list(value)


def load_kb(path: Optional[str] = None) -> KnowledgeBase:
    """Load and validate the knowledge base (default: the packaged ``errors.toml``).

    Raises :class:`KBError` for a malformed file: duplicate ids, bad regexes, unknown
    severities, kinds outside K01..K22, causes naming an unknown check.  Cached per path.
    """
    path = path or default_kb_path()
    if path in _KB_CACHE:
        return _KB_CACHE[path]
    try:
        with open(path, "rb") as fh:
            raw = _toml_loads(fh.read().decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise KBError(f"cannot read the error knowledge base {path}: {exc}") from None
    entries: List[Entry] = []
    seen = set()
    kind_rx = re.compile(r"^K(0[1-9]|1[0-9]|2[0-2])$")
    for i, item in enumerate(raw.get("entry", [])):
        where = f"{path}: entry {i} ({item.get('id', '?')})"
        eid = item.get("id")
        if not isinstance(eid, str) or not re.match(r"^[a-z0-9]+(-[a-z0-9]+)*$", eid):
            raise KBError(f"{where}: id must be kebab-case")
        if eid in seen:
            raise KBError(f"{where}: duplicate id")
        seen.add(eid)
        severity = item.get("severity", "error")
        if severity not in SEVERITIES:
            raise KBError(f"{where}: severity {severity!r} not in {SEVERITIES}")
        kinds = _strs(item, where, "kinds")
        causes = []
        for c in item.get("causes", []):
            kind = c.get("kind", "")
            if kind and not kind_rx.match(kind):
                raise KBError(f"{where}: cause kind {kind!r} is not K01..K22")
            check = c.get("check")
            if check is not None and check not in CHECKS:
                raise KBError(f"{where}: unknown check {check!r}")
            confirmed_by = _strs(c, where, "confirmed_by")
            for code in confirmed_by:
                if not re.match(r"^[A-Z]+\d{3}$", code):
                    raise KBError(f"{where}: confirmed_by {code!r} is not a finding code")
            causes.append(
                Cause(
                    kind=kind,
                    text=str(c.get("text", "")),
                    here=str(c.get("here", "")),
                    fix=_strs(c, where, "fix"),
                    check=check,
                    confirmed_by=confirmed_by,
                )
            )
        for k in kinds:
            if not kind_rx.match(k):
                raise KBError(f"{where}: kind {k!r} is not K01..K22")
        patterns = _strs(item, where, "patterns")
        if not patterns:
            raise KBError(f"{where}: no patterns")
        entry = Entry(
            id=eid,
            title=str(item.get("title", eid)),
            severity=severity,
            patterns=patterns,
            meaning=str(item.get("meaning", "")),
            kinds=kinds,
            decide=_strs(item, where, "decide"),
            fix=_strs(item, where, "fix"),
            sources=_strs(item, where, "sources"),
            causes=causes,
            follow_on=bool(item.get("follow_on", False)),
        )
        for p in patterns:
            try:
                entry.compiled.append(re.compile(p.encode("utf-8"), re.M))
                entry.compiled_text.append(re.compile(p, re.M))
            except re.error as exc:
                raise KBError(f"{where}: bad regex {p!r}: {exc}") from None
            literals = required_literals(p)
            if not literals:
                raise KBError(f"{where}: pattern {p!r} has no literal of 3+ characters that every match contains")
            entry.anchors.append(literals)
        entries.append(entry)
    if not entries:
        raise KBError(f"{path}: no entries")
    # Candidate lines are found with plain substring search (bytes.find runs at memory
    # speed; one big regex alternation ran at under 1 MB/s): the anchors of every pattern
    # plus those of the generic error shapes.  An anchor containing another is redundant.
    pool = sorted({a for e in entries for lits in e.anchors for a in lits} | set(_GENERIC_ANCHORS), key=len)
    anchors: List[bytes] = []
    for a in pool:
        if not any(b in a for b in anchors):
            anchors.append(a)
    kb = KnowledgeBase(entries=entries, path=path, anchors=anchors, generic=re.compile(_GENERIC_ERROR.encode(), re.M))
    _KB_CACHE[path] = kb
    return kb


# ------------------------------------------------------------------------ scanning


@dataclass
class Place:
    source: str
    line: int


@dataclass
class Group:
    """Repeats of one signature with the same captures."""

    entry: Entry
    captures: Dict[str, str]
    count: int
    first: Place
    last: Place
    sample: str


@dataclass
class UnknownGroup:
    key: str
    count: int
    first: Place
    last: Place
    sample: str


@dataclass
class SourceStats:
    name: str
    lines: int = 0
    bytes: int = 0
    error: Optional[str] = None
    long_lines: int = 0


_NORMALIZE = [
    (re.compile(r"0x[0-9a-fA-F]+"), "0x#"),
    (re.compile(r"\d+"), "#"),
    (re.compile(r"\s+"), " "),
]


def _normalize(text: str) -> str:
    for rx, repl in _NORMALIZE:
        text = rx.sub(repl, text)
    return text.strip()[:200]


class Scanner:
    """Streams logs and groups what it finds.  Memory is bounded by the group caps,
    not by the size of the input.  Usage::

        sc = Scanner(load_kb())
        with open(path, "rb") as fh:
            sc.feed(path, fh)
        sc.groups, sc.unknown, sc.sources
    """

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb
        self.groups: Dict[Tuple[str, Tuple[Tuple[str, str], ...]], Group] = {}
        self._variants: Dict[str, int] = {}
        self.unknown: Dict[str, UnknownGroup] = {}
        self.unknown_dropped = 0
        self.sources: List[SourceStats] = []

    # -- lines
    def _line(self, raw: bytes, stats: SourceStats, lineno: int) -> None:
        raw = raw.rstrip(b"\r")
        for entry in self.kb.entries:
            caps = entry.match_bytes(raw)
            if caps is None:
                continue
            key = (entry.id, tuple(sorted(caps.items())))
            place = Place(stats.name, lineno)
            group = self.groups.get(key)
            if group is None:
                n = self._variants.get(entry.id, 0)
                if n >= MAX_VARIANTS:
                    group = next(g for (eid, _c), g in self.groups.items() if eid == entry.id)
                else:
                    self._variants[entry.id] = n + 1
                    text = raw[: SAMPLE_CHARS * 4].decode("utf-8", "replace").strip()[:SAMPLE_CHARS]
                    self.groups[key] = Group(entry, caps, 1, place, place, text)
                    return
            group.count += 1
            group.last = place
            return
        if not self.kb.generic.search(raw):
            return
        text = raw[: SAMPLE_CHARS * 4].decode("utf-8", "replace").strip()
        if not text:
            return
        key = _normalize(text)
        place = Place(stats.name, lineno)
        unknown = self.unknown.get(key)
        if unknown is not None:
            unknown.count += 1
            unknown.last = place
        elif len(self.unknown) < MAX_UNKNOWN:
            self.unknown[key] = UnknownGroup(key, 1, place, place, text[:SAMPLE_CHARS])
        else:
            self.unknown_dropped += 1

    def _block(self, block: bytes, base: int, stats: SourceStats) -> None:
        """Examine the complete lines of ``block``; ``base`` lines precede it."""
        starts = set()
        find, rfind = block.find, block.rfind
        for anchor in self.kb.anchors:
            pos = find(anchor)
            while pos >= 0:
                starts.add(rfind(b"\n", 0, pos) + 1)
                end = find(b"\n", pos)
                if end < 0:
                    break
                pos = find(anchor, end + 1)
        counted_pos, counted = 0, base
        for start in sorted(starts):
            end = find(b"\n", start)
            if end < 0:
                end = len(block)
            counted += block.count(b"\n", counted_pos, start)
            counted_pos = start
            self._line(block[start:end], stats, counted + 1)

    def feed(self, name: str, stream: IO[bytes]) -> SourceStats:
        """Scan one binary stream to its end.  Read errors end the stream and are
        recorded in the returned stats (never raised)."""
        stats = SourceStats(name)
        self.sources.append(stats)
        buf = b""
        base = 0
        skipping = False
        try:
            while True:
                data = stream.read(CHUNK)
                if not data:
                    break
                stats.bytes += len(data)
                if skipping:
                    idx = data.find(b"\n")
                    if idx < 0:
                        continue
                    data = data[idx + 1 :]
                    base += 1
                    skipping = False
                buf = buf + data if buf else data
                cut = buf.rfind(b"\n")
                if cut < 0:
                    if len(buf) > MAX_LINE:
                        stats.long_lines += 1
                        self._block(buf[:MAX_LINE], base, stats)
                        buf = b""
                        skipping = True
                    continue
                block, buf = buf[: cut + 1], buf[cut + 1 :]
                self._block(block, base, stats)
                base += block.count(b"\n")
                if len(buf) > MAX_LINE:
                    stats.long_lines += 1
                    self._block(buf[:MAX_LINE], base, stats)
                    buf = b""
                    skipping = True
        except OSError as exc:
            stats.error = exc.strerror or str(exc)
        if buf:
            self._block(buf, base, stats)
            base += 1
        elif skipping:
            base += 1
        stats.lines = base
        return stats


def iter_log_files(path: str) -> List[str]:
    """``path`` itself, or for a directory every regular file below it that looks like
    a log (``*.log``, ``*.txt``, ``*.out``, ``*.err``, CANN ``plog-*``), sorted."""
    if not os.path.isdir(path):
        return [path]
    out = []
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames.sort()
        for name in sorted(filenames):
            if name.startswith("plog") or name.endswith((".log", ".txt", ".out", ".err")):
                out.append(os.path.join(dirpath, name))
    return out


# ---------------------------------------------------------------------- fact checks


@dataclass
class Verdict:
    """What the facts say about one cause: ``status`` is ``cause`` (the facts show it),
    ``ruled_out``, ``no_sign`` (the facts were looked at, nothing points to it) or
    ``unknown`` (the facts needed are absent)."""

    status: str
    evidence: List[str] = field(default_factory=list)
    values: Dict[str, str] = field(default_factory=dict)


UNKNOWN = Verdict("unknown")

_CANN_PY_DEPS = (
    ("decorator", "decorator"),
    ("attrs", "attrs"),
    ("psutil", "psutil"),
    ("absl-py", "absl"),
    ("cloudpickle", "cloudpickle"),
    ("ml-dtypes", "ml_dtypes"),
    ("scipy", "scipy"),
    ("tornado", "tornado"),
    ("sympy", "sympy"),
    ("cffi", "cffi"),
    ("protobuf", "google.protobuf"),
    ("pyyaml", "yaml"),
)


#: Variables that ``environment.current`` reports whenever they are set (probes/environment.py).
_CURRENT_VARS = re.compile(r"^(ASCEND_|ATB_|TOOLCHAIN_HOME$|LD_LIBRARY_PATH$|PYTHONPATH$|PATH$|LD_PRELOAD$)")


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


class FactView:
    """Read-only helpers over a facts dict (a snapshot's ``facts``), the findings of the
    rules and, for live/``--root`` targets, the diagnosed environment."""

    def __init__(
        self,
        facts: Optional[Mapping[str, Any]],
        findings: Sequence[Any] = (),
        environ: Optional[Mapping[str, str]] = None,
    ) -> None:
        self.facts = dict(facts or {})
        self.findings = list(findings)
        self.environ = environ

    def section(self, name: str) -> Dict[str, Any]:
        value = self.facts.get(name)
        return value if isinstance(value, dict) else {}

    def has(self, name: str) -> bool:
        return isinstance(self.facts.get(name), dict)

    # packages
    def package(self, name: str) -> Optional[Dict[str, Any]]:
        installed = self.section("packages").get("installed")
        if not isinstance(installed, dict):
            return None
        for key in (name, _canon(name), name.replace("-", "_")):
            records = installed.get(key)
            if isinstance(records, list) and records and isinstance(records[0], dict):
                return records[0]
        for key, records in installed.items():
            if _canon(str(key)) == _canon(name) and isinstance(records, list) and records:
                return records[0] if isinstance(records[0], dict) else None
        return None

    def packages_known(self) -> bool:
        return isinstance(self.section("packages").get("installed"), dict)

    def version(self, name: str) -> Optional[str]:
        rec = self.package(name)
        v = rec.get("version") if rec else None
        return str(v) if v else None

    # environment
    def env(self, name: str) -> Tuple[bool, Optional[str]]:
        """``(known, value)``: whether the variable's state is known, and its value.

        Order: ``environment.current`` (CANN-related variables, set ones only),
        ``devices.visibility``, ``hccl.variables`` (set ones only), ``cann.env``, then the
        diagnosed environment itself (live / ``--root``; absent for ``--from``)."""
        current = self.section("environment").get("current")
        if isinstance(current, dict) and _CURRENT_VARS.match(name):
            value = current.get(name)
            return True, value if isinstance(value, str) else None
        visibility = self.section("devices").get("visibility")
        if isinstance(visibility, dict) and name in visibility:
            value = visibility.get(name)
            return True, value if isinstance(value, str) else None
        variables = self.section("hccl").get("variables")
        if isinstance(variables, dict) and (name in variables or name.startswith("HCCL_")):
            value = variables.get(name)
            return True, value if isinstance(value, str) else None
        cann_env = self.section("cann").get("env")
        if isinstance(cann_env, dict) and name in cann_env:
            item = cann_env[name]
            return True, item.get("value") if isinstance(item, dict) else None
        if self.environ is not None:
            return True, self.environ.get(name)
        return False, None

    # cann
    def toolkits(self) -> Optional[List[Dict[str, Any]]]:
        cann = self.section("cann")
        tk = cann.get("toolkits")
        if not self.has("cann") or not isinstance(tk, list):
            return None
        return [t for t in tk if isinstance(t, dict)]

    def selected_toolkit(self) -> Optional[Dict[str, Any]]:
        sel = self.section("cann").get("selected")
        if isinstance(sel, dict):
            return sel
        tks = self.toolkits()
        return tks[0] if tks else None

    def findings_with_codes(self, codes: Sequence[str]) -> List[Any]:
        """The error/warning findings whose code is one of ``codes``."""
        return [
            f
            for f in self.findings
            if getattr(f, "code", "") in codes and getattr(f, "severity", "") in ("error", "warning")
        ]

    def findings_of_kind(self, kind: str) -> List[Any]:
        from npudoctor.knowledge.codes import registry

        out = []
        for f in self.findings:
            code = registry().get(getattr(f, "code", ""))
            if code is not None and kind in code.kinds and getattr(f, "severity", "") in ("error", "warning"):
                out.append(f)
        return out


def _toolkit_lib_dirs(tk: Mapping[str, Any]) -> List[str]:
    dirs = []
    for key in ("path", "resolved"):
        p = tk.get(key)
        if isinstance(p, str) and p:
            dirs.append(p.rstrip("/") + "/lib64")
            arch = tk.get("arch")
            if arch:
                dirs.append(f"{p.rstrip('/')}/{arch}-linux/lib64")
    return dirs


def _set_env_of(tk: Optional[Mapping[str, Any]]) -> str:
    if tk and isinstance(tk.get("set_env"), str) and tk.get("set_env"):
        return str(tk["set_env"])
    if tk and isinstance(tk.get("path"), str):
        path = str(tk["path"]).rstrip("/")
        parent = path.rsplit("/", 1)[0] if path.endswith(("/latest",)) or re.search(r"/\d[\w.\-]*$", path) else path
        return parent + "/set_env.sh"
    return "/usr/local/Ascend/ascend-toolkit/set_env.sh"


def check_no_toolkit(fv: FactView, caps: Mapping[str, str]) -> Verdict:
    tks = fv.toolkits()
    if tks is None:
        return UNKNOWN
    if not tks:
        searched = fv.section("cann").get("searched") or []
        where = f" (looked in {', '.join(map(str, searched[:4]))})" if searched else ""
        return Verdict("cause", [f"no CANN toolkit found on this machine{where}"])
    tk = fv.selected_toolkit() or tks[0]
    return Verdict("ruled_out", [f"CANN {tk.get('version') or '(version unknown)'} is installed at {tk.get('path')}"])


def check_toolkit_not_sourced(fv: FactView, caps: Mapping[str, str]) -> Verdict:
    tks = fv.toolkits()
    if tks is None:
        return UNKNOWN
    if not tks:
        return Verdict("ruled_out", ["no CANN toolkit is installed, so there is nothing to source"])
    tk = fv.selected_toolkit() or tks[0]
    values = {"toolkit": str(tk.get("path") or ""), "toolkit_set_env": _set_env_of(tk)}
    known, ld = fv.env("LD_LIBRARY_PATH")
    if not known:
        return Verdict(
            "unknown", [f"CANN is installed at {tk.get('path')}; the process environment is unknown"], values
        )
    entries = [p.rstrip("/") for p in (ld or "").split(":") if p]
    wanted = _toolkit_lib_dirs(tk)
    if not any(w in entries for w in wanted):
        shown = "unset" if not ld else f"= {ld}"
        return Verdict(
            "cause",
            [
                f"CANN {tk.get('version') or ''} is installed at {tk.get('path')}".replace("  ", " "),
                f"LD_LIBRARY_PATH {shown} (lacks {wanted[0] if wanted else '<toolkit>/lib64'})",
            ],
            values,
        )
    return Verdict("ruled_out", [f"LD_LIBRARY_PATH contains {tk.get('path')}/lib64"], values)


def check_toolkit_python_not_sourced(fv: FactView, caps: Mapping[str, str]) -> Verdict:
    """K10 on the Python side: set_env.sh puts ``<toolkit>/python/site-packages`` (te, tbe:
    CANN's op compiler) on PYTHONPATH (source: set_env.sh of the toolkit, e.g.
    samples/set_env_toolkit_8.0.0.sh.txt).  ``cause`` when a toolkit is installed and the
    diagnosed PYTHONPATH lacks that directory; ``ruled_out`` when no toolkit is installed
    (nothing to source) or PYTHONPATH has it; ``unknown`` without cann facts or a known
    environment."""
    tks = fv.toolkits()
    if tks is None:
        return UNKNOWN
    if not tks:
        return Verdict("ruled_out", ["no CANN toolkit is installed, so there is nothing to source"])
    tk = fv.selected_toolkit() or tks[0]
    values = {"toolkit": str(tk.get("path") or ""), "toolkit_set_env": _set_env_of(tk)}
    installed = f"CANN {tk.get('version') or ''} is installed at {tk.get('path')}".replace("  ", " ")
    known, pp = fv.env("PYTHONPATH")
    if not known:
        return Verdict("unknown", [f"{installed}; the process environment is unknown"], values)
    entries = [p.rstrip("/") for p in (pp or "").split(":") if p]
    wanted = [
        f"{str(tk[key]).rstrip('/')}/python/site-packages"
        for key in ("path", "resolved")
        if isinstance(tk.get(key), str)
    ]
    found = next((w for w in wanted if w in entries), None)
    if found is None:
        shown = "unset" if not pp else f"= {pp}"
        return Verdict(
            "cause",
            [installed, f"PYTHONPATH {shown} (lacks {wanted[0] if wanted else '<toolkit>/python/site-packages'})"],
            values,
        )
    return Verdict("ruled_out", [f"PYTHONPATH contains {found}"], values)


def check_container_without_cann(fv: FactView, caps: Mapping[str, str]) -> Verdict:
    ctr = fv.section("container")
    tks = fv.toolkits()
    if not fv.has("container") or tks is None:
        return UNKNOWN
    if ctr.get("in_container") and not tks:
        return Verdict("cause", ["running in a container", "no CANN toolkit inside it"])
    if not ctr.get("in_container"):
        return Verdict("ruled_out", ["not in a container"])
    return Verdict("ruled_out", ["the container has a CANN toolkit"])


def check_nnal(fv: FactView, caps: Mapping[str, str]) -> Verdict:
    if not fv.has("cann"):
        return UNKNOWN
    nnal = fv.section("cann").get("nnal")
    if not nnal:
        return Verdict("cause", ["no NNAL/ATB install found (nnal/atb)"])
    known, atb = fv.env("ATB_HOME_PATH")
    if known and not atb:
        return Verdict(
            "cause", [f"NNAL is at {nnal.get('path')} but ATB_HOME_PATH is unset (nnal/atb/set_env.sh not sourced)"]
        )
    return Verdict("no_sign", [f"NNAL at {nnal.get('path')}" + (f", ATB_HOME_PATH={atb}" if atb else "")])


def check_driver_missing(fv: FactView, caps: Mapping[str, str]) -> Verdict:
    if not fv.has("driver"):
        return UNKNOWN
    drv = fv.section("driver").get("driver")
    if not isinstance(drv, dict) or not drv.get("exists"):
        where = drv.get("path") if isinstance(drv, dict) else "/usr/local/Ascend/driver"
        ev = [f"no Ascend driver at {where or '/usr/local/Ascend/driver'}"]
        if fv.section("container").get("in_container"):
            ev.append("running in a container: the driver directory is not mounted")
        return Verdict("cause", ev)
    return Verdict("ruled_out", [f"driver {drv.get('version') or '(version unknown)'} at {drv.get('path')}"])


def check_npu_smi_missing(fv: FactView, caps: Mapping[str, str]) -> Verdict:
    """npu-smi not on PATH here (the devices probe ran it), whatever the driver
    directory holds: a container often gets driver/lib64 but not the tool itself."""
    if not fv.has("devices"):
        return check_driver_missing(fv, caps)
    smi = fv.section("devices").get("npu_smi") or {}
    if smi.get("available"):
        return Verdict("ruled_out", [f"npu-smi answers here ({smi.get('path')})"])
    if smi.get("cause") == "not-installed":
        ev = ["npu-smi is not on PATH here"]
        if fv.section("container").get("in_container"):
            ev.append("running in a container: mount npu-smi (/usr/local/bin or /usr/local/sbin) and /usr/local/dcmi")
        return Verdict("cause", ev)
    return Verdict("no_sign", [f"npu-smi is on PATH ({smi.get('path') or 'found'}) but failed: {smi.get('cause')}"])


def _require_pin(record: Optional[Mapping[str, Any]], dep: str) -> Optional[str]:
    if not record:
        return None
    for req in record.get("requires_dist") or []:
        m = re.match(rf"^\s*{dep}\s*(?:\[[^\]]*\])?\s*\(?\s*==\s*([^\s,;)]+)", str(req), re.I)
        if m:
            return m.group(1)
    return None


def _same_release(a: str, b: str) -> bool:
    return a.split("+")[0] == b.split("+")[0]


def check_torch_pair(fv: FactView, caps: Mapping[str, str]) -> Verdict:
    if not fv.packages_known():
        return UNKNOWN
    torch_v = fv.version("torch")
    npu = fv.package("torch-npu")
    wanted = _require_pin(npu, "torch")
    values = {"torch_required": wanted or "<the version torch_npu requires>", "torch_version": torch_v or "none"}
    if npu is None:
        return Verdict("no_sign", ["torch_npu is not installed"], values)
    if torch_v is None:
        return Verdict("cause", [f"torch_npu {npu.get('version')} is installed but torch is not"], values)
    if wanted and not _same_release(wanted, torch_v):
        return Verdict(
            "cause",
            [f"torch_npu {npu.get('version')} requires torch=={wanted}", f"installed torch is {torch_v}"],
            values,
        )
    if wanted:
        return Verdict("ruled_out", [f"torch {torch_v} is what torch_npu {npu.get('version')} requires"], values)
    tm = re.match(r"(\d+)\.(\d+)", torch_v)
    nm = re.match(r"(\d+)\.(\d+)", str(npu.get("version") or ""))
    if tm and nm and tm.groups() != nm.groups():
        return Verdict("cause", [f"torch {torch_v} and torch_npu {npu.get('version')} are different releases"], values)
    return Verdict("no_sign", [f"torch {torch_v}, torch_npu {npu.get('version')}"], values)


def check_torchvision_pair(fv: FactView, caps: Mapping[str, str]) -> Verdict:
    if not fv.packages_known():
        return UNKNOWN
    tv = fv.version("torchvision")
    torch_v = fv.version("torch")
    if not tv or not torch_v:
        return Verdict("no_sign", ["torchvision or torch not installed"])
    pin = _require_pin(fv.package("torchvision"), "torch")
    tm = re.match(r"(\d+)\.(\d+)", torch_v)
    wanted = f"0.{int(tm.group(2)) + 15}.*" if tm and tm.group(1) == "2" else "<the release built for your torch>"
    values = {"torchvision_version": tv, "torch_version": torch_v, "torchvision_wanted": wanted}
    if pin and not _same_release(pin, torch_v):
        return Verdict("cause", [f"torchvision {tv} requires torch=={pin}", f"installed torch is {torch_v}"], values)
    vm = re.match(r"0\.(\d+)", tv)
    if tm and vm and tm.group(1) == "2" and int(vm.group(1)) != int(tm.group(2)) + 15:
        return Verdict(
            "cause", [f"torchvision {tv} is not the release for torch {torch_v} (0.{int(tm.group(2)) + 15})"], values
        )
    return Verdict("ruled_out", [f"torchvision {tv} matches torch {torch_v}"], values)


def _version_tuple(text: str) -> Tuple[int, ...]:
    nums = re.findall(r"\d+", text.split("+")[0])
    return tuple(int(n) for n in nums[:3])


def check_numpy2(fv: FactView, caps: Mapping[str, str]) -> Verdict:
    if not fv.packages_known():
        return UNKNOWN
    np_v = fv.version("numpy")
    values = {"numpy_version": np_v or "none"}
    if not np_v:
        return Verdict("ruled_out", ["numpy is not installed"], values)
    if _version_tuple(np_v) < (2,):
        return Verdict("ruled_out", [f"numpy {np_v} is < 2"], values)
    tk = fv.selected_toolkit()
    cann_v = str((tk or {}).get("version") or "")
    major = _version_tuple(cann_v)[:1]
    if major and major[0] >= 9:
        return Verdict("no_sign", [f"numpy {np_v} is installed, but CANN {cann_v} accepts NumPy 2"], values)
    ev = [f"numpy {np_v} is installed"]
    if cann_v:
        ev.append(f"CANN {cann_v} requires numpy < 2")
    return Verdict("cause", ev, values)


def check_cann_py_deps(fv: FactView, caps: Mapping[str, str]) -> Verdict:
    if not fv.packages_known():
        return UNKNOWN
    modules = fv.section("packages").get("modules")
    modules = modules if isinstance(modules, dict) else {}
    missing = []
    for dist, module in _CANN_PY_DEPS:
        if fv.package(dist) is not None or modules.get(module) or modules.get(module.split(".")[0]):
            continue
        missing.append(dist)
    values = {"missing": ", ".join(missing), "missing_pip": " ".join(missing)}
    if missing:
        return Verdict("cause", [f"not installed in this interpreter: {', '.join(missing)}"], values)
    return Verdict("ruled_out", ["every CANN Python dependency is installed"], values)


def _indices(text: str) -> Optional[List[int]]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    try:
        return [int(t) for t in items]
    except ValueError:
        return None


def check_visible_devices(fv: FactView, caps: Mapping[str, str]) -> Verdict:
    ev: List[str] = []
    values: Dict[str, str] = {}
    # The log line itself may carry the answer ("set ASCEND_RT_VISIBLE_DEVICES:4 error, input data rang[0-2)").
    value, high = caps.get("value"), caps.get("high")
    if value and high and high.isdigit():
        idx = _indices(value)
        if idx is not None and any(i >= int(high) for i in idx):
            values["visible_detail"] = f"ASCEND_RT_VISIBLE_DEVICES={value} but only {high} device(s) are visible"
            return Verdict(
                "cause",
                [
                    f"the runtime saw {high} device(s) and ASCEND_RT_VISIBLE_DEVICES={value} (indices are 0-based over visible devices)"
                ],
                values,
            )
    known, rt = fv.env("ASCEND_RT_VISIBLE_DEVICES")
    _, av = fv.env("ASCEND_VISIBLE_DEVICES")
    count = fv.section("devices").get("visible_count")
    if not caps.get("high") and isinstance(count, int):
        values["high"] = str(count)  # for texts written around the "input data rang[0-N)" capture
    if rt is not None and not rt.strip():
        # Set but empty: no device at all (Ray writes '' for workers given no NPU).
        values["visible_detail"] = "ASCEND_RT_VISIBLE_DEVICES is set but empty, so no NPU is visible"
        ray = fv.section("devices").get("ray") or []
        evidence = [values["visible_detail"]]
        if ray:
            evidence.append(f"the process was started by Ray ({', '.join(map(str, ray[:3]))} set), which rewrites it")
        return Verdict("cause", evidence, values)
    if rt:
        idx = _indices(rt)
        problems = []
        if idx is None:
            problems.append(f"ASCEND_RT_VISIBLE_DEVICES={rt} is not a list of integers")
        else:
            if idx != sorted(set(idx)):
                problems.append(f"ASCEND_RT_VISIBLE_DEVICES={rt} is not unique and ascending")
            if isinstance(count, int) and any(i >= count for i in idx):
                problems.append(f"ASCEND_RT_VISIBLE_DEVICES={rt} names an index >= the {count} visible device(s)")
        if problems:
            values["visible_detail"] = "; ".join(problems)
            return Verdict("cause", problems, values)
        ev.append(
            f"ASCEND_RT_VISIBLE_DEVICES={rt} looks valid"
            + (f" for {count} visible device(s)" if isinstance(count, int) else "")
        )
    elif av and isinstance(count, int) and count > len(_indices(av) or []):
        values["visible_detail"] = (
            f"ASCEND_VISIBLE_DEVICES={av} but {count} devices are visible and ASCEND_RT_VISIBLE_DEVICES is unset"
        )
        return Verdict("cause", [values["visible_detail"]], values)
    found = fv.findings_of_kind("K18")
    if found:
        values["visible_detail"] = found[0].title
        return Verdict("cause", [f"{f.code}: {f.title}" for f in found], values)
    if not known and not fv.has("devices"):
        return UNKNOWN
    values["visible_detail"] = ev[0] if ev else "ASCEND_RT_VISIBLE_DEVICES unset"
    return Verdict("no_sign", ev or ["ASCEND_RT_VISIBLE_DEVICES is unset"], values)


def check_npu_busy(fv: FactView, caps: Mapping[str, str]) -> Verdict:
    if not fv.has("devices"):
        return UNKNOWN
    smi = fv.section("devices").get("npu_smi") or {}
    values = {"npu_smi_error": str(smi.get("message") or smi.get("error") or "npu-smi ok")}
    if smi.get("cause") == "busy" or smi.get("code") in (-8005, -8020):
        return Verdict("cause", [f"npu-smi: {smi.get('message') or smi.get('error')}"], values)
    if smi.get("available"):
        return Verdict("no_sign", ["npu-smi answers normally"], values)
    return Verdict("unknown", [f"npu-smi: {smi.get('error') or 'not run'}"], values)


def check_no_device_nodes(fv: FactView, caps: Mapping[str, str]) -> Verdict:
    if not fv.has("devices"):
        return UNKNOWN
    nodes = fv.section("devices").get("nodes") or []
    chips = [n for n in nodes if isinstance(n, dict) and n.get("kind") == "chip" and n.get("exists")]
    if not chips:
        return Verdict("cause", ["no /dev/davinciN device nodes here"])
    return Verdict("ruled_out", [f"{len(chips)} /dev/davinciN node(s) present"])


def check_device_permissions(fv: FactView, caps: Mapping[str, str]) -> Verdict:
    ident = fv.section("host").get("identity") or {}
    values = {"identity_detail": f"uid {ident.get('uid')}" if ident else "identity unknown"}
    if ident and ident.get("has_passwd_entry") is False and ident.get("uid") not in (0, None):
        # root needs no passwd entry to open the nodes (rules/devices.py DEV022 says the same)
        values["identity_detail"] = f"uid {ident.get('uid')} has no /etc/passwd entry"
        return Verdict("cause", [values["identity_detail"]], values)
    nodes = fv.section("devices").get("nodes") or []
    denied = [
        n.get("path")
        for n in nodes
        if isinstance(n, dict) and n.get("exists") and n.get("accessible_by_identity") is False
    ]
    if denied:
        values["identity_detail"] = f"uid {ident.get('uid')} cannot open {', '.join(map(str, denied[:4]))}"
        return Verdict("cause", [values["identity_detail"]], values)
    if not ident and not nodes:
        return Verdict("unknown", [], values)
    return Verdict(
        "no_sign",
        [f"uid {ident.get('uid')} can open the device nodes" if nodes else "no device nodes to judge"],
        values,
    )


def check_hccl_timeouts(fv: FactView, caps: Mapping[str, str]) -> Verdict:
    known, value = fv.env("HCCL_CONNECT_TIMEOUT")
    _, exec_t = fv.env("HCCL_EXEC_TIMEOUT")
    values = {
        "hccl_connect_timeout": f"{value} s" if value else "unset (120 s)",
        "hccl_detail": f"HCCL_CONNECT_TIMEOUT={value or 'unset'}, HCCL_EXEC_TIMEOUT={exec_t or 'unset'}",
    }
    if not known:
        return Verdict("unknown", [], values)
    if not value or (value.isdigit() and int(value) < 300):
        return Verdict(
            "cause",
            [f"HCCL_CONNECT_TIMEOUT is {values['hccl_connect_timeout']} (ranks that start far apart need 600-900 s)"],
            values,
        )
    return Verdict("no_sign", [f"HCCL_CONNECT_TIMEOUT={value}"], values)


def check_hccn_conf(fv: FactView, caps: Mapping[str, str]) -> Verdict:
    if not fv.has("hccl"):
        return UNKNOWN
    conf = fv.section("hccl").get("hccn_conf") or {}
    if not conf.get("present"):
        return Verdict("cause", ["/etc/hccn.conf is not present here"])
    if not conf.get("devices"):
        return Verdict("cause", ["/etc/hccn.conf has no address_N entries"])
    return Verdict("no_sign", [f"/etc/hccn.conf lists {len(conf['devices'])} device(s)"])


def check_shadowing(fv: FactView, caps: Mapping[str, str]) -> Verdict:
    if not fv.has("python"):
        return UNKNOWN
    sh = (fv.section("python").get("shadowing") or {}).get("torch_npu")
    if isinstance(sh, dict) and sh.get("shadowed"):
        return Verdict(
            "cause",
            [f"torch_npu would be imported from {sh.get('origin')} (working directory), not the installed package"],
        )
    if isinstance(sh, dict):
        return Verdict("ruled_out", ["torch_npu is not shadowed by the working directory"])
    return UNKNOWN


def check_libgomp_tls(fv: FactView, caps: Mapping[str, str]) -> Verdict:
    arch = fv.section("host").get("arch") or fv.section("python").get("machine")
    if not arch:
        return UNKNOWN
    if arch != "aarch64":
        return Verdict("no_sign", [f"this machine is {arch}; the static-TLS limit bites on aarch64"])
    return Verdict("cause", ["aarch64 machine", f"the failing library: {caps.get('lib', 'libgomp')}"])


def _cann_version_values(fv: FactView) -> Dict[str, str]:
    tk = fv.selected_toolkit()
    return {"cann_version": str((tk or {}).get("version") or "(none)")}


def _by_findings_only(kind: str) -> Callable[[FactView, Mapping[str, str]], Verdict]:
    def check(fv: FactView, caps: Mapping[str, str]) -> Verdict:
        # The rules judge this kind with the matrix; a finding of this kind decides it.
        return Verdict("unknown", [], _cann_version_values(fv))

    check.__name__ = f"check_findings_{kind}"
    return check


def check_disk_full(fv: FactView, caps: Mapping[str, str]) -> Verdict:
    # The host rules (rules/host.py, HOST002/HOST003) measure free space and writability
    # where CANN writes; their titles name the directory and what is left.
    found = fv.findings_of_kind("K22")
    detail = "; ".join(f.title for f in found[:2]) if found else "see the host findings"
    return Verdict("unknown", [], {"disk_detail": detail})


#: Named fact checks used by ``check = "..."`` in errors.toml.
CHECKS: Dict[str, Callable[[FactView, Mapping[str, str]], Verdict]] = {
    "no_toolkit": check_no_toolkit,
    "toolkit_not_sourced": check_toolkit_not_sourced,
    "toolkit_python_not_sourced": check_toolkit_python_not_sourced,
    "container_without_cann": check_container_without_cann,
    "nnal_missing_or_unsourced": check_nnal,
    "driver_missing": check_driver_missing,
    "npu_smi_missing": check_npu_smi_missing,
    "torch_pair": check_torch_pair,
    "torchvision_pair": check_torchvision_pair,
    "numpy2": check_numpy2,
    "cann_py_deps": check_cann_py_deps,
    "visible_devices": check_visible_devices,
    "npu_busy": check_npu_busy,
    "no_device_nodes": check_no_device_nodes,
    "device_permissions": check_device_permissions,
    "hccl_timeouts": check_hccl_timeouts,
    "hccn_conf": check_hccn_conf,
    "shadowing": check_shadowing,
    "libgomp_tls": check_libgomp_tls,
    "cann_pair": _by_findings_only("K05"),
    "driver_cann_pair": _by_findings_only("K14"),
    "kernels": _by_findings_only("K12"),
    "chip_support": _by_findings_only("K13"),
    "disk_full": check_disk_full,
}

_STATUS_SCORE = {"cause": 3, "unknown": 1, "no_sign": 0, "ruled_out": -1}
STATUS_LABEL = {
    "cause": "the cause here",
    "unknown": "possible (not checked)",
    "no_sign": "no sign of it here",
    "ruled_out": "ruled out",
}


class _Fill(string.Formatter):
    def get_value(self, key: Any, args: Any, kwargs: Any) -> Any:
        if isinstance(key, str) and key in kwargs:
            return kwargs[key]
        return "{" + str(key) + "}"


def fill(text: str, values: Mapping[str, str]) -> str:
    """``text`` with ``{name}`` placeholders replaced from ``values`` (unknown ones kept)."""
    try:
        return _Fill().vformat(text, (), dict(values))
    except (ValueError, IndexError):
        return text


def judge_cause(cause: Cause, fv: FactView, caps: Mapping[str, str], base: Mapping[str, str]) -> Dict[str, Any]:
    """Decide one cause: run its named check, then let the findings of its kind (and
    those its ``confirmed_by`` names) confirm it -- unless the check ruled it out."""
    verdict = CHECKS[cause.check](fv, caps) if cause.check else Verdict("unknown")
    values = dict(base)
    values.update(caps)
    values.update(verdict.values)
    status, evidence = verdict.status, list(verdict.evidence)
    confirmed: List[str] = []
    fixes: List[str] = []
    if status != "ruled_out":
        confirming = fv.findings_of_kind(cause.kind) if cause.kind else []
        confirming += [f for f in fv.findings_with_codes(cause.confirmed_by) if all(f is not g for g in confirming)]
        for f in confirming:
            confirmed.append(f"{f.code}: {f.title}")
            fixes.extend(f.fix)
        if confirmed and status in ("unknown", "no_sign"):
            status = "cause"
    out_fix = [fill(x, values) for x in cause.fix]
    for x in fixes:
        if x not in out_fix:
            out_fix.append(x)
    return {
        "kind": cause.kind or None,
        "text": cause.text,
        "status": status,
        "label": STATUS_LABEL[status],
        "here": fill(cause.here, values) if status == "cause" else None,
        "evidence": evidence + confirmed,
        "findings": [c.split(":", 1)[0] for c in confirmed],
        "fix": out_fix,
    }


def _base_values(fv: FactView) -> Dict[str, str]:
    py = fv.section("python").get("executable")
    tk = fv.selected_toolkit()
    values = {"python": str(py) if py else "python", "toolkit_set_env": _set_env_of(tk)}
    if tk and tk.get("path"):
        values["toolkit"] = str(tk["path"])
    values.update(_cann_version_values(fv))
    return values


def rank_group(group: Group, fv: FactView) -> Dict[str, Any]:
    """The JSON record of one group with its causes ranked by the facts."""
    entry = group.entry
    base = _base_values(fv)
    judged = [judge_cause(c, fv, group.captures, base) for c in entry.causes]
    order = {id(j): i for i, j in enumerate(judged)}
    judged.sort(key=lambda j: (-_STATUS_SCORE[j["status"]], order[id(j)]))
    top = judged[0] if judged else None
    conclusion = top["here"] if top and top["status"] == "cause" else None
    values = dict(base)
    values.update(group.captures)
    return {
        "id": entry.id,
        "title": fill(entry.title, group.captures),
        "severity": entry.severity,
        "follow_on": entry.follow_on,
        "count": group.count,
        "first": {"source": group.first.source, "line": group.first.line},
        "last": {"source": group.last.source, "line": group.last.line},
        "sample": group.sample,
        "captures": dict(group.captures),
        "meaning": entry.meaning,
        "kinds": list(entry.kinds),
        "decide": list(entry.decide),
        "causes": judged,
        "conclusion": conclusion,
        "fix": top["fix"] if top and top["status"] == "cause" else [fill(x, values) for x in entry.fix],
        "sources": list(entry.sources),
    }


def rank(scanner: Scanner, fv: FactView) -> Dict[str, Any]:
    """The triage result (the ``--json`` contract of ``npudoctor triage``)::

    sources   [{name, lines, bytes, error, long_lines}]
    known     [group record (see rank_group)] in order of first appearance
    unknown   [{text, count, first, last}] error-looking lines no signature matched
    unknown_dropped   how many more distinct unknown lines were only counted
    summary   {known_errors, known_warnings, noise, unknown}
    first_error   id of the earliest error that is not a follow-on (or None)
    verdict   one line: the conclusion for the first error, or None
    """
    groups = sorted(scanner.groups.values(), key=lambda g: (_source_index(scanner, g.first.source), g.first.line))
    known = [rank_group(g, fv) for g in groups]
    unknown = [
        {
            "text": u.sample,
            "count": u.count,
            "first": {"source": u.first.source, "line": u.first.line},
            "last": {"source": u.last.source, "line": u.last.line},
        }
        for u in sorted(scanner.unknown.values(), key=lambda u: (_source_index(scanner, u.first.source), u.first.line))
    ]
    errors = [k for k in known if k["severity"] == "error"]
    primary = [k for k in errors if not k["follow_on"]] or errors
    first = primary[0] if primary else None
    verdict = None
    if first is not None:
        concluded = next((k for k in primary if k["conclusion"]), None)
        verdict = concluded["conclusion"] if concluded else None
    return {
        "sources": [
            {"name": s.name, "lines": s.lines, "bytes": s.bytes, "error": s.error, "long_lines": s.long_lines}
            for s in scanner.sources
        ],
        "known": known,
        "unknown": unknown,
        "unknown_dropped": scanner.unknown_dropped,
        "summary": {
            "known_errors": sum(k["count"] for k in known if k["severity"] == "error"),
            "known_warnings": sum(k["count"] for k in known if k["severity"] == "warning"),
            "noise": sum(k["count"] for k in known if k["severity"] == "noise"),
            "unknown": sum(u["count"] for u in unknown) + scanner.unknown_dropped,
        },
        "first_error": first["id"] if first else None,
        "verdict": verdict,
    }


def _source_index(scanner: Scanner, name: str) -> int:
    for i, s in enumerate(scanner.sources):
        if s.name == name:
            return i
    return len(scanner.sources)


def triage_text(text: str, facts: Optional[Mapping[str, Any]] = None, findings: Iterable[Any] = ()) -> Dict[str, Any]:
    """Convenience: triage an in-memory log (tests, the deep probe's stderr)."""
    import io

    sc = Scanner(load_kb())
    sc.feed("<text>", io.BytesIO(text.encode("utf-8", "replace")))
    return rank(sc, FactView(facts, list(findings)))
