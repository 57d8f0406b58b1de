"""Rules about the NPU driver and firmware (kind K14), from the ``driver`` facts
(``npudoctor/probes/driver.py``), the selected CANN toolkit (``cann.selected``), the
npu-smi header (``devices.npu_smi.driver_version``) and ``container.in_container``.

Codes ``DRV001``-``DRV004``.  Driver/firmware package names follow REPORT.md §5:
``Ascend-hdk-<chip>-npu-driver_<ver>_linux-<aarch64|x86-64>.run`` and
``Ascend-hdk-<chip>-npu-firmware_<fw>.run``.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple

from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.parsers.info_files import format_ranges, ranges_contain
from npudoctor.plan.fit import driver_fit, hdk_for, mismatch_plan
from npudoctor.remedies import Command, DockerFlags, InstallPackage, Reboot
from npudoctor.rules import rule
from npudoctor.rules._cannfacts import (
    host_arch,
    installed_torch,
    not_in_matrix_line,
    package_chip,
    python_tag,
    torch_npu_record,
)

NO_DRIVER = codes.get("DRV001")

DRIVER_CANN = codes.get("DRV002")

FIRMWARE_DRIVER = codes.get("DRV003")

DRIVER_UNREADABLE = codes.get("DRV004")


def _in_container(ctx: Any) -> bool:
    return bool(ctx.facts("container").get("in_container"))


def driver_version(ctx: Any) -> Tuple[Optional[str], Optional[str]]:
    """``(version, source)`` of the NPU driver: driver/version.info, else the npu-smi header."""
    drv = ctx.facts("driver").get("driver") or {}
    if drv.get("version"):
        return str(drv["version"]), str(drv.get("source"))
    smi = ctx.facts("devices").get("npu_smi") or {}
    if isinstance(smi, dict) and smi.get("driver_version"):
        return str(smi["driver_version"]), "npu-smi info (table header)"
    return None, None


def _hdk_chip(ctx: Any) -> Optional[str]:
    """The chip part of the HDK package names (``910b``, ``310p``, ``910``) for this
    machine's NPUs (devices facts + matrix, see :func:`package_chip`), or ``None``."""
    chip = package_chip(ctx)
    return chip.lower() if chip else None


def _firmware(ctx: Any, hdk: Optional[str], lead: str = "", note: str = "") -> InstallPackage:
    """The firmware step of Ascend HDK ``hdk`` (file ``Ascend-hdk-<chip>-npu-firmware_<fw>.run``,
    REPORT.md §5): its build number is published for a few drivers only
    (knowledge/packages.py), else the step is prose naming the HDK."""
    from npudoctor.knowledge.packages import firmware_for_driver

    fw = firmware_for_driver(hdk) if hdk else None
    what = f"Ascend HDK {hdk}" if hdk else "the same Ascend HDK"
    return InstallPackage(
        "firmware",
        fw,
        chip=_hdk_chip(ctx),
        unknown=f"{what} (its .run file name carries its own build number)",
        lead=lead,
        note=note,
    )


def _driver(ctx: Any, version: Optional[str], lead: str = "", unknown: str = "") -> InstallPackage:
    """The driver step of HDK ``version`` (``Ascend-hdk-<chip>-npu-driver_<ver>_linux-<arch>.run``)."""
    return InstallPackage(
        "driver",
        version.lower() if version else None,
        arch=host_arch(ctx),
        chip=_hdk_chip(ctx),
        unknown=unknown,
        lead=lead,
    )


def _cann_plan(ctx: Any) -> Any:
    """CANN003's plan (:func:`npudoctor.plan.fit.mismatch_plan`) for this machine, or ``None``."""
    tk = ctx.facts("cann").get("selected") or {}
    tnpu = torch_npu_record(ctx)
    if not tk.get("version") or tnpu is None:
        return None
    py, plat = python_tag(ctx)
    return mismatch_plan(ctx.matrix, str(tnpu.get("version") or ""), str(tk["version"]), installed_torch(ctx), py, plat)


