"""The torch stack a framework's own table names, for the package rules (not a rule module):
shared by PKG004 on ``.run`` frameworks (MindIE, :mod:`npudoctor.rules.companions`) and on
pip frameworks (MindSpeed, lmdeploy, :mod:`npudoctor.rules.framework_tables`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional, Sequence

from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.knowledge.grades import Grade
from npudoctor.knowledge.versions import release_xyz
from npudoctor.remedies.python import pip_install
from npudoctor.rules._pkgfit import Fix, cpu_index
from npudoctor.rules._pyfacts import ask, platform

if TYPE_CHECKING:
    from npudoctor.facts.system import HostFacts, PythonFacts
    from npudoctor.knowledge.frameworks import FrameworkRow
    from npudoctor.knowledge.matrix import Matrix

COMPANION = codes.get("PKG004")


def documented_npu(matrix: Optional[Matrix], row: FrameworkRow, torch_version: str) -> Optional[str]:
    """The torch_npu build a table row names: its own ``torch_npu``, or the build of its
    Ascend Extension for PyTorch line (matrix ``ext_version``; the line the row names for
    this torch, if it names one per torch) for ``torch_version``."""
    if row.torch_npu:
        return str(row.torch_npu)
    ext = row.ext_for(release_xyz(torch_version))
    if not ext:
        return None
    for r in ask(matrix, lambda m: m.rows_for_torch(torch_version)) or []:
        if str(r.ext_version).lower() == str(ext).lower():
            return str(r.torch_npu)
    return None


def torch_not_documented(
    matrix: Optional[Matrix],
    py: PythonFacts,
    host: HostFacts,
    row: FrameworkRow,
    label: str,
    version: str,
    seen: Sequence[str],
    torch_version: str,
    named: Optional[str] = None,
    alternatives: Sequence[Fix] = (),
) -> Finding:
    """PKG004 (warning): ``label`` ``version``, whose table ``row`` names the torch releases
    it is made for, beside torch ``torch_version``: not documented either way, so a warning
    naming the documented torch and its torch_npu build (a CPU torch: torch_npu needs one).
    ``seen``: the evidence lines of what is installed; ``named``: how the title names the
    release (default ``label version``); ``alternatives``: further ways out, after the fix."""
    want = row.torch[-1]
    build = documented_npu(matrix, row, want)
    ext = row.ext_for(want)
    reqs = [f"torch=={want}"] + ([f"torch-npu=={build}"] if build else [])
    fix: List[Fix] = [
        pip_install(
            py,
            *reqs,
            index=cpu_index(reqs[0], platform(py, host)),
            lead=f"install the torch {want} stack {label} {version} is made for"
            + (f" (Ascend Extension for PyTorch {ext})" if ext else "")
            + ": ",
        )
    ]
    if not build:
        fix.append(f"then the torch_npu build for torch {want} paired with your CANN (`npudoctor plan` names it)")
    fix.extend(alternatives)
    documented = ", ".join(row.torch)
    return COMPANION.finding(
        title=f"{named or f'{label} {version}'} is made for torch {documented}, but torch {torch_version} is installed",
        evidence=[
            *seen,
            f"{label} {version} documents torch {documented}"
            + (f", Ascend Extension for PyTorch {row.ext}" if row.ext else "")
            + (f", CANN {row.cann_min}" if row.cann_min else "")
            + f" (built-in table: {row.source})",
            f"torch {release_xyz(torch_version)} is not among them: undocumented, not a documented failure",
        ],
        fix=fix,
        severity="warning",
        subject=f"{row.project}:torch",
        data={"grade": Grade.UNDOCUMENTED.value, "framework": row.project, "version": version},
    )
