"""Which installed framework requires a given torch_npu build.

A framework may pin a dev or otherwise unofficial torch_npu build; that build is then the
framework's requirement, and "switch to the official build" would break the framework.  The
framework's own ``Requires-Dist`` speaks first (any installed distribution pinning torch-npu
with ``==``); where a release's metadata names no torch-npu, the framework table
(:mod:`npudoctor.knowledge.frameworks`: vllm-ascend releases, MindIE and its ATB models) names
the build its documentation requires.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, List, Mapping, Optional, Tuple

from npudoctor.knowledge.frameworks import rows_for
from npudoctor.knowledge.versions import pep440_public
from npudoctor.parsers.metadata import canonical_name, requirements_on

if TYPE_CHECKING:
    from packaging.requirements import Requirement

    from npudoctor.facts.stack import CannFacts
    from npudoctor.facts.system import Distribution, PackagesFacts


def _torch_npu_pins(
    packages: PackagesFacts, environment: Optional[Mapping[str, str]] = None
) -> Iterator[Tuple[Distribution, Requirement, List[str]]]:
    """Each installed distribution's ``Requires-Dist`` on torch-npu (those that apply to
    ``environment``, when given) with the versions it pins exactly (``==``/``===``)."""
    for rec in packages.effective():
        if canonical_name(rec.name or "") == "torch-npu" or not rec.version:
            continue
        for req in requirements_on(list(rec.requires_dist), "torch-npu", environment):
            yield rec, req, [s.version for s in req.specifier if s.operator in ("==", "===")]


def pinned_by(packages: PackagesFacts, torch_npu: str) -> Optional[Tuple[Distribution, Requirement]]:
    """The installed distribution whose ``Requires-Dist`` pins exactly the torch_npu build
    ``torch_npu`` (``==``), with that requirement; ``None`` when none does."""
    want = pep440_public(torch_npu)
    if want is None:
        return None
    for rec, req, pinned in _torch_npu_pins(packages):
        if any(pep440_public(p) == want for p in pinned):
            return rec, req
    return None


def pinned_elsewhere(
    packages: PackagesFacts, installed: str, environment: Mapping[str, str]
) -> Optional[Tuple[Distribution, str]]:
    """The installed framework whose ``Requires-Dist`` pins exactly (``==``) a torch_npu
    build other than ``installed`` for the target interpreter (``environment``: its PEP 508
    marker variables, as PKG004 evaluates them), and that build: the torch_npu its fix
    (PKG004) installs, so that fixes computed from torch_npu are computed for it; ``None``
    when no framework pins another build."""
    have = pep440_public(installed)
    for rec, _req, pinned in _torch_npu_pins(packages, environment):
        if len(pinned) == 1 and "*" not in pinned[0] and pep440_public(pinned[0]) != have:
            return rec, pinned[0]
    return None


def framework_requiring(packages: PackagesFacts, cann: CannFacts, torch_npu: str) -> Optional[Tuple[str, str]]:
    """``("vllm-ascend 0.10.1", why)`` when an installed framework requires exactly the
    torch_npu build ``torch_npu``; ``None`` otherwise (also when a framework pins another
    build: that one is judged elsewhere)."""
    want = pep440_public(torch_npu)
    if want is None:
        return None
    pin = pinned_by(packages, torch_npu)
    if pin is not None:
        rec, req = pin
        return f"{rec.name} {rec.version}", f"Requires-Dist `{req}` in {rec.metadata_source or 'its METADATA'}"
    table_projects: List[Tuple[str, str, str]] = []
    for rec in packages.effective():
        name = canonical_name(rec.name or "")
        if name == "torch-npu" or not rec.version:
            continue
        reqs = requirements_on(list(rec.requires_dist), "torch-npu")
        if name == "vllm-ascend" and not reqs:
            table_projects.append(("vllm-ascend", "vllm-ascend", str(rec.version)))
    for fact, project, label in (
        (cann.mindie, "mindie", "MindIE"),
        (cann.atb_models, "atb-models", "MindIE ATB models"),
    ):
        if fact is not None and fact.version:
            table_projects.append((project, label, str(fact.version)))
    for project, label, version in table_projects:
        for row in rows_for(project, version):
            if row.torch_npu and pep440_public(row.torch_npu) == want:
                return f"{label} {version}", row.source
    return None
