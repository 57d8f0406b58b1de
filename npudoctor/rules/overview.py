"""The calm overview: "no NPU stack here" on a plain machine, and the helper other rules
use to stay quiet there.

Codes: ``HOST050`` (no-npu-stack).  ``HOST050``-``HOST059`` are reserved for this module.
"""

from __future__ import annotations

from collections import abc
from typing import TYPE_CHECKING

from npudoctor.context import RuleContext
from npudoctor.facts import Facts
from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.rules import rule
from npudoctor.snapshot import Snapshot

if TYPE_CHECKING:
    from typing import Iterable, List, Mapping, Union

READS = ("cann", "devices", "driver", "packages")
ONLY_WITH = ("cann", "driver")

NO_NPU_STACK = codes.get("HOST050")

#: What :func:`stack_evidence` accepts: a snapshot, a rule context, its typed facts, a
#: snapshot document (``{"facts": {...}}``) or a facts object.
if TYPE_CHECKING:
    Source = Union[Snapshot, RuleContext, Facts, Mapping[str, object]]


def _view(source: Source) -> Facts:
    """The typed facts of ``source`` (see :data:`Source`)."""
    if isinstance(source, Facts):
        return source
    if isinstance(source, RuleContext):
        return source.view
    if isinstance(source, Snapshot):
        return Facts(source.facts)
    if isinstance(source, abc.Mapping):
        inner = source.get("facts")
        return Facts(inner if isinstance(inner, abc.Mapping) and inner else source)
    return Facts({})


def stack_evidence(snapshot: Source) -> List[str]:
    """One line per NPU-related thing present (empty list: nothing NPU-related).

    ``snapshot`` is a :class:`~npudoctor.snapshot.Snapshot`, a ``RuleContext``, a snapshot
    document or a plain facts dict.  Reads ``cann.toolkits``/``cann.nnal``,
    ``driver.driver.exists``/``version``, the torch-npu records of ``packages`` and
    ``devices.chips``/``devices.npu_smi.available``/``devices.nodes``.
    """
    facts = _view(snapshot)
    out: List[str] = []
    cann = facts.cann
    for tk in cann.toolkits:
        out.append(f"CANN {tk.version or '(version unknown)'} at {tk.path}")
    if cann.nnal is not None:
        out.append(f"NNAL/ATB at {cann.nnal.path}")
    driver = facts.driver.driver
    if driver.exists or driver.version:
        out.append(f"NPU driver {driver.version or ''} at {driver.path}".replace("  ", " "))
    for rec in facts.packages.records("torch-npu"):
        out.append(f"torch_npu {rec.version} in {rec.location}")
    devices = facts.devices
    if devices.chips:
        out.append(f"{len(devices.chips)} NPU chip(s) listed by npu-smi")
    elif devices.npu_smi.available:
        out.append("npu-smi is installed")
    if devices.nodes:
        out.append("/dev/davinci* device nodes present")
    return out


def npu_stack_present(snapshot: Source) -> bool:
    """True when anything of an Ascend NPU stack is on the machine: a CANN toolkit or
    NNAL, the NPU driver, a torch_npu package, npu-smi, NPU chips or device nodes.

    Rules that would otherwise complain about a missing piece call this first and stay
    quiet on a plain machine (where ``HOST050`` says it calmly).  Accepts a Snapshot, a
    RuleContext or a facts dict; never raises.
    """
    try:
        return bool(stack_evidence(snapshot))
    except Exception:  # odd facts must not make every rule fail
        return True


def _sections_ran(ctx: RuleContext) -> bool:
    # Under --only/--skip or from an old snapshot some sections may be absent; only say
    # "nothing here" when the sections that could contradict it were actually probed.
    return all(ctx.view.state(name) != "absent" for name in ("cann", "driver"))


@rule
def no_npu_stack(ctx: RuleContext) -> Iterable[Finding]:
    """HOST050 when the machine has no NPU stack at all."""
    if not _sections_ran(ctx) or npu_stack_present(ctx):
        return
    searched = ctx.view.cann.searched
    evidence = ["no CANN toolkit, NNAL, NPU driver, torch_npu or NPU device found"]
    if searched:
        evidence.append("looked in: " + ", ".join(str(s) for s in searched[:8]))
    yield NO_NPU_STACK.finding(evidence=evidence)
