"""Rules on Python frameworks in an NPU environment: torch without torch_npu
(PKG050), a framework build for another chip family (PKG051), CUDA-only distributions
(PKG052) and a pre-release torch_npu judged by the CANN its own metadata names (PKG053).

Facts read (views): ``packages.installed``, ``python`` (version, machine), ``cann.selected``,
``devices`` (chips, nodes, npu-smi), ``driver.driver``, ``frameworks`` (npudoctor/probes/
frameworks.py: vllm-ascend's ``_build_info.py``, CUDA evidence, a pre-release torch_npu's
description row).  Knowledge: the matrix (wheels per Python and platform, CANN verdicts),
:mod:`npudoctor.knowledge.chip_support`, :mod:`npudoctor.knowledge.cuda_only`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Iterable, List, Optional, Set, Tuple

from npudoctor.context import RuleContext
from npudoctor.findings import Finding
from npudoctor.knowledge import chip_support, codes, cuda_only, vllm_images
from npudoctor.knowledge.chips import chip_identity
from npudoctor.knowledge.versions import release_xyz
from npudoctor.parsers.metadata import canonical_name, parse_requirement
from npudoctor.remedies.python import CPU_INDEX, interpreter, pip_install, pip_uninstall
from npudoctor.remedies.steps import PipInstall
from npudoctor.rules import rule
from npudoctor.rules._pkgfit import Fix, cpu_index, torch_requirements, wanted_from_release
from npudoctor.rules._pyfacts import ask, describe, marker_env, platform
from npudoctor.rules.packages import index_mirror

if TYPE_CHECKING:
    from npudoctor.facts.frameworks import CudaEvidence
    from npudoctor.knowledge.matrix import TorchNpuRow

READS = ("cann", "devices", "driver", "frameworks", "host", "packages", "python")
ONLY_WITH = ("packages",)

NO_NPU = codes.get("PKG050")
OTHER_CHIP = codes.get("PKG051")
CUDA_ONLY = codes.get("PKG052")


def npu_machine(ctx: RuleContext) -> bool:
    """An NPU machine: NPU chips seen by npu-smi, ``/dev/davinciN`` nodes, an npu-smi on
    PATH, or the NPU driver installed (or mounted)."""
    dev = ctx.view.devices
    return bool(dev.chips or dev.chip_nodes or dev.npu_smi.path or ctx.view.driver.driver.exists)


def _span(pythons: List[str]) -> str:
    if not pythons:
        return "none"
    return pythons[0] if len(pythons) == 1 else f"{pythons[0]}-{pythons[-1]}"


def _final(row: TorchNpuRow) -> bool:
    v = row.version
    return v is not None and not (v.is_prerelease or v.is_devrelease)


def _grade(ctx: RuleContext, row: TorchNpuRow, cann: str) -> Optional[str]:
    """The grade (``Grade`` value) of ``row`` on CANN ``cann``, ``None`` without a matrix."""
    verdict = ask(ctx.matrix, lambda m: m.cann_verdict(row.torch_npu, cann))
    return None if verdict is None else verdict.grade.value


@rule
def torch_without_torch_npu(ctx: RuleContext) -> Iterable[Finding]:
    """PKG050: torch on an NPU machine without torch_npu, with the torch_npu that fits this
    torch, Python and CANN (matrix wheel lists), or the Python / CANN line to switch to."""
    packages = ctx.view.packages
    torch = packages.first("torch")
    if torch is None or not torch.version or packages.first("torch-npu") is not None or not npu_machine(ctx):
        return
    if packages.first("vllm-ascend") is not None or ctx.view.cann.mindie is not None:
        return  # their own finding (PKG004) names the torch_npu build they need
    if any(True for _ in index_mirror(ctx)):
        return  # PKG008: pip's mirror lacks torch-npu; it names the build for this torch (one cause)
    tv = str(torch.version)
    py = ctx.view.python.short or ""
    plat = platform(ctx.view.python, ctx.view.host)
    cann = ctx.view.cann.version
    rows = [r for r in (ask(ctx.matrix, lambda m: m.rows_for_torch(tv)) or []) if r.on_pypi and _final(r)]
    evidence = [describe(torch), "no torch_npu dist-info in the target interpreter: torch sees no NPU"]
    title = f"torch {tv} is installed but torch_npu is not: torch cannot use the NPUs"
    where = f"Python {py}" + (f" on {plat}" if plat else "")
    if not rows:
        evidence.append(f"the matrix has no torch_npu build on PyPI for torch {tv}")
        fix: List[Fix] = [
            f"Install a torch release that has a torch_npu build (`npudoctor matrix show` lists them), then that "
            f"torch_npu; none on PyPI is built for torch {tv}"
        ]
        yield NO_NPU.finding(title=title, evidence=evidence, fix=fix, subject="torch:torch-npu")
        return
    for_py = [r for r in rows if py and py in r.pythons(plat)]
    if not for_py and ctx.view.cann.present:
        return  # PY001 says which Python has a torch_npu wheel for this torch
    for r in rows:
        if r not in for_py:
            evidence.append(
                f"torch_npu {r.torch_npu} (paired with CANN {', '.join(r.cann) or 'not stated'}): wheels for Python "
                f"{_span(r.pythons(plat))} only" + (f" on {plat}" if plat else "")
            )
    paired = [r for r in for_py if cann and _grade(ctx, r, cann) == "paired"]
    works = [r for r in for_py if cann and _grade(ctx, r, cann) in ("declared-compatible", "same-release-line")]
    pick = (paired or works or ([] if cann else for_py))[:1]
    if pick:
        best = pick[0]
        how = (
            f"{'paired' if best in paired else 'declared compatible'} with CANN {cann}"
            if cann
            else f"paired with CANN {', '.join(best.cann) or 'not stated'}"
        )
        evidence.append(
            f"torch_npu {best.torch_npu}: built for torch {best.torch}, a wheel for {where}, {how} "
            f"(matrix: {best.source or 'matrix/torch_npu.toml'})"
        )
        yield NO_NPU.finding(
            title=title
            + f"; torch_npu {best.torch_npu} fits torch {tv}, {where}"
            + (f" and CANN {cann}" if cann else ""),
            evidence=evidence,
            fix=[_install_npu(ctx, best.torch_npu, plat)],
            subject="torch:torch-npu",
            data={"torch_npu": best.torch_npu, "python": py, "cann": cann},
        )
        return
    fix = []
    for r in for_py[:1]:
        evidence.append(
            f"torch_npu {r.torch_npu}: a wheel for {where}, paired with CANN {', '.join(r.cann) or 'not stated'}, "
            + (f"not documented with CANN {cann}" if cann else "")
        )
        fix.append(
            f"Either install CANN {', '.join(r.cann) or '(the one its release notes name)'} (toolkit, kernels, NNAL), "
            f"then torch-npu=={r.torch_npu}"
        )
    with_cann = [r for r in rows if cann and _grade(ctx, r, cann) in ("paired", "declared-compatible")]
    if with_cann:
        alt = with_cann[0]
        pys = alt.pythons(plat)
        alt_how = "paired" if _grade(ctx, alt, cann or "") == "paired" else "declared compatible"
        if pys:
            fix.append(
                f"or keep CANN {cann} and use Python {pys[-1]}: torch_npu {alt.torch_npu} (for torch {alt.torch}, "
                f"{alt_how} with CANN {cann}) has "
                f"wheels for Python {_span(pys)}"
            )
    yield NO_NPU.finding(
        title=title + f"; no torch_npu for torch {tv} with a wheel for {where} is documented with CANN {cann}",
        evidence=evidence,
        fix=fix,
        subject="torch:torch-npu",
    )


def _install_npu(ctx: RuleContext, torch_npu: str, plat: Optional[str]) -> PipInstall:
    """``pip install torch-npu==X``; on x86_64 with the PyTorch CPU index as an extra index,
    since torch_npu's x86_64 wheels pin the CPU build ``torch==X.Y.Z+cpu`` (torch_npu README)."""
    if plat == "x86_64":
        return PipInstall(interpreter(ctx.view.python), (f"torch-npu=={torch_npu}",), extra_index_url=CPU_INDEX)
    return pip_install(ctx.view.python, f"torch-npu=={torch_npu}")


