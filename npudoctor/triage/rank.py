"""Ranking: order the candidate causes of each signature found by the rule findings.

Triage judges nothing itself.  A cause (``[[entry.causes]]`` of
``npudoctor/knowledge/signatures.toml``) is

* ``cause``      -- the matched log line states it (``stated_by`` captures present; findings
                    of its ``confirmed_by`` codes add their evidence and fix), or an
                    error/warning finding of a code in its ``confirmed_by`` was made (when
                    the line names the library it is about, a finding naming libraries
                    counts only if it names that one);
* ``ruled_out``  -- a finding of a code in its ``refuted_by`` was made;
* ``no_sign``    -- the rules behind its ``confirmed_by`` codes ran over the facts they
                    read (their areas' sections are present) and made no such finding;
* ``unknown``    -- otherwise ("possible (not checked)": no facts, or a fact-free cause).

A line of another signature the log holds may decide (``decided_by``): causes of other kinds
are ruled out, and one of the kind that line concluded takes its conclusion.  Once a cause
concludes, the other causes of its kind are not listed (one root cause).

The findings are those of :func:`npudoctor.engine.evaluate` over the same facts, so triage
and ``npudoctor check`` cannot disagree.  Facts are read only for display values (the
interpreter path, the toolkit path and its set_env.sh, the CANN version) that fill the
``{placeholders}`` of the texts; ``{finding}`` is the title of the first confirming finding.
A confirmed cause's fix is its findings' fix (the rules write the remedies); the cause's own
steps are shown when no finding carries one.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence

from npudoctor.facts import Facts
from npudoctor.facts.coverage import not_checked
from npudoctor.findings import Finding, fix_referred
from npudoctor.knowledge.codes import registry
from npudoctor.knowledge.error_codes import OfficialCode, lookup_in_text, lookup_label
from npudoctor.knowledge.signatures import FRAME_OWNERS, Cause, Decision, fill
from npudoctor.triage.evidence import lib_names, names_of, tie
from npudoctor.triage.scan import Group, Scanner

if TYPE_CHECKING:
    from npudoctor.facts.stack import Toolkit

#: The evidence of a cause the matched line states (its captures follow).
STATED = "the log line states it: "

_STATUS_SCORE = {"cause": 3, "unknown": 1, "no_sign": 0, "ruled_out": -1}

#: How each status is shown.
STATUS_LABEL = {
    "cause": "the cause here",
    "unknown": "possible (not checked)",
    "no_sign": "no sign of it here",
    "ruled_out": "ruled out",
}


def _selected_toolkit(facts: Facts) -> Optional[Toolkit]:
    """The toolkit in use, else the first one installed, else ``None``."""
    cann = facts.cann
    if cann.selected is not None:
        return cann.selected
    return cann.toolkits[0] if cann.toolkits else None


def _set_env_of(tk: Optional[Toolkit]) -> str:
    if tk is not None and tk.set_env:
        return tk.set_env
    if tk is not None and tk.path:
        path = tk.path.rstrip("/")
        parent = path.rsplit("/", 1)[0] if path.endswith("/latest") or re.search(r"/[0-9][\w.\-]*$", path) else path
        return parent + "/set_env.sh"
    return "/usr/local/Ascend/ascend-toolkit/set_env.sh"


def _protobuf_requirement(cann: Optional[str]) -> str:
    """The protobuf argument of a pip line for CANN ``cann``: ``'protobuf==3.20.*'`` (quoted
    for the shell) where the matrix states its version, else ``protobuf``."""
    if not cann:
        return "protobuf"
    from npudoctor.knowledge.matrix import MatrixError, load_matrix

    try:
        pin = load_matrix().protobuf_pin(cann)
    except MatrixError:
        return "protobuf"
    return f"'{pin}'" if pin != "protobuf" else pin


def display_values(facts: Facts) -> Dict[str, str]:
    """Values that fill the texts' placeholders, read from the typed views: ``python`` (the
    interpreter's path, else ``python``), ``toolkit`` (the selected CANN path, when known),
    ``toolkit_set_env`` (its set_env.sh), ``cann_version`` (``(none)`` when unknown) and
    ``protobuf`` (the pip argument of the protobuf that CANN needs, from the matrix).
    Read, never judged.  A section not in the snapshot (``triage --no-facts``) gives the
    defaults without building its view (whose module a triage need not import)."""
    py = facts.python.executable if facts.present("python") else None
    tk = _selected_toolkit(facts) if facts.present("cann") else None
    values = {"python": py or "python", "toolkit_set_env": _set_env_of(tk)}
    if tk is not None and tk.path:
        values["toolkit"] = tk.path
    values["cann_version"] = (tk.version if tk is not None else None) or "(none)"
    values["protobuf"] = _protobuf_requirement(tk.version if tk is not None else None)
    for placeholder, (name, default) in HCCL_TIMEOUTS.items():
        values[placeholder] = _in_use(facts, name, default)
    return values


#: Placeholder -> the HCCL timeout variable and HCCL's default (seconds) when it is unset, as the
#: official texts of EI0006 (connect, 120 s) and EI0002 (execution, 1800 s) give them.
HCCL_TIMEOUTS = {
    "hccl_connect_timeout": ("HCCL_CONNECT_TIMEOUT", 120),
    "hccl_exec_timeout": ("HCCL_EXEC_TIMEOUT", 1800),
}


def _in_use(facts: Facts, name: str, default: int) -> str:
    """One sentence (with a leading space) naming the value of the HCCL variable ``name`` in use
    on this machine, or ``""`` when its HCCL facts are not known."""
    if not facts.present("hccl"):
        return ""
    value = facts.hccl.variables.get(name)
    return f" In use here: {name}={value}." if value else f" In use here: {name} unset (HCCL's default {default} s)."


def _judged(cause: Cause, facts: Mapping[str, Any]) -> bool:
    """True when every rule behind ``cause.confirmed_by`` could judge its area on ``facts``
    (:func:`npudoctor.facts.coverage.not_checked`: present and actually looked at)."""
    if not cause.confirmed_by or not facts:
        return False
    for code in cause.confirmed_by:
        declared = registry().get(code)
        if declared is None or not_checked(facts, declared.area) is not None:
            return False
    return True


def _findings_fix(found: Sequence[Finding], every: Sequence[Finding] = ()) -> List[str]:
    """The fix lines of ``found`` in order: each finding's lines whole (a cleanup may run one
    command twice, once per copy it removes), a line an earlier finding gave left out.  A
    line that points to another finding's fix (``then apply NNAL's environment (ENV005's
    fix)``) gives that finding's lines, found among ``every`` (triage prints no other
    finding's fix to point to)."""
    by_code = {f.code: f for f in every}
    out: List[str] = []
    for f in found:
        earlier = set(out)
        for x in f.fix:
            referred = by_code.get(fix_referred(x) or "")
            lines = list(referred.fix) if referred is not None and referred.fix else [x]
            out.extend(y for y in lines if y not in earlier)
    return out


