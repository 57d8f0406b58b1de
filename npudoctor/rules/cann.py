"""Rules about the CANN toolkit installs (kinds K04, K05, K12): whether one is there,
which one is in use, whether its files can be read, its architecture and its pairing
with torch_npu, from the ``cann`` facts (``npudoctor/probes/cann.py``) plus ``packages``,
``devices.chips``, ``host.arch`` and ``driver`` through the typed views (``ctx.view``).

Codes ``CANN001``-``CANN003``, ``CANN010``, ``CANN011``.  The packages installed on top of
a toolkit (kernels/ops, NNAL/ATB, frameworks released for a CANN) are judged in
:mod:`npudoctor.rules.cann_addons`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Tuple

from npudoctor.findings import Finding
from npudoctor.knowledge import codes, grades
from npudoctor.knowledge.chips import package_chip
from npudoctor.knowledge.grades import Grade
from npudoctor.knowledge.prerelease import metadata_verdict
from npudoctor.knowledge.versions import cann_less
from npudoctor.plan.fit import MismatchPlan, driver_shortfall, hdk_for
from npudoctor.record import replace
from npudoctor.remedies import Command
from npudoctor.remedies.cann import Step, install, release_steps, set_env_step
from npudoctor.remedies.python import CPU_INDEX, pip_install
from npudoctor.rules import rule
from npudoctor.rules._cannfacts import (
    cann_pairing,
    cann_plan,
    driver_for_new_cann,
    driver_upgrade_first,
    host_arch,
    installed_driver,
    missing_statement_line,
    nnal_needed,
    not_in_matrix_line,
    python_tag,
    toolkit_line,
)
from npudoctor.rules._chipmove import move_with_row
from npudoctor.rules._pyfacts import marker_env
from npudoctor.rules._required import framework_requiring, pinned_elsewhere
from npudoctor.rules.overview import npu_stack_present

if TYPE_CHECKING:
    from npudoctor.context import RuleContext
    from npudoctor.facts.frameworks import FrameworksFacts
    from npudoctor.facts.system import Distribution
    from npudoctor.knowledge.frameworks import FrameworkRow
    from npudoctor.knowledge.grades import Verdict
    from npudoctor.knowledge.matrix import Matrix
    from npudoctor.rules._chipmove import Move

READS = ("cann", "container", "devices", "driver", "frameworks", "host", "packages", "python")
ONLY_WITH = ("cann",)

NO_CANN = codes.get("CANN001")

OLDER_SELECTED = codes.get("CANN002")

TORCH_NPU_CANN = codes.get("CANN003")

UNREADABLE = codes.get("CANN010")

ARCH_MISMATCH = codes.get("CANN011")

_ARCHES = ("aarch64", "x86_64")


#: How the note about no CANN and no torch_npu names where npudoctor runs (container facts
#: ``runs_in``), when that is not the host.
_INSIDE = {"container": "container", "pod": "pod's container", "build": "image build"}


def _nothing_installed(ctx: RuleContext, evidence: List[str]) -> Finding:
    """CANN001 as a note: neither CANN nor torch_npu.  On a host that is fine when the jobs
    run in containers; inside a container (or an image build) the host's CANN is not this
    one's, so the note says what a PyTorch job here would need."""
    runs_in = ctx.view.container.runs_in if ctx.view.state("container") == "ok" else "host"
    inside = _INSIDE.get(runs_in)
    if inside is None:
        return NO_CANN.finding(
            title="No CANN toolkit installed (no torch_npu either; fine on a host that runs CANN in containers)",
            evidence=evidence,
            severity="info",
        )
    container = ctx.view.container
    where = f"runs in a {container.runtime} {inside}" if container.runtime else f"runs in a {inside}"
    return NO_CANN.finding(
        title=f"No CANN toolkit in this {inside} (no torch_npu either): fine if no PyTorch job runs on the NPUs "
        "here; one that does needs CANN and torch_npu in the image (or CANN mounted from the host)",
        evidence=evidence + [f"npudoctor {where} (container facts: {'; '.join(container.evidence[:2]) or runs_in})"],
        severity="info",
    )