def _families(ctx: RuleContext) -> Dict[str, str]:
    """Chip family (matrix spelling, ``910B``) → an npu-smi name of a chip of that family."""
    out: Dict[str, str] = {}
    for chip in ctx.view.devices.chips:
        ident = chip_identity(ctx.matrix, chip)
        fam = ident.get("family")
        if fam and str(fam) not in out:
            out[str(fam)] = str(chip.name or fam)
    return out


def _image_text(version: str, family: str) -> str:
    """The vllm-ascend image of ``version`` built for chip ``family`` with what it carries
    (vllm_ascend_images.toml), or the newest release that has an image for the family."""
    fam = family.lower()
    image = vllm_images.image_for(version, fam)
    rel = vllm_images.release_of(version)
    if image is not None and rel is not None:
        return f"the image {image} (CANN {rel.cann_for(fam)}, torch_npu {rel.torch_npu or 'installed by hand'})"
    last = vllm_images.newest_with(fam)
    if last is None:
        return f"no vllm-ascend image is built for {family} (vllm_ascend_images.toml, read {vllm_images.checked_on()})"
    return (
        f"release {version} has no {family} image; the newest release with one is "
        f"{vllm_images.image_for(last.tag[1:], fam)} (CANN {last.cann_for(fam)}, "
        f"torch_npu {last.torch_npu or 'installed by hand'})"
    )


