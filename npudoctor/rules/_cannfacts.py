"""Facts shared by the CANN and driver rules (not a rule module: the leading underscore
keeps it out of rule discovery): the installed torch_npu and torch, CANN version
comparisons, a toolkit's evidence line, the machine's architecture, the installed driver and
the torch_npu/CANN mismatch plan, from the typed facts views each helper is given and the
matrix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npudoctor.rules.matrix import REFRESH_CMD, refresh_hint

if TYPE_CHECKING:
    from typing import List, Optional, Tuple

    from npudoctor.facts.devices import DevicesFacts
    from npudoctor.facts.stack import CannFacts, DriverFacts, Toolkit
    from npudoctor.facts.system import HostFacts, PackagesFacts, PythonFacts
    from npudoctor.knowledge.matrix import Matrix, TorchNpuRow
    from npudoctor.plan.fit import MismatchPlan

_ARCHES = ("aarch64", "x86_64")


def host_arch(host: HostFacts, packages: PackagesFacts) -> Optional[str]:
    """Machine architecture from the host facts, else the torch_npu wheel tag."""
    arch = host.arch
    if arch in _ARCHES:
        return arch
    rec = packages.torch_npu
    for tag in rec.wheel_tags if rec is not None else ():
        if "aarch64" in tag:
            return "aarch64"
        if "x86_64" in tag:
            return "x86_64"
    return None


def toolkit_line(tk: Toolkit) -> str:
    """``CANN 8.0.0 at /usr/local/Ascend/ascend-toolkit/latest (via …), read from …``: the
    evidence line naming one toolkit install."""
    via = tk.found_via
    how = f" (via {via})" if via and via != tk.path else ""
    return f"CANN {tk.version or '(unknown version)'} at {tk.path}{how}, read from {tk.source}"


def driver_version(driver: DriverFacts, devices: DevicesFacts) -> Tuple[Optional[str], Optional[str]]:
    """``(version, source)`` of the NPU driver: driver/version.info, else the npu-smi
    table header; ``(None, None)`` when neither names one."""
    drv = driver.driver
    if drv.version:
        return drv.version, str(drv.source)
    smi = devices.npu_smi
    if smi.driver_version:
        return smi.driver_version, "npu-smi info (table header)"
    return None, None


def installed_driver(driver: DriverFacts, devices: DevicesFacts) -> Optional[str]:
    """The installed NPU driver version: driver/version.info, else the npu-smi header."""
    return driver_version(driver, devices)[0]


# ---------------------------------------------------------------- python, matrix


def python_tag(py: PythonFacts, host: HostFacts, packages: PackagesFacts) -> Tuple[Optional[str], Optional[str]]:
    """``(python "3.10", platform "aarch64"|"x86_64")`` of the target interpreter, each
    ``None`` when unknown (the interpreter's machine first, then the host arch, then the
    torch_npu wheel tag)."""
    machine = py.machine or host.arch
    plat = {"arm64": "aarch64", "amd64": "x86_64", "AMD64": "x86_64"}.get(machine or "", machine)
    return py.short, (plat if plat in _ARCHES else host_arch(host, packages))


def not_in_matrix_line(what: str) -> str:
    """The "refresh the matrix" fix line, in the matrix area's wording."""
    return refresh_hint(what)


def missing_statement_line(matrix: Matrix, torch_npu: str, cann: str, row: Optional[TorchNpuRow]) -> str:
    """The "refresh the matrix" fix line of an undocumented torch_npu/CANN pair, naming
    exactly what the matrix lacks: the torch_npu row, the CANN row, or (both rows present)
    the torch_npu row's statement about this CANN."""
    if row is None:
        return refresh_hint(f"torch_npu {torch_npu}")
    if matrix.cann_row(cann) is None:
        return refresh_hint(f"CANN {cann}")
    listed = ", ".join(list(row.cann) + list(row.cann_compatible)) or "no CANN"
    return (
        f"{REFRESH_CMD}   # the matrix in use has CANN {cann}, but the row of torch_npu {torch_npu} "
        f"does not name it (it lists {listed}); refresh it (or pass --matrix FILE)"
    )


def nearest_pairing(matrix: Matrix, torch_npu: str) -> Optional[TorchNpuRow]:
    """For a torch_npu the official tables do not pair with a CANN (a ``.postN`` build,
    a release newer than the tables), the officially paired row nearest below it: of its
    own torch line when there is one (``2.12.0.post3`` -> ``2.12.0``), else the newest
    paired release older than it (``2.13.0`` -> ``2.12.0``); ``None`` when none is older."""
    from packaging.version import InvalidVersion, Version

    try:
        want = Version(torch_npu)
    except InvalidVersion:
        return None
    older = [r for r in matrix.torch_npu_rows if r.cann and r.version is not None and r.version < want]
    if not older:
        return None
    line = [r for r in older if r.version.release[:2] == want.release[:2] and not r.version.is_prerelease]
    released = [r for r in older if not r.version.is_prerelease] or older
    return max(line or released, key=lambda r: r.version)


