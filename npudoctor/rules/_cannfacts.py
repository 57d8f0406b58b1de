"""Helpers shared by the CANN and driver rules (not a rule module: the leading underscore
keeps it out of rule discovery): the installed torch_npu, CANN version comparisons, the
machine's architecture and package chip type, the installed driver, read defensively from
the ``packages``, ``cann``, ``host``, ``devices`` and ``driver`` facts.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from npudoctor.knowledge.versions import CannVersion
from npudoctor.knowledge.versions import parse_cann as _parse_cann
from npudoctor.rules.matrix import refresh_hint


def installed(ctx: Any, *names: str) -> List[Dict[str, Any]]:
    """The package records of ``names`` (exact keys of ``packages.installed``), in order."""
    table = ctx.facts("packages").get("installed") or {}
    out: List[Dict[str, Any]] = []
    if not isinstance(table, dict):
        return out
    for name in names:
        out.extend(r for r in table.get(name) or [] if isinstance(r, dict))
    return out


def torch_npu_record(ctx: Any) -> Optional[Dict[str, Any]]:
    """The installed torch_npu record of the packages facts (first one), or ``None``."""
    recs = installed(ctx, "torch-npu", "torch_npu")
    return recs[0] if recs else None


def parse_cann(text: Optional[str]) -> Optional[CannVersion]:
    """A :class:`npudoctor.knowledge.versions.CannVersion`, or ``None`` for garbage."""
    if not text:
        return None
    try:
        return _parse_cann(text)
    except Exception:
        return None


def cann_less(a: Optional[str], b: Optional[str]) -> Optional[bool]:
    """``a < b`` for CANN version strings; ``None`` when unknowable (T builds, garbage)."""
    va, vb = parse_cann(a), parse_cann(b)
    if va is None or vb is None:
        return None
    try:
        return bool(va < vb)
    except (ValueError, TypeError):
        return None


def same_release(a: Optional[str], b: Optional[str]) -> Optional[bool]:
    """Whether two CANN version strings name the same release (``8.2.RC1`` == ``8.2.rc1``;
    a ``.B150`` build suffix is ignored).  ``None`` when one is missing."""
    if not a or not b:
        return None

    def norm(v: str) -> str:
        return re.sub(r"\.b\d+$", "", v.strip().lower())

    if norm(a) == norm(b):
        return True
    va, vb = parse_cann(norm(a)), parse_cann(norm(b))
    if va is not None and vb is not None:
        try:
            return bool(va == vb)
        except (ValueError, TypeError):
            pass
    return False


def major_minor(version: Optional[str]) -> Optional[Tuple[int, int]]:
    """``"8.2.RC1"`` -> ``(8, 2)``; ``None`` if it does not start with two numbers."""
    m = re.match(r"^\s*(\d+)\.(\d+)", version or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def host_arch(ctx: Any) -> Optional[str]:
    """Machine architecture from the host facts, else the torch_npu wheel tag."""
    arch = ctx.facts("host").get("arch")
    if arch in ("aarch64", "x86_64"):
        return arch
    rec = torch_npu_record(ctx)
    for tag in (rec or {}).get("wheel_tags") or []:
        if "aarch64" in str(tag):
            return "aarch64"
        if "x86_64" in str(tag):
            return "x86_64"
    return None


def chips(ctx: Any) -> List[Dict[str, Any]]:
    """Chip records of the devices facts (``[{"name": "910B3", ...}]``)."""
    return [c for c in ctx.facts("devices").get("chips") or [] if isinstance(c, dict) and c.get("name")]


def chip_info(ctx: Any, name: str) -> Any:
    """``matrix.chip(name)`` or ``None`` (no matrix, unknown chip)."""
    matrix = ctx.matrix
    if matrix is None:
        return None
    try:
        return matrix.chip(name)
    except Exception:
        return None


def package_chip(ctx: Any) -> Optional[str]:
    """The chip part of the package names (``910b``, ``310p``, ``910``, ``A3``) for the
    NPU chips of this machine, or ``None`` when no chip is known.

    From ``devices.chips[*].name`` via ``matrix.chip(name).kernels_package_chip``; for a
    chip name the matrix does not list, the ``family`` the devices probe recorded via the
    matrix family's ``package_chip`` (chips.toml, REPORT.md §5)."""
    found = chips(ctx)
    for chip in found:
        info = chip_info(ctx, str(chip["name"]))
        pkg = getattr(info, "kernels_package_chip", None)
        if pkg:
            return str(pkg)
    families = getattr(ctx.matrix, "families", None) if ctx.matrix is not None else None
    if isinstance(families, dict):
        for chip in found:
            fam = families.get(str(chip.get("family") or ""))
            pkg = getattr(fam, "package_chip", None)
            if pkg:
                return str(pkg)
    return None


def not_in_matrix_line(what: str) -> str:
    """The "refresh the matrix" fix line, in the matrix area's wording."""
    return refresh_hint(what)


def installed_driver(ctx: Any) -> Optional[str]:
    """The installed NPU driver version: driver/version.info, else the npu-smi header."""
    drv = ctx.facts("driver").get("driver") or {}
    if isinstance(drv, dict) and drv.get("version"):
        return str(drv["version"])
    smi = ctx.facts("devices").get("npu_smi") or {}
    if isinstance(smi, dict) and smi.get("driver_version"):
        return str(smi["driver_version"])
    return None


def python_tag(ctx: Any) -> Tuple[Optional[str], Optional[str]]:
    """``(python "3.10", platform "aarch64"|"x86_64")`` of the target interpreter, each
    ``None`` when unknown (the python facts first, the host arch as platform fallback)."""
    from npudoctor.rules._pyfacts import platform, python_short

    try:
        plat = platform(ctx)
    except Exception:
        plat = None
    try:
        py = python_short(ctx)
    except Exception:
        py = None
    return py, (plat if plat in ("aarch64", "x86_64") else host_arch(ctx))


def installed_torch(ctx: Any) -> Optional[str]:
    """The installed torch version (``2.1.0+cpu``), or ``None``."""
    torch = installed(ctx, "torch")
    return str(torch[0].get("version") or "") if torch else None
