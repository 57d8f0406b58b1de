"""The one list of Ascend offline package file names (toolkit, kernels/ops, NNAL, driver,
firmware) per CANN / HDK version, package chip type and architecture.

Rules (through :mod:`npudoctor.remedies`) and the planner (:mod:`npudoctor.plan.files`)
both name packages with these functions, so a fix line and an install bundle never
disagree on a file name.

Sources (retrieved 2026-11): Ascend/docs ``_static/package_info.js``,
``Ascend/cann-container-image`` Dockerfiles, hiascend mindsdk/730 mxindexfrug_0009, conda
channel ``ascend``, and the driver ↔ firmware builds of the community install helper:

* toolkit  ``Ascend-cann-toolkit_{ver}_linux-{arch}.run`` (arch ``aarch64``/``x86_64``)
* kernels  ≤ 8.0.RC2 ``Ascend-cann-kernels-{chip}_{ver}_linux.run`` (no arch);
           8.0.RC3 – 8.3.x **and 8.5.0.alphaNNN**
           ``Ascend-cann-kernels-{chip}_{ver}_linux-{arch}.run``;
           A3 from 8.1.RC1 to 8.3.x (and 8.5.0.alphaNNN) ``Atlas-A3-cann-kernels_{ver}_linux-{arch}.run``
* ops      from 8.5.0 (replaces kernels) ``Ascend-cann-{chip}-ops_{ver}_linux-{arch}.run``,
           chip ∈ 910, 910b, A3, 310p, 950
* NNAL     ``Ascend-cann-nnal_{ver}_linux-{arch}.run``
* driver   ``Ascend-hdk-{chip}-npu-driver_{drv}_linux-{arch}.run``, arch ``aarch64``/``x86-64``
* firmware ``Ascend-hdk-{chip}-npu-firmware_{fw}.run`` (no arch; its own 5-part numbering)

Kernels vs ops for the 8.5.0 alphas: the sources above list "CANN kernels, 8.0.RC3 –
8.3.RC2 (and 8.5.0.alphaNNN)" with the example ``Ascend-cann-kernels-910b_8.5.0.alpha002_linux-aarch64.run``,
"CANN kernels for A3 … (and 8.5.0.alphaNNN)", and "CANN ops (replaces kernels from
8.5.0)"; the conda channel ``ascend`` ships legacy ``cann-kernels-*`` "up to
8.5.0.alpha002" (anaconda.org/ascend).  So CANN 8.5.0.alpha001
has a **kernels** package, and 8.5.0 (and its betas and later releases) an **ops** one.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from npudoctor.knowledge.versions import major_minor, parse_cann
from npudoctor.record import Record

if TYPE_CHECKING:
    from typing import Dict, Optional, Tuple

#: Package kinds in the order the official images install them.
INSTALL_ORDER: Tuple[str, ...] = ("driver", "firmware", "toolkit", "kernels", "ops", "nnal")

#: Kinds that are CANN packages (the others are Ascend HDK packages).
CANN_KINDS: Tuple[str, ...] = ("toolkit", "kernels", "ops", "nnal")

#: Package chip types, for prose when the chip of a machine is not known.
PACKAGE_CHIPS: Tuple[str, ...] = ("910b", "910", "310p", "A3")

#: driver → firmware build installed together by the Ascend community install helper
#: (Ascend/docs _static/package_info.js).  Firmware numbers of newer HDKs are not
#: published in any source read.
FIRMWARE_FOR_DRIVER: Dict[str, str] = {
    "25.0.rc1.1": "7.7.0.1.231",
    "24.1.rc2": "7.3.0.1.231",
    "24.1.rc1": "7.1.0.6.220",
    "24.1.rc3": "7.5.0.1.129",
    "23.0.3": "7.1.0.5.220",
    "23.0.1": "7.1.0.4.220",
}


class PackageName(Record):
    """The file name of one package: ``kind`` (``toolkit`` | ``kernels`` | ``ops`` |
    ``nnal`` | ``driver`` | ``firmware``), ``filename``, and ``verified`` (False when the
    name pattern is not confirmed by a source for this chip/version)."""

    kind: str
    filename: str
    verified: bool = True


def normalize_chip(chip: str) -> str:
    """``"a3"`` → ``"A3"`` (the only upper-case chip type); others lower-case (``"910B"`` → ``"910b"``)."""
    return "A3" if chip.lower() == "a3" else chip.lower()


def is_ops_era(cann: str) -> bool:
    """Whether CANN ``cann`` ships an ``ops`` package instead of ``kernels``: 8.5.0 and
    later, except the 8.5.0.alphaNNN builds (see the module docstring for the source).
    Versions the ordering cannot place fall back to their ``X.Y`` (``8.5.T3`` → ops)."""
    ver = parse_cann(cann)
    if ver is not None and ver.orderable:
        if ver.base == "8.5" and "alpha" in cann.lower():
            return False
        cmp = ver.compare("8.5.0-alpha.0")
        return cmp is not None and cmp >= 0
    return (major_minor(cann) or (0, 0)) >= (8, 5)


def _kernels_without_arch(cann: str) -> bool:
    """Kernels packages before 8.0.RC3 have no ``-{arch}`` suffix."""
    ver = parse_cann(cann)
    if ver is not None and ver.orderable:
        cmp = ver.compare("8.0.RC3")
        if cmp is not None:
            return cmp < 0
    mm = major_minor(cann) or (0, 0)
    return mm < (8, 0) or (mm == (8, 0) and re.match(r"^8\.0\.rc[12]\b", cann.lower()) is not None)


def toolkit_file(cann: str, arch: str) -> PackageName:
    """``Ascend-cann-toolkit_{cann}_linux-{arch}.run``; ``arch`` is ``aarch64`` or ``x86_64``
    (or any text the caller wants in that place)."""
    return PackageName("toolkit", f"Ascend-cann-toolkit_{cann}_linux-{arch}.run")


def nnal_file(cann: str, arch: str) -> PackageName:
    """``Ascend-cann-nnal_{cann}_linux-{arch}.run``."""
    return PackageName("nnal", f"Ascend-cann-nnal_{cann}_linux-{arch}.run")


def kernels_file(cann: str, chip: str, arch: str) -> PackageName:
    """The kernels (≤ 8.5.0.alphaNNN) or ops (≥ 8.5.0) package of CANN ``cann`` for
    package chip type ``chip`` (``910b``, ``910``, ``310p``, ``A3``, ``950``) on ``arch``.
    The returned ``kind`` says which of the two it is."""
    chip = normalize_chip(chip)
    if is_ops_era(cann):
        return PackageName("ops", f"Ascend-cann-{chip}-ops_{cann}_linux-{arch}.run")
    if chip == "A3":
        ver = parse_cann(cann)
        cmp = ver.compare("8.1.RC1") if ver is not None else None
        verified = cmp is not None and cmp >= 0
        return PackageName("kernels", f"Atlas-A3-cann-kernels_{cann}_linux-{arch}.run", verified)
    if _kernels_without_arch(cann):
        return PackageName("kernels", f"Ascend-cann-kernels-{chip}_{cann}_linux.run")
    return PackageName("kernels", f"Ascend-cann-kernels-{chip}_{cann}_linux-{arch}.run")


#: The chip part of a package name whose chip is not known (the site snapshot names none).
UNKNOWN_CHIP = "<chip>"


def kernels_unknown_chip(cann: str, arch: str) -> PackageName:
    """The kernels/ops package of CANN ``cann`` on ``arch`` for a chip not known, its chip
    part ``<chip>`` (``Ascend-cann-kernels-<chip>_8.2.RC1_linux-aarch64.run``): the name
    to show, never a file to fetch (``verified`` False)."""
    made = kernels_file(cann, UNKNOWN_CHIP, arch)
    return PackageName(made.kind, made.filename, False)


def kernels_chip_of(filename: str, cann: str, arch: str) -> Optional[str]:
    """The package chip type of ``filename`` when it is the kernels/ops package of CANN
    ``cann`` on ``arch`` (``Ascend-cann-kernels-910b_8.2.RC1_linux-aarch64.run`` -> ``910b``;
    the A3 kernels name -> ``A3``), else ``None``."""
    if kernels_file(cann, "A3", arch).filename == filename:
        return "A3"
    head, sep, tail = kernels_file(cann, UNKNOWN_CHIP, arch).filename.partition(UNKNOWN_CHIP)
    if not sep or not (filename.startswith(head) and filename.endswith(tail)):
        return None
    chip = filename[len(head) : len(filename) - len(tail)]
    if not re.fullmatch(r"[A-Za-z0-9]+", chip or ""):
        return None
    return chip if kernels_file(cann, chip, arch).filename == filename else None


def driver_arch(arch: str) -> str:
    """The arch part of HDK driver file names: ``x86_64`` → ``x86-64``, others unchanged."""
    return "x86-64" if arch == "x86_64" else arch


def driver_file(driver: str, chip: str, arch: str) -> PackageName:
    """``Ascend-hdk-{chip}-npu-driver_{driver}_linux-{arch}.run`` (``driver`` as given:
    the caller lower-cases HDK names, ``25.0.rc1.1``)."""
    chip = normalize_chip(chip)
    verified = chip in ("910b", "310p", "310b")
    return PackageName("driver", f"Ascend-hdk-{chip}-npu-driver_{driver}_linux-{driver_arch(arch)}.run", verified)


def firmware_file(firmware: str, chip: str) -> PackageName:
    """``Ascend-hdk-{chip}-npu-firmware_{firmware}.run`` (``firmware``: the firmware's own
    build number, ``7.5.0.1.129``, not the HDK version)."""
    chip = normalize_chip(chip)
    verified = chip in ("910b", "310p", "310b")
    return PackageName("firmware", f"Ascend-hdk-{chip}-npu-firmware_{firmware}.run", verified)


def firmware_for_driver(driver: str) -> Optional[str]:
    """The firmware build shipped with driver ``driver`` (``24.1.rc3`` → ``7.5.0.1.129``),
    or ``None`` when no source publishes it."""
    return FIRMWARE_FOR_DRIVER.get(driver.lower())


#: set_env.sh of the 8.5+ ``cann`` layout and of the classic ``ascend-toolkit`` one.
CANN_LAYOUT_SET_ENV = "/usr/local/Ascend/cann/set_env.sh"
TOOLKIT_LAYOUT_SET_ENV = "/usr/local/Ascend/ascend-toolkit/set_env.sh"


def set_env_script(cann: Optional[str]) -> str:
    """Where a fresh install of CANN ``cann`` puts its set_env.sh:
    ``/usr/local/Ascend/cann/set_env.sh`` from 8.5 (the 8.5 layout of the official images),
    else ``/usr/local/Ascend/ascend-toolkit/set_env.sh``."""
    if cann and (major_minor(cann) or (0, 0)) >= (8, 5):
        return CANN_LAYOUT_SET_ENV
    return TOOLKIT_LAYOUT_SET_ENV


#: NNAL's ATB environment script (the official images).
NNAL_SET_ENV = "/usr/local/Ascend/nnal/atb/set_env.sh"
