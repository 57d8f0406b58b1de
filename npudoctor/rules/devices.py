"""Rules about NPU devices: npu-smi answers, chip health, busy devices, device nodes and
their permissions, visible-device variables, chip support and topology.

Reads ``facts["devices"]`` (npudoctor/probes/devices.py), ``facts["container"]``,
``facts["host"]["identity"]`` and ``facts["packages"]["installed"]``; uses
``ctx.matrix.chip()`` / ``family_supported()`` when the matrix provides them.
Root-cause kinds: K13, K15, K16, K17, K18 (../shared/cases/kinds.md).

Codes DEV001–DEV059 belong to this module (DEV090+ to rules/health.py).
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, Optional, Tuple

from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.parsers.ranktable import id_ranges
from npudoctor.remedies import DockerFlags
from npudoctor.rules import rule

# --------------------------------------------------------------------------- codes
NPU_SMI_HUNG = codes.get("DEV001")
DEVICE_BUSY = codes.get("DEV002")
NPU_SMI_MISSING = codes.get("DEV003")
NPU_SMI_FAILED = codes.get("DEV004")
CHIP_UNHEALTHY = codes.get("DEV010")
CHIP_PROCESSES = codes.get("DEV011")
NODES_MISSING = codes.get("DEV020")
NODE_PERMISSION = codes.get("DEV021")
NO_PASSWD = codes.get("DEV022")
RT_VISIBLE_INVALID = codes.get("DEV030")
VISIBLE_RUNTIME_ONLY = codes.get("DEV031")
CUDA_VISIBLE = codes.get("DEV032")
DEVICE_ID_INVALID = codes.get("DEV033")
CHIP_UNSUPPORTED = codes.get("DEV040")
NO_BF16 = codes.get("DEV041")
CHIP_UNKNOWN = codes.get("DEV042")
TOPOLOGY = codes.get("DEV050")

#: Alarm/error codes of `npu-smi info -t health` whose meaning is known.
#: 80E3A203: samples/npu-smi-info-t-health_310B4_23.0.0_Alarm_80E3A203.txt — "node type=LPM,
#: sensor type=Chip Hardware, event state=The function of obtaining the current is abnormal"
#: on a 310B4 development board; the board still computes (the current sensor cannot be read).
KNOWN_HEALTH_CODES: Dict[str, Tuple[bool, str]] = {
    "80E3A203": (
        True,
        "power-management (LPM) current sensor cannot be read; seen on 310B4 development boards, "
        "harmless for computation",
    ),
}

_CONTROL = ("/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc")

#: SoC names that torch_npu learned after its first 2.1/1.11 releases: the extension line
#: (release-branch suffix, e.g. v2.1.0-6.0.rc1) whose SoC table first lists them.  Older
#: builds raise ``Unsupported soc version: <name>`` at ``import torch_npu``/first device use.
#: Source: torch_npu NpuVariables.cpp per release branch (../shared/matrix/REPORT.md §4.1
#: "History in torch_npu branches"): 310B4 added in -6.0.rc1, 910B4-1 in -6.0.rc2, 310P5/310P7
#: and Ascend910_9362 in -7.0.0.
SOC_FIRST_EXT: Dict[str, str] = {
    "Ascend310B4": "6.0.rc1",
    "Ascend910B4-1": "6.0.rc2",
    "Ascend310P5": "7.0.0",
    "Ascend310P7": "7.0.0",
    "Ascend910_9362": "7.0.0",
}

#: Edge SoC families: torch_npu's SoC table lists them, but the torch_npu install guide
#: (v2.7.1-26.x installation_description.md, "Supported hardware products") marks
#: "Atlas 200I/500 A2 inference" x, and the field reports (Ascend/pytorch#57, case 33;
#: llama.cpp#10719 `SOC_VERSION ascend310b1 does not support`) show frameworks rejecting them.
EDGE_FAMILIES = ("310B",)


# ------------------------------------------------------------------------- helpers
def stack_present(ctx: Any) -> bool:
    """True when there is something NPU-related here (overview's ``npu_stack_present``
    when available, plus the device facts)."""
    dev = ctx.facts("devices")
    own = bool(dev.get("chips")) or bool(dev.get("nodes")) or bool((dev.get("npu_smi") or {}).get("path"))
    try:
        from npudoctor.rules.overview import npu_stack_present
    except Exception:  # pragma: no cover - overview module absent
        return own or bool(ctx.facts("cann").get("toolkits")) or bool(ctx.facts("driver").get("driver"))
    return own or bool(npu_stack_present(ctx.snapshot))


def in_container(ctx: Any) -> bool:
    return bool(ctx.facts("container").get("in_container"))


def chip_nodes(dev: Dict[str, Any]) -> List[Dict[str, Any]]:
    return [n for n in dev.get("nodes") or [] if n.get("kind") == "chip" and n.get("exists")]


def node_number(node: Dict[str, Any]) -> Optional[int]:
    m = re.search(r"davinci(\d+)$", str(node.get("path", "")))
    return int(m.group(1)) if m else None


def parse_id_list(raw: str) -> Tuple[List[int], List[str]]:
    """``"0-2,4"`` → ([0,1,2,4], []) for ASCEND_VISIBLE_DEVICES syntax (single, list,
    ranges; MindCluster docs); bad parts are returned in the second list."""
    ids: List[int] = []
    bad: List[str] = []
    for part in raw.split(","):
        part = part.strip()
        m = re.match(r"^(\d+)(?:-(\d+))?$", part)
        if not m:
            if part:
                bad.append(part)
            continue
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi < lo or hi - lo > 4096:
            bad.append(part)
            continue
        ids.extend(range(lo, hi + 1))
    return ids, bad


def docker_flags(
    device_ids: Iterable[int],
    control: Iterable[str] = _CONTROL,
    mounts: Iterable[str] = (),
    lead: str = "",
    pick_device: bool = False,
) -> DockerFlags:
    """The ``docker run`` flags remedy for these devices, control nodes and mounts
    (rendered in the order of the standard vllm-ascend command by
    :func:`npudoctor.remedies.render.docker_words`); ``pick_device`` when the NPU to add
    is not known (prose asks for a free one)."""
    return DockerFlags(
        devices=tuple(int(i) for i in device_ids),
        control=tuple(control),
        mounts=tuple(mounts),
        lead=lead,
        pick_device=pick_device,
    )


def _package_version(ctx: Any, *names: str) -> Optional[str]:
    installed = ctx.facts("packages").get("installed") or {}
    if not isinstance(installed, dict):
        return None
    for name in names:
        recs = installed.get(name) or []
        if recs and isinstance(recs[0], dict) and recs[0].get("version"):
            return str(recs[0]["version"])
    return None


def _chip_label(chip: Dict[str, Any]) -> str:
    label = f"NPU {chip.get('npu_id')}"
    if chip.get("chip_id") is not None:
        label += f" chip {chip.get('chip_id')}"
    return label


#: ``soc_source`` prefix of a soc_version an older devices probe looked up in the matrix
#: (not measured): such a value is looked up again, with the current matrix.
_MATRIX_SOURCE = "matrix"


def chip_identity(matrix: Any, chip: Dict[str, Any]) -> Dict[str, Any]:
    """What the matrix knows about one ``devices.chips`` record, judged now.

    ``matrix``: the loaded matrix or ``None``; ``chip``: the record (``name`` is the
    npu-smi Name; ``soc_version`` with a ``soc_source`` is kept when npu-smi measured it,
    e.g. ``-t board`` for A3).  Returns ``{"soc_version", "soc_source", "family", "bf16",
    "kernels_dir", "known"}``: family/bf16/kernels_dir always come from
    ``matrix.chip(name)`` (identity fields an older snapshot stored are ignored), so a
    replayed snapshot is judged with the current matrix; ``known`` is False when the
    matrix does not list the chip (or there is no matrix).  Never raises.
    """
    soc = chip.get("soc_version") if isinstance(chip.get("soc_version"), str) else None
    source = chip.get("soc_source") if isinstance(chip.get("soc_source"), str) else None
    if soc and source and source.startswith(_MATRIX_SOURCE):
        soc = source = None
    info = None
    if matrix is not None:
        try:
            info = matrix.chip(str(chip.get("name") or ""))
        except Exception:  # a matrix that cannot answer leaves the chip unknown
            info = None
    out: Dict[str, Any] = {"soc_version": soc, "soc_source": source if soc else None}
    for key in ("family", "bf16", "kernels_dir"):
        out[key] = getattr(info, key, None) if info is not None else None
    if not soc and info is not None and getattr(info, "soc_version", None):
        out["soc_version"] = info.soc_version
        out["soc_source"] = "matrix (npu-smi Name)"
    out["known"] = out["family"] is not None
    return out


#: Longest PATH shown whole in evidence (characters); longer ones keep their first entries.
PATH_TEXT_LIMIT = 200


def shorten_path_list(entries: List[str], limit: int = PATH_TEXT_LIMIT) -> str:
    """``entries`` joined with ``:``; when longer than ``limit`` characters, the first
    entries that fit followed by ``… (+N more)`` (N: the entries left out).  At least one
    entry is always shown.  Example: ``/a:/b … (+12 more)``."""
    whole = ":".join(entries)
    if len(whole) <= limit:
        return whole
    shown: List[str] = []
    for entry in entries:
        if shown and len(":".join(shown + [entry])) > limit:
            break
        shown.append(entry)
    return ":".join(shown) + f" … (+{len(entries) - len(shown)} more)"


def searched_path_text(ctx: Any, smi: Dict[str, Any]) -> str:
    """The evidence line naming the PATH that was searched for npu-smi.

    Source: ``facts["devices"]["npu_smi"]["searched"]`` (the diagnosed environment's PATH
    entries); snapshots from before that key fall back to ``facts["environment"]["current"]
    ["PATH"]``.  Returns e.g. ``PATH searched: /usr/bin:/bin``."""
    entries = smi.get("searched")
    if entries is None:
        current = (ctx.facts("environment").get("current") or {}).get("PATH")
        if current is None:
            return "PATH searched: not recorded in this snapshot"
        entries = [p for p in str(current).split(":") if p]
    if not entries:
        return "PATH searched: PATH is empty or unset"
    return "PATH searched: " + shorten_path_list([str(e) for e in entries])


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


def npu_smi_cause(smi: Dict[str, Any]) -> Optional[str]:
    """Why npu-smi failed, judged from the ``devices.npu_smi`` facts: for a DCMI return
    code (``code``: int) "busy" when :data:`DCMI_CODES` says so, else "driver" (whatever
    cause an older snapshot stored); otherwise the observed ``cause`` ("hung",
    "not-installed", "permission", "disabled", "unparsed", "driver") or None."""
    code = smi.get("code")
    if isinstance(code, int) and not isinstance(code, bool):
        known = DCMI_CODES.get(code)
        return known["cause"] if known else "driver"
    cause = smi.get("cause")
    return str(cause) if isinstance(cause, str) and cause != "dcmi" else None


@rule
def npu_smi_state(ctx: Any) -> Iterable[Finding]:
    """DEV001 hung, DEV002 busy (-8005/-8020), DEV003 not found, DEV004 other failure."""
    dev = ctx.facts("devices")
    smi = dev.get("npu_smi") or {}
    if not smi or smi.get("available"):
        return
    cause = npu_smi_cause(smi)
    cmds = smi.get("commands") or []
    evidence = [
        f"`{' '.join(c.get('argv') or [])}`: exit {c.get('returncode')}" for c in cmds[:1] if not c.get("timed_out")
    ]
    if cause == "hung":
        yield NPU_SMI_HUNG.finding(
            title=smi.get("error") or NPU_SMI_HUNG.title,
            evidence=[smi.get("error") or "npu-smi timed out", f"npu-smi: {smi.get('path')}"],
            fix=[
                "dmesg | grep -i -E 'davinci|npu|hccs' | tail -50",
                "Stop the jobs that hold the NPUs, then run `npu-smi info` again",
                "If it still hangs: reboot the server (a driver/firmware upgrade needs a reboot)",
            ],
        )
    elif cause == "busy":
        code = smi.get("code")
        nodes = [n["path"] for n in chip_nodes(dev)]
        fix = [
            "On the host: `npu-smi info` and look at the process table; stop the container or "
            "process that holds this NPU (`docker ps` names it, then `docker stop` with that name)",
            docker_flags([], lead="Or start this container with a free device: ", pick_device=True),
            "Or start it with `--privileged` (the maintainers' workaround for -8005 in containers)",
        ]
        if code == -8005:
            fix.append("If the driver or firmware was just upgraded: reboot the server")
        yield DEVICE_BUSY.finding(
            title=f"npu-smi cannot open the NPU (ret {code}): the device is busy or not accessible",
            evidence=[f"`npu-smi info` printed: {smi.get('message') or smi.get('error')}"]
            + (
                [f"device nodes in this {'container' if in_container(ctx) else 'machine'}: {', '.join(nodes)}"]
                if nodes
                else []
            ),
            fix=fix,
            subject="npu-smi",
            data={"code": code},
        )
    elif cause == "not-installed":
        if not stack_present(ctx) or in_container(ctx):
            return  # nothing NPU here (calm), or the container rules say which mount is missing
        yield NPU_SMI_MISSING.finding(
            evidence=[smi.get("error") or "npu-smi not found", searched_path_text(ctx, smi)],
            fix=[
                "export PATH=$PATH:/usr/local/bin:/usr/local/sbin  # where the driver installs npu-smi",
                "If it is not there either: install the NPU driver package (Ascend HDK npu-driver)",
            ],
        )
    elif cause in ("permission", "driver", "unparsed"):
        yield NPU_SMI_FAILED.finding(
            title=f"npu-smi failed: {str(smi.get('message') or smi.get('error') or '')[:160]}",
            evidence=[smi.get("error") or ""] + evidence,
            fix=[
                "lsmod | grep -i drv  # the NPU driver modules must be loaded",
                "ls -l /dev/davinci* /usr/local/dcmi  # nodes and the DCMI library must be present",
            ],
            data={"code": smi.get("code")},
        )


@rule
def chip_health(ctx: Any) -> Iterable[Finding]:
    """DEV010: one finding per NPU whose chips are not OK (Critical → error)."""
    chips = ctx.facts("devices").get("chips") or []
    by_npu: Dict[Any, List[Dict[str, Any]]] = {}
    for chip in chips:
        health = str(chip.get("health") or "")
        if health and health.upper() != "OK":
            by_npu.setdefault(chip.get("npu_id"), []).append(chip)
    for npu, bad in by_npu.items():
        states = sorted({str(c.get("health")) for c in bad})
        critical = any(s.upper() == "CRITICAL" for s in states)
        evidence = []
        benign: List[str] = []
        unknown_codes: List[str] = []
        for chip in bad:
            line = f"{_chip_label(chip)} ({chip.get('name')}): Health {chip.get('health')}"
            detail = chip.get("health_detail") or {}
            codes = detail.get("error_codes") or []
            if codes:
                line += f", error code {' '.join(codes)}"
            if detail.get("information"):
                line += f" — {detail['information']}"
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
        fix = [f"npu-smi info -t health -i {npu} -c {first.get('chip_id') or 0}  # Error Code and Error Information"]
        if critical:
            fix += [
                "Stop the jobs on this NPU and collect `dmesg` and /var/log/npu/",
                f"npu-smi set -t reset -i {npu} -c {first.get('chip_id') or 0}  # resets the chip; or reboot",
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
def held_by_processes(ctx: Any) -> Iterable[Finding]:
    """DEV011: processes on NPUs (warning when HBM of that chip is > 80 % used)."""
    dev = ctx.facts("devices")
    procs = dev.get("processes") or []
    if not procs:
        return
    chips = {(c.get("npu_id"), c.get("chip_id")): c for c in dev.get("chips") or []}
    by_chip: Dict[Tuple[Any, Any], List[Dict[str, Any]]] = {}
    for p in procs:
        by_chip.setdefault((p.get("npu_id"), p.get("chip_id")), []).append(p)
    for (npu, chip_id), plist in sorted(by_chip.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1]))):
        chip = chips.get((npu, chip_id)) or {}
        used, total = chip.get("hbm_used_mb"), chip.get("hbm_total_mb")
        if not total:
            used, total = chip.get("memory_used_mb"), chip.get("memory_total_mb")
        full = bool(total) and used is not None and used / total > 0.8
        desc = ", ".join(f"pid {p.get('pid')} {p.get('name') or '(no name)'} {p.get('memory_mb')} MB" for p in plist)
        mem = f" ({used} of {total} MB used)" if total else ""
        yield CHIP_PROCESSES.finding(
            title=f"NPU {npu} chip {chip_id} is in use by {len(plist)} process(es){mem}",
            evidence=[f"npu-smi info process table: {desc}"],
            fix=["If these are not yours: stop them, or pick another NPU (ASCEND_RT_VISIBLE_DEVICES)"] if full else [],
            severity="warning" if full else "info",
            subject=f"npu{npu}-chip{chip_id}",
            data={"pids": [p.get("pid") for p in plist]},
        )


@rule
def device_nodes(ctx: Any) -> Iterable[Finding]:
    """DEV020: chips or davinci nodes present but control nodes (or chip nodes) missing."""
    dev = ctx.facts("devices")
    nodes = dev.get("nodes") or []
    chips = dev.get("chips") or []
    present_chips = chip_nodes(dev)
    if not present_chips and not chips:
        return  # no NPU here, or a container without devices (container rules)
    missing = [n["path"] for n in nodes if n.get("kind") == "control" and not n.get("exists")]
    no_chip_nodes = not present_chips and bool(chips)
    if not missing and not no_chip_nodes:
        return
    container = in_container(ctx)
    ids = [n for n in (node_number(x) for x in present_chips) if n is not None]
    evidence = []
    if no_chip_nodes:
        evidence.append(f"npu-smi lists {len(chips)} chip(s) but no /dev/davinciN node exists")
    if missing:
        evidence.append("missing: " + ", ".join(missing))
    if present_chips:
        evidence.append("present: " + ", ".join(n["path"] for n in present_chips))
    if container:
        want = ids or sorted({c.get("logic_id") for c in chips if c.get("logic_id") is not None})
        fix = [
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
            "lsmod | grep -i drv  # the NPU driver must be loaded",
            "Reinstall the NPU driver package (Ascend HDK npu-driver) or reboot after a driver upgrade",
        ]
    yield NODES_MISSING.finding(
        title=("NPU device nodes missing in this container: " if container else "NPU device nodes missing: ")
        + ", ".join(missing or ["/dev/davinciN"]),
        evidence=evidence,
        fix=fix,
        data={"missing": missing},
    )


def _identity(ctx: Any) -> Dict[str, Any]:
    ident = ctx.facts("devices").get("identity") or {}
    if not ident:
        ident = ctx.facts("host").get("identity") or {}
    return ident if isinstance(ident, dict) else {}


@rule
def node_permissions(ctx: Any) -> Iterable[Finding]:
    """DEV021: the judged account cannot read+write some existing device node."""
    dev = ctx.facts("devices")
    ident = _identity(ctx)
    denied = [n for n in dev.get("nodes") or [] if n.get("exists") and n.get("accessible_by_identity") is False]
    if not denied or not ident:
        return
    who = ident.get("name") or f"uid {ident.get('uid')}"
    groups = ident.get("groups") or []
    evidence = [
        f"{n['path']}: owner {n.get('owner') or n.get('uid')}:{n.get('group') or n.get('gid')} mode {n.get('mode')}"
        for n in denied[:12]
    ]
    evidence.append(
        f"judged account: {who} (uid {ident.get('uid')}, gid {ident.get('gid')}, groups {groups}; "
        f"from {ident.get('source')})"
    )
    node = denied[0]
    group = node.get("group") or str(node.get("gid"))
    fix: List[str] = []
    mode = int(str(node.get("mode") or "0"), 8) if str(node.get("mode") or "").isdigit() else 0
    if mode & 0o060 != 0o060:
        fix.append(
            "On the host restore the standard owner and mode: "
            "chown HwHiAiUser:HwHiAiUser /dev/davinci* /dev/davinci_manager /dev/devmm_svm /dev/hisi_hdc && "
            "chmod 0660 /dev/davinci* /dev/davinci_manager /dev/devmm_svm /dev/hisi_hdc"
        )
    if ident.get("name") and ident.get("has_passwd_entry"):
        fix.append(f"usermod -aG {group} {ident['name']}  # then log in again")
    if in_container(ctx) or not ident.get("has_passwd_entry"):
        fix.append(
            f"Run the container as the device owner: --user {node.get('uid')}:{node.get('gid')} "
            f"(Kubernetes: securityContext runAsUser: {node.get('uid')}, runAsGroup: {node.get('gid')}, "
            f"or supplementalGroups: [{node.get('gid')}])"
        )
    yield NODE_PERMISSION.finding(
        title=f"{who} cannot open {len(denied)} NPU device node(s) (owner "
        f"{node.get('owner') or node.get('uid')}:{group}, mode {node.get('mode')})",
        evidence=evidence,
        fix=fix,
        subject=str(ident.get("uid")),
    )


@rule
def passwd_entry(ctx: Any) -> Iterable[Finding]:
    """DEV022: a non-root UID with no passwd entry, where NPUs are in use."""
    ident = _identity(ctx)
    if not ident or ident.get("has_passwd_entry", True) or ident.get("uid") in (0, None):
        return
    if not stack_present(ctx):
        return
    uid, gid = ident.get("uid"), ident.get("gid")
    yield NO_PASSWD.finding(
        title=f"UID {uid} has no /etc/passwd entry: HCCL multi-card init fails (error code 19)",
        evidence=[f"uid {uid} (from {ident.get('source')}) is not in /etc/passwd"],
        fix=[
            f"In the image: RUN groupadd -g {gid} npu && useradd -u {uid} -g {gid} -m npu",
            "Or run as an account that exists in the image (root, or HwHiAiUser with uid 1000)",
        ],
    )


def _visible_count(dev: Dict[str, Any]) -> Optional[int]:
    count = dev.get("visible_count")
    if isinstance(count, int):
        return count
    chips = dev.get("chips") or []
    return len(chips) or len(chip_nodes(dev)) or None


def _visible_evidence(
    dev: Dict[str, Any], rt: Optional[str], rt_ids: Optional[List[int]], nodes: List[int]
) -> List[str]:
    """Evidence lines saying which devices this process sees and where that is read:
    ASCEND_RT_VISIBLE_DEVICES (the ids CANN takes from it, mapped to logical indices), the
    chips ``npu-smi info`` lists (``facts["devices"]["chips"]``) or the /dev/davinciN nodes."""
    out: List[str] = []
    if rt is not None and rt.strip():
        if rt_ids:
            pairs = ", ".join(f"{i}→{n}" for i, n in enumerate(rt_ids))
            out.append(f"ASCEND_RT_VISIBLE_DEVICES={rt}: CANN uses {len(rt_ids)} device(s), logical→physical {pairs}")
        else:
            out.append(f"ASCEND_RT_VISIBLE_DEVICES={rt}: CANN takes no usable device id from it")
    chips = dev.get("chips") or []
    if chips:
        ids = sorted({c.get("npu_id") for c in chips if isinstance(c.get("npu_id"), int)})
        out.append(f"npu-smi lists {len(chips)} chip(s)" + (f" (NPU ids {id_ranges(ids, sep=', ')})" if ids else ""))
    elif nodes:
        out.append("device nodes present: " + ", ".join(f"/dev/davinci{n}" for n in sorted(nodes)))
    else:
        out.append("no NPU visible: npu-smi lists no chip and there is no /dev/davinciN node")
    return out


@rule
def visibility(ctx: Any) -> Iterable[Finding]:
    """DEV030-DEV033: the visible-device variables against the devices actually visible."""
    dev = ctx.facts("devices")
    vis = dev.get("visibility") or {}
    count = _visible_count(dev)
    nodes = [n for n in (node_number(x) for x in chip_nodes(dev)) if n is not None]
    rt = vis.get("ASCEND_RT_VISIBLE_DEVICES")
    ray = [str(r) for r in dev.get("ray") or []]
    rt_ids: Optional[List[int]] = None
    if rt is not None and rt.strip() != "":
        finding, rt_ids = _check_rt(rt, count, nodes)
        if finding is not None:
            if ray:
                _add_ray_context(finding, ray, vis)
            yield finding
    elif rt is not None and (count or nodes or stack_present(ctx) or _package_version(ctx, "torch-npu", "torch_npu")):
        finding = RT_VISIBLE_INVALID.finding(
            title="ASCEND_RT_VISIBLE_DEVICES is set but empty: no NPU is visible to this process "
            "(torch.npu.is_available() is False)",
            evidence=[f"ASCEND_RT_VISIBLE_DEVICES={rt!r} (set, empty: an empty device list)"]
            + _visible_evidence(dev, None, None, nodes)
            + [
                "an empty list selects no device; vLLM/vllm-ascend refuse it outright ('ASCEND_RT_VISIBLE_DEVICES is "
                "set to empty string, which means Ascend NPU support is disabled')"
            ],
            fix=[
                "unset ASCEND_RT_VISIBLE_DEVICES  # or export ASCEND_RT_VISIBLE_DEVICES="
                + ",".join(str(i) for i in range(count or 1))
                + " (0-based ids of the visible devices)"
            ],
            data={"effective": []},
        )
        if ray:
            _add_ray_context(finding, ray, vis)
        yield finding
    av = vis.get("ASCEND_VISIBLE_DEVICES")
    if av and (rt is None or rt.strip() == "") and nodes:
        ids, _bad = parse_id_list(av)
        if (
            av.strip().lower() not in ("void", "")
            and ids
            and sorted(set(ids)) == sorted(nodes)
            and sorted(nodes) != list(range(len(nodes)))
            and rt is None
            and (in_container(ctx) or ctx.facts("container").get("kubernetes"))
        ):
            yield _non_first_cards(ctx, av, ids, nodes)
        if av.strip().lower() not in ("void", "") and ids and sorted(set(ids)) != sorted(nodes):
            extra = sorted(set(nodes) - set(ids))
            yield VISIBLE_RUNTIME_ONLY.finding(
                title=f"ASCEND_VISIBLE_DEVICES={av} but this process sees /dev/davinci{{{','.join(map(str, nodes))}}}: "
                f"torch_npu will use logical devices 0..{len(nodes) - 1} of those",
                evidence=[
                    f"ASCEND_VISIBLE_DEVICES={av} (read only by the Ascend Docker Runtime)",
                    "device nodes present: " + ", ".join(f"/dev/davinci{n}" for n in nodes),
                    "ASCEND_RT_VISIBLE_DEVICES is not set",
                ]
                + ([f"nodes not listed in ASCEND_VISIBLE_DEVICES: {extra}"] if extra else []),
                fix=[
                    docker_flags(sorted(set(ids)), control=[], lead="Mount only the allocated devices: "),
                    "Or set, for the process: export ASCEND_RT_VISIBLE_DEVICES="
                    + ",".join(str(i) for i, n in enumerate(sorted(nodes)) if n in set(ids)),
                ],
            )
    cuda = vis.get("CUDA_VISIBLE_DEVICES")
    if cuda is not None and cuda.strip() and (rt is None or not rt.strip()) and (count or stack_present(ctx)):
        yield CUDA_VISIBLE.finding(
            title=f"CUDA_VISIBLE_DEVICES={cuda} is set but has no effect on NPUs",
            evidence=[f"CUDA_VISIBLE_DEVICES={cuda}", "ASCEND_RT_VISIBLE_DEVICES is not set"],
            fix=[f"export ASCEND_RT_VISIBLE_DEVICES={cuda}"],
        )
    did = vis.get("ASCEND_DEVICE_ID")
    if did is not None and did.strip() != "":
        limit = len(rt_ids) if rt_ids else count
        bad = None
        if not re.match(r"^\d+$", did.strip()):
            bad = f"ASCEND_DEVICE_ID={did!r} is not a non-negative integer"
        elif limit is not None and int(did) >= limit:
            scope = "ASCEND_RT_VISIBLE_DEVICES" if rt_ids else "the visible devices"
            bad = f"ASCEND_DEVICE_ID={did} but {scope} give only {limit} device(s) (indices 0..{limit - 1})"
        if bad:
            yield DEVICE_ID_INVALID.finding(
                title=bad,
                evidence=[f"ASCEND_DEVICE_ID={did!r}" if not did.strip().isdigit() else f"ASCEND_DEVICE_ID={did}"]
                + _visible_evidence(dev, rt, rt_ids, nodes),
                fix=["export ASCEND_DEVICE_ID=0  # an index into the visible devices"],
            )


def _add_ray_context(finding: Finding, ray: List[str], vis: Dict[str, Any]) -> None:
    """Say that Ray wrote ASCEND_RT_VISIBLE_DEVICES (its NPU accelerator manager sets it for
    every worker to the NPU ids the task was given, '' for none, unless
    RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES is set: ray/_private/accelerators/npu.py;
    `ray job submit` drivers got '' until ray#59163) and how to make Ray give NPUs."""
    noset = vis.get("RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES")
    names = ", ".join(ray[:4]) + (" …" if len(ray) > 4 else "")
    finding.evidence.append(f"this process was started by Ray ({names} set)")
    if noset:
        finding.evidence.append(
            f"RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES={noset}: Ray leaves the variable alone, so the "
            "value comes from your launcher or environment"
        )
        finding.fix.append("Fix the value your launcher exports for each worker (or unset it and let Ray assign NPUs)")
        return
    finding.evidence.append(
        "Ray rewrites ASCEND_RT_VISIBLE_DEVICES for each worker to the NPU ids the task/actor was given "
        "('' when it asked for no NPU resource, e.g. num_gpus instead of resources={'NPU': n}, or a "
        "`ray job submit` driver: ray#59063)"
    )
    finding.fix.extend(
        [
            'Ray: request NPUs for the task/actor, e.g. @ray.remote(resources={"NPU": 1}), on nodes started '
            "with ray start --resources='{\"NPU\": 8}'",
            "Or keep Ray from rewriting it: export RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES=1 and set "
            "ASCEND_RT_VISIBLE_DEVICES yourself (unique, ascending, 0-based)",
        ]
    )


def _non_first_cards(ctx: Any, av: str, ids: List[int], nodes: List[int]) -> Finding:
    """DEV031 for a device plugin that mounted exactly the allocated, non-first NPUs
    (ASCEND_VISIBLE_DEVICES=4,3 with /dev/davinci3, /dev/davinci4) and set no
    ASCEND_RT_VISIBLE_DEVICES: Project-HAMi/HAMi#1894 (case 45) saw `open device 1 failed,
    runtime result = 507033` / E39007 there, while the first cards (0,1) worked."""
    kube = bool(ctx.facts("container").get("kubernetes"))
    ascending = ids == sorted(ids)
    logical = ",".join(str(i) for i in range(len(nodes)))
    evidence = [
        f"ASCEND_VISIBLE_DEVICES={av}: physical NPUs {sorted(set(ids))} allocated (read only by the Ascend "
        "Docker Runtime / device plugin)",
        "device nodes present: " + ", ".join(f"/dev/davinci{n}" for n in sorted(nodes)),
        "ASCEND_RT_VISIBLE_DEVICES is not set: the CANN runtime must map logical 0.."
        f"{len(nodes) - 1} to these physical NPUs by itself",
        "HAMi#1894: with non-first NPUs (ASCEND_VISIBLE_DEVICES=4,3) vLLM TP=2 failed with "
        "`open device 1 failed, runtime result = 507033` (E39007); the first two cards worked",
    ]
    if not ascending:
        evidence.append(f"ASCEND_VISIBLE_DEVICES={av} is not in ascending order")
    fix = [f"export ASCEND_RT_VISIBLE_DEVICES={logical}  # logical ids of the {len(nodes)} device(s) in this container"]
    if kube:
        fix.append(
            "Kubernetes: set ASCEND_RT_VISIBLE_DEVICES in the pod spec next to the device plugin's "
            "ASCEND_VISIBLE_DEVICES (Project-HAMi/HAMi#1894)"
        )
    return VISIBLE_RUNTIME_ONLY.finding(
        title=f"ASCEND_VISIBLE_DEVICES={av} selects non-first NPUs and ASCEND_RT_VISIBLE_DEVICES is unset: "
        "the runtime can open the wrong physical device (507033 / E39007)",
        evidence=evidence,
        fix=fix,
        severity="warning" if kube or not ascending else "info",
        subject="ASCEND_VISIBLE_DEVICES",
    )


def _check_rt(raw: str, count: Optional[int], nodes: List[int]) -> Tuple[Optional[Finding], List[int]]:
    """Validate ASCEND_RT_VISIBLE_DEVICES the way CANN parses it (stops at the first bad
    entry).  Returns (finding or None, the ids CANN would actually use)."""
    problems: List[str] = []
    tokens = raw.split(",")
    effective: List[int] = []
    stopped = False
    ints: List[int] = []
    for tok in tokens:
        if re.match(r"^\d+$", tok):
            ints.append(int(tok))
            if not stopped and (count is None or int(tok) < count):
                effective.append(int(tok))
            elif not stopped:
                stopped = True
        else:
            if not stopped:
                problems.append(f"entry {tok!r} is not a plain integer (CANN stops reading there)")
            else:
                problems.append(f"entry {tok!r} is not a plain integer")
            stopped = True
            if tok.strip().isdigit():
                ints.append(int(tok.strip()))
    dups = sorted({i for i in ints if ints.count(i) > 1})
    if dups:
        problems.append(f"duplicate ids {dups}")
    if ints != sorted(ints):
        problems.append("ids are not in ascending order (required since CANN 8.0; `1,0` hides every device)")
    out_of_range = [i for i in ints if count is not None and i >= count]
    if out_of_range:
        looks_physical = bool(nodes) and all(i in nodes for i in out_of_range)
        problems.append(
            f"ids {out_of_range} out of range: {count} device(s) visible here, valid ids 0..{count - 1}"
            + (
                " (these are host /dev/davinci numbers; inside this container devices are renumbered from 0)"
                if looks_physical
                else ""
            )
        )
    if not problems:
        return None, ints
    valid = sorted({i for i in ints if count is None or i < count})
    if out_of_range and nodes and all(i in nodes for i in out_of_range):
        valid = sorted({sorted(nodes).index(i) for i in ints if i in nodes})
    suggestion = ",".join(str(i) for i in valid) if valid else ",".join(str(i) for i in range(count or 1))
    return (
        RT_VISIBLE_INVALID.finding(
            title=f"ASCEND_RT_VISIBLE_DEVICES={raw!r} is invalid: {problems[0]}",
            evidence=[f"ASCEND_RT_VISIBLE_DEVICES={raw!r}"]
            + problems[1:]
            + [f"devices visible to this process: {count if count is not None else 'unknown'}"]
            + [f"CANN would use: {effective or 'no device'}"],
            fix=[
                f"export ASCEND_RT_VISIBLE_DEVICES={suggestion}  # unique, ascending, 0-based ids of the visible devices"
            ],
            data={"effective": effective},
        ),
        effective,
    )


def soc_known_to_torch_npu(matrix: Any, soc: str, torch_npu: str) -> Optional[bool]:
    """Whether the installed torch_npu build's SoC table lists ``soc`` (an ``Ascend…`` SoC
    name), judged by :data:`SOC_FIRST_EXT` and the matrix's torch_npu rows (``ext_version``
    of each build, ``matrix/torch_npu.toml``).

    Returns ``True``/``False``, or ``None`` when unknown: the SoC has no recorded first
    line, the version is not PEP 440, or the matrix has no row of this torch_npu line.  A
    line whose every tabled build is of that extension line or newer counts as knowing it
    (its dev/rc builds postdate it)."""
    from npudoctor.knowledge.versions import parse_cann

    first_ext = SOC_FIRST_EXT.get(soc)
    rows = matrix.torch_npu_rows if matrix is not None else None
    if not first_ext or not rows:
        return None
    try:
        from packaging.version import InvalidVersion, Version

        want = Version(Version(torch_npu).public)
    except (InvalidVersion, ValueError, TypeError):
        return None
    first = parse_cann(first_ext)
    line: List[Tuple[Any, Any]] = []
    for row in rows:
        v, ext = getattr(row, "version", None), parse_cann(getattr(row, "ext_version", "") or "")
        if v is None or ext is None or v.release != want.release:
            continue
        try:
            newer = ext.compare(first)
        except Exception:
            newer = None
        if newer is None:
            continue
        line.append((v, newer >= 0))
        if v == want:
            return newer >= 0
    if not line:
        return None
    if all(ok for _, ok in line):
        return True
    knowing = [v for v, ok in line if ok]
    if not knowing:
        return False  # every tabled build of this line predates the SoC
    return want >= min(knowing)


@rule
def chip_support(ctx: Any) -> Iterable[Finding]:
    """DEV040 unsupported family, DEV041 no bf16, DEV042 unknown chip name."""
    chips = ctx.facts("devices").get("chips") or []
    if not chips:
        return
    seen: Dict[str, Dict[str, Any]] = {}
    for chip in chips:
        name = str(chip.get("name") or "")
        if name and name not in seen:
            seen[name] = chip_identity(ctx.matrix, chip)
    torch_npu = _package_version(ctx, "torch-npu", "torch_npu")
    vllm_ascend = _package_version(ctx, "vllm-ascend", "vllm_ascend")
    for name, ident in sorted(seen.items()):
        family = ident.get("family")
        if not ident["known"]:
            if ctx.matrix is not None:
                yield CHIP_UNKNOWN.finding(
                    title=f"NPU chip {name!r} is not in the matrix", evidence=[f"npu-smi Name: {name}"], subject=name
                )
            continue
        soc = ident.get("soc_version") or name
        if ident.get("bf16") is False:
            yield NO_BF16.finding(
                title=f"{name} ({soc}, family {family}) has no bfloat16 support: use float16",
                evidence=[f"npu-smi Name {name} → family {family}, bf16 false (matrix)"]
                + (
                    ["plain `910B` is the first-generation Ascend 910, not the 910B1–B4 (A2) family"]
                    if name == "910B"
                    else []
                ),
                fix=["Use float16: torch_dtype=torch.float16 / --dtype float16 / fp16: true, bf16: false"],
                subject=name,
            )
        soc_ok = soc_known_to_torch_npu(ctx.matrix, str(soc), torch_npu) if torch_npu and ctx.matrix else None
        if soc_ok is False:
            yield CHIP_UNSUPPORTED.finding(
                title=f"torch_npu {torch_npu} does not support {name} ({soc}): "
                f"its SoC table predates {soc} (`Unsupported SOC version: {soc}`)",
                evidence=[
                    f"npu-smi Name {name} → SoC {soc}, family {family}",
                    f"torch_npu {torch_npu} installed; {soc} is listed from the torch_npu "
                    f"v*-{SOC_FIRST_EXT.get(str(soc))} release branches on (NpuVariables.cpp)",
                ],
                fix=[
                    f"Install a torch_npu build of the {SOC_FIRST_EXT.get(str(soc))} line or newer, with its paired "
                    "CANN (see `npudoctor matrix show`)"
                ]
                + (
                    ["310B is an edge SoC: the supported path on it is the ACL/OM inference stack, not torch_npu"]
                    if family in EDGE_FAMILIES
                    else []
                ),
                subject=name,
            )
        elif torch_npu and family in EDGE_FAMILIES:
            yield CHIP_UNSUPPORTED.finding(
                title=f"{name} ({soc}) is an edge SoC (Atlas 200I/500 A2): torch_npu {torch_npu} is not supported "
                "for training on it and frameworks reject it (`Unsupported SOC version`)",
                evidence=[
                    f"npu-smi Name {name} → SoC {soc}, family {family}",
                    "torch_npu install guide, supported hardware: Atlas 200I/500 A2 inference 'x'",
                    "reported: `Unsupported SOC version: Ascend310B4` (Ascend/pytorch#57), "
                    "`SOC_VERSION ascend310b1 does not support` (llama.cpp#10719)",
                ],
                fix=[
                    "Run models on this board with the edge stack: convert to an OM model (ATC "
                    f"--soc_version={soc}) and run it with ACL/pyACL or ais_bench",
                    "For torch_npu training or LLM serving use Atlas A2/A3 (910B*, 910_93) hardware",
                ],
                severity="warning",
                subject=name,
            )
        if torch_npu and ctx.matrix is not None:
            try:
                ok = ctx.matrix.family_supported(family, torch_npu)
            except Exception:
                ok = None
            if ok is False:
                yield CHIP_UNSUPPORTED.finding(
                    title=f"torch_npu {torch_npu} does not support {name} ({soc}, family {family})",
                    evidence=[f"npu-smi Name {name} → family {family}", f"torch_npu {torch_npu} installed"],
                    fix=[
                        "Install a torch_npu release that supports this chip (see `npudoctor matrix`), "
                        "or run on hardware this release supports"
                    ],
                    subject=name,
                )
        if vllm_ascend and family in ("310B", "310", "910"):
            yield CHIP_UNSUPPORTED.finding(
                title=f"vllm-ascend {vllm_ascend} does not support {name} (family {family})",
                evidence=[f"npu-smi Name {name} → family {family}", f"vllm-ascend {vllm_ascend} installed"],
                fix=["vllm-ascend runs on Atlas A2/A3 (910B*, 910_93) and, in its 310p build, Atlas 300I Duo"],
                subject=f"vllm-ascend:{name}",
            )
        elif vllm_ascend and family == "310P":
            yield CHIP_UNSUPPORTED.finding(
                title=f"vllm-ascend {vllm_ascend} on {name}: 310P works only with vllm-ascend's separate 310p build",
                evidence=[f"npu-smi Name {name} → family 310P", f"vllm-ascend {vllm_ascend} installed"],
                fix=["Use the vllm-ascend 310p image/build (Dockerfile.310p), or Atlas A2/A3 hardware"],
                severity="warning",
                subject=f"vllm-ascend:{name}",
            )


@rule
def topology_summary(ctx: Any) -> Iterable[Finding]:
    """DEV050: all-fabric vs PCIe islands, CPU affinity per NPU (info)."""
    topo = ctx.facts("devices").get("topology") or {}
    npus = topo.get("npus") or []
    if len(npus) < 2:
        return
    types = topo.get("link_types") or []
    if topo.get("all_fabric"):
        title = f"{len(npus)} NPUs, every pair linked by {'/'.join(types)}"
    else:
        islands = topo.get("islands") or []
        groups = " ".join("[" + ",".join(str(i) for i in g) + "]" for g in islands)
        title = f"{len(npus)} NPUs in {len(islands)} island(s) {groups}; links {'/'.join(types)}"
    affinity = topo.get("affinity") or {}
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
    if not topo.get("all_fabric"):
        fix.append("Keep tensor-parallel groups inside one island (HCCS/SIO/UB or one PCIe switch)")
    yield TOPOLOGY.finding(
        title=title, evidence=evidence, fix=fix, data={"islands": topo.get("islands"), "link_types": types}
    )