def _finding_lines(found: Sequence[Finding]) -> List[str]:
    """Each finding's ``CODE: title`` and its evidence lines, each said once: a line already
    given, or one whose statement the title already makes (a graded verdict's
    ``words: source`` under a title ending in ``words (source)``), is left out."""
    out: List[str] = []
    for f in found:
        out.append(f"{f.code}: {f.title}")
        out.extend(e for e in f.evidence if e not in out and not _in_title(e, f.title))
    return out


def _in_title(line: str, title: str) -> bool:
    said = line.partition(": ")[2] or line
    return len(said) >= 20 and said in title


#: Captures naming the one library a loader line is about (``lib``: "cannot open shared
#: object file"; ``library``: "version `X' not found (required by ...)"'s provider).
_LINE_LIBRARY = ("lib", "library")


def _about_line(findings: Sequence[Finding], captures: Mapping[str, str]) -> List[Finding]:
    """``findings`` narrowed to those that may be about the library the matched line names:
    a finding naming libraries (``names_of``) confirms only the line of one of them, so two
    missing libraries with a finding each tie each line to its own finding.  Findings naming
    no library, and lines naming none, are kept as they are."""
    wanted = {n for key in _LINE_LIBRARY for n in lib_names(captures.get(key) or "")}
    if not wanted:
        return list(findings)
    out = []
    for f in findings:
        libs = {n for n in names_of(f) if n.endswith(".so")}
        if not libs or libs & wanted:
            out.append(f)
    return out


