"""``npudoctor env --recommend``: the environment lines that fix every runtime-tunable
finding (ENV008-ENV011, rules/tunables.py) of the diagnosed machine, in the shell, Dockerfile
or pod-spec form the remedies layer renders.  The findings come from the same probe → rules
pipeline as ``check``; only their ``export``/``unset`` steps are kept, one per variable."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

    from npudoctor.findings import Finding
    from npudoctor.remedies import Remedy
    from npudoctor.session.request import MachineRequest

#: The codes whose fixes are environment settings of the runtime tunables.
TUNABLE_CODES = ("ENV008", "ENV009", "ENV010", "ENV011")
#: The output forms.
FORMS = ("shell", "dockerfile", "pod")


def steps_of(findings: Sequence[Finding]) -> List[Remedy]:
    """The ``export``/``unset`` steps of the tunable findings, one per variable: a variable
    both exported and unset keeps its export (the NPU twin replaces the CUDA one)."""
    from npudoctor.remedies import Command, Export

    chosen: Dict[str, Remedy] = {}
    for finding in findings:
        if finding.code not in TUNABLE_CODES:
            continue
        for raw in finding.remedies:
            kind = raw.get("kind")
            if kind == "export" and raw.get("value") is not None:
                chosen[str(raw["var"])] = Export(str(raw["var"]), str(raw["value"]))
            elif kind == "command" and list(raw.get("argv", ()))[:1] == ["unset"] and len(raw["argv"]) == 2:
                name = str(raw["argv"][1])
                if not isinstance(chosen.get(name), Export):
                    chosen[name] = Command(("unset", name))
    return [chosen[name] for name in sorted(chosen)]


def render(steps: Sequence[Remedy], form: str) -> List[str]:
    """``steps`` as lines of ``form`` (shell, dockerfile, pod)."""
    from npudoctor.remedies import dockerfile, podspec, shell

    if form == "dockerfile":
        return dockerfile(steps)
    if form == "pod":
        return podspec(steps).splitlines()
    return [shell(step) for step in steps]


def recommend(
    request: MachineRequest, environ: Optional[Mapping[str, str]] = None
) -> Tuple[List[Remedy], List[Finding]]:
    """Probe and judge the machine of ``request``; the tunable steps and the findings they fix."""
    from npudoctor.context import Options
    from npudoctor.session.machine import judge

    options: Any = Options()
    _snapshot, judged = judge(request, options, environ=environ)
    findings = [f for f in judged if f.code in TUNABLE_CODES]
    return steps_of(findings), findings
