"""The facts of a site snapshot that the planner reads.

A snapshot is what ``npudoctor collect -o site.json`` writes on the intranet machine
(:class:`npudoctor.snapshot.Snapshot`).  The planner reads these keys (their producers
document them in ``npudoctor/probes/<section>.py``):

=================================  ==========================================  ============
fact                               snapshot key                                 producer
=================================  ==========================================  ============
architecture                       ``host.arch`` ("aarch64" / "x86_64"); else   host
                                   ``python.machine`` (under --root: the        python
                                   WHEEL tags of installed packages), else
                                   ``cann.selected.arch``, else the one arch    cann
                                   all ``cann.toolkits`` share
glibc                              ``host.glibc`` ("2.31")                      host
OS                                 ``host.os.pretty_name`` / ``id``             host
Python version                     ``python.version`` ("3.9.18")                python
interpreter path                   ``python.executable``                        python
installed packages                 ``packages.installed`` {name: [records]}     packages
CANN installed                     ``cann.selected.version``                    cann
NPU driver / firmware              ``driver.driver.version``,                   driver
                                   ``driver.firmware.version``
chips                              ``devices.chips`` [{name, family,            devices
                                   soc_version}]
=================================  ==========================================  ============

Missing keys are normal (a probe failed, an older snapshot): :class:`Site` records them in
``missing`` and the planner says what it had to assume.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from npudoctor.snapshot import Snapshot

_PY_RE = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?")


def _get(d: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def python_xy(value: Any) -> Optional[str]:
    """``"3.9"`` from ``"3.9.18"``, ``"Python 3.9.18"``, ``[3, 9, 18]``, ``{"major": 3,
    "minor": 9}``; ``None`` for anything else."""
    if isinstance(value, dict):
        if isinstance(value.get("major"), int) and isinstance(value.get("minor"), int):
            return f"{value['major']}.{value['minor']}"
        value = value.get("version") or value.get("text")
    if isinstance(value, (list, tuple)) and len(value) >= 2 and all(isinstance(v, int) for v in value[:2]):
        return f"{value[0]}.{value[1]}"
    if isinstance(value, str):
        text = value.strip()
        if text.lower().startswith("python"):
            text = text[6:].strip()
        m = _PY_RE.match(text)
        if m:
            return f"{m.group(1)}.{m.group(2)}"
    return None


@dataclass
class Chip:
    """One NPU chip model found on the site (``name`` as in the npu-smi Name column)."""

    name: str
    family: Optional[str] = None
    soc_version: Optional[str] = None
    count: int = 1


@dataclass
class Site:
    """What the planner knows about the target machine.  ``missing`` lists the
    snapshot keys that were absent (``"host.glibc"``...)."""

    arch: Optional[str] = None
    arch_source: Optional[str] = None  # the snapshot key arch came from, see site_arch()
    glibc: Optional[str] = None
    os: Optional[str] = None
    python: Optional[str] = None  # "3.9"
    python_full: Optional[str] = None  # "3.9.18"
    executable: Optional[str] = None
    packages: Dict[str, str] = field(default_factory=dict)  # canonical name -> version
    cann: Optional[str] = None
    cann_path: Optional[str] = None
    driver: Optional[str] = None
    firmware: Optional[str] = None
    chips: List[Chip] = field(default_factory=list)
    node: str = ""
    source: str = ""
    missing: List[str] = field(default_factory=list)

    @property
    def chip(self) -> Optional[Chip]:
        """The chip model the packages are chosen for (the most numerous one)."""
        return max(self.chips, key=lambda c: c.count) if self.chips else None

    def summary(self) -> Dict[str, Any]:
        """JSON-able summary used in plans and manifests."""
        chip = self.chip
        return {
            "node": self.node,
            "arch": self.arch,
            "arch_source": self.arch_source,
            "glibc": self.glibc,
            "os": self.os,
            "python": self.python_full or self.python,
            "executable": self.executable,
            "cann": self.cann,
            "driver": self.driver,
            "firmware": self.firmware,
            "chip": chip.name if chip else None,
            "chip_family": chip.family if chip else None,
            "chip_count": sum(c.count for c in self.chips),
            "packages": {k: self.packages[k] for k in ("torch", "torch-npu", "numpy") if k in self.packages},
            "missing": list(self.missing),
        }


def _first_version(records: Any) -> Optional[str]:
    if isinstance(records, dict):
        records = [records]
    if isinstance(records, list):
        for rec in records:
            if isinstance(rec, dict) and isinstance(rec.get("version"), str):
                return rec["version"]
            if isinstance(rec, str):
                return rec
    if isinstance(records, str):
        return records
    return None


_ARCH_ALIASES = {"arm64": "aarch64", "aarch64": "aarch64", "x86_64": "x86_64", "amd64": "x86_64"}


def _arch(value: Any) -> Optional[str]:
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    return _ARCH_ALIASES.get(text.lower(), text)


def site_arch(facts: Dict[str, Any]) -> Tuple[Optional[str], Optional[str]]:
    """The site's CPU architecture and where the snapshot tells it: ``(arch, source)``,
    ``arch`` normalized to ``"aarch64"``/``"x86_64"`` (other names kept as given),
    ``source`` a human description naming the snapshot key; ``(None, None)`` when nothing
    tells.

    In order: ``host.arch`` (ELF machine of the system binaries, probes/host.py);
    ``python.machine`` (a snapshot collected with --root and no system binaries: the
    platform tags in the installed packages' WHEEL files, probes/python.py, which records
    that in ``python.machine_source``); ``cann.selected.arch`` (the ``<arch>-linux``
    directory or ascend_toolkit_install.info of the toolkit in use, probes/cann.py); the
    single arch every ``cann.toolkits`` record shares."""
    arch = _arch(_get(facts, "host", "arch"))
    if arch:
        return arch, "host.arch"
    arch = _arch(_get(facts, "python", "machine"))
    if arch:
        how = _get(facts, "python", "machine_source")
        told = f" ({how})" if isinstance(how, str) and how not in ("host.arch", "unknown") else ""
        return arch, f"python.machine{told}"
    arch = _arch(_get(facts, "cann", "selected", "arch"))
    if arch:
        return arch, "cann.selected.arch (the CANN toolkit in use)"
    toolkits = _get(facts, "cann", "toolkits")
    if isinstance(toolkits, list):
        found = {_arch(t.get("arch")) for t in toolkits if isinstance(t, dict)} - {None}
        if len(found) == 1:
            return found.pop(), "cann.toolkits[].arch (the installed CANN toolkits)"
    return None, None


def site_from_snapshot(snapshot: Snapshot, source: str = "", matrix: Any = None) -> Site:
    """Read the planner's facts out of ``snapshot``.  Never raises on odd facts.

    ``matrix`` (optional) fills a chip's family from ``Matrix.chip(name)`` when the
    devices probe did not record it."""
    from packaging.utils import canonicalize_name

    facts = snapshot.facts if isinstance(snapshot.facts, dict) else {}
    site = Site(node=snapshot.node, source=source)

    def want(value: Any, key: str) -> Any:
        if value in (None, "", [], {}):
            site.missing.append(key)
            return None
        return value

    site.arch, site.arch_source = site_arch(facts)
    if site.arch is None:
        site.missing.append("host.arch")
    # the target interpreter's libc (python.glibc) is what wheels load against
    glibc = _get(facts, "python", "glibc") or _get(facts, "host", "glibc")
    glibc = want(glibc, "host.glibc")
    site.glibc = glibc if isinstance(glibc, str) else None
    os_info = _get(facts, "host", "os")
    if isinstance(os_info, dict):
        site.os = os_info.get("pretty_name") or os_info.get("id")

    py = _get(facts, "python", "version")
    site.python = python_xy(py)
    if site.python is None:
        site.missing.append("python.version")
    else:
        site.python_full = py if isinstance(py, str) else site.python
    exe = _get(facts, "python", "executable")
    site.executable = exe if isinstance(exe, str) else None

    installed = _get(facts, "packages", "installed")
    if isinstance(installed, dict):
        for name, records in installed.items():
            version = _first_version(records)
            if isinstance(name, str) and version:
                site.packages[canonicalize_name(name)] = version
    else:
        site.missing.append("packages.installed")

    selected = _get(facts, "cann", "selected")
    if isinstance(selected, dict) and isinstance(selected.get("version"), str):
        site.cann = selected["version"]
        path = selected.get("path") or selected.get("home") or selected.get("root")
        site.cann_path = path if isinstance(path, str) else None
    elif "cann" not in facts:
        site.missing.append("cann")

    for key, attr in (("driver", "driver"), ("firmware", "firmware")):
        value = _get(facts, "driver", key, "version")
        if not value and key == "driver":  # the npu-smi table header "Version:"
            value = _get(facts, "devices", "npu_smi", "driver_version")
        if isinstance(value, str) and value.strip():
            setattr(site, attr, value.strip())
        else:
            site.missing.append(f"driver.{key}.version")

    chips = _get(facts, "devices", "chips")
    by_name: Dict[str, Chip] = {}
    if isinstance(chips, list):
        for rec in chips:
            if not isinstance(rec, dict):
                continue
            name = rec.get("name") or rec.get("chip_name")
            if not isinstance(name, str) or not name.strip():
                continue
            name = name.strip()
            if name in by_name:
                by_name[name].count += 1
                continue
            family = rec.get("family") if isinstance(rec.get("family"), str) else None
            soc = rec.get("soc_version") if isinstance(rec.get("soc_version"), str) else None
            if matrix is not None and (family is None or soc is None):
                try:
                    info = matrix.chip(name)
                except Exception:  # a matrix that cannot answer is no reason to fail
                    info = None
                if info is not None:
                    family = family or getattr(info, "family", None)
                    soc = soc or getattr(info, "soc_version", None)
            by_name[name] = Chip(name=name, family=family, soc_version=soc)
    site.chips = list(by_name.values())
    if not site.chips:
        site.missing.append("devices.chips")
    return site
