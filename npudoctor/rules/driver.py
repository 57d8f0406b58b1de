"""Rules about the NPU driver and firmware (kind K14), from the ``driver`` facts
(``npudoctor/probes/driver.py``), the selected CANN toolkit (``cann.selected``), the
npu-smi header (``devices.npu_smi.driver_version``) and ``container.in_container``.

Codes ``DRV001``-``DRV004``.  Driver/firmware package names follow the official offline packages:
``Ascend-hdk-<chip>-npu-driver_<ver>_linux-<aarch64|x86-64>.run`` and
``Ascend-hdk-<chip>-npu-firmware_<fw>.run``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npudoctor import lazyre
from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.knowledge.chips import chip_identity, matrix_chip, package_chip
from npudoctor.knowledge.grades import Grade, severity
from npudoctor.knowledge.matrix.hdk import DriverVerdict, Packages, driver_firmware
from npudoctor.knowledge.packages import firmware_for_driver
from npudoctor.parsers.info_files import format_ranges
from npudoctor.remedies import Command, InstallPackage, Reboot
from npudoctor.remedies.cann import Step
from npudoctor.remedies.world import host_mounts_fix
from npudoctor.rules import rule
from npudoctor.rules._cannfacts import cann_pairing, cann_plan, driver_version, host_arch, not_in_matrix_line
from npudoctor.rules._pyfacts import marker_env
from npudoctor.rules._required import pinned_elsewhere

if TYPE_CHECKING:
    from typing import Dict, Iterable, List, Optional, Set, Tuple

    from npudoctor.context import RuleContext

READS = ("cann", "container", "devices", "driver", "host", "packages", "python")

NO_DRIVER = codes.get("DRV001")

DRIVER_CANN = codes.get("DRV002")

FIRMWARE_DRIVER = codes.get("DRV003")

DRIVER_UNREADABLE = codes.get("DRV004")


def _hdk_chip(ctx: RuleContext) -> Optional[str]:
    """The chip part of the HDK package names (``910b``, ``310p``, ``910``) for this
    machine's NPUs (devices facts + matrix, see :func:`package_chip`), or ``None``."""
    chip = package_chip(ctx.matrix, ctx.view.devices)
    return chip.lower() if chip else None


