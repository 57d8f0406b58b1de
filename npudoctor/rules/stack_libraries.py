"""Rules over the rest of the NPU stack's ELF files: libraries and programs of
the toolkit, NNAL, the driver and npu-smi that need a library found on no loader path
(LIB007), a library of CANN / NNAL / the driver shadowed by another copy found first
(LIB008), and stack files that could not be read (LIB009).  Symbol-version needs of these
files are LIB002 (rules/libraries.py)."""

from __future__ import annotations

import posixpath
from typing import Dict, Iterable, List, NamedTuple, Optional, Tuple

from npudoctor.context import RuleContext
from npudoctor.facts.runtime_env import FoundAt, LibrariesFacts, Resolution
from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.remedies import Export
from npudoctor.rules import rule
from npudoctor.rules._libowners import DRIVER, NNAL, TOOLKIT, owner_of_name, owner_of_path
from npudoctor.rules.devices import npu_smi_cause
from npudoctor.rules.libraries import FixLine, _short, group_of, not_loadable

READS = ("devices", "environment", "libraries")
ONLY_WITH = ("libraries",)

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


class _Shadow(NamedTuple):
    name: str
    taken: str
    via: str
    want: str
    copies: Tuple[str, ...]
    needed_by: Tuple[str, ...]
    taken_by: Optional[str]


def _shadows(libs: LibrariesFacts) -> List[_Shadow]:
    """Every shadowed library: torch_npu's load chain first (``resolution``), then the rest
    of the stack (``stack_shadowed``), one record per library name."""
    out: List[_Shadow] = []
    for rec in libs.resolution:
        if rec.status != "found" or not rec.path:
            continue
        want = owner_of_name(rec.name)
        if want not in _GUARDED or owner_of_path(rec.path) == want:
            continue
        copies = _expected_copy(rec, libs)
        if copies:
            by = tuple(_short(p, libs) for p in rec.needed_by)
            out.append(_Shadow(rec.name, rec.path, rec.via or "?", str(want), tuple(f.path for f in copies), by, None))
    seen = {s.name for s in out}
    for sh in libs.stack_shadowed:
        if sh.name in seen or not sh.taken:
            continue
        seen.add(sh.name)
        want = owner_of_path(sh.copies[0]) if sh.copies else owner_of_name(sh.name)
        out.append(_Shadow(sh.name, sh.taken, sh.via or "?", want or "NPU stack", sh.copies, sh.needed_by, sh.taken_by))
    return out


@rule
def library_shadowed(ctx: RuleContext) -> Iterable[Finding]:
    """LIB008: libraries of CANN / NNAL / the driver the loader finds first in a place
    their owner did not install them, while the owner's copy is on disk: one finding per
    directory holding the stray copies (a custom-op wheel's lib directory on
    LD_LIBRARY_PATH), naming the distribution that installs them (its RECORD)."""
    libs = ctx.view.libraries
    if libs.loader is not None:
        ld = list(libs.loader.ld_library_path)
    else:  # no torch_npu walk: the environment's part of the set-up path
        added = set(_set_env_added(ctx))
        ld = [d for d in libs.stack_ld_library_path if d not in added]
    groups: Dict[Tuple[str, str], List[_Shadow]] = {}
    for sh in _shadows(libs):
        groups.setdefault((posixpath.dirname(sh.taken), sh.via), []).append(sh)
    for (shadow_dir, via), items in groups.items():
        names = [sh.name for sh in items]
        wants = list(dict.fromkeys(sh.want for sh in items))
        first = items[0]
        taken_by = next((sh.taken_by for sh in items if sh.taken_by), None)
        taken = f"the {taken_by} wheel (its RECORD)" if taken_by else owner_of_path(first.taken) or "another package"
        evidence = []
        for sh in items:
            line = f"the loader takes {sh.taken} (via {via}, owner: {taken}) for {sh.name}"
            evidence.append(line + (", needed by " + ", ".join(sh.needed_by) if sh.needed_by else ""))
            evidence.append(f"the {sh.want}'s copy: " + ", ".join(sh.copies))
        strays = " ".join(sh.taken for sh in items)
        delete = f"delete the stray cop{'y' if len(items) == 1 else 'ies'} {strays}"
        if taken_by:
            delete += f" ({taken_by.split(' ')[0]} installs {'it' if len(items) == 1 else 'them'})"
        fix: List[FixLine]
        if via == "LD_LIBRARY_PATH" and shadow_dir in ld:
            rest = [d for d in ld if d != shadow_dir]
            evidence.append("LD_LIBRARY_PATH=" + ":".join(ld))
            fix = [
                Export("LD_LIBRARY_PATH", ":".join(rest), lead=f"Take {shadow_dir} off the loader path: ")
                if rest
                else f"Take {shadow_dir} off the loader path: unset LD_LIBRARY_PATH",
                f"or {delete} if nothing else needs {'it' if len(items) == 1 else 'them'}",
            ]
        else:
            fix = [
                f"{delete[0].upper()}{delete[1:]}, or take {shadow_dir} off the loader path "
                f"({via}: remove it from /etc/ld.so.conf.d/ and run `ldconfig`, or rebuild what sets the RPATH)"
            ]
        owner = " and ".join(wants)
        if len(items) == 1:
            title = f"{first.name} of the {owner} is shadowed by {first.taken}"
        else:
            title = f"{', '.join(names)} of the {owner} are shadowed by the copies in {shadow_dir}"
        yield SHADOWED.finding(
            title=title,
            evidence=evidence,
            fix=fix,
            subject=first.name if len(items) == 1 else shadow_dir,
            data={
                "library": first.name,
                "libraries": names,
                "taken": first.taken,
                "owner": owner,
                "shadowing_owner": taken,
            },
        )


def _set_env_added(ctx: RuleContext) -> List[str]:
    """The LD_LIBRARY_PATH entries the toolkit's set_env.sh adds (environment facts)."""
    exp = ctx.view.environment.expected
    return list(exp.added.get("LD_LIBRARY_PATH", ())) if exp is not None else []


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
