"""Rules about container plumbing for NPUs: device nodes passed in, driver files and tools
mounted, the device cgroup.  Reads ``facts["container"]`` (npudoctor/probes/container.py)
and ``facts["devices"]`` through the typed views (``ctx.view``).  Root-cause kind K16
(the ``[kinds]`` table of ``knowledge/signatures.toml``).

The exact flags come from the standard vllm-ascend ``docker run``
(tests/fixtures/docker-run_vllm-ascend_standard-device-mounts.sh.txt) and the official
notes on manual device passthrough.  Codes CTR001–CTR049.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from npudoctor.facts.container import ContainerFacts, Mount
from npudoctor.facts.devices import NpuSmi
from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.remedies import DockerFlags, Pipeline, Prose, Remedy
from npudoctor.remedies.world import HOST_MOUNTS, docker_flags, host_mounts_fix, passthrough_fix
from npudoctor.rules import postprocess, rule
from npudoctor.rules._devfacts import parse_id_list, searched_path_text, stack_present

if TYPE_CHECKING:
    from typing import Iterable, List, Optional, Sequence, Union

    from npudoctor.context import RuleContext

READS = ("cann", "container", "devices", "driver", "packages")
ONLY_WITH = ("container",)

NO_DEVICES = codes.get("CTR001")
DRIVER_NOT_MOUNTED = codes.get("CTR002")
TOOLS_NOT_MOUNTED = codes.get("CTR003")
INSTALL_INFO_MISSING = codes.get("CTR004")
CGROUP_DENIES = codes.get("CTR005")

_MOUNT_DRIVER = ("/usr/local/Ascend/driver/lib64/", "/usr/local/Ascend/driver/version.info")

#: The mount findings whose host paths one recreated container (or one pod spec) mounts
#: together, in the order the first present one carries the merged fix.
MOUNT_CODES = ("CTR002", "CTR003", "CTR004")

_RECREATE = "Recreate the container with: "


def _npu_intended(ctx: RuleContext) -> bool:
    return stack_present(ctx.view) or bool(ctx.view.devices.visibility.ascend_visible_devices)


def _mount(container: ContainerFacts, path: str) -> Optional[Mount]:
    """The container probe's record of ``path``, or ``None`` when it did not check it."""
    for m in container.mounts:
        if m.path == path:
            return m
    return None


def _smi_evidence(ctx: RuleContext, smi: NpuSmi) -> List[str]:
    """How looking for npu-smi went, said once: its error (already naming npu-smi, from
    ``facts["devices"]["npu_smi"]["error"]``) and, when it was not found, the PATH searched."""
    if not smi.error:
        return []
    error = smi.error
    out = [error if error.lower().startswith(("npu-smi", "`npu-smi")) else f"npu-smi: {error}"]
    if smi.cause == "not-installed":
        out.append(searched_path_text(smi, ctx.view))
    return out


@rule
def container_devices(ctx: RuleContext) -> Iterable[Finding]:
    """CTR001: in a container where NPUs are intended, no /dev/davinciN at all."""
    container = ctx.view.container
    if not container.in_container or not _npu_intended(ctx) or ctx.view.state("devices") == "absent":
        return  # devices not probed (`health --skip devices`): no evidence either way
    dev = ctx.view.devices
    if dev.chip_nodes or dev.chips or dev.nodes_error or ctx.view.unread("devices", "nodes"):
        return  # nodes present, or /dev could not be looked at (refused or unreadable is not absent)
    wanted = dev.visibility.ascend_visible_devices
    ids: List[int] = parse_id_list(wanted)[0] if wanted else []
    evidence = ["no /dev/davinciN node in this container"]
    evidence += container.evidence
    if ctx.view.container.runs_in == "pod":
        if wanted is not None:
            evidence.append(f"ASCEND_VISIBLE_DEVICES={wanted!r}: the Ascend runtime mounted no NPU for this pod")
        yield NO_DEVICES.finding(
            evidence=evidence, fix=passthrough_fix(ctx.view.container.runs_in, ids), data={"world": "pod"}
        )
        return
    fix: List[Union[Remedy, str]] = [docker_flags(ids or [0], mounts=(), lead="Recreate the container with: ")]
    if wanted:
        evidence.append(
            f"ASCEND_VISIBLE_DEVICES={wanted} is set, but it only works when the Ascend Docker Runtime "
            "creates the container"
        )
    fix += [
        Pipeline(
            (("docker", "info"), ("grep", "-i", "runtime")),
            lead="Or use the Ascend Docker Runtime; on the host, check that it is installed: ",
            note="must list ascend",
        ),
        DockerFlags(
            runtime="ascend",
            env=(("ASCEND_VISIBLE_DEVICES", wanted or "0"),),
            lead="then recreate the container with your usual `docker run` arguments and: ",
        ),
    ]
    yield NO_DEVICES.finding(evidence=evidence, fix=fix)


