"""Typed views of the ``numa`` section (``npudoctor/probes/numa.py``): the CPUs of each NUMA
node and the NUMA node of each NPU's PCI function."""

from __future__ import annotations

from typing import Dict, Optional, Tuple

from npudoctor.facts._view import View, field


class NpuNuma(View):
    """One NPU's PCI function and its NUMA node."""

    bus_id: Optional[str] = None
    numa_node: Optional[int] = None
    """-1: the firmware gave none; None: unreadable"""
    source: Optional[str] = None


class NumaFacts(View):
    """NUMA nodes and the NPUs' place among them, read from sysfs (probes/numa.py)."""

    nodes: Dict[str, str] = field(default_factory=dict)
    """node number -> cpulist"""
    npus: Tuple[NpuNuma, ...] = ()
    errors: Dict[str, str] = field(default_factory=dict)
