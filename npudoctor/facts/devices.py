"""Typed view of the ``devices`` section (shape documented in :mod:`npudoctor.probes.devices`;
chip and process records from :func:`npudoctor.parsers.npu_smi.parse_info`, the topology from
:func:`npudoctor.parsers.topo.parse_topo`)."""

from __future__ import annotations

import re
from typing import Dict, Optional, Tuple

from npudoctor.facts._view import View, field
from npudoctor.facts.system import Identity


class NpuSmiCommand(View):
    """One npu-smi run."""

    argv: Tuple[str, ...] = ()
    returncode: Optional[int] = None
    timed_out: bool = False
    error: Optional[str] = None
    """why it could not be started"""
    duration: Optional[float] = None
    """seconds"""
    parsed: bool = False
    """its output gave what was asked"""
    cpu_s: Optional[float] = None
    """CPU seconds it had used when killed for its deadline"""
    state: Optional[str] = None
    """its process state when killed ("D": blocked in the kernel, "R": runnable)"""
    cpu_pressure: Optional[float] = None
    """percent of its run it could be starved of CPU (node PSI plus cgroup throttling), when killed"""


class NpuSmi(View):
    """How ``npu-smi`` answered (or why it was not run)."""

    path: Optional[str] = None
    """found on PATH"""
    searched: Optional[Tuple[str, ...]] = None
    """PATH entries of the diagnosed environment (None: not recorded)"""
    available: bool = False
    """the device table parsed"""
    error: Optional[str] = None
    """how the command failed, for people"""
    cause: Optional[str] = None
    '"not-installed" | "hung" | "cut-short" | "crashed" | "dcmi" | "permission" | "loader" | "driver" | "disabled" | "unparsed"'
    code: Optional[int] = None
    """DCMI return code (-8005, -8020, ...)"""
    message: Optional[str] = None
    """the npu-smi error line"""
    signal: Optional[str] = None
    """the signal that killed npu-smi ("SIGSEGV")"""
    version: Optional[str] = None
    """npu-smi tool version"""
    driver_version: Optional[str] = None
    'the table header\'s "Version:"'
    layout: Optional[str] = None
    """"910" | "310" | None"""
    truncated: bool = False
    commands: Tuple[NpuSmiCommand, ...] = ()
    raw: Optional[str] = None
    """first 64 KiB of `npu-smi info`"""


class HealthDetail(View):
    """``npu-smi info -t health`` of a chip that is not OK."""

    status: Optional[str] = None
    error_codes: Tuple[str, ...] = ()
    """hex codes ("80E3A203")"""
    information: Optional[str] = None


class Chip(View):
    """One chip row of ``npu-smi info`` (what a chip *is* is judged by the rules)."""

    npu_id: Optional[int] = None
    chip_id: Optional[int] = None
    phy_id: Optional[int] = None
    """A3 Phy-ID column, or from `info -m`"""
    device_id: Optional[int] = None
    """310-class Device column"""
    logic_id: Optional[int] = None
    """310-class Device column, or from `info -m`"""
    name: Optional[str] = None
    '"910B3", "Ascend910", "310P3"'
    health: Optional[str] = None
    """raw: OK | Warning | Alarm | Critical | ..."""
    power_w: Optional[float] = None
    """None for NA or -"""
    temp_c: Optional[float] = None
    hugepages_used: Optional[int] = None
    hugepages_total: Optional[int] = None
    aicore_pct: Optional[float] = None
    memory_used_mb: Optional[int] = None
    """DDR"""
    memory_total_mb: Optional[int] = None
    hbm_used_mb: Optional[int] = None
    """None on 310-class"""
    hbm_total_mb: Optional[int] = None
    bus_id: Optional[str] = None
    """raw: may be NA or masked"""
    soc_version: Optional[str] = None
    """measured (A3 `-t board`), else None"""
    soc_source: Optional[str] = None
    health_detail: Optional[HealthDetail] = None


class NpuProcess(View):
    """A process row of ``npu-smi info``."""

    npu_id: Optional[int] = None
    chip_id: Optional[int] = None
    pid: Optional[int] = None
    name: Optional[str] = None
    memory_mb: Optional[int] = None
    container_pid: Optional[int] = None
    """26.x wide layout only"""