@rule
def container_mounts(ctx: RuleContext) -> Iterable[Finding]:
    """CTR002 driver not mounted, CTR003 npu-smi/dcmi not mounted, CTR004 install.info."""
    container = ctx.view.container
    if not container.in_container or not _npu_intended(ctx):
        return
    dev = ctx.view.devices
    nodrv = "NODRV" in (dev.visibility.ascend_runtime_options or "").upper()
    missing_driver = [
        p
        for p in ("/usr/local/Ascend/driver/lib64", "/usr/local/Ascend/driver/version.info")
        if not _exists(_mount(container, p))
    ]
    if missing_driver:
        ev = [f"{p}: not present" for p in missing_driver]
        if nodrv:
            ev.append("ASCEND_RUNTIME_OPTIONS contains NODRV: the Ascend runtime was told not to mount the driver")
        yield DRIVER_NOT_MOUNTED.finding(
            evidence=ev,
            fix=host_mounts_fix(ctx.view.container.runs_in, _MOUNT_DRIVER, lead=_RECREATE)
            + (["Or drop NODRV from ASCEND_RUNTIME_OPTIONS"] if nodrv else []),
            data={"mounts": list(_MOUNT_DRIVER)},
        )
    smi = dev.npu_smi
    has_smi = bool(container.npu_smi_paths) or bool(smi.path)
    dcmi = _mount(container, "/usr/local/dcmi")
    missing_tools: List[str] = []
    if not has_smi:
        missing_tools.append("/usr/local/bin/npu-smi")
    if dcmi is not None and not dcmi.exists:
        missing_tools.append("/usr/local/dcmi")
    if missing_tools:
        yield TOOLS_NOT_MOUNTED.finding(
            title="not mounted into this container: " + ", ".join(missing_tools),
            evidence=[f"{p}: not present" for p in missing_tools] + _smi_evidence(ctx, smi),
            fix=host_mounts_fix(ctx.view.container.runs_in, missing_tools, lead=_RECREATE)
            + (
                ["(npu-smi lives in /usr/local/sbin on some hosts: mount /usr/local/sbin/npu-smi at the same path)"]
                if not has_smi
                else []
            ),
            data={"mounts": missing_tools},
        )
    info = _mount(container, "/etc/ascend_install.info")
    if info is not None and not info.exists:
        cann_major = _cann_major(ctx)
        yield INSTALL_INFO_MISSING.finding(
            evidence=["/etc/ascend_install.info: not present"]
            + ([f"CANN {cann_major}.x set_env.sh reads it"] if cann_major and cann_major >= 9 else []),
            fix=host_mounts_fix(ctx.view.container.runs_in, ["/etc/ascend_install.info"], lead=_RECREATE),
            severity="warning" if cann_major and cann_major >= 9 else "info",
            data={"mounts": ["/etc/ascend_install.info"]},
        )


