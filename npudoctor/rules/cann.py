"""Rules about the CANN toolkit, its kernels/ops package and NNAL/ATB (kinds K04, K05,
K11, K12), from the ``cann`` facts (``npudoctor/probes/cann.py``) plus ``packages``,
``devices.chips``, ``host.arch`` and ``libraries.torch_cxx11_abi`` when present.

Codes ``CANN001``-``CANN011``.  Package file names and install order follow the official
offline packages (../shared/matrix/REPORT.md §5): toolkit -> kernels/ops -> ``source
set_env.sh`` -> NNAL.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, Optional, Tuple

from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.knowledge.packages import NNAL_SET_ENV, set_env_script
from npudoctor.plan.fit import driver_fit, hdk_for, mismatch_plan
from npudoctor.remedies import Command, ComputedEnv, InstallPackage, Remedy, SourceFile
from npudoctor.rules import rule
from npudoctor.rules._cannfacts import (
    cann_less,
    chip_info,
    chips,
    host_arch,
    installed,
    installed_driver,
    installed_torch,
    major_minor,
    not_in_matrix_line,
    package_chip,
    parse_cann,
    python_tag,
    same_release,
    torch_npu_record,
)
from npudoctor.rules.overview import npu_stack_present

# --------------------------------------------------------------------------- codes

NO_CANN = codes.get("CANN001")

OLDER_SELECTED = codes.get("CANN002")

TORCH_NPU_CANN = codes.get("CANN003")

KERNELS_MISSING = codes.get("CANN004")

KERNELS_OTHER_SOC = codes.get("CANN005")

KERNELS_VERSION = codes.get("CANN006")

NNAL_MISSING = codes.get("CANN007")

NNAL_VERSION = codes.get("CANN008")

ATB_ABI = codes.get("CANN009")

UNREADABLE = codes.get("CANN010")

ARCH_MISMATCH = codes.get("CANN011")

FRAMEWORK_CANN = codes.get("CANN012")

# --------------------------------------------------------------------------- helpers

_NEEDS_NNAL = ("vllm-ascend", "vllm_ascend", "mindie", "mindie-turbo", "mindie_turbo", "mindie-llm", "mindie_llm")


def set_env_path(toolkit: Optional[Dict[str, Any]], cann: Optional[str] = None) -> Optional[str]:
    """The set_env.sh to source: the one the cann probe found next to a toolkit record
    (``None`` when that toolkit has none), or, for a fresh install of ``cann``, where
    the installer puts it (:func:`npudoctor.knowledge.packages.set_env_script`)."""
    if toolkit is not None:
        return str(toolkit["set_env"]) if toolkit.get("set_env") else None
    return set_env_script(cann)


def set_env_step(toolkit: Optional[Dict[str, Any]], cann: Optional[str] = None, lead: str = "") -> Remedy:
    """The step that applies a toolkit's environment: source its set_env.sh when that
    script exists, else let npudoctor compute what the script would set for the toolkit
    ``ASCEND_TOOLKIT_HOME`` names -- never a script that is not there."""
    script = set_env_path(toolkit, cann)
    if script:
        return SourceFile(script, lead=lead)
    where = (toolkit or {}).get("path")
    return ComputedEnv(str(where) if where else None, lead=lead)


def install(
    kind: str,
    version: Optional[str],
    arch: Optional[str],
    chip: Optional[str] = None,
    lead: str = "",
    unknown: str = "",
) -> InstallPackage:
    """An install step of an Ascend package (file name from knowledge/packages.py)."""
    return InstallPackage(kind, version or None, arch=arch, chip=chip, lead=lead, unknown=unknown)


def nnal_set_env(note: str = "") -> SourceFile:
    """``source`` NNAL's ATB set_env.sh."""
    return SourceFile(NNAL_SET_ENV, note=note)


def _versions_disagree(tk: Dict[str, Any]) -> List[str]:
    seen = tk.get("versions") or {}
    values = {str(v).lower() for v in seen.values()}
    if len(values) <= 1:
        return []
    return [f"{v} in {p}" for p, v in seen.items()]


def _toolkit_line(tk: Dict[str, Any]) -> str:
    via = tk.get("found_via")
    how = f" (via {via})" if via and via != tk.get("path") else ""
    return f"CANN {tk.get('version') or '(unknown version)'} at {tk.get('path')}{how}, read from {tk.get('source')}"


