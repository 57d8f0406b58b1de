"""The summary of a check: one line per area, in the style of ``flutter doctor`` -- a mark
(✓ no problem, ! warnings, ✗ errors, – not checked or nothing installed there to judge) and
what was found there (versions, paths, chips), read from the typed facts views.

The mark of an area is the worst severity among its findings; an area without an error or
a warning whose facts were not looked at (:func:`npudoctor.facts.coverage.not_checked`) is
"not checked" with the reason.  Nothing here judges: what was found is what the probes
read, and the judgement is the rules' findings.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from npudoctor.facts import Facts
from npudoctor.facts.coverage import not_checked
from npudoctor.findings import AREA_TITLES, AREAS, Finding
from npudoctor.record import Record

#: Marks of the summary, by state.
MARKS = {"error": "✗", "warning": "!", "ok": "✓", "unchecked": "–"}


class AreaLine(Record):
    """One summary line: ``area`` (a key of :data:`npudoctor.findings.AREAS`), ``state``
    (``"error" | "warning" | "ok" | "unchecked"``), ``title`` (the area's title for
    people) and ``found`` (what was found there, or why it was not checked; may be
    empty)."""

    area: str
    state: str
    title: str
    found: str

    @property
    def mark(self) -> str:
        """The one-character mark of :attr:`state`."""
        return MARKS[self.state]


def _python(facts: Facts) -> str:
    py = facts.python
    version = py.version or "version unknown"
    env = f", conda env {py.conda_env}" if py.conda_env else (", venv" if py.is_venv else "")
    if py.executable:
        return f"{version} at {py.executable}{env}"
    where = py.site_packages[0] if py.site_packages else py.prefix
    return f"{version} ({where}{env})" if where else f"{version}{env}"


def _packages(facts: Facts) -> str:
    pkgs = facts.packages_of("torch", "torch_npu")
    torch, tnpu = pkgs.first("torch"), pkgs.first("torch_npu")
    bits = [f"torch {torch.version}" if torch is not None else "no torch"]
    bits.append(f"torch_npu {tnpu.version}" if tnpu is not None else "no torch_npu")
    return ", ".join(bits)


def _cann(facts: Facts) -> str:
    cann = facts.cann
    tk = cann.selected
    if tk is None:
        return "no CANN toolkit found"
    bits = [f"toolkit {tk.version or 'version unknown'} at {tk.path}"]
    kernels = tk.kernels
    if kernels.installed:
        socs = f" ({', '.join(kernels.socs)})" if kernels.socs else ""
        bits.append(f"kernels {kernels.version or 'version unknown'}{socs}")
    else:
        bits.append("no kernels")
    nnal = cann.nnal
    bits.append(f"NNAL {nnal.version or 'version unknown'}" if nnal is not None else "no NNAL")
    more = len(cann.toolkits) - 1
    if more > 0:
        bits.append(f"{more} more toolkit(s) installed")
    return ", ".join(bits)


def _environment(facts: Facts) -> str:
    tk = facts.cann.selected
    if tk is None:
        return "no CANN toolkit to set up"
    return f"set_env.sh of {tk.path}" if tk.set_env else "no set_env.sh next to the toolkit"


def _driver(facts: Facts) -> str:
    drv = facts.driver
    smi = facts.devices.npu_smi.driver_version
    if not drv.driver.exists and not drv.driver.version and not smi:
        return "no driver found (/usr/local/Ascend/driver)"
    version = drv.driver.version or (f"{smi} (npu-smi)" if smi else "version unknown")
    bits = [f"driver {version}"]
    fw = drv.firmware
    if fw.exists or fw.version:
        bits.append(f"firmware {fw.version or 'version unknown'}")
    return ", ".join(bits)


def _devices(facts: Facts, product_lines: Optional[Mapping[str, str]] = None) -> str:
    """``8 × 910B3 (Atlas A2 training products / …)``: the chips by name, each with its
    official product line when ``product_lines`` (npu-smi Name -> line) names one, and why
    the device nodes were not looked at when they were not."""
    dev = facts.devices
    names: Dict[str, int] = {}
    for chip in dev.chips:
        name = str(chip.name or "unknown chip")
        names[name] = names.get(name, 0) + 1
    if names:
        lines = product_lines or {}
        chips = ", ".join(
            f"{n} × {name}" + (f" ({lines[name]})" if lines.get(name) else "") for name, n in names.items()
        )
        return f"{chips}; {dev.nodes_error}" if dev.nodes_error else chips
    nodes = sum(1 for n in dev.nodes if n.kind == "chip" and n.exists)
    return f"{nodes} /dev/davinci node(s), chips not listed" if nodes else "no NPU chip found"


def _container(facts: Facts) -> str:
    c = facts.container
    if not c.in_container:
        return "not in a container"
    kind = "Kubernetes pod" if c.kubernetes else (f"{c.runtime} container" if c.runtime else "container")
    return kind


def _deep(facts: Facts) -> str:
    deep = facts.deep
    if deep.ran is False:
        return f"not run: {deep.reason}" if deep.reason else "not run"
    return f"import torch_npu: {deep.outcome}" if deep.outcome else ""


def _deep_unrun(facts: Facts) -> bool:
    """Whether the deep probe was skipped or could not start (never a ✓: nothing was proven)."""
    deep = facts.deep
    return deep.ran is False or deep.outcome in ("not_run", "error")


_FOUND: Dict[str, Callable[[Facts], str]] = {
    "python": _python,
    "packages": _packages,
    "cann": _cann,
    "environment": _environment,
    "driver": _driver,
    "devices": _devices,
    "container": _container,
    "deep": _deep,
}

#: Areas shown only when they have findings or facts worth a line (they are about
#: setups most machines do not have).
_QUIET = {"hccl", "host", "matrix", "libraries"}


def _nothing_there(facts: Facts, area: str) -> bool:
    """Whether the facts of ``area`` say nothing of it is installed (no torch and no
    torch_npu, no CANN toolkit, no driver, no NPU chip or device node): with no finding
    about it, its line is "–" with what was looked for, never a ✓ (nothing was judged)."""
    if area == "packages":
        pkgs = facts.packages_of("torch", "torch_npu")
        return pkgs.first("torch") is None and pkgs.first("torch_npu") is None
    if area == "cann":
        return facts.cann.selected is None and not facts.cann.toolkits
    if area == "driver":
        drv = facts.driver.driver
        return not drv.exists and not drv.version and not facts.devices.npu_smi.driver_version
    if area == "devices":
        dev = facts.devices
        return not dev.chips and not any(n.kind == "chip" and n.exists for n in dev.nodes)
    return False


def _state(items: Sequence[Finding]) -> Optional[str]:
    """The worst severity of ``items`` that is an error or a warning, counting a failure
    another finding explains (the deep probe's, reported as a note with
    ``data["severity_was"]``) as what it was: a failed probe is never a ✓."""
    severities = {str(f.data.get("severity_was") or f.severity) for f in items}
    for state in ("error", "warning"):
        if state in severities:
            return state
    return None


def area_lines(
    facts_raw: Dict[str, Any], findings: Sequence[Finding], product_lines: Optional[Mapping[str, str]] = None
) -> List[AreaLine]:
    """The summary lines of a check over a snapshot's ``facts`` (a mapping) and its
    ``findings``, in the report's area order; ``product_lines``: the official product line
    of each chip name (:func:`npudoctor.rules.devices.product_lines`), named beside the chips.  The deep probe's and the code lint's lines
    appear only when they ran or were asked for; the quiet areas (HCCL, host hygiene, matrix, libraries) only
    with findings.  Never raises on malformed facts (a view that cannot be read gives an
    empty ``found``)."""
    facts = Facts(facts_raw)
    out: List[AreaLine] = []
    for area in AREAS:
        items = [f for f in findings if f.area == area]
        state = _state(items)
        if area in ("deep", "lint") and area not in facts_raw and not items:
            continue  # shown only when it ran (lint: the user's code is judged by `npudoctor lint`)
        if area in _QUIET and not items:
            continue
        reason = not_checked(facts_raw, area) if area in facts_raw or area in _FOUND else None
        found = ""
        if area in facts_raw and area in _FOUND:
            try:
                found = _devices(facts, product_lines) if area == "devices" else _FOUND[area](facts)
            except (AttributeError, TypeError, ValueError):  # pragma: no cover - views never raise
                found = ""
        if state is None and area == "environment" and facts_raw.get("cann") and Facts(facts_raw).cann.selected is None:
            reason = "no CANN toolkit to set up"
        if state is None and area == "deep" and area in facts_raw and _deep_unrun(facts):
            reason = found if facts.deep.ran is False else f"could not start: {facts.deep.reason or 'unknown'}"
            reason = reason or "not run"
            found = ""
        if state is None and reason:
            out.append(AreaLine(area, "unchecked", AREA_TITLES[area], f"not checked: {reason}"))
            continue
        if state is None and area in facts_raw and _nothing_there(facts, area):
            out.append(AreaLine(area, "unchecked", AREA_TITLES[area], found))
            continue
        explained = [str(c) for f in items for c in f.data.get("explained_by") or () if f.data.get("severity_was")]
        if explained:
            found = (found + "; " if found else "") + f"explained by {', '.join(dict.fromkeys(explained))}"
        causes = sorted({str(f.data["because"]) for f in items if f.severity == state and f.data.get("because")})
        if causes and all(f.data.get("because") for f in items if f.severity == state):
            found = (found + "; " if found else "") + f"because of {', '.join(causes)}"
        out.append(AreaLine(area, state or "ok", AREA_TITLES[area], found))
    return out
