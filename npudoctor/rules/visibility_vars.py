"""Visible-device variables judged by who reads them and when.

* ``ASCEND_VISIBLE_DEVICES`` is read by the Ascend Docker Runtime's prestart hook, before
  the container's process starts (ascend-docker-runtime README: it mounts the NPUs it names
  and sets the device cgroup); nothing reads it inside the container.  It takes ids
  (``0,1``), ranges (``0-3``) and the device plugin's names (``Ascend910-4``: the MindCluster
  device plugin injects these).  Set but empty, it selects no NPU; any other word is
  malformed.  Its effect is judged by the nodes actually mapped in rules/visibility.py.
* ``NPU_VISIBLE_DEVICES``, ``HIP_VISIBLE_DEVICES``, ``ROCR_VISIBLE_DEVICES``: look-alikes of
  other vendors' variables that neither the CANN runtime, torch_npu nor the Ascend runtime
  reads (CANN reads ASCEND_RT_VISIBLE_DEVICES; CUDA_VISIBLE_DEVICES is DEV032).

Reads ``ctx.view.devices`` (visibility, nodes) and the world (remedies/world.py).  Codes DEV031
(empty / malformed ASCEND_VISIBLE_DEVICES: it selects no device) and DEV034 (look-alikes).
A DeepSpeed launch line (``--num_gpus`` / ``--include``) is not a fact npudoctor records.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from npudoctor import lazyre
from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.remedies import Remedy
from npudoctor.remedies.world import env_fix
from npudoctor.rules import rule
from npudoctor.rules._devfacts import stack_present

if TYPE_CHECKING:
    from typing import Iterable, List, Optional, Tuple, Union

    from npudoctor.context import RuleContext

READS = ("cann", "container", "devices", "driver", "packages")
ONLY_WITH = ("devices",)

VISIBLE_RUNTIME_ONLY = codes.get("DEV031")
LOOK_ALIKE = codes.get("DEV034")

_ID_RE = lazyre.pattern(r"^[0-9]+(?:-[0-9]+)?$")
#: Device names of the MindCluster device plugin: Ascend910-4, Ascend310P-0, vNPU
#: Ascend910-2c-100-0 (the chip id follows the type).
_NAME_RE = lazyre.pattern(r"^Ascend[0-9A-Za-z]*-[0-9]+(?:[-\w]*)$")


def malformed_parts(raw: str) -> List[str]:
    """Parts of an ASCEND_VISIBLE_DEVICES value that are neither ids, ranges nor device names
    (``"void"``, which some launchers set to mean "none", counts as well-formed)."""
    if raw.strip().lower() == "void":
        return []
    return [p.strip() for p in raw.split(",") if not (_ID_RE.match(p.strip()) or _NAME_RE.match(p.strip()))]


def _ids_of(dev_count: Optional[int]) -> str:
    return ",".join(str(i) for i in range(dev_count or 1))


@rule
def ascend_visible_devices_value(ctx: RuleContext) -> Iterable[Finding]:
    """DEV031: ASCEND_VISIBLE_DEVICES set but empty, or malformed."""
    dev = ctx.view.devices
    raw = dev.visibility.ascend_visible_devices
    if raw is None or not (stack_present(ctx.view) or dev.nodes):
        return
    where = ctx.view.container.runs_in
    contained = where in ("container", "pod", "build")
    nodes = list(dev.node_numbers)
    if raw.strip() == "":
        if contained and not dev.chip_nodes:
            return  # no NPU at all: CTR001/CTR006 own it and name the empty value
        if nodes:
            effect = (
                f"{len(nodes)} NPU node(s) are mapped here anyway (--device, --privileged or the device plugin), "
                "so it had no effect"
                if contained
                else "nothing on this machine reads it outside a container"
            )
        else:
            effect = "nothing reads it outside a container"
        yield VISIBLE_RUNTIME_ONLY.finding(
            title="ASCEND_VISIBLE_DEVICES is set but empty: it selects no NPU",
            evidence=[
                "ASCEND_VISIBLE_DEVICES='' (set, empty)",
                "read only by the Ascend Docker Runtime, before the container starts: an empty list mounts no NPU",
                effect,
            ],
            fix=[
                "Give it the NPU ids the container should get (docker run -e ASCEND_VISIBLE_DEVICES=0 with the "
                "Ascend runtime; in Kubernetes the device plugin fills it from resources.limits), or unset it",
            ],
            severity="warning" if contained else "info",
            subject="ASCEND_VISIBLE_DEVICES",
            data={"empty": True},
        )
        return
    bad = malformed_parts(raw)
    if bad:
        yield VISIBLE_RUNTIME_ONLY.finding(
            title=f"ASCEND_VISIBLE_DEVICES={raw} is malformed: {', '.join(repr(b) for b in bad[:4])} is neither an "
            "NPU id, a range nor a device name",
            evidence=[
                f"ASCEND_VISIBLE_DEVICES={raw!r}",
                "the Ascend Docker Runtime takes ids (0,1), ranges (0-3) or device names (Ascend910-0)",
            ]
            + (["device nodes present: " + ", ".join(f"/dev/davinci{n}" for n in nodes)] if nodes else []),
            fix=[
                "Recreate the container with -e ASCEND_VISIBLE_DEVICES=0,1 (comma-separated ids or a range such as 0-3)"
            ]
            if where != "pod"
            else [
                "Kubernetes: let the device plugin set it (resources.limits huawei.com/Ascend910: N); do not set it by hand"
            ],
            severity="warning",
            subject="ASCEND_VISIBLE_DEVICES",
            data={"malformed": bad},
        )


#: (variable, its view field, whose variable it is).
LOOK_ALIKES: Tuple[Tuple[str, str, str], ...] = (
    ("NPU_VISIBLE_DEVICES", "npu_visible_devices", "no stack's variable (modelled on CUDA_VISIBLE_DEVICES)"),
    ("HIP_VISIBLE_DEVICES", "hip_visible_devices", "an AMD ROCm/HIP variable"),
    ("ROCR_VISIBLE_DEVICES", "rocr_visible_devices", "an AMD ROCm runtime variable"),
)


@rule
def look_alike_variables(ctx: RuleContext) -> Iterable[Finding]:
    """DEV034: NPU_/HIP_/ROCR_VISIBLE_DEVICES set where NPUs are used: nothing reads them."""
    dev = ctx.view.devices
    if not (stack_present(ctx.view) or dev.nodes):
        return
    vis = dev.visibility
    found = [(name, getattr(vis, attr), whose) for name, attr, whose in LOOK_ALIKES if getattr(vis, attr)]
    if not found:
        return
    rt = vis.ascend_rt_visible_devices
    rt_set = rt is not None and rt.strip() != ""
    names = ", ".join(f"{n}={v}" for n, v, _ in found)
    evidence = [f"{n}={v}: {whose}; neither CANN, torch_npu nor the Ascend runtime reads it" for n, v, whose in found]
    evidence.append(
        f"ASCEND_RT_VISIBLE_DEVICES={rt} decides which NPUs this process uses"
        if rt_set
        else "ASCEND_RT_VISIBLE_DEVICES is not set: every visible NPU is used"
    )
    value = found[0][1] or ""
    fix: List[Union[Remedy, str]] = []
    if not rt_set and all(re.match(r"^[0-9]+$", t.strip()) for t in value.split(",")):
        fix.append(
            env_fix(
                ctx.view.container.systemd_unit,
                "ASCEND_RT_VISIBLE_DEVICES",
                value,
                note="the variable CANN reads (0-based, ascending)",
            )
        )
    unit = ctx.view.container.systemd_unit
    if unit:
        fix.append(f"Remove {', '.join(n for n, _, _ in found)} from the Environment= of {unit}")
    else:
        fix.append("unset " + " ".join(n for n, _, _ in found))
    yield LOOK_ALIKE.finding(
        title=f"{names} has no effect on Ascend NPUs" + ("" if rt_set else ": all visible NPUs are used"),
        evidence=evidence,
        fix=fix,
        severity="info" if rt_set else "warning",
        subject=found[0][0],
    )
