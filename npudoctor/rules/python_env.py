"""Rules on the target interpreter (kinds K08, K20).

Codes ``PY001``-``PY049`` belong to this module.  Facts read: ``python`` (version,
machine, glibc, shadowing, error), ``packages.installed`` (torch_npu's wheel tags),
``cann`` (presence).  Matrix queries: ``find_torch_npu`` (row ``.python[platform]`` =
CPython versions with a PyPI wheel), ``fits``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterable, List, Optional, Tuple

from npudoctor import lazyre
from npudoctor.context import RuleContext
from npudoctor.facts.system import Distribution
from npudoctor.findings import Finding
from npudoctor.knowledge import codes, grades
from npudoctor.knowledge.versions import python_sorted, pythons_within, release_xyz
from npudoctor.record import replace
from npudoctor.remedies import Command, Interpreter, PipInstall, Remedy
from npudoctor.remedies.python import CPU_INDEX, pip_install
from npudoctor.rules import rule
from npudoctor.rules._pyfacts import ask, best_torch_npu, describe, platform, row_python

if TYPE_CHECKING:
    from npudoctor.knowledge.matrix import TorchNpuRow

READS = ("cann", "host", "packages", "python")
ONLY_WITH = ("python",)

PY_NOT_COVERED = codes.get("PY001")

SHADOWED = codes.get("PY002")

NOT_INSPECTED = codes.get("PY003")

WHEEL_PLATFORM = codes.get("PY004")

_TAG_RE = lazyre.pattern(r"^(?P<py>[a-z]+[0-9]+)-(?P<abi>[^-]+)-(?P<plat>.+)$")
_MANYLINUX_RE = lazyre.pattern(r"manylinux_([0-9]{1,18})_([0-9]{1,18})_(\w+)")
_LEGACY = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


def parse_tag(tag: str) -> Optional[Tuple[Optional[str], List[Tuple[Tuple[int, int], str]]]]:
    """``("3.10", [((2, 28), "aarch64")])`` from ``cp310-cp310-manylinux_2_28_aarch64``;
    ``None`` when the tag is not a CPython/manylinux one (pure ``py3-none-any`` gives
    ``(None, [])``)."""
    m = _TAG_RE.match(tag.strip())
    if not m:
        return None
    py = m.group("py")
    version = None
    pm = re.match(r"^cp([0-9])([0-9]+)$", py)
    if pm:
        version = f"{pm.group(1)}.{pm.group(2)}"
    plats: List[Tuple[Tuple[int, int], str]] = []
    for plat in m.group("plat").split("."):
        mm = _MANYLINUX_RE.match(plat)
        if mm:
            plats.append(((int(mm.group(1)), int(mm.group(2))), mm.group(3)))
            continue
        for legacy, glibc in _LEGACY.items():
            if plat.startswith(legacy + "_"):
                plats.append((glibc, plat[len(legacy) + 1 :]))
        if plat.startswith("linux_"):
            plats.append(((0, 0), plat[len("linux_") :]))
    return version, plats


def _glibc_tuple(text: Optional[str]) -> Optional[Tuple[int, int]]:
    m = re.match(r"^([0-9]{1,18})\.([0-9]{1,18})(?![0-9])", text or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def _npu_context(ctx: RuleContext) -> bool:
    return ctx.view.packages.first("torch-npu") is not None or ctx.view.cann.present


@rule
def interpreter_inspected(ctx: RuleContext) -> Iterable[Finding]:
    """The --python interpreter answered (else nothing about packages is known)."""
    py = ctx.view.python
    error = py.error
    if not error:
        return
    if py.source == "root":
        if _npu_context(ctx):
            yield NOT_INSPECTED.finding(
                title="No Python environment found in the root",
                evidence=[error] + [f"looked at: {e.prefix}" for e in py.environments],
                fix=[
                    "Give the interpreter with --python and its path inside the root "
                    "(e.g. --python /usr/local/python3.11.13/bin/python3)"
                ],
                severity="info",
            )
        return
    yield NOT_INSPECTED.finding(
        title=f"Could not inspect {py.requested or py.executable or 'the interpreter'}",
        evidence=[error],
        fix=[
            Command(
                (ctx.view.python.interpreter_path, "-c", "import sys; print(sys.version)"),
                note="must print the version",
            )
        ],
    )


@rule
def torch_npu_shadowed(ctx: RuleContext) -> Iterable[Finding]:
    """K20: a torch_npu (or torch) source tree in the working directory."""
    py = ctx.view.python
    for name in ("torch_npu", "torch"):
        info = py.shadowing.get(name)
        if info is None or not info.shadowed:
            continue
        origin = info.origin
        evidence = [f"{origin}/__init__.py is in the working directory {py.cwd} (from {py.cwd_source})"]
        if not info.has_extension:
            evidence.append(f"{origin} has no compiled _C*.so: `import {name}` fails with No module named '{name}._C'")
        if info.installed:
            evidence.append(f"the installed {name} at {info.installed} is hidden behind it")
        yield SHADOWED.finding(
            title=f"The {name} source tree in {py.cwd} shadows the installed {name}",
            evidence=evidence,
            fix=[Command(("cd",), note=f"your home directory, or any other without a {name}/ folder; then run again")],
            subject=name,
        )


def _recommend_python(ctx: RuleContext, versions: Iterable[str]) -> Optional[str]:
    """The newest of ``versions`` (numeric order) that the installed CANN supports too
    (matrix ``cann_python_range``), or ``None``."""
    ordered = python_sorted(versions)
    cv = ctx.view.cann.version
    rng = ask(ctx.matrix, lambda m: m.cann_python_range(cv)) if cv else None
    ordered = pythons_within(ordered, rng)
    return ordered[-1] if ordered else None


def _new_env_fix(ctx: RuleContext, version: str, torch: Optional[str], npu: Optional[str]) -> List[Remedy]:
    """Remedies that create a Python ``version`` environment and install the
    torch/torch_npu pair in it (``python`` there is the new environment's, activated by
    the first line).  On x86_64 torch comes from the CPU index (torch_npu pins ``+cpu``)."""
    conda = Command(("conda", "create", "-n", "npu", f"python={version}", "-y"), then=(("conda", "activate", "npu"),))
    lines: List[Remedy]
    if ctx.view.python.conda_prefix:
        lines = [conda]
    else:
        venv = Command(
            ("cd",),
            then=((f"python{version}", "-m", "venv", "npu-venv"), (".", "npu-venv/bin/activate")),
            note="a venv in your home directory",
        )
        lines = [venv, replace(conda, lead=f"or, with no python{version} on this machine: ")]
    new_env = Interpreter("python")
    torch_req = f"torch=={torch}" if torch else None
    npu_req = f"torch-npu=={npu}" if npu else None
    if torch_req and platform(ctx.view.python, ctx.view.host) == "x86_64" and "+" not in torch_req:
        lines.append(PipInstall(new_env, (f"{torch_req}+cpu",), index_url=CPU_INDEX))
        if npu_req:
            lines.append(PipInstall(new_env, (npu_req,)))
    else:
        reqs = tuple(r for r in (torch_req, npu_req) if r)
        if reqs:
            lines.append(PipInstall(new_env, reqs))
    return lines


def _npu_row(ctx: RuleContext, version: str) -> Optional[TorchNpuRow]:
    """The matrix row of torch_npu ``version`` (``None``: no matrix, or not in it)."""
    return ask(ctx.matrix, lambda m: m.find_torch_npu(version))


def _torch_release(version: Optional[str]) -> Optional[str]:
    return release_xyz(version) or None


@rule
def python_coverage(ctx: RuleContext) -> Iterable[Finding]:
    """K08: the interpreter's Python vs the torch_npu wheels (installed tag, matrix)."""
    py = ctx.view.python
    short = py.short
    if not short or py.error:
        return
    plat = platform(ctx.view.python, ctx.view.host)
    npu = ctx.view.packages.first("torch-npu")
    if npu is not None:
        yield from _installed_wheel(ctx, npu, short, plat)
        return
    if not ctx.view.cann.present:
        return
    torch = ctx.view.packages.first("torch")
    rows = ask(ctx.matrix, lambda m: m.fits(python=short, platform=plat))
    if rows is None:
        return
    if not rows:
        every = ask(ctx.matrix, lambda m: m.fits(platform=plat)) or []
        target = _recommend_python(ctx, [v for r in every for v in row_python(r, plat)])
        pick = (
            best_torch_npu(
                ctx.matrix, None, target, platform(ctx.view.python, ctx.view.host), ctx.view.cann.version or ""
            )
            if target
            else None
        )
        pair = _npu_row(ctx, pick) if pick else None
        yield PY_NOT_COVERED.finding(
            title=f"No torch_npu wheel exists for Python {short} on {plat}"
            + (f": use Python {target}" if target else ""),
            evidence=[
                f"Python {py.version} at {py.executable}",
                "compatibility matrix: no torch_npu release has a wheel for it",
            ]
            + (
                [f"newest Python with a torch_npu wheel and supported by the installed CANN: {target}"]
                if target
                else []
            ),
            fix=_new_env_fix(ctx, target, _torch_release(pair.torch if pair is not None else None), pick)
            if target
            else [],
            severity="warning",
        )
        return
    if torch is not None:
        tv = str(torch.version)
        with_torch = ask(ctx.matrix, lambda m: m.fits(torch=tv, python=short, platform=plat))
        any_torch = ask(ctx.matrix, lambda m: m.fits(torch=tv))
        if with_torch == [] and any_torch:
            versions = python_sorted({v for r in any_torch for v in row_python(r, plat)})
            target = _recommend_python(ctx, versions)
            pick = (
                best_torch_npu(
                    ctx.matrix, tv, target, platform(ctx.view.python, ctx.view.host), ctx.view.cann.version or ""
                )
                if target
                else None
            )
            evidence = [
                describe(torch),
                f"torch_npu for torch {_torch_release(tv)} has wheels for Python {', '.join(versions) or '?'}"
                " (compatibility matrix, PyPI wheels)",
            ]
            cv = ctx.view.cann.version
            rng = ask(ctx.matrix, lambda m: m.cann_python_range(cv)) if cv else None
            if rng:
                evidence.append(f"CANN {cv} supports Python {rng} (compatibility matrix)")
            if pick:
                pick_row = _npu_row(ctx, pick) if cv else None
                fit = ask(ctx.matrix, lambda m: m.cann_fit(pick_row, cv)) if cv and pick_row is not None else None
                paired = f", paired with CANN {cv}" if fit == "paired" else ""
                evidence.append(
                    f"torch_npu {pick} is the release for torch {_torch_release(tv)} on Python {target}{paired}"
                )
            yield PY_NOT_COVERED.finding(
                title=f"No torch_npu for torch {torch.version} has a wheel for Python {short}"
                + (f": use Python {target}" if target else ""),
                evidence=evidence,
                fix=_new_env_fix(ctx, target, _torch_release(tv), pick)
                if target
                else [pip_install(ctx.view.python, "torch-npu", note="with a torch release that has a wheel")],
                severity="warning",
            )


