"""Device access judged with the process's capabilities: root is not almighty.  uid 0
opens a node whatever its mode only with CAP_DAC_OVERRIDE in its effective set
(capabilities(7)); a container started with ``--cap-drop ALL`` (or a pod with
``securityContext.capabilities.drop: [ALL]``) runs root processes with CapEff 0, and
``/dev/davinci*`` (HwHiAiUser:HwHiAiUser 0660) cannot be opened.  npu-smi then
fails with the DCMI codes that otherwise mean "device busy" (-8005/-8020), so the busy
finding (DEV002) is folded into the permission finding (DEV021): one cause, one finding.

Reads ``ctx.view.container.capabilities`` (``/proc/self/status``), ``ctx.view.devices``
(nodes, npu-smi, identity).  Root-cause kind K17 (the ``[kinds]`` table of
``knowledge/signatures.toml``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.remedies import DockerFlags, PodSpecField, Remedy
from npudoctor.rules import postprocess, rule
from npudoctor.rules._world import CAP_DAC_OVERRIDE, denied_without_dac_override, has_cap, judged_caps

if TYPE_CHECKING:
    from typing import Iterable, List, Union

    from npudoctor.context import RuleContext

READS = ("container", "devices")
ONLY_WITH = ("container",)

NODE_PERMISSION = codes.get("DEV021")
DEVICE_BUSY = codes.get("DEV002")


@rule
def root_without_dac_override(ctx: RuleContext) -> Iterable[Finding]:
    """DEV021: root without CAP_DAC_OVERRIDE cannot open nodes its mode bits deny to uid 0."""
    denied = denied_without_dac_override(ctx.view.container, ctx.view.devices)
    caps = judged_caps(ctx.view.container, ctx.view.devices)
    if not denied or caps is None:
        return
    node = denied[0]
    in_bounding = has_cap(caps.cap_bnd, CAP_DAC_OVERRIDE)
    evidence = [f"{n.path}: owner {n.owner or n.uid}:{n.group or n.gid} mode {n.mode}" for n in denied[:12]]
    evidence += [
        f"this process: uid 0, gid {caps.gid}, groups {list(caps.groups)}; CapEff {caps.cap_eff}, "
        f"CapBnd {caps.cap_bnd} ({caps.source})",
        "CAP_DAC_OVERRIDE (bit 1) is not in CapEff: the kernel checks the mode bits for root like for any "
        "other uid, and root is neither the owner nor in the group of these nodes",
        "CapBnd has CAP_DAC_OVERRIDE: something in the container dropped it from the effective set "
        "(a launcher, capsh, setpriv)"
        if in_bounding
        else "CapBnd lacks it too: the container was created without it (--cap-drop, or a securityContext "
        "that drops ALL)",
    ]
    fix: List[Union[Remedy, str]]
    if ctx.view.container.runs_in == "pod":
        fix = [
            PodSpecField(
                "containers[0].securityContext.capabilities.add",
                '["DAC_OVERRIDE"]',
                note="or stop dropping ALL capabilities",
            ),
            PodSpecField(
                "securityContext.supplementalGroups",
                f"[{node.gid}]",
                lead="Or ",
                note=f"run in the nodes' group {node.group or node.gid}: no capability needed",
            ),
        ]
    else:
        fix = [
            DockerFlags(
                cap_add=("DAC_OVERRIDE",), lead="Recreate the container with: ", note="or leave out --cap-drop ALL"
            ),
            f"Or run in the nodes' group, which needs no capability: add --group-add {node.gid} to `docker run` "
            f"(or --user {node.uid}:{node.gid} to run as their owner {node.owner or node.uid})",
        ]
    if in_bounding:
        fix.insert(0, "Do not drop CAP_DAC_OVERRIDE in the container's entry point (capsh --drop, setpriv)")
    fix.append(
        "Or, on the host, make the nodes usable by root's group: not advised, the driver creates them "
        "HwHiAiUser:HwHiAiUser 0660"
    )
    yield NODE_PERMISSION.finding(
        title=f"root without CAP_DAC_OVERRIDE cannot open {len(denied)} NPU device node(s) (owner "
        f"{node.owner or node.uid}:{node.group or node.gid}, mode {node.mode})",
        evidence=evidence,
        fix=fix,
        subject="0",
        data={"capabilities": {"CapEff": caps.cap_eff, "CapBnd": caps.cap_bnd}, "denied": [n.path for n in denied]},
    )


@postprocess
def fold_busy_into_permission(ctx: RuleContext, findings: List[Finding]) -> List[Finding]:
    """A -8005/-8020 "busy" finding next to the capability DEV021 is that denial: fold it."""
    root = next((f for f in findings if f.code == NODE_PERMISSION.code and "capabilities" in f.data), None)
    busy = [f for f in findings if f.code == DEVICE_BUSY.code]
    if root is None or not busy:
        return findings
    for f in busy:
        root.evidence.append(f"npu-smi's {f.title!r} is this denial, not a busy device ({'; '.join(f.evidence[:1])})")
    root.data["folded"] = [DEVICE_BUSY.code]
    return [f for f in findings if f not in busy]