@rule
def framework_build_chip(ctx: RuleContext) -> Iterable[Finding]:
    """PKG051: vllm-ascend's recorded build target (``_build_info.py``) against the chip
    families present.  The right build gives no finding; an unknown value is not judged."""
    info = ctx.view.frameworks.vllm_ascend
    rec = ctx.view.packages.first("vllm-ascend")
    if info is None or rec is None or not info.values:
        return
    fams = _families(ctx)
    if not fams:
        return
    device = info.values.get("__device_type__")
    soc = info.values.get("__soc_version__")
    built = chip_support.vllm_ascend_family(
        str(device) if device is not None else None, str(soc) if soc is not None else None
    )
    if built is None or built in {f.lower() for f in fams}:
        return
    recorded = f"__device_type__ = {device!r}" if device is not None else f"__soc_version__ = {soc!r}"
    chips = ", ".join(f"{name} ({fam})" for fam, name in sorted(fams.items()))
    target = sorted(fams)[0]
    yield OTHER_CHIP.finding(
        title=f"vllm-ascend {rec.version} was built for {built.upper()} chips ({recorded}), but the NPUs here are {chips}",
        evidence=[
            f"{info.path}: {recorded}",
            f"npu-smi: {chips}",
            "vllm-ascend compares its build with torch_npu.npu.get_soc_version() at start and raises 'Current device "
            "type: ... does not match the installed version's device type' (vllm_ascend/device/device_config.py); "
            f"its custom kernels are compiled for that SoC ({chip_support.build_info_source('vllm-ascend')})",
        ],
        fix=[
            f"Reinstall vllm-ascend {rec.version} built for {target}: {_image_text(str(rec.version), target)}, or a "
            f"source build with SOC_VERSION set to this chip's SoC (vllm-ascend setup.py records it in _build_info.py)"
        ],
        subject=f"vllm-ascend:{target}",
        # modules: what a traceback frame runs through (npudoctor triage ties the log by it)
        data={"built_for": built, "chips": sorted(fams), "distributions": ["vllm-ascend"], "modules": ["vllm_ascend"]},
    )


def _installed_requires(env: Dict[str, str], requires: Tuple[str, ...]) -> List[str]:
    """Canonical names of the requirements that apply to the judged interpreter (its PEP 508
    marker environment ``env``), among those :func:`cuda_only.judge` can count (the others
    are not parsed)."""
    if not requires:  # most distributions, asked one by one: not even the import below
        return []
    from npudoctor.parsers.metadata import applicable, requirement_name

    out: List[str] = []
    for text in requires:
        name = requirement_name(text)
        if name is not None and not cuda_only.requirement_of_interest(name):
            continue
        req = parse_requirement(text)
        if req is not None and applicable(req, env):
            out.append(canonical_name(req.name))
    return out


def _names_installed(
    judged: cuda_only.Judgement, ev: Optional[CudaEvidence], modules: Dict[str, None], libraries: Dict[str, None]
) -> None:
    """Add the import names and library file names of a CUDA-only distribution to ``modules``
    and ``libraries`` (ordered sets): the entry's ``modules`` (else the distribution name as
    an import name), top-level extension modules among its RECORD paths
    (``flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so`` -> ``flash_attn_2_cuda``), the
    ``lib*.so`` files it installs and the CUDA libraries its extension modules need
    (``libcudart.so.12``)."""
    if judged.entry is not None:
        for mod in judged.entry.modules:
            modules[mod] = None
    else:
        modules[judged.name.replace("-", "_")] = None
    if ev is None:
        return
    paths = list(ev.files) + list(ev.needed)
    for path in paths:
        base = path.rsplit("/", 1)[-1]
        if "/" not in path and base.endswith(".so"):
            modules[base.split(".", 1)[0]] = None
        elif base.startswith("lib") and ".so" in base:
            libraries[base] = None
    for needed in ev.needed.values():
        for lib in needed:
            libraries[lib] = None