def _installed_wheel(ctx: RuleContext, npu: Distribution, short: str, plat: Optional[str]) -> Iterable[Finding]:
    py = ctx.view.python
    glibc = _glibc_tuple(py.glibc or ctx.view.host.glibc)
    for tag in npu.wheel_tags:
        parsed = parse_tag(tag)
        if parsed is None:
            continue
        tag_py, plats = parsed
        problems = []
        if tag_py and tag_py != short:
            problems.append(f"built for Python {tag_py}, the interpreter is {py.version}")
        if plats and plat and all(arch != plat for _g, arch in plats):
            problems.append(f"built for {plats[0][1]}, this machine is {plat}")
        if plats and glibc and all(g > glibc for g, _a in plats):
            need = min(g for g, _a in plats)
            problems.append(f"needs glibc >= {need[0]}.{need[1]}, the system has {glibc[0]}.{glibc[1]}")
        if problems:
            extra, fix = _wheel_fix(ctx, npu, short, plat)
            yield WHEEL_PLATFORM.finding(
                title=f"torch_npu {npu.version} wheel ({tag}) does not fit: {problems[0]}",
                evidence=[describe(npu), f"WHEEL Tag: {tag}"] + problems + extra,
                fix=fix,
                subject=str(tag),
            )
        return
    row = _npu_row(ctx, npu.version or "")
    pys = python_sorted(row_python(row, plat))
    if pys and short not in pys:
        target = _recommend_python(ctx, pys)
        verdict = ask(ctx.matrix, lambda m: m.python_verdict(str(npu.version or ""), short, plat))
        yield PY_NOT_COVERED.finding(
            title=f"torch_npu {npu.version} has no wheel for Python {short} (only {', '.join(pys)})",
            evidence=[
                describe(npu),
                f"Python {py.version} at {py.executable}",
                f"PyPI wheels for {plat}: cp" + ", cp".join(p.replace(".", "") for p in pys),
            ]
            + ([verdict.describe()] if verdict is not None else [])
            + ([f"known to work: {verdict.window}"] if verdict is not None and verdict.window else []),
            fix=_new_env_fix(ctx, target, _torch_release(row.torch if row is not None else None), str(npu.version))
            if target
            else [],
            severity=(grades.severity(verdict) if verdict is not None else None) or "error",
            data={"grade": verdict.grade.value, "source": verdict.source, "window": verdict.window}
            if verdict is not None
            else None,
        )


