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
chips                              ``devices.chips`` [{name, soc_version,       devices
                                   soc_source}]; what a chip is (family, SoC)
                                   from the current matrix
=================================  ==========================================  ============

Every key is read through the typed views (:class:`npudoctor.facts.Facts`).  Missing keys
are normal (a probe failed, an older snapshot): :class:`Site` records them in ``missing``
and the planner says what it had to assume.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from npudoctor import lazyre
from npudoctor.facts import Facts
from npudoctor.facts.devices import Chip as DeviceChip
from npudoctor.knowledge.matrix import Matrix
from npudoctor.record import MutableRecord, field
from npudoctor.snapshot import Snapshot

_PY_RE = lazyre.pattern(r"^(\d+)\.(\d+)(?:\.(\d+))?")


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


class Chip(MutableRecord):
    """One NPU chip model found on the site (``name`` as in the npu-smi Name column)."""

    name: str
    family: Optional[str] = None
    soc_version: Optional[str] = None
    count: int = 1


class Site(MutableRecord):
    """What the planner knows about the target machine.  ``missing`` lists the
    snapshot keys that were absent (``"host.glibc"``...)."""

    arch: Optional[str] = None
    arch_source: Optional[str] = None  # the snapshot key arch came from, see site_arch()
    glibc: Optional[str] = None
    os: Optional[str] = None
    python: Optional[str] = None  # "3.9"
    python_full: Optional[str] = None  # "3.9.18"
    executable: Optional[str] = None
    packages: Dict[str, str] = field(default_factory=dict)
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


_ARCH_ALIASES = {"arm64": "aarch64", "aarch64": "aarch64", "x86_64": "x86_64", "amd64": "x86_64"}


def _arch(value: Optional[str]) -> Optional[str]:
    if not value or not value.strip():
        return None
    text = value.strip()
    return _ARCH_ALIASES.get(text.lower(), text)


def site_arch(facts: Facts) -> Tuple[Optional[str], Optional[str]]:
    """The site's CPU architecture and where the snapshot tells it: ``(arch, source)``,
    ``arch`` normalized to ``"aarch64"``/``"x86_64"`` (other names kept as given),
    ``source`` a human description naming the snapshot key; ``(None, None)`` when nothing
    tells.  ``facts``: the snapshot's typed views.

    In order: ``host.arch`` (ELF machine of the system binaries, probes/host.py);
    ``python.machine`` (a snapshot collected with --root and no system binaries: the
    platform tags in the installed packages' WHEEL files, probes/python.py, which records
    that in ``python.machine_source``); ``cann.selected.arch`` (the ``<arch>-linux``
    directory or ascend_toolkit_install.info of the toolkit in use, probes/cann.py); the
    single arch every ``cann.toolkits`` record shares."""
    arch = _arch(facts.host.arch)
    if arch:
        return arch, "host.arch"
    arch = _arch(facts.python.machine)
    if arch:
        how = facts.python.machine_source
        told = f" ({how})" if how and how not in ("host.arch", "unknown") else ""
        return arch, f"python.machine{told}"
    selected = facts.cann.selected
    arch = _arch(selected.arch) if selected is not None else None
    if arch:
        return arch, "cann.selected.arch (the CANN toolkit in use)"
    found = {_arch(t.arch) for t in facts.cann.toolkits} - {None}
    if len(found) == 1:
        return found.pop(), "cann.toolkits[].arch (the installed CANN toolkits)"
    return None, None


def _chip_identity(matrix: Optional[Matrix], chip: DeviceChip) -> Tuple[Optional[str], Optional[str]]:
    """``(family, soc_version)`` of a chip judged now by the current matrix
    (:func:`npudoctor.knowledge.chips.chip_identity`: a SoC npu-smi measured is kept, the
    family always comes from the matrix; a family an older snapshot stored is ignored)."""
    from npudoctor.knowledge.chips import chip_identity

    identity = chip_identity(matrix, chip)
    family, soc = identity.get("family"), identity.get("soc_version")
    return (family if isinstance(family, str) else None), (soc if isinstance(soc, str) else None)


def site_from_snapshot(snapshot: Snapshot, source: str = "", matrix: Optional[Matrix] = None) -> Site:
    """Read the planner's facts out of ``snapshot`` (through its typed views,
    :class:`npudoctor.facts.Facts`).  Never raises on odd facts: a value of the wrong type
    counts as missing.

    ``matrix``: the current matrix, which says what each chip is (its family and, unless
    npu-smi measured it, its SoC); without one, a chip's family is unknown here (the
    resolver asks its matrix again)."""
    from packaging.utils import canonicalize_name

    facts = Facts(snapshot.facts)
    site = Site(node=snapshot.node, source=source)

    site.arch, site.arch_source = site_arch(facts)
    if site.arch is None:
        site.missing.append("host.arch")
    host, python = facts.host, facts.python
    # the target interpreter's libc (python.glibc) is what wheels load against
    site.glibc = python.glibc or host.glibc or None
    if site.glibc is None:
        site.missing.append("host.glibc")
    site.os = host.os.pretty_name or host.os.id

    site.python = python_xy(python.version)
    if site.python is None:
        site.missing.append("python.version")
    else:
        site.python_full = python.version
    site.executable = python.executable

    if facts.present("packages") and not any(p.startswith("installed:") for p in facts.problems("packages")):
        for name, records in facts.packages.installed.items():
            version = next((rec.version for rec in records if rec.version), None)
            if version:
                site.packages[canonicalize_name(name)] = version
    else:
        site.missing.append("packages.installed")

    selected = facts.cann.selected
    if selected is not None and selected.version is not None:
        site.cann = selected.version
        site.cann_path = selected.path or None
    elif not facts.present("cann"):
        site.missing.append("cann")

    driver = facts.driver.driver.version or facts.devices.npu_smi.driver_version  # the npu-smi header "Version:"
    firmware = facts.driver.firmware.version
    for key, value in (("driver", driver), ("firmware", firmware)):
        if value and value.strip():
            setattr(site, key, value.strip())
        else:
            site.missing.append(f"driver.{key}.version")

    by_name: Dict[str, Chip] = {}
    for rec in facts.devices.chips:
        name = (rec.name or "").strip()
        if not name:
            continue
        if name in by_name:
            by_name[name].count += 1
            continue
        family, soc = _chip_identity(matrix, rec)
        by_name[name] = Chip(name=name, family=family, soc_version=soc)
    site.chips = list(by_name.values())
    if not site.chips:
        site.missing.append("devices.chips")
    return site
