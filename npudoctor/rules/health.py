"""Findings that only the container health check asks for (``npudoctor health``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from npudoctor.facts.devices import DevicesFacts
from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.rules import rule

if TYPE_CHECKING:
    from typing import Iterable, Tuple

    from npudoctor.context import RuleContext

READS = ("devices",)

TOO_FEW_DEVICES = codes.get("DEV090")

HEALTH_BUDGET = codes.get("HOST090")


def visible_chip_count(devices: DevicesFacts) -> Tuple[int, str]:
    """``(count, how it was counted)`` from the devices view: the chips parsed from
    ``npu-smi info`` when it answered, else the ``/dev/davinciN`` nodes present."""
    if devices.chips:
        return len(devices.chips), "npu-smi info"
    nodes = [n for n in devices.nodes if n.exists and n.path.rsplit("/", 1)[-1][len("davinci") :].isdecimal()]
    return len(nodes), "/dev/davinciN nodes"


@rule
def required_devices(ctx: RuleContext) -> Iterable[Finding]:
    """DEV090: fewer NPU chips visible than ``--require-devices`` asks for."""
    wanted = ctx.options.require_devices
    if not wanted:
        return
    count, how = visible_chip_count(ctx.view.devices)
    uncounted = ctx.view.devices.nodes_error if not ctx.view.devices.chips else None
    if count >= wanted:
        return
    if uncounted:  # no chip table and the nodes not looked at: not met for want of a count
        yield TOO_FEW_DEVICES.finding(
            title=f"NPU chips could not be counted, {wanted} required",
            evidence=[f"no chip table from npu-smi, and {uncounted}"],
            fix=[
                "Let the check count them: npu-smi on PATH (the driver's tool, mounted from the host in a "
                "container), or /dev readable to this account"
            ],
        )
        return
    yield TOO_FEW_DEVICES.finding(
        title=f"{count} NPU chip(s) visible, {wanted} required",
        evidence=[f"{count} chip(s) counted from {how}"],
        fix=[
            "Pass the devices into the container: one --device /dev/davinciN per NPU N, plus "
            "--device /dev/davinci_manager --device /dev/devmm_svm --device /dev/hisi_hdc",
            "Kubernetes: request the devices from the Ascend device plugin (resources.limits: huawei.com/Ascend910: N)",
        ],
    )
