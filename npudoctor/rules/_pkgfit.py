"""Which copy of a stack project the rest of the stack needs, and the fix lines that
leave exactly that copy (not a rule module: shared by the package rules; each copy's
uninstall step is :func:`npudoctor.remedies.python.uninstall_copy`).

The torch <-> torch_npu pairing uses torch_npu's own ``Requires-Dist`` first (it carries
the ``+cpu`` local tag on x86_64 up to 2.11.0, as on PyPI), the matrix second, and the
release-number rule (torch_npu X.Y.Z[.postN] goes with torch X.Y.Z) last.
torchvision/torchaudio follow their ``Requires-Dist`` on torch, else the release rules of
PKG005; numpy follows the range the CANN in use needs (matrix ``numpy_spec``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence, Tuple, Union

from npudoctor.facts.stack import CannFacts
from npudoctor.facts.system import Distribution, HostFacts, PackagesFacts, PythonFacts
from npudoctor.knowledge.versions import pep440_local, pep440_release, release_xyz
from npudoctor.parsers.metadata import requirements_on, satisfies
from npudoctor.record import Record
from npudoctor.remedies import Command, Remedy
from npudoctor.remedies.python import CPU_INDEX, pip_install, uninstall_copy
from npudoctor.rules._pyfacts import ask, best_torch_npu, marker_env, platform

if TYPE_CHECKING:
    from packaging.requirements import Requirement

    from npudoctor.knowledge.matrix import Matrix

#: One line of a finding's fix: a remedy, or prose.
Fix = Union[Remedy, str]


def cpu_index(spec_text: str, plat: Optional[str]) -> Optional[str]:
    """The CPU wheel index for a torch requirement that needs it (``+cpu``, or x86_64)."""
    return CPU_INDEX if "+cpu" in spec_text or plat == "x86_64" else None


def torch_requirements(rec: Distribution, env: Dict[str, str]) -> List[Requirement]:
    """The ``Requires-Dist`` entries of ``rec`` on torch that apply to ``env``."""
    return requirements_on(list(rec.requires_dist), "torch", env)


def matrix_torch_for(matrix: Optional[Matrix], torch_npu_version: str) -> Optional[str]:
    """The torch the matrix pairs with torch_npu ``torch_npu_version``, or ``None``."""
    row = ask(matrix, lambda m: m.find_torch_npu(torch_npu_version))
    torch = row.torch if row is not None else None
    return str(torch) if torch else None


def npu_for_torch(
    matrix: Optional[Matrix], py: PythonFacts, host: HostFacts, cann: CannFacts, torch_version: str
) -> Optional[str]:
    """The torch_npu the matrix pairs with ``torch_version`` for this Python/platform
    (:func:`npudoctor.rules._pyfacts.best_torch_npu`)."""
    return best_torch_npu(matrix, torch_version, py.short, platform(py, host), cann.version or "")


def wanted_from_release(matrix: Optional[Matrix], plat: Optional[str], npu: Distribution) -> Optional[str]:
    """``torch==X.Y.Z[+cpu]`` for torch_npu ``npu`` on platform ``plat`` from the matrix,
    else the release rule; ``None`` when its version does not parse."""
    expected = matrix_torch_for(matrix, npu.version or "")
    if expected is None:
        expected = release_xyz(npu.version) or None
    if expected is None:
        return None
    return f"torch=={expected}" + ("+cpu" if plat == "x86_64" else "")


class Want(Record):
    """Which copy of a stack project the rest of the stack needs.

    ``accepts(record) -> bool``; ``requirement``: what to ``pip install`` when no
    installed copy fits (``None``: npudoctor cannot say); ``index``: pip index for it;
    ``reason``: the evidence line naming the source (a Requires-Dist, the matrix, a rule).
    """

    accepts: Callable[[Distribution], bool]
    requirement: Optional[str]
    index: Optional[str]
    reason: str


def _fits(version: Optional[str], reqs: List[Requirement]) -> bool:
    return bool(reqs) and all(satisfies(version or "", r.specifier) is True for r in reqs)


def want_torch(matrix: Optional[Matrix], packages: PackagesFacts, py: PythonFacts, host: HostFacts) -> Optional[Want]:
    """torch: what torch_npu's Requires-Dist names, else the matrix / release rule."""
    npu = packages.first("torch-npu")
    if npu is None:
        return None
    plat = platform(py, host)
    reqs = torch_requirements(npu, marker_env(py, host))
    if reqs:
        spec = ",".join(str(r.specifier) for r in reqs)
        return Want(
            lambda rec: _fits(rec.version, reqs),
            f"torch{spec}",
            cpu_index(spec, plat),
            f"torch_npu {npu.version} requires `{reqs[0]}` (Requires-Dist in its METADATA)",
        )
    wanted = wanted_from_release(matrix, plat, npu)
    if wanted is None:
        return None
    expected = pep440_release(wanted.split("==", 1)[1])
    return Want(
        lambda rec: expected is not None and (pep440_release(rec.version) or ())[:3] == expected[:3],
        wanted,
        cpu_index(wanted, plat),
        f"torch_npu {npu.version} goes with {wanted} (compatibility matrix / torch_npu X.Y.Z[.postN] rule)",
    )


