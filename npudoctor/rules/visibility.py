"""Rules about the visible-device variables: ASCEND_RT_VISIBLE_DEVICES as CANN parses it,
ASCEND_VISIBLE_DEVICES (read only by the Ascend Docker Runtime), CUDA_VISIBLE_DEVICES and
ASCEND_DEVICE_ID, against the devices this process actually sees, and what Ray does to
them.  Reads ``ctx.view.devices`` (``visibility``, ``ray``, chips and nodes) and
``ctx.view.container``.  Root-cause kinds K15, K17
(the ``[kinds]`` table of ``knowledge/signatures.toml``).

Codes DEV030–DEV033.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from npudoctor.facts.devices import DevicesFacts, Visibility
from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.parsers.numbers import to_int
from npudoctor.parsers.ranktable import id_ranges
from npudoctor.remedies import Command, Export, Remedy
from npudoctor.remedies.world import docker_flags
from npudoctor.rules import rule
from npudoctor.rules._devfacts import (
    parse_id_list,
    stack_present,
)

if TYPE_CHECKING:
    from typing import Iterable, List, Optional, Tuple, Union

    from npudoctor.context import RuleContext

READS = ("container", "devices")
ONLY_WITH = ("devices",)

RT_VISIBLE_INVALID = codes.get("DEV030")
VISIBLE_RUNTIME_ONLY = codes.get("DEV031")
CUDA_VISIBLE = codes.get("DEV032")
DEVICE_ID_INVALID = codes.get("DEV033")


def _visible_count(dev: DevicesFacts) -> Optional[int]:
    if dev.visible_count is not None:
        return dev.visible_count
    return len(dev.chips) or len(dev.chip_nodes) or None


def _visible_evidence(dev: DevicesFacts, rt: Optional[str], rt_ids: Optional[List[int]], nodes: List[int]) -> List[str]:
    """Evidence lines saying which devices this process sees and where that is read:
    ASCEND_RT_VISIBLE_DEVICES (the ids CANN takes from it, mapped to logical indices), the
    chips ``npu-smi info`` lists (``devices.chips``) or the /dev/davinciN nodes."""
    out: List[str] = []
    if rt is not None and rt.strip():
        if rt_ids:
            pairs = ", ".join(f"{i}→{n}" for i, n in enumerate(rt_ids))
            out.append(f"ASCEND_RT_VISIBLE_DEVICES={rt}: CANN uses {len(rt_ids)} device(s), logical→physical {pairs}")
        else:
            out.append(f"ASCEND_RT_VISIBLE_DEVICES={rt}: CANN takes no usable device id from it")
    chips = dev.chips
    if chips:
        ids = sorted({c.npu_id for c in chips if c.npu_id is not None})
        out.append(f"npu-smi lists {len(chips)} chip(s)" + (f" (NPU ids {id_ranges(ids, sep=', ')})" if ids else ""))
    elif nodes:
        out.append("device nodes present: " + ", ".join(f"/dev/davinci{n}" for n in sorted(nodes)))
    else:
        out.append("no NPU visible: npu-smi lists no chip and there is no /dev/davinciN node")
    return out


@rule
def visibility(ctx: RuleContext) -> Iterable[Finding]:
    """DEV030-DEV033: the visible-device variables against the devices actually visible."""
    dev = ctx.view.devices
    count = _visible_count(dev)
    nodes = list(dev.node_numbers)
    rt = dev.visibility.ascend_rt_visible_devices
    found, rt_ids = _rt_visible(ctx, rt, count, nodes)
    yield from found
    yield from _ascend_visible(ctx, rt, nodes)
    yield from _cuda_visible(ctx, rt, count)
    yield from _device_id(dev, rt, rt_ids, count, nodes)


def _rt_visible(
    ctx: RuleContext, rt: Optional[str], count: Optional[int], nodes: List[int]
) -> Tuple[List[Finding], Optional[List[int]]]:
    """DEV030 for ASCEND_RT_VISIBLE_DEVICES (ids that are not visible, or set and empty
    where there is an NPU stack), with Ray's part when Ray started the process; and the
    device ids CANN takes from it (``None`` when it is unset or empty)."""
    dev = ctx.view.devices
    vis = dev.visibility
    ray = list(dev.ray)
    if rt is not None and rt.strip() != "":
        finding, rt_ids = _check_rt(rt, count, nodes)
        if finding is None:
            return [], rt_ids
        if ray:
            _add_ray_context(finding, ray, vis)
        return [finding], rt_ids
    if rt is None or not (count or nodes or stack_present(ctx.view) or ctx.view.packages.version_of("torch-npu")):
        return [], None
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
            Command(("unset", "ASCEND_RT_VISIBLE_DEVICES")),
            Export(
                "ASCEND_RT_VISIBLE_DEVICES",
                ",".join(str(i) for i in range(count or 1)),
                lead="or: ",
                note="0-based ids of the visible devices",
            ),
        ],
        data={"effective": []},
    )
    if ray:
        _add_ray_context(finding, ray, vis)
    return [finding], None


def _ascend_visible(ctx: RuleContext, rt: Optional[str], nodes: List[int]) -> Iterable[Finding]:
    """ASCEND_VISIBLE_DEVICES (read only by the Ascend Docker Runtime) without
    ASCEND_RT_VISIBLE_DEVICES: the non-first cards of a pod, and DEV031 when the nodes this
    process sees are not the ones it names."""
    av = ctx.view.devices.visibility.ascend_visible_devices
    if not av or not (rt is None or rt.strip() == "") or not nodes:
        return
    ids, _bad = parse_id_list(av)
    if (
        av.strip().lower() not in ("void", "")
        and ids
        and sorted(set(ids)) == sorted(nodes)
        and sorted(nodes) != list(range(len(nodes)))
        and rt is None
        and (ctx.view.container.in_container or ctx.view.container.kubernetes)
        # exactly the nodes it names, in ascending order, outside Kubernetes: it did its job
        # the observed failure (HAMi#1894) was a pod, with 4,3
        and (ctx.view.container.kubernetes or ids != sorted(ids))
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
            + ([f"nodes not listed in ASCEND_VISIBLE_DEVICES: {extra}"] if extra else [])
            + (
                [
                    "it had no effect: every node it names is here and more besides, so the NPUs were mapped by "
                    "other means (--device, --privileged or a device plugin), not chosen by it"
                ]
                if extra and set(ids) <= set(nodes)
                else []
            ),
            fix=[
                docker_flags(sorted(set(ids)), control=[], lead="Mount only the allocated devices: "),
                Export(
                    "ASCEND_RT_VISIBLE_DEVICES",
                    ",".join(str(i) for i, n in enumerate(sorted(nodes)) if n in set(ids)),
                    lead="Or set, for the process: ",
                ),
            ],
        )


def _cuda_visible(ctx: RuleContext, rt: Optional[str], count: Optional[int]) -> Iterable[Finding]:
    """DEV032: CUDA_VISIBLE_DEVICES set for an NPU process that has no
    ASCEND_RT_VISIBLE_DEVICES (it selects nothing on an NPU)."""
    cuda = ctx.view.devices.visibility.cuda_visible_devices
    if cuda is not None and cuda.strip() and (rt is None or not rt.strip()) and (count or stack_present(ctx.view)):
        yield CUDA_VISIBLE.finding(
            title=f"CUDA_VISIBLE_DEVICES={cuda} is set but has no effect on NPUs",
            evidence=[f"CUDA_VISIBLE_DEVICES={cuda}", "ASCEND_RT_VISIBLE_DEVICES is not set"],
            fix=[Export("ASCEND_RT_VISIBLE_DEVICES", cuda)],
        )


def _device_id(
    dev: DevicesFacts, rt: Optional[str], rt_ids: Optional[List[int]], count: Optional[int], nodes: List[int]
) -> Iterable[Finding]:
    """DEV033: ASCEND_DEVICE_ID that is not an index into the visible devices (those of
    ASCEND_RT_VISIBLE_DEVICES when it gives some, else every visible one)."""
    did = dev.visibility.ascend_device_id
    if did is None or did.strip() == "":
        return
    limit = len(rt_ids) if rt_ids else count
    bad = None
    if to_int(did) is None or did.strip().startswith("-"):
        bad = f"ASCEND_DEVICE_ID={did!r} is not a non-negative integer"
    elif limit is not None and int(did) >= limit:
        scope = "ASCEND_RT_VISIBLE_DEVICES" if rt_ids else "the visible devices"
        bad = f"ASCEND_DEVICE_ID={did} but {scope} give only {limit} device(s) (indices 0..{limit - 1})"
    if bad:
        yield DEVICE_ID_INVALID.finding(
            title=bad,
            evidence=[f"ASCEND_DEVICE_ID={did!r}" if not did.strip().isdecimal() else f"ASCEND_DEVICE_ID={did}"]
            + _visible_evidence(dev, rt, rt_ids, nodes),
            fix=[Export("ASCEND_DEVICE_ID", "0", note="an index into the visible devices")],
        )


def _add_ray_context(finding: Finding, ray: List[str], vis: Visibility) -> None:
    """Say that Ray wrote ASCEND_RT_VISIBLE_DEVICES (its NPU accelerator manager sets it for
    every worker to the NPU ids the task was given, '' for none, unless
    RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES is set: ray/_private/accelerators/npu.py;
    `ray job submit` drivers got '' until ray#59163) and how to make Ray give NPUs."""
    noset = vis.ray_noset
    names = ", ".join(ray[:4]) + (" …" if len(ray) > 4 else "")
    finding.evidence.append(f"this process was started by Ray ({names} set)")
    if noset:
        finding.evidence.append(
            f"RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES={noset}: Ray leaves the variable alone, so the "
            "value comes from your launcher or environment"
        )
        finding.add_fix("Fix the value your launcher exports for each worker (or unset it and let Ray assign NPUs)")
        return
    finding.evidence.append(
        "Ray rewrites ASCEND_RT_VISIBLE_DEVICES for each worker to the NPU ids the task/actor was given "
        "('' when it asked for no NPU resource, e.g. num_gpus instead of resources={'NPU': n}, or a "
        "`ray job submit` driver: ray#59063)"
    )
    finding.add_fix(
        'Ray: request NPUs for the task/actor, e.g. @ray.remote(resources={"NPU": 1}), on nodes started '
        "with ray start --resources='{\"NPU\": 8}'",
        Export(
            "RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES",
            "1",
            lead="Or keep Ray from rewriting it: ",
            note="then set ASCEND_RT_VISIBLE_DEVICES yourself (unique, ascending, 0-based)",
        ),
    )


def _non_first_cards(ctx: RuleContext, av: str, ids: List[int], nodes: List[int]) -> Finding:
    """DEV031 for a device plugin that mounted exactly the allocated, non-first NPUs
    (ASCEND_VISIBLE_DEVICES=4,3 with /dev/davinci3, /dev/davinci4) and set no
    ASCEND_RT_VISIBLE_DEVICES: Project-HAMi/HAMi#1894 saw `open device 1 failed,
    runtime result = 507033` / E39007 there, while the first cards (0,1) worked."""
    kube = ctx.view.container.kubernetes
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
    fix: List[Union[Remedy, str]] = [
        Export(
            "ASCEND_RT_VISIBLE_DEVICES", logical, note=f"logical ids of the {len(nodes)} device(s) in this container"
        )
    ]
    if kube:
        fix.append(
            "Kubernetes: set ASCEND_RT_VISIBLE_DEVICES in the pod spec next to the device plugin's "
            "ASCEND_VISIBLE_DEVICES (Project-HAMi/HAMi#1894)"
        )
    return VISIBLE_RUNTIME_ONLY.finding(
        title=f"ASCEND_VISIBLE_DEVICES={av} selects non-first NPUs and ASCEND_RT_VISIBLE_DEVICES is unset: "
        "the runtime can open the wrong physical device",
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
        num = to_int(tok) if re.match(r"^[0-9]+$", tok) else None
        if num is not None:
            ints.append(num)
            if not stopped and (count is None or num < count):
                effective.append(num)
            elif not stopped:
                stopped = True
        else:
            if not stopped:
                problems.append(f"entry {tok!r} is not a plain integer (CANN stops reading there)")
            else:
                problems.append(f"entry {tok!r} is not a plain integer")
            stopped = True
            if to_int(tok) is not None and not tok.strip().startswith("-"):
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
            f"ids {out_of_range} out of range: {count} device(s) visible here, valid ids 0..{(count or 0) - 1}"
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
                Export(
                    "ASCEND_RT_VISIBLE_DEVICES",
                    suggestion,
                    note="unique, ascending, 0-based ids of the visible devices",
                )
            ],
            data={"effective": effective},
        ),
        effective,
    )
