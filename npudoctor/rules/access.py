"""Unreadable is not absent: paths the probing account was refused.

Code ``HOST004`` (area host).  Facts read: ``access`` (``engine.collect`` records every path
the Host was refused, as the first component refused on the way), ``python`` (its prefix and
site-packages) and ``environment.current`` (the paths the environment points at).

One finding names the refused paths and the uid; findings whose conclusion rests on reading a
refused path ("14 packages missing" when site-packages could not be listed, "no CANN toolkit"
when the toolkit directory could not be searched) are left out: what was not read is not
judged.  Which codes conclude from absence, per kind of path, is data in
:mod:`npudoctor.knowledge.access`.
"""

from __future__ import annotations

import posixpath
import re
from typing import Dict, Iterable, List, Set

from npudoctor import lazyre
from npudoctor.context import RuleContext
from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.knowledge.access import BLIND, HOME_DIR, KIND_PATHS, SHARED_PARENTS
from npudoctor.remedies import Command
from npudoctor.rules import postprocess

READS = ("access", "environment", "python")
#: HOST004's evidence lists the absence findings it left out (:data:`BLIND`), of these areas.
FOLDS = {"host": tuple(sorted({str(codes.area_of(c)) for blind in BLIND.values() for c in blind}))}
ONLY_WITH = ("access",)

CANNOT_READ = codes.get("HOST004")

_HOME = lazyre.pattern(HOME_DIR)


def _pointed_at(ctx: RuleContext) -> List[str]:
    """Paths the diagnosed environment and interpreter point at (absolute ones)."""
    py = ctx.view.python
    out = [p for p in (py.prefix, py.executable, *py.site_packages) if p]
    for value in ctx.view.environment.current.values():
        out.extend(p for p in str(value).split(":") if p.startswith("/"))
    return out


def _relevant(ctx: RuleContext) -> List[str]:
    """Refused paths that matter: all but another account's home directory that nothing
    the environment uses lies under (``/root`` refused to uid 1000 while probing ~/Ascend)."""
    pointed = _pointed_at(ctx)
    out = []
    for denied in ctx.view.access.denied:
        prefix = denied.rstrip("/") + "/"
        if _HOME.match(denied) and not any(p == denied or p.startswith(prefix) for p in pointed):
            continue
        out.append(denied)
    return out


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _kinds(ctx: RuleContext, denied: List[str]) -> Set[str]:
    """Which kinds of knowledge the refusals blind: "site-packages", "cann", "driver"."""
    kinds: Set[str] = set()
    py = ctx.view.python
    sites = [p for p in (*py.site_packages, py.prefix) if p]
    ascend = [
        str(v) for k, v in ctx.view.environment.current.items() if k.startswith("ASCEND_") and str(v).startswith("/")
    ]
    for d in denied:
        if any(_under(site, d) or _under(d, site) for site in sites):
            kinds.add("site-packages")
        if d in SHARED_PARENTS:
            kinds.update(KIND_PATHS)
        for kind, pattern in KIND_PATHS.items():
            if re.match(pattern, d):
                kinds.add(kind)
        if any(_under(v, d) or _under(d, v) for v in ascend):
            kinds.add("cann")
    return kinds


def _mentioned(findings: List[Finding], path: str) -> bool:
    """Whether another finding already says ``path`` cannot be read (HCCL014, DRV004...)."""
    for f in findings:
        text = " ".join([f.title, *f.evidence])
        if path in text and "permission denied" in text:
            return True
    return False


@postprocess
def unreadable_paths(ctx: RuleContext, findings: List[Finding]) -> List[Finding]:
    """HOST004: one finding for the refused paths; absence findings they blind are dropped."""
    denied = _relevant(ctx)
    if not denied:
        return findings
    blind: Dict[str, str] = {}
    for kind in _kinds(ctx, denied):
        for code in BLIND.get(kind, ()):
            blind[code] = kind
    kept = [f for f in findings if f.code not in blind]
    fresh = [d for d in denied if not _mentioned(kept, d)]
    if not fresh:
        return kept
    uid = ctx.view.access.uid
    who = f"uid {uid}" if uid is not None else "this account"
    left_out = sorted({f.code for f in findings if f.code in blind})
    evidence = [f"{d}: permission denied for {who}" for d in fresh]
    if left_out:
        evidence.append(f"not judged while unreadable: {', '.join(left_out)}")
    return kept + list(_finding(fresh, who, evidence))


def _finding(denied: List[str], who: str, evidence: List[str]) -> Iterable[Finding]:
    shown = ", ".join(denied[:3]) + (f" and {len(denied) - 3} more" if len(denied) > 3 else "")
    yield CANNOT_READ.finding(
        title=f"cannot read {shown} as {who}: not checked (unreadable is not absent)",
        evidence=evidence,
        fix=[
            f"Run npudoctor as root (sudo) or as the account that runs the workload; "
            f"a workload running as {who} cannot read these paths either",
            *(
                Command(("chmod", "o+rX", d), note=f"only if {who} should read it")
                for d in denied
                if posixpath.isabs(d)
            ),
        ],
        subject=denied[0],
        data={"denied": list(denied)},
    )