def _wheel_fix(ctx: RuleContext, npu: Distribution, short: str, plat: Optional[str]) -> Tuple[List[str], List[Remedy]]:
    """``(evidence, fix)`` for an installed torch_npu wheel built for another interpreter or
    machine: reinstalling the same release lets pip pick its wheel for this interpreter --
    unless the matrix says the release has none for Python ``short``; then a Python it has
    wheels for (a new environment), or the newest build of the same torch with a wheel for
    ``short`` (paired with its own CANN)."""
    reinstall = pip_install(
        ctx.view.python,
        f"torch-npu=={npu.version}",
        options=("--force-reinstall",),
        note="lets pip pick the wheel for this interpreter",
    )
    row = _npu_row(ctx, npu.version or "")
    pys = python_sorted(row_python(row, plat)) if row is not None else []
    if row is None or not pys:
        return [], [replace(reinstall, note=reinstall.note + " (if one exists)")]
    if short in pys:
        return [], [reinstall]
    evidence = [f"torch_npu {npu.version} has wheels for Python {', '.join(pys)} only (compatibility matrix)"]
    fix: List[Remedy] = []
    target = _recommend_python(ctx, pys)
    if target:
        fix += _new_env_fix(ctx, target, _torch_release(row.torch), str(npu.version))
    same_torch = ask(ctx.matrix, lambda m: m.rows_for_torch(row.torch)) or []
    alt = next((r for r in same_torch if short in row_python(r, plat) and r.cann), None)
    if alt is not None:
        evidence.append(
            f"torch_npu {alt.torch_npu} (torch {alt.torch}, paired with CANN {alt.cann[0]}) has a wheel for Python {short}"
        )
        fix.append(
            pip_install(
                ctx.view.python,
                f"torch-npu=={alt.torch_npu}",
                lead=f"or keep Python {short} with torch_npu {alt.torch_npu}, built for the same torch: ",
                note=f"paired with CANN {alt.cann[0]}",
            )
        )
    return evidence, fix or [reinstall]