class Topology(View):
    """``npu-smi info -t topo``: NPU-to-NPU links and CPU affinity (map keys are NPU ids)."""

    npus: Tuple[int, ...] = ()
    """ids in header order"""
    links: Dict[str, Dict[str, str]] = field(default_factory=dict)
    """npu → peer → X | HCCS | SIO | UB | PIX | PXB | PHB | SYS | NA"""
    affinity: Dict[str, str] = field(default_factory=dict)
    'npu → "144-167"'
    affinity_cpus: Dict[str, Tuple[int, ...]] = field(default_factory=dict)
    link_types: Tuple[str, ...] = ()
    all_fabric: bool = False
    """every pair on HCCS/SIO/UB"""
    islands: Tuple[Tuple[int, ...], ...] = ()
    """groups joined by fabric or PIX links"""
    legend: bool = False


class DeviceNode(View):
    """A device node (``/dev/davinciN`` or a control node) and its owner and mode."""

    path: str = ""
    kind: Optional[str] = None
    '"chip" | "control"'
    exists: bool = False
    char_device: Optional[bool] = None
    uid: Optional[int] = None
    gid: Optional[int] = None
    owner: Optional[str] = None
    group: Optional[str] = None
    mode: Optional[str] = None
    '"0660"'
    accessible_by_identity: Optional[bool] = None
    rdev: Tuple[int, ...] = ()
    """[major, minor] of a character device"""

    @property
    def number(self) -> Optional[int]:
        """N of ``/dev/davinciN``, or ``None`` for another path."""
        m = re.search(r"davinci((?<![0-9])[0-9]{1,18})$", self.path)
        return int(m.group(1)) if m else None


class Visibility(View):
    """The visible-device variables as set (rules validate them)."""

    ascend_rt_visible_devices: Optional[str] = field(default=None, name="ASCEND_RT_VISIBLE_DEVICES")
    """raw value of ASCEND_RT_VISIBLE_DEVICES (None: unset; "": set but empty)"""
    ascend_visible_devices: Optional[str] = field(default=None, name="ASCEND_VISIBLE_DEVICES")
    """raw value of ASCEND_VISIBLE_DEVICES (None: unset; "": set but empty)"""
    ascend_device_id: Optional[str] = field(default=None, name="ASCEND_DEVICE_ID")
    """raw value of ASCEND_DEVICE_ID (None: unset; "": set but empty)"""
    cuda_visible_devices: Optional[str] = field(default=None, name="CUDA_VISIBLE_DEVICES")
    """raw value of CUDA_VISIBLE_DEVICES (None: unset; "": set but empty)"""
    ascend_runtime_options: Optional[str] = field(default=None, name="ASCEND_RUNTIME_OPTIONS")
    """raw value of ASCEND_RUNTIME_OPTIONS (None: unset; "": set but empty)"""
    ray_noset: Optional[str] = field(default=None, name="RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES")
    """raw value of RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES (None: unset; "": set but empty)"""
    npu_visible_devices: Optional[str] = field(default=None, name="NPU_VISIBLE_DEVICES")
    """raw value of NPU_VISIBLE_DEVICES (None: unset; "": set but empty)"""
    hip_visible_devices: Optional[str] = field(default=None, name="HIP_VISIBLE_DEVICES")
    """raw value of HIP_VISIBLE_DEVICES (None: unset; "": set but empty)"""
    rocr_visible_devices: Optional[str] = field(default=None, name="ROCR_VISIBLE_DEVICES")
    """raw value of ROCR_VISIBLE_DEVICES (None: unset; "": set but empty)"""


class DevicesFacts(View):
    """npu-smi (chips, health, memory, processes, topology), device nodes, visibility variables."""

    npu_smi: NpuSmi = field(default_factory=NpuSmi)
    chips: Tuple[Chip, ...] = ()
    processes: Tuple[NpuProcess, ...] = ()
    idle_npus: Tuple[int, ...] = ()
    """npu ids npu-smi says run no process"""
    topology: Optional[Topology] = None
    nodes: Tuple[DeviceNode, ...] = ()
    nodes_error: Optional[str] = None
    """why the device nodes could not be looked at (/dev refused, or a --root tree without /dev)"""
    visibility: Visibility = field(default_factory=Visibility)
    ray: Tuple[str, ...] = ()
    """names of the RAY_* variables set"""
    visible_count: Optional[int] = None
    """chips npu-smi lists, else /dev/davinciN nodes, else None"""
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
