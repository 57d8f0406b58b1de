"""Typed views of the ``host``, ``python`` and ``packages`` sections (shapes documented in
:mod:`npudoctor.probes.host`, :mod:`npudoctor.probes.python`, :mod:`npudoctor.probes.packages`)."""

from __future__ import annotations

import re
from functools import cached_property
from typing import Dict, Optional, Tuple

from npudoctor.facts._typed import JSON
from npudoctor.facts._view import View, field
from npudoctor.parsers.metadata import canonical_name


class OsRelease(View):
    """/etc/os-release of the diagnosed machine."""

    id: Optional[str] = None
    version_id: Optional[str] = None
    pretty_name: Optional[str] = None
    source: Optional[str] = None


class Identity(View):
    """The account whose access is judged (``--user``, else ``$USER`` in the root, else this process)."""

    uid: Optional[int] = None
    gid: Optional[int] = None
    groups: Tuple[int, ...] = ()
    group_names: Dict[str, str] = field(default_factory=dict)
    """gid (as a string) → group name"""
    name: Optional[str] = None
    has_passwd_entry: Optional[bool] = None
    source: Optional[str] = None


class AccessFacts(View):
    """What the probing process could not read (``engine.collect``, from ``Host.denied``):
    unreadable is not absent.  ``denied`` holds the first component refused on each path
    (a directory it may not search or list, or a file it may not read)."""

    uid: Optional[int] = None
    """effective uid of the probing process"""
    gid: Optional[int] = None
    denied: Tuple[str, ...] = ()

    def blocking(self, path: Optional[str]) -> Optional[str]:
        """The refused path that is ``path`` or one of its parent directories, or ``None``."""
        if not path:
            return None
        for denied in self.denied:
            if path == denied or path.startswith(denied.rstrip("/") + "/"):
                return denied
        return None


class HostFacts(View):
    """Architecture, OS, glibc, host name and the judged account."""

    arch: Optional[str] = None
    """"aarch64" | "x86_64" | None"""
    arch_source: Optional[str] = None
    os: OsRelease = field(default_factory=OsRelease)
    glibc: Optional[str] = None
    '"2.31"'
    hostname: Optional[str] = None
    cwd: Optional[str] = None
    identity: Identity = field(default_factory=Identity)


class Shadowing(View):
    """Whether ``import NAME`` would take a copy in the working directory."""

    origin: Optional[str] = None
    origin_in_cwd: Optional[bool] = None
    has_extension: Optional[bool] = None
    installed: Optional[str] = None
    shadowed: Optional[bool] = None


class PythonEnvironment(View):
    """An environment found under ``--root``."""

    prefix: Optional[str] = None
    kind: Optional[str] = None
    version: Optional[str] = None
    site_packages: Tuple[str, ...] = ()
    has_torch: Optional[bool] = None
    has_torch_npu: Optional[bool] = None


class PythonFacts(View):
    """The target interpreter (``source``: "live" | "--python" | "root")."""

    source: Optional[str] = None
    requested: Optional[str] = None
    """the --python given (source "--python")"""
    error: Optional[str] = None
    """why the interpreter could not be inspected"""
    version: Optional[str] = None
    version_info: Tuple[int, ...] = ()
    version_source: Optional[str] = None
    releaselevel: Optional[str] = None
    """"final" | "candidate" | ... (live only)"""
    implementation: Optional[str] = None
    machine: Optional[str] = None
    bits: Optional[int] = None
    """pointer size: 64 | 32 (live only)"""
    machine_source: Optional[str] = None
    executable: Optional[str] = None
    prefix: Optional[str] = None
    base_prefix: Optional[str] = None
    exec_prefix: Optional[str] = None
    base_executable: Optional[str] = None
    is_venv: Optional[bool] = None
    conda_prefix: Optional[str] = None
    conda_env: Optional[str] = None
    site_packages: Tuple[str, ...] = ()
    user_site: Optional[str] = None
    user_site_enabled: Optional[bool] = None
    sys_path: Tuple[str, ...] = ()
    """import order ("" = current directory)"""
    glibc: Optional[str] = None
    soabi: Optional[str] = None
    """"cpython-311-x86_64-linux-gnu" (live only)"""
    cwd: Optional[str] = None
    cwd_source: Optional[str] = None
    shadowing: Dict[str, Shadowing] = field(default_factory=dict)
    environments: Tuple[PythonEnvironment, ...] = ()

    @property
    def minor(self) -> Optional[Tuple[int, int]]:
        """``(3, 10)`` or ``None`` when the version is unknown."""
        if len(self.version_info) >= 2:
            return (self.version_info[0], self.version_info[1])
        return None

    @property
    def short(self) -> Optional[str]:
        """``"3.10"``: X.Y of the target interpreter from ``version_info``, else from the
        ``version`` text; ``None`` when neither says."""
        if self.minor is not None:
            return f"{self.minor[0]}.{self.minor[1]}"
        m = re.match(r"^([0-9]+)\.([0-9]+)", self.version or "")
        return f"{m.group(1)}.{m.group(2)}" if m else None

    @property
    def interpreter_path(self) -> str:
        """The interpreter every fix names (a path as on the diagnosed machine, unquoted):
        one answer for all rules, so PKG001..PKG007 and PY00x never disagree.

        ``executable`` (the live/``--python`` interpreter, or the one found under
        ``--root``: ``/usr/local/python3.10.14/bin/python3.10``, ``<venv>/bin/python3.10``),
        else ``--python`` as given, else (``--root`` trees that leave the binary out) the
        interpreter every such prefix has: ``<prefix>/bin/python`` of a venv or conda env
        (``python -m venv`` and conda's python package create it),
        ``<prefix>/bin/pythonX.Y`` of any other prefix whose ``lib/pythonX.Y`` was found
        (CPython's install creates it: ``/usr/local/python3.11.13/bin/python3.11``) --
        ``/usr/bin/pythonX.Y`` for Debian's ``dist-packages`` under /usr or /usr/local --, else
        ``python3`` (the interpreter is unknown).
        """
        exe = self.executable or self.requested
        prefix = (self.prefix or "").rstrip("/")
        if not exe and prefix:
            short = self.short
            dist_packages = any(d.endswith("/dist-packages") for d in self.site_packages)
            if self.is_venv or self.conda_prefix:
                exe = prefix + "/bin/python"
            elif short and prefix in ("/usr", "/usr/local") and dist_packages:
                exe = f"/usr/bin/python{short}"  # Debian/Ubuntu: /usr/local/lib/pythonX.Y/dist-packages is /usr/bin's
            elif short:
                exe = f"{prefix}/bin/python{short}"
        return exe or "python3"


