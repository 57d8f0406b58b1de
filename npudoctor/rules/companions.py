"""Rules on the frameworks built on torch_npu (kind K01, code PKG004).

vllm-ascend, MindIE, MindSpeed, … pin torch/torch_npu/torchvision/torchaudio in their
``Requires-Dist`` (:func:`companion_pins`); the releases whose metadata names no torch_npu
are judged against the built-in table of npudoctor/rules/_frameworks.py
(:func:`companion_table`).  Facts read (views): ``packages.installed``,
``cann.mindie``/``cann.atb_models`` (version.info of the .run packages).  Matrix queries:
``find_torch_npu``, ``rows_for_torch``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Dict, Iterable, List, NamedTuple, Optional, Tuple

from npudoctor.context import RuleContext
from npudoctor.findings import Finding
from npudoctor.knowledge.frameworks import npu_fits, rows_for, table
from npudoctor.knowledge.versions import pep440_public, pep440_release, release_xyz
from npudoctor.parsers.metadata import canonical_name, requirements_on, satisfies
from npudoctor.remedies.python import pip_install
from npudoctor.rules import rule
from npudoctor.rules._chipmove import move_with_row
from npudoctor.rules._pkgfit import Fix, cpu_index
from npudoctor.rules._pyfacts import ask, describe, marker_env, platform, python_exe
from npudoctor.rules._torchstack import COMPANION, documented_npu, torch_not_documented

if TYPE_CHECKING:
    from packaging.requirements import Requirement

    from npudoctor.facts.system import Distribution
    from npudoctor.knowledge.matrix import TorchNpuRow
    from npudoctor.rules._chipmove import Move

READS = ("cann", "devices", "host", "packages", "python")


#: Projects whose pins on the stack are checked (besides any package that names torch-npu).
_COMPANIONS = frozenset(
    {
        "vllm",
        "vllm-ascend",
        "mindie-turbo",
        "mindie",
        "mindie-llm",
        "mindspeed",
        "mindspeed-llm",
        "torchair",
        "triton-ascend",
        "apex",
        "deepspeed",
    }
)


#: The projects whose pins :func:`companion_pins` judges, in the order a fix installs them.
_PINNED = ("torch", "torch-npu", "torchvision", "torchaudio")


@rule
def companion_pins(ctx: RuleContext) -> Iterable[Finding]:
    """K01: vllm-ascend, MindIE, … pins on torch/torch_npu/torchvision/torchaudio: one
    finding per framework, naming every pin of it that the installed stack does not meet
    (one cause, one fix: installing one pin at a time would undo the others' fix)."""
    packages = ctx.view.packages
    if packages.first("torch-npu") is None and not any(packages.first(c) for c in ("vllm-ascend", "mindie-turbo")):
        return
    env = marker_env(ctx.view.python, ctx.view.host)
    has_vllm_ascend = packages.first("vllm-ascend") is not None
    for rec in packages.effective():
        name = canonical_name(rec.name)
        if name in _PINNED:
            continue
        reqs_all = list(rec.requires_dist)
        if name not in _COMPANIONS and not requirements_on(reqs_all, "torch-npu"):
            continue
        unmet: List[Tuple[str, Requirement, Optional[str]]] = []
        for target in _PINNED:
            if name == "vllm" and has_vllm_ascend and target != "torch-npu":
                continue  # expected: vllm-ascend pins the previous torch (vllm-ascend#5710)
            installed = packages.version_of(target)
            for req in requirements_on(reqs_all, target, env):
                if installed is None and target != "torch-npu":
                    continue
                if installed is None or satisfies(installed, req.specifier) is False:
                    unmet.append((target, req, installed))
        if unmet:
            yield _pins_unmet(ctx, rec, name, unmet, env)


def _pins_unmet(
    ctx: RuleContext,
    rec: Distribution,
    name: str,
    unmet: List[Tuple[str, Requirement, Optional[str]]],
    env: Dict[str, str],
) -> Finding:
    """PKG004 for the framework ``rec`` whose pins ``unmet`` (``(target, requirement,
    installed version or None)``, in install order) the installed stack does not meet."""
    packages = ctx.view.packages
    wanted = [f"{target}{req.specifier}" for target, req, _installed in unmet]
    # a project named by two Requires-Dist lines (two ranges, two markers) is said once
    here = list(dict.fromkeys(f"{target} {installed}" for target, _req, installed in unmet if installed))
    missing = list(dict.fromkeys(target for target, _req, installed in unmet if not installed))
    have = [f"{' and '.join(here)} {'is' if len(here) == 1 else 'are'} installed"] if here else []
    have += [f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed"] if missing else []
    evidence = [describe(rec)] + [f"Requires-Dist: {req}" for _target, req, _installed in unmet]
    for target in dict.fromkeys(target for target, _req, installed in unmet if installed):
        target_rec = packages.first(target)
        if target_rec is not None:
            evidence.append(describe(target_rec))
    fix: List[Fix] = []
    clashes = [_vllm_clash(ctx, req, target, env) if name == "vllm-ascend" else None for target, req, _ in unmet]
    if name == "vllm-ascend" and not any(clashes):
        vllm = packages.version_of("vllm")
        fix = [
            pip_install(ctx.view.python, f"vllm=={vllm}" if vllm else "vllm", note="vllm first"),
            pip_install(
                ctx.view.python, f"vllm-ascend=={rec.version}", note="then vllm-ascend: it re-pins torch/torch_npu"
            ),
        ]
    else:
        # the pins in one pip command per index, so that pip resolves them together (one
        # at a time, each install breaks the pin of the next for a moment, and pip says so)
        plat = platform(ctx.view.python, ctx.view.host)
        by_index: Dict[Optional[str], List[str]] = {}
        expected: List[str] = []
        for (target, req, _installed), clash in zip(unmet, clashes):
            spec = f"{target}{req.specifier}"
            if clash is not None:
                evidence.append(f"{describe(clash[0])} requires `{clash[1]}` (Requires-Dist)")
                fix.append(_keep_vllm_ascend_pin(rec, spec, target, clash))
                expected.append(f"{clash[0].version} requires {clash[1]}")
            by_index.setdefault(cpu_index(spec, plat) if target != "torch-npu" else None, []).append(spec)
        said = f"vllm-ascend's pin{'s' if len(unmet) > 1 else ''}; pip's message that vllm " if expected else ""
        note = said + " and ".join(expected) + (" is expected" if expected else "")
        fix += [pip_install(ctx.view.python, *specs, index=index, note=note) for index, specs in by_index.items()]
    return COMPANION.finding(
        title=f"{rec.name} {rec.version} requires {' and '.join(wanted)}, but {'; '.join(have)}",
        evidence=evidence,
        fix=fix,
        subject=f"{name}:{'+'.join(dict.fromkeys(target for target, _req, _installed in unmet))}",
    )


def _vllm_clash(
    ctx: RuleContext, req: Requirement, target: str, env: Dict[str, str]
) -> Optional[Tuple[Distribution, Requirement]]:
    """The installed vllm and its requirement on ``target`` when no release meets both it and
    vllm-ascend's exact pin ``req`` (vllm's PyPI wheel pins the torch of its CUDA build, newer
    than the one vllm-ascend is built for); ``None`` otherwise."""
    vllm = ctx.view.packages.first("vllm")
    pinned = [s.version for s in req.specifier if s.operator in ("==", "===")]
    if vllm is None or len(pinned) != 1:
        return None
    for theirs in requirements_on(list(vllm.requires_dist), target, env):
        if satisfies(pinned[0], theirs.specifier) is False:
            return vllm, theirs
    return None


def _keep_vllm_ascend_pin(rec: Distribution, wanted: str, target: str, clash: Tuple[Distribution, Requirement]) -> str:
    """What to say when vllm and vllm-ascend pin ``target`` to releases no install meets
    together (``wanted``: vllm-ascend's pin, which the fix installs).  That pin is the one
    to keep: it names the torch_npu vllm-ascend is built for, and vllm runs on the NPU
    through vllm-ascend; vllm-ascend's own install order (vllm first, then vllm-ascend,
    which re-pins torch) leaves vllm's pin unmet, as its maintainers say it does."""
    vllm, theirs = clash
    return (
        f"no {target} release meets both pins: {vllm.name} {vllm.version} requires {theirs}, "
        f"{rec.name} {rec.version} requires {wanted}. Keep the vllm-ascend pin (it names the torch_npu "
        "vllm-ascend is built for, and vllm runs on the NPU through it); the vllm pin stays unmet, as the "
        "vllm-ascend install order (vllm first, then vllm-ascend) leaves it"
    )


class _Release(NamedTuple):
    """A framework release of the built-in table found on this machine."""

    project: str
    label: str
    version: str
    where: str
    pins_torch_npu: bool


def _framework_releases(ctx: RuleContext) -> List[_Release]:
    """The framework releases of the built-in table (npudoctor/rules/_frameworks.py)
    found on this machine: the vllm-ascend distribution, MindIE and its ATB models."""
    out: List[_Release] = []
    rec = ctx.view.packages.first("vllm-ascend")
    if rec is not None and rec.version:
        pins = bool(requirements_on(list(rec.requires_dist), "torch-npu"))
        out.append(_Release("vllm-ascend", "vllm-ascend", rec.version, rec.metadata_source, pins))
    cann = ctx.view.cann
    for fact, project, label in (
        (cann.mindie, "mindie", "MindIE"),
        (cann.atb_models, "atb-models", "MindIE ATB models"),
    ):
        if fact is not None and fact.version:
            out.append(_Release(project, label, fact.version, str(fact.source or fact.path), False))
    return out


def _companion_without_torch_npu(ctx: RuleContext, torch_version: str) -> Iterable[Finding]:
    """A framework release of the built-in table is installed but torch_npu is not:
    nothing NPU-related can run (the pinned case is judged by ``companion_pins``)."""
    for project, label, version, where, pins in _framework_releases(ctx):
        rows = rows_for(project, version) if not pins else []
        want = documented_npu(ctx.matrix, rows[0], torch_version) if rows else None
        if not want:
            continue
        evidence = [
            f"{label} {version} from {where}",
            "no torch_npu dist-info in the target interpreter",
            f"{label} {version} needs torch_npu {want}: built-in table, {rows[0].source}",
        ]
        moved = _moved(ctx, project, label, version, torch_version, evidence)
        build = moved[1] if moved is not None else want
        torch_needed = release_xyz(build)
        reqs = ([f"torch=={torch_needed}"] if torch_needed and not torch_version else []) + [f"torch-npu=={build}"]
        fix: List[Fix]
        if moved is not None:
            fix = [_moved_install(ctx, label, moved, reqs)]
        elif _on_pypi(ctx, want):
            fix = [pip_install(ctx.view.python, *reqs, index=None)]
        else:
            fix = [
                f"install the torch_npu {want} wheel that {label} {version}'s installation guide links (not on PyPI)"
            ]
        yield COMPANION.finding(
            title=f"{label} {version} needs torch_npu {want}, but torch_npu is not installed",
            evidence=evidence,
            fix=fix,
            subject=f"{project}:torch-npu",
            data={"for_release": f"{label} {moved[0].release}"} if moved else {},
        )


def _moved(
    ctx: RuleContext, project: str, label: str, version: str, torch_version: str, evidence: List[str]
) -> Optional[Tuple[Move, str]]:
    """When ``project`` ``version`` does not run on a chip of this machine and the release
    to move to (:func:`npudoctor.rules._chipmove.move_for`: the fix that comes first) has a
    table row naming its torch_npu: the move and that build, with the evidence line
    appended; ``None`` otherwise (the fix stays the installed release's)."""
    moved = move_with_row(ctx.view.devices, ctx.matrix, project, version)
    want = documented_npu(ctx.matrix, moved[1], torch_version) if moved is not None else None
    if moved is None or not want:
        return None
    move, row = moved
    evidence.append(
        f"{label} {version} does not run on {move.chip} (family {move.family}); {label} {move.release}, "
        f"the first release that does, needs torch_npu {want}: built-in table, {row.source}"
    )
    return move, want


def _moved_install(ctx: RuleContext, label: str, moved: Tuple[Move, str], reqs: List[str]) -> Fix:
    """The fix line installing ``reqs`` for the release to move to (:func:`_moved`)."""
    move, want = moved
    lead = f"for {label} {move.release}, the release that runs on {move.chip}: "
    if _on_pypi(ctx, want):
        return pip_install(ctx.view.python, *reqs, index=None, lead=lead)
    return lead + f"the torch_npu {want} wheel its installation guide links (not on PyPI)"


def _npu_row(ctx: RuleContext, version: str) -> Optional[TorchNpuRow]:
    return ask(ctx.matrix, lambda m: m.find_torch_npu(version))


def _on_pypi(ctx: RuleContext, version: str) -> bool:
    row = _npu_row(ctx, version)
    return bool(row is not None and any(row.python.values()))


@rule
def companion_table(ctx: RuleContext) -> Iterable[Finding]:
    """K01: vllm-ascend releases that do not pin torch-npu in their metadata (up to 0.9.0)
    and MindIE / ATB models (.run packages) vs the torch_npu build their documentation
    names (built-in table, npudoctor/rules/_frameworks.py)."""
    npu = ctx.view.packages.first("torch-npu")
    torch = ctx.view.packages.first("torch")
    tv = (torch.version if torch is not None else None) or ""
    if npu is None:
        yield from _companion_without_torch_npu(ctx, tv)
        return
    installed = npu.version or ""
    for project, label, version, where, pins in _framework_releases(ctx):
        if pins:
            continue  # its Requires-Dist names torch-npu: companion_pins judges that
        rows = rows_for(project, version)
        if not rows:
            continue
        row = rows[0]
        if row.torch and torch is not None and release_xyz(tv) and release_xyz(tv) not in row.torch:
            seen = [f"{label} {version} from {where}", describe(torch)]
            view = ctx.view
            yield torch_not_documented(ctx.matrix, view.python, view.host, row, label, version, seen, tv)
            continue
        want = documented_npu(ctx.matrix, row, tv or installed)
        if not want or npu_fits(installed, want) is not False:
            continue
        if any(pep440_public(installed) == pep440_public(also) for also in row.torch_npu_also):
            continue  # another official page of the release names this build
        ext = None if row.torch_npu else row.ext_for(release_xyz(tv or installed))
        rel_i, rel_w = pep440_release(installed), pep440_release(want)
        if rel_i and rel_w and rel_i[:3] != rel_w[:3]:
            why = f"torch_npu {installed} is another release line than {want}"
        elif "rc" in installed or "a" in installed.split(".")[-1] or "b" in installed.split(".")[-1]:
            why = f"torch_npu {installed} is a pre-release, not the {want} build (it lacks the operators/APIs {label} calls)"
        else:
            why = f"torch_npu {installed} is an earlier build than {want} (it lacks the operators/APIs {label} calls)"
        evidence = [
            f"{label} {version} from {where}",
            describe(npu),
            f"{label} {version} needs torch_npu {want}"
            + (f" (Ascend Extension for PyTorch {ext})" if ext else "")
            + f": built-in table, {row.source}",
            why,
        ]
        moved = _moved(ctx, project, label, version, tv or installed, evidence)
        if moved is not None and npu_fits(installed, moved[1]) is not False:
            continue  # the build the release to move to needs: nothing to change but that release
        fix: List[Fix]
        if moved is not None:
            fix = [_moved_install(ctx, label, moved, _npu_reqs(moved[1], tv))]
        elif _on_pypi(ctx, want):
            fix = [pip_install(ctx.view.python, *_npu_reqs(want, tv), index=None)]
        else:
            fix = [
                f"install the torch_npu {want} wheel that {label} {version}'s installation guide links "
                f"(not on PyPI): download it, then pip-install the downloaded .whl file with {python_exe(ctx.view.python)} -m pip"
            ]
        if project == "vllm-ascend" and moved is None:
            newer = _vllm_ascend_on_pypi(ctx, installed, tv)
            if newer:
                fix.append(
                    pip_install(
                        ctx.view.python,
                        "vllm==" + newer[0].split("rc")[0],
                        lead=f"or move to vllm-ascend {newer[0]}, whose torch_npu {newer[1]} is on PyPI"
                        + (f" (it needs CANN >= {newer[2]})" if newer[2] else "")
                        + ": ",
                        note="vllm first",
                    )
                )
                fix.append(
                    pip_install(ctx.view.python, "vllm-ascend==" + newer[0], "torch-npu==" + newer[1], lead="  then ")
                )
        yield COMPANION.finding(
            title=f"{label} {version} needs torch_npu {want}, but torch_npu {installed} is installed",
            evidence=evidence,
            fix=fix,
            subject=f"{project}:torch-npu",
            data={"for_release": f"{label} {moved[0].release}"} if moved else {},
        )


def _npu_reqs(build: str, torch_version: str) -> List[str]:
    """``torch-npu==build``, after ``torch==X.Y.Z`` when the installed torch (``torch_version``)
    is of another release than the one the build is made for."""
    reqs = [f"torch-npu=={build}"]
    torch_needed = release_xyz(build)
    rel_t, rel_w = pep440_release(torch_version), pep440_release(build)
    if torch_needed and rel_t and rel_w is not None and rel_t[:3] != rel_w[:3]:
        reqs.insert(0, f"torch=={torch_needed}")
    return reqs


def _vllm_ascend_on_pypi(ctx: RuleContext, installed: str, torch_version: str) -> Optional[Tuple[str, str, str]]:
    """``(vllm-ascend version, torch_npu, CANN minimum)``: the oldest table release whose torch_npu
    is on PyPI and built for the installed torch (same X.Y.Z), or ``None``."""
    rel_t = pep440_release(torch_version or installed)
    for row in table():
        if row.project != "vllm-ascend" or not row.torch_npu or not _on_pypi(ctx, row.torch_npu):
            continue
        rel_npu = pep440_release(row.torch_npu)
        if rel_t and rel_npu and rel_npu[:3] != rel_t[:3]:
            continue
        m = re.search(r"(?:==|>=)\s*([0-9][0-9A-Za-z.]*)", row.versions[0])
        if m:
            return m.group(1), str(row.torch_npu), str(row.cann_min or "")
    return None