def _other_owner(cause: Cause, captures: Mapping[str, str]) -> str:
    """For a cause stated by the owner of an import error (``in_cann``, ``in_package``,
    ``in_code``): the other owner the line's last traceback frame names (``in_package=trl``),
    which rules the cause out; ``""`` otherwise."""
    if not cause.stated_by or not set(cause.stated_by) <= set(FRAME_OWNERS):
        return ""
    return ", ".join(f"{k}={captures[k]}" for k in FRAME_OWNERS if k not in cause.stated_by and captures.get(k))


def judge_cause(
    cause: Cause,
    findings: Sequence[Finding],
    captures: Mapping[str, str],
    values: Mapping[str, str],
    facts: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Any]:
    """The JSON record of one cause judged by ``findings`` (see the module doc).

    ``captures`` are the matched line's named groups, ``values`` the display values
    (:func:`display_values`), ``facts`` the facts the findings were computed on (only
    which sections are present is used, to tell ``no_sign`` from ``unknown``).  Keys:
    ``kind`` (or ``None``), ``text``, ``status``, ``label``, ``here`` (when ``cause``),
    ``evidence`` (strings), ``findings`` (confirming codes), ``fix`` (steps).  The
    codes must be registered (the rule modules imported, as ``evaluate`` does) for
    ``no_sign`` to be told from ``unknown``.
    """
    filled = dict(values)
    filled.update(captures)
    confirming: List[Finding] = []
    evidence: List[str] = []
    confirmed = _about_line(cause.confirming(findings), captures)
    owner = _other_owner(cause, captures)
    if cause.stated(captures):
        # the line says it; findings of the cause's codes on these facts agree and write the fix
        status = "cause"
        evidence = [STATED + ", ".join(f"{n}={captures[n]}" for n in cause.stated_by)]
        confirming = confirmed
        evidence.extend(_finding_lines(confirming))
        if confirming:
            filled["finding"] = confirming[0].title
    elif owner:
        status = "ruled_out"
        evidence = [f"the traceback's last frame names another owner: {owner}"]
    elif cause.refuting(findings):
        status = "ruled_out"
        evidence = [f"{f.code}: {f.title}" for f in cause.refuting(findings)]
    elif confirmed:
        status = "cause"
        confirming = confirmed
        evidence = _finding_lines(confirming)
        filled["finding"] = confirming[0].title
    elif _judged(cause, facts or {}):
        status = "no_sign"
        evidence = [f"no {'/'.join(cause.confirmed_by)} finding on these facts"]
    else:
        status = "unknown"
    # The rules write the remedies: a confirmed cause's fix is its findings' fix; the
    # cause's own steps are the fallback (stated causes, findings without a fix).
    fix = _findings_fix(confirming, findings) or [fill(x, filled) for x in cause.fix]
    return {
        "kind": cause.kind or None,
        "text": cause.text,
        "status": status,
        "label": STATUS_LABEL[status],
        "here": fill(cause.here, filled) if status == "cause" else None,
        "evidence": evidence,
        "findings": list(dict.fromkeys(f.code for f in confirming)),
        "fix": fix,
    }


def _open_fix(steps: Sequence[str], judged: Sequence[Dict[str, Any]], values: Mapping[str, str]) -> List[str]:
    """The signature's own fix (``steps``, filled with ``values``) for a line no cause
    concludes: without the steps of the causes the facts show absent (``no_sign``,
    ``ruled_out``), and none at all when every cause was judged absent (its fix would
    be the fix of a cause ruled out)."""
    if judged and all(j["status"] in ("no_sign", "ruled_out") for j in judged):
        return []
    absent = {x for j in judged if j["status"] in ("no_sign", "ruled_out") for x in j["fix"]}
    return [x for x in (fill(s, values) for s in steps) if x not in absent]


def _code_of(record: Dict[str, Any]) -> str:
    """How a ranked group is named in another group's evidence: its code (``E30006``), else its id."""
    label = record.get("label") or ""
    return label.partition(":")[2] or record["id"]


