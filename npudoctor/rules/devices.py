"""Rules about NPU devices: npu-smi answers, chip health, busy devices, device nodes and
their permissions, and the topology (what a chip *is*: :mod:`npudoctor.knowledge.chips`).

Reads ``ctx.view.devices`` (npudoctor/probes/devices.py), ``ctx.view.container`` and the
judged account (``devices.identity``, else ``host.identity``).  The visible-device
variables are judged in rules/visibility.py, chip support in rules/chips.py, shared device
facts live in rules/_devfacts.py.  Root-cause kinds: K13, K15, K16, K17, K18
(the ``[kinds]`` table of ``knowledge/signatures.toml``).

Codes DEV001–DEV059 belong to the device rule modules (DEV090+ to rules/health.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npudoctor import lazyre
from npudoctor.facts.coverage import starved
from npudoctor.facts.devices import Chip, NpuProcess, NpuSmi, NpuSmiCommand
from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.parsers.numbers import to_int
from npudoctor.remedies import Command, DockerFlags, Pipeline, PrependPath, Prose, Remedy
from npudoctor.remedies.world import docker_flags
from npudoctor.rules import rule
from npudoctor.rules._devfacts import (
    judged_identity,
    searched_path_text,
    stack_present,
)

if TYPE_CHECKING:
    from typing import Dict, Iterable, List, Optional, Tuple, Union

    from npudoctor.context import RuleContext

READS = ("cann", "container", "devices", "driver", "host", "packages")

# --------------------------------------------------------------------------- codes
NPU_SMI_HUNG = codes.get("DEV001")
DEVICE_BUSY = codes.get("DEV002")
NPU_SMI_MISSING = codes.get("DEV003")
NPU_SMI_FAILED = codes.get("DEV004")
ENV_TOO_LARGE = codes.get("ENV007")
#: Longest single environment string execve accepts (MAX_ARG_STRLEN: 32 pages of 4 KiB).
MAX_ARG_STRLEN = 32 * 4096
NPU_SMI_CRASHED = codes.get("DEV005")
CHIP_UNHEALTHY = codes.get("DEV010")
CHIP_PROCESSES = codes.get("DEV011")
NODES_MISSING = codes.get("DEV020")
NODE_PERMISSION = codes.get("DEV021")
#: The owner and group of the NPU device nodes the driver installer creates (its default
#: running user, ``--install-username``), which users of the NPU join.
DEVICE_OWNER = "HwHiAiUser"
#: Groups no account is added to for device access: membership grants far more.
_PRIVILEGED_GROUPS = {"root", "0", "wheel", "sudo", "adm", "disk", "shadow", "docker"}
NO_PASSWD = codes.get("DEV022")
TOPOLOGY = codes.get("DEV050")

#: Alarm/error codes of `npu-smi info -t health` whose meaning is known.
#: 80E3A203: tests/fixtures/npu-smi-info-t-health_310B4_23.0.0_Alarm_80E3A203.txt — "node type=LPM,
#: sensor type=Chip Hardware, event state=The function of obtaining the current is abnormal"
#: on a 310B4 development board; the board still computes (the current sensor cannot be read).
KNOWN_HEALTH_CODES: Dict[str, Tuple[bool, str]] = {
    "80E3A203": (
        True,
        "power-management (LPM) current sensor cannot be read; seen on 310B4 development boards, "
        "harmless for computation",
    ),
}


def _chip_label(chip: Chip) -> str:
    label = f"NPU {chip.npu_id}"
    if chip.chip_id is not None:
        label += f" chip {chip.chip_id}"
    return label


# --------------------------------------------------------------------------- rules
#: What npu-smi / DCMI return codes mean.  Sources: ``error_npu-smi_dcmi-8005_*``
#: (vllm-ascend#2698, maintainer: "usually the device is already occupied by other
#: containers"; MindCluster FAQ: driver/firmware upgraded and the server not rebooted) and
#: ``error_npu-smi_dcmi-8020_device-used_in-container.txt`` (cann-container-image#46:
#: "because the device is used").  Any other code: the driver interface failed.
DCMI_CODES: Dict[int, Dict[str, str]] = {
    -8005: {"reason": "dcmi module initialize failed", "cause": "busy"},
    -8020: {"reason": "device is used", "cause": "busy"},
}


def npu_smi_cause(smi: NpuSmi) -> Optional[str]:
    """Why npu-smi failed, judged from the ``devices.npu_smi`` facts: for a DCMI return
    code (``code``: int) "busy" when :data:`DCMI_CODES` says so, else "driver" (whatever
    cause an older snapshot stored); otherwise the observed ``cause`` ("hung", "crashed",
    "not-installed", "permission", "disabled", "unparsed", "driver") or None."""
    if smi.code is not None:
        known = DCMI_CODES.get(smi.code)
        return known["cause"] if known else "driver"
    return smi.cause if smi.cause != "dcmi" else None


_LOADER_LIB_RE = lazyre.pattern(r"error while loading shared libraries:\s*([^\s:]+):")


def _npu_smi_loader(ctx: RuleContext, smi: NpuSmi, evidence: List[str]) -> Finding:
    """DEV004 for an npu-smi the loader cannot start: a driver library (``libc_sec.so``,
    ``libdrvdsmi_host.so``: driver/lib64/common and driver/lib64/driver) is on no loader
    path -- typically npu-smi mounted from the host into an image without CANN.  A
    loader-path problem of the driver's libraries, not of the driver's kernel modules."""
    m = _LOADER_LIB_RE.search(smi.message or smi.error or "")
    lib = m.group(1) if m else "a driver library"
    env = ctx.view.environment
    driver = (env.expected.driver if env.expected is not None else None) or "/usr/local/Ascend/driver"
    dirs = (f"{driver}/lib64", f"{driver}/lib64/common", f"{driver}/lib64/driver")
    fix: List[Union[Remedy, str]] = []
    if ctx.view.container.in_container:
        fix.append(DockerFlags(mounts=(driver,), read_only=True, lead="Mount the host's driver libraries too: "))
    fix.append(PrependPath("LD_LIBRARY_PATH", dirs))
    fix.append(
        f"or, for every program: printf '%s\\n' {' '.join(dirs)} > /etc/ld.so.conf.d/ascend-driver.conf && ldconfig"
    )
    return NPU_SMI_FAILED.finding(
        title=f"npu-smi cannot start: the loader finds no {lib} (a driver library on no loader path)",
        evidence=[
            smi.message or smi.error or "",
            f"npu-smi: {smi.path}",
            *evidence,
            f"{lib} ships with the NPU driver ({driver}/lib64/...): a loader-path problem, not a driver-module one",
        ],
        fix=fix,
        subject="npu-smi",
        data={"library": lib},
    )


def _hang_evidence(cmd: Optional[NpuSmiCommand]) -> List[str]:
    """What tells a hung npu-smi from a starved one: its state, CPU time and the node's
    CPU pressure when it was killed (absent from snapshots of older versions)."""
    if cmd is None or cmd.cpu_s is None and cmd.cpu_pressure is None:
        return []
    bits = []
    if cmd.state:
        bits.append(f"state {cmd.state}" + (" (blocked in the kernel)" if cmd.state == "D" else ""))
    if cmd.cpu_s is not None:
        bits.append(f"{cmd.cpu_s:g} s of CPU used")
    if cmd.cpu_pressure is not None:
        bits.append(f"CPU-starved {cmd.cpu_pressure:g} % of its run (node PSI plus cgroup throttling)")
    return ["when killed: " + ", ".join(bits)]


@rule
def npu_smi_state(ctx: RuleContext) -> Iterable[Finding]:
    """DEV001 hung, DEV002 busy (-8005/-8020), DEV003 not found, DEV004 other failure,
    DEV005 crashed (killed by a signal: its partial table is not believed)."""
    dev = ctx.view.devices
    smi = dev.npu_smi
    if smi.available:
        return
    cause = npu_smi_cause(smi)
    evidence = [f"`{' '.join(c.argv)}`: exit {c.returncode}" for c in smi.commands[:1] if not c.timed_out]
    if cause == "hung":
        first = smi.commands[0] if smi.commands else None
        if (
            first is not None
            and first.timed_out
            and starved(first.cpu_pressure, first.state, first.cpu_s, first.duration)
        ):
            return  # a busy node, not a hung driver: the area is "not checked" (facts/coverage.py)
        yield NPU_SMI_HUNG.finding(
            title=smi.error or NPU_SMI_HUNG.title,
            evidence=[smi.error or "npu-smi timed out", f"npu-smi: {smi.path}", *_hang_evidence(first)],
            fix=[
                Pipeline((("dmesg",), ("grep", "-i", "-E", "davinci|npu|hccs"), ("tail", "-50"))),
                Prose("Stop the jobs that hold the NPUs, then run npu-smi again:"),
                Command(("npu-smi", "info")),
                "If it still hangs: reboot the server (a driver/firmware upgrade needs a reboot)",
            ],
        )
    elif cause == "busy":
        code = smi.code
        nodes = [n.path for n in dev.chip_nodes]
        fix: List[Union[Remedy, str]] = [
            "On the host: `npu-smi info` and look at the process table; stop the container or "
            "process that holds this NPU (`docker ps` names it, then `docker stop` with that name)",
            docker_flags([], lead="Or start this container with a free device: ", pick_device=True),
        ]
        if code == -8005:
            # -8020 says the device is in use: no privilege gives it a second owner
            fix.append("Or start it with `--privileged` (the maintainers' workaround for -8005 in containers)")
            fix.append("If the driver or firmware was just upgraded: reboot the server")
        yield DEVICE_BUSY.finding(
            title=f"npu-smi cannot open the NPU (ret {code}): the device is busy or not accessible",
            evidence=[f"`npu-smi info` printed: {smi.message or smi.error}"]
            + (
                [
                    f"device nodes in this {'container' if ctx.view.container.in_container else 'machine'}: {', '.join(nodes)}"
                ]
                if nodes
                else []
            ),
            fix=fix,
            subject="npu-smi",
            data={"code": code},
        )
    elif cause == "not-installed":
        if not stack_present(ctx.view) or ctx.view.container.in_container:
            return  # nothing NPU here (calm), or the container rules say which mount is missing
        yield NPU_SMI_MISSING.finding(
            evidence=[smi.error or "npu-smi not found", searched_path_text(smi, ctx.view)],
            fix=[
                PrependPath("PATH", ("/usr/local/bin", "/usr/local/sbin"), note="where the driver installs npu-smi"),
                "If it is not there either: install the NPU driver package (Ascend HDK npu-driver)",
            ],
        )
    elif cause == "loader":
        yield _npu_smi_loader(ctx, smi, evidence)
    elif cause == "crashed":
        yield NPU_SMI_CRASHED.finding(
            title=smi.error or NPU_SMI_CRASHED.title,
            evidence=[smi.error or "npu-smi was killed by a signal", f"npu-smi: {smi.path}"],
            fix=[
                Pipeline((("dmesg",), ("grep", "-i", "-E", "davinci|npu|dcmi|segfault"), ("tail", "-50"))),
                Command(("npu-smi", "info"), note="run it again by hand: a crash every time points at the driver"),
                "If the driver or firmware was just upgraded: reboot the server",
            ],
        )
    elif "Argument list too long" in (smi.error or ""):
        yield _environment_too_large(ctx, smi.error or "")
    elif cause in ("permission", "driver", "unparsed"):
        yield NPU_SMI_FAILED.finding(
            title=f"npu-smi failed: {(smi.message or smi.error or '')[:160]}",
            evidence=[smi.error or ""] + evidence,
            fix=[
                Pipeline((("lsmod",), ("grep", "-i", "drv")), note="the NPU driver modules must be loaded"),
                Pipeline(
                    (("ls", "-l", "/dev"), ("grep", "-E", "davinci|devmm_svm|hisi_hdc")),
                    note="the NPU nodes must be present",
                ),
                Command(("ls", "-l", "/usr/local/dcmi"), note="the DCMI library must be present"),
            ],
            data={"code": smi.code},
        )


def _environment_too_large(ctx: RuleContext, error: str) -> Finding:
    """ENV007: npu-smi could not be started because the environment is too large for execve
    (E2BIG): the owner is the environment (a profile or script), not the driver."""
    current = ctx.view.environment.current
    sizes = sorted(((len(k) + 1 + len(v), k) for k, v in current.items()), reverse=True)
    long = [(n, k) for n, k in sizes if n > MAX_ARG_STRLEN] or sizes[:1]
    evidence = [f"starting npu-smi failed: {error}"]
    evidence += [f"{k}: {n:,} bytes (one environment string may hold at most {MAX_ARG_STRLEN:,})" for n, k in long]
    name = long[0][1] if long else None
    entries = current.get(name, "").split(":") if name else []
    if name and len(entries) > 1:
        unique = list(dict.fromkeys(e for e in entries if e))
        evidence.append(f"{name} has {len(entries):,} entries, {len(unique):,} of them different")
    return ENV_TOO_LARGE.finding(
        title=(f"Programs cannot be started with this environment: {name} is too long" if name else None),
        evidence=evidence,
        fix=[
            "Start from a clean environment (a new login shell) and source set_env.sh once; remove "
            f"the code that keeps adding to {name or 'the variable'} (a profile, or a script that "
            "sources set_env.sh again and again)"
        ],
        subject=name,
    )


@rule
def chip_health(ctx: RuleContext) -> Iterable[Finding]:
    """DEV010: one finding per NPU whose chips are not OK (Critical → error)."""
    by_npu: Dict[Optional[int], List[Chip]] = {}
    for chip in ctx.view.devices.chips:
        health = chip.health or ""
        if health and health.upper() != "OK":
            by_npu.setdefault(chip.npu_id, []).append(chip)
    for npu, bad in by_npu.items():
        states = sorted({str(c.health) for c in bad})
        critical = any(s.upper() == "CRITICAL" for s in states)
        evidence = []
        benign: List[str] = []
        unknown_codes: List[str] = []
        for chip in bad:
            line = f"{_chip_label(chip)} ({chip.name}): Health {chip.health}"
            detail = chip.health_detail
            codes = detail.error_codes if detail is not None else ()
            if codes:
                line += f", error code {' '.join(codes)}"
            if detail is not None and detail.information:
                line += f" — {detail.information}"
            evidence.append(line + " (npu-smi info)")
            for code in codes:
                known = KNOWN_HEALTH_CODES.get(code.upper())
                if known and known[0]:
                    benign.append(f"{code}: {known[1]}")
                elif known is None:
                    unknown_codes.append(code)
        title = f"NPU {npu} health is {'/'.join(states)}"
        if benign and not unknown_codes and not critical:
            title += " (known benign alarm)"
        evidence.extend(f"known code {b}" for b in benign)
        first = bad[0]
        chip_id = str(first.chip_id or 0)
        fix: List[Union[Remedy, str]] = [
            Command(
                ("npu-smi", "info", "-t", "health", "-i", str(npu), "-c", chip_id),
                note="Error Code and Error Information",
            )
        ]
        if critical and ctx.view.container.in_container:
            # the chip, the kernel log and /var/log/npu are the node's: its admin resets them
            fix += [
                f"On the host (the node's admin): stop the jobs on NPU {npu}, collect `dmesg` and /var/log/npu/, "
                f"then reset the chip (npu-smi set -t reset -i {npu} -c {chip_id}) or reboot the node",
            ]
        elif critical:
            fix += [
                "Stop the jobs on this NPU and collect `dmesg` and /var/log/npu/",
                Command(
                    ("npu-smi", "set", "-t", "reset", "-i", str(npu), "-c", chip_id), note="resets the chip; or reboot"
                ),
            ]
        elif not benign or unknown_codes:
            fix.append("Look the error code up in the Ascend health/alarm reference; many alarms are benign")
        yield CHIP_UNHEALTHY.finding(
            title=title,
            evidence=evidence,
            fix=fix,
            severity="error" if critical else "warning",
            subject=f"npu{npu}",
            data={"npu_id": npu, "health": states, "benign_codes": [b.split(":")[0] for b in benign]},
        )


@rule
def held_by_processes(ctx: RuleContext) -> Iterable[Finding]:
    """DEV011: processes on NPUs (warning when HBM of that chip is > 80 % used)."""
    dev = ctx.view.devices
    if not dev.processes:
        return
    chips = {(c.npu_id, c.chip_id): c for c in dev.chips}
    by_chip: Dict[Tuple[Optional[int], Optional[int]], List[NpuProcess]] = {}
    for p in dev.processes:
        by_chip.setdefault((p.npu_id, p.chip_id), []).append(p)
    for (npu, chip_id), plist in sorted(by_chip.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1]))):
        chip = chips.get((npu, chip_id)) or Chip()
        used, total = chip.hbm_used_mb, chip.hbm_total_mb
        if not total:
            used, total = chip.memory_used_mb, chip.memory_total_mb
        full = bool(total) and used is not None and total is not None and used / total > 0.8
        desc = ", ".join(f"pid {p.pid} {p.name or '(no name)'} {p.memory_mb} MB" for p in plist)
        mem = f" ({used} of {total} MB used)" if total else ""
        yield CHIP_PROCESSES.finding(
            title=f"NPU {npu} chip {chip_id} is in use by {len(plist)} process(es){mem}",
            evidence=[f"npu-smi info process table: {desc}"],
            fix=["If these are not yours: stop them, or pick another NPU (ASCEND_RT_VISIBLE_DEVICES)"] if full else [],
            severity="warning" if full else "info",
            subject=f"npu{npu}-chip{chip_id}",
            data={"pids": [p.pid for p in plist]},
        )


@rule
def device_nodes(ctx: RuleContext) -> Iterable[Finding]:
    """DEV020: chips or davinci nodes present but control nodes (or chip nodes) missing."""
    dev = ctx.view.devices
    if dev.nodes_error or ctx.view.unread("devices", "nodes"):
        return  # the nodes could not be looked at (or read): nothing is known missing
    nodes = dev.nodes
    chips = dev.chips
    present_chips = dev.chip_nodes
    if not present_chips and not chips:
        return  # no NPU here, or a container without devices (container rules)
    missing = [n.path for n in nodes if n.kind == "control" and not n.exists]
    no_chip_nodes = not present_chips and bool(chips)
    if not missing and not no_chip_nodes:
        return
    container = ctx.view.container.in_container
    ids = list(dev.node_numbers)
    evidence = []
    if no_chip_nodes:
        evidence.append(f"npu-smi lists {len(chips)} chip(s) but no /dev/davinciN node exists")
    if missing:
        evidence.append("missing: " + ", ".join(missing))
    if present_chips:
        evidence.append("present: " + ", ".join(n.path for n in present_chips))
    if container:
        want = ids or sorted({c.logic_id for c in chips if c.logic_id is not None})
        fix: List[Union[Remedy, str]] = [
            docker_flags(
                want if no_chip_nodes else [],
                control=missing,
                lead="Recreate the container with: ",
                pick_device=no_chip_nodes and not want,
            ),
            "Or use the Ascend Docker Runtime (`--runtime ascend` with `-e ASCEND_VISIBLE_DEVICES=` and the NPU ids), "
            "which adds them",
        ]
    else:
        fix = [
            Pipeline((("lsmod",), ("grep", "-i", "drv")), note="the NPU driver must be loaded"),
            "Reinstall the NPU driver package (Ascend HDK npu-driver) or reboot after a driver upgrade",
        ]
    yield NODES_MISSING.finding(
        title=("NPU device nodes missing in this container: " if container else "NPU device nodes missing: ")
        + ", ".join(missing or ["/dev/davinciN"]),
        evidence=evidence,
        fix=fix,
        data={"missing": missing},
    )


@rule
def node_permissions(ctx: RuleContext) -> Iterable[Finding]:
    """DEV021: the judged account cannot read+write some existing device node."""
    ident = judged_identity(ctx.view.devices, ctx.view.host)
    denied = [n for n in ctx.view.devices.nodes if n.exists and n.accessible_by_identity is False]
    if not denied or ident is None:
        return
    who = ident.name or f"uid {ident.uid}"
    groups = list(ident.groups)
    evidence = [f"{n.path}: owner {n.owner or n.uid}:{n.group or n.gid} mode {n.mode}" for n in denied[:12]]
    evidence.append(f"judged account: {who} (uid {ident.uid}, gid {ident.gid}, groups {groups}; from {ident.source})")
    node = denied[0]
    group = node.group or str(node.gid)
    fix: List[Remedy] = []
    mode = max(to_int(node.mode or "0", 8) or 0, 0)
    paths = tuple(n.path for n in denied)
    # the device group every account using the NPU joins (the driver installer's default)
    joined = group
    if mode & 0o060 != 0o060 or group in _PRIVILEGED_GROUPS:
        fix.append(
            Command(
                ("chown", f"{DEVICE_OWNER}:{DEVICE_OWNER}") + paths,
                lead="on the host, restore the standard owner and mode: ",
            )
        )
        fix.append(Command(("chmod", "0660") + paths))
        joined = DEVICE_OWNER
    if ident.name and ident.has_passwd_entry and joined not in _PRIVILEGED_GROUPS and ident.name != joined:
        fix.append(Command(("usermod", "-aG", joined, ident.name), note="then log in again"))
    if ctx.view.container.in_container or not ident.has_passwd_entry:
        fix.append(
            Prose(
                f"Run the container as the device owner: --user {node.uid}:{node.gid} "
                f"(Kubernetes: securityContext runAsUser: {node.uid}, runAsGroup: {node.gid}, "
                f"or supplementalGroups: [{node.gid}])"
            )
        )
    yield NODE_PERMISSION.finding(
        title=f"{who} cannot open {len(denied)} NPU device node(s) (owner "
        f"{node.owner or node.uid}:{group}, mode {node.mode})",
        evidence=evidence,
        fix=fix,
        subject=str(ident.uid),
    )


@rule
def passwd_entry(ctx: RuleContext) -> Iterable[Finding]:
    """DEV022: a non-root UID with no passwd entry, where NPUs are in use."""
    ident = judged_identity(ctx.view.devices, ctx.view.host)
    # (has_passwd_entry None: not recorded, as a missing key was read before the views)
    if ident is None or ident.has_passwd_entry is not False or ident.uid in (0, None):
        return
    if not stack_present(ctx.view):
        return
    uid, gid = ident.uid, ident.gid
    yield NO_PASSWD.finding(
        title=f"UID {uid} has no /etc/passwd entry: HCCL multi-card init fails (error code 19)",
        evidence=[f"uid {uid} (from {ident.source}) is not in /etc/passwd"],
        fix=[
            f"In the image: RUN groupadd -g {gid} npu && useradd -u {uid} -g {gid} -m npu",
            "Or run as an account that exists in the image (root, or HwHiAiUser with uid 1000)",
        ],
    )


@rule
def topology_summary(ctx: RuleContext) -> Iterable[Finding]:
    """DEV050: all-fabric vs PCIe islands, CPU affinity per NPU (info)."""
    topo = ctx.view.devices.topology
    if topo is None or len(topo.npus) < 2:
        return
    npus = topo.npus
    types = list(topo.link_types)
    if topo.all_fabric:
        title = f"{len(npus)} NPUs, every pair linked by {'/'.join(types)}"
    else:
        islands = topo.islands
        groups = " ".join("[" + ",".join(str(i) for i in g) + "]" for g in islands)
        title = f"{len(npus)} NPUs in {len(islands)} island(s) {groups}; links {'/'.join(types)}"
    affinity = topo.affinity
    by_cpus: Dict[str, List[str]] = {}
    for npu, cpus in affinity.items():
        by_cpus.setdefault(cpus, []).append(npu)
    evidence = [f"CPU affinity: NPU {','.join(v)} → cores {k}" for k, v in by_cpus.items()]
    fix = []
    if affinity and len(by_cpus) > 1:
        first_npu, first_cpus = next(iter(affinity.items()))
        fix.append(
            f"Bind each rank's data-loader workers near its NPU, e.g. start the rank of NPU {first_npu} under `taskset -c {first_cpus}`"
        )
    if not topo.all_fabric:
        fix.append("Keep tensor-parallel groups inside one island (HCCS/SIO/UB or one PCIe switch)")
    yield TOPOLOGY.finding(
        title=title, evidence=evidence, fix=fix, data={"islands": [list(g) for g in topo.islands], "link_types": types}
    )
