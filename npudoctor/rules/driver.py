"""Rules about the NPU driver and firmware (kind K14), from the ``driver`` facts
(``npudoctor/probes/driver.py``), the selected CANN toolkit (``cann.selected``), the
npu-smi header (``devices.npu_smi.driver_version``) and ``container.in_container``.

Codes ``DRV001``-``DRV004``.  Driver/firmware package names follow REPORT.md §5:
``Ascend-hdk-<chip>-npu-driver_<ver>_linux-<aarch64|x86-64>.run`` and
``Ascend-hdk-<chip>-npu-firmware_<fw>.run``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, List, Optional, Tuple

from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.knowledge.packages import firmware_for_driver
from npudoctor.parsers.info_files import format_ranges, ranges_contain
from npudoctor.plan.fit import driver_fit, hdk_for
from npudoctor.remedies import Command, DockerFlags, InstallPackage, Reboot
from npudoctor.rules import rule
from npudoctor.rules._cannfacts import (
    cann_plan,
    driver_version,
    host_arch,
    not_in_matrix_line,
    package_chip,
    torch_npu_record,
)
from npudoctor.rules._cannsteps import Step

if TYPE_CHECKING:
    from npudoctor.engine import RuleContext

NO_DRIVER = codes.get("DRV001")

DRIVER_CANN = codes.get("DRV002")

FIRMWARE_DRIVER = codes.get("DRV003")

DRIVER_UNREADABLE = codes.get("DRV004")


def _in_container(ctx: RuleContext) -> bool:
    return ctx.view.container.in_container


def _hdk_chip(ctx: RuleContext) -> Optional[str]:
    """The chip part of the HDK package names (``910b``, ``310p``, ``910``) for this
    machine's NPUs (devices facts + matrix, see :func:`package_chip`), or ``None``."""
    chip = package_chip(ctx)
    return chip.lower() if chip else None


def _firmware(ctx: RuleContext, hdk: Optional[str], lead: str = "", note: str = "") -> InstallPackage:
    """The firmware step of Ascend HDK ``hdk`` (file ``Ascend-hdk-<chip>-npu-firmware_<fw>.run``,
    REPORT.md §5): its build number is published for a few drivers only
    (knowledge/packages.py), else the step is prose naming the HDK."""
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


def _driver(ctx: RuleContext, version: Optional[str], lead: str = "", unknown: str = "") -> InstallPackage:
    """The driver step of HDK ``version`` (``Ascend-hdk-<chip>-npu-driver_<ver>_linux-<arch>.run``)."""
    return InstallPackage(
        "driver",
        version.lower() if version else None,
        arch=host_arch(ctx),
        chip=_hdk_chip(ctx),
        unknown=unknown,
        lead=lead,
    )


def _move_note(ctx: RuleContext, driver: Optional[str]) -> Optional[str]:
    """The driver-side view of CANN003's option B (move to the CANN torch_npu is paired
    with), so DRV001/DRV002 and CANN003 say the same thing; ``None`` without a mismatch."""
    plan = cann_plan(ctx)
    if plan is None or not plan.move_to:
        return None
    move = plan.move_to
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


def _paired_hdk(ctx: RuleContext) -> Optional[str]:
    """The HDK version the matrix pairs with the selected CANN (for fix-its), or ``None``."""
    tk = ctx.view.cann.selected
    if tk is None or not tk.version:
        return None
    return hdk_for(ctx.matrix, tk.version)