def cann_pairing(matrix: Matrix, torch_npu: str) -> Tuple[Optional[TorchNpuRow], bool]:
    """The official row that names the CANN to install for ``torch_npu`` -- its own row
    when that pairs it with a CANN, else :func:`nearest_pairing` -- and whether it is the
    nearest one; ``(None, False)`` when neither is there.  CANN001 installs that row's CANN;
    DRV001 names the HDK paired with it."""
    row = matrix.find_torch_npu(torch_npu)
    if row is not None and row.cann:
        return row, False
    near = nearest_pairing(matrix, torch_npu)
    return near, near is not None


def cann_plan(
    matrix: Optional[Matrix], cann: CannFacts, packages: PackagesFacts, python: PythonFacts, host: HostFacts
) -> Optional[MismatchPlan]:
    """The ways out of a torch_npu/CANN mismatch (CANN003) for this machine, from the
    one solver (:func:`npudoctor.plan.fit.mismatch_plan`), or ``None`` (no selected CANN
    version, no torch_npu, no mismatch)."""
    tk = cann.selected
    tnpu = packages.torch_npu
    if tk is None or not tk.version or tnpu is None:
        return None
    py, plat = python_tag(python, host, packages)
    from npudoctor.plan.fit import mismatch_plan  # here: the solver only when there is a mismatch to plan

    return mismatch_plan(matrix, tnpu.version or "", tk.version, packages.torch_version, py, plat)


#: Distributions that link NNAL's libatb.so (keys of ``packages.installed``).
_NEEDS_NNAL = ("vllm-ascend", "mindie", "mindie-turbo", "mindie-llm")  # any spelling matches (records)


def nnal_needed(packages: PackagesFacts, cann: CannFacts) -> Tuple[bool, List[str]]:
    """Whether this machine needs NNAL (ATB), and why: a distribution that links
    libatb.so, ``ATB_HOME_PATH`` set, or MindIE installed."""
    reasons = [
        f"{rec.name or name} {rec.version} is installed (it links NNAL's libatb.so)"
        for name in _NEEDS_NNAL
        for rec in packages.records(name)
    ]
    env = cann.env.get("ATB_HOME_PATH")
    if env is not None and env.value:
        reasons.append(f"ATB_HOME_PATH={env.value} is set")
    if cann.mindie is not None:
        reasons.append(f"MindIE {cann.mindie.version} is installed at {cann.mindie.path}")
    return bool(reasons), reasons


def _hdk_words(matrix: Optional[Matrix], cann: str, driver: Optional[str]) -> Optional[str]:
    """``Ascend HDK 25.3.RC1, which CANN 8.3.RC2 needs (driver … does not fit it)``: the HDK
    the matrix names for ``cann`` and why, given the installed ``driver`` (``None``: none
    known); ``None`` when the matrix names no HDK for ``cann``."""
    from npudoctor.plan.fit import driver_shortfall, hdk_for

    hdk = hdk_for(matrix, cann)
    if not hdk:
        return None
    short = driver_shortfall(matrix, cann, driver) if driver else None
    note = {
        "incompatible": f" (driver {driver} does not fit it)",
        "older": f" (driver {driver} is older than every HDK documented for it)",
    }.get(short or "", "")
    # an older driver is not documented either way: the HDK is what CANN is documented with
    why = f"the one CANN {cann} is documented with" if short == "older" else f"which CANN {cann} needs"
    return f"Ascend HDK {hdk}, {why}{note}"


def driver_for_new_cann(matrix: Optional[Matrix], cann: str, driver: Optional[str]) -> Optional[str]:
    """The continuation line about the driver for a CANN ``cann`` about to be installed
    over the installed ``driver`` (``None``: none known): that it already fits, or the HDK
    to install with why; ``None`` when the matrix names no HDK for ``cann``."""
    from npudoctor.plan.fit import driver_fit

    if driver and driver_fit(matrix, cann, driver) in ("paired", "compatible"):
        return f"  the installed driver {driver} already fits CANN {cann}"
    words = _hdk_words(matrix, cann, driver)
    return f"  and the NPU driver + firmware of {words}; then reboot" if words else None


def driver_upgrade_first(matrix: Optional[Matrix], cann: str, driver: Optional[str]) -> Optional[str]:
    """The step before installing CANN ``cann`` when the installed ``driver`` falls short of
    it (:func:`~npudoctor.plan.fit.driver_shortfall`), naming the HDK to install first;
    ``None`` with no driver (DRV001 names the HDK then), one that fits, or no HDK known."""
    from npudoctor.plan.fit import driver_shortfall

    if not driver or not driver_shortfall(matrix, cann, driver):
        return None
    words = _hdk_words(matrix, cann, driver)
    return f"first the NPU driver + firmware of {words}, and a reboot; then:" if words else None