@rule
def no_cann(ctx: RuleContext) -> Iterable[Finding]:
    """CANN001: no toolkit at all (error with torch_npu installed, info otherwise)."""
    cann = ctx.view.cann
    if ctx.view.state("cann") != "ok" or cann.toolkits:
        return  # not probed, or the facts cannot say "none"
    if not npu_stack_present(ctx):
        return  # HOST050 says it calmly
    tnpu = ctx.view.packages.torch_npu
    arch = host_arch(ctx.view.host, ctx.view.packages)
    evidence = ["no CANN toolkit found; looked in: " + ", ".join(cann.searched[:10])]
    for var in ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH"):
        fact = cann.env.get(var)
        if fact is not None:
            evidence.append(f"{var}={fact.value} ({'exists' if fact.exists else 'no such directory'})")
    frameworks = [
        f"{name} {rec.version}"
        for name in ("vllm-ascend", "mindie", "mindie-turbo")
        for rec in ctx.view.packages.records(name)[:1]
    ]
    moved = _moved_framework(ctx)
    if moved is not None:
        yield _for_moved_framework(ctx, moved, frameworks, evidence, arch)
        return
    if tnpu is None and frameworks:
        evidence += [f"{f} runs on torch_npu and CANN" for f in frameworks]
        yield NO_CANN.finding(
            title=f"{', '.join(frameworks)} is installed, but no CANN toolkit (and no torch_npu) is",
            evidence=evidence,
            fix=[
                "Install the torch_npu build the framework needs first (see PKG004), then the CANN it is paired "
                "with (`npudoctor matrix show --torch-npu` with that version names it)",
                set_env_step(
                    None, None, lead="then the CANN toolkit, kernels/ops and NNAL packages of that release, and "
                ),
            ],
        )
        return
    if tnpu is None:
        yield _nothing_installed(ctx, evidence)
        return
    tver = tnpu.version or ""
    evidence.insert(0, f"torch_npu {tver} installed in {tnpu.location}")
    pin = pinned_elsewhere(ctx.view.packages, tver, marker_env(ctx.view.python, ctx.view.host))
    if pin is not None:
        yield _for_pinned_build(ctx, tver, pin, evidence, arch)
        return
    cann_ver, nearest, fix = _release_fix(ctx, tver, arch, evidence)
    yield NO_CANN.finding(
        title=f"torch_npu {tver} is installed but no CANN toolkit is"
        + (
            f" (the nearest paired release, torch_npu {nearest}, needs CANN {cann_ver})"
            if nearest
            else (f" (it needs CANN {cann_ver})" if cann_ver else "")
        ),
        evidence=evidence,
        fix=fix,
        data=dict({"torch_npu": tver, "cann": cann_ver}, **({"paired_by": nearest} if nearest else {})),
    )


def _for_pinned_build(
    ctx: RuleContext, tver: str, pin: Tuple[Distribution, str], evidence: List[str], arch: Optional[str]
) -> Finding:
    """CANN001 when an installed framework pins another torch_npu build than ``tver``: the
    CANN release for the pinned build, which the framework's fix (PKG004) installs, not
    for the build it replaces."""
    rec, build = pin
    evidence.append(f"{rec.name} {rec.version} pins torch-npu=={build} (Requires-Dist): its fix (PKG004) installs it")
    cann_ver, nearest, fix = _release_fix(ctx, build, arch, evidence)
    needs = f"torch_npu {nearest}, the nearest paired release," if nearest else f"torch_npu {build}"
    return NO_CANN.finding(
        title=f"torch_npu {tver} is installed but no CANN toolkit is"
        + (f" ({rec.name} {rec.version} needs {needs} with CANN {cann_ver})" if cann_ver else ""),
        evidence=evidence,
        fix=[f"for torch_npu {build}, the build {rec.name} {rec.version} pins:"] + fix,
        data={"torch_npu": build, "cann": cann_ver, "for_release": f"{rec.name} {rec.version}"},
    )


