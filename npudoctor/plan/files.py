"""Download locations of the CANN, driver and firmware packages, and the
:class:`PackageFile` entries of a plan.

The file names themselves come from the one list in :mod:`npudoctor.knowledge.packages`
(the rules' fix lines use the same one).  URL layout (Ascend's download host, as the
official CANN container images and ``Ascend/docs`` name it):
``https://ascend-repo.obs.cn-east-2.myhuaweicloud.com/CANN/CANN%20{ver}/{file}`` and
``…/Ascend%20HDK/Ascend%20HDK%20{HDK}/{file}``; the official image builds send
``Referer: https://www.hiascend.com/``.  Install order: driver,
firmware, toolkit, ``source set_env.sh``, kernels/ops, NNAL
(:mod:`npudoctor.remedies.cann` gives the sources).
"""

from __future__ import annotations

from typing import Dict, List, Optional

from npudoctor.knowledge import packages as names
from npudoctor.knowledge.packages import FIRMWARE_FOR_DRIVER, INSTALL_ORDER
from npudoctor.knowledge.versions import CannVersion, parse_cann, parse_driver
from npudoctor.record import MutableRecord, asdict

__all__ = [
    "FIRMWARE_FOR_DRIVER",
    "INSTALL_ORDER",
    "PackageFile",
    "cann_packages",
    "driver_packages",
]

OBS = "https://ascend-repo.obs.cn-east-2.myhuaweicloud.com"
DOWNLOAD_PAGE = "https://www.hiascend.com/developer/download/community/result?module=cann"
HDK_PAGE = "https://www.hiascend.com/hardware/firmware-drivers/community"


class PackageFile(MutableRecord):
    """One ``.run`` package of the plan."""

    kind: str  # driver | firmware | toolkit | kernels | ops | nnal
    filename: str
    url: Optional[str]
    version: str
    why: str
    verified_name: bool = True  # False when the file-name pattern is not confirmed for this chip
    install_args: str = ""

    def to_dict(self) -> Dict[str, object]:
        return asdict(self)


def _cann_dir(version: str) -> str:
    return f"{OBS}/CANN/CANN%20{version}"


def hdk_name(driver: str) -> str:
    """HDK bundle name of a driver version: ``24.1.rc2`` → ``24.1.RC2``."""
    return "".join(p.upper() if p.lower().startswith("rc") else p for p in _split_keep(driver))


def _split_keep(text: str) -> List[str]:
    out, cur = [], ""
    for ch in text:
        if ch == ".":
            out += [cur, "."]
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out


def cann_packages(cann: str, arch: str, chip: Optional[str], with_nnal: bool = True) -> List[PackageFile]:
    """The CANN packages for ``cann`` on ``arch`` for package chip type ``chip``
    (``"910b"``, ``"A3"``, ``"310p"``...; ``None`` = unknown → the kernels/ops entry names
    its chip ``<chip>``: a package the bundle lacks until it is given, never left out).

    Raises ``ValueError`` when ``cann`` is not a CANN version."""
    ver = CannVersion(cann)
    if not ver.orderable:
        raise ValueError(f"CANN {cann} is an internal build; its packages have no public file names")
    toolkit = names.toolkit_file(cann, arch).filename
    out = [
        PackageFile(
            "toolkit",
            toolkit,
            f"{_cann_dir(cann)}/{toolkit}",
            cann,
            f"CANN {cann} toolkit (runtime, compiler, HCCL) for {arch}",
            install_args="--install --install-for-all --quiet",
        )
    ]
    if chip:
        pkg = names.kernels_file(cann, chip, arch)
        why = (
            f"operator package for {chip} chips (CANN 8.5.0+ replaces kernels with ops)"
            if pkg.kind == "ops"
            else f"binary operator kernels for {chip} chips"
        )
        out.append(
            PackageFile(
                pkg.kind,
                pkg.filename,
                f"{_cann_dir(cann)}/{pkg.filename}",
                cann,
                why,
                verified_name=pkg.verified,
                install_args="--install --quiet",
            )
        )
    else:
        pkg = names.kernels_unknown_chip(cann, arch)
        out.append(
            PackageFile(
                pkg.kind,
                pkg.filename,
                DOWNLOAD_PAGE,
                cann,
                f"the {pkg.kind} package of the site's NPU chip: chip-specific, and the site snapshot names no chip",
                verified_name=False,
                install_args="--install --quiet",
            )
        )
    if with_nnal:
        name = names.nnal_file(cann, arch).filename
        out.append(
            PackageFile(
                "nnal",
                name,
                f"{_cann_dir(cann)}/{name}",
                cann,
                "NNAL (ATB/SiP acceleration libraries used by torch_npu's fused operators)",
                install_args="--install --quiet",
            )
        )
    return out


def driver_packages(driver: str, arch: str, chip: Optional[str]) -> List[PackageFile]:
    """Driver (and, when its build number is known, firmware) packages of HDK ``driver``
    for ``chip``.  ``driver`` is an HDK/driver version (``"25.5.0"``, ``"24.1.RC2"``)."""
    if not chip:
        return []
    drv = parse_driver(driver)
    text = drv.release if drv is not None and drv.orderable else driver.lower()
    hdk = hdk_name(text)
    drv_name = names.driver_file(text, chip, arch)
    name = drv_name.filename
    verified = drv_name.verified
    out = [
        PackageFile(
            "driver",
            name,
            f"{OBS}/Ascend%20HDK/Ascend%20HDK%20{hdk}/{name}",
            text,
            f"NPU driver {text} (Ascend HDK {hdk}) for {chip} chips",
            verified_name=verified,
            install_args="--full --install-for-all --quiet",
        )
    ]
    fw = names.firmware_for_driver(text)
    if fw:
        fname = names.firmware_file(fw, chip).filename
        out.append(
            PackageFile(
                "firmware",
                fname,
                f"{OBS}/Ascend%20HDK/Ascend%20HDK%20{hdk}/{fname}",
                fw,
                f"NPU firmware {fw}, shipped with driver {text} (Ascend/docs package_info.js)",
                verified_name=verified,
                install_args="--full --quiet",
            )
        )
    else:
        out.append(
            PackageFile(
                "firmware",
                f"Ascend-hdk-{chip}-npu-firmware_<version>.run",
                HDK_PAGE,
                "unknown",
                f"NPU firmware of Ascend HDK {hdk}: its build number is not published with the driver; "
                f"pick it on {HDK_PAGE}",
                verified_name=False,
                install_args="--full --quiet",
            )
        )
    return out


def is_cann_at_least(cann: str, floor: str) -> Optional[bool]:
    """``cann >= floor`` or ``None`` when unorderable."""
    v = parse_cann(cann)
    if v is None:
        return None
    c = v.compare(floor)
    return None if c is None else c >= 0
