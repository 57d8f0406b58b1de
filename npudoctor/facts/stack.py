"""Typed views of the ``cann`` and ``driver`` sections (shapes documented in
:mod:`npudoctor.probes.cann` and :mod:`npudoctor.probes.driver`)."""

from __future__ import annotations

from typing import Dict, Optional, Tuple

from npudoctor.facts._typed import JSON
from npudoctor.facts._view import View, field


class FileError(View):
    """A file that could not be read or parsed."""

    path: Optional[str] = None
    error: Optional[str] = None


class Kernels(View):
    """The operator kernels (opp_kernel package) installed in a toolkit."""

    socs: Tuple[str, ...] = ()
    """kernel directories ("ascend910b", "ascend310p", ...)"""
    configs: Tuple[str, ...] = ()
    version: Optional[str] = None
    inner_version: Optional[str] = None
    """Version= of opp_kernel/version.info ("7.6.0.1.220")"""
    requires: Dict[str, str] = field(default_factory=dict)
    """required_package_<pkg>_version of opp_kernel/version.info (">=7.6, <=8.2")"""
    source: Optional[str] = None
    installed: bool = False


class Toolkit(View):
    """One CANN toolkit install (toolkit, nnae, or the 8.5+ ``cann-<ver>`` layout)."""

    path: str = ""
    resolved: Optional[str] = None
    kind: Optional[str] = None
    '"toolkit" | "nnae" | "cann"'
    version: Optional[str] = None
    """public CANN version ("8.0.0", "8.2.RC1")"""
    inner_version: Optional[str] = None
    compatible_version: Tuple[str, ...] = ()
    """driver lines (V100R001Cxx) its ascend_toolkit_install.info accepts"""
    requires: Dict[str, str] = field(default_factory=dict)
    """required_package_<pkg>_version of toolkit/version.info"""
    arch: Optional[str] = None
    source: Optional[str] = None
    versions: Dict[str, str] = field(default_factory=dict)
    """source path → version read there"""
    components: Dict[str, str] = field(default_factory=dict)
    found_via: Optional[str] = None
    aliases: Tuple[str, ...] = ()
    opp_path: Optional[str] = None
    kernels: Kernels = field(default_factory=Kernels)
    errors: Tuple[FileError, ...] = ()
    set_env: Optional[str] = None
    install_info: JSON = None
    """key/values of the <arch>-linux install info file"""


class Nnal(View):
    """An NNAL/ATB install (``path`` is the ``nnal/atb`` directory)."""

    path: str = ""
    resolved: Optional[str] = None
    version: Optional[str] = None
    build: Optional[str] = None
    platform: Optional[str] = None
    source: Optional[str] = None
    abi_dirs: Tuple[str, ...] = ()
    found_via: Optional[str] = None
    set_env: Optional[str] = None
    errors: Tuple[FileError, ...] = ()


class EnvValue(View):
    """A CANN variable's value and whether the path it names exists."""

    value: Optional[str] = None
    exists: Optional[bool] = None


class Product(View):
    """An installed framework product (MindIE, ATB-Models)."""

    path: Optional[str] = None
    version: Optional[str] = None
    components: JSON = None
    source: Optional[str] = None
    errors: Tuple[FileError, ...] = ()


class CannFacts(View):
    """Every CANN toolkit installed, the one in use, its kernels, and NNAL/ATB."""

    toolkits: Tuple[Toolkit, ...] = ()
    selected: Optional[Toolkit] = None
    selected_via: Optional[str] = None
    env: Dict[str, Optional[EnvValue]] = field(default_factory=dict)
    nnal: Optional[Nnal] = None
    nnal_all: Tuple[Nnal, ...] = ()
    mindie: Optional[Product] = None
    atb_models: Optional[Product] = None
    searched: Tuple[str, ...] = ()

    @property
    def version(self) -> Optional[str]:
        """Version of the CANN toolkit in use (``selected``), or ``None``."""
        sel = self.selected
        return (sel.version or None) if sel is not None else None

    @property
    def present(self) -> bool:
        """Whether any CANN toolkit was found."""
        return bool(self.selected is not None or self.toolkits)


class InstallInfo(View):
    """/etc/ascend_install.info (keys lower-cased)."""

    path: Optional[str] = None
    values: Dict[str, str] = field(default_factory=dict)
    error: Optional[str] = None


class Driver(View):
    """The NPU driver's ``version.info``."""

    path: Optional[str] = None
    exists: bool = False
    version: Optional[str] = None
    '"24.1.rc2.2"'
    package_version: Optional[str] = None
    innerversion: Optional[str] = None
    ascendhal_version: Optional[str] = None
    compatible_version: Tuple[str, ...] = ()
    """CANN lines it accepts (V100R001Cxx)"""
    compatible_version_fw: Tuple[Tuple[str, ...], ...] = ()
    """firmware ranges [low, high] it accepts"""
    source: Optional[str] = None
    found_via: Optional[str] = None
    lib64: Optional[bool] = None
    error: Optional[str] = None


class Firmware(View):
    """The NPU firmware's ``version.info``."""

    path: Optional[str] = None
    exists: bool = False
    version: Optional[str] = None
    package_version: Optional[str] = None
    firmware_version: Optional[str] = None
    """firmware_version= of version.info"""
    compatible_version_drv: Tuple[Tuple[str, ...], ...] = ()
    """driver ranges [low, high] it accepts; a high end ending in "." is a prefix"""
    source: Optional[str] = None
    found_via: Optional[str] = None
    error: Optional[str] = None


class DriverFacts(View):
    """NPU driver and firmware, read from files."""

    install_info: Optional[InstallInfo] = None
    driver: Driver = field(default_factory=Driver)
    firmware: Firmware = field(default_factory=Firmware)
    npu_smi_driver_version: Optional[str] = None