def _release_fix(
    ctx: RuleContext, tver: str, arch: Optional[str], evidence: List[str]
) -> Tuple[Optional[str], str, List[Step]]:
    """``(CANN version, nearest torch_npu, fix)``: the whole CANN release paired with torch_npu
    ``tver`` (its own matrix row, else the nearest paired release), its install steps for this
    machine, and the driver step first when the installed driver falls short of it; appends
    the evidence lines.  The version is ``None`` when the matrix pairs no CANN."""
    cann_ver = None
    nearest = ""
    row, is_nearest = cann_pairing(ctx.matrix, tver) if ctx.matrix is not None else (None, False)
    if row is not None:
        cann_ver = row.cann[0]
        if is_nearest:
            nearest = row.torch_npu
            evidence.append(
                f"torch_npu {tver} is in no official pairing table yet; the nearest paired release is "
                f"torch_npu {row.torch_npu} with CANN {cann_ver} ({row.source})"
            )
        else:
            evidence.append(f"torch_npu {tver} is paired with CANN {cann_ver} ({row.source})")
    unknown = f"the CANN version paired with torch_npu {tver} (its release notes name it)"
    chip = package_chip(ctx.matrix, ctx.view.devices)
    fix = release_steps(cann_ver, arch, chip, nnal_needed(ctx.view.packages, ctx.view.cann)[0], unknown=unknown)
    driver = installed_driver(ctx.view.driver, ctx.view.devices)
    first = driver_upgrade_first(ctx.matrix, cann_ver, driver) if cann_ver else None
    if first:
        fix.insert(0, first)
        evidence.append(f"the installed driver {driver} does not fit CANN {cann_ver} (matrix)")
    return cann_ver, nearest, fix


def _for_moved_framework(
    ctx: RuleContext,
    moved: Tuple[Move, str, FrameworkRow],
    frameworks: List[str],
    evidence: List[str],
    arch: Optional[str],
) -> Finding:
    """CANN001 when the installed vllm-ascend cannot run on a chip here (:func:`_moved_framework`):
    the whole CANN release for the release to move to -- the one paired with the torch_npu it
    needs -- whatever torch_npu is installed now (moving vllm-ascend replaces it too)."""
    move, tver, row = moved
    tnpu = ctx.view.packages.torch_npu
    if tnpu is not None:
        evidence.insert(0, f"torch_npu {tnpu.version} installed in {tnpu.location}")
    evidence += [f"{f} runs on torch_npu and CANN" for f in frameworks]
    evidence.append(
        f"vllm-ascend {move.installed} does not run on {move.chip} (family {move.family}); "
        f"vllm-ascend {move.release}, the first release that does, needs torch_npu {tver}: "
        f"built-in table, {row.source}"
    )
    cann_ver, _nearest, fix = _release_fix(ctx, tver, arch, evidence)
    lead = f"for vllm-ascend {move.release}, the release that runs on {move.chip}" + (
        f" (its torch_npu {tver} is paired with CANN {cann_ver}):" if cann_ver else ":"
    )
    return NO_CANN.finding(
        title=f"torch_npu {tnpu.version} is installed but no CANN toolkit is"
        if tnpu is not None
        else f"{', '.join(frameworks)} is installed, but no CANN toolkit (and no torch_npu) is",
        evidence=evidence,
        fix=[lead] + fix,
        data={"torch_npu": tver, "cann": cann_ver, "for_release": f"vllm-ascend {move.release}"},
    )


def _moved_framework(ctx: RuleContext) -> Optional[Tuple[Move, str, FrameworkRow]]:
    """When the installed vllm-ascend cannot run on a chip of this machine (DEV040 says to
    move to another release, :mod:`npudoctor.rules._chipmove`): the move, the torch_npu
    build the release to move to needs and its framework-table row; ``None`` otherwise."""
    rec = ctx.view.packages.first("vllm-ascend")
    moved = move_with_row(ctx.view.devices, ctx.matrix, "vllm-ascend", rec.version if rec is not None else None)
    if moved is None or not moved[1].torch_npu:
        return None
    move, row = moved
    return move, str(row.torch_npu), row


@rule
def unreadable_files(ctx: RuleContext) -> Iterable[Finding]:
    """CANN010: version files that could not be read or parsed."""
    cann = ctx.view.cann
    for tk in cann.toolkits:
        if not tk.errors:
            continue
        severe = tk.version is None
        evidence = [f"{e.path}: {e.error}" for e in tk.errors]
        if tk.version:
            evidence.append(f"version {tk.version} taken from {tk.source}")
        yield UNREADABLE.finding(
            title=(
                f"The CANN version at {tk.path} cannot be read"
                if severe
                else f"Some CANN version files at {tk.path} cannot be read"
            ),
            evidence=evidence,
            fix=[
                Command(("ls", "-l", str(tk.errors[0].path))),
                "reinstall the damaged package if the file is truncated or garbled",
            ],
            severity="warning" if severe else "info",
            subject=tk.path,
        )
    for rec in cann.nnal_all:
        for err in rec.errors:
            yield UNREADABLE.finding(
                title=f"The NNAL version file at {err.path} cannot be read",
                evidence=[f"{err.path}: {err.error}"],
                fix=[Command(("ls", "-l", str(err.path)))],
                severity="warning",
                subject=str(err.path),
            )


