"""Typed views of the ``environment``, ``libraries``, ``container`` and ``hygiene`` sections
(shapes documented in the probe modules of the same names)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from npudoctor.facts._typed import JSON
from npudoctor.facts._view import View, field

if TYPE_CHECKING:
    from typing import Dict, Optional, Tuple


def _doc(text: str) -> Dict[str, str]:
    return {"doc": text}


# --- environment -------------------------------------------------------------------------


class EnvToolkit(View):
    """The toolkit whose ``set_env.sh`` is interpreted."""

    path: Optional[str] = None
    version: Optional[str] = None
    resolved: Optional[str] = None
    source: Optional[str] = None
    set_env: Optional[str] = None


class ExpectedNnal(View):
    """What NNAL's ``set_env.sh`` would add."""

    atb_home: Optional[str] = None
    abi: Optional[int] = None
    abi_dirs: Tuple[str, ...] = ()
    script: Optional[str] = None


class UnsupportedLine(View):
    """A line of ``set_env.sh`` npudoctor could not interpret (``line`` < 1 in snapshots
    from before ``fallback``: the reason the documented variables were used)."""

    line: Optional[int] = None
    text: Optional[str] = None


class Expected(View):
    """What ``set_env.sh`` of the toolkit (and NNAL's) would set (read, never run)."""

    toolkit: Optional[str] = None
    method: Optional[str] = field(default=None, metadata=_doc('"set_env.sh" | "set_env.sh (rebased)" | "documented"'))
    script: Optional[str] = None
    unsupported: Tuple[UnsupportedLine, ...] = ()
    fallback: Optional[str] = field(default=None, metadata=_doc("why the documented variables were used"))
    variables: Dict[str, str] = field(default_factory=dict)
    added: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    nnal: Optional[ExpectedNnal] = None
    driver: Optional[str] = None


class PathRead(View):
    """How the diagnosed root resolves one path the environment rules compare."""

    resolved: Optional[str] = None
    exists: Optional[bool] = None
    is_dir: Optional[bool] = field(default=None, metadata=_doc("None: not recorded (older snapshots)"))


class ToolkitPython(View):
    """CANN's own Python packages inside the toolkit."""

    site_packages: Optional[str] = None
    te: Optional[str] = None
    tbe: Optional[str] = None


class EnvNnal(View):
    """NNAL's variables: expected against current."""

    path: Optional[str] = None
    version: Optional[str] = None
    expected_atb_home: Optional[str] = None
    current_atb_home: Optional[str] = None
    current_abi: Optional[int] = None
    torch_cxx11_abi: Optional[bool] = None
    torch_abi_source: Optional[str] = None
    abi_dirs: Tuple[str, ...] = ()
    script: Optional[str] = None


class EnvironmentFacts(View):
    """What ``set_env.sh`` would set against what the diagnosed environment holds."""

    toolkit: Optional[EnvToolkit] = None
    expected: Optional[Expected] = None
    arch: Optional[str] = None
    arch_source: Optional[str] = None
    set_env_script: Optional[str] = None
    current: Dict[str, str] = field(default_factory=dict)
    paths: Dict[str, PathRead] = field(
        default_factory=dict, metadata=_doc("how the root resolves each value compared (rules/_env_vars.py)")
    )
    toolkit_python: Optional[ToolkitPython] = None
    nnal: Optional[EnvNnal] = None
    torch_cxx11_abi: Optional[bool] = None


# --- libraries ---------------------------------------------------------------------------


class LibTorchNpu(View):
    version: Optional[str] = None
    location: Optional[str] = None
    package_dir: Optional[str] = None


class LibTorch(View):
    version: Optional[str] = None
    lib_dir: Optional[str] = None


class ElfObject(View):
    """One ELF file read: its dynamic section."""

    path: str = ""
    soname: Optional[str] = None
    needed: Tuple[str, ...] = ()
    rpath: Tuple[str, ...] = ()
    runpath: Tuple[str, ...] = ()
    version_needs: Dict[str, Tuple[str, ...]] = field(
        default_factory=dict, metadata=_doc("library → the symbol versions needed from it")
    )
    error: Optional[str] = None


class FoundAt(View):
    """Where a missing library is on disk."""

    path: str = ""
    where: str = field(default="", metadata=_doc('"selected toolkit", "driver", "NNAL ...", "CANN <version> ..."'))
    usable: bool = field(default=True, metadata=_doc("the loader could use it (right architecture and class)"))


class Loader(View):
    """The dynamic loader's search path of the diagnosed machine."""

    ld_library_path: Tuple[str, ...] = ()
    cache: JSON = field(default=None, metadata=_doc('ld.so.cache: {"path", "format", "entries", "error"}'))
    conf_dirs: Tuple[str, ...] = ()
    default_dirs: Tuple[str, ...] = ()
    hwcaps: Tuple[str, ...] = field(
        default=(), metadata=_doc("glibc-hwcaps subdirectories searched first in each directory (x86-64-v3, ...)")
    )


