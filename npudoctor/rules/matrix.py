"""Rules about the compatibility matrix itself (area ``matrix``, codes ``MTX``).

* MTX001 the matrix could not be loaded (``npudoctor check`` still runs, without the
  pairing checks);
* MTX002 the matrix in use is old (its newest ``retrieved`` date is more than ~6 months ago);
* MTX003 a version met on this machine is not in the matrix (other rules yield it through
  :func:`not_in_matrix`);
* MTX004 the refreshed copy in the user cache is broken, so the bundled matrix was used.

Facts consumed: ``snapshot.matrix`` (the provenance the command stored: ``source``,
``origin``, ``retrieved``, ``sha256``, or ``error``; ``cache_error``) and ``ctx.matrix``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.knowledge.versions import parse_cann, pep440_public
from npudoctor.remedies import Command
from npudoctor.rules import postprocess, rule

if TYPE_CHECKING:
    from typing import Any, Dict, Iterable, List, Mapping, Optional

    from npudoctor.context import RuleContext
    from npudoctor.knowledge.matrix import Matrix

READS = ()

#: Days after which the matrix counts as old (about six months), and as very old.
OLD_DAYS = 183
VERY_OLD_DAYS = 365

REFRESH_CMD = "npudoctor matrix refresh"

MATRIX_UNAVAILABLE = codes.get("MTX001")

MATRIX_OLD = codes.get("MTX002")

NOT_IN_MATRIX = codes.get("MTX003")

CACHE_INVALID = codes.get("MTX004")


def refresh_hint(what: str) -> str:
    """The one-line fix other rules print when ``what`` ("torch_npu 2.14.0", "CANN 9.2.0")
    is missing from the matrix."""
    return f"{REFRESH_CMD}   # {what} is not in the compatibility matrix in use; refresh it (or pass --matrix FILE)"


def not_in_matrix(
    ctx: RuleContext,
    kind: str,
    version: Optional[str] = None,
    evidence: Iterable[str] = (),
    severity: Optional[str] = None,
) -> List[Finding]:
    """Findings (0 or 1, code MTX003) saying that ``kind`` ``version`` ("torch_npu",
    "2.14.0") is not in the matrix.  Other rules ``yield from`` it.

    Nothing is said when no matrix is loaded (MTX001 covers that); the evidence ends with
    the provenance of the matrix in use.  Duplicates (same kind and version from several
    rules) are merged after the run.
    """
    if ctx.matrix is None:
        return []
    newer = newer_than_data(ctx.matrix, kind, version)
    return [
        not_in_matrix_finding(
            kind, version, evidence, severity or ("warning" if newer else None), ctx.snapshot.matrix, newer=newer
        )
    ]


def newer_than_data(matrix: Matrix, kind: str, version: Optional[str]) -> bool:
    """Whether ``version`` of ``kind`` ("torch_npu", "CANN") is newer than every version of
    that kind the matrix holds: a release the data predates (AUDIT §7 (e): "anything newer
    than the matrix -> refresh the matrix"), not a build it merely lacks."""
    if not version:
        return False
    if kind == "torch_npu":
        mine = pep440_public(version)
        known = [r.version for r in matrix.torch_npu_rows if r.version is not None]
        return mine is not None and bool(known) and all(mine > v for v in known)
    if kind == "CANN":
        c = parse_cann(version)
        if c is None or not c.orderable:
            return False
        rows = [parse_cann(str(r.get("version", ""))) for r in matrix.cann_rows]
        ordered = [r for r in rows if r is not None and r.orderable]
        return bool(ordered) and all(c.compare(r) == 1 for r in ordered)
    return False


def not_in_matrix_finding(
    kind: str,
    version: Optional[str] = None,
    evidence: Iterable[str] = (),
    severity: Optional[str] = None,
    provenance: Optional[Mapping[str, Any]] = None,
    newer: bool = False,
) -> Finding:
    """The MTX003 finding itself, without a rule context: ``provenance`` is the matrix's
    (``snapshot.matrix``: ``source``, ``origin``, ``retrieved``), named in the evidence
    when it has a ``source``.  ``newer``: the version is newer than the data (the title
    names the data's date and the refresh)."""
    prov = dict(provenance or {})
    what = f"{kind} {version}"
    if newer:
        return NOT_IN_MATRIX.finding(
            title=f"{what} is newer than the compatibility matrix in use (data of {prov.get('retrieved', '?')}); "
            f"its pairings cannot be checked until `{REFRESH_CMD}`",
            evidence=[
                *evidence,
                f"matrix in use: {prov.get('source', '?')} ({prov.get('origin', '?')}), "
                f"retrieved {prov.get('retrieved', '?')}: it knows no {kind} this new",
            ],
            fix=[refresh_hint(what)],
            severity=severity,
            subject=what,
            data={"kind": kind, "version": version, "newer_than_data": True},
        )
    ev = list(evidence)
    if prov.get("source"):
        ev.append(
            f"matrix in use: {prov.get('source')} ({prov.get('origin', '?')}), retrieved {prov.get('retrieved', '?')}"
        )
    return NOT_IN_MATRIX.finding(
        title=f"{what} is not in the compatibility matrix; its pairings cannot be checked",
        evidence=ev,
        fix=[REFRESH_CMD],
        severity=severity,
        subject=what,
        data={"kind": kind, "version": version},
    )


@rule
def matrix_loaded(ctx: RuleContext) -> Iterable[Finding]:
    """MTX001 when the command could not load the matrix; MTX004 when the cached copy
    was broken and the bundled matrix was used instead."""
    prov = dict(ctx.snapshot.matrix)
    if ctx.matrix is None and prov.get("error"):
        yield MATRIX_UNAVAILABLE.finding(
            evidence=[str(prov["error"])],
            fix=[
                Command(("npudoctor", "matrix", "verify"), note="shows every problem of the matrix in use"),
                "drop --matrix to use the bundled matrix, or run: " + REFRESH_CMD,
            ],
        )
    if prov.get("cache_error"):
        from npudoctor.knowledge.matrix import cache_path

        yield CACHE_INVALID.finding(
            evidence=[str(prov["cache_error"])],
            fix=[REFRESH_CMD, f"or delete {cache_path()}"],
        )


@rule
def matrix_age(ctx: RuleContext) -> Iterable[Finding]:
    """MTX002 when the matrix's newest ``retrieved`` date is more than ~6 months old
    (warning after a year)."""
    prov = dict(ctx.snapshot.matrix)
    ret = prov.get("retrieved")
    if not isinstance(ret, str):
        return
    import datetime as _dt  # here, not on every start: only a matrix date to age needs it

    try:
        day = _dt.date.fromisoformat(ret[:10])
    except ValueError:
        return
    age = (_dt.date.today() - day).days
    if age <= OLD_DAYS:
        return
    yield MATRIX_OLD.finding(
        title=f"The compatibility matrix was retrieved {age} days ago ({ret})",
        evidence=[f"matrix in use: {prov.get('source')} ({prov.get('origin', '?')}), retrieved {ret}"],
        fix=[REFRESH_CMD, "offline: npudoctor matrix refresh --source COMPATIBILITY.md --source torch-npu.json"],
        severity="warning" if age > VERY_OLD_DAYS else "info",
        data={"age_days": age, "retrieved": ret},
    )


@postprocess
def merge_not_in_matrix(ctx: RuleContext, findings: List[Finding]) -> List[Finding]:
    """Merge MTX003 findings about the same version yielded by several rules."""
    out: List[Finding] = []
    seen: Dict[str, Finding] = {}
    for f in findings:
        if f.code != NOT_IN_MATRIX.code or not f.subject:
            out.append(f)
            continue
        first = seen.get(f.subject)
        if first is None:
            seen[f.subject] = f
            out.append(f)
            continue
        for e in f.evidence:
            if e not in first.evidence:
                first.evidence.append(e)
    return out