@rule
def arch_mismatch(ctx: RuleContext) -> Iterable[Finding]:
    """CANN011: toolkit arch differs from the machine's."""
    arch = ctx.view.host.arch
    tk = ctx.view.cann.selected
    if tk is None or arch not in _ARCHES or tk.arch not in _ARCHES:
        return
    if tk.arch == arch:
        return
    ver = tk.version
    yield ARCH_MISMATCH.finding(
        title=f"CANN {ver or '(unknown version)'} at {tk.path} is built for {tk.arch}, this machine is {arch}",
        evidence=[toolkit_line(tk), f"machine architecture {arch} ({ctx.view.host.arch_source})"],
        fix=[install("toolkit", ver, arch, unknown="the CANN version you use")],
    )


@rule
def older_selected(ctx: RuleContext) -> Iterable[Finding]:
    """CANN002: several installs and the selected one is not the newest."""
    cann = ctx.view.cann
    toolkits = [t for t in cann.toolkits if t.version]
    selected = cann.selected
    if selected is None or len(toolkits) < 2 or not selected.version:
        return
    sver = selected.version
    newer = [t for t in toolkits if cann_less(sver, t.version) is True]
    if not newer:
        return
    newest = newer[0]
    for t in newer[1:]:
        if cann_less(newest.version, t.version) is True:
            newest = t
    nver = str(newest.version)
    evidence = [
        f"in use ({cann.selected_via}): " + toolkit_line(selected),
        "newest on disk: " + toolkit_line(newest),
    ]
    evidence += ["also installed: " + toolkit_line(t) for t in toolkits if t not in (selected, newest)]
    severity = "warning"
    tnpu = ctx.view.packages.torch_npu
    if tnpu is not None and ctx.matrix is not None:
        fit_sel = _fit(ctx.matrix, str(tnpu.version), sver)
        fit_new = _fit(ctx.matrix, str(tnpu.version), nver)
        if fit_sel in ("paired", "compatible") and fit_new not in ("paired", "compatible"):
            severity = "info"
            evidence.append(
                f"torch_npu {tnpu.version} is {fit_sel} with CANN {sver} "
                f"but {fit_new} with {nver}: keeping the older one is right"
            )
    yield OLDER_SELECTED.finding(
        title=f"CANN {sver} is in use but CANN {nver} is also installed",
        evidence=evidence,
        # a choice, not a repair: the environment fixes of this report are for the CANN in use
        fix=[set_env_step(newest, lead=f"if you mean to use CANN {nver} instead: ")],
        severity=severity,
        data={"selected": sver, "newest": nver},
    )


def _fit(matrix: Matrix, torch_npu: str, cann: str) -> str:
    """``matrix.cann_fit`` of the row of ``torch_npu``; ``"unknown"`` without a row or
    when a version cannot be ordered."""
    try:
        row = matrix.find_torch_npu(torch_npu)
        if row is None:
            return "unknown"
        return matrix.cann_fit(row, cann)
    except Exception:
        return "unknown"


