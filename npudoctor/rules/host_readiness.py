"""Host readiness: /dev/shm size, locked-memory and open-files limits, THP.

Reads ``host_limits`` (probes/host_limits.py: files, live and under ``--root`` alike) and
``container`` (the world the process runs in, so the fix is phrased for docker, a pod, a
systemd service or the host).  Codes HOST006 (small /dev/shm), HOST007 (small memlock),
HOST008 (low open-files limit), HOST009 (THP never), HOST010 (OpenMP threads x ranks
over the allowed cores), HOST011 (strict memory overcommit), HOST012 (CPU governor not
performance), HOST013 (the allowed CPUs on no NUMA node of the NPUs), HOST014 (a host
kernel older than msprechecker's minimum).  Healthy facts stay quiet: a host's
/dev/shm without ``size=`` (half the RAM), unlimited or raised limits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.knowledge.host_readiness import kernel_floor
from npudoctor.parsers.numbers import strtol
from npudoctor.parsers.topo import parse_cpus
from npudoctor.remedies import Command, DockerFlags, Export, PodSpecField, Remedy, SystemdSetting
from npudoctor.rules import rule
from npudoctor.rules._devfacts import stack_present

if TYPE_CHECKING:
    from typing import Dict, Iterable, List, Optional, Set, Tuple, Union

    from npudoctor.context import RuleContext

READS = ("cann", "container", "devices", "driver", "host_limits", "numa", "packages", "tunables")
ONLY_WITH = ("host_limits",)

SHM_SMALL = codes.get("HOST006")
MEMLOCK_SMALL = codes.get("HOST007")
NOFILE_LOW = codes.get("HOST008")
THP_NEVER = codes.get("HOST009")
OMP_OVER = codes.get("HOST010")
OVERCOMMIT_STRICT = codes.get("HOST011")
GOVERNOR = codes.get("HOST012")
NUMA_AWAY = codes.get("HOST013")
KERNEL_OLD = codes.get("HOST014")

#: Below this /dev/shm is too small for a training job (DeepSpeed env_report's threshold).
SHM_MIN = 512 << 20
#: Below this the locked-memory limit is one of the small defaults (64 KiB, 8 MiB).
MEMLOCK_MIN = 64 << 20
#: At or below this the open-files limit is the login default range.
NOFILE_MIN = 4096


def _size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.0f} {unit}"
    return f"{n} bytes"


@rule
def shm_size(ctx: RuleContext) -> Iterable[Finding]:
    """HOST006: /dev/shm smaller than 512 MiB."""
    if not stack_present(ctx.view):
        return  # limits for NPU training: a machine without an NPU stack (HOST050) hears nothing of them
    shm = ctx.view.host_limits.shm
    if shm is None or shm.size_bytes is None or shm.size_bytes >= SHM_MIN:
        return
    where = ctx.view.container.runs_in
    fix: List[Union[Remedy, str]]
    if where == "pod":
        fix = [
            PodSpecField("volumes", "[{name: dshm, emptyDir: {medium: Memory, sizeLimit: 16Gi}}]"),
            PodSpecField("containers[0].volumeMounts", "[{name: dshm, mountPath: /dev/shm}]"),
        ]
    elif where in ("container", "build"):
        fix = [
            DockerFlags(
                shm_size="16g",
                lead="recreate the container with your usual `docker run` arguments and: ",
                note="or --ipc=host to share the host's",
            )
        ]
    else:
        fix = [
            Command(("mount", "-o", "remount,size=16G", "/dev/shm"), note="as root; add size= to /etc/fstab to keep it")
        ]
    yield SHM_SMALL.finding(
        title=f"/dev/shm is {_size(shm.size_bytes)}: DataLoader workers die with a bus error when it fills",
        evidence=[
            f"{shm.source}: /dev/shm {shm.fstype or ''} {shm.options or ''}".rstrip(),
            f"below {_size(SHM_MIN)} (DeepSpeed env_report's threshold; Docker's default is 64 MB)",
            f"runs in: {where}",
        ],
        fix=fix,
        subject="/dev/shm",
        data={"size_bytes": shm.size_bytes},
    )


@rule
def memlock_limit(ctx: RuleContext) -> Iterable[Finding]:
    """HOST007: RLIMIT_MEMLOCK below 64 MiB."""
    if not stack_present(ctx.view):
        return  # limits for NPU training: a machine without an NPU stack (HOST050) hears nothing of them
    lim = ctx.view.host_limits.limits
    if lim is None or lim.memlock_soft is None or lim.memlock_soft < 0 or lim.memlock_soft >= MEMLOCK_MIN:
        return
    where = ctx.view.container.runs_in
    unit = ctx.view.container.systemd_unit
    fix: List[Union[Remedy, str]]
    if unit:
        fix = [SystemdSetting(unit, "LimitMEMLOCK", "infinity", note=f"then systemctl restart {unit}")]
    elif where == "pod":
        fix = [
            SystemdSetting(
                "containerd.service", "LimitMEMLOCK", "infinity", note="on each node: the runtime's limit is the pod's"
            )
        ]
    elif where in ("container", "build"):
        fix = [
            DockerFlags(
                ulimits=("memlock=-1",), lead="recreate the container with your usual `docker run` arguments and: "
            )
        ]
    else:
        fix = ["Add `* - memlock unlimited` to a file in /etc/security/limits.d/ and log in again"]
    hard = "unlimited" if lim.memlock_hard == -1 else _size(lim.memlock_hard or 0)
    yield MEMLOCK_SMALL.finding(
        title=f"The locked-memory limit is {_size(lim.memlock_soft)}: pinned memory and RDMA registration fail",
        evidence=[f"{lim.source}: Max locked memory soft {lim.memlock_soft} bytes, hard {hard}", f"runs in: {where}"],
        fix=fix,
        severity="warning" if where in ("container", "pod", "build") or unit else "info",
        subject="memlock",
        data={"soft": lim.memlock_soft, "hard": lim.memlock_hard},
    )


@rule
def nofile_limit(ctx: RuleContext) -> Iterable[Finding]:
    """HOST008: RLIMIT_NOFILE soft limit at or below 4096."""
    if not stack_present(ctx.view):
        return  # limits for NPU training: a machine without an NPU stack (HOST050) hears nothing of them
    lim = ctx.view.host_limits.limits
    if lim is None or lim.nofile_soft is None or lim.nofile_soft < 0 or lim.nofile_soft > NOFILE_MIN:
        return
    hard = lim.nofile_hard
    fix: List[Union[Remedy, str]] = []
    if hard is not None and (hard < 0 or hard > lim.nofile_soft):
        fix.append(Command(("ulimit", "-n", "65536" if hard < 0 or hard > 65536 else str(hard))))
    elif ctx.view.container.systemd_unit:
        fix.append(SystemdSetting(str(ctx.view.container.systemd_unit), "LimitNOFILE", "65536"))
    else:
        fix.append("Raise it where the process starts: `docker run --ulimit nofile=65536:65536` or limits.d")
    yield NOFILE_LOW.finding(
        title=f"The open-files limit is {lim.nofile_soft}: many DataLoader workers run out of file descriptors",
        evidence=[f"{lim.source}: Max open files soft {lim.nofile_soft}, hard {'unlimited' if hard == -1 else hard}"],
        fix=fix,
        subject="nofile",
    )


@rule
def thp_mode(ctx: RuleContext) -> Iterable[Finding]:
    """HOST009: transparent huge pages [never]."""
    if not stack_present(ctx.view):
        return  # limits for NPU training: a machine without an NPU stack (HOST050) hears nothing of them
    thp = ctx.view.host_limits.thp
    if thp is None or thp.mode != "never":
        return
    yield THP_NEVER.finding(
        title="Transparent huge pages are off ([never])",
        evidence=[
            f"{thp.source}: [never]",
            "msprechecker presets/default.yaml sys.transparent_hugepage expects always",
        ],
        fix=["On the host, as root: echo always > /sys/kernel/mm/transparent_hugepage/enabled"],
        subject="thp",
    )


def _whole(raw: Optional[str]) -> Optional[int]:
    if raw is None:
        return None
    number, whole = strtol(raw)
    return number if whole and number > 0 else None


@rule
def omp_threads(ctx: RuleContext) -> Iterable[Finding]:
    """HOST010: OMP_NUM_THREADS x ranks per node above the cores the process may use."""
    if not stack_present(ctx.view):
        return  # limits for NPU training: a machine without an NPU stack (HOST050) hears nothing of them
    env = ctx.view.tunables.variables
    threads = _whole(env.get("OMP_NUM_THREADS"))
    if threads is None:
        return
    limits = ctx.view.host_limits
    bounds: List[Tuple[float, str]] = []
    if limits.cpus is not None and limits.cpus.allowed_count:
        bounds.append(
            (float(limits.cpus.allowed_count), f"{limits.cpus.source}: Cpus_allowed_list {limits.cpus.allowed_list}")
        )
    if limits.cpu_quota is not None and limits.cpu_quota.cores:
        bounds.append(
            (limits.cpu_quota.cores, f"{limits.cpu_quota.source}: a quota of {limits.cpu_quota.cores:g} CPUs")
        )
    if not bounds:
        return
    cores, where = min(bounds)
    ranks = _whole(env.get("LOCAL_WORLD_SIZE"))
    rank_source = f"LOCAL_WORLD_SIZE={ranks}"
    if ranks is None:
        chips = len(ctx.view.devices.chips)
        ranks, rank_source = (chips, f"{chips} NPU chip(s) (npu-smi): one rank each") if chips else (1, "one process")
    if threads * ranks <= cores:
        return
    per_rank = max(1, int(cores // ranks))
    yield OMP_OVER.finding(
        title=f"OMP_NUM_THREADS={threads} x {ranks} rank(s) = {threads * ranks} threads on {cores:g} CPUs",
        evidence=[f"OMP_NUM_THREADS={threads}", rank_source, where],
        fix=[Export("OMP_NUM_THREADS", str(per_rank), note=f"at most {cores:g} CPUs / {ranks} rank(s)")],
        subject="OMP_NUM_THREADS",
        data={"threads": threads, "ranks": ranks, "cores": cores},
    )


@rule
def overcommit_strict(ctx: RuleContext) -> Iterable[Finding]:
    """HOST011: vm.overcommit_memory=2."""
    if not stack_present(ctx.view):
        return  # limits for NPU training: a machine without an NPU stack (HOST050) hears nothing of them
    oc = ctx.view.host_limits.overcommit
    if oc is None or oc.mode != 2:
        return
    evidence = [f"{oc.source}: 2 (strict accounting)"]
    if oc.ratio is not None:
        evidence.append(f"/proc/sys/vm/overcommit_ratio: {oc.ratio} (% of RAM counted, plus swap)")
    if oc.commit_limit_bytes is not None:
        used = f", Committed_AS {_size(oc.committed_bytes)}" if oc.committed_bytes is not None else ""
        evidence.append(f"/proc/meminfo: CommitLimit {_size(oc.commit_limit_bytes)}{used}")
    evidence.append(f"runs in: {ctx.view.container.runs_in} (vm.* is the host's setting)")
    yield OVERCOMMIT_STRICT.finding(
        title="vm.overcommit_memory=2: DataLoader forks and large mappings fail with ENOMEM at CommitLimit",
        evidence=evidence,
        fix=[
            Command(
                ("sysctl", "-w", "vm.overcommit_memory=0"),
                note="as root on the host; add vm.overcommit_memory = 0 to a file in /etc/sysctl.d/ to keep it",
            )
        ],
        subject="vm.overcommit_memory",
        data={"ratio": oc.ratio, "commit_limit_bytes": oc.commit_limit_bytes},
    )


@rule
def cpu_governor(ctx: RuleContext) -> Iterable[Finding]:
    """HOST012: cpufreq policies whose governor is not performance."""
    if not stack_present(ctx.view):
        return  # limits for NPU training: a machine without an NPU stack (HOST050) hears nothing of them
    gov = ctx.view.host_limits.governors
    if gov is None:
        return
    others = {name: n for name, n in gov.counts.items() if name != "performance"}
    if not others:
        return
    shown = ", ".join(f"{name} on {n}" for name, n in sorted(others.items(), key=lambda kv: (-kv[1], kv[0])))
    yield GOVERNOR.finding(
        title=f"CPU frequency governor: {shown} of {gov.policies} cpufreq policies, not performance",
        evidence=[f"{gov.source}: " + ", ".join(f"{k} x{v}" for k, v in sorted(gov.counts.items()))],
        fix=[Command(("cpupower", "frequency-set", "-g", "performance"), note="as root on the host")],
        subject="cpufreq",
        data={"counts": dict(gov.counts)},
    )


def _ranges(cpus: List[int]) -> str:
    """``0-3,8`` for [0, 1, 2, 3, 8]."""
    out: List[str] = []
    for cpu in cpus:
        if out and cpu == int(out[-1].rpartition("-")[2]) + 1:
            out[-1] = f"{out[-1].partition('-')[0]}-{cpu}"
        else:
            out.append(str(cpu))
    return ",".join(out)


def _pci_placement(ctx: RuleContext, allowed: Set[int]) -> Optional[Tuple[str, List[int], List[str], str]]:
    """From sysfs: ``(claim, CPUs of the NPUs' nodes, evidence, numactl node list)`` when the
    allowed CPUs are on no NUMA node of the NPUs; else ``None``."""
    numa = ctx.view.numa
    node_cpus: Dict[int, Set[int]] = {}
    for number, text in numa.nodes.items():
        cpus = parse_cpus(text) if text else None
        if number.isdigit() and cpus:
            node_cpus[int(number)] = set(cpus)
    npu_nodes = sorted({n.numa_node for n in numa.npus if n.numa_node is not None and n.numa_node in node_cpus})
    if len(node_cpus) < 2 or not npu_nodes:
        return None
    allowed_nodes = sorted(n for n, cpus in node_cpus.items() if cpus & allowed)
    if set(allowed_nodes) & set(npu_nodes):
        return None
    nodes_text = ", ".join(str(n) for n in npu_nodes)
    evidence = [
        "/sys/bus/pci/devices/<bus id>/numa_node of the NPUs: "
        + "; ".join(
            f"node {node}: " + ", ".join(str(n.bus_id) for n in numa.npus if n.numa_node == node) for node in npu_nodes
        ),
        *(f"/sys/devices/system/node/node{n}/cpulist: {numa.nodes[str(n)]}" for n in sorted(allowed_nodes + npu_nodes)),
    ]
    claim = f"are on NUMA node {', '.join(str(n) for n in allowed_nodes)}; its NPUs are on node {nodes_text}"
    near = sorted(set().union(*(node_cpus[n] for n in npu_nodes)))
    return claim, near, evidence, ",".join(str(n) for n in npu_nodes)


def _topo_placement(ctx: RuleContext, allowed: Set[int]) -> Optional[Tuple[str, List[int], List[str], str]]:
    """The same from the CPU Affinity column of `npu-smi info -t topo`."""
    topo = ctx.view.devices.topology
    if topo is None or not topo.affinity_cpus:
        return None
    near_set: Set[int] = set()
    for cpus in topo.affinity_cpus.values():
        near_set.update(cpus)
    if not near_set or near_set & allowed:
        return None
    shown = "; ".join(f"NPU{npu} {text}" for npu, text in list(topo.affinity.items())[:8])
    more = f" (and {len(topo.affinity) - 8} more)" if len(topo.affinity) > 8 else ""
    evidence = [f"npu-smi info -t topo, CPU Affinity: {shown}{more}"]
    return "are outside the CPU affinity of every NPU (npu-smi info -t topo)", sorted(near_set), evidence, ""


@rule
def numa_placement(ctx: RuleContext) -> Iterable[Finding]:
    """HOST013: the CPUs this process may use share no NUMA node with its NPUs (npu-smi's
    CPU affinity when it has one, else the PCI functions' NUMA nodes)."""
    if not stack_present(ctx.view):
        return  # limits for NPU training: a machine without an NPU stack (HOST050) hears nothing of them
    allowed_facts = ctx.view.host_limits.cpus
    if allowed_facts is None or not allowed_facts.allowed_list:
        return
    allowed = set(parse_cpus(allowed_facts.allowed_list) or ())
    if not allowed:
        return
    topo = ctx.view.devices.topology
    found = _topo_placement(ctx, allowed) if topo is not None and topo.affinity_cpus else _pci_placement(ctx, allowed)
    if found is None:
        return
    claim, near, evidence, nodes = found
    where = ctx.view.container.runs_in
    fix: List[Union[Remedy, str]]
    if where in ("container", "build"):
        fix = [f"Recreate the container with --cpuset-cpus={_ranges(near)} (the CPUs next to its NPUs)"]
    elif where == "pod":
        fix = [
            "On the node: kubelet --cpu-manager-policy=static with --topology-manager-policy=single-numa-node, "
            "and whole-CPU requests equal to limits, so the pod's CPUs are placed with its NPUs"
        ]
    elif nodes:
        fix = [f"Start the job on the NPUs' node: numactl --cpunodebind={nodes} --membind={nodes} <your command>"]
    else:
        fix = [f"Start the job on the CPUs next to its NPUs: taskset -c {_ranges(near)} <your command>"]
    yield NUMA_AWAY.finding(
        title=f"The CPUs this process may use ({allowed_facts.allowed_list}) {claim}",
        evidence=[
            f"{allowed_facts.source}: Cpus_allowed_list {allowed_facts.allowed_list}",
            *evidence,
            f"runs in: {where}",
        ],
        fix=fix,
        subject="numa",
        data={"near": _ranges(near)},
    )


@rule
def kernel_release(ctx: RuleContext) -> Iterable[Finding]:
    """HOST014: the running kernel is older than msprechecker's default preset expects."""
    if not stack_present(ctx.view):
        return  # limits for NPU training: a machine without an NPU stack (HOST050) hears nothing of them
    kernel = ctx.view.host_limits.kernel
    if kernel is None or not kernel.release:
        return
    floor = kernel_floor()
    if not floor.older(kernel.release):
        return  # a newer kernel, or a release that cannot be read: nothing to say
    where = ctx.view.container.runs_in
    fix: List[Union[Remedy, str]]
    if where in ("container", "pod", "build"):
        fix = [
            f"Upgrade the kernel of the host this {where} runs on to {floor.minimum} or later "
            "(the host operating system's kernel package, then reboot the node), "
            "or run the job on a node with a newer kernel"
        ]
    else:
        fix = [
            f"Upgrade this host's kernel to {floor.minimum} or later "
            "(the operating system's kernel package, then reboot)"
        ]
    yield KERNEL_OLD.finding(
        title=(
            f"The host kernel {kernel.release} is older than {floor.minimum}, "
            f"the release {floor.package} expects for faster CPU dispatch"
        ),
        evidence=[
            f"{kernel.source}: {kernel.release}",
            f"{floor.cited}: at least {floor.minimum}, severity {floor.severity} "
            f"({floor.reason_en}; retrieved {floor.retrieved})",
            f"runs in: {where}",
        ],
        fix=fix,
        subject="kernel",
        data={"release": kernel.release, "minimum": floor.minimum},
    )
