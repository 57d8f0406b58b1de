"""Lint beside the machine: what lint takes from a judged machine (the torch_npu release line,
the chip without bfloat16, the NPU count) and the lint findings as findings of a ``check``
report (area ``lint``), for ``check --workload DIR``."""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Sequence, Tuple

from npudoctor.facts import Facts
from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.lint.model import LintResult
from npudoctor.record import Record


class MachineAdvice(Record):
    """What lint takes from the machine of ``--root``/``--python``/``--from``: the torch_npu
    release line (AMP advice), the chip without bfloat16 (the title of the rules' DEV041
    finding, the one judge of it), and what was found, for the user."""

    torch_npu: Optional[Tuple[int, int]]
    no_bf16: Optional[str]
    said: str
    npus: Optional[int] = None


def release_line(text: Optional[str]) -> Optional[Tuple[int, int]]:
    """``(major, minor)`` of a torch_npu version or release line ("2.6.0.post1" -> (2, 6));
    raises ``ValueError`` for text that does not start with two numbers."""
    if text is None:
        return None
    parts = text.split(".")
    if len(parts) < 2 or not parts[0].isdigit() or not parts[1].isdigit():
        raise ValueError(f"--torch-npu {text!r}: give a release line like 2.1 or 2.6.0")
    return int(parts[0]), int(parts[1])


def advice_from(facts_raw: Mapping[str, Any], findings: Sequence[Finding]) -> MachineAdvice:
    """The advice of a machine judged into ``facts_raw`` (a snapshot's facts) and ``findings``."""
    no_bf16 = next((f.title for f in findings if f.code == "DEV041"), None)
    facts = Facts(dict(facts_raw))
    npus = len(facts.devices.chips) or None
    dist = facts.packages.torch_npu
    if dist is None or not dist.version:
        return MachineAdvice(None, no_bf16, "torch_npu is not installed on that machine", npus)
    try:
        return MachineAdvice(release_line(dist.version), no_bf16, f"torch_npu {dist.version} installed", npus)
    except ValueError:
        return MachineAdvice(None, no_bf16, f"torch_npu version {dist.version!r} not understood", npus)


def as_findings(result: LintResult) -> List[Finding]:
    """Each lint finding as a finding of area ``lint``: the place and the message in the title,
    the source line as evidence, the NPU fix as the step."""
    out: List[Finding] = []
    for lf in result.findings:
        place = f"{lf.path}:{lf.line}" if lf.cell is None else f"{lf.path} cell {lf.cell}:{lf.line}"
        out.append(
            Finding(
                code=lf.code,
                name=codes.get(lf.code).name,
                severity=lf.severity,
                area="lint",
                title=f"{place}: {lf.message}",
                evidence=[lf.source] if lf.source else [],
                fix=[lf.fix] if lf.fix else [],
                subject=place,
                data={"path": lf.path, "line": lf.line, "end_line": lf.end_line, "column": lf.col + 1},
            )
        )
    return out