@postprocess
def one_recreate_line(ctx: RuleContext, findings: List[Finding]) -> List[Finding]:
    """One root cause for the user -- the container was created without the host's
    mounts -- gets one fix: when two or more of CTR002, CTR003 and CTR004 are reported
    (without CTR006), the first of them carries ONE
    ``docker run`` flags step (in a pod: one ``volumes``/``volumeMounts`` pair) with the
    host paths of all of them, plus their prose notes; the others point to it and name
    it in ``data["because"]`` (folded under it by :func:`npudoctor.rules.order.fold_symptoms`
    when it is at least as severe).  ``data["mounts"]`` of the first lists every path.
    With CTR006 in a docker-style container, whose explicit ``docker run`` flags mount the
    host's whole driver, dcmi, npu-smi and ascend_install.info, the mount findings point to
    that one line instead (:func:`_point_to_npu_not_given`)."""
    mounting = [f for code in MOUNT_CODES for f in findings if f.code == code and f.data.get("mounts")]
    if any(f.code == "CTR006" for f in findings):
        return _point_to_npu_not_given(ctx, findings, mounting)
    if len(mounting) < 2:
        return findings
    root = mounting[0]
    paths = list(dict.fromkeys(str(p) for f in mounting for p in f.data["mounts"]))
    notes: List[Union[Remedy, str]] = [
        Prose(line) for f in mounting for line, r in zip(f.fix, f.remedies) if r.get("kind") == "prose"
    ]
    merged = codes.get(root.code).finding(
        title=root.title,
        evidence=root.evidence,
        fix=host_mounts_fix(ctx.view.container.runs_in, paths, lead=_RECREATE) + notes,
        severity=root.severity,
        subject=root.subject,
        data=dict(root.data, mounts=paths, mounts_of=[f.code for f in mounting]),
        after=root.after,
    )
    if ctx.view.container.runs_in == "pod":
        pointer = f"Mounted by the pod spec's volumes of {root.code}: one pod spec edit mounts all of them"
    else:
        pointer = f"Mounted by the `docker run` flags of {root.code}: one recreated container mounts all of them"
    replaced = {id(root): merged}
    for f in mounting[1:]:
        replaced[id(f)] = codes.get(f.code).finding(
            title=f.title,
            evidence=f.evidence,
            fix=[pointer],
            severity=f.severity,
            subject=f.subject,
            data=dict(f.data, because=root.code, mounts_with=root.code),
            after=f.after,
        )
    return [replaced.get(id(f), f) for f in findings]


def _exists(mount: Optional[Mount]) -> bool:
    """A mount the probe did not check (or whose presence it did not record) counts as
    present: no evidence it is missing."""
    return mount is None or mount.exists is not False


def _cann_major(ctx: RuleContext) -> int:
    selected = ctx.view.cann.selected
    version = (selected.version or "") if selected is not None else ""
    m = re.match(r"^([0-9]{1,18})\.", version)
    return int(m.group(1)) if m else 0


def _allowed(entries: Sequence[str], major: int, minor: int) -> bool:
    for entry in entries:
        parts = entry.split()
        if len(parts) < 3 or parts[0] not in ("a", "c"):
            continue
        if parts[0] == "a":
            return True
        maj, _, mnr = parts[1].partition(":")
        if (
            (maj == "*" or maj == str(major))
            and (mnr == "*" or mnr == str(minor))
            and "r" in parts[2]
            and "w" in parts[2]
        ):
            return True
    return False


#: The rw rules runc gives every container (runc libcontainer/specconv AllowedDevices:
#: null, random, full, tty, zero, urandom, console, pts, ptmx, tun).  A devices.list whose
#: rw rules are all among these allows no NPU node, whatever its (dynamic) major number.
RUNC_DEFAULT_RW = frozenset(
    {"c 1:3", "c 1:8", "c 1:7", "c 5:0", "c 1:5", "c 1:9", "c 5:1", "c 136:*", "c 5:2", "c 10:200"}
)


