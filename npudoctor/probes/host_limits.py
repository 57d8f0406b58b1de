"""Host readiness: the limits a training process meets, read from files.

Read live and under ``--root`` alike through the Host seam (a rebuilt root carries these
files as plain copies); each fact names the file it came from.  ``health`` (``quick``)
reads ``shm`` and ``limits`` only: the other keys are absent then.

Section ``host_limits``::

    shm        None (no /dev/shm mount line) | {"source": "/proc/self/mountinfo" | "/proc/mounts",
                "fstype": "tmpfs", "size_bytes": int | None (None: no size= option, the tmpfs
                default of half the RAM), "options": the super-block options}
    limits     None | {"source": "/proc/self/limits", "memlock_soft", "memlock_hard",
                "nofile_soft", "nofile_hard"}: int, -1 for "unlimited", None when absent
    thp        None | {"source": path, "mode": "always" | "madvise" | "never" | None}
    mem_total_bytes  MemTotal of /proc/meminfo, or None
    cpus       None | {"source": "/proc/self/status", "allowed_list": "0-15", "allowed_count": int | None}
    online     None | {"source": "/sys/devices/system/cpu/online", "cpu_list": "0-191", "count": int | None}
                (torch_npu's default binding ranges split these CPUs, not the allowed ones)
    cpu_quota  None | {"source": path of cpu.max (cgroup v2) or cpu.cfs_quota_us (v1), "cores":
                float | None (None: no quota, "max" / -1)}
    overcommit None | {"source": "/proc/sys/vm/overcommit_memory", "mode": 0 | 1 | 2 | None,
                "ratio": int | None (overcommit_ratio), "commit_limit_bytes", "committed_bytes":
                CommitLimit and Committed_AS of /proc/meminfo, or None}
    governors  None (no cpufreq policy) | {"source": the scaling_governor pattern read,
                "counts": {governor: policies}, "policies": int}
    kernel     None (no /proc/sys/kernel/osrelease: a rebuilt root often has none) |
               {"source": "/proc/sys/kernel/osrelease", "release": the text `uname -r` prints}
    errors     {path: reason} for the files that could not be read
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npudoctor.context import ProbeContext

if TYPE_CHECKING:
    from typing import Any, Dict, Optional, Tuple

SECTION = "host_limits"
NEEDS = ()
#: ``health`` reads the limits that change while a node runs (the /dev/shm mount and the
#: process limits: a restarted container may come back with Docker's defaults); the rest of
#: the section is read by ``check`` only.
QUICK = True

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
THP_PATH = "/sys/kernel/mm/transparent_hugepage/enabled"
#: The running kernel's release (the host's, inside a container too: it shares the kernel).
OSRELEASE_PATH = "/proc/sys/kernel/osrelease"
_LIMIT_ROWS = {"Max locked memory": "memlock", "Max open files": "nofile"}


def parse_size(text: str) -> Optional[int]:
    """A tmpfs ``size=`` value (``65536k``, ``64m``, ``1g``, bytes) in bytes, or ``None``
    (a percentage or anything else)."""
    text = text.strip().lower()
    unit = text[-1:] if text[-1:] in "kmgt" else ""
    number = text[: len(text) - len(unit)]
    if not number.isdigit():
        return None
    return int(number) * _UNITS[unit]


def _size_option(options: str) -> Optional[int]:
    for opt in options.split(","):
        if opt.startswith("size="):
            return parse_size(opt[5:])
    return None


def parse_mountinfo_shm(text: str) -> Optional[Tuple[str, str]]:
    """``(fstype, super options)`` of the last ``/dev/shm`` line of a mountinfo text (the
    visible mount when several are stacked), or ``None``."""
    found = None
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        fields = left.split()
        if not sep or len(fields) < 5 or fields[4] != "/dev/shm":
            continue
        rest = right.split()
        if len(rest) >= 3:
            found = (rest[0], rest[2])
        elif rest:
            found = (rest[0], "")
    return found


def parse_mounts_shm(text: str) -> Optional[Tuple[str, str]]:
    """The same from ``/proc/mounts`` (``source mountpoint fstype options 0 0``)."""
    found = None
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[1] == "/dev/shm":
            found = (fields[2], fields[3])
    return found


def _limit(value: str) -> Optional[int]:
    if value == "unlimited":
        return -1
    return int(value) if value.isdigit() else None


def parse_limits(text: str) -> Dict[str, Optional[int]]:
    """``memlock_soft``/``_hard`` (bytes) and ``nofile_soft``/``_hard`` of a
    ``/proc/PID/limits`` text (-1: unlimited)."""
    out: Dict[str, Optional[int]] = {}
    for line in text.splitlines():
        for label, key in _LIMIT_ROWS.items():
            if line.startswith(label):
                parts = line[len(label) :].split()
                if len(parts) >= 2:
                    out[key + "_soft"] = _limit(parts[0])
                    out[key + "_hard"] = _limit(parts[1])
    return out


def parse_thp(text: str) -> Optional[str]:
    """The bracketed mode of ``transparent_hugepage/enabled`` (``always [madvise] never``)."""
    start, end = text.find("["), text.find("]")
    if start < 0 or end <= start:
        return None
    return text[start + 1 : end].strip() or None


def parse_meminfo(text: str, key: str) -> Optional[int]:
    """A ``kB`` line of /proc/meminfo (``MemTotal``, ``CommitLimit``, ...) in bytes."""
    for line in text.splitlines():
        if line.startswith(key + ":"):
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                return int(parts[1]) * 1024
    return None


def parse_mem_total(text: str) -> Optional[int]:
    return parse_meminfo(text, "MemTotal")


def _small_int(text: Optional[str]) -> Optional[int]:
    value = (text or "").strip()
    return int(value) if value.isdigit() and len(value) <= 9 else None


#: Where the cpufreq policies live (one scaling_governor per policy; a policy may cover
#: several CPUs, so one read per policy, not per CPU).
CPUFREQ_DIR = "/sys/devices/system/cpu/cpufreq"
#: Most policies read (a larger machine is judged on these).
MAX_POLICIES = 1024


def _governors(host: Any) -> Optional[Dict[str, Any]]:
    policies = host.glob(CPUFREQ_DIR, prefix="policy")[:MAX_POLICIES]
    counts: Dict[str, int] = {}
    for policy in policies:
        text = host.read_text(policy + "/scaling_governor", limit=64).text
        name = (text or "").strip()
        if name and name.isprintable() and len(name) <= 32:
            counts[name] = counts.get(name, 0) + 1
    if not counts:
        return None
    return {"source": CPUFREQ_DIR + "/policy*/scaling_governor", "counts": counts, "policies": sum(counts.values())}


#: Most CPUs a range list may name before it is treated as malformed.
MAX_CPUS = 1 << 16


def count_cpu_list(text: str) -> Optional[int]:
    """The number of CPUs of a list such as ``0-3,8,10-11`` (``None`` when malformed)."""
    total = 0
    for part in text.strip().split(","):
        low, sep, high = part.strip().partition("-")
        if not low.isdigit() or (sep and not high.isdigit()):
            return None
        first, last = int(low), int(high) if sep else int(low)
        if last < first or last >= MAX_CPUS:
            return None
        total += last - first + 1
    return total


def parse_cpu_max(text: str) -> Optional[float]:
    """Cores of a cgroup v2 ``cpu.max`` (``200000 100000`` → 2.0; ``max ...`` → None)."""
    parts = text.split()
    if len(parts) != 2 or not parts[0].isdigit() or not parts[1].isdigit() or int(parts[1]) == 0:
        return None
    return int(parts[0]) / int(parts[1])


def _cpus(host: Any, errors: Dict[str, str]) -> Optional[Dict[str, Any]]:
    read = host.read_text("/proc/self/status")
    if read.text is None:
        errors["/proc/self/status"] = read.error or "unreadable"
        return None
    for line in read.text.splitlines():
        if line.startswith("Cpus_allowed_list:"):
            value = line.partition(":")[2].strip()
            return {"source": "/proc/self/status", "allowed_list": value, "allowed_count": count_cpu_list(value)}
    return None


def _cpu_quota(host: Any) -> Optional[Dict[str, Any]]:
    read = host.read_text("/sys/fs/cgroup/cpu.max")
    if read.text is not None:
        return {"source": "/sys/fs/cgroup/cpu.max", "cores": parse_cpu_max(read.text)}
    quota = host.read_text("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").text
    period = host.read_text("/sys/fs/cgroup/cpu/cpu.cfs_period_us").text
    if quota is None or period is None:
        return None
    q, p = quota.strip(), period.strip()
    cores = int(q) / int(p) if q.isdigit() and p.isdigit() and int(p) > 0 else None
    return {"source": "/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "cores": cores}


def _kernel(host: Any) -> Optional[Dict[str, Any]]:
    text = host.read_text(OSRELEASE_PATH, limit=256).text
    release = (text or "").strip()
    if not release or not release.isprintable():
        return None
    return {"source": OSRELEASE_PATH, "release": release}


def probe(ctx: ProbeContext) -> Dict[str, Any]:
    host = ctx.host
    errors: Dict[str, str] = {}
    out: Dict[str, Any] = {"shm": None, "limits": None, "thp": None, "mem_total_bytes": None}

    for path, parse in (("/proc/self/mountinfo", parse_mountinfo_shm), ("/proc/mounts", parse_mounts_shm)):
        read = host.read_text(path)
        if read.text is None:
            errors[path] = read.error or "unreadable"
            continue
        shm = parse(read.text)
        if shm is not None:
            out["shm"] = {"source": path, "fstype": shm[0], "size_bytes": _size_option(shm[1]), "options": shm[1]}
        break

    read = host.read_text("/proc/self/limits")
    if read.text is None:
        errors["/proc/self/limits"] = read.error or "unreadable"
    else:
        out["limits"] = {"source": "/proc/self/limits", **parse_limits(read.text)}
    if ctx.options.quick:
        out["errors"] = errors
        return out

    read = host.read_text(THP_PATH)
    if read.text is None:
        errors[THP_PATH] = read.error or "unreadable"
    else:
        out["thp"] = {"source": THP_PATH, "mode": parse_thp(read.text)}

    read = host.read_text("/proc/meminfo")
    meminfo = read.text
    if meminfo is None:
        errors["/proc/meminfo"] = read.error or "unreadable"
    else:
        out["mem_total_bytes"] = parse_mem_total(meminfo)
    mode = host.read_text("/proc/sys/vm/overcommit_memory").text
    out["overcommit"] = (
        None
        if mode is None
        else {
            "source": "/proc/sys/vm/overcommit_memory",
            "mode": _small_int(mode),
            "ratio": _small_int(host.read_text("/proc/sys/vm/overcommit_ratio").text),
            "commit_limit_bytes": parse_meminfo(meminfo, "CommitLimit") if meminfo else None,
            "committed_bytes": parse_meminfo(meminfo, "Committed_AS") if meminfo else None,
        }
    )
    out["governors"] = _governors(host)
    out["cpus"] = _cpus(host, errors)
    online = host.read_text("/sys/devices/system/cpu/online").text
    if online is not None:
        value = online.strip()
        out["online"] = {"source": "/sys/devices/system/cpu/online", "cpu_list": value, "count": count_cpu_list(value)}
    else:
        out["online"] = None
    out["cpu_quota"] = _cpu_quota(host)
    out["kernel"] = _kernel(host)
    out["errors"] = errors
    return out