class Resolution(View):
    """How one ``DT_NEEDED`` entry resolves, as ``ld.so`` would."""

    name: str = ""
    needed_by: Tuple[str, ...] = field(default=(), metadata=_doc("the objects whose DT_NEEDED names it"))
    status: Optional[str] = field(default=None, metadata=_doc('"found" | "torch" | "missing" | "system-unknown"'))
    path: Optional[str] = None
    via: Optional[str] = None
    found_at: Tuple[FoundAt, ...] = ()
    optional: bool = False


class Glibc(View):
    provided: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    providers: Dict[str, Optional[str]] = field(default_factory=dict)
    defined: Dict[str, Tuple[str, ...]] = field(
        default_factory=dict, metadata=_doc("every symbol version each provider defines")
    )
    root_has_libc: Optional[bool] = None


class SymbolCheck(View):
    """Undefined symbols of ``object`` against the exports of ``against``."""

    object: Optional[str] = None
    against: Tuple[str, ...] = ()
    checked: Optional[int] = None
    missing_count: Optional[int] = None
    missing: Tuple[str, ...] = ()
    error: Optional[str] = None
    package: Optional[str] = None
    links: Tuple[str, ...] = ()
    unresolved: Tuple[str, ...] = field(
        default=(), metadata=_doc("an extension's DT_NEEDED entries that do not resolve after import torch_npu")
    )


class Symbols(View):
    torch: Optional[SymbolCheck] = None
    atb: Optional[SymbolCheck] = None
    cann: Optional[SymbolCheck] = None
    extensions: Tuple[SymbolCheck, ...] = ()


class StackObject(View):
    """One ELF file of the rest of the NPU stack (toolkit, NNAL, driver, npu-smi) or an
    extension module of the interpreter, with what the loader would say about it."""

    path: str = ""
    where: Optional[str] = field(
        default=None, metadata=_doc('"toolkit lib64" | "toolkit bin" | "NNAL" | "driver" | "npu-smi" | "extension"')
    )
    unresolved: Tuple[str, ...] = field(default=(), metadata=_doc("DT_NEEDED names found on no loader path"))
    version_needs: Dict[str, Tuple[str, ...]] = field(
        default_factory=dict, metadata=_doc("base-system library → the highest version needed of each family")
    )
    error: Optional[str] = field(default=None, metadata=_doc("why the file is not a loadable ELF file here"))


class Shadowed(View):
    """A library of CANN, NNAL or the driver the loader finds first in another place."""

    name: str = ""
    taken: str = field(default="", metadata=_doc("the copy the loader takes"))
    via: Optional[str] = field(default=None, metadata=_doc('"LD_LIBRARY_PATH" | "ld.so.cache" | "default dirs" | ...'))
    copies: Tuple[str, ...] = field(default=(), metadata=_doc("the owner's files of that name"))
    needed_by: Tuple[str, ...] = ()
    taken_by: Optional[str] = field(default=None, metadata=_doc('"<dist> <version>" whose RECORD lists the copy'))


class ElfCacheUse(View):
    """Parsed ELF facts reused from the on-disk cache (hits) or read (misses)."""

    hits: Optional[int] = None
    misses: Optional[int] = None


class LibrariesFacts(View):
    """Will torch_npu's binaries load, and do their symbols match?"""

    torch_npu: Optional[LibTorchNpu] = None
    torch: Optional[LibTorch] = None
    torch_cxx11_abi: Optional[bool] = None
    abi_source: Optional[str] = None
    roots: Tuple[str, ...] = ()
    objects: Tuple[ElfObject, ...] = ()
    resolution: Tuple[Resolution, ...] = ()
    missing: Tuple[str, ...] = ()
    loader: Optional[Loader] = None
    glibc: Optional[Glibc] = None
    symbols: Optional[Symbols] = None
    stack: Tuple[StackObject, ...] = ()
    stack_ld_library_path: Tuple[str, ...] = field(
        default=(),
        metadata=_doc("LD_LIBRARY_PATH the stack was resolved with: the environment's, then what set_env.sh adds"),
    )
    stack_shadowed: Tuple[Shadowed, ...] = ()
    stack_found_at: Dict[str, Tuple[FoundAt, ...]] = field(
        default_factory=dict, metadata=_doc("where the stack's unresolved libraries are on disk")
    )
    elf_cache: Optional[ElfCacheUse] = None
    atb_plugin: Optional[str] = None
    duration: Optional[float] = None
    errors: Tuple[str, ...] = ()


# --- container ---------------------------------------------------------------------------


class Mount(View):
    """A driver piece a container needs."""

    path: str = ""
    exists: Optional[bool] = field(default=None, metadata=_doc("None: not recorded"))
    what: Optional[str] = None
    required: bool = False


class DeviceCgroup(View):
    path: Optional[str] = None
    entries: Tuple[str, ...] = ()
    allow_all: Optional[bool] = None


