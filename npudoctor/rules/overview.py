"""The calm overview: "no NPU stack here" on a plain machine, and the helper other rules
use to stay quiet there.

Codes: ``HOST050`` (no-npu-stack).  ``HOST050``-``HOST059`` are reserved for this module.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List

from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.rules import rule

NO_NPU_STACK = codes.get("HOST050")


def _section(source: Any, name: str) -> Dict[str, Any]:
    snapshot = getattr(source, "snapshot", source)
    getter = getattr(snapshot, "section", None)
    if callable(getter):
        value = getter(name)
    elif isinstance(snapshot, dict):
        value = (snapshot.get("facts") or snapshot).get(name)
    else:
        value = None
    return value if isinstance(value, dict) else {}


def _torch_npu_records(source: Any) -> List[Dict[str, Any]]:
    installed = _section(source, "packages").get("installed") or {}
    if not isinstance(installed, dict):
        return []
    out: List[Dict[str, Any]] = []
    for key in ("torch-npu", "torch_npu"):
        records = installed.get(key) or []
        out.extend(r for r in records if isinstance(r, dict))
    return out


def stack_evidence(snapshot: Any) -> List[str]:
    """One line per NPU-related thing present (empty list: nothing NPU-related).

    ``snapshot`` is a :class:`~npudoctor.snapshot.Snapshot`, a ``RuleContext`` or a plain
    facts dict.  Reads ``cann.toolkits``/``cann.nnal``, ``driver.driver.exists``/``version``,
    ``packages.installed["torch-npu"]`` and ``devices.chips``/``devices.npu_smi.available``/
    ``devices.nodes``.
    """
    out: List[str] = []
    cann = _section(snapshot, "cann")
    for tk in cann.get("toolkits") or []:
        if isinstance(tk, dict):
            out.append(f"CANN {tk.get('version') or '(version unknown)'} at {tk.get('path')}")
    nnal = cann.get("nnal")
    if isinstance(nnal, dict):
        out.append(f"NNAL/ATB at {nnal.get('path')}")
    driver = (_section(snapshot, "driver").get("driver")) or {}
    if isinstance(driver, dict) and (driver.get("exists") or driver.get("version")):
        out.append(f"NPU driver {driver.get('version') or ''} at {driver.get('path')}".replace("  ", " "))
    for rec in _torch_npu_records(snapshot):
        out.append(f"torch_npu {rec.get('version')} in {rec.get('location')}")
    devices = _section(snapshot, "devices")
    chips = devices.get("chips") or []
    if chips:
        out.append(f"{len(chips)} NPU chip(s) listed by npu-smi")
    elif isinstance(devices.get("npu_smi"), dict) and devices["npu_smi"].get("available"):
        out.append("npu-smi is installed")
    nodes = devices.get("nodes")
    if isinstance(nodes, (list, dict)) and nodes:
        out.append("/dev/davinci* device nodes present")
    return out


def npu_stack_present(snapshot: Any) -> bool:
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


def _sections_ran(ctx: Any) -> bool:
    # Under --only/--skip or from an old snapshot some sections may be absent; only say
    # "nothing here" when the sections that could contradict it were actually probed.
    facts = getattr(ctx.snapshot, "facts", {}) or {}
    return all(name in facts for name in ("cann", "driver"))


@rule
def no_npu_stack(ctx: Any) -> Iterable[Finding]:
    """HOST050 when the machine has no NPU stack at all."""
    if not _sections_ran(ctx) or npu_stack_present(ctx.snapshot):
        return
    searched = _section(ctx.snapshot, "cann").get("searched") or []
    evidence = ["no CANN toolkit, NNAL, NPU driver, torch_npu or NPU device found"]
    if searched:
        evidence.append("looked in: " + ", ".join(str(s) for s in searched[:8]))
    yield NO_NPU_STACK.finding(evidence=evidence)
