"""Typed view of the ``devices`` section (shape documented in :mod:`npudoctor.probes.devices`;
chip and process records from :func:`npudoctor.parsers.npu_smi.parse_info`, the topology from
:func:`npudoctor.parsers.topo.parse_topo`)."""

from __future__ import annotations

import re
from typing import Dict, Optional, Tuple

from npudoctor.facts._view import View, doc, field
from npudoctor.facts.system import Identity


def _var(name: str) -> Dict[str, str]:
    return {"key": name, "doc": f'raw value of {name} (None: unset; "": set but empty)'}


class NpuSmiCommand(View):
    """One npu-smi run."""

    argv: Tuple[str, ...] = ()
    returncode: Optional[int] = None
    timed_out: bool = False
    error: Optional[str] = field(default=None, metadata=doc("why it could not be started"))
    duration: Optional[float] = field(default=None, metadata=doc("seconds"))
    parsed: bool = field(default=False, metadata=doc("its output gave what was asked"))
    cpu_s: Optional[float] = field(default=None, metadata=doc("CPU seconds it had used when killed for its deadline"))
    state: Optional[str] = field(
        default=None, metadata=doc('its process state when killed ("D": blocked in the kernel, "R": runnable)')
    )
    cpu_pressure: Optional[float] = field(
        default=None,
        metadata=doc("percent of its run it could be starved of CPU (node PSI plus cgroup throttling), when killed"),
    )


class NpuSmi(View):
    """How ``npu-smi`` answered (or why it was not run)."""

    path: Optional[str] = field(default=None, metadata=doc("found on PATH"))
    searched: Optional[Tuple[str, ...]] = field(
        default=None, metadata=doc("PATH entries of the diagnosed environment (None: not recorded)")
    )
    available: bool = field(default=False, metadata=doc("the device table parsed"))
    error: Optional[str] = field(default=None, metadata=doc("how the command failed, for people"))
    cause: Optional[str] = field(
        default=None,
        metadata=doc(
            '"not-installed" | "hung" | "cut-short" | "crashed" | "dcmi" | "permission" | "loader" | "driver" | "disabled" | "unparsed"'
        ),
    )
    code: Optional[int] = field(default=None, metadata=doc("DCMI return code (-8005, -8020, ...)"))
    message: Optional[str] = field(default=None, metadata=doc("the npu-smi error line"))
    signal: Optional[str] = field(default=None, metadata=doc('the signal that killed npu-smi ("SIGSEGV")'))
    version: Optional[str] = field(default=None, metadata=doc("npu-smi tool version"))
    driver_version: Optional[str] = field(default=None, metadata=doc('the table header\'s "Version:"'))
    layout: Optional[str] = field(default=None, metadata=doc('"910" | "310" | None'))
    truncated: bool = False
    commands: Tuple[NpuSmiCommand, ...] = ()
    raw: Optional[str] = field(default=None, metadata=doc("first 64 KiB of `npu-smi info`"))


class HealthDetail(View):
    """``npu-smi info -t health`` of a chip that is not OK."""

    status: Optional[str] = None
    error_codes: Tuple[str, ...] = field(default=(), metadata=doc('hex codes ("80E3A203")'))
    information: Optional[str] = None


class Chip(View):
    """One chip row of ``npu-smi info`` (what a chip *is* is judged by the rules)."""

    npu_id: Optional[int] = None
    chip_id: Optional[int] = None
    phy_id: Optional[int] = field(default=None, metadata=doc("A3 Phy-ID column, or from `info -m`"))
    device_id: Optional[int] = field(default=None, metadata=doc("310-class Device column"))
    logic_id: Optional[int] = field(default=None, metadata=doc("310-class Device column, or from `info -m`"))
    name: Optional[str] = field(default=None, metadata=doc('"910B3", "Ascend910", "310P3"'))
    health: Optional[str] = field(default=None, metadata=doc("raw: OK | Warning | Alarm | Critical | ..."))
    power_w: Optional[float] = field(default=None, metadata=doc("None for NA or -"))
    temp_c: Optional[float] = None
    hugepages_used: Optional[int] = None
    hugepages_total: Optional[int] = None
    aicore_pct: Optional[float] = None
    memory_used_mb: Optional[int] = field(default=None, metadata=doc("DDR"))
    memory_total_mb: Optional[int] = None
    hbm_used_mb: Optional[int] = field(default=None, metadata=doc("None on 310-class"))
    hbm_total_mb: Optional[int] = None
    bus_id: Optional[str] = field(default=None, metadata=doc("raw: may be NA or masked"))
    soc_version: Optional[str] = field(default=None, metadata=doc("measured (A3 `-t board`), else None"))
    soc_source: Optional[str] = None
    health_detail: Optional[HealthDetail] = None