class Launcher(View):
    """What started the diagnosed environment (systemd, Slurm, Ray) and the variable that says so."""

    name: str = field(default="", metadata=_doc('"systemd" | "slurm" | "ray"'))
    evidence: Optional[str] = None
    unit: Optional[str] = field(default=None, metadata=_doc("systemd: the service its cgroup names"))


class Capabilities(View):
    """The capability sets and effective ids of ``/proc/self/status`` (as read: hex masks)."""

    source: Optional[str] = None
    cap_eff: Optional[str] = field(default=None, metadata=_doc('CapEff, hex as read ("0000000000000000")'))
    cap_prm: Optional[str] = None
    cap_bnd: Optional[str] = None
    uid: Optional[int] = field(default=None, metadata=_doc("effective uid (second field of Uid:)"))
    gid: Optional[int] = None
    groups: Tuple[int, ...] = ()


class ContainerFacts(View):
    """Are we inside a container, which runtime, and are the driver files mounted."""

    world: Optional[str] = field(
        default=None,
        metadata=_doc('"build" | "pod" | "container" | "host" (None: snapshots from before it was recorded)'),
    )
    launched_by: Tuple[Launcher, ...] = ()
    build_markers: Tuple[str, ...] = field(default=(), metadata=_doc("why this looks like an image build step"))
    capabilities: Optional[Capabilities] = None

    in_container: bool = False
    runtime: Optional[str] = None
    kubernetes: bool = False
    evidence: Tuple[str, ...] = ()
    driver_dir: Optional[bool] = None
    mounts: Tuple[Mount, ...] = ()
    npu_smi_paths: Tuple[str, ...] = ()
    device_cgroup: Optional[DeviceCgroup] = None
    privileged: Optional[bool] = None


# --- hygiene -----------------------------------------------------------------------------


class DiskTarget(View):
    """Free space where CANN writes caches and logs."""

    purpose: Optional[str] = None
    path: Optional[str] = None
    variable: Optional[str] = None
    checked: Optional[str] = None
    exists: Optional[bool] = None
    writable: Optional[bool] = None
    free_bytes: Optional[int] = None
    total_bytes: Optional[int] = None
    mount: Optional[str] = None
    source: Optional[str] = None
    error: Optional[str] = None


class Libgomp(View):
    """aarch64 conda libgomp (static TLS) facts."""

    arch: Optional[str] = None
    conda_prefix: Optional[str] = None
    path: Optional[str] = None
    exists: bool = False
    ld_preload: str = ""
    preloaded: bool = False


class HygieneFacts(View):
    disk: Tuple[DiskTarget, ...] = ()
    libgomp: Optional[Libgomp] = None


# --- tunables ----------------------------------------------------------------------------


class TunableDir(View):
    """A directory a tunable names, as the root resolves it."""

    path: Optional[str] = None
    exists: Optional[bool] = None
    parent_exists: Optional[bool] = None


class TunablesFacts(View):
    """The runtime tunables set in the diagnosed environment (probes/tunables.py)."""

    variables: Dict[str, str] = field(default_factory=dict, metadata=_doc("watched variables that are set"))
    dirs: Dict[str, TunableDir] = field(default_factory=dict, metadata=_doc("directories created with one mkdir"))


# --- host_limits -------------------------------------------------------------------------


class ShmMount(View):
    """The /dev/shm mount line."""

    source: Optional[str] = None
    fstype: Optional[str] = None
    size_bytes: Optional[int] = field(default=None, metadata=_doc("None: no size= (tmpfs default: half the RAM)"))
    options: Optional[str] = None


class ProcessLimits(View):
    """Resource limits of /proc/self/limits (-1: unlimited)."""

    source: Optional[str] = None
    memlock_soft: Optional[int] = None
    memlock_hard: Optional[int] = None
    nofile_soft: Optional[int] = None
    nofile_hard: Optional[int] = None


class ThpMode(View):
    source: Optional[str] = None
    mode: Optional[str] = field(default=None, metadata=_doc('"always" | "madvise" | "never"'))


class AllowedCpus(View):
    """``Cpus_allowed_list`` of /proc/self/status (the cpuset the process may run on)."""

    source: Optional[str] = None
    allowed_list: Optional[str] = None
    allowed_count: Optional[int] = None


class OnlineCpus(View):
    """``/sys/devices/system/cpu/online``."""

    source: Optional[str] = None
    cpu_list: Optional[str] = None
    count: Optional[int] = None


class CpuQuota(View):
    """The cgroup CPU quota (cpu.max, or v1 cfs_quota_us / cfs_period_us)."""

    source: Optional[str] = None
    cores: Optional[float] = field(default=None, metadata=_doc("None: no quota"))


class HostLimitsFacts(View):
    """Host readiness read from files (probes/host_limits.py)."""

    cpus: Optional[AllowedCpus] = None
    online: Optional[OnlineCpus] = None
    cpu_quota: Optional[CpuQuota] = None
    shm: Optional[ShmMount] = None
    limits: Optional[ProcessLimits] = None
    thp: Optional[ThpMode] = None
    mem_total_bytes: Optional[int] = None
    errors: Dict[str, str] = field(default_factory=dict)
