"""Typed views of the ``host_limits`` section (``npudoctor/probes/host_limits.py``): the host
limits training needs (shared memory, memlock, THP, memory, CPUs and quotas), read from files."""

from __future__ import annotations

from typing import Dict, Optional

from npudoctor.facts._view import View, field


class ShmMount(View):
    """The /dev/shm mount line."""

    source: Optional[str] = None
    fstype: Optional[str] = None
    size_bytes: Optional[int] = None
    """None: no size= (tmpfs default: half the RAM)"""
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
    mode: Optional[str] = None
    '"always" | "madvise" | "never"'


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
    cores: Optional[float] = None
    """None: no quota"""


class Overcommit(View):
    """The kernel's memory-commit policy (/proc/sys/vm) with /proc/meminfo's commit figures."""

    source: Optional[str] = None
    mode: Optional[int] = None
    """vm.overcommit_memory: 0 heuristic, 1 always, 2 strict"""
    ratio: Optional[int] = None
    """vm.overcommit_ratio (percent of RAM under mode 2)"""
    commit_limit_bytes: Optional[int] = None
    """CommitLimit of /proc/meminfo"""
    committed_bytes: Optional[int] = None
    """Committed_AS of /proc/meminfo"""


class Governors(View):
    """The cpufreq governors of the CPU frequency policies."""

    source: Optional[str] = None
    counts: Dict[str, int] = field(default_factory=dict)
    """governor name -> policies using it"""
    policies: int = 0


class KernelRelease(View):
    """The running kernel's release (/proc/sys/kernel/osrelease)."""

    source: Optional[str] = None
    release: Optional[str] = None
    """as `uname -r` prints it, e.g. 5.10.0-60.18.0.50.oe2203.aarch64"""


class HostLimitsFacts(View):
    """Host readiness read from files (probes/host_limits.py)."""

    cpus: Optional[AllowedCpus] = None
    online: Optional[OnlineCpus] = None
    cpu_quota: Optional[CpuQuota] = None
    shm: Optional[ShmMount] = None
    limits: Optional[ProcessLimits] = None
    thp: Optional[ThpMode] = None
    mem_total_bytes: Optional[int] = None
    overcommit: Optional[Overcommit] = None
    governors: Optional[Governors] = None
    kernel: Optional[KernelRelease] = None
    errors: Dict[str, str] = field(default_factory=dict)