@rule
def torch_npu_cann(ctx: RuleContext) -> Iterable[Finding]:
    """CANN003: torch_npu vs the selected CANN, graded by evidence
    (:meth:`Matrix.cann_verdict`): paired or declared compatible -> no finding; same release
    line -> info (warning for an unofficial build); undocumented -> warning naming the build
    paired with the installed CANN; documented incompatible -> error naming the window that
    works.  Severity from :func:`npudoctor.knowledge.grades.severity`."""
    tk = ctx.view.cann.selected
    tnpu = ctx.view.packages.torch_npu
    matrix = ctx.matrix
    if tk is None or not tk.version or tnpu is None or matrix is None:
        return
    tver = tnpu.version or ""
    cver = tk.version
    if not tver:
        return
    verdict = _torch_npu_verdict(matrix, tver, cver, ctx.view.packages.torch_version, ctx.view.frameworks)
    sev = grades.severity(verdict)
    if sev is None:
        return
    evidence = [
        f"torch_npu {tver} from {tnpu.dist_info or tnpu.location}",
        toolkit_line(tk),
        verdict.describe(),
    ]
    data: Dict[str, Any] = {
        "torch_npu": tver,
        "cann": cver,
        "grade": verdict.grade.value,
        "source": verdict.source,
        "unofficial": verdict.unofficial,
        "window": verdict.window,
        "recommend": verdict.recommend,
    }
    pin = pinned_elsewhere(ctx.view.packages, tver, marker_env(ctx.view.python, ctx.view.host))
    if pin is not None:
        # a framework pins another build: when that one fits this CANN, the framework's fix
        # (PKG004) mends this too, and this finding folds under it
        rec, build = pin
        fits = _torch_npu_verdict(matrix, build, cver, ctx.view.packages.torch_version, ctx.view.frameworks)
        if grades.severity(fits) is None:
            evidence.append(
                f"{rec.name} {rec.version} pins torch-npu=={build} (Requires-Dist), which fits CANN {cver}: "
                "its fix (PKG004) installs it"
            )
            data["because"] = "PKG004"
    if verdict.grade is Grade.SAME_LINE:
        required = framework_requiring(ctx.view.packages, ctx.view.cann, tver) if verdict.unofficial else None
        yield _same_line(tver, cver, verdict, sev, required, evidence, data)
    else:
        yield _not_paired(ctx, matrix, tver, cver, verdict, sev, evidence, data)


def _torch_npu_verdict(
    matrix: Matrix, tver: str, cver: str, torch: Optional[str], frameworks: FrameworksFacts
) -> Verdict:
    """The matrix's verdict on torch_npu ``tver`` with CANN ``cver``; for a pre-release or
    dev build the matrix has no row for, the CANN its own METADATA names speaks first, not
    its base line's pairing; the official build to prefer stays the matrix's."""
    verdict = matrix.cann_verdict(tver, cver, torch)
    own = frameworks.torch_npu_description
    if own is not None and matrix.find_torch_npu(tver) is None:
        mine = metadata_verdict(tver, own.cann, own.row, cver)
        if mine is not None:
            verdict = replace(mine, recommend=verdict.recommend)
    return verdict


def _same_line(
    tver: str,
    cver: str,
    verdict: Verdict,
    sev: str,
    required: Optional[Tuple[str, str]],
    evidence: List[str],
    data: Dict[str, Any],
) -> Finding:
    """CANN003 for a build on the release line of a documented pairing: an info when a
    framework installed here requires exactly this unofficial build (``required``: who and
    why; switching to an official build would break it), else ``sev`` with, for an
    unofficial build, the official one to prefer."""
    if required is not None:
        who, why = required
        data["required_by"] = who
        return TORCH_NPU_CANN.finding(
            title=f"torch_npu {tver} is the unofficial build {who} requires; on CANN {cver} it follows the "
            "release line of its base",
            evidence=[*evidence, f"{who} requires torch_npu {tver} ({why})"],
            fix=[],
            severity="info",
            subject="torch_npu",
            data=data,
        )
    title = f"torch_npu {tver} on CANN {cver}: the same release line as a documented pairing"
    if verdict.unofficial:
        title = f"torch_npu {tver} is an unofficial build; on CANN {cver} it follows the release line of its base"
    return TORCH_NPU_CANN.finding(
        title=title,
        evidence=evidence,
        fix=[f"prefer an official build: torch_npu {verdict.recommend}"]
        if verdict.unofficial and verdict.recommend
        else [],
        severity=sev,
        subject="torch_npu",
        data=data,
    )