def _want_torch_npu(
    matrix: Optional[Matrix], packages: PackagesFacts, py: PythonFacts, host: HostFacts, cann: CannFacts
) -> Optional[Want]:
    """torch_npu: a copy whose Requires-Dist (or matrix row) fits the installed torch."""
    torch = packages.first("torch")
    if torch is None:
        return None
    tv = torch.version or ""
    env = marker_env(py, host)

    def accepts(rec: Distribution) -> bool:
        reqs = torch_requirements(rec, env)
        if reqs:
            return _fits(tv, reqs)
        paired = matrix_torch_for(matrix, rec.version or "")
        return bool(paired) and (pep440_release(paired) or ())[:3] == (pep440_release(tv) or ())[:3]

    alt = npu_for_torch(matrix, py, host, cann, tv)
    return Want(
        accepts, f"torch-npu=={alt}" if alt else None, None, f"torch {tv} is installed ({torch.metadata_source})"
    )


def _want_vision(packages: PackagesFacts, py: PythonFacts, host: HostFacts, name: str) -> Optional[Want]:
    """torchvision/torchaudio: the copy built for the installed torch."""
    torch = packages.first("torch")
    if torch is None:
        return None
    tv = torch.version or ""
    env = marker_env(py, host)
    _fit, _ev, wanted = vision_fit(name, Distribution(version=""), tv, env)
    return Want(
        lambda rec: vision_fit(name, rec, tv, env)[0] is True,
        wanted,
        vision_index(platform(py, host), packages, tv),
        f"torch {tv} is installed ({torch.metadata_source})",
    )


def _want_numpy(matrix: Optional[Matrix], packages: PackagesFacts, py: PythonFacts, cann: CannFacts) -> Optional[Want]:
    target = numpy_target(matrix, packages, py, cann)
    if target is None:
        return None
    spec_text, reason = target
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        spec = SpecifierSet(spec_text)
    except InvalidSpecifier:
        return None
    return Want(lambda rec: satisfies(rec.version or "", spec) is True, f"numpy{spec}", None, reason)


def want(
    name: str, matrix: Optional[Matrix], packages: PackagesFacts, py: PythonFacts, host: HostFacts, cann: CannFacts
) -> Optional[Want]:
    """What the stack needs of project ``name`` (torch, torch-npu, torchvision,
    torchaudio, numpy), or ``None`` when it cannot say."""
    if name == "torch":
        return want_torch(matrix, packages, py, host)
    if name == "torch-npu":
        return _want_torch_npu(matrix, packages, py, host, cann)
    if name in ("torchvision", "torchaudio"):
        return _want_vision(packages, py, host, name)
    if name == "numpy":
        return _want_numpy(matrix, packages, py, cann)
    return None


def cleanup(
    py: PythonFacts, name: str, recs: Sequence[Distribution], wanted: Optional[Want]
) -> Tuple[List[Fix], Optional[Distribution]]:
    """Fix lines that leave exactly one good copy of ``name``, and the copy kept (or
    ``None`` when every copy goes and ``wanted.requirement`` is installed afresh).

    The kept copy is the first (in sys.path order) that ``wanted`` accepts and that is
    alone in its directory: two dist-infos in one directory share the package files
    (the last install wrote them), so neither can be trusted.  Without ``wanted`` the
    copy import uses now is kept."""
    per_dir: Dict[str, int] = {}
    for r in recs:
        per_dir[str(r.location)] = per_dir.get(str(r.location), 0) + 1
    keeper = None
    for r in recs if wanted is not None else recs[:1]:
        if per_dir[str(r.location)] == 1 and (wanted is None or wanted.accepts(r)):
            keeper = r
            break
    keep_user = bool(keeper is not None and keeper.user_site)
    fix: List[Fix] = [uninstall_copy(py, name, r, keep_user, per_dir[str(r.location)]) for r in recs if r is not keeper]
    if keeper is not None:
        fix.append(
            Command(
                (py.interpreter_path, "-m", "pip", "show", name),
                note=f"must now show Version: {keeper.version}, Location: {keeper.location}",
            )
        )
        return fix, keeper
    if wanted is not None and wanted.requirement:
        fix.append(pip_install(py, wanted.requirement, index=wanted.index))
    else:
        fix.append(pip_install(py, name + "==" + str(recs[0].version), note="or the version you want"))
    return fix, None


def _torch_minor_plus_15(torch_version: str) -> Optional[str]:
    rel = pep440_release(torch_version)
    if not rel or len(rel) < 2 or rel[0] != 2:
        return None
    return f"0.{rel[1] + 15}"


