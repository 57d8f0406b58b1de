"""Exact file names and download locations of the CANN, driver and firmware packages.

Source: ``../shared/matrix/REPORT.md`` §5 "Offline package file names" (Ascend/docs
``_static/package_info.js``, ``Ascend/cann-container-image`` Dockerfiles, hiascend
mindsdk/730 mxindexfrug_0009) and §3.3 (driver ↔ firmware builds of the community
install helper):

* toolkit  ``Ascend-cann-toolkit_{ver}_linux-{arch}.run`` (arch ``aarch64``/``x86_64``)
* kernels  ≤ 8.0.RC2 ``Ascend-cann-kernels-{chip}_{ver}_linux.run`` (no arch);
           8.0.RC3 – 8.3.x (and 8.5.0.alphaNNN) ``Ascend-cann-kernels-{chip}_{ver}_linux-{arch}.run``;
           A3 from 8.1.RC1 to 8.3.x ``Atlas-A3-cann-kernels_{ver}_linux-{arch}.run``
* ops      from 8.5.0 (replaces kernels) ``Ascend-cann-{chip}-ops_{ver}_linux-{arch}.run``,
           chip ∈ 910, 910b, A3, 310p, 950
* NNAL     ``Ascend-cann-nnal_{ver}_linux-{arch}.run``
* driver   ``Ascend-hdk-{chip}-npu-driver_{drv}_linux-{arch}.run``, arch ``aarch64``/``x86-64``
* firmware ``Ascend-hdk-{chip}-npu-firmware_{fw}.run`` (no arch; its own 5-part numbering)

URL layout: ``https://ascend-repo.obs.cn-east-2.myhuaweicloud.com/CANN/CANN%20{ver}/{file}``
and ``…/Ascend%20HDK/Ascend%20HDK%20{HDK}/{file}``; the official image builds send
``Referer: https://www.hiascend.com/``.  Install order of the official images: driver,
firmware, toolkit, kernels/ops, ``source set_env.sh``, NNAL.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Dict, List, Optional

from npudoctor.knowledge.versions import CannVersion, parse_cann, parse_driver

OBS = "https://ascend-repo.obs.cn-east-2.myhuaweicloud.com"
DOWNLOAD_PAGE = "https://www.hiascend.com/developer/download/community/result?module=cann"
HDK_PAGE = "https://www.hiascend.com/hardware/firmware-drivers/community"

#: chip family (Matrix.chip().family) → package chip type (REPORT.md §4.3).
FAMILY_PACKAGE_CHIP = {"910": "910", "910B": "910b", "910_93": "A3", "310P": "310p", "310B": "310b", "950": "950"}

#: driver → firmware build installed together by the Ascend community install helper
#: (REPORT.md §3.3, Ascend/docs _static/package_info.js).  Firmware numbers of newer HDKs
#: are not published in any source read (REPORT.md §9).
FIRMWARE_FOR_DRIVER = {
    "25.0.rc1.1": "7.7.0.1.231",
    "24.1.rc2": "7.3.0.1.231",
    "24.1.rc1": "7.1.0.6.220",
    "24.1.rc3": "7.5.0.1.129",
    "23.0.3": "7.1.0.5.220",
    "23.0.1": "7.1.0.4.220",
}

#: the order install.sh runs the packages in.
INSTALL_ORDER = ("driver", "firmware", "toolkit", "kernels", "ops", "nnal")


@dataclass
class PackageFile:
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


def package_chip(family: Optional[str], kernels_package_chip: Optional[str] = None) -> Optional[str]:
    """Package chip type for a family (``"910B"`` → ``"910b"``); ``kernels_package_chip``
    from the matrix wins when given."""
    if kernels_package_chip:
        return kernels_package_chip
    return FAMILY_PACKAGE_CHIP.get(family or "")


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
    (``"910b"``, ``"A3"``, ``"310p"``...; ``None`` = unknown → no kernels/ops entry).

    Raises ``ValueError`` when ``cann`` is not a CANN version."""
    ver = CannVersion(cann)
    if not ver.orderable:
        raise ValueError(f"CANN {cann} is an internal build; its packages have no public file names")
    out = [
        PackageFile(
            "toolkit",
            f"Ascend-cann-toolkit_{cann}_linux-{arch}.run",
            f"{_cann_dir(cann)}/Ascend-cann-toolkit_{cann}_linux-{arch}.run",
            cann,
            f"CANN {cann} toolkit (runtime, compiler, HCCL) for {arch}",
            install_args="--install --install-for-all --quiet",
        )
    ]
    if chip:
        alpha_85 = ver.base == "8.5" and "alpha" in cann.lower()
        if ver >= CannVersion("8.5.0-alpha.0") and not alpha_85:
            name = f"Ascend-cann-{chip}-ops_{cann}_linux-{arch}.run"
            out.append(
                PackageFile(
                    "ops",
                    name,
                    f"{_cann_dir(cann)}/{name}",
                    cann,
                    f"operator package for {chip} chips (CANN 8.5.0+ replaces kernels with ops)",
                    install_args="--install --quiet",
                )
            )
        else:
            verified = True
            if chip == "A3":
                name = f"Atlas-A3-cann-kernels_{cann}_linux-{arch}.run"
                verified = ver >= CannVersion("8.1.RC1")
            elif ver < CannVersion("8.0.RC3"):
                name = f"Ascend-cann-kernels-{chip}_{cann}_linux.run"
            else:
                name = f"Ascend-cann-kernels-{chip}_{cann}_linux-{arch}.run"
            out.append(
                PackageFile(
                    "kernels",
                    name,
                    f"{_cann_dir(cann)}/{name}",
                    cann,
                    f"binary operator kernels for {chip} chips",
                    verified_name=verified,
                    install_args="--install --quiet",
                )
            )
    if with_nnal:
        name = f"Ascend-cann-nnal_{cann}_linux-{arch}.run"
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
    verified = chip in ("910b", "310p", "310b")
    arch_name = "x86-64" if arch == "x86_64" else arch
    name = f"Ascend-hdk-{chip}-npu-driver_{text}_linux-{arch_name}.run"
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
    fw = FIRMWARE_FOR_DRIVER.get(text)
    if fw:
        fname = f"Ascend-hdk-{chip}-npu-firmware_{fw}.run"
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