# --------------------------------------------------------------------------- rules


@rule
def no_cann(ctx: Any) -> Iterable[Finding]:
    """CANN001: no toolkit at all (error with torch_npu installed, info otherwise)."""
    cann = ctx.facts("cann")
    if "toolkits" not in cann or cann.get("toolkits"):
        return
    if not npu_stack_present(ctx.snapshot):
        return  # HOST050 says it calmly
    tnpu = torch_npu_record(ctx)
    arch = host_arch(ctx)
    searched = cann.get("searched") or []
    evidence = ["no CANN toolkit found; looked in: " + ", ".join(str(s) for s in searched[:10])]
    env = cann.get("env") or {}
    for var in ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH"):
        fact = env.get(var)
        if fact:
            evidence.append(f"{var}={fact.get('value')} ({'exists' if fact.get('exists') else 'no such directory'})")
    frameworks = [
        f"{name} {rec.get('version')}"
        for name in ("vllm-ascend", "mindie", "mindie-turbo")
        for rec in ((ctx.facts("packages").get("installed") or {}).get(name) or [])[:1]
    ]
    if tnpu is None and frameworks:
        yield NO_CANN.finding(
            title=f"{', '.join(frameworks)} is installed, but no CANN toolkit (and no torch_npu) is",
            evidence=evidence + [f"{f} runs on torch_npu and CANN" for f in frameworks],
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
        yield NO_CANN.finding(
            title="No CANN toolkit installed (no torch_npu either; fine on a host that runs CANN in containers)",
            evidence=evidence,
            severity="info",
        )
        return
    tver = str(tnpu.get("version") or "")
    evidence.insert(0, f"torch_npu {tver} installed in {tnpu.get('location')}")
    cann_ver = None
    matrix = ctx.matrix
    if matrix is not None:
        try:
            row = matrix.find_torch_npu(tver)
        except Exception:
            row = None
        if row is not None and getattr(row, "cann", None):
            cann_ver = str(row.cann[0])
            evidence.append(f"torch_npu {tver} is paired with CANN {cann_ver} ({getattr(row, 'source', 'matrix')})")
    unknown = f"the CANN version paired with torch_npu {tver} (`npudoctor matrix show --torch-npu {tver}` names it)"
    chip = package_chip(ctx)
    fix: List[Any] = [
        install("toolkit", cann_ver, arch, unknown=unknown),
        install("kernels", cann_ver, arch, chip, unknown=unknown),
        set_env_step(None, cann_ver),
    ]
    if _nnal_needed(ctx)[0]:
        fix.append(install("nnal", cann_ver, arch, unknown=unknown))
        fix.append(nnal_set_env())
    yield NO_CANN.finding(
        title=f"torch_npu {tver} is installed but no CANN toolkit is"
        + (f" (it needs CANN {cann_ver})" if cann_ver else ""),
        evidence=evidence,
        fix=fix,
        data={"torch_npu": tver, "cann": cann_ver},
    )


@rule
def unreadable_files(ctx: Any) -> Iterable[Finding]:
    """CANN010: version files that could not be read or parsed."""
    cann = ctx.facts("cann")
    for tk in cann.get("toolkits") or []:
        errors = tk.get("errors") or []
        if not errors:
            continue
        severe = tk.get("version") is None
        evidence = [f"{e.get('path')}: {e.get('error')}" for e in errors]
        if tk.get("version"):
            evidence.append(f"version {tk['version']} taken from {tk.get('source')}")
        yield UNREADABLE.finding(
            title=(
                f"The CANN version at {tk.get('path')} cannot be read"
                if severe
                else f"Some CANN version files at {tk.get('path')} cannot be read"
            ),
            evidence=evidence,
            fix=[
                Command(("ls", "-l", str(errors[0].get("path")))),
                "reinstall the damaged package if the file is truncated or garbled",
            ],
            severity="warning" if severe else "info",
            subject=str(tk.get("path")),
        )
    for rec in cann.get("nnal_all") or []:
        for err in rec.get("errors") or []:
            yield UNREADABLE.finding(
                title=f"The NNAL version file at {err.get('path')} cannot be read",
                evidence=[f"{err.get('path')}: {err.get('error')}"],
                fix=[Command(("ls", "-l", str(err.get("path"))))],
                severity="warning",
                subject=str(err.get("path")),
            )


@rule
def arch_mismatch(ctx: Any) -> Iterable[Finding]:
    """CANN011: toolkit arch differs from the machine's."""
    arch = ctx.facts("host").get("arch")
    tk = ctx.facts("cann").get("selected")
    if not tk or arch not in ("aarch64", "x86_64") or tk.get("arch") not in ("aarch64", "x86_64"):
        return
    if tk["arch"] == arch:
        return
    ver = tk.get("version")
    yield ARCH_MISMATCH.finding(
        title=f"CANN {ver or '(unknown version)'} at {tk.get('path')} is built for {tk['arch']}, this machine is {arch}",
        evidence=[_toolkit_line(tk), f"machine architecture {arch} ({ctx.facts('host').get('arch_source')})"],
        fix=[install("toolkit", ver, arch, unknown="the CANN version you use")],
    )


@rule
def older_selected(ctx: Any) -> Iterable[Finding]:
    """CANN002: several installs and the selected one is not the newest."""
    cann = ctx.facts("cann")
    toolkits = [t for t in cann.get("toolkits") or [] if t.get("version")]
    selected = cann.get("selected")
    if not selected or len(toolkits) < 2 or not selected.get("version"):
        return
    newer = [t for t in toolkits if cann_less(selected["version"], t["version"]) is True]
    if not newer:
        return
    newest = newer[0]
    for t in newer[1:]:
        if cann_less(newest["version"], t["version"]) is True:
            newest = t
    evidence = [
        f"in use ({cann.get('selected_via')}): " + _toolkit_line(selected),
        "newest on disk: " + _toolkit_line(newest),
    ]
    evidence += ["also installed: " + _toolkit_line(t) for t in toolkits if t not in (selected, newest)]
    severity = "warning"
    tnpu = torch_npu_record(ctx)
    if tnpu and ctx.matrix is not None:
        fit_sel = _fit(ctx, str(tnpu.get("version")), selected["version"])
        fit_new = _fit(ctx, str(tnpu.get("version")), newest["version"])
        if fit_sel in ("paired", "compatible") and fit_new not in ("paired", "compatible"):
            severity = "info"
            evidence.append(
                f"torch_npu {tnpu.get('version')} is {fit_sel} with CANN {selected['version']} "
                f"but {fit_new} with {newest['version']}: keeping the older one is right"
            )
    yield OLDER_SELECTED.finding(
        title=f"CANN {selected['version']} is in use but CANN {newest['version']} is also installed",
        evidence=evidence,
        fix=[set_env_step(newest)],
        severity=severity,
        data={"selected": selected["version"], "newest": newest["version"]},
    )


def _fit(ctx: Any, torch_npu: str, cann: str) -> str:
    matrix = ctx.matrix
    try:
        row = matrix.find_torch_npu(torch_npu)
        if row is None:
            return "unknown"
        return str(matrix.cann_fit(row, cann))
    except Exception:
        return "unknown"


@rule
def torch_npu_cann(ctx: Any) -> Iterable[Finding]:
    """CANN003: torch_npu vs the selected CANN via the matrix (K05)."""
    tk = ctx.facts("cann").get("selected")
    tnpu = torch_npu_record(ctx)
    matrix = ctx.matrix
    if not tk or not tk.get("version") or tnpu is None or matrix is None:
        return
    tver = str(tnpu.get("version") or "")
    cver = str(tk["version"])
    if not tver:
        return
    try:
        row = matrix.find_torch_npu(tver)
    except Exception:
        row = None
    evidence = [
        f"torch_npu {tver} from {tnpu.get('dist_info') or tnpu.get('location')}",
        _toolkit_line(tk),
    ]
    if row is None:
        yield TORCH_NPU_CANN.finding(
            title=f"torch_npu {tver} is not in the compatibility matrix; its CANN pairing is unknown",
            evidence=evidence,
            fix=[not_in_matrix_line(f"torch_npu {tver}")],
            severity="warning",
            subject="torch_npu",
        )
        return
    try:
        fit = str(matrix.cann_fit(row, cver))
    except Exception:
        fit = "unknown"
    paired = [str(c) for c in getattr(row, "cann", []) or []]
    compatible = [str(c) for c in getattr(row, "cann_compatible", []) or []]
    evidence.append(
        f"matrix: torch_npu {tver} paired with CANN {', '.join(paired) or '?'}"
        + (f"; compatible: {', '.join(compatible)}" if compatible else "")
        + f" ({getattr(row, 'source', 'matrix')})"
    )
    if fit in ("paired", "compatible"):
        return
    if fit == "unknown":
        yield TORCH_NPU_CANN.finding(
            title=f"CANN {cver} is not in the matrix for torch_npu {tver}; pairing unknown",
            evidence=evidence,
            fix=[not_in_matrix_line(f"CANN {cver}")],
            severity="warning",
            subject="torch_npu",
        )
        return
    plan = cann_plan(ctx)
    fix = _cann003_fix(ctx, plan) if plan else []
    yield TORCH_NPU_CANN.finding(
        title=f"torch_npu {tver} does not work with CANN {cver}"
        + (f" (it is paired with CANN {paired[0]})" if paired else ""),
        evidence=evidence,
        fix=fix,
        subject="torch_npu",
        data={
            "torch_npu": tver,
            "cann": cver,
            "fit": fit,
            "paired": paired,
            "keep_cann": plan.keep_dict() if plan else None,
            "move_to_cann": plan.move_to if plan else None,
        },
    )


def cann_plan(ctx: Any) -> Any:
    """The ways out of a torch_npu/CANN mismatch (CANN003) for this machine, from the
    one solver (:func:`npudoctor.plan.fit.mismatch_plan`), or ``None``."""
    tk = ctx.facts("cann").get("selected")
    tnpu = torch_npu_record(ctx)
    if not tk or not tk.get("version") or tnpu is None:
        return None
    py, plat = python_tag(ctx)
    return mismatch_plan(ctx.matrix, str(tnpu.get("version") or ""), str(tk["version"]), installed_torch(ctx), py, plat)


def _cann003_fix(ctx: Any, plan: Any) -> List[Remedy]:
    """Fix steps of CANN003: option A (keep the CANN, change torch_npu; preferred when a
    build exists), then option B (install the CANN torch_npu is paired with, and the
    driver that CANN needs).  Continuation lines are indented by two spaces."""
    from npudoctor.rules._pyfacts import CPU_INDEX, pip_install

    cver, tver = plan.cann, plan.torch_npu
    keep, move = plan.keep_cann, plan.move_to
    out: List[Remedy] = []
    if keep is not None:
        what = f"torch_npu {keep.torch_npu} is {'paired' if keep.fit == 'paired' else 'declared compatible'} with CANN {cver}"
        npu_req = f"torch-npu=={keep.torch_npu}"
        if keep.torch_changes:
            _py, plat = python_tag(ctx)
            torch_req = f"torch=={keep.torch}" + ("+cpu" if plat == "x86_64" else "")
            head = f"option A (preferred: keep CANN {cver}; {what} and built for torch {keep.torch}): "
            if plat == "x86_64":
                out.append(pip_install(ctx, torch_req, index=CPU_INDEX, lead=head))
                out.append(pip_install(ctx, npu_req, lead="  "))
            else:
                out.append(pip_install(ctx, torch_req, npu_req, lead=head))
        else:
            out.append(
                pip_install(ctx, npu_req, lead=f"option A (preferred: keep CANN {cver} and your torch; {what}): ")
            )
    driver = installed_driver(ctx)
    if keep is not None and driver and driver_fit(ctx.matrix, cver, driver) in ("too-old", "incompatible"):
        hdk = hdk_for(ctx.matrix, cver)
        out.append(
            f"  and upgrade the driver {driver}, which CANN {cver} does not support"
            + (f", to Ascend HDK {hdk}" if hdk else "")
            + " (DRV002)"
        )
    if move:
        arch = host_arch(ctx)
        head = (
            f"option B (install CANN {move}, the one torch_npu {tver} is paired with): "
            if keep is not None
            else f"install CANN {move}, the one torch_npu {tver} is paired with (no torch_npu build for CANN {cver} in the matrix): "
        )
        out.append(install("toolkit", move, arch, lead=head))
        out.append(install("kernels", move, arch, package_chip(ctx), lead="  "))
        out.append(set_env_step(None, move, lead="  "))
        hdk = hdk_for(ctx.matrix, move)
        fit = driver_fit(ctx.matrix, move, driver) if driver else None
        if driver and fit in ("paired", "compatible"):
            out.append(f"  the installed driver {driver} already fits CANN {move}")
        elif hdk:
            out.append(
                f"  and the NPU driver + firmware of Ascend HDK {hdk}, which CANN {move} needs"
                + (f" (driver {driver} does not fit it)" if driver and fit in ("too-old", "incompatible") else "")
                + "; then reboot"
            )
    return out


def _selected_kernels(ctx: Any) -> Tuple[Optional[Dict[str, Any]], Dict[str, Any]]:
    tk = ctx.facts("cann").get("selected")
    return tk, (tk or {}).get("kernels") or {}


@rule
def kernels_for_chip(ctx: Any) -> Iterable[Finding]:
    """CANN004/CANN005: kernels for the chips of this machine (K12)."""
    tk, kernels = _selected_kernels(ctx)
    if not tk:
        return
    ver = tk.get("version")
    unknown = "the CANN toolkit in use"
    arch = host_arch(ctx) or tk.get("arch")
    present = sorted(set(kernels.get("socs") or []) | set(kernels.get("configs") or []))
    kdir = f"{tk.get('opp_path') or str(tk.get('path')) + '/opp'}/built-in/op_impl/ai_core/tbe/kernel"
    wanted: Dict[str, List[str]] = {}
    pkg_chip: Dict[str, Optional[str]] = {}
    for chip in chips(ctx):
        info = chip_info(ctx, str(chip["name"]))
        kd = getattr(info, "kernels_dir", None)
        if kd:
            wanted.setdefault(str(kd), []).append(str(chip["name"]))
            pkg_chip[str(kd)] = getattr(info, "kernels_package_chip", None)
    set_env = set_env_step(tk)
    if not wanted:
        if not present and chips(ctx) == [] and torch_npu_record(ctx) is not None:
            yield KERNELS_MISSING.finding(
                title=f"No CANN kernels package is installed in CANN {ver or '(unknown version)'} at {tk.get('path')}",
                evidence=[
                    _toolkit_line(tk),
                    f"{kdir}/ holds no SoC directory",
                    "no NPU chip listed (npu-smi), so the chip is unknown",
                ],
                fix=[set_env, install("kernels", ver, arch, None, unknown=unknown)],
                severity="warning",
            )
        return
    for soc_dir, names in sorted(wanted.items()):
        if soc_dir in present:
            continue
        chip_names = ", ".join(sorted(set(names)))
        evidence = [
            _toolkit_line(tk),
            f"NPU chip(s) {chip_names} need kernels in {kdir}/{soc_dir}/ and {kdir}/config/{soc_dir}/binary_info_config.json",
            f"present: {', '.join(present) if present else 'none'}",
        ]
        fix = [set_env, install("kernels", ver, arch, pkg_chip.get(soc_dir), unknown=unknown)]
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
def kernels_version(ctx: Any) -> Iterable[Finding]:
    """CANN006: kernels package version differs from the toolkit's."""
    tk, kernels = _selected_kernels(ctx)
    if not tk or not tk.get("version") or not kernels.get("version"):
        return
    same = same_release(tk["version"], kernels["version"])
    if same is not False:
        return
    ver = str(tk["version"])
    ops_era = (major_minor(ver) or (0, 0)) >= (8, 5) and (major_minor(kernels["version"]) or (0, 0)) >= (8, 5)
    yield KERNELS_VERSION.finding(
        title=f"Kernels package {kernels['version']} does not match CANN toolkit {ver}",
        evidence=[_toolkit_line(tk), f"kernels {kernels['version']} from {kernels.get('source')}"],
        fix=[
            set_env_step(tk),
            install("kernels", ver, host_arch(ctx) or tk.get("arch"), package_chip(ctx)),
        ],
        severity="warning" if ops_era else "error",
    )


def _nnal_needed(ctx: Any) -> Tuple[bool, List[str]]:
    reasons: List[str] = []
    for name in _NEEDS_NNAL:
        for rec in installed(ctx, name):
            reasons.append(f"{rec.get('name') or name} {rec.get('version')} is installed (it links NNAL's libatb.so)")
    cann = ctx.facts("cann")
    env = (cann.get("env") or {}).get("ATB_HOME_PATH")
    if env and env.get("value"):
        reasons.append(f"ATB_HOME_PATH={env['value']} is set")
    if cann.get("mindie"):
        reasons.append(f"MindIE {cann['mindie'].get('version')} is installed at {cann['mindie'].get('path')}")
    return bool(reasons), reasons


@rule
def nnal_missing(ctx: Any) -> Iterable[Finding]:
    """CANN007: NNAL needed (vllm-ascend, MindIE, ATB_HOME_PATH) but not installed (K11)."""
    cann = ctx.facts("cann")
    if "nnal_all" not in cann or cann.get("nnal_all"):
        return
    needed, reasons = _nnal_needed(ctx)
    if not needed:
        return
    tk = cann.get("selected")
    ver = (tk or {}).get("version")
    arch = host_arch(ctx) or (tk or {}).get("arch")
    evidence = reasons + [
        "no NNAL found: looked for nnal/atb/latest/version.info under /usr/local/Ascend, ~/Ascend, /home/*/Ascend"
    ]
    env = (cann.get("env") or {}).get("ATB_HOME_PATH")
    if env and env.get("value") and not env.get("exists"):
        evidence.append(f"ATB_HOME_PATH={env['value']} does not exist")
    fix: List[Remedy] = []
    if tk:
        fix.append(set_env_step(tk))
    fix += [install("nnal", ver, arch, unknown="the CANN toolkit you use"), nnal_set_env()]
    yield NNAL_MISSING.finding(
        title=f"NNAL (ATB) is not installed, but it is needed: {reasons[0]}",
        evidence=evidence,
        fix=fix,
    )


@rule
def nnal_version(ctx: Any) -> Iterable[Finding]:
    """CANN008: NNAL version differs from the toolkit's (K04)."""
    cann = ctx.facts("cann")
    tk = cann.get("selected")
    nnal = cann.get("nnal")
    if not tk or not nnal or not tk.get("version") or not nnal.get("version"):
        return
    if same_release(tk["version"], nnal["version"]) is not False:
        return
    ver = str(tk["version"])
    arch = host_arch(ctx) or tk.get("arch")
    yield NNAL_VERSION.finding(
        title=f"NNAL {nnal['version']} does not match CANN toolkit {ver}",
        evidence=[_toolkit_line(tk), f"NNAL/ATB {nnal.get('build') or nnal['version']} from {nnal.get('source')}"],
        fix=[set_env_step(tk), install("nnal", ver, arch), nnal_set_env()],
    )


def _torch_cxx11_abi(ctx: Any) -> Optional[bool]:
    libs = ctx.facts("libraries")
    for key in ("torch_cxx11_abi", "torch_cxx_abi"):
        value = libs.get(key)
        if isinstance(value, bool):
            return value
        if isinstance(value, dict) and isinstance(value.get("value"), bool):
            return bool(value["value"])
        if value in (0, 1):
            return bool(value)
    return None


@rule
def atb_abi(ctx: Any) -> Iterable[Finding]:
    """CANN009: ATB_HOME_PATH names a missing dir, or the other C++ ABI than torch (K11)."""
    cann = ctx.facts("cann")
    env = (cann.get("env") or {}).get("ATB_HOME_PATH")
    if not env or not env.get("value"):
        return
    value = str(env["value"]).rstrip("/")
    m = re.search(r"cxx_abi_([01])$", value)
    abi = int(m.group(1)) if m else None
    fix: List[Remedy] = [nnal_set_env(note="after torch is installed, in a fresh shell")]
    if not env.get("exists"):
        nnal = cann.get("nnal") or {}
        yield ATB_ABI.finding(
            title=f"ATB_HOME_PATH={value} does not exist",
            evidence=[f"ATB_HOME_PATH={value}: no such directory"]
            + (
                [
                    f"NNAL {nnal.get('version')} at {nnal.get('path')} has {', '.join(nnal.get('abi_dirs') or []) or 'no cxx_abi_* directory'}"
                ]
                if nnal
                else []
            ),
            fix=fix,
        )
        return
    torch_abi = _torch_cxx11_abi(ctx)
    if abi is None or torch_abi is None or bool(abi) == torch_abi:
        return
    want = 1 if torch_abi else 0
    yield ATB_ABI.finding(
        title=f"ATB_HOME_PATH uses cxx_abi_{abi} but torch is built with the {'C++11' if torch_abi else 'old'} ABI (needs cxx_abi_{want})",
        evidence=[f"ATB_HOME_PATH={value}", f"torch compiled with _GLIBCXX_USE_CXX11_ABI={want} (libraries facts)"],
        fix=fix + [SourceFile(NNAL_SET_ENV, args=f"--cxx_abi={want}", lead="or: ")],
    )


def _frameworks_installed(ctx: Any) -> List[Tuple[str, str, str, str]]:
    """``(project, label, version, where)`` of each framework release found: vllm-ascend
    from its dist-info, MindIE and ATB models from their version.info (cann facts)."""
    out: List[Tuple[str, str, str, str]] = []
    for rec in installed(ctx, "vllm-ascend", "vllm_ascend")[:1]:
        if rec.get("version"):
            where = str(rec.get("dist_info") or rec.get("location") or "")
            out.append(("vllm-ascend", "vllm-ascend", str(rec["version"]), where))
    cann = ctx.facts("cann")
    for key, project, label in (("mindie", "mindie", "MindIE"), ("atb_models", "atb-models", "MindIE ATB models")):
        fact = cann.get(key)
        if isinstance(fact, dict) and fact.get("version"):
            out.append((project, label, str(fact["version"]), str(fact.get("source") or fact.get("path") or "")))
    return out


def _framework_for_cann(project: str, cann: str) -> Optional[str]:
    """The newest release of ``project`` in the built-in table whose documented CANN is
    ``cann`` or older (a release made for the CANN in use), as an installable version."""
    from npudoctor.rules._frameworks import TABLE

    best = None
    for row in TABLE:
        if row.project != project or not row.cann_min or cann_less(cann, row.cann_min) is not False:
            continue
        spec = row.versions[0]
        m = re.search(r"(?:==|>=)\s*([0-9][0-9A-Za-z.]*)", spec)
        if m:
            best = m.group(1)  # rows are oldest first: the last fitting one is the newest
    return best


@rule
def framework_cann(ctx: Any) -> Iterable[Finding]:
    """CANN012: vllm-ascend / MindIE release older CANN than it documents (K05)."""
    from npudoctor.rules._frameworks import rows_for
    from npudoctor.rules._pyfacts import pip_install

    tk = ctx.facts("cann").get("selected")
    if not isinstance(tk, dict) or not tk.get("version"):
        return
    cv = str(tk["version"])
    have = parse_cann(cv)
    if have is None:
        return
    arch = host_arch(ctx)
    for project, label, version, where in _frameworks_installed(ctx):
        rows = rows_for(project, version)
        if not rows or not rows[0].cann_min:
            continue
        row = rows[0]
        need = str(row.cann_min)
        # a beta/alpha of the documented release counts as it (8.0.0.beta1 for ">= 8.0.0")
        if cann_less(getattr(have, "release", cv), need) is not True:
            continue
        fix: List[Remedy] = [
            install("toolkit", need, arch),
            install("kernels", need, arch, package_chip(ctx)),
            install("nnal", need, arch),
            set_env_step(None, need),
            nnal_set_env(note=f"CANN {need} for {label} {version}"),
        ]
        older = _framework_for_cann(project, cv) if project == "vllm-ascend" else None
        if older:
            fix.append(
                pip_install(
                    ctx,
                    f"vllm=={older.split('rc')[0]}",
                    lead=f"or keep CANN {cv} and install vllm-ascend {older} (made for it): ",
                    note="vllm first",
                )
            )
            fix.append(pip_install(ctx, f"vllm-ascend=={older}", lead="  then "))
        yield FRAMEWORK_CANN.finding(
            title=f"{label} {version} needs CANN {need} or newer, but CANN {cv} is in use",
            evidence=[
                f"{label} {version} from {where}",
                _toolkit_line(tk),
                f"{label} {version} documents CANN {need} (built-in table: {row.source})",
            ],
            fix=fix,
            subject=f"{project}:cann",
        )