def _vision_wanted(name: str, tv: str) -> str:
    """The requirement of the torchvision/torchaudio built for torch ``tv`` (the
    release-number rules of PKG005)."""
    if name == "torchvision":
        want = _torch_minor_plus_15(tv)
        return f"torchvision=={want}.*" if want else "torchvision"
    rel_t = pep440_release(tv)
    return f"torchaudio=={rel_t[0]}.{rel_t[1]}.*" if rel_t and len(rel_t) >= 2 else "torchaudio"


def vision_fit(name: str, rec: Distribution, tv: str, env: Dict[str, str]) -> Tuple[Optional[bool], List[str], str]:
    """``(fits, evidence, wanted)`` of a torchvision/torchaudio record for torch ``tv``:
    its ``Requires-Dist`` on torch first, else the release rule; ``fits`` is ``None``
    when neither can say."""
    version = rec.version or ""
    wanted = _vision_wanted(name, tv)
    reqs = requirements_on(list(rec.requires_dist), "torch", env)
    if reqs:
        unmet = [r for r in reqs if satisfies(tv, r.specifier) is False]
        if not unmet:
            return True, [], wanted
        return False, [f"{name} {version} requires `{unmet[0]}` (Requires-Dist)"], wanted
    rel_t, rel_x = pep440_release(tv), pep440_release(version)
    if not rel_t or not rel_x:
        return None, [], wanted
    if name == "torchvision":
        want = _torch_minor_plus_15(tv)
        if want is None:
            return None, [], wanted
        if ".".join(str(x) for x in rel_x[:2]) == want:
            return True, [], wanted
        return False, [f"rule: torchvision minor = torch minor + 15 -> torchvision {want}.x for torch {tv}"], wanted
    if rel_t[:2] == rel_x[:2]:
        return True, [], wanted
    return False, [f"rule: torchaudio X.Y goes with torch X.Y -> torchaudio {rel_t[0]}.{rel_t[1]}.x"], wanted


def vision_index(plat: Optional[str], packages: PackagesFacts, tv: str) -> Optional[str]:
    """The pip index of the torchvision/torchaudio for torch ``tv`` (the CPU index for
    ``+cpu`` torch, or platform ``plat`` x86_64 with torch_npu)."""
    on_cpu = pep440_local(tv) == "cpu" or (plat == "x86_64" and packages.first("torch-npu") is not None)
    return CPU_INDEX if on_cpu else None


def _numpy_spec(matrix: Optional[Matrix], cann: str, python: str) -> Optional[str]:
    return ask(matrix, lambda m: m.numpy_spec(cann, python))


def numpy_need(matrix: Optional[Matrix], cann: str, python: str) -> Optional[Tuple[str, str]]:
    """``(numpy specifier, source)``: the range CANN ``cann`` needs with Python ``python`` and
    the matrix row it comes from (matrix ``numpy_requirement``: ``"CANN 8.0.0: <source>"``,
    said to be another release's when ``cann`` has no range of its own); ``None`` when
    undocumented."""
    req = ask(matrix, lambda m: m.numpy_requirement(cann, python))
    if not req:
        return None
    spec, source, exact = req
    return str(spec), str(source) if exact else f"none documented for {cann}; the newest release before it, {source}"


def numpy_need_line(cann: str, python: str, spec: str, source: str) -> str:
    """The evidence line of :func:`numpy_need`."""
    return f"CANN {cann} with Python {python} needs numpy{spec} (compatibility matrix: {source})"


def numpy_target(
    matrix: Optional[Matrix], packages: PackagesFacts, python: PythonFacts, cann: CannFacts
) -> Optional[Tuple[str, str]]:
    """``(numpy specifier, evidence line)`` for the interpreter: the range the installed
    CANN needs with this Python (matrix ``numpy_spec``, from the CANN install guides); with no CANN
    version known, the range of the CANN the matrix pairs with the installed torch_npu
    (its row's ``cann``).  ``None`` when neither is documented."""
    py = python.short
    if not py:
        return None
    cv = cann.version
    if cv:
        need = numpy_need(matrix, cv, py)
        return need if need is None else (need[0], numpy_need_line(cv, py, *need))
    npu = packages.first("torch-npu")
    if npu is None:
        return None
    row = ask(matrix, lambda m: m.find_torch_npu(npu.version or ""))
    for paired in list(row.cann if row is not None else []):
        spec = _numpy_spec(matrix, str(paired), py)
        if spec:
            state = "the installed CANN's version is unknown" if cann.present else "no CANN is installed"
            return str(spec), (
                f"{state}: numpy{spec} is what CANN {paired}, the CANN the compatibility matrix pairs with "
                f"torch_npu {npu.version}, needs with Python {py}"
            )
    return None