def _decide(judged: List[Dict[str, Any]], decision: Decision, decider: Dict[str, Any], source: str) -> None:
    """Narrow ``judged`` (one group's causes) by the line of another signature the log holds
    (``decider``, the ranked record of ``decision.entry``): a cause of a kind outside
    ``decision.kinds`` is ruled out, whatever the facts say of it; a cause of the kind the
    decider concluded takes that conclusion when the facts alone did not.  ``source``: the
    input of the group judged (a decider in another one is named with its input)."""
    code, line = _code_of(decider), decider["first"]["line"]
    if decider["first"]["source"] != source:  # the line of another input
        line = f"{decider['first']['source']}:{line}"
    top = decider["causes"][0] if decider["causes"] else None
    for j in judged:
        if j["kind"] not in decision.kinds:
            j.update(
                status="ruled_out",
                label=STATUS_LABEL["ruled_out"],
                here=None,
                evidence=[f"the log's {code} at line {line} points to another cause"],
                findings=[],
            )
        elif j["status"] != "cause" and top is not None and top["status"] == "cause" and top["kind"] == j["kind"]:
            j.update(
                status="cause",
                label=STATUS_LABEL["cause"],
                here=top["here"],
                evidence=[f"the log's {code} at line {line} states it"]
                + [e for e in top["evidence"] if not e.startswith(STATED)],
                findings=list(top["findings"]),
                fix=list(top["fix"]),
            )


def rank_group(
    group: Group,
    findings: Sequence[Finding],
    facts: Optional[Mapping[str, Any]] = None,
    decided: Optional[Dict[str, Dict[str, Any]]] = None,
) -> Dict[str, Any]:
    """The JSON record of one group with its causes ranked (``causes``: best first, ties
    in KB order; ``conclusion``: the top cause's ``here`` when it is ``cause``).
    ``decided``: the ranked records of the other groups of the log by signature id (the
    first of each, in log order), for an entry whose ``decided_by`` names one of them."""
    entry = group.entry
    base = display_values(Facts(facts or {}))
    judged = [judge_cause(c, findings, group.captures, base, facts) for c in entry.causes]
    # the first line of the log that decides, when several could
    decision = next((d for eid in (decided or {}) for d in entry.decided_by if d.entry == eid), None)
    if decision is not None and decided is not None:
        _decide(judged, decision, decided[decision.entry], group.first.source)
    order = {id(j): i for i, j in enumerate(judged)}
    judged.sort(key=lambda j: (-_STATUS_SCORE[j["status"]], order[id(j)]))
    top = judged[0] if judged else None
    if top is not None and top["status"] == "cause" and top["kind"]:
        # one root cause: the other causes of its kind say the same (or, unconfirmed, would
        # seem to deny what the top one shows); those ruled out for a reason of their own stay
        judged = [top] + [j for j in judged[1:] if j["kind"] != top["kind"] or j["status"] == "ruled_out"]
    concluded = top is not None and top["status"] == "cause"
    own = entry.values(group.captures)
    values = dict(base)
    values.update(own)
    label = fill(entry.label, own) if entry.label else None
    official = lookup_label(label) if label else None
    if official is None:
        # a line a message signature claimed may still carry a CANN code of the tables
        official = lookup_in_text(group.sample)
    fix = top["fix"] if top is not None and concluded else _open_fix(entry.fix, judged, values)
    if official is not None and official.solution and not concluded and (entry.codes or entry.unlisted):
        # a code family's generic advice gives way to the official solution of the code
        fix = [official.solution]
    return {
        "id": entry.id,
        "label": label,
        "code": group.captures.get("code") if entry.codes or entry.unlisted else None,
        "title": fill(entry.title, own),
        "severity": entry.severity,
        "follow_on": entry.follow_on,
        "count": group.count,
        "first": {"source": group.first.source, "line": group.first.line},
        "last": {"source": group.last.source, "line": group.last.line},
        "sample": group.sample,
        "captures": dict(group.captures),
        "meaning": fill(entry.meaning, values),
        "kinds": list(entry.kinds),
        "decide": list(entry.decide),
        "causes": judged,
        "conclusion": top["here"] if top is not None and concluded else None,
        "fix": fix,
        "lint": list(entry.lint),
        "official": _official_record(official),
        "sources": ([official.source] if official is not None else []) + list(entry.sources),
        "after": (
            {
                "source": group.after.place.source,
                "line": group.after.place.line,
                "text": group.after.text,
                "id": group.after.entry,
            }
            if group.after is not None
            else None
        ),
    }


