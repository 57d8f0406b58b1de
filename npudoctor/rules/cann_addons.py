"""Rules about what is installed on top of the CANN toolkit in use (kinds K04, K05, K11,
K12): its kernels/ops package, NNAL/ATB and its C++ ABI directory, and frameworks
(vllm-ascend, MindIE) released for a newer CANN, from the ``cann`` facts
(``npudoctor/probes/cann.py``) plus ``packages``, ``devices.chips``, ``host.arch`` and
``libraries.torch_cxx11_abi`` through the typed views (``ctx.view``).

Codes ``CANN004``-``CANN009`` and ``CANN012``.  The toolkit itself is judged in
:mod:`npudoctor.rules.cann`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Dict, Iterable, List, Optional, Tuple

from npudoctor.findings import Finding
from npudoctor.knowledge import codes, vllm_images
from npudoctor.knowledge.chips import matrix_chip, package_chip
from npudoctor.knowledge.frameworks import PIP_PROJECTS, rows_for, table
from npudoctor.knowledge.frameworks import project as framework_project
from npudoctor.knowledge.grades import severity
from npudoctor.knowledge.matrix.addons import kernels_verdict, nnal_verdict
from npudoctor.knowledge.packages import NNAL_SET_ENV
from npudoctor.knowledge.versions import cann_less, parse_cann
from npudoctor.remedies import Remedy, SourceFile
from npudoctor.remedies.cann import install, nnal_set_env, release_steps, set_env_step
from npudoctor.remedies.python import pip_install
from npudoctor.rules import rule
from npudoctor.rules._cannfacts import driver_upgrade_first, host_arch, installed_driver, nnal_needed, toolkit_line
from npudoctor.rules._env_vars import sourced

if TYPE_CHECKING:
    from npudoctor.context import RuleContext
    from npudoctor.facts.stack import Toolkit

READS = ("cann", "devices", "driver", "environment", "host", "libraries", "packages", "python")
ONLY_WITH = ("cann",)

KERNELS_MISSING = codes.get("CANN004")

KERNELS_OTHER_SOC = codes.get("CANN005")

KERNELS_VERSION = codes.get("CANN006")

NNAL_MISSING = codes.get("CANN007")

NNAL_VERSION = codes.get("CANN008")

ATB_ABI = codes.get("CANN009")

FRAMEWORK_CANN = codes.get("CANN012")


def _applied_env(ctx: RuleContext, tk: Toolkit) -> List[Remedy]:
    """The step applying ``tk``'s environment before installing an add-on, or nothing
    when that environment is in effect already (a fix already applied -- ``source``, or
    ``eval "$(npudoctor env)"`` -- is not offered again)."""
    env = ctx.view.environment
    if env.toolkit is not None and env.toolkit.path == tk.path and sourced(env) is True:
        return []
    return [set_env_step(tk)]


@rule
def kernels_for_chip(ctx: RuleContext) -> Iterable[Finding]:
    """CANN004/CANN005: kernels for the chips of this machine (K12)."""
    tk = ctx.view.cann.selected
    if tk is None:
        return
    kernels = tk.kernels
    ver = tk.version
    unknown = "the CANN toolkit in use"
    arch = host_arch(ctx.view.host, ctx.view.packages) or tk.arch
    present = sorted(set(kernels.socs) | set(kernels.configs))
    kdir = f"{tk.opp_path or tk.path + '/opp'}/built-in/op_impl/ai_core/tbe/kernel"
    wanted: Dict[str, List[str]] = {}
    pkg_chip: Dict[str, Optional[str]] = {}
    found = ctx.view.devices.named_chips
    for chip in found:
        name = str(chip.name)
        info = matrix_chip(ctx.matrix, name)
        if info is not None and info.kernels_dir:
            wanted.setdefault(info.kernels_dir, []).append(name)
            pkg_chip[info.kernels_dir] = info.kernels_package_chip
    set_env = _applied_env(ctx, tk)
    if not wanted:
        if not present and not found and ctx.view.packages.torch_npu is not None:
            yield KERNELS_MISSING.finding(
                title=f"No CANN kernels package is installed in CANN {ver or '(unknown version)'} at {tk.path}",
                evidence=[
                    toolkit_line(tk),
                    f"{kdir}/ holds no SoC directory",
                    "no NPU chip listed (npu-smi), so the chip is unknown",
                ],
                fix=set_env + [install("kernels", ver, arch, None, unknown=unknown)],
                severity="warning",
            )
        return
    for soc_dir, names in sorted(wanted.items()):
        if soc_dir in present:
            continue
        chip_names = ", ".join(sorted(set(names)))
        evidence = [
            toolkit_line(tk),
            f"NPU chip(s) {chip_names} need kernels in {kdir}/{soc_dir}/ and {kdir}/config/{soc_dir}/binary_info_config.json",
            f"present: {', '.join(present) if present else 'none'}",
        ]
        fix = set_env + [install("kernels", ver, arch, pkg_chip.get(soc_dir), unknown=unknown)]
        if present:
            yield KERNELS_OTHER_SOC.finding(
                title=f"CANN kernels are installed for {', '.join(present)} only; this machine's {chip_names} needs {soc_dir}",
                evidence=evidence,
                fix=fix,
                subject=soc_dir,
            )
        else:
            yield KERNELS_MISSING.finding(
                title=f"No CANN kernels for {chip_names} ({soc_dir}) in CANN {ver or '(unknown version)'}",
                evidence=evidence,
                fix=fix,
                subject=soc_dir,
            )


@rule
def kernels_version(ctx: RuleContext) -> Iterable[Finding]:
    """CANN006: the kernels/ops package with the toolkit, graded by evidence
    (knowledge/matrix/addons.py: same release, the packages' required_package_* ranges, the
    release notes' ops ↔ toolkit list); severity from ``grades.severity``."""
    tk = ctx.view.cann.selected
    if tk is None or not tk.version or not tk.kernels.version:
        return
    kver = tk.kernels.version
    ver = tk.version
    if ctx.matrix is None:
        return
    v = kernels_verdict(ctx.matrix, ver, kver, tk.kernels.inner_version, dict(tk.requires), dict(tk.kernels.requires))
    sev = severity(v)
    if sev is None:
        return
    # the verdict and its source are the title's (v.describe()): said once, not again here
    evidence = [toolkit_line(tk), f"kernels {kver} from {tk.kernels.source}"]
    if v.window:
        evidence.append(f"documented to work: {v.window}")
    yield KERNELS_VERSION.finding(
        title=f"Kernels package {kver} with CANN toolkit {ver}: {v.describe()}",
        evidence=evidence,
        fix=_applied_env(ctx, tk)
        + [
            install(
                "kernels",
                ver,
                host_arch(ctx.view.host, ctx.view.packages) or tk.arch,
                package_chip(ctx.matrix, ctx.view.devices),
            )
        ],
        severity=sev,
        data={"toolkit": ver, "kernels": kver, "grade": v.grade.value, "source": v.source},
    )


@rule
def nnal_missing(ctx: RuleContext) -> Iterable[Finding]:
    """CANN007: NNAL needed (vllm-ascend, MindIE, ATB_HOME_PATH) but not installed (K11)."""
    cann = ctx.view.cann
    if ctx.view.state("cann") != "ok" or cann.nnal_all:
        return  # not probed, or the facts cannot say "none"
    needed, reasons = nnal_needed(ctx.view.packages, ctx.view.cann)
    if not needed:
        return
    tk = cann.selected
    ver = tk.version if tk is not None else None
    arch = host_arch(ctx.view.host, ctx.view.packages) or (tk.arch if tk is not None else None)
    evidence = reasons + [
        "no NNAL found: looked for nnal/atb/latest/version.info under /usr/local/Ascend, ~/Ascend, /home/*/Ascend"
    ]
    env = cann.env.get("ATB_HOME_PATH")
    if env is not None and env.value and not env.exists:
        evidence.append(f"ATB_HOME_PATH={env.value} does not exist")
    fix: List[Remedy] = []
    if tk is not None:
        fix += _applied_env(ctx, tk)
    fix += [install("nnal", ver, arch, unknown="the CANN toolkit you use"), nnal_set_env()]
    yield NNAL_MISSING.finding(
        title=f"NNAL (ATB) is not installed, but it is needed: {reasons[0]}",
        evidence=evidence,
        fix=fix,
    )


@rule
def nnal_version(ctx: RuleContext) -> Iterable[Finding]:
    """CANN008: NNAL with the toolkit (K04), graded (knowledge/matrix/addons.py): the same
    release is paired, the same line is info, anything else is not documented either way."""
    cann = ctx.view.cann
    tk = cann.selected
    nnal = cann.nnal
    if tk is None or nnal is None or not tk.version or not nnal.version:
        return
    v = nnal_verdict(tk.version, nnal.version)
    sev = severity(v)
    if sev is None:
        return
    ver = tk.version
    arch = host_arch(ctx.view.host, ctx.view.packages) or tk.arch
    yield NNAL_VERSION.finding(
        title=f"NNAL {nnal.version} with CANN toolkit {ver}: {v.describe()}",
        evidence=[
            toolkit_line(tk),
            f"NNAL/ATB {nnal.build or nnal.version} from {nnal.source}",
        ],  # the verdict and its source are the title's (v.describe()): said once
        fix=_applied_env(ctx, tk) + [install("nnal", ver, arch), nnal_set_env()],
        severity=sev,
        data={"toolkit": ver, "nnal": nnal.version, "grade": v.grade.value, "source": v.source},
    )


@rule
def atb_abi(ctx: RuleContext) -> Iterable[Finding]:
    """CANN009: ATB_HOME_PATH names a missing dir, or the other C++ ABI than torch (K11)."""
    cann = ctx.view.cann
    env = cann.env.get("ATB_HOME_PATH")
    if env is None or not env.value:
        return
    value = env.value.rstrip("/")
    m = re.search(r"cxx_abi_([01])$", value)
    abi = int(m.group(1)) if m else None
    fix: List[Remedy] = [nnal_set_env(note="after torch is installed, in a fresh shell")]
    if not env.exists:
        nnal = cann.nnal
        yield ATB_ABI.finding(
            title=f"ATB_HOME_PATH={value} does not exist",
            evidence=[f"ATB_HOME_PATH={value}: no such directory"]
            + (
                [f"NNAL {nnal.version} at {nnal.path} has {', '.join(nnal.abi_dirs) or 'no cxx_abi_* directory'}"]
                if nnal is not None
                else []
            ),
            fix=fix,
        )
        return
    torch_abi = ctx.view.libraries.torch_cxx11_abi
    if abi is None or torch_abi is None or bool(abi) == torch_abi:
        return
    want = 1 if torch_abi else 0
    yield ATB_ABI.finding(
        title=f"ATB_HOME_PATH uses cxx_abi_{abi} but torch is built with the {'C++11' if torch_abi else 'old'} ABI (needs cxx_abi_{want})",
        evidence=[f"ATB_HOME_PATH={value}", f"torch compiled with _GLIBCXX_USE_CXX11_ABI={want} (libraries facts)"],
        fix=fix + [SourceFile(NNAL_SET_ENV, args=f"--cxx_abi={want}", lead="or: ")],
    )


def _frameworks_installed(ctx: RuleContext) -> List[Tuple[str, str, str, str]]:
    """``(project, label, version, where)`` of each framework release found: vllm-ascend and
    triton-ascend from their dist-info, MindIE and ATB models from their version.info (cann facts)."""
    out: List[Tuple[str, str, str, str]] = []
    for project in PIP_PROJECTS:
        rec = ctx.view.packages.first(project)
        if rec is not None and rec.version:
            proj = framework_project(project)
            label = proj.label if proj is not None else project
            out.append((project, label, rec.version, rec.dist_info or rec.location or ""))
    cann = ctx.view.cann
    for fact, project, label in (
        (cann.mindie, "mindie", "MindIE"),
        (cann.atb_models, "atb-models", "MindIE ATB models"),
    ):
        if fact is not None and fact.version:
            out.append((project, label, fact.version, fact.source or fact.path or ""))
    return out


def _framework_for_cann(project: str, cann: str) -> Optional[str]:
    """The newest release of ``project`` in the built-in table whose documented CANN is
    ``cann`` or older (a release made for the CANN in use), as an installable version."""
    best = None
    for row in table():
        if row.project != project or not row.cann_min or cann_less(cann, row.cann_min) is not False:
            continue
        spec = row.versions[0]
        m = re.search(r"(?:==|>=)\s*([0-9][0-9A-Za-z.]*)", spec)
        if m:
            best = m.group(1)  # rows are oldest first: the last fitting one is the newest
    return best


def _release_name(project: str, version: str) -> str:
    """The published release name of the table row ``version`` of ``project`` (MindSpeed
    rows name their branches), else ``version``."""
    rows = rows_for(project, version)
    return rows[0].release or version if rows else version


def _vllm_image(version: str, chip: Optional[str]) -> Optional[str]:
    """ "or run the image …" for vllm-ascend ``version`` on this chip, with the CANN its base
    image carries (vllm_ascend_images.toml); ``None`` when that release has no such image."""
    family = vllm_images.family_of_package_chip(chip)
    image = vllm_images.image_for(version, family) if family else None
    rel = vllm_images.release_of(version)
    if not image or rel is None or family is None:
        return None
    return (
        f"or run vllm-ascend {version} in its image {image}, whose base image carries CANN {rel.cann_for(family)} "
        "(mount the host's driver into it)"
    )


@rule
def framework_cann(ctx: RuleContext) -> Iterable[Finding]:
    """CANN012: vllm-ascend / MindIE release older CANN than it documents (K05)."""
    tk = ctx.view.cann.selected
    if tk is None or not tk.version:
        return
    cv = tk.version
    have = parse_cann(cv)
    if have is None:
        return
    arch = host_arch(ctx.view.host, ctx.view.packages)
    for project, label, version, where in _frameworks_installed(ctx):
        rows = rows_for(project, version)
        if not rows or not rows[0].cann_min:
            continue
        row = rows[0]
        need = str(row.cann_min)
        # a beta/alpha of the documented release counts as it (8.0.0.beta1 for ">= 8.0.0")
        if cann_less(have.release, need) is not True:
            continue
        fix = release_steps(
            need, arch, package_chip(ctx.matrix, ctx.view.devices), True, note=f"CANN {need} for {label} {version}"
        )
        first = driver_upgrade_first(ctx.matrix, need, installed_driver(ctx.view.driver, ctx.view.devices))
        if first:
            fix.insert(0, first)
        proj = framework_project(project)
        pypi = proj is not None and proj.install == "pypi"
        older = _framework_for_cann(project, cv) if project in PIP_PROJECTS else None
        if older and not pypi:
            branch = _release_name(project, older)
            fix.append(
                f"or keep CANN {cv} and use {label} {branch} (made for it): check out that branch and reinstall it"
            )
        elif older and project != "vllm-ascend":
            fix.append(
                pip_install(
                    ctx.view.python,
                    f"{project}=={older}",
                    lead=f"or keep CANN {cv} and install {project} {older} (made for it): ",
                )
            )
        elif older:
            fix.append(
                pip_install(
                    ctx.view.python,
                    f"vllm=={older.split('rc')[0]}",
                    lead=f"or keep CANN {cv} and install vllm-ascend {older} (made for it): ",
                    note="vllm first",
                )
            )
            fix.append(pip_install(ctx.view.python, f"vllm-ascend=={older}", lead="  then "))
        if project == "vllm-ascend":
            image = _vllm_image(version, package_chip(ctx.matrix, ctx.view.devices))
            if image:
                fix.append(image)
        evidence = [
            f"{label} {version} from {where}",
            toolkit_line(tk),
            f"{label} {version} documents CANN {need} (built-in table: {row.source})",
        ]
        wanted = parse_cann(need)
        same_line = wanted is not None and have.base == wanted.base
        if same_line:
            # an older release of the documented X.Y line (8.5.0 under 8.5.1): not documented
            # either way, so a warning, never an error (AUDIT §7 (b))
            evidence.append(
                f"CANN {cv} is an older release of the same {have.base} line: "
                "not documented either way, not a documented failure"
            )
        yield FRAMEWORK_CANN.finding(
            title=f"{label} {version} needs CANN {need} or newer, but CANN {cv} is in use"
            + (f" (same {have.base} release line)" if same_line else ""),
            evidence=evidence,
            fix=fix,
            severity="warning" if same_line else None,
            subject=f"{project}:cann",
        )
