"""Frameworks judged against their own published version tables.

MindSpeed Core, MindSpeed-LLM and lmdeploy's Ascend backend publish which torch / torch_npu
each release is made for, but their installed metadata does not pin torch-npu (source installs;
lmdeploy's PyPI wheel is built for CUDA).  The rows of
``knowledge/data/frameworks/torch_npu_requirements.toml`` say it instead: an installed release
made for another torch or torch_npu is one PKG004 finding naming the build it needs (or the
release made for what is installed).  The CANN floor of the same rows is judged by
``cann_addons.framework_cann`` (CANN012).  A framework release newer than every row is a
warning (MTX003) naming the data's date, never an error: the data predates it -- MindIE
included, told by its version.info.

Facts read (views): ``packages`` (dist-info of the frameworks, torch, torch_npu), ``cann.mindie``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterable, List, Optional, Tuple

from npudoctor.findings import Finding
from npudoctor.knowledge.frameworks import (
    PIP_PROJECTS,
    FrameworkRow,
    checked_on,
    newer_than_rows,
    project,
    rows_for,
    table,
)
from npudoctor.knowledge.grades import Grade
from npudoctor.knowledge.versions import release_xyz
from npudoctor.parsers.metadata import requirements_on
from npudoctor.remedies import Command
from npudoctor.remedies.python import pip_install
from npudoctor.rules import rule
from npudoctor.rules._pyfacts import describe
from npudoctor.rules._torchstack import COMPANION, torch_not_documented
from npudoctor.rules.matrix import NOT_IN_MATRIX, REFRESH_CMD

if TYPE_CHECKING:
    from npudoctor.context import RuleContext
    from npudoctor.rules._pkgfit import Fix

READS = ("cann", "packages", "python")


#: Projects whose rows name torch / torch_npu and that no other rule judges by table.
TABLE_PROJECTS = ("mindspeed", "mindspeed-llm", "lmdeploy")


def _in_spec(version: str, spec: str) -> Optional[bool]:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        return Version(version) in SpecifierSet(spec, prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return None


def _named(row: FrameworkRow, label: str, version: str) -> str:
    return f"{label} {version}" + (f" (release {row.release})" if row.release else "")


def _release_for_torch(name: str, torch_xyz: str) -> Optional[FrameworkRow]:
    """The newest row of ``name`` whose table names torch ``torch_xyz``."""
    fitting = [r for r in table() if r.project == name and torch_xyz in r.torch]
    return fitting[-1] if fitting else None


def _release_for_npu(name: str, torch_npu: str) -> Optional[FrameworkRow]:
    """The newest row of ``name`` whose torch-npu requirement admits ``torch_npu``."""
    fitting = [r for r in table() if r.project == name and r.torch_npu_spec and _in_spec(torch_npu, r.torch_npu_spec)]
    return fitting[-1] if fitting else None


def _spelled(row: FrameworkRow) -> str:
    """The release a row names, as a user installs it (``0.16.0`` of ``>=0.12.1,<=0.16.0``)."""
    bounds = [m for spec in row.versions for m in re.findall(r"(?:==|<=)\s*([0-9][0-9A-Za-z.]*)", spec)]
    return row.release or (bounds[-1] if bounds else ", ".join(row.versions))


def _install_release(ctx: RuleContext, name: str, release_name: str, lead: str) -> Fix:
    """The step installing release ``release_name`` of ``name`` as its documents do: pip for
    a PyPI project, the documented source install (lmdeploy's LMDEPLOY_TARGET_DEVICE=ascend
    pip install git+…@vX), else the branch to check out."""
    proj = project(name)
    if proj is not None and proj.install == "pypi":
        return pip_install(ctx.view.python, f"{name}=={release_name}", lead=lead)
    if proj is not None and proj.install_requirement:
        requirement = proj.install_requirement.replace("{release}", release_name)
        return Command(
            (ctx.view.python.interpreter_path, "-m", "pip", "install", requirement), env=proj.install_env, lead=lead
        )
    return f"{lead}check out its {release_name} branch and reinstall it (pip install -e)"


@rule
def framework_stack_table(ctx: RuleContext) -> Iterable[Finding]:
    """PKG004: a MindSpeed / MindSpeed-LLM / lmdeploy release made for another torch or
    torch_npu (its own version table), when its metadata does not pin torch-npu."""
    packages = ctx.view.packages
    torch = packages.first("torch")
    npu = packages.first("torch-npu")
    tv = str(torch.version) if torch is not None and torch.version else ""
    nv = str(npu.version) if npu is not None and npu.version else ""
    for name in TABLE_PROJECTS:
        rec = packages.first(name)
        if rec is None or not rec.version or requirements_on(list(rec.requires_dist), "torch-npu"):
            continue
        rows = rows_for(name, str(rec.version))
        proj = project(name)
        if not rows or proj is None:
            continue
        row, label, version = rows[0], proj.label, str(rec.version)
        where = f"{label} {version} from {rec.metadata_source or rec.dist_info or 'its dist-info'}"
        if npu is not None and row.torch_npu_spec and nv and _in_spec(nv, row.torch_npu_spec) is False:
            yield _npu_outside(ctx, name, row, label, version, where, nv, describe(npu))
            continue
        torch_xyz = release_xyz(tv)
        if torch is not None and row.torch and torch_xyz and torch_xyz not in row.torch:
            yield _torch_outside(ctx, name, row, label, version, where, tv, torch_xyz, describe(torch))


def _npu_outside(
    ctx: RuleContext,
    name: str,
    row: FrameworkRow,
    label: str,
    version: str,
    where: str,
    nv: str,
    npu_line: str,
) -> Finding:
    other = _release_for_npu(name, nv)
    fix: List[Fix] = []
    if other is not None:
        fix.append(
            _install_release(
                ctx,
                name,
                _spelled(other),
                f"keep torch_npu {nv} and install {label} {_spelled(other)}, whose Ascend requirements admit it "
                f"(torch-npu{other.torch_npu_spec}): ",
            )
        )
    fix.append(
        f"or install a torch_npu build inside {label} {version}'s requirement torch-npu{row.torch_npu_spec} "
        "together with its torch and CANN (`npudoctor plan` names the set)"
    )
    return COMPANION.finding(
        title=f"{label} {version} requires torch-npu{row.torch_npu_spec} on Ascend, but torch_npu {nv} is installed",
        evidence=[
            where,
            npu_line,
            f"{label} {version} requires torch-npu{row.torch_npu_spec} (built-in table: {row.source})",
            "its PyPI METADATA does not carry this pin (the wheel is built for CUDA), so pip did not enforce it",
        ],
        fix=fix,
        subject=f"{name}:torch-npu",
        data={"grade": Grade.INCOMPATIBLE.value, "framework": name, "version": version},
    )


def _torch_outside(
    ctx: RuleContext,
    name: str,
    row: FrameworkRow,
    label: str,
    version: str,
    where: str,
    tv: str,
    torch_xyz: str,
    torch_line: str,
) -> Finding:
    other = _release_for_torch(name, torch_xyz)
    alternative: Fix = (
        _install_release(ctx, name, _spelled(other), f"or keep torch {tv}: {label} {_spelled(other)} is made for it: ")
        if other is not None
        else f"no {label} release in the built-in table is made for torch {torch_xyz}"
    )
    view = ctx.view
    return torch_not_documented(
        ctx.matrix,
        view.python,
        view.host,
        row,
        label,
        version,
        [where, torch_line],
        tv,
        named=_named(row, label, version),
        alternatives=[alternative],
    )


@rule
def framework_newer_than_table(ctx: RuleContext) -> Iterable[Finding]:
    """MTX003 (warning): a framework release the built-in table does not know -- newer than
    every row (pip projects, and MindIE from its version.info), or, for a project whose
    installed versions are not in release order (MindSpeed Core), any version without a row.  Its torch / torch_npu / CANN needs are not
    checked; the warning names the data's date."""
    found: List[Tuple[str, str, str, bool]] = []
    for name in PIP_PROJECTS:
        rec = ctx.view.packages.first(name)
        if rec is not None and rec.version:
            pinned = bool(requirements_on(list(rec.requires_dist), "torch-npu"))
            found.append((name, str(rec.version), rec.metadata_source or rec.dist_info or "its dist-info", pinned))
    mindie = ctx.view.cann.mindie
    if mindie is not None and mindie.version:
        found.append(("mindie", str(mindie.version), str(mindie.source or mindie.path or "its version.info"), False))
    for name, version, where, pinned in found:
        proj = project(name)
        newer = newer_than_rows(name, version)
        unknown = proj is not None and not proj.ordered and not rows_for(name, version)
        if not (newer or unknown):
            continue
        label = proj.label if proj is not None else name
        when = checked_on(name)
        what = "newer than" if newer else "not in"
        evidence = [
            f"{label} {version} from {where}",
            f"built-in framework table (torch_npu_requirements.toml), read {when}: {what} its {label} rows",
        ]
        if proj is not None and proj.identify:
            evidence.append(f"how the release is told: {proj.identify}")
        unchecked = (
            "the CANN it needs is not checked (its own torch-npu pin is)"
            if pinned
            else ("the torch, torch_npu and CANN it needs are not checked")
        )
        yield NOT_IN_MATRIX.finding(
            title=f"{label} {version} is {what} the built-in {label} table (data of {when}): {unchecked}",
            evidence=evidence,
            fix=[
                f"Check {label} {version}'s own version table by hand"
                + (f": {proj.policy}" if proj is not None and proj.policy else ""),
                f"{REFRESH_CMD}   # refreshes the torch_npu / CANN matrix; framework tables come with npudoctor "
                "releases (pip install -U npudoctor)",
            ],
            severity="warning",
            subject=f"{label} {version}",
            data={"kind": label, "version": version, "newer_than_data": newer},
        )