def _cpu_torch(ctx: RuleContext, env: Dict[str, str], cuda_version: str) -> Optional[str]:
    """The CPU torch to install in place of the CUDA build ``cuda_version``: the one torch_npu
    needs (its own ``Requires-Dist`` on torch, else the matrix's pairing: what PKG001
    installs), else the CUDA build's own release; ``None`` when none parses."""
    npu = ctx.view.packages.first("torch-npu")
    if npu is not None:
        reqs = torch_requirements(npu, env)
        if reqs:
            return f"torch{reqs[0].specifier}"
        wanted = wanted_from_release(ctx.matrix, platform(ctx.view.python, ctx.view.host), npu)
        if wanted is not None:
            return wanted
    base = release_xyz(cuda_version)
    return f"torch=={base}" if base else None


@rule
def cuda_only_distributions(ctx: RuleContext) -> Iterable[Finding]:
    """PKG052: every CUDA-only distribution, one finding (one cause: a CUDA install recipe),
    with one pasteable uninstall and the NPU replacement of each."""
    packages = ctx.view.packages
    if packages.first("torch-npu") is None and not npu_machine(ctx):
        return
    by_project = packages.by_project
    installed: Set[str] = set(by_project)
    evidence_of = {canonical_name(e.name or ""): e for e in ctx.view.frameworks.cuda}
    found: List[cuda_only.Judgement] = []
    modules: Dict[str, None] = {}
    libraries: Dict[str, None] = {}
    env = marker_env(ctx.view.python, ctx.view.host)  # once: the rule asks per distribution
    for key in sorted(installed):
        if not by_project[key]:
            continue  # only malformed records of it (the packages view dropped them)
        rec = by_project[key][0]
        ev = evidence_of.get(key)
        judged = cuda_only.judge(
            key,
            str(rec.version or ""),
            _installed_requires(env, tuple(rec.requires_dist)),
            list(ev.files) if ev is not None else [],
            {k: list(v) for k, v in ev.needed.items()} if ev is not None else {},
            installed,
        )
        if judged is not None:
            found.append(judged)
            _names_installed(judged, ev, modules, libraries)
    if not found:
        return
    errors = [j for j in found if j.severity == "error"]
    names = [j.name for j in found]
    evidence: List[str] = []
    for j in errors + [j for j in found if j.severity != "error"]:
        line = f"{j.name} {j.version}: " + "; ".join(j.evidence)
        if j.entry is not None:
            line += f" -- {j.entry.why.split('. ')[0]}."
        evidence.append(line)
    fix: List[Fix] = [pip_uninstall(ctx.view.python, *names)]
    torch = next((j for j in found if j.name == "torch"), None)
    spec = _cpu_torch(ctx, env, torch.version) if torch is not None else None
    if spec is not None:
        fix.append(
            pip_install(
                ctx.view.python,
                spec,
                index=cpu_index(spec, platform(ctx.view.python, ctx.view.host)) or CPU_INDEX,
                note="the CPU build torch_npu is made for",
            )
        )
    if any(j.name == "triton" for j in found):
        fix.append(
            pip_install(
                ctx.view.python, "triton-ascend", options=("--force-reinstall", "--no-deps"), note="restore its files"
            )
        )
    for j in found:
        if j.entry is not None and j.entry.npu_replacement and j.name != "torch":
            fix.append(f"Instead of {j.name} on NPU: {j.entry.npu_replacement}")
    title = f"{len(found)} CUDA-only distribution(s) in the NPU environment: {', '.join(names[:6])}" + (
        f" (+{len(names) - 6} more)" if len(names) > 6 else ""
    )
    yield CUDA_ONLY.finding(
        title=title,
        evidence=evidence,
        fix=fix,
        severity="error" if errors else "warning",
        subject="cuda-only",
        data={
            # torch alone: the CUDA build that torch_npu's pairing (PKG001) replaces by the CPU
            # build, when it is reported; one cause, one fix (order.fold_symptoms)
            # torch among others: this fix installs the torch torch_npu needs, as PKG001's does,
            # so the pairing is a symptom of the CUDA recipe
            **({"because": "PKG001"} if names == ["torch"] else {"explains": ["PKG001"]} if spec else {}),
            "distributions": names,
            "entries": sorted({j.entry.id for j in found if j.entry is not None}),
            # what a traceback frame or a loader message names (npudoctor triage ties the log by it)
            "modules": list(modules),
            "libraries": list(libraries),
        },
    )