def _official_record(found: Optional[OfficialCode]) -> Optional[Dict[str, str]]:
    """What the official code tables say of the line's code (``None`` when they do not list it)."""
    if found is None:
        return None
    return {
        "family": found.family,
        "code": found.code,
        "title": found.title,
        "summary": found.summary(),
        "message": found.message,
        "cause": found.cause,
        "solution": found.solution,
        "source": found.source,
        "version": found.version,
        "retrieved": found.retrieved,
    }


def _source_index(scanner: Scanner, name: str) -> int:
    for i, s in enumerate(scanner.sources):
        if s.name == name:
            return i
    return len(scanner.sources)


def rank(
    scanner: Scanner, findings: Sequence[Finding] = (), facts: Optional[Mapping[str, Any]] = None
) -> Dict[str, Any]:
    """The triage result (the ``--json`` contract of ``npudoctor triage``)::

    sources   [{name, lines, bytes, error, long_lines, compressed, skipped}] (``bytes``: read
              after decompression; ``skipped``: why a stream was not scanned, a binary file)
    known     [group record (see rank_group)] in order of first appearance
    unknown   [{text, count, first, last}] error-looking lines no signature matched
    unknown_dropped   how many more distinct unknown lines were only counted
    summary   {known_errors, known_warnings, noise, unknown}
    tied      [{code, title, severity, by, first}] findings whose subject (a distribution,
              its import names or a library) a traceback frame, an error line naming a file
              of it, or a library named in the log lies in
    first_error   id of the earliest error that is not a follow-on (or None)
    (a crash group's ``after``: the warning/error line just before its first line, or None)
    verdict   one line: the conclusion for the first error, or None

    ``findings`` are the rule findings on ``facts`` (both empty: nothing is ranked, only
    what the log lines state themselves concludes).
    """
    groups = sorted(scanner.groups.values(), key=lambda g: (_source_index(scanner, g.first.source), g.first.line))
    # first the groups no other line decides, then those the lines of the first decide
    ranked = {id(g): rank_group(g, findings, facts) for g in groups if not g.entry.decided_by}
    deciders: Dict[str, Dict[str, Any]] = {}
    for g in groups:
        if id(g) in ranked:
            deciders.setdefault(g.entry.id, ranked[id(g)])
    for g in groups:
        if g.entry.decided_by:
            ranked[id(g)] = rank_group(g, findings, facts, deciders)
    known: List[Dict[str, Any]] = [ranked[id(g)] for g in groups]
    unknown: List[Dict[str, Any]] = [
        {
            "text": u.sample,
            "count": u.count,
            "first": {"source": u.first.source, "line": u.first.line},
            "last": {"source": u.last.source, "line": u.last.line},
        }
        for u in sorted(scanner.unknown.values(), key=lambda u: (_source_index(scanner, u.first.source), u.first.line))
    ]
    frames = {name: {"source": p.source, "line": p.line} for name, p in scanner.frames.items()}
    named = {name: {"source": p.source, "line": p.line} for name, p in scanner.named.items()}
    tied = tie(frames, known, findings, named)
    errors = [k for k in known if k["severity"] == "error"]
    primary = [k for k in errors if not k["follow_on"]] or errors
    first = primary[0] if primary else None
    verdict = None
    if first is not None:
        concluded = next((k for k in primary if k["conclusion"]), None)
        verdict = concluded["conclusion"] if concluded else None
    return {
        "sources": [
            {
                "name": s.name,
                "lines": s.lines,
                "bytes": s.bytes,
                "error": s.error,
                "long_lines": s.long_lines,
                "compressed": s.compressed,
                "skipped": s.skipped,
            }
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
        "tied": tied,
        "first_error": first["id"] if first else None,
        "verdict": verdict,
    }