def _move_note(ctx: Any, driver: Optional[str]) -> Optional[str]:
    """The driver-side view of CANN003's option B (move to the CANN torch_npu is paired
    with), so DRV001/DRV002 and CANN003 say the same thing; ``None`` without a mismatch."""
    plan = _cann_plan(ctx)
    if plan is None or not plan.move_to:
        return None
    move = str(plan.move_to)
    fit = driver_fit(ctx.matrix, move, driver) if driver else None
    if fit in ("paired", "compatible"):
        return (
            f"or install CANN {move}, the one torch_npu {plan.torch_npu} is paired with "
            f"(CANN003 option B): driver {driver} supports it"
        )
    hdk = hdk_for(ctx.matrix, move)
    if not hdk:
        return None
    return (
        f"the HDK above is for the CANN {plan.cann} in use (CANN003 option A); if you move to "
        f"CANN {move} for torch_npu {plan.torch_npu} (CANN003 option B), install Ascend HDK {hdk} instead"
    )


def _paired_hdk(ctx: Any) -> Optional[str]:
    """The HDK version the matrix pairs with the selected CANN (for fix-its), or ``None``."""
    tk = ctx.facts("cann").get("selected") or {}
    if not tk.get("version"):
        return None
    return hdk_for(ctx.matrix, str(tk["version"]))


@rule
def driver_missing(ctx: Any) -> Iterable[Finding]:
    """DRV001: CANN or torch_npu present but no driver (host: not installed; container: not mounted)."""
    facts = ctx.facts("driver")
    if "driver" not in facts:
        return
    drv = facts.get("driver") or {}
    version, _src = driver_version(ctx)
    if drv.get("exists") or version:
        return
    cann = ctx.facts("cann")
    tnpu = torch_npu_record(ctx)
    toolkits = cann.get("toolkits") or []
    if not toolkits and tnpu is None:
        return  # nothing that needs a driver (no stack: HOST050; CANN001 covers the rest)
    evidence = [f"{drv.get('path') or '/usr/local/Ascend/driver'}/version.info: not found"]
    if tnpu is not None:
        evidence.append(f"torch_npu {tnpu.get('version')} is installed")
    if toolkits:
        evidence.append(f"CANN {toolkits[0].get('version')} at {toolkits[0].get('path')}")
    hdk = _paired_hdk(ctx)
    if hdk:
        evidence.append(
            f"matrix: the CANN {(cann.get('selected') or {}).get('version')} in use is paired with Ascend HDK {hdk}"
        )
    if _in_container(ctx):
        yield NO_DRIVER.finding(
            title="The host's NPU driver is not mounted into this container",
            evidence=evidence,
            fix=[
                DockerFlags(
                    mounts=("/usr/local/Ascend/driver", "/etc/ascend_install.info"),
                    lead="Recreate the container with these docker run flags added: ",
                ),
            ],
            severity="error" if tnpu is not None else "warning",
        )
        return
    fix: List[Any] = [
        _driver(ctx, hdk, unknown="the Ascend HDK paired with your CANN (`npudoctor matrix` shows it)"),
        _firmware(ctx, hdk),
        Reboot(),
    ]
    note = _move_note(ctx, None)
    if note:
        fix.append(note)
    yield NO_DRIVER.finding(
        title="No NPU driver installed (/usr/local/Ascend/driver/version.info not found)",
        evidence=evidence,
        fix=fix,
        severity="error" if tnpu is not None else "warning",
    )