@rule
def driver_missing(ctx: RuleContext) -> Iterable[Finding]:
    """DRV001: CANN or torch_npu present but no driver (host: not installed; container: not mounted)."""
    if ctx.view.state("driver") == "absent":
        return
    drv = ctx.view.driver.driver
    version, _src = driver_version(ctx)
    if drv.exists or version:
        return
    cann = ctx.view.cann
    tnpu = torch_npu_record(ctx)
    toolkits = cann.toolkits
    if not toolkits and tnpu is None:
        return  # nothing that needs a driver (no stack: HOST050; CANN001 covers the rest)
    evidence = [f"{drv.path or '/usr/local/Ascend/driver'}/version.info: not found"]
    if tnpu is not None:
        evidence.append(f"torch_npu {tnpu.version} is installed")
    if toolkits:
        evidence.append(f"CANN {toolkits[0].version} at {toolkits[0].path}")
    hdk = _paired_hdk(ctx)
    if hdk:
        selected = cann.selected.version if cann.selected is not None else None
        evidence.append(f"matrix: the CANN {selected} in use is paired with Ascend HDK {hdk}")
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
    fix: List[Step] = [
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
def driver_cann(ctx: RuleContext) -> Iterable[Finding]:
    """DRV002: driver vs the selected CANN via matrix.driver_fit (K14)."""
    tk = ctx.view.cann.selected
    version, source = driver_version(ctx)
    matrix = ctx.matrix
    if tk is None or not tk.version or not version or matrix is None:
        return
    cann = tk.version
    try:
        fit = matrix.driver_fit(cann, version)
    except Exception:
        fit = "unknown"
    if fit in ("paired", "compatible"):
        return
    try:
        req = matrix.driver_requirement(cann)
    except Exception:  # an unorderable version the matrix cannot place
        req = None
    evidence = [f"driver {version} from {source}", f"CANN {cann} at {tk.path} (from {tk.source})"]
    if req is not None:
        line = f"matrix: CANN {cann} is paired with HDK {', '.join(req.paired) or '?'}"
        if req.compatible:
            line += f"; works with {', '.join(req.compatible)}"
        if req.minimum:
            line += f"; minimum {req.minimum}"
        evidence.append(line + f" ({req.source})")
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
        target = (req.paired[0] if req.paired else None) or req.minimum
    fix: List[Step] = []
    if target:
        fix += [
            _driver(ctx, target, lead=f"upgrade {where} driver: "),
            _firmware(ctx, target, lead="then ", note="then reboot"),
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
def firmware_driver(ctx: RuleContext) -> Iterable[Finding]:
    """DRV003: the firmware's compatible_version_drv (and the driver's compatible_version_fw)."""
    drv = ctx.view.driver.driver
    fw = ctx.view.driver.firmware
    dver = drv.version
    fver = fw.version
    if not dver or not fver:
        return
    fw_ranges: List[Tuple[str, str]] = [(r[0], r[1]) for r in fw.compatible_version_drv if len(r) == 2]
    drv_ranges: List[Tuple[str, str]] = [(r[0], r[1]) for r in drv.compatible_version_fw if len(r) == 2]
    fw_says = ranges_contain(fw_ranges, dver) if fw_ranges else None
    evidence = [
        f"driver {dver} from {drv.source}",
        f"firmware {fver} (HDK {fw.package_version}) from {fw.source}",
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
            _firmware(ctx, dver),
            Reboot(),
            Command(("npu-smi", "info", "-t", "board", "-i", "0"), note="Compatibility should say OK"),
        ],
    )


@rule
def driver_unreadable(ctx: RuleContext) -> Iterable[Finding]:
    """DRV004: version files present but unreadable/garbled."""
    facts = ctx.view.driver
    for kind, rec in (("driver", facts.driver), ("firmware", facts.firmware)):
        if rec.error:
            yield DRIVER_UNREADABLE.finding(
                title=f"The {kind} version cannot be read: {rec.error}",
                evidence=[rec.error],
                fix=[Command(("ls", "-l", f"{rec.path}/version.info"))],
                subject=kind,
            )
    info = facts.install_info
    if info is not None and info.error:
        yield DRIVER_UNREADABLE.finding(
            title=f"/etc/ascend_install.info cannot be read: {info.error}",
            evidence=[
                f"{info.path}: {info.error}",
                "CANN 9.x set_env.sh greps Driver_Install_Path_Param from it",
            ],
            fix=[Command(("ls", "-l", "/etc/ascend_install.info"))],
            subject="install_info",
        )