class NpuProcess(View):
    """A process row of ``npu-smi info``."""

    npu_id: Optional[int] = None
    chip_id: Optional[int] = None
    pid: Optional[int] = None
    name: Optional[str] = None
    memory_mb: Optional[int] = None
    container_pid: Optional[int] = field(default=None, metadata=doc("26.x wide layout only"))


class Topology(View):
    """``npu-smi info -t topo``: NPU-to-NPU links and CPU affinity (map keys are NPU ids)."""

    npus: Tuple[int, ...] = field(default=(), metadata=doc("ids in header order"))
    links: Dict[str, Dict[str, str]] = field(
        default_factory=dict, metadata=doc("npu → peer → X | HCCS | SIO | UB | PIX | PXB | PHB | SYS | NA")
    )
    affinity: Dict[str, str] = field(default_factory=dict, metadata=doc('npu → "144-167"'))
    affinity_cpus: Dict[str, Tuple[int, ...]] = field(default_factory=dict)
    link_types: Tuple[str, ...] = ()
    all_fabric: bool = field(default=False, metadata=doc("every pair on HCCS/SIO/UB"))
    islands: Tuple[Tuple[int, ...], ...] = field(default=(), metadata=doc("groups joined by fabric or PIX links"))
    legend: bool = False


class DeviceNode(View):
    """A device node (``/dev/davinciN`` or a control node) and its owner and mode."""

    path: str = ""
    kind: Optional[str] = field(default=None, metadata=doc('"chip" | "control"'))
    exists: bool = False
    char_device: Optional[bool] = None
    uid: Optional[int] = None
    gid: Optional[int] = None
    owner: Optional[str] = None
    group: Optional[str] = None
    mode: Optional[str] = field(default=None, metadata=doc('"0660"'))
    accessible_by_identity: Optional[bool] = None
    rdev: Tuple[int, ...] = field(default=(), metadata=doc("[major, minor] of a character device"))

    @property
    def number(self) -> Optional[int]:
        """N of ``/dev/davinciN``, or ``None`` for another path."""
        m = re.search(r"davinci((?<![0-9])[0-9]{1,18})$", self.path)
        return int(m.group(1)) if m else None


class Visibility(View):
    """The visible-device variables as set (rules validate them)."""

    ascend_rt_visible_devices: Optional[str] = field(default=None, metadata=_var("ASCEND_RT_VISIBLE_DEVICES"))
    ascend_visible_devices: Optional[str] = field(default=None, metadata=_var("ASCEND_VISIBLE_DEVICES"))
    ascend_device_id: Optional[str] = field(default=None, metadata=_var("ASCEND_DEVICE_ID"))
    cuda_visible_devices: Optional[str] = field(default=None, metadata=_var("CUDA_VISIBLE_DEVICES"))
    ascend_runtime_options: Optional[str] = field(default=None, metadata=_var("ASCEND_RUNTIME_OPTIONS"))
    ray_noset: Optional[str] = field(default=None, metadata=_var("RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES"))
    npu_visible_devices: Optional[str] = field(default=None, metadata=_var("NPU_VISIBLE_DEVICES"))
    hip_visible_devices: Optional[str] = field(default=None, metadata=_var("HIP_VISIBLE_DEVICES"))
    rocr_visible_devices: Optional[str] = field(default=None, metadata=_var("ROCR_VISIBLE_DEVICES"))


class DevicesFacts(View):
    """npu-smi (chips, health, memory, processes, topology), device nodes, visibility variables."""

    npu_smi: NpuSmi = field(default_factory=NpuSmi)
    chips: Tuple[Chip, ...] = ()
    processes: Tuple[NpuProcess, ...] = ()
    idle_npus: Tuple[int, ...] = field(default=(), metadata=doc("npu ids npu-smi says run no process"))
    topology: Optional[Topology] = None
    nodes: Tuple[DeviceNode, ...] = ()
    nodes_error: Optional[str] = field(
        default=None, metadata=doc("why the device nodes could not be looked at (/dev refused)")
    )
    visibility: Visibility = field(default_factory=Visibility)
    ray: Tuple[str, ...] = field(default=(), metadata=doc("names of the RAY_* variables set"))
    visible_count: Optional[int] = field(
        default=None, metadata=doc("chips npu-smi lists, else /dev/davinciN nodes, else None")
    )
    identity: Identity = field(default_factory=Identity)

    @property
    def chip_nodes(self) -> Tuple[DeviceNode, ...]:
        """The ``/dev/davinciN`` nodes that exist."""
        return tuple(n for n in self.nodes if n.kind == "chip" and n.exists)

    @property
    def node_numbers(self) -> Tuple[int, ...]:
        """N of every existing ``/dev/davinciN`` node, in the probe's order."""
        return tuple(n for n in (x.number for x in self.chip_nodes) if n is not None)

    @property
    def named_chips(self) -> Tuple[Chip, ...]:
        """The chips npu-smi listed that have a name."""
        return tuple(c for c in self.chips if c.name)