def _not_paired(
    ctx: RuleContext,
    matrix: Matrix,
    tver: str,
    cver: str,
    verdict: Verdict,
    sev: str,
    evidence: List[str],
    data: Dict[str, Any],
) -> Finding:
    """CANN003 for a pairing the matrix does not document (a warning naming the build
    paired with the installed CANN, or the refresh when the matrix lacks the row or its
    statement) or documents as incompatible (an error): the evidence names the row's
    pairings and the window known to work, the fix the ways out of the one solver."""
    row = matrix.find_torch_npu(tver)
    paired = list(row.cann) if row is not None else []
    if row is not None:
        compatible = list(row.cann_compatible)
        evidence.append(
            f"matrix: torch_npu {tver} paired with CANN {', '.join(paired) or '?'}"
            + (f"; compatible: {', '.join(compatible)}" if compatible else "")
            + f" ({row.source})"
        )
    if verdict.window:
        evidence.append(f"known to work: {verdict.window}")
    plan = cann_plan(matrix, ctx.view.cann, ctx.view.packages, ctx.view.python, ctx.view.host)
    fix = _cann003_fix(ctx, plan) if plan else []
    data.update(
        paired=paired,
        keep_cann=plan.keep_dict() if plan else None,
        move_to_cann=plan.move_to if plan else None,
    )
    if verdict.grade is not Grade.UNDOCUMENTED:
        return TORCH_NPU_CANN.finding(
            title=f"torch_npu {tver} does not work with CANN {cver}"
            + (f" (it is paired with CANN {paired[0]})" if paired else ""),
            evidence=evidence,
            fix=fix,
            severity=sev,
            subject="torch_npu",
            data=data,
        )
    if row is None:
        title = f"torch_npu {tver} is not in the compatibility matrix; its CANN pairing is not documented either way"
        fix = fix or [not_in_matrix_line(f"torch_npu {tver}")]
    else:
        title = f"torch_npu {tver} with CANN {cver} is not documented either way" + (
            f"; the build paired with CANN {cver} is torch_npu {verdict.recommend}" if verdict.recommend else ""
        )
        fix = fix or [missing_statement_line(matrix, tver, cver, row)]
    return TORCH_NPU_CANN.finding(title=title, evidence=evidence, fix=fix, severity=sev, subject="torch_npu", data=data)


def _cann003_fix(ctx: RuleContext, plan: MismatchPlan) -> List[Step]:
    """Fix steps of CANN003: option A (keep the CANN, change torch_npu; preferred when a
    build exists), then option B (install the CANN torch_npu is paired with, and the
    driver that CANN needs).  Continuation lines are indented by two spaces."""
    cver, tver = plan.cann, plan.torch_npu
    keep, move = plan.keep_cann, plan.move_to
    out: List[Step] = []
    if keep is not None:
        what = f"torch_npu {keep.torch_npu} is {'paired' if keep.fit == 'paired' else 'declared compatible'} with CANN {cver}"
        npu_req = f"torch-npu=={keep.torch_npu}"
        if keep.torch_changes:
            _py, plat = python_tag(ctx.view.python, ctx.view.host, ctx.view.packages)
            torch_req = f"torch=={keep.torch}" + ("+cpu" if plat == "x86_64" else "")
            head = f"option A (preferred: keep CANN {cver}; {what} and built for torch {keep.torch}): "
            if plat == "x86_64":
                out.append(pip_install(ctx.view.python, torch_req, index=CPU_INDEX, lead=head))
                out.append(pip_install(ctx.view.python, npu_req, lead="  "))
            else:
                out.append(pip_install(ctx.view.python, torch_req, npu_req, lead=head))
        else:
            out.append(
                pip_install(
                    ctx.view.python, npu_req, lead=f"option A (preferred: keep CANN {cver} and your torch; {what}): "
                )
            )
    driver = installed_driver(ctx.view.driver, ctx.view.devices)
    short = driver_shortfall(ctx.matrix, cver, driver) if keep is not None and driver else None
    if short:
        hdk = hdk_for(ctx.matrix, cver)
        why = "does not support" if short == "incompatible" else "does not document (older than every HDK it names)"
        out.append(
            f"  and upgrade the driver {driver}, which CANN {cver} {why}"
            + (f", to Ascend HDK {hdk}" if hdk else "")
            + " (DRV002)"
        )
    if move:
        arch = host_arch(ctx.view.host, ctx.view.packages)
        head = (
            f"option B (install CANN {move}, the one torch_npu {tver} is paired with): "
            if keep is not None
            else f"install CANN {move}, the one torch_npu {tver} is paired with (no torch_npu build for CANN {cver} in the matrix): "
        )
        out += release_steps(move, arch, package_chip(ctx.matrix, ctx.view.devices), False, lead=head)
        hdk_line = driver_for_new_cann(ctx.matrix, move, driver)
        if hdk_line:
            out.append(hdk_line)
    return out
