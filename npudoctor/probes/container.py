"""Container: are we inside one, which runtime/orchestrator, and are the Ascend driver
files a container needs mounted in.

Section ``container``::

    in_container   bool
    runtime        "docker" | "podman" | "containerd" | "lxc" | None
    kubernetes     bool (KUBERNETES_SERVICE_HOST, the service-account directory, or a
                   ``kubepods`` cgroup)
    evidence       [str]  why we think so ("/.dockerenv exists", "/proc/1/cgroup: …kubepods…")
    mounts         [{"path", "exists" (None: cannot tell, see "unreadable"), "what", "required": bool}] — the driver pieces a
                   container needs (tests/fixtures/docker-run_vllm-ascend_standard-device-mounts.sh.txt
                   and the official notes on manual device passthrough):
                   /usr/local/Ascend/driver/lib64, /usr/local/Ascend/driver/version.info,
                   /usr/local/dcmi, npu-smi (/usr/local/bin or /usr/local/sbin),
                   /etc/ascend_install.info
    npu_smi_paths  [paths of npu-smi inside the root]
    device_cgroup  {"path", "entries": [str], "allow_all": bool} from the cgroup v1
                   devices.list when readable, else None
    privileged     True/False from CapEff of /proc/self/status (live only), else None
    world          where this process runs, from the markers below: "build" (a BuildKit
                   ``RUN`` step), "pod" (Kubernetes), "container" (docker, podman,
                   containerd, lxc), "host"
    launched_by    [{"name": "systemd" | "slurm" | "ray", "evidence": str, "unit": str|None
                   (systemd: the service of /proc/self/cgroup)}]: what started the diagnosed
                   environment (INVOCATION_ID, SLURM_JOB_ID, RAY_* variables)
    build_markers  [str]: why this looks like an image build step
    capabilities   {"source", "cap_eff", "cap_prm", "cap_bnd" (hex as read), "uid", "gid"
                   (effective ids), "groups"} of /proc/self/status in the root (with
                   --pid N: /proc/N/status, the workload's), or None

Markers (read, never judged here; sources):

* ``/.dockerenv``: created by Docker in the containers it runs; the classic builder made it
  too, BuildKit does not (moby/buildkit#4503, docker/buildx#1447).
* ``/run/.containerenv``: podman / libpod (podman-run(1)); buildah's RUN does not create it
  (containers/buildah#1843).
* cgroup: ``/proc/1/cgroup`` and ``/proc/self/cgroup`` (v1 ``N:ctrl:/docker/…``,
  ``…/kubepods…``; v2 ``0::/…`` with the same path words when the cgroup namespace is the
  host's).
* ``KUBERNETES_SERVICE_HOST`` and ``/var/run/secrets/kubernetes.io``: set and mounted by the
  kubelet in every pod.
* BuildKit's sandbox: the hostname of a ``RUN`` step is ``buildkitsandbox`` (the Dockerfile
  frontend's ``BUILDKIT_SANDBOX_HOSTNAME`` default) and its ``/etc/hosts`` maps
  ``buildkitsandbox`` to 127.0.0.1 (moby/buildkit executor/oci/hosts.go); its cgroup is
  under ``buildkit`` (``0::/docker/buildkit/<id>`` for Docker's builder: moby/moby#37644,
  cryptnono/cryptnono#93).
* ``INVOCATION_ID``: set by systemd for every unit it starts (systemd.exec(5)).
* ``SLURM_JOB_ID``: set by Slurm in a job's environment (sbatch(1), srun(1)).
* ``RAY_*``: Ray sets them for the workers it starts (see probes/devices.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npudoctor.context import Options, ProbeContext
from npudoctor.host import Host
from npudoctor.parsers.procstatus import parse_proc_status

if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional

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
    text = ctx.host.read_text(status_path(ctx)).text or ""
    for line in text.splitlines():
        if line.startswith("CapEff:"):
            try:
                caps = int(line.split(":", 1)[1].strip(), 16)
            except ValueError:
                return None
            return caps & (1 << 21) != 0  # CAP_SYS_ADMIN: set for --privileged
    return None


BUILDKIT_HOSTNAME = "buildkitsandbox"

#: Most launcher variable names kept per launcher (names only: values may hold addresses).
_LAUNCHERS = (("systemd", ("INVOCATION_ID",)), ("slurm", ("SLURM_JOB_ID", "SLURM_JOBID")))


def _hostname(ctx: ProbeContext) -> str:
    """The diagnosed system's host name: the kernel's (``/proc/sys/kernel/hostname``,
    what a BuildKit RUN step sees) else ``/etc/hostname``; "" when neither is readable."""
    for path in ("/proc/sys/kernel/hostname", "/etc/hostname"):
        text = (ctx.host.read_text(path, limit=4096).text or "").strip()
        if text:
            return text.splitlines()[0].strip()
    return ""


def _build_markers(ctx: ProbeContext) -> List[str]:
    """Evidence that this is a BuildKit ``RUN`` step (see the module docstring)."""
    out: List[str] = []
    name = _hostname(ctx)
    if name == BUILDKIT_HOSTNAME:
        out.append(f"host name is {BUILDKIT_HOSTNAME!r} (BuildKit's RUN sandbox)")
    for path in ("/proc/self/cgroup", "/proc/1/cgroup"):
        text = ctx.host.read_text(path, limit=64 * 1024).text or ""
        line = next((ln for ln in text.splitlines() if "buildkit" in ln.split(":", 2)[-1].split("/")), None)
        if line is not None:
            out.append(f"{path}: {line.strip()[:120]} (a BuildKit build container's cgroup)")
            break
    hosts = ctx.host.read_text("/etc/hosts", limit=64 * 1024).text or ""
    if any(BUILDKIT_HOSTNAME in ln.split() for ln in hosts.splitlines() if not ln.lstrip().startswith("#")):
        out.append(f"/etc/hosts maps {BUILDKIT_HOSTNAME!r} (written by BuildKit for RUN steps)")
    return out


def _systemd_unit(ctx: ProbeContext) -> Optional[str]:
    """The systemd service this process runs in: the last ``*.service`` component of its
    cgroup path in ``/proc/self/cgroup`` (v2 ``0::/system.slice/NAME.service``, v1
    ``1:name=systemd:/system.slice/NAME.service``), or None."""
    text = ctx.host.read_text("/proc/self/cgroup", limit=64 * 1024).text or ""
    for line in text.splitlines():
        path = line.split(":", 2)[-1]
        units = [c for c in path.split("/") if c.endswith(".service")]
        if units:
            return units[-1]
    return None


def _launched_by(ctx: ProbeContext) -> List[Dict[str, Any]]:
    """What started the diagnosed environment, from the variables it sets."""
    out: List[Dict[str, Any]] = []
    for name, variables in _LAUNCHERS:
        for var in variables:
            if ctx.host.getenv(var):
                out.append({"name": name, "evidence": f"{var} is set"})
                break
    for rec in out:
        if rec["name"] == "systemd":
            rec["unit"] = _systemd_unit(ctx)
    environ = getattr(ctx.host, "environ", None) or {}
    ray = sorted(k for k in environ if k.startswith("RAY_"))
    if ray:
        out.append({"name": "ray", "evidence": ", ".join(ray[:4]) + (" …" if len(ray) > 4 else "") + " set"})
    return out


def status_path(ctx: ProbeContext) -> str:
    """The ``/proc/PID/status`` of the judged process: ``--pid N``'s, else this process's
    (``/proc/self/status``; under ``--root``, the file of that name in the root)."""
    pid = ctx.options.pid
    return f"/proc/{pid}/status" if pid else "/proc/self/status"


def _capabilities(ctx: ProbeContext) -> Optional[Dict[str, Any]]:
    """CapEff/CapPrm/CapBnd and the effective uid/gid/groups of the judged process's
    ``/proc/PID/status`` (:func:`status_path`), or None."""
    read = ctx.host.read_text(status_path(ctx), limit=64 * 1024)
    if not read.ok:
        return None
    parsed = parse_proc_status(read.text or "")
    if parsed is None:
        return None
    return dict(parsed, source=read.path)


def _presence(host: Host, path: str) -> Dict[str, Any]:
    """``{"exists": True|False|None}`` of a mount point, ``None`` (with ``"unreadable":
    why``) when it cannot be told: a path behind a directory this process may not search,
    or a symlink loop -- unreadable is not absent."""
    denied = len(host.denied)
    if host.exists(path):
        return {"exists": True}
    if len(host.denied) > denied:
        return {"exists": None, "unreadable": "permission denied"}
    _data, error, _cut = host.read_bytes(path, 1)
    if error == "symlink loop":
        return {"exists": None, "unreadable": error}
    return {"exists": False}


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
        {"path": path, **_presence(host, path), "what": what, "required": required} for path, what, required in MOUNTS
    ]
    npu_smi_paths = [p for p in NPU_SMI_PATHS if host.exists(p)]
    build = _build_markers(ctx)
    in_container = runtime is not None or kubernetes or bool(build)
    world = "build" if build and not host.exists("/.dockerenv") else "pod" if kubernetes else None
    world = world or ("container" if in_container else "host")
    return {
        "world": world,
        "launched_by": _launched_by(ctx),
        "build_markers": build,
        "capabilities": _capabilities(ctx),
        "in_container": in_container,
        "runtime": runtime,
        "kubernetes": kubernetes,
        "evidence": evidence,
        "driver_dir": host.is_dir(DRIVER),
        "mounts": mounts,
        "npu_smi_paths": npu_smi_paths,
        "device_cgroup": _device_cgroup(ctx),
        "privileged": _privileged(ctx),
    }


def where(host: Any) -> Dict[str, Any]:
    """Where the process diagnosed through ``host`` (a :class:`npudoctor.host.Host`) runs,
    from the same markers as :func:`probe`: ``{"world": "build" | "pod" | "container" |
    "host", "launched_by": [{"name", "evidence", ...}], "evidence": [str]}``.  For the
    runtime commands that choose the environment to judge before collecting
    (:mod:`npudoctor.runtime.health`); never raises on unreadable markers."""
    found = probe(ProbeContext(host=host, options=Options(), facts={}))
    return {
        "world": found["world"],
        "launched_by": found["launched_by"],
        "evidence": list(found["evidence"]) + list(found["build_markers"]),
    }