def _firmware(ctx: RuleContext, hdk: Optional[str], lead: str = "", note: str = "") -> InstallPackage:
    """The firmware step of Ascend HDK ``hdk`` (file ``Ascend-hdk-<chip>-npu-firmware_<fw>.run``,
    as Ascend publishes it): its build number is published for a few drivers only
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
        arch=host_arch(ctx.view.host, ctx.view.packages),
        chip=_hdk_chip(ctx),
        unknown=unknown,
        lead=lead,
    )


def _move_note(ctx: RuleContext, driver: Optional[str]) -> Optional[str]:
    """The driver-side view of CANN003's option B (move to the CANN torch_npu is paired
    with), so DRV001/DRV002 and CANN003 say the same thing; ``None`` without a mismatch."""
    plan = cann_plan(ctx.matrix, ctx.view.cann, ctx.view.packages, ctx.view.python, ctx.view.host)
    if plan is None or not plan.move_to:
        return None
    from npudoctor.plan.fit import driver_fit, hdk_for  # here: only with a mismatch planned

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
    from npudoctor.plan.fit import hdk_for

    return hdk_for(ctx.matrix, tk.version)


#: A version in a window's words ("Ascend HDK 25.5.X, 25.3.X; paired 25.5.0").
_VERSION = lazyre.pattern(r"\d+\.\d+\.[0-9A-Za-z.]*[0-9A-Za-z]")


def _versions(window: str) -> Set[str]:
    """The versions a documented window names."""
    return set(_VERSION.findall(window))


@rule
def driver_missing(ctx: RuleContext) -> Iterable[Finding]:
    """DRV001: CANN or torch_npu present but no driver (host: not installed; container: not mounted)."""
    if ctx.view.state("driver") == "absent":
        return
    drv = ctx.view.driver.driver
    version, _src = driver_version(ctx.view.driver, ctx.view.devices)
    if drv.exists or version:
        return
    cann = ctx.view.cann
    tnpu = ctx.view.packages.torch_npu
    toolkits = cann.toolkits
    if not toolkits and tnpu is None:
        return  # nothing that needs a driver (no stack: HOST050; CANN001 covers the rest)
    evidence = [f"{drv.path or '/usr/local/Ascend/driver'}/version.info: not found"]
    if tnpu is not None:
        evidence.append(f"torch_npu {tnpu.version} is installed")
    if toolkits:
        evidence.append(f"CANN {toolkits[0].version} at {toolkits[0].path}")
    hdk = _paired_hdk(ctx)
    unknown = "the Ascend HDK your CANN's release notes pair with it"
    if hdk:
        selected = cann.selected.version if cann.selected is not None else None
        evidence.append(f"matrix: the CANN {selected} in use is paired with Ascend HDK {hdk}")
    elif not toolkits and tnpu is not None and ctx.matrix is not None:
        # no CANN yet: the one CANN001 installs decides the HDK (the pairing of the torch_npu
        # build a framework pins, which its fix installs, else of the installed one)
        pin = pinned_elsewhere(ctx.view.packages, tnpu.version or "", marker_env(ctx.view.python, ctx.view.host))
        row, _nearest = cann_pairing(ctx.matrix, pin[1] if pin is not None else tnpu.version or "")
        if row is not None:
            from npudoctor.plan.fit import hdk_for

            hdk = hdk_for(ctx.matrix, row.cann[0])
            unknown = f"the Ascend HDK that CANN {row.cann[0]}'s release notes pair with it"
            if hdk:
                evidence.append(
                    f"matrix: CANN {row.cann[0]}, the one torch_npu {row.torch_npu} is paired with "
                    f"(CANN001 installs it), is paired with Ascend HDK {hdk}"
                )
    if ctx.view.container.in_container:
        yield NO_DRIVER.finding(
            title="The host's NPU driver is not mounted into this container",
            evidence=evidence,
            fix=list(
                host_mounts_fix(
                    ctx.view.container.runs_in,
                    ("/usr/local/Ascend/driver", "/etc/ascend_install.info"),
                    lead="Recreate the container with these docker run flags added: ",
                )
            ),
            severity="error" if tnpu is not None else "warning",
        )
        return
    fix: List[Step] = [
        _driver(ctx, hdk, unknown=unknown),
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


def _machine_chip(ctx: RuleContext) -> Tuple[Optional[str], Optional[str]]:
    """``(family, chip name)`` of this machine's first NPU chip npu-smi names, the family from
    :func:`npudoctor.knowledge.chips.chip_identity` (``None`` when unknown), the name as the
    matrix spells it (``"Ascend 910B4"`` → ``"910B4"``) for the documented floors."""
    for chip in ctx.view.devices.named_chips:
        family = chip_identity(ctx.matrix, chip).get("family")
        known = matrix_chip(ctx.matrix, str(chip.name))
        return (str(family) if family else None), (known.name if known is not None else str(chip.name))
    return None, None


def driver_verdict(ctx: RuleContext, cann: str, driver: str) -> Optional[DriverVerdict]:
    """The graded CANN ↔ driver verdict for this machine: the toolkit's and the driver's own
    declarations (``ascend_toolkit_install.info`` / ``version.info``), the chip family of the
    npu-smi chips, and the matrix; ``None`` without a matrix."""
    if ctx.matrix is None:
        return None
    tk = ctx.view.cann.selected
    drv = ctx.view.driver.driver
    packages = Packages(
        toolkit_inner=tk.inner_version if tk is not None else None,
        toolkit_accepts=tuple(tk.compatible_version) if tk is not None else (),
        driver_inner=drv.innerversion if drv.version == driver else None,
        driver_accepts=tuple(drv.compatible_version) if drv.version == driver else (),
    )
    family, chip = _machine_chip(ctx)
    return ctx.matrix.driver_verdict(cann, driver, packages, family=family, chip=chip)


@rule
def driver_cann(ctx: RuleContext) -> Iterable[Finding]:
    """DRV002: the driver with the selected CANN, graded by evidence (knowledge/matrix/hdk.py,
    AUDIT §1 and §7): severity from ``grades.severity``; in a container the host driver ↔
    image CANN relation is always reported."""
    tk = ctx.view.cann.selected
    version, source = driver_version(ctx.view.driver, ctx.view.devices)
    if tk is None or not tk.version or not version:
        return
    cann = tk.version
    judged = driver_verdict(ctx, cann, version)
    if judged is None:
        return
    container = ctx.view.container.in_container
    sev = judged.severity(always_report=container)
    if sev is None:
        return
    v = judged.verdict
    req = ctx.matrix.driver_requirement(cann) if ctx.matrix is not None else None
    evidence = [f"driver {version} from {source}", f"CANN {cann} at {tk.path} (from {tk.source})"]
    if req is not None:
        line = f"matrix: CANN {req.cann} is paired with HDK {', '.join(req.paired) or '?'}"
        if req.compatible:
            line += f"; works with {', '.join(req.compatible)}"
        evidence.append(line)
    # the verdict and its source are the title's (v.describe()): said once, not again here;
    # so is the window when the matrix line above names every HDK of it
    if v.window and not (req is not None and _versions(v.window) <= set(req.paired) | set(req.compatible)):
        evidence.append(f"documented to work: {v.window}")
    data: Dict[str, object] = {"driver": version, "cann": cann, "grade": v.grade.value, "source": v.source}
    where = "the host's" if container else "this machine's"
    pair = f"Driver {version} with CANN {cann}" + (" (host driver, image CANN)" if container else "")
    if v.grade.works:
        # a pair its own packages declare compatible, on a stack that works: nothing to decide
        data["routine"] = sev == "info" and v.grade is Grade.DECLARED
        yield DRIVER_CANN.finding(title=f"{pair}: {v.describe()}", evidence=evidence, severity=sev, data=data)
        return
    target = _paired_hdk(ctx)
    fix: List[Step] = []
    if target and v.newer is not True:
        fix += [
            _driver(ctx, target, lead=f"upgrade {where} driver: "),
            _firmware(ctx, target, lead="then ", note="then reboot"),
        ]
    note = _move_note(ctx, version)
    if note and note.startswith("or install"):
        fix.append(note)
    elif v.grade is Grade.INCOMPATIBLE:
        if container:
            fix.append("or use an image built on an older CANN that the host driver supports")
        else:
            fix.append("or install a CANN version that this driver supports (the driver's release notes list them)")
        if note:
            fix.append(note)
    if v.grade is Grade.UNDOCUMENTED and req is None:
        fix.append(not_in_matrix_line(f"the driver pairing of CANN {cann}"))
    if v.grade is Grade.INCOMPATIBLE:
        title = f"Driver {version} does not work with CANN {cann}: {v.describe()}"
        if target:
            title += f" (paired: Ascend HDK {target})"
    else:
        title = f"{pair}: {v.describe()}"
    yield DRIVER_CANN.finding(
        title=title + (" — container CANN vs host driver" if container and v.grade is Grade.INCOMPATIBLE else ""),
        evidence=evidence,
        fix=fix,
        severity=sev,
        data=data,
    )


@rule
def firmware_driver(ctx: RuleContext) -> Iterable[Finding]:
    """DRV003: driver ↔ firmware from their version.info files, graded (the driver's
    compatible_version_fw first, then the firmware's compatible_version_drv)."""
    drv = ctx.view.driver.driver
    fw = ctx.view.driver.firmware
    dver = drv.version
    fver = fw.version
    if not dver or not fver:
        return
    fw_ranges: List[Tuple[str, str]] = [(r[0], r[1]) for r in fw.compatible_version_drv if len(r) == 2]
    drv_ranges: List[Tuple[str, str]] = [(r[0], r[1]) for r in drv.compatible_version_fw if len(r) == 2]
    v = driver_firmware(dver, drv.package_version, fver, fw.package_version, drv_ranges, fw_ranges)
    if v is None:
        return
    sev = severity(v)
    if sev is None:
        return
    evidence = [
        f"driver {dver} from {drv.source}",
        f"firmware {fver} (HDK {fw.package_version}) from {fw.source}",
    ]
    if drv_ranges:
        evidence.append("driver accepts firmware " + format_ranges(drv_ranges))
    if fw_ranges:
        evidence.append("firmware accepts drivers " + format_ranges(fw_ranges))
    # the verdict and its source are the title's (v.describe()): said once, not again here
    if v.window:
        evidence.append(f"documented to work: {v.window}")
    yield FIRMWARE_DRIVER.finding(
        title=f"Firmware {fver} and driver {dver}: {v.describe()}",
        evidence=evidence,
        fix=[
            _firmware(ctx, dver),
            Reboot(),
            Command(("npu-smi", "info", "-t", "board", "-i", "0"), note="Compatibility should say OK"),
        ],
        severity=sev,
        data={"driver": dver, "firmware": fver, "grade": v.grade.value, "source": v.source},
    )


@rule
def driver_unreadable(ctx: RuleContext) -> Iterable[Finding]:
    """DRV004: version files unreadable, garbled, or (driver's) missing from its directory;
    a note only when npu-smi names the driver version instead."""
    facts = ctx.view.driver
    smi = ctx.view.devices.npu_smi.driver_version
    for kind, rec in (("driver", facts.driver), ("firmware", facts.firmware)):
        missing = f"{rec.path}/version.info: not found"
        if kind == "driver" and rec.error == missing and smi:
            # the file is absent, not garbled, and npu-smi names the version: the checks use it
            yield DRIVER_UNREADABLE.finding(
                title=f"{missing}; npu-smi reports driver {smi}, which the driver checks use",
                evidence=[missing, f"npu-smi info (table header): driver {smi}"],
                severity="info",
                subject=kind,
            )
        elif rec.error:
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
