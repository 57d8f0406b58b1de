"""Rules on the installed Python packages (kinds K01, K02, K06, K07, K09).

Codes ``PKG001``-``PKG049`` belong to this module and :mod:`npudoctor.rules.companions`
(PKG004).  Facts read (views): ``packages.installed``/``modules``/``scanned``/``pip_config``
(npudoctor/probes/packages.py), ``python`` (version, machine, executable),
``cann.selected.version`` (the CANN in use, may be absent).  Matrix queries:
``find_torch_npu``, ``fits``, ``numpy_spec``, ``cann_python_deps``, ``import_name``.

Which copy of torch/torch_npu/torchvision/torchaudio/numpy the stack needs, and the
cleanup lines, are in :mod:`npudoctor.rules._pkgfit`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Iterable, List, Optional, Tuple

from npudoctor.context import RuleContext
from npudoctor.facts.system import Distribution
from npudoctor.findings import Finding
from npudoctor.knowledge import codes, grades
from npudoctor.knowledge.frameworks import NUMPY1_RELEASES
from npudoctor.knowledge.grades import Grade, Verdict
from npudoctor.knowledge.matrix.verdicts import split_build
from npudoctor.knowledge.matrix.verdicts import torch_pairing as torch_verdict
from npudoctor.knowledge.versions import pep440_release, release_xyz
from npudoctor.parsers.metadata import canonical_name, requirements_on, satisfies
from npudoctor.remedies.python import CPU_INDEX, pip_install
from npudoctor.rules import rule
from npudoctor.rules._pkgfit import (
    Fix,
    cleanup,
    cpu_index,
    matrix_torch_for,
    npu_for_torch,
    numpy_need,
    numpy_need_line,
    numpy_target,
    torch_requirements,
    vision_fit,
    vision_index,
    want,
    want_torch,
    wanted_from_release,
)
from npudoctor.rules._pyfacts import ask, best_torch_npu, describe, marker_env, platform, python_exe
from npudoctor.rules._required import framework_requiring, pinned_by
from npudoctor.rules.matrix import not_in_matrix

if TYPE_CHECKING:
    from packaging.requirements import Requirement

READS = ("cann", "host", "packages", "python")
ONLY_WITH = ("packages",)

#: PyPI's simple index (torch_npu's official wheels are published there).
PYPI_INDEX = "https://pypi.org/simple"

TORCH_PAIR = codes.get("PKG001")

#: A framework's own pin on torch/torch_npu (:mod:`npudoctor.rules.companions`).
COMPANION_PIN = codes.get("PKG004")

NO_TORCH = codes.get("PKG002")

DUPLICATE = codes.get("PKG003")

TORCHVISION = codes.get("PKG005")

CANN_DEPS = codes.get("PKG006")

NUMPY2 = codes.get("PKG007")

#: Projects whose duplicates matter for the NPU stack.
_STACK = ("torch", "torch-npu", "torchvision", "torchaudio", "numpy")

#: CANN Python dependencies when the matrix cannot say (the pip command of the CANN install
#: guides, and root-cause kind K06).  Values are the import names.
DEFAULT_CANN_DEPS = {
    "decorator": "decorator",
    "attrs": "attr",
    "psutil": "psutil",
    "absl-py": "absl",
    "cloudpickle": "cloudpickle",
    "ml-dtypes": "ml_dtypes",
    "scipy": "scipy",
    "tornado": "tornado",
    "sympy": "sympy",
    "cffi": "cffi",
    "protobuf": "google.protobuf",
    "pyyaml": "yaml",
    "numpy": "numpy",
}


@rule
def torch_pairing(ctx: RuleContext) -> Iterable[Finding]:
    """K01: installed torch vs what the installed torch_npu requires."""
    packages = ctx.view.packages
    npu = packages.first("torch-npu")
    if npu is None:
        return
    torch = packages.first("torch")
    plat = platform(ctx.view.python, ctx.view.host)
    reqs = torch_requirements(npu, marker_env(ctx.view.python, ctx.view.host))
    if torch is None:
        yield _no_torch(ctx, npu, reqs, plat)
    elif reqs:
        yield from _against_requires_dist(ctx, npu, torch, reqs, plat)
    else:
        yield from _against_release(ctx, npu, torch, plat)


def _no_torch(ctx: RuleContext, npu: Distribution, reqs: List[Requirement], plat: Optional[str]) -> Finding:
    """PKG002: torch_npu without torch; the fix installs the torch its Requires-Dist names,
    else the one of the matrix / release rule."""
    spec = str(reqs[0].specifier) if reqs else None
    wanted = f"torch{spec}" if spec else wanted_from_release(ctx.matrix, plat, npu)
    return NO_TORCH.finding(
        title=f"torch_npu {npu.version} is installed but torch is not",
        evidence=[describe(npu)] + ([f"torch_npu requires {wanted} (Requires-Dist)"] if spec else []),
        fix=[pip_install(ctx.view.python, wanted, index=cpu_index(wanted, plat))] if wanted else [],
        subject="torch",
    )


def _keep_torch_fix(ctx: RuleContext, torch_version: str) -> List[Fix]:
    """The alternative fix line that keeps torch and installs the torch_npu the matrix
    builds for it (none when the matrix names none)."""
    alt = npu_for_torch(ctx.matrix, ctx.view.python, ctx.view.host, ctx.view.cann, torch_version)
    if not alt:
        return []
    return [
        pip_install(
            ctx.view.python,
            "torch-npu==" + alt,
            lead=f"or keep torch {torch_version} and install the torch_npu built for it: ",
        )
    ]


def _against_requires_dist(
    ctx: RuleContext, npu: Distribution, torch: Distribution, reqs: List[Requirement], plat: Optional[str]
) -> Iterable[Finding]:
    """PKG001 from torch_npu's own Requires-Dist on torch: quiet (or the unofficial-build
    note) when torch meets it or a sibling dist-info in torch's directory does (PKG003
    names it); else the torch it needs, from the CPU index when only the local tag differs."""
    tv = torch.version or ""
    unmet = [r for r in reqs if satisfies(tv, r.specifier) is False]
    if not unmet:
        yield from _unofficial_pairing(ctx, npu, tv, [(str(reqs[0]), True)])
        return
    siblings = [r for r in ctx.view.packages.records("torch")[1:] if r.location == torch.location and r.version]
    if any(all(satisfies(str(s.version), r.specifier) for r in reqs) for s in siblings):
        return  # two torch dist-infos in one dir, one fits: PKG003 says which to clean
    spec = str(unmet[0].specifier)
    wanted = f"torch{spec}"
    verdict = torch_verdict(None, str(npu.version or ""), tv, [(str(unmet[0]), False)])
    # the verdict's reason is torch_npu's Requires-Dist line: said once, by the verdict
    evidence = [describe(npu), describe(torch), verdict.describe()]
    same_release = any(pep440_release(tv) == pep440_release(s.version) for s in unmet[0].specifier)
    if same_release and "+" in spec:
        title = f"torch {tv} is not the build torch_npu {npu.version} needs ({wanted}): install torch from {CPU_INDEX}"
    else:
        title = f"torch {tv} does not match torch_npu {npu.version} (it requires {wanted})"
    fix: List[Fix] = [pip_install(ctx.view.python, wanted, index=cpu_index(wanted, plat))]
    hidden = _hidden_fit(ctx, evidence)
    pin = pinned_by(ctx.view.packages, str(npu.version or "")) if hidden is None else None
    if hidden is not None:
        fix = hidden
    elif pin is not None:
        evidence.append(_pinned_line(pin, tv))
    elif not same_release:
        fix.extend(_keep_torch_fix(ctx, tv))
    yield TORCH_PAIR.finding(
        title=title,
        evidence=evidence,
        fix=fix,
        subject="torch",
        severity=grades.severity(verdict) or "error",
        data=_under_pin(ctx, _shadowed(_grade_data(verdict), hidden), pin, tv),
    )


def _pinned_line(pin: Tuple[Distribution, Requirement], torch_version: str) -> str:
    """The evidence line saying that an installed framework pins this torch_npu build: the
    installed torch with another torch_npu is no option (it would break that pin)."""
    rec, req = pin
    return (
        f"{rec.name} {rec.version} pins this torch_npu (Requires-Dist `{req}`): a torch_npu built for "
        f"torch {torch_version} would break that pin, so the fix keeps torch_npu and installs the torch it needs"
    )


def _under_pin(
    ctx: RuleContext, data: Dict[str, object], pin: Optional[Tuple[Distribution, Requirement]], torch_version: str
) -> Dict[str, object]:
    """``data`` of a PKG001 whose torch_npu an installed framework pins (``pin``): when that
    framework requires a torch that ``torch_version`` does not meet too, its pin is the one
    root cause -- :func:`npudoctor.rules.companions.companion_pins` reports it (PKG004) with
    the fix -- and this finding names it in ``because`` (folded under it)."""
    if pin is None:
        return data
    reqs = torch_requirements(pin[0], marker_env(ctx.view.python, ctx.view.host))
    if any(satisfies(torch_version, r.specifier) is False for r in reqs):
        return dict(data, because=COMPANION_PIN.code)
    return data


def _against_release(
    ctx: RuleContext, npu: Distribution, torch: Distribution, plat: Optional[str]
) -> Iterable[Finding]:
    """PKG001 for a torch_npu with no Requires-Dist on torch (source builds, egg-info): the
    torch the matrix pairs it with, else the release rule (torch_npu X.Y.Z[.postN] goes
    with torch X.Y.Z, and MTX003 says the matrix lacks it)."""
    tv = torch.version or ""
    expected = matrix_torch_for(ctx.matrix, npu.version or "")
    source = "the compatibility matrix"
    if expected is None:
        expected = release_xyz(npu.version)
        if not expected:
            return
        source = "the version rule (torch_npu X.Y.Z[.postN] goes with torch X.Y.Z)"
        yield from not_in_matrix(ctx, "torch_npu", str(npu.version), evidence=[describe(npu)])
    rel_tv, rel_expected = pep440_release(tv), pep440_release(expected)
    if rel_tv is None or rel_expected is None:
        return
    if rel_tv[:3] == rel_expected[:3]:
        yield from _unofficial_pairing(ctx, npu, tv, [])
        return
    evidence = [
        describe(npu),
        describe(torch),
        f"torch_npu {npu.version} has no Requires-Dist on torch; {source} pairs it with torch {expected}",
    ]
    row = ask(ctx.matrix, lambda m: m.find_torch_npu(split_build(str(npu.version or ""))[0]))
    verdict = torch_verdict(row, str(npu.version or ""), tv)
    if row is None:
        verdict = Verdict(Grade.INCOMPATIBLE, f"{source} pairs torch_npu {npu.version} with torch {expected}")
    evidence.append(verdict.describe())
    wanted = f"torch=={expected}" + ("+cpu" if plat == "x86_64" else "")
    fix: List[Fix] = [pip_install(ctx.view.python, wanted, index=cpu_index(wanted, plat))]
    hidden = _hidden_fit(ctx, evidence)
    pin = pinned_by(ctx.view.packages, str(npu.version or "")) if hidden is None else None
    if hidden is not None:
        fix = hidden
    elif pin is not None:
        evidence.append(_pinned_line(pin, tv))
    else:
        fix.extend(_keep_torch_fix(ctx, tv))
    yield TORCH_PAIR.finding(
        title=f"torch {tv} does not match torch_npu {npu.version} (built for torch {expected})",
        evidence=evidence,
        fix=fix,
        subject="torch",
        severity=grades.severity(verdict) or "error",
        data=_under_pin(ctx, _shadowed(_grade_data(verdict), hidden), pin, tv),
    )


def _grade_data(verdict: Verdict) -> Dict[str, object]:
    """The finding data of a graded verdict: grade, source, window, unofficial."""
    return {
        "grade": verdict.grade.value,
        "source": verdict.source,
        "window": verdict.window,
        "unofficial": verdict.unofficial,
        "recommend": verdict.recommend,
    }


def _shadowed(data: Dict[str, object], hidden: Optional[List[Fix]]) -> Dict[str, object]:
    """``data`` of a PKG001 whose fitting torch is hidden behind another copy
    (:func:`_hidden_fit` gave the fix): the shadowing copy is the cause, and PKG003 (the
    same package installed twice) reports it with the same cleanup lines, so this one
    names it in ``because`` and folds under it when it is reported."""
    return dict(data, because=DUPLICATE.code) if hidden is not None else data


def _unofficial_pairing(
    ctx: RuleContext, npu: Distribution, torch_version: str, requires: List[Tuple[str, bool]]
) -> Iterable[Finding]:
    """PKG001 for a torch that fits an rc/dev/``+git`` torch_npu build (not a pre-release
    with wheels on PyPI): same release line as the official build of its base, named
    unofficial (a warning: the severity policy, AUDIT §7 (e))."""
    version = str(npu.version or "")
    base, unofficial = split_build(version)
    published = ask(ctx.matrix, lambda m: m.find_torch_npu(version))
    if not unofficial or (published is not None and published.on_pypi):
        return  # an official build, or a pre-release Ascend published on PyPI (2.5.1rc1)
    row = ask(ctx.matrix, lambda m: m.find_torch_npu(base))
    verdict = torch_verdict(row, version, torch_version, requires, npu.metadata_source)
    sev = grades.severity(verdict)
    if sev is None or verdict.grade is not Grade.SAME_LINE:
        return
    required = framework_requiring(ctx.view.packages, ctx.view.cann, version)
    if required is not None:
        # the framework's own requirement: switching to an official build would break it
        who, why = required
        yield TORCH_PAIR.finding(
            title=f"torch_npu {version} is the unofficial build {who} requires; torch {torch_version} fits it",
            evidence=[describe(npu), verdict.describe(), f"{who} requires torch_npu {version} ({why})"],
            fix=[],
            subject="torch_npu",
            severity="info",
            data=dict(_grade_data(verdict), required_by=who),
        )
        return
    official = f"torch_npu {row.torch_npu}" if row is not None else f"an official torch_npu {base}"
    yield TORCH_PAIR.finding(
        title=f"torch_npu {version} is an unofficial build of {base}; torch {torch_version} fits it",
        evidence=[describe(npu), verdict.describe()],
        fix=[f"for a supported stack use {official}, the official build of the same base"],
        subject="torch_npu",
        severity=sev,
        data=_grade_data(verdict),
    )


def _hidden_fit(ctx: RuleContext, evidence: List[str]) -> Optional[List[Fix]]:
    """When a torch that fits torch_npu is installed in another directory but hidden
    behind the one import takes (a user-site copy shadowing the env), the fix is to
    remove the shadowing copy, not to reinstall: the PKG003 cleanup lines.  Appends the
    evidence line; ``None`` when no hidden copy fits."""
    recs = ctx.view.packages.records("torch")
    wanted = want_torch(ctx.matrix, ctx.view.packages, ctx.view.python, ctx.view.host)
    if wanted is None or len(recs) < 2:
        return None
    hidden = [r for r in recs[1:] if r.location != recs[0].location and wanted.accepts(r)]
    if not hidden:
        return None
    evidence.append(
        f"torch {hidden[0].version} in {hidden[0].location} fits, but import takes {recs[0].dist_info} first"
    )
    fix, _keeper = cleanup(ctx.view.python, "torch", recs, wanted)
    return fix


@rule
def duplicate_installs(ctx: RuleContext) -> Iterable[Finding]:
    """K01: two metadata dirs of torch/torch_npu/torchvision/torchaudio/numpy."""
    for name in _STACK:
        recs = ctx.view.packages.records(name)
        if len(recs) < 2:
            continue
        versions = [str(r.version) for r in recs]
        differ = len(set(versions)) > 1
        where = []
        for r in recs:
            tag = " (user site)" if r.user_site else ""
            where.append(f"{r.name} {r.version} at {r.dist_info}{tag}")
        effective = recs[0]
        if len({r.location for r in recs}) == 1:
            note = f"all in {effective.location}: the files there come from the last install; pip and importlib.metadata may report either version"
        else:
            note = f"import takes the first on sys.path: {effective.dist_info}"
        evidence = where + [note]
        wanted = want(name, ctx.matrix, ctx.view.packages, ctx.view.python, ctx.view.host, ctx.view.cann)
        fix, keeper = cleanup(ctx.view.python, name, recs, wanted)
        if wanted is not None:
            evidence.append(wanted.reason)
        if keeper is not None:
            evidence.append(f"keep {keeper.name} {keeper.version} in {keeper.location}")
        severity = "error" if differ and name in ("torch", "torch-npu") else "warning"
        label = ", ".join(versions)
        yield DUPLICATE.finding(
            title=f"{recs[0].name} is installed {len(recs)} times ({label})",
            evidence=evidence,
            fix=fix,
            severity=severity,
            subject=name,
        )


@rule
def torchvision_torchaudio(ctx: RuleContext) -> Iterable[Finding]:
    """K02: torchvision/torchaudio built for another torch."""
    torch = ctx.view.packages.first("torch")
    if torch is None:
        return
    tv = torch.version or ""
    env = marker_env(ctx.view.python, ctx.view.host)
    index = vision_index(platform(ctx.view.python, ctx.view.host), ctx.view.packages, tv)
    for name in ("torchvision", "torchaudio"):
        rec = ctx.view.packages.first(name)
        if rec is None:
            continue
        fits, why, wanted = vision_fit(name, rec, tv, env)
        if fits is not False:
            continue
        yield TORCHVISION.finding(
            title=f"{name} {rec.version} is not built for torch {tv} (install {wanted})",
            evidence=[describe(rec), describe(torch)] + why,
            fix=[pip_install(ctx.view.python, wanted, index=index)],
            subject=name,
        )


def _import_name(ctx: RuleContext, dist: str) -> Optional[str]:
    return ask(ctx.matrix, lambda m: m.import_name(dist))


def _cann_deps(ctx: RuleContext) -> Dict[str, str]:
    """``{pip name: import name}`` the CANN in use needs (matrix first)."""
    cv = ctx.view.cann.version
    names = ask(ctx.matrix, lambda m: m.cann_python_deps(cv))
    if not names:
        return dict(DEFAULT_CANN_DEPS)
    out: Dict[str, str] = {}
    for name in names:
        imp = _import_name(ctx, name) or DEFAULT_CANN_DEPS.get(canonical_name(str(name)))
        out[str(name)] = str(imp or str(name).replace("-", "_"))
    out.setdefault("numpy", "numpy")
    return out


def _protobuf_pin(ctx: RuleContext, npu: Optional[Distribution]) -> str:
    """The protobuf requirement of the CANN in use (``protobuf==3.20.*`` for 8.x, the line its
    install guides name: a bare name would install the newest), else of the CANN the matrix
    pairs with the installed torch_npu; a bare ``protobuf`` when none is documented."""
    canns = [ctx.view.cann.version] if ctx.view.cann.version else []
    if not canns and npu is not None:
        row = ask(ctx.matrix, lambda m: m.find_torch_npu(npu.version or ""))
        canns = list(row.cann) if row is not None else []
    if not canns or ctx.matrix is None:
        return "protobuf"
    return ask(ctx.matrix, lambda m: m.protobuf_pin(canns[0])) or "protobuf"


@rule
def cann_python_deps(ctx: RuleContext) -> Iterable[Finding]:
    """K06: the CANN Python dependencies in the torch_npu interpreter."""
    pkgs = ctx.view.packages
    npu = pkgs.first("torch-npu")
    cann = ctx.view.cann.present
    if npu is None and not cann:
        return
    if not pkgs.scanned:
        return
    from npudoctor.parsers.metadata import parse_requirement  # a plain name: no PEP 508 parser

    missing = []
    for pip_name, import_name in _cann_deps(ctx).items():
        req = parse_requirement(pip_name)
        dist = req.name if req is not None else pip_name
        if pkgs.first(dist) is not None:
            continue
        if pkgs.modules.get(import_name):
            continue
        missing.append(pip_name)
    if not missing:
        return
    numpy = numpy_target(ctx.matrix, ctx.view.packages, ctx.view.python, ctx.view.cann) if "numpy" in missing else None
    cv = ctx.view.cann.version
    install = [f"numpy{numpy[0]}" if (m == "numpy" and numpy) else m for m in missing]
    if "protobuf" in missing:
        pin = _protobuf_pin(ctx, npu)
        install = [pin if m == "protobuf" else m for m in install]
    where = (
        f"CANN {cv}"
        if cv
        else ("the CANN toolkit" if cann else f"CANN (which torch_npu {npu.version if npu else None} runs on)")
    )
    evidence = [f"not installed in {python_exe(ctx.view.python)}: {', '.join(missing)}"]
    evidence.append(f"searched: {', '.join(pkgs.scanned)}")
    if npu is not None:
        evidence.append(describe(npu))
    if numpy:
        evidence.append(numpy[1])
    if cann:
        title = f"{len(missing)} Python package(s) that {where} needs are missing: {', '.join(missing)}"
    else:
        # No toolkit: CANN001 is the error; these only matter once CANN is installed, so
        # a note that keeps the right pins next to the install steps, not a warning.
        evidence.append("no CANN toolkit is installed (CANN001): install these with it, before the first run")
        title = f"{len(missing)} Python package(s) that {where} needs are not installed yet: {', '.join(missing)}"
    yield CANN_DEPS.finding(
        title=title,
        evidence=evidence,
        fix=[pip_install(ctx.view.python, *install)],
        severity="error" if cann else "info",
        subject="cann-python-deps",
    )


def _needing_numpy2(ctx: RuleContext, version: str, installed_fits: bool = False) -> List[str]:
    """``"NAME VERSION requires `numpy>=2`"`` of each installed package whose numpy
    requirement admits no NumPy 1.x release: those the installed ``version`` satisfies
    (``installed_fits``: they pulled it in) or, else, those it does not satisfy."""
    env = marker_env(ctx.view.python, ctx.view.host)
    out = []
    for rec in ctx.view.packages.effective():
        for req in requirements_on(list(rec.requires_dist), "numpy", env):
            if (
                req.specifier
                and satisfies(version, req.specifier) is installed_fits
                and not any(satisfies(v, req.specifier) for v in NUMPY1_RELEASES)
            ):
                out.append(f"{rec.name} {rec.version} requires `{req}`")
    return out


@rule
def numpy_major(ctx: RuleContext) -> Iterable[Finding]:
    """K07: numpy >= 2 where the CANN/Python pair needs numpy < 2 (matrix.numpy_spec)."""
    numpy = ctx.view.packages.first("numpy")
    cv = ctx.view.cann.version
    py = ctx.view.python.short
    if numpy is None or not cv or not py:
        return
    version = numpy.version or ""
    need = numpy_need(ctx.matrix, cv, py)
    if need is None:
        return
    spec_text, source = need
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        spec = SpecifierSet(str(spec_text))
    except InvalidSpecifier:
        return
    verdict = ask(ctx.matrix, lambda m: m.numpy_verdict(version, cv, py))
    if satisfies(version, spec) is not False:
        stranded = _needing_numpy2(ctx, version)
        if stranded:
            # numpy fits CANN, but a package installed with it declares it needs NumPy 2
            # (after a `pip install 'numpy<2'` pin, typically): pip check would fail
            yield NUMPY2.finding(
                title=f"numpy {version} fits CANN {cv} on Python {py} (numpy{spec}), but "
                f"{stranded[0].split(' requires')[0]} requires numpy>=2",
                evidence=[describe(numpy)] + stranded,
                fix=[
                    "pin the packages above to releases that accept NumPy 1.x, or uninstall them if "
                    "nothing uses them (CANN needs the numpy installed now)"
                ],
                subject="numpy",
                severity="error",
            )
            return
        sev = grades.severity(verdict, mild=True) if verdict is not None else None
        if verdict is not None and sev is not None:
            # inside the range CANN needs but beyond what its install guide names: a note
            yield NUMPY2.finding(
                title=f"numpy {version} with CANN {cv} on Python {py}: {verdict.grade.words}",
                evidence=[describe(numpy), verdict.describe()],
                fix=[],
                subject="numpy",
                severity=sev,
                # inside the very range a PKG007 fix would pin: nothing to decide (shown with -v)
                data=dict(_grade_data(verdict), routine=sev == "info" and satisfies(version, spec) is True),
            )
        return
    inferred = verdict is not None and verdict.grade is Grade.UNDOCUMENTED
    evidence = [describe(numpy)]
    if not inferred:
        evidence.append(numpy_need_line(cv, py, str(spec), source))
    if verdict is not None:
        # an inferred range: the verdict names the borrowed range and its source (said once)
        evidence.append(verdict.describe())
    pullers = _needing_numpy2(ctx, version, installed_fits=True)
    evidence += pullers
    fix: List[Fix] = [pip_install(ctx.view.python, f"numpy{spec}")]
    if pullers:
        fix.append(
            "then pin the packages above to releases that accept NumPy 1.x (they pulled NumPy 2 in), "
            "or install them before torch_npu and re-run the numpy pin"
        )
    if inferred:
        # the range is an older release's: said as such, never as this CANN's own statement
        title = (
            f"numpy {version} is installed; CANN {cv} documents no numpy bound, and the nearest older CANN "
            f"that does needs numpy{spec} on Python {py}"
        )
    else:
        title = f"numpy {version} is installed but CANN {cv} on Python {py} needs numpy{spec}"
    if pullers:
        title += f" ({pullers[0].split(' requires')[0]} requires numpy>=2)"
    yield NUMPY2.finding(
        title=title,
        evidence=evidence,
        fix=fix,
        subject="numpy",
        severity=(grades.severity(verdict) if verdict is not None else None) or "error",
        data=_grade_data(verdict) if verdict is not None else None,
    )


INDEX_MIRROR = codes.get("PKG008")

_PYPI_HOSTS = ("pypi.org", "pypi.python.org", "files.pythonhosted.org")


@rule
def index_mirror(ctx: RuleContext) -> Iterable[Finding]:
    """K09: torch_npu missing while pip's index is a mirror (pip configuration facts)."""
    if ctx.view.packages.first("torch-npu") is not None:
        return
    torch = ctx.view.packages.first("torch")
    if torch is None and not ctx.view.cann.present:
        return
    conf = ctx.view.packages.pip_config
    index = conf.index_url
    if not index:
        return
    from urllib.parse import urlparse  # here: only a configured index is parsed

    host = (urlparse(index).hostname or "").lower()
    if not host or any(host == h or host.endswith("." + h) for h in _PYPI_HOSTS):
        return
    extras = list(conf.extra_index_urls)
    if any((urlparse(u).hostname or "").lower() in _PYPI_HOSTS for u in extras):
        return  # PyPI is searched too
    py = ctx.view.python.short
    plat = platform(ctx.view.python, ctx.view.host)
    tv = (torch.version if torch is not None else None) or ""
    evidence = [f"pip index: {index} (from {conf.index_source})"]
    if extras:
        evidence.append("extra indexes: " + ", ".join(extras))
    evidence.append("torch_npu is not installed" + (f"; {describe(torch)}" if torch else ""))
    wanted = (
        best_torch_npu(ctx.matrix, tv, py, platform(ctx.view.python, ctx.view.host), ctx.view.cann.version or "")
        if tv
        else None
    )
    where = f"Python {py or '?'} on {plat or 'this platform'}"
    fix: List[Fix]
    if wanted:
        evidence.append(f"PyPI has torch_npu {wanted} for torch {tv.split('+')[0]} and {where} (compatibility matrix)")
        fix = [pip_install(ctx.view.python, f"torch-npu=={wanted}", index=PYPI_INDEX)]
    else:
        rows = ask(ctx.matrix, lambda m: m.fits(python=py, platform=plat)) or []
        names = [str(r.torch_npu) for r in rows[:5]]
        if names:
            evidence.append(f"PyPI has torch_npu wheels for {where}: {', '.join(names)} (compatibility matrix)")
        else:
            evidence.append(f"the compatibility matrix knows no torch_npu wheel for {where} (see PY001)")
        fix = [
            pip_install(
                ctx.view.python,
                "torch-npu",
                index=PYPI_INDEX,
                note="the newest torch_npu with a wheel for this Python; pin a release from `npudoctor matrix show` to pick another",
            )
        ]
    fix.append(
        f"or point pip at an index that carries torch-npu for {where}: edit {conf.index_source}"
        if conf.index_source != "PIP_INDEX_URL"
        else f"or unset PIP_INDEX_URL (it names {index})"
    )
    yield INDEX_MIRROR.finding(
        title=f"torch_npu is not installed and pip uses the mirror {index}: check that it carries torch-npu for {where}",
        evidence=evidence,
        fix=fix,
        subject="torch-npu:index",
    )
