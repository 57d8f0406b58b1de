"""The NPU was never given to this container, pod or build stage: CANN and torch_npu are in
the image but there are no device nodes and no driver.  One root cause, one finding
(CTR006), said in the world's terms (``docker run`` flags, pod-spec fields, "mounted from
the host at run time" for a build stage): the findings that are only its consequences
(the driver, device nodes, npu-smi and driver-library findings) are folded under it.  With the
devices present but the driver not mounted, CTR002 is that one finding: DRV001's container
form ("the host's NPU driver is not mounted") and driver-library LIB findings fold into it.

Reads ``ctx.view.container`` (world, mounts), ``ctx.view.devices`` (nodes) and
``ctx.view.driver``.  Root-cause kind K16 (the ``[kinds]`` table of ``knowledge/signatures.toml``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.remedies.world import passthrough_fix
from npudoctor.rules import postprocess, rule
from npudoctor.rules._devfacts import parse_id_list, stack_present

if TYPE_CHECKING:
    from typing import Iterable, List

    from npudoctor.context import RuleContext

READS = ("cann", "container", "devices", "driver", "packages")
ONLY_WITH = ("container",)
#: Findings of an area (key) whose content depends on which findings of other areas (value)
#: are reported: the root's ``data["folded"]`` lists the DRV/LIB/DEV/CTR codes it explains,
#: and they name it in ``data["because"]`` (:func:`npudoctor.engine.rule_modules`).
FOLDS = {
    "container": ("devices", "driver", "libraries"),
    "devices": ("container",),
    "driver": ("container",),
    "libraries": ("container",),
}

NO_NPU_GIVEN = codes.get("CTR006")

#: Findings that only restate CTR006 (no driver, no nodes, no npu-smi in a container).
FOLDED = ("DRV001", "CTR001", "CTR002", "CTR003", "CTR004", "DEV003", "DEV020")

_WHERE = {"build": "this image build step", "pod": "this pod", "container": "this container"}


def _driver_absent(ctx: RuleContext) -> bool:
    drv = ctx.view.driver.driver
    if drv.exists or drv.version:
        return False
    mounts = {m.path: m.exists for m in ctx.view.container.mounts}
    return mounts.get("/usr/local/Ascend/driver/version.info") is not True


@rule
def npu_not_given(ctx: RuleContext) -> Iterable[Finding]:
    """CTR006: in a container, pod or build stage with an NPU stack, neither device nodes
    nor the host's driver are there."""
    where = ctx.view.container.runs_in
    if where not in _WHERE or not stack_present(ctx.view) or ctx.view.state("devices") == "absent":
        return
    if ctx.view.state("driver") == "absent":
        return
    dev = ctx.view.devices
    if dev.chip_nodes or dev.chips or dev.nodes_error or ctx.view.unread("devices", "nodes") or not _driver_absent(ctx):
        return  # nodes present, or /dev could not be looked at (unknown is not absent)
    torch_npu = ctx.view.packages.version_of("torch-npu")
    c = ctx.view.container
    evidence = [
        "no /dev/davinciN node and none of /dev/davinci_manager, /dev/devmm_svm, /dev/hisi_hdc"
        if not any(n.exists for n in dev.nodes)
        else "no /dev/davinciN node",
        "/usr/local/Ascend/driver/version.info: not present (the driver belongs to the host)",
    ]
    if torch_npu:
        evidence.append(f"torch_npu {torch_npu} is installed: `import torch_npu` cannot load the driver here")
    tk = ctx.view.cann.selected
    if tk is not None and tk.version:
        evidence.append(f"CANN {tk.version} at {tk.path}")
    evidence += list(c.build_markers) + [e for e in c.evidence if e not in c.build_markers]
    wanted = dev.visibility.ascend_visible_devices
    ids: List[int] = parse_id_list(wanted)[0] if wanted else []
    if wanted is not None and not wanted.strip():
        evidence.append(
            "ASCEND_VISIBLE_DEVICES is set but empty: if the Ascend Docker Runtime created this container, "
            "an empty list made it mount no NPU"
        )
    elif wanted is not None:
        evidence.append(
            f"ASCEND_VISIBLE_DEVICES={wanted} is set, but only the Ascend Docker Runtime reads it, before the "
            "container starts: it was not used here"
        )
    if where == "build":
        title = (
            "no NPU in this image build step: the driver and the device nodes are mounted from the host at run "
            "time; add the mounts to `docker run`, and do not import torch_npu while building"
        )
    elif where == "pod":
        title = (
            "this pod was started without the NPU: no device nodes and no driver (no Ascend runtime: set "
            "runtimeClassName and request the device plugin's resource)"
        )
    else:
        title = (
            "this container was started without the NPU: no device nodes and no driver from the host "
            "(neither the Ascend Docker Runtime nor --device/-v flags)"
        )
    yield NO_NPU_GIVEN.finding(
        title=title,
        evidence=evidence,
        fix=passthrough_fix(ctx.view.container.runs_in, ids),
        severity="error" if torch_npu else "warning",
        subject=where,
        data={"world": where},
    )


def _driver_library(f: Finding) -> bool:
    """A LIB finding about a library the NPU driver owns."""
    # Imported here, not at the top: the owners module imports the libraries views, which
    # ``devices`` and ``health`` (they never read the libraries section) would otherwise define.
    from npudoctor.rules._libowners import DRIVER

    return f.code.startswith("LIB") and DRIVER in (f.data.get("owners") or [])


def _consequence(f: Finding) -> bool:
    return f.code in FOLDED or _driver_library(f)


def _driver_consequence(f: Finding) -> bool:
    return f.code == "DRV001" or _driver_library(f)


@postprocess
def fold_into_npu_not_given(ctx: RuleContext, findings: List[Finding]) -> List[Finding]:
    """Name CTR006 (or, without it, CTR002 "driver not mounted") as the cause of the
    findings it explains -- DRV001's container form, CTR001-CTR004, DEV003, DEV020,
    driver-library LIB findings -- in their ``data["because"]``: the report folds them
    under it ("because of this, also: …") and the fix list leaves them out
    (:func:`npudoctor.rules.order.fold_symptoms` keeps a cause only when it is reported
    and at least as severe)."""
    root = next((f for f in findings if f.code == NO_NPU_GIVEN.code), None)
    test = _consequence
    if root is None and ctx.view.container.runs_in in _WHERE:
        root = next((f for f in findings if f.code == "CTR002"), None)
        test = _driver_consequence
    if root is None:
        return findings
    folded = [f for f in findings if f is not root and test(f)]
    if folded:
        root.data["folded"] = list(dict.fromkeys(f.code for f in folded))
        for f in folded:
            f.data["because"] = root.code
    return findings
