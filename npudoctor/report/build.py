"""The check result as one JSON-able document (the public ``--json`` contract).

Layout (``schema_version`` 1, see ``docs/schema/check.schema.json``)::

    {"schema_version", "npudoctor_version", "created", "node", "target", "matrix",
     "facts", "findings": [Finding.to_dict()...],
     "summary": {"error": n, "warning": n, "info": n}, "exit_code": n,
     "not_checked": {area: reason}}
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from npudoctor.findings import Finding, counts
from npudoctor.session.request import ExitStatus
from npudoctor.snapshot import Snapshot


def exit_status(findings: Sequence[Finding], strict: bool = False) -> ExitStatus:
    """The exit status of a check: OK when no error (and, with ``strict``, no warning)
    was found, else PROBLEMS."""
    summary = counts(findings)
    if summary["error"] or (strict and summary["warning"]):
        return ExitStatus.PROBLEMS
    return ExitStatus.OK


def document(
    snapshot: Snapshot,
    findings: Sequence[Finding],
    strict: bool = False,
    ignored: Sequence[Dict[str, str]] = (),
) -> Dict[str, Any]:
    """The JSON document for ``check --json``; ``ignored``: ``{"code", "title", "by"}`` of
    each finding silenced by ``--ignore`` or ``.npudoctor.toml`` (listed, never judged)."""
    from npudoctor.facts.coverage import unchecked

    doc = snapshot.to_dict()
    doc["findings"] = [f.to_dict() for f in findings]
    doc["summary"] = counts(findings)
    doc["exit_code"] = int(exit_status(findings, strict))
    doc["not_checked"] = unchecked(snapshot.facts)
    doc["ignored"] = [dict(i) for i in ignored]
    return doc


def ordered_fixes(findings: Sequence[Finding]) -> List[Finding]:
    """Findings with fixes, ordered so that each comes after the codes it names in
    ``after`` (a stable topological order; cycles fall back to the report order)."""
    with_fix = [f for f in findings if f.fix and f.severity != "info"]
    placed: List[Finding] = []
    remaining = list(with_fix)
    while remaining:
        progressed = False
        for f in list(remaining):
            pending = {c for c in f.after if any(r.code == c for r in remaining if r is not f)}
            if not pending:
                placed.append(f)
                remaining.remove(f)
                progressed = True
        if not progressed:
            placed.extend(remaining)
            break
    return placed


def causes_first(findings: Sequence[Finding]) -> List[Tuple[Finding, Optional[str]]]:
    """``findings`` as the one-line answers (health, exec, npd) list them: each root cause
    in report order, followed by its follow-on symptoms (:func:`folded_under`), each
    paired with the code of the cause it follows from (``None`` for a cause)."""
    folded = folded_under(findings)
    cause_of = {id(s): code for code, group in folded.items() for s in group}
    out: List[Tuple[Finding, Optional[str]]] = []
    placed = set()
    for f in findings:
        if id(f) in cause_of:
            continue
        out.append((f, None))
        if f.code not in placed:  # symptoms go after the first finding of their cause's code
            placed.add(f.code)
            out.extend((s, f.code) for s in folded.get(f.code, []))
    return out


def fix_list(findings: Sequence[Finding]) -> List[Finding]:
    """The errors to fix, as one list: those that take part in a fix order first, in
    that order, then the independent ones in report order.  Findings whose fix another
    one covers (``data["superseded_by"]`` naming a reported code) and follow-on symptoms
    of a reported cause (:func:`folded_under`) are left out."""
    hidden = {id(f) for group in folded_under(findings).values() for f in group}
    findings = [f for f in findings if id(f) not in hidden]
    codes = {f.code for f in findings}
    needed = {c for f in findings for c in f.after if c in codes}
    chain = [f for f in ordered_fixes(findings) if (set(f.after) & codes) or f.code in needed]
    rest = [f for f in findings if f.fix and f not in chain]
    return [f for f in chain + rest if f.severity == "error" and f.fix and f.data.get("superseded_by") not in codes]


def order_header(ordered: Sequence[Finding]) -> str:
    """The header of the fix list ``ordered`` (:func:`fix_list`): the layer of each listed
    fix (:data:`npudoctor.rules.order.LAYERS`: ``driver``, ..., ``shared libraries``; ``other
    fixes`` for a code in no layer), in the order the list has them, each said once in a row:
    ``packages → shared libraries``.  It says the list's own order, whatever its fixes are."""
    from npudoctor.rules.order import LAYER_NAMES, layer_of

    names: List[str] = []
    for f in ordered:
        layer = layer_of(f.code)
        name = LAYER_NAMES[layer] if layer >= 0 else "other fixes"
        if not names or names[-1] != name:
            names.append(name)
    return " → ".join(names)


def has_dependencies(findings: Sequence[Finding]) -> bool:
    codes = {f.code for f in findings}
    return any(set(f.after) & codes for f in findings)


def folded_under(findings: Sequence[Finding]) -> Dict[str, List[Finding]]:
    """Follow-on symptoms by the code of the root cause they are folded under: a finding
    whose ``data["because"]`` names the code of another reported finding (set by
    ``rules/order.py`` from the ``symptom_of`` of its code's data) goes under that cause;
    a chain (A because of B because of C) goes under its first cause that is not itself
    folded.  A cause that is not reported folds nothing."""
    by_code: Dict[str, Finding] = {}
    for f in findings:
        by_code.setdefault(f.code, f)
    out: Dict[str, List[Finding]] = {}
    for f in findings:
        root: Optional[str] = None
        cause = f.data.get("because")
        seen = {f.code}
        while isinstance(cause, str) and cause in by_code:
            if cause in seen:  # a cycle: nobody is the cause
                root = None
                break
            seen.add(cause)
            root = cause
            cause = by_code[cause].data.get("because")
        if root is not None:
            out.setdefault(root, []).append(f)
    return out
