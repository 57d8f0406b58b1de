"""Findings that only the container health check asks for (``npudoctor health``)."""

from __future__ import annotations

from typing import Iterable

from npudoctor.findings import Code, Finding
from npudoctor.rules import rule

TOO_FEW_DEVICES = Code(
    "DEV090",
    "fewer-devices-than-required",
    area="devices",
    severity="error",
    title="fewer NPUs are visible than the workload requires",
    explain=(
        "`npudoctor health --require N` was asked to see at least N NPU chips, and fewer are "
        "visible here. Chips are counted from `npu-smi info` when it answers, else from the "
        "/dev/davinciN device nodes. In a container this usually means the devices were not "
        "passed in (`--device /dev/davinciN`, the Ascend Docker Runtime's ASCEND_VISIBLE_DEVICES, "
        "or the Kubernetes device-plugin resource `huawei.com/Ascend910: N`) or that chips went "
        "missing on the host (`npu-smi info` on the host, `dmesg`)."
    ),
    kinds=("K16",),
)

HEALTH_BUDGET = Code(
    "HOST090",
    "health-check-over-budget",
    area="host",
    severity="error",
    title="the health check did not finish within its time budget",
    explain=(
        "`npudoctor health --timeout SECONDS` is a hard total budget. When a probe (usually "
        "`npu-smi`, which can hang while the driver is wedged) does not finish in time, the check "
        "stops, reports which step was running and exits 1, so that an orchestrator marks the "
        "container unhealthy instead of waiting. Run `npudoctor check` by hand to see the slow step; "
        "a hanging `npu-smi info` usually means the driver needs attention on the host."
    ),
)


def visible_chip_count(devices: dict) -> tuple[int, str]:
    """``(count, how it was counted)`` from the devices facts: the chips parsed from
    ``npu-smi info`` when it answered, else the ``/dev/davinciN`` nodes present."""
    chips = devices.get("chips") or []
    if chips:
        return len(chips), "npu-smi info"
    nodes = [
        n
        for n in devices.get("nodes") or []
        if n.get("exists") and str(n.get("path", "")).rsplit("/", 1)[-1][len("davinci") :].isdigit()
    ]
    return len(nodes), "/dev/davinciN nodes"


@rule
def required_devices(ctx) -> Iterable[Finding]:
    wanted = getattr(ctx.options, "require_devices", None)
    if not wanted:
        return
    count, how = visible_chip_count(ctx.facts("devices"))
    if count < wanted:
        yield TOO_FEW_DEVICES.finding(
            title=f"{count} NPU chip(s) visible, {wanted} required",
            evidence=[f"{count} chip(s) counted from {how}"],
            fix=[
                "Pass the devices into the container: docker run --device /dev/davinci0 … "
                "--device /dev/davinci_manager --device /dev/devmm_svm --device /dev/hisi_hdc",
                "Kubernetes: request the devices from the Ascend device plugin (resources.limits: huawei.com/Ascend910: N)",
            ],
        )