def _only_runc_defaults(entries: Sequence[str]) -> bool:
    """True when no rule of ``entries`` grants read+write beyond runc's defaults."""
    for entry in entries:
        parts = entry.split()
        if len(parts) < 3 or "r" not in parts[2] or "w" not in parts[2]:
            continue
        if parts[0] == "a" or f"{parts[0]} {parts[1]}" not in RUNC_DEFAULT_RW:
            return False
    return True


@rule
def device_cgroup(ctx: RuleContext) -> Iterable[Finding]:
    """CTR005: NPU nodes present but not allowed by the cgroup v1 devices.list.

    Char-device nodes (live) are judged by their major:minor; nodes whose numbers are not
    known (plain files under ``--root``, snapshots) are denied when the list grants rw to
    nothing beyond runc's defaults (:data:`RUNC_DEFAULT_RW`)."""
    container = ctx.view.container
    cg = container.device_cgroup
    if not container.in_container or cg is None or cg.allow_all:
        return
    entries = list(cg.entries)
    nodes = [n for n in ctx.view.devices.nodes if n.exists]
    denied = [n for n in nodes if n.char_device and len(n.rdev) >= 2 and not _allowed(entries, *n.rdev[:2])]
    evidence = [f"{n.path} (c {n.rdev[0]}:{n.rdev[1]}) not in {cg.path}" for n in denied[:8]]
    unnumbered = [n for n in nodes if not n.rdev]
    if unnumbered and _only_runc_defaults(entries):
        denied += unnumbered
        evidence.append(
            f"{cg.path} grants read/write only to runc's default devices "
            f"({', '.join(e for e in entries if 'w' in e.split()[-1])[:200]}), none of them an NPU node"
        )
        evidence.append("NPU nodes present: " + ", ".join(n.path for n in unnumbered[:8]))
    if not denied:
        return
    if container.kubernetes:
        evidence.append(
            "in a Kubernetes pod: the kubelet CPU manager (`--cpu-manager-policy=static`) makes runc re-apply the "
            "device cgroup and drops the rules the Ascend Docker Runtime added (MindCluster FAQ)"
        )
    yield CGROUP_DENIES.finding(
        title=f"the container's device cgroup ({cg.path}) does not allow {len(denied)} NPU node(s): "
        "opening them fails with EPERM",
        evidence=evidence,
        fix=[
            "Kubernetes with CPU manager `static`: run the Ascend Device Plugin with -useAscendDocker=false "
            "(it then mounts the devices itself)",
            "Or recreate the pod/container so that the runtime re-applies the device rules",
        ],
    )


def _covered(path: str, mounts: Sequence[str]) -> bool:
    """Whether mounting ``mounts`` (directories or files) also mounts ``path``."""
    clean = path.rstrip("/")
    return any(clean == m.rstrip("/") or clean.startswith(m.rstrip("/") + "/") for m in mounts)


def _point_to_npu_not_given(ctx: RuleContext, findings: List[Finding], mounting: List[Finding]) -> List[Finding]:
    """With CTR006 reported in a docker-style container: each mount finding whose paths the
    explicit flags of CTR006's fix mount (:data:`npudoctor.remedies.world.HOST_MOUNTS`)
    points to that one ``docker run`` line instead of printing its own recreate line."""
    if ctx.view.container.runs_in != "container":
        return findings
    replaced = {}
    for f in mounting:
        if not all(_covered(str(p), HOST_MOUNTS) for p in f.data["mounts"]):
            continue
        replaced[id(f)] = codes.get(f.code).finding(
            title=f.title,
            evidence=f.evidence,
            fix=["Mounted by the explicit `docker run` flags of CTR006 (its second option), with the NPU itself"],
            severity=f.severity,
            subject=f.subject,
            data=dict(f.data, mounts_with="CTR006"),
            after=f.after,
        )
    return [replaced.get(id(f), f) for f in findings]