@rule
def driver_cann(ctx: Any) -> Iterable[Finding]:
    """DRV002: driver vs the selected CANN via matrix.driver_fit (K14)."""
    tk = ctx.facts("cann").get("selected")
    version, source = driver_version(ctx)
    matrix = ctx.matrix
    if not tk or not tk.get("version") or not version or matrix is None:
        return
    cann = str(tk["version"])
    try:
        fit = str(matrix.driver_fit(cann, version))
    except Exception:
        fit = "unknown"
    if fit in ("paired", "compatible"):
        return
    req = None
    try:
        req = matrix.driver_requirement(cann)
    except Exception:
        req = None
    evidence = [f"driver {version} from {source}", f"CANN {cann} at {tk.get('path')} (from {tk.get('source')})"]
    if req is not None:
        paired = [str(p) for p in getattr(req, "paired", []) or []]
        compat = [str(p) for p in getattr(req, "compatible", []) or []]
        line = f"matrix: CANN {cann} is paired with HDK {', '.join(paired) or '?'}"
        if compat:
            line += f"; works with {', '.join(compat)}"
        if getattr(req, "minimum", None):
            line += f"; minimum {req.minimum}"
        evidence.append(line + f" ({getattr(req, 'source', 'matrix')})")
    where = "the host's" if _in_container(ctx) else "this machine's"
    if fit == "unknown":
        yield DRIVER_CANN.finding(
            title=f"Driver {version} with CANN {cann}: not in the matrix, pairing unknown",
            evidence=evidence,
            fix=[not_in_matrix_line(f"the driver pairing of CANN {cann}")],
            severity="warning",
        )
        return
    target = None
    if req is not None:
        target = (getattr(req, "paired", None) or [None])[0] or getattr(req, "minimum", None)
    fix: List[Any] = []
    if target:
        fix += [
            _driver(ctx, str(target), lead=f"upgrade {where} driver: "),
            _firmware(ctx, str(target), lead="then ", note="then reboot"),
        ]
    note = _move_note(ctx, version)
    if note and note.startswith("or install"):
        fix.append(note)
    else:
        if _in_container(ctx):
            fix.append("or use an image built on an older CANN that the host driver supports")
        else:
            fix.append("or install a CANN version that this driver supports (`npudoctor matrix`)")
        if note:
            fix.append(note)
    too_old = fit == "too-old"
    yield DRIVER_CANN.finding(
        title=(
            f"Driver {version} is too old for CANN {cann}"
            if too_old
            else f"Driver {version} is not supported by CANN {cann}"
        )
        + (f" (needs Ascend HDK {target})" if target else "")
        + (" — container CANN vs host driver" if _in_container(ctx) else ""),
        evidence=evidence,
        fix=fix,
        severity="error" if too_old else "warning",
        data={"driver": version, "cann": cann, "fit": fit},
    )


@rule
def firmware_driver(ctx: Any) -> Iterable[Finding]:
    """DRV003: the firmware's compatible_version_drv (and the driver's compatible_version_fw)."""
    facts = ctx.facts("driver")
    drv: Dict[str, Any] = facts.get("driver") or {}
    fw: Dict[str, Any] = facts.get("firmware") or {}
    dver = drv.get("version")
    fver = fw.get("version")
    if not dver or not fver:
        return
    fw_ranges = [tuple(r) for r in fw.get("compatible_version_drv") or [] if len(r) == 2]
    drv_ranges = [tuple(r) for r in drv.get("compatible_version_fw") or [] if len(r) == 2]
    fw_says = ranges_contain(fw_ranges, dver) if fw_ranges else None
    evidence = [
        f"driver {dver} from {drv.get('source')}",
        f"firmware {fver} (HDK {fw.get('package_version')}) from {fw.get('source')}",
    ]
    if fw_ranges:
        evidence.append("firmware accepts drivers " + format_ranges(fw_ranges))
    if fw_says is True:
        return
    if fw_says is None:
        # the firmware names no drivers (or undecidable): fall back to the driver's statement
        drv_says = ranges_contain(drv_ranges, fver) if drv_ranges else None
        if drv_says is not False:
            return
        evidence.append("driver accepts firmware " + format_ranges(drv_ranges))
    yield FIRMWARE_DRIVER.finding(
        title=f"Firmware {fver} does not list driver {dver} as compatible",
        evidence=evidence,
        fix=[
            _firmware(ctx, str(dver)),
            Reboot(),
            Command(("npu-smi", "info", "-t", "board", "-i", "0"), note="Compatibility should say OK"),
        ],
    )


@rule
def driver_unreadable(ctx: Any) -> Iterable[Finding]:
    """DRV004: version files present but unreadable/garbled."""
    facts = ctx.facts("driver")
    for kind in ("driver", "firmware"):
        rec = facts.get(kind) or {}
        if rec.get("error"):
            yield DRIVER_UNREADABLE.finding(
                title=f"The {kind} version cannot be read: {rec['error']}",
                evidence=[str(rec["error"])],
                fix=[Command(("ls", "-l", f"{rec.get('path')}/version.info"))],
                subject=kind,
            )
    info = facts.get("install_info") or {}
    if info.get("error"):
        yield DRIVER_UNREADABLE.finding(
            title=f"/etc/ascend_install.info cannot be read: {info['error']}",
            evidence=[
                f"{info.get('path')}: {info['error']}",
                "CANN 9.x set_env.sh greps Driver_Install_Path_Param from it",
            ],
            fix=[Command(("ls", "-l", "/etc/ascend_install.info"))],
            subject="install_info",
        )
