"""The planner's data: what was asked (:class:`Request`), the chosen set (:class:`Plan`
with its :class:`DriverStep`), a judged matrix row (:class:`Candidate`) and the result
(:class:`Resolution`), with the constants of the torch requirements they render.  The
solver that fills them is :mod:`npudoctor.plan.resolve`."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from npudoctor import lazyre
from npudoctor.plan.site import Site
from npudoctor.record import MutableRecord, asdict, field

#: PyTorch CPU wheel index: torch ``X+cpu`` builds that x86_64 torch_npu wheels pin up to
#: torch 2.11.x (the Requires-Dist of sampled wheels on PyPI; torch_npu README
#: "For x86: pip3 install torch==2.6.0+cpu --index-url https://download.pytorch.org/whl/cpu").
#: torch for an Ascend site is always a CPU build: on x86_64 PyPI's torch is a CUDA build
#: (it requires nvidia-* wheels), so x86_64 torch always comes from this index.
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
#: First torch line whose x86_64 torch_npu wheel pins plain ``torch==X`` (the wheels on PyPI).
PLAIN_TORCH_FROM = "2.12.0"
#: First torch line whose aarch64 wheel on PyPI is a CUDA build: up to 2.10 PyPI's aarch64
#: torch is CPU-only (pytorch/pytorch#160162, #168065), from 2.11 the CPU build comes from
#: :data:`TORCH_CPU_INDEX` (as measured on PyPI's files).
AARCH64_CPU_INDEX_FROM = "2.11.0"
#: Row status order of preference when several rows are equally new.
_STATUS_RANK = {"active": 0, "historical": 1, "release-notes-only": 2, "unmapped": 3, "prerelease": 4}
#: torch_npu's own documented Python dependencies (its README: "pip3 install
#: pyyaml", "pip3 install setuptools").
TORCH_NPU_EXTRA = ("pyyaml", "setuptools")


def torch_requirement(torch: str, torch_npu: str, arch: str) -> Tuple[str, Optional[str]]:
    """(pip requirement of torch, the index torch alone comes from, or None for the default index).

    torch for an Ascend site is a CPU build.  x86_64: always the PyTorch CPU index (PyPI's
    x86_64 torch is a CUDA build); its wheels pin the ``+cpu`` local build up to torch 2.11.x
    and plain ``torch==X`` from 2.12.0 (the METADATA of sampled wheels on PyPI), which the
    CPU index's ``X+cpu`` satisfies.  aarch64: PyPI (CPU-only) up to 2.10, the CPU index from
    :data:`~npudoctor.plan.model.AARCH64_CPU_INDEX_FROM` on (PyPI's aarch64 wheels are CUDA
    builds after 2.10)."""
    from npudoctor.knowledge.versions import pep440

    if arch == "x86_64":
        if pep440(torch) < pep440(PLAIN_TORCH_FROM):
            return f"torch=={torch}+cpu", TORCH_CPU_INDEX
        return f"torch=={torch}", TORCH_CPU_INDEX
    if pep440(torch) >= pep440(AARCH64_CPU_INDEX_FROM):
        return f"torch=={torch}", TORCH_CPU_INDEX
    return f"torch=={torch}", None


class PlanError(ValueError):
    """The request itself is malformed (unknown version text, missing site facts that
    cannot be assumed).  Exit 2 in the CLI."""


class Request(MutableRecord):
    """What the user asked for (all optional)."""

    torch_npu: Optional[str] = None
    torch: Optional[str] = None
    cann: Optional[str] = None
    python: Optional[str] = None
    allow_driver_upgrade: bool = False
    newest: bool = False  # no target: the newest set, not the site's own torch line

    @property
    def targeted(self) -> bool:
        """Whether a torch_npu, torch or CANN version was asked for."""
        return bool(self.torch_npu or self.torch or self.cann)

    def describe(self) -> str:
        parts = []
        for key in ("torch_npu", "torch", "cann", "python"):
            value = getattr(self, key)
            if value:
                parts.append(f"--{key.replace('_', '-')} {value}")
        if self.newest and not self.targeted:
            parts.append("--newest (newest set the site supports)")
        return " ".join(parts) or "no target (the site's torch line when it fits; --newest for the newest set)"


_XY_RE = lazyre.pattern(r"^(\d+)\.(\d+)")


def hdk_versions(paired: List[str], compatible: List[str]) -> List[str]:
    """The driver (Ascend HDK) versions a CANN accepts, as one list to show: every version
    the data documents (paired, declared compatible, tested install pairings), sorted by
    version newest first (``25.5.X`` patterns sort as the newest of their line; text that is
    no HDK version last), each version once (case-insensitive: ``26.1.0`` listed as paired
    and compatible appears once).  Source: ``Matrix.driver_requirement(cann)`` (``hdk_paired``
    / ``hdk_compatible`` of the CANN row, from the CANN release notes) and its
    ``[[install_pairing]]`` rows."""
    from npudoctor.knowledge.matrix.model import _hdk_sort_key

    out: List[str] = []
    seen = set()
    for text in list(paired) + list(compatible):
        key = str(text).strip().lower()
        if key and key not in seen:
            seen.add(key)
            out.append(str(text).strip())
    known = [t for t in out if _hdk_sort_key(t)[0]]
    return sorted(known, key=_hdk_sort_key, reverse=True) + [t for t in out if not _hdk_sort_key(t)[0]]


class DriverStep(MutableRecord):
    """What the plan needs from the NPU driver.  ``required``: the Ascend HDK versions the
    CANN accepts (see :func:`hdk_versions`: paired first, then the compatible ones newest
    first, each once)."""

    installed: Optional[str]
    fit: str  # paired | compatible | too-old | incompatible | unknown
    action: str  # keep | upgrade | check
    target: Optional[str] = None
    required: List[str] = field(default_factory=list)
    source: str = ""


class Plan(MutableRecord):
    """One consistent set, with the reason for every choice (``reasons``) and the things
    the user must know (``warnings``)."""

    torch_npu: str
    torch: str
    torch_requirement: str
    torch_index: Optional[str]
    python: str
    arch: str
    glibc: Optional[str]
    cann: str
    cann_action: str  # keep | install
    cann_fit: str  # paired | compatible
    numpy: str  # pip requirement ("numpy<2", "numpy")
    python_deps: List[str]
    driver: DriverStep
    chip: Optional[str]
    chip_family: Optional[str]
    package_chip: Optional[str]
    packages: List[Any]  # files.PackageFile
    reasons: List[str] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)
    row_source: str = ""

    @property
    def requirements(self) -> List[str]:
        """Top-level pip requirements, in install order (torch first)."""
        reqs = [self.torch_requirement, f"torch_npu=={self.torch_npu}", self.numpy]
        seen = {"torch", "torch-npu", "numpy"}
        from packaging.requirements import InvalidRequirement, Requirement
        from packaging.specifiers import InvalidSpecifier
        from packaging.utils import canonicalize_name

        for dep in list(TORCH_NPU_EXTRA) + list(self.python_deps):
            try:
                name = canonicalize_name(Requirement(dep).name)
            except (InvalidRequirement, InvalidSpecifier):
                continue
            if name not in seen:
                seen.add(name)
                reqs.append(dep)
        return reqs

    def to_dict(self) -> Dict[str, Any]:
        return {
            "torch_npu": self.torch_npu,
            "torch": self.torch,
            "torch_requirement": self.torch_requirement,
            "torch_index": self.torch_index,
            "python": self.python,
            "arch": self.arch,
            "glibc": self.glibc,
            "cann": self.cann,
            "cann_action": self.cann_action,
            "cann_fit": self.cann_fit,
            "numpy": self.numpy,
            "python_deps": list(self.python_deps),
            "requirements": self.requirements,
            "driver": asdict(self.driver),
            "chip": self.chip,
            "chip_family": self.chip_family,
            "package_chip": self.package_chip,
            "packages": [p.to_dict() for p in self.packages],
            "reasons": list(self.reasons),
            "warnings": list(self.warnings),
            "row_source": self.row_source,
        }


class Candidate(MutableRecord):
    """A matrix row judged for the site."""

    row: Any
    python: str
    problems: List[str] = field(default_factory=list)
    cann: Optional[str] = None
    cann_fit: str = ""
    driver: Optional[DriverStep] = None
    notes: List[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def label(self) -> str:
        cann = f", CANN {self.cann}" if self.cann else ""
        if self.cann and self.cann_fit == "compatible":
            cann += " (declared compatible)"
        return f"torch_npu {self.row.torch_npu} (torch {self.row.torch}{cann}, Python {self.python})"


class Resolution(MutableRecord):
    """The result: a plan, or why none fits and the nearest sets that do."""

    request: Request
    site: Site
    plan: Optional[Plan] = None
    reasons: List[str] = field(default_factory=list)
    alternatives: List[str] = field(default_factory=list)
    rejected: List[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.plan is not None

    def to_dict(self) -> Dict[str, Any]:
        return {
            "ok": self.ok,
            "request": asdict(self.request),
            "site": self.site.summary(),
            "plan": self.plan.to_dict() if self.plan else None,
            "reasons": list(self.reasons),
            "alternatives": list(self.alternatives),
            "rejected": list(self.rejected),
        }
