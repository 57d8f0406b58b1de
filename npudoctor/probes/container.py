"""Container: are we inside one, which runtime/orchestrator, and are the Ascend driver
files a container needs mounted in.

Section ``container``::

    in_container   bool
    runtime        "docker" | "podman" | "containerd" | "lxc" | None
    kubernetes     bool (KUBERNETES_SERVICE_HOST, the service-account directory, or a
                   ``kubepods`` cgroup)
    evidence       [str]  why we think so ("/.dockerenv exists", "/proc/1/cgroup: …kubepods…")
    mounts         [{"path", "exists", "what", "required": bool}] — the driver pieces a
                   container needs (samples/docker-run_vllm-ascend_standard-device-mounts.sh.txt
                   and INDEX.md §8 "Manual device passthrough"):
                   /usr/local/Ascend/driver/lib64, /usr/local/Ascend/driver/version.info,
                   /usr/local/dcmi, npu-smi (/usr/local/bin or /usr/local/sbin),
                   /etc/ascend_install.info
    npu_smi_paths  [paths of npu-smi inside the root]
    device_cgroup  {"path", "entries": [str], "allow_all": bool} from the cgroup v1
                   devices.list when readable, else None
    privileged     True/False from CapEff of /proc/self/status (live only), else None
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from npudoctor.engine import ProbeContext

SECTION = "container"
NEEDS = ()
QUICK = True

DRIVER = "/usr/local/Ascend/driver"

#: (path, what, required) — what a container running torch_npu needs from the host.
MOUNTS = (
    (DRIVER + "/lib64", "driver libraries (libascend_hal.so, libc_sec.so in common/)", True),
    (DRIVER + "/version.info", "driver version file", True),
    ("/usr/local/dcmi", "DCMI library used by npu-smi", False),
    ("/etc/ascend_install.info", "driver install record (read by CANN 9 set_env.sh)", False),
)
NPU_SMI_PATHS = ("/usr/local/bin/npu-smi", "/usr/local/sbin/npu-smi")

_CGROUP_HINTS = (
    ("kubepods", "containerd", "kubernetes"),
    ("cri-containerd", "containerd", None),
    ("containerd", "containerd", None),
    ("docker", "docker", None),
    ("libpod", "podman", None),
    ("lxc", "lxc", None),
)


def _cgroup(ctx: ProbeContext, evidence: List[str]) -> Dict[str, Any]:
    found: Dict[str, Any] = {"runtime": None, "kubernetes": False}
    for path in ("/proc/1/cgroup", "/proc/self/cgroup"):
        text = ctx.host.read_text(path, limit=64 * 1024).text or ""
        low = text.lower()
        for needle, runtime, orchestrator in _CGROUP_HINTS:
            if needle in low:
                line = next((ln for ln in text.splitlines() if needle in ln.lower()), "")
                evidence.append(f"{path}: {line.strip()[:120]}")
                found["runtime"] = found["runtime"] or runtime
                if orchestrator:
                    found["kubernetes"] = True
                break
        if found["runtime"]:
            break
    return found


def _device_cgroup(ctx: ProbeContext) -> Optional[Dict[str, Any]]:
    path = "/sys/fs/cgroup/devices/devices.list"
    read = ctx.host.read_text(path, limit=64 * 1024)
    if not read.ok:
        return None
    entries = [ln.strip() for ln in (read.text or "").splitlines() if ln.strip()][:500]
    return {"path": path, "entries": entries, "allow_all": any(e.startswith("a *:* ") for e in entries)}


def _privileged(ctx: ProbeContext) -> Optional[bool]:
    if not ctx.host.live:
        return None
    text = ctx.host.read_text("/proc/self/status").text or ""
    for line in text.splitlines():
        if line.startswith("CapEff:"):
            try:
                caps = int(line.split(":", 1)[1].strip(), 16)
            except ValueError:
                return None
            return caps & (1 << 21) != 0  # CAP_SYS_ADMIN: set for --privileged
    return None


def probe(ctx: ProbeContext) -> Dict[str, Any]:
    host = ctx.host
    evidence: List[str] = []
    runtime: Optional[str] = None
    if host.exists("/.dockerenv"):
        runtime = "docker"
        evidence.append("/.dockerenv exists")
    if host.exists("/run/.containerenv"):
        runtime = runtime or "podman"
        evidence.append("/run/.containerenv exists")
    cg = _cgroup(ctx, evidence)
    runtime = runtime or cg["runtime"]
    kubernetes = bool(cg["kubernetes"])
    if host.getenv("KUBERNETES_SERVICE_HOST"):
        kubernetes = True
        evidence.append("KUBERNETES_SERVICE_HOST is set")
    if host.is_dir("/var/run/secrets/kubernetes.io") or host.is_dir("/run/secrets/kubernetes.io"):
        kubernetes = True
        evidence.append("/var/run/secrets/kubernetes.io exists")
    if kubernetes and runtime is None:
        runtime = "containerd"
    mounts = [
        {"path": path, "exists": host.exists(path), "what": what, "required": required}
        for path, what, required in MOUNTS
    ]
    npu_smi_paths = [p for p in NPU_SMI_PATHS if host.exists(p)]
    return {
        "in_container": runtime is not None or kubernetes,
        "runtime": runtime,
        "kubernetes": kubernetes,
        "evidence": evidence,
        "driver_dir": host.is_dir(DRIVER),
        "mounts": mounts,
        "npu_smi_paths": npu_smi_paths,
        "device_cgroup": _device_cgroup(ctx),
        "privileged": _privileged(ctx),
    }
