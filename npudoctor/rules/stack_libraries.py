"""Rules over the rest of the NPU stack's ELF files (issue 14): libraries and programs of
the toolkit, NNAL, the driver and npu-smi that need a library found on no loader path
(LIB007), a library of CANN / NNAL / the driver shadowed by another copy found first
(LIB008), and stack files that could not be read (LIB009).  Symbol-version needs of these
files are LIB002 (rules/libraries.py)."""

from __future__ import annotations

import posixpath
from typing import Dict, Iterable, List

from npudoctor.engine import RuleContext
from npudoctor.facts.runtime_env import FoundAt, LibrariesFacts, Resolution
from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.remedies import Export
from npudoctor.rules import rule
from npudoctor.rules._libowners import DRIVER, NNAL, TOOLKIT, owner_of_name, owner_of_path
from npudoctor.rules.devices import npu_smi_cause
from npudoctor.rules.libraries import FixLine, _short, group_of, not_loadable

STACK_NOT_LOADABLE = codes.get("LIB007")
SHADOWED = codes.get("LIB008")
UNREADABLE = codes.get("LIB009")

#: Owners whose libraries another copy must not shadow.
_GUARDED = (TOOLKIT, NNAL, DRIVER)


@rule
def stack_not_loadable(ctx: RuleContext) -> Iterable[Finding]:
    """LIB007: DT_NEEDED entries of the stack's files found on no loader path (set up as
    the toolkit's and NNAL's set_env.sh set it), one finding per owner group; names torch_npu
    itself misses are LIB001's."""
    libs = ctx.view.libraries
    reported = {r.name for r in libs.resolution if r.status == "missing"}
    # npu-smi that was run and failed in the loader is DEV004's (the same cause, observed)
    smi = ctx.view.devices.npu_smi
    smi_loader = not smi.available and npu_smi_cause(smi) == "loader"
    needed_by: Dict[str, List[str]] = {}
    for obj in libs.stack:
        if obj.where == "npu-smi" and smi_loader:
            continue
        for name in obj.unresolved:
            if name not in reported:
                needed_by.setdefault(name, []).append(obj.path)
    if not needed_by:
        return
    groups: Dict[str, List[Resolution]] = {}
    for name, by in needed_by.items():
        rec = Resolution(
            name=name,
            needed_by=tuple(by),
            status="missing",
            found_at=tuple(libs.stack_found_at.get(name, ())),
        )
        groups.setdefault(group_of(rec), []).append(rec)
    for key, items in groups.items():
        yield not_loadable(ctx, STACK_NOT_LOADABLE, key, items, "warning", libs.stack_ld_library_path)


def _expected_copy(rec: Resolution, libs: LibrariesFacts) -> List[FoundAt]:
    """The copies of ``rec``'s library its owning package installed, other than the one the
    loader takes."""
    want = owner_of_name(rec.name)
    return [f for f in rec.found_at if f.usable and f.path != rec.path and owner_of_path(f.path) == want]


@rule
def library_shadowed(ctx: RuleContext) -> Iterable[Finding]:
    """LIB008: a CANN / NNAL / driver library the loader finds first in a place its owner
    did not install it, while the owner's copy is on disk."""
    libs = ctx.view.libraries
    ld = list(libs.loader.ld_library_path) if libs.loader is not None else []
    for rec in libs.resolution:
        if rec.status != "found" or not rec.path:
            continue
        want = owner_of_name(rec.name)
        if want not in _GUARDED or owner_of_path(rec.path) == want:
            continue
        copies = _expected_copy(rec, libs)
        if not copies:
            continue
        shadow_dir = posixpath.dirname(rec.path)
        taken = owner_of_path(rec.path) or "another package"
        evidence = [
            f"the loader takes {rec.path} (via {rec.via}, owner: {taken}) for {rec.name}, needed by "
            + ", ".join(_short(p, libs) for p in rec.needed_by),
            f"the {want}'s copy: " + ", ".join(f.path for f in copies),
        ]
        fix: List[FixLine]
        if rec.via == "LD_LIBRARY_PATH" and shadow_dir in ld:
            rest = [d for d in ld if d != shadow_dir]
            evidence.append("LD_LIBRARY_PATH=" + ":".join(ld))
            fix = [
                Export(
                    "LD_LIBRARY_PATH",
                    ":".join(rest),
                    lead=f"Take {shadow_dir} off the loader path: ",
                )
                if rest
                else f"Take {shadow_dir} off the loader path: unset LD_LIBRARY_PATH",
                f"or delete the stray copy {rec.path} if nothing else needs it",
            ]
        else:
            fix = [
                f"Delete the stray copy {rec.path}, or take {shadow_dir} off the loader path "
                f"({rec.via}: remove it from /etc/ld.so.conf.d/ and run `ldconfig`, or rebuild what sets the RPATH)"
            ]
        yield SHADOWED.finding(
            title=f"{rec.name} of the {want} is shadowed by {rec.path}",
            evidence=evidence,
            fix=fix,
            subject=rec.name,
            data={"library": rec.name, "taken": rec.path, "owner": want, "shadowing_owner": taken},
        )


@rule
def stack_unreadable(ctx: RuleContext) -> Iterable[Finding]:
    """LIB009: stack files that look like ELF files but could not be read (truncated,
    corrupt, another architecture): one note listing them."""
    libs = ctx.view.libraries
    bad = [o for o in libs.stack if o.error]
    if not bad:
        return
    evidence = [f"{o.path} ({o.where}): {o.error}" for o in bad[:10]]
    if len(bad) > 10:
        evidence.append(f"and {len(bad) - 10} more")
    owners = sorted({owner_of_path(o.path) or "unknown" for o in bad})
    yield UNREADABLE.finding(
        title=f"{len(bad)} ELF file{'s' if len(bad) != 1 else ''} of the NPU stack could not be read",
        evidence=evidence,
        fix=[f"Reinstall the package that owns them ({', '.join(owners)}) if the stack loads them"],
        subject="stack",
        data={"files": [o.path for o in bad], "owners": owners},
    )
