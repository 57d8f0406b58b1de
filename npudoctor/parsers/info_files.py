"""Parsers of the small version/info files that CANN, NNAL, MindIE and the NPU driver
and firmware packages install.  Pure functions: text in, data out; they never raise on
malformed input (a garbled or truncated file gives fewer keys, and the callers record
what is missing).

Formats (samples in ``tests/fixtures/``):

* ``key=value`` files -- ``<toolkit>/<arch>-linux/ascend_toolkit_install.info``
  (``version=8.0.0``, ``innerversion=V100R001C20SPC001B251``,
  ``compatible_version=[V100R001C15],[V100R001C17]``, ``arch=aarch64``, ``path=``),
  component ``version.info`` files of toolkit/opp/opp_kernel (``Version=8.2.0.0.201``,
  ``version_dir=8.2.RC1``, ``required_package_opp_kernel_version=">=7.6, <=8.2"``),
  ``driver/version.info`` (``Version=24.1.rc2.2``, ``Innerversion=``,
  ``compatible_version_fw=[7.0.0,7.2.99]``, ``package_version=`` -- missing in some
  24.1.rc1 builds), ``firmware/version.info``
  (``compatible_version_drv=[23.0.0,23.0.0.],[24.1,24.1.]`` -- a high end that ends in
  ``.`` is a prefix: every version that starts with it), and ``/etc/ascend_install.info``
  (``Driver_Install_Path_Param=/usr/local/Ascend``).
* ``version.cfg`` of a toolkit: a ``# version: 1.0`` comment, then
  ``<pkg>_{running,upgrade,installed}_version=[<inner>:<public>]`` lines, possibly with
  several bracket groups on one line, in any order.
* ``key : value`` files of NNAL/ATB (``    Ascend-cann-atb : 8.2.RC1``, each line
  indented by 4 spaces), MindIE (``mindie-sd:2.1.RC1.B152``) and ATB-models
  (``MindIE-ATB Version : `` with an empty value).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from npudoctor import lazyre
from npudoctor.knowledge.versions import range_bound_key

if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple

__all__ = [
    "parse_key_values",
    "parse_bracket_list",
    "parse_ranges",
    "parse_version_cfg",
    "parse_colon_info",
    "toolkit_install_info",
    "component_version_info",
    "driver_version_info",
    "firmware_version_info",
    "nnal_version_info",
    "mindie_version_info",
    "ascend_install_info",
    "range_contains",
    "ranges_contain",
]

_KEY_RE = lazyre.pattern(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
_BRACKET_RE = lazyre.pattern(r"\[([^\[\]]*)\]")
_NUM_RE = lazyre.pattern(r"[0-9]+")
#: "2.1.RC1" in a MindIE component line (numbers bounded: a long digit run is one pass).
_MINDIE_VERSION = lazyre.pattern(r"(?<![0-9])([0-9]{1,9}\.[0-9]{1,9}\.[0-9A-Za-z]{1,40})(?:\.B[0-9]{1,9})?")
_PLAUSIBLE_VERSION = lazyre.pattern(r"^[0-9][0-9A-Za-z.\-_]*$")


def _clean_lines(text: str) -> List[str]:
    # NUL bytes and stray carriage returns show up in files copied through Windows or
    # cut by a full disk; treat them as line noise.
    return text.replace("\x00", "").replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1].strip()
    return value


def parse_key_values(text: str) -> Dict[str, str]:
    """``KEY=value`` lines -> ``{key: value}`` (keys as written, values unquoted).

    Blank lines, ``#`` comments and lines that are not ``KEY=value`` (garbage, or a
    line cut in the middle of the key) are skipped; the first occurrence of a key wins.
    """
    out: Dict[str, str] = {}
    for raw in _clean_lines(text or ""):
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        key = key.strip()
        if not _KEY_RE.match(key):
            continue
        out.setdefault(key, _unquote(value))
    return out


def _lower_keys(values: Dict[str, str]) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for key, value in values.items():
        out.setdefault(key.lower(), value)
    return out


def parse_bracket_list(value: Optional[str]) -> List[str]:
    """``"[V100R001C15],[V100R001C17]"`` -> ``["V100R001C15", "V100R001C17"]``.

    A value without brackets gives the comma-separated items; empty items are dropped.
    """
    if not value:
        return []
    groups = _BRACKET_RE.findall(value)
    if not groups:
        groups = value.split(",")
    return [g.strip() for g in groups if g.strip()]


def parse_ranges(value: Optional[str]) -> List[Tuple[str, str]]:
    """``"[7.0.0,7.2.99]"`` or ``"[23.0.0,23.0.0.],[24.1,24.1.]"`` -> ``[(low, high), ...]``.

    A group with one item gives ``(item, item)``; malformed groups are skipped.
    """
    out: List[Tuple[str, str]] = []
    for group in _BRACKET_RE.findall(value or ""):
        parts = [p.strip() for p in group.split(",") if p.strip()]
        if len(parts) == 1:
            out.append((parts[0], parts[0]))
        elif len(parts) == 2:
            out.append((parts[0], parts[1]))
    return out


def range_contains(low: str, high: str, version: str) -> Optional[bool]:
    """Whether ``version`` lies in the range ``[low, high]`` of a version.info file.

    A ``high`` that ends in ``.`` is a prefix range (firmware ``compatible_version_drv``):
    ``[24.1,24.1.]`` holds ``24.1`` and everything that starts with ``24.1.``.  Otherwise
    the ends are compared part by part over the length of the shorter string
    (``[7.0.0,7.2.99]`` holds firmware ``7.1.0.11.220``).  ``None`` when a version
    cannot be ordered (letters other than ``rcN``/``bNNN``).
    """
    ver = version.strip().lower()
    lo = low.strip().lower()
    hi = high.strip().lower()
    if not ver:
        return None
    if hi.endswith("."):
        prefix = hi
        if ver == lo or ver == prefix[:-1] or ver.startswith(prefix):
            return True
        hi = prefix[:-1]
        vk, lk, hk = range_bound_key(ver), range_bound_key(lo), range_bound_key(hi)
        if vk is None or lk is None or hk is None:
            return False if vk is not None else None
        return lk <= vk[: len(lk)] and vk[: len(hk)] <= hk
    vk, lk, hk = range_bound_key(ver), range_bound_key(lo), range_bound_key(hi)
    if vk is None or lk is None or hk is None:
        return None
    return lk <= vk[: len(lk)] and vk[: len(hk)] <= hk


def format_range(low: str, high: str) -> str:
    """One version.info range for humans: ``("23.0.0", "23.0.0.")`` -> ``"23.0.0.x"``,
    ``("24.0", "24.0.")`` -> ``"24.0.x"`` (a high end ending in ``.`` is a prefix range),
    ``("24.0", "24.1.")`` -> ``"24.0 to 24.1.x"``, ``("7.0.0", "7.2.99")`` ->
    ``"7.0.0 to 7.2.99"``, ``("7.1.0", "7.1.0")`` -> ``"7.1.0"``."""
    lo, hi = low.strip(), high.strip()
    if hi.endswith("."):
        prefix = hi.rstrip(".")
        if not lo or lo == prefix:
            return f"{prefix}.x"
        return f"{lo} to {prefix}.x"
    if not lo or lo == hi:
        return hi or lo
    return f"{lo} to {hi}"


def format_ranges(ranges: List[Tuple[str, str]]) -> str:
    """Ranges of a version.info line for humans, comma-separated (see :func:`format_range`):
    ``[("23.0.0", "23.0.0."), ("24.1", "24.1.")]`` -> ``"23.0.0.x, 24.1.x"``."""
    return ", ".join(format_range(lo, hi) for lo, hi in ranges)


def ranges_contain(ranges: List[Tuple[str, str]], version: str) -> Optional[bool]:
    """True if any range holds ``version``; False if none does; None if undecidable."""
    answers = [range_contains(lo, hi, version) for lo, hi in ranges]
    if any(a is True for a in answers):
        return True
    if answers and all(a is False for a in answers):
        return False
    return None


def parse_version_cfg(text: str) -> Dict[str, Dict[str, List[Dict[str, str]]]]:
    """A toolkit's ``version.cfg`` -> ``{pkg: {"running"|"upgrade"|"installed": [{"inner", "public"}]}}``.

    ``opp_kernel_running_version=[7.6.T13.0.B094:8.0.T63]`` gives
    ``{"opp_kernel": {"running": [{"inner": "7.6.T13.0.B094", "public": "8.0.T63"}]}}``.
    Several bracket groups on a line give several entries; a group without ``:`` has only
    ``inner``.  Unknown lines are skipped.
    """
    out: Dict[str, Dict[str, List[Dict[str, str]]]] = {}
    for key, value in parse_key_values(text).items():
        m = re.match(r"^(?P<pkg>.+)_(?P<state>running|upgrade|installed)_version$", key)
        if not m:
            continue
        entries: List[Dict[str, str]] = []
        for group in _BRACKET_RE.findall(value) or ([value] if value else []):
            inner, sep, public = group.partition(":")
            entry = {"inner": inner.strip()}
            if sep and public.strip():
                entry["public"] = public.strip()
            if entry["inner"] or entry.get("public"):
                entries.append(entry)
        if entries:
            out.setdefault(m.group("pkg"), {})[m.group("state")] = entries
    return out


def parse_colon_info(text: str) -> Dict[str, str]:
    """``key : value`` lines (any indentation and spacing) -> ``{key: value}``.

    The line is split at its first ``:``, so values may contain colons (``Time:
    2025-02-05 03:45:45 PM CST``).  Empty values are kept as ``""``; the first
    occurrence of a key wins.
    """
    out: Dict[str, str] = {}
    for raw in _clean_lines(text or ""):
        line = raw.strip()
        if not line or line.startswith("#") or ":" not in line:
            continue
        key, _, value = line.partition(":")
        key = " ".join(key.split())
        if not key:
            continue
        out.setdefault(key, value.strip())
    return out


def _plausible(version: Optional[str]) -> Optional[str]:
    if not version:
        return None
    version = version.strip()
    return version if _PLAUSIBLE_VERSION.match(version) else None


def toolkit_install_info(text: str) -> Dict[str, Any]:
    """``ascend_toolkit_install.info`` (or ``ascend_nnae_install.info``) ->
    ``{package_name, version, innerversion, compatible_version: [..], arch, os, path}``
    (keys absent from the file are ``None``).  ``version`` is ``None`` when the value is
    not a plausible version string (garbage)."""
    kv = _lower_keys(parse_key_values(text))
    return {
        "package_name": kv.get("package_name"),
        "version": _plausible(kv.get("version")),
        "innerversion": kv.get("innerversion"),
        "compatible_version": parse_bracket_list(kv.get("compatible_version")),
        "arch": kv.get("arch"),
        "os": kv.get("os"),
        "path": kv.get("path"),
    }


def component_version_info(text: str) -> Dict[str, Any]:
    """A component ``version.info`` (toolkit, opp, opp_kernel, runtime, compiler) ->
    ``{version, version_dir, timestamp, required: {pkg: spec}, extra: {key: value}}``.

    ``version`` is the 5-part inner number (``8.2.0.0.201``); ``version_dir`` is the
    public CANN version (``8.2.RC1``); ``required`` holds the
    ``required_package_<pkg>_version`` values unquoted (``">=7.6, <=8.2"`` -> ``>=7.6, <=8.2``).
    """
    kv = parse_key_values(text)
    low = _lower_keys(kv)
    required: Dict[str, str] = {}
    extra: Dict[str, str] = {}
    for key, value in kv.items():
        lk = key.lower()
        m = re.match(r"^required_package_(.+)_version$", lk)
        if m:
            required[m.group(1)] = value
        elif lk not in ("version", "version_dir", "timestamp"):
            extra[key] = value
    return {
        "version": _plausible(low.get("version")),
        "version_dir": _plausible(low.get("version_dir")),
        "timestamp": low.get("timestamp"),
        "required": required,
        "extra": extra,
    }


def driver_version_info(text: str) -> Dict[str, Any]:
    """``driver/version.info`` -> ``{version, package_version, innerversion,
    ascendhal_version, compatible_version: [..], compatible_version_fw: [(lo, hi)]}``.

    ``package_version`` is ``None`` in builds that lack the line (24.1.rc1)."""
    kv = _lower_keys(parse_key_values(text))
    return {
        "version": _plausible(kv.get("version")),
        "package_version": _plausible(kv.get("package_version")),
        "innerversion": kv.get("innerversion"),
        "ascendhal_version": kv.get("ascendhal_version"),
        "compatible_version": parse_bracket_list(kv.get("compatible_version")),
        "compatible_version_fw": parse_ranges(kv.get("compatible_version_fw")),
    }


def firmware_version_info(text: str) -> Dict[str, Any]:
    """``firmware/version.info`` -> ``{version, package_version, firmware_version,
    compatible_version_drv: [(lo, hi)]}``.  ``version`` is the 5-part firmware number
    (``7.7.0.1.231``); ``package_version`` the HDK release it shipped in (``25.0.rc1.1``)."""
    kv = _lower_keys(parse_key_values(text))
    return {
        "version": _plausible(kv.get("version")),
        "package_version": _plausible(kv.get("package_version")),
        "firmware_version": kv.get("firmware_version"),
        "compatible_version_drv": parse_ranges(kv.get("compatible_version_drv")),
    }


def nnal_version_info(text: str) -> Dict[str, Any]:
    """NNAL/ATB ``version.info`` -> ``{package, version, build, platform, branch, commit}``.

    ``    Ascend-cann-atb : 8.2.RC1`` / ``    Ascend-cann-atb Version : 8.2.RC1.B150``
    give ``package="Ascend-cann-atb"``, ``version="8.2.RC1"``, ``build="8.2.RC1.B150"``.
    When only the build line is present the version is the build without ``.Bnnn``.
    """
    kv = parse_colon_info(text)
    package = None
    version = None
    build = None
    for key, value in kv.items():
        lk = key.lower()
        if lk.startswith("ascend-cann-") and not lk.endswith(" version"):
            package, version = key, value
        elif lk.startswith("ascend-cann-") and lk.endswith(" version"):
            build = value
            package = package or key[: -len(" version")].strip()
    version = _plausible(version)
    build = _plausible(build)
    if version is None and build:
        version = re.sub(r"\.B[0-9]+$", "", build, flags=re.I)
    low = {k.lower(): v for k, v in kv.items()}
    return {
        "package": package,
        "version": version,
        "build": build,
        "platform": low.get("platform") or None,
        "branch": low.get("branch") or None,
        "commit": low.get("commit id") or None,
    }


def mindie_version_info(text: str) -> Dict[str, Any]:
    """MindIE / ATB-models ``version.info`` -> ``{version, components: {name: version}, platform}``.

    ``Ascend-mindie : MindIE 2.1.RC1.B152`` gives ``version="2.1.RC1"``; for
    ATB-models ``ATB-Models Version : 2.0.T3.B010`` gives ``version="2.0.T3"``.
    Empty values (``MindIE-ATB Version : ``) are ignored.
    """
    kv = parse_colon_info(text)
    components: Dict[str, str] = {}
    version = None
    for key, value in kv.items():
        lk = key.lower()
        if lk in ("platform", "time", "commit id") or not value:
            continue
        m = _MINDIE_VERSION.search(value)
        if not m:
            continue
        components[key] = value
        if version is None and (lk in ("ascend-mindie", "atb-models version") or "version" in lk):
            version = m.group(1)
    if version is None and components:
        m = _MINDIE_VERSION.search(next(iter(components.values())))
        version = m.group(1) if m else None
    low = {k.lower(): v for k, v in kv.items()}
    return {"version": version, "components": components, "platform": low.get("platform") or None}


def ascend_install_info(text: str) -> Dict[str, str]:
    """``/etc/ascend_install.info`` -> ``{key_lowercase: value}``
    (``driver_install_path_param``, ``firmware_install_path_param``, ``username``, ...)."""
    return _lower_keys(parse_key_values(text))