class Distribution(View):
    """One installed distribution (a ``.dist-info`` or ``.egg-info``), from metadata only."""

    name: str = ""
    version: Optional[str] = None
    location: Optional[str] = None
    dist_info: Optional[str] = None
    kind: Optional[str] = None
    metadata: Optional[str] = None
    requires_dist: Tuple[str, ...] = ()
    requires_python: Optional[str] = None
    wheel_tags: Tuple[str, ...] = ()
    installer: Optional[str] = None
    user_site: bool = False
    editable: bool = False
    metadata_error: Optional[str] = None
    direct_url: JSON = None

    @property
    def metadata_source(self) -> str:
        """The file the version was read from: ``metadata``, else ``<dist_info>/METADATA``
        (``PKG-INFO`` of an egg-info; ``location`` when the directory is unknown, ``?``
        when both are)."""
        if self.metadata:
            return self.metadata
        path = self.dist_info or self.location or "?"
        return f"{path}/PKG-INFO" if self.kind == "egg-info" else f"{path}/METADATA"


class Duplicate(View):
    """A distribution name with more than one record."""

    name: str = ""
    versions: Tuple[Optional[str], ...] = ()
    dist_infos: Tuple[str, ...] = ()
    locations: Tuple[str, ...] = ()


class PipConfig(View):
    """Where pip would download from."""

    index_url: Optional[str] = None
    index_source: Optional[str] = None
    extra_index_urls: Tuple[str, ...] = ()
    files: Tuple[str, ...] = ()
    errors: Tuple[str, ...] = ()


class PackagesFacts(View, dict=True):  # dict: for the cached index (by_project)
    """Installed distributions of the target interpreter."""

    installed: Dict[str, Tuple[Distribution, ...]] = field(default_factory=dict)
    """canonical name → records in sys.path order (the first one is imported)"""
    duplicates: Tuple[Duplicate, ...] = ()
    modules: Dict[str, Optional[str]] = field(default_factory=dict)
    scanned: Tuple[str, ...] = ()
    count: Optional[int] = None
    errors: Tuple[str, ...] = ()
    indexed_only: int = 0
    """records from the directory name alone (huge site dirs)"""
    interpreter: JSON = None
    pip_config: PipConfig = field(default_factory=PipConfig)
    skipped: Optional[str] = None
    """why nothing was scanned (no interpreter)"""

    def records(self, *names: str) -> Tuple[Distribution, ...]:
        """Every record of the projects ``names`` (any spelling: ``torch_npu`` =
        ``torch-npu``; each project once), in import order; ``()`` when none is installed."""
        seen = []
        for name in names:
            want = canonical_name(name)
            if want not in seen:
                seen.append(want)
        return tuple(rec for want in seen for rec in self.by_project.get(want, ()))

    def first(self, name: str) -> Optional[Distribution]:
        """The record ``import`` would see for project ``name`` (any spelling), or ``None``."""
        records = self.records(name)
        return records[0] if records else None

    @cached_property
    def by_project(self) -> Dict[str, Tuple[Distribution, ...]]:
        """Records per canonical project name, built once (keys written under another
        spelling, e.g. by an older snapshot, are folded in)."""
        out: Dict[str, Tuple[Distribution, ...]] = {}
        for key, recs in self.installed.items():
            want = canonical_name(key)
            out[want] = out.get(want, ()) + tuple(recs)
        return out

    @property
    def torch_npu(self) -> Optional[Distribution]:
        """The torch_npu record ``import torch_npu`` sees, or ``None``."""
        return self.first("torch-npu")

    @property
    def torch_version(self) -> Optional[str]:
        """The installed torch version (``2.1.0+cpu``; ``""`` when its metadata names none),
        or ``None`` when torch is not installed."""
        torch = self.first("torch")
        return (torch.version or "") if torch is not None else None

    def version_of(self, name: str) -> Optional[str]:
        """The version of the installed project ``name`` (any spelling), or ``None`` when
        it is not installed or its metadata names no version."""
        record = self.first(name)
        return record.version if record is not None and record.version else None

    def effective(self) -> Tuple[Distribution, ...]:
        """The record ``import`` sees of every installed project (the first of each)."""
        return tuple(recs[0] for recs in self.installed.values() if recs)
