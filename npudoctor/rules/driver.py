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
from npudoctor.rules import rule
from npudoctor.rules.cann import cann_plan, host_arch, not_in_matrix_line, package_chip, torch_npu_record

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


def _hdk_chip(ctx: Any) -> str:
    """The chip part of the HDK package names (``910b``, ``310p``, ``910``) for this
    machine's NPUs (devices facts + matrix, see :func:`package_chip`), else a placeholder."""
    chip = package_chip(ctx)
    return chip.lower() if chip else "<chip: 910b|310p|910>"


def _firmware_cmd(ctx: Any, what: str) -> str:
    """``chmod +x <firmware .run> && ./<firmware .run> --full`` for the HDK ``what``
    (file name: ``Ascend-hdk-<chip>-npu-firmware_<fw>.run``, REPORT.md §5)."""
    file = f"Ascend-hdk-{_hdk_chip(ctx)}-npu-firmware_<{what}>.run"
    return f"chmod +x {file} && ./{file} --full"


def _move_note(ctx: Any, driver: Optional[str]) -> Optional[str]:
    """The driver-side view of CANN003's option B (move to the CANN torch_npu is paired
    with), so DRV001/DRV002 and CANN003 say the same thing; ``None`` without a mismatch."""
    plan = cann_plan(ctx)
    if not plan or not plan.get("move_to"):
        return None
    move = str(plan["move_to"])
    matrix = ctx.matrix
    fit = None
    if driver and matrix is not None:
        try:
            fit = str(matrix.driver_fit(move, driver))
        except Exception:
            fit = None
    if fit in ("paired", "compatible"):
        return (
            f"or install CANN {move}, the one torch_npu {plan['torch_npu']} is paired with "
            f"(CANN003 option B): driver {driver} supports it"
        )
    hdk = _hdk_of(ctx, move)
    if not hdk:
        return None
    return (
        f"the HDK above is for the CANN {plan['cann']} in use (CANN003 option A); if you move to "
        f"CANN {move} for torch_npu {plan['torch_npu']} (CANN003 option B), install Ascend HDK {hdk} instead"
    )


def _driver_file(ctx: Any, version: str) -> str:
    arch = host_arch(ctx)
    arch_part = {"x86_64": "x86-64", "aarch64": "aarch64"}.get(arch or "", "$(uname -m | sed s/_/-/)")
    version = version if version.startswith("<") else version.lower()
    return f"Ascend-hdk-{_hdk_chip(ctx)}-npu-driver_{version}_linux-{arch_part}.run"


def _paired_hdk(ctx: Any) -> Optional[str]:
    """The HDK version the matrix pairs with the selected CANN (for fix-its), or ``None``."""
    tk = ctx.facts("cann").get("selected") or {}
    if not tk.get("version"):
        return None
    return _hdk_of(ctx, str(tk["version"]))


def _hdk_of(ctx: Any, cann: str) -> Optional[str]:
    """The HDK version the matrix pairs with ``cann`` (else its minimum), or ``None``."""
    matrix = ctx.matrix
    if matrix is None:
        return None
    try:
        req = matrix.driver_requirement(cann)
    except Exception:
        return None
    paired = list(getattr(req, "paired", None) or []) if req is not None else []
    return (
        str(paired[0]) if paired else (str(req.minimum) if req is not None and getattr(req, "minimum", None) else None)
    )


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
    file = _driver_file(ctx, hdk or "<HDK version paired with your CANN>")
    if hdk:
        evidence.append(
            f"matrix: the CANN {(cann.get('selected') or {}).get('version')} in use is paired with Ascend HDK {hdk}"
        )
    if _in_container(ctx):
        yield NO_DRIVER.finding(
            title="The host's NPU driver is not mounted into this container",
            evidence=evidence,
            fix=[
                "docker run … -v /usr/local/Ascend/driver:/usr/local/Ascend/driver "
                "-v /etc/ascend_install.info:/etc/ascend_install.info …",
            ],
            severity="error" if tnpu is not None else "warning",
        )
        return
    fix = [
        f"chmod +x {file} && ./{file} --full",
        _firmware_cmd(ctx, f"firmware of Ascend HDK {hdk}" if hdk else "firmware of the same HDK"),
        "reboot",
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
    fix: List[str] = []
    if target:
        file = _driver_file(ctx, str(target))
        fix += [
            f"upgrade {where} driver: chmod +x {file} && ./{file} --full",
            f"then the firmware of Ascend HDK {target}: {_firmware_cmd(ctx, 'fw')}; reboot",
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
            _firmware_cmd(ctx, f"firmware of Ascend HDK {dver}"),
            "reboot",
            "npu-smi info -t board -i 0   # Compatibility should say OK",
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
                fix=[f"ls -l {rec.get('path')}/version.info"],
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
            fix=["ls -l /etc/ascend_install.info"],
            subject="install_info",
        )
