"""Rules on the target interpreter (kinds K08, K20).

Codes ``PY001``-``PY049`` belong to this module.  Facts read: ``python`` (version,
machine, glibc, shadowing, error), ``packages.installed`` (torch_npu's wheel tags),
``cann`` (presence).  Matrix queries: ``find_torch_npu`` (row ``.python[platform]`` =
CPython versions with a PyPI wheel), ``fits``.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, List, Optional, Tuple

from npudoctor.findings import Code, Finding
from npudoctor.rules import rule
from npudoctor.rules._pyfacts import (
    cann_present,
    describe,
    first,
    matrix_call,
    platform,
    python_exe,
    python_short,
    row_python,
    section,
)

PY_NOT_COVERED = Code(
    "PY001",
    "python-not-covered-by-torch-npu",
    area="python",
    severity="error",
    title="No torch_npu wheel exists for this Python version",
    explain=(
        "torch_npu wheels are CPython-specific (cp38 … cp314) and each release is built for a few "
        "Python versions only (2.1-era: 3.8-3.10, 2.6.0: 3.9-3.11, cp313 from 2.7.1.post4, cp314 only "
        "in the newest posts). On another Python pip says `from versions: none`, and a wheel copied in "
        "for another Python cannot load its `_C` extension. npudoctor compares the interpreter with "
        "the cp tag of the installed wheel and with the wheels published on PyPI per exact torch_npu "
        "version (the compatibility matrix). Fix: create an environment with a covered Python "
        "(`conda create -n npu python=3.10` or `python3.10 -m venv`), or install a torch_npu release "
        "that has a wheel for this Python."
    ),
    kinds=("K08",),
)

SHADOWED = Code(
    "PY002",
    "torch-npu-shadowed-by-source-tree",
    area="python",
    severity="error",
    title="A torch_npu source tree in the working directory shadows the installed package",
    explain=(
        "Python puts the current directory (or the script's directory) first on sys.path, so running "
        "inside a torch_npu checkout imports its un-built `torch_npu/` package instead of the installed "
        "one: `ModuleNotFoundError: No module named 'torch_npu._C'`. npudoctor looks for "
        "`torch_npu/__init__.py` in the working directory without a compiled `_C*.so` next to it. Fix: "
        "`cd` to another directory and run again."
    ),
    kinds=("K20",),
)

NOT_INSPECTED = Code(
    "PY003",
    "python-not-inspectable",
    area="python",
    severity="error",
    title="The target Python interpreter could not be inspected",
    explain=(
        "npudoctor runs a small standard-library script in the interpreter given with `--python` (it "
        "imports nothing else). This finding means the interpreter did not start, timed out or printed "
        "no result, so the package checks were skipped. Check the path (it must be the `python` of the "
        "environment, e.g. `<env>/bin/python`) and that it starts: `<path> -c 'import sys; "
        "print(sys.version)'`."
    ),
)

WHEEL_PLATFORM = Code(
    "PY004",
    "torch-npu-wheel-platform-mismatch",
    area="python",
    severity="error",
    title="The installed torch_npu wheel is not built for this interpreter or system",
    explain=(
        "A wheel's tag (`cp310-cp310-manylinux_2_28_aarch64`) names the CPython version, the CPU "
        "architecture and the oldest glibc it runs on (manylinux_2_28 = glibc 2.28; manylinux2014 = "
        "2.17). A wheel unpacked or force-installed for another Python, architecture or a newer glibc "
        "fails at `import torch_npu` (`No module named 'torch_npu._C'`, `wrong ELF class`, or "
        "`GLIBC_2.28 not found`). torch_npu 2.7.1+ wheels (and 2.6.0 on aarch64) need glibc >= 2.28. "
        "Fix: reinstall torch_npu with pip from this interpreter so that pip picks the right wheel, or "
        "move to an OS image with a newer glibc."
    ),
    kinds=("K08",),
)

_TAG_RE = re.compile(r"^(?P<py>[a-z]+\d+)-(?P<abi>[^-]+)-(?P<plat>.+)$")
_MANYLINUX_RE = re.compile(r"manylinux_(\d+)_(\d+)_(\w+)")
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
    pm = re.match(r"^cp(\d)(\d+)$", py)
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


def _glibc_tuple(text: Any) -> Optional[Tuple[int, int]]:
    m = re.match(r"^(\d+)\.(\d+)", str(text or ""))
    return (int(m.group(1)), int(m.group(2))) if m else None


def _npu_context(ctx: Any) -> bool:
    return first(ctx, "torch-npu") is not None or cann_present(ctx)


@rule
def interpreter_inspected(ctx: Any) -> Iterable[Finding]:
    """The --python interpreter answered (else nothing about packages is known)."""
    py = section(ctx, "python")
    error = py.get("error")
    if not error:
        return
    if py.get("source") == "root":
        if _npu_context(ctx):
            yield NOT_INSPECTED.finding(
                title="No Python environment found in the root",
                evidence=[str(error)] + [f"looked at: {e.get('prefix')}" for e in py.get("environments") or []],
                fix=[
                    "Give the interpreter with --python <path inside the root> (e.g. /usr/local/python3.11.13/bin/python3)"
                ],
                severity="info",
            )
        return
    yield NOT_INSPECTED.finding(
        title=f"Could not inspect {py.get('requested') or py.get('executable') or 'the interpreter'}",
        evidence=[str(error)],
        fix=[f"{python_exe(ctx)} -c 'import sys; print(sys.version)'  # must print the version"],
    )


@rule
def torch_npu_shadowed(ctx: Any) -> Iterable[Finding]:
    """K20: a torch_npu (or torch) source tree in the working directory."""
    py = section(ctx, "python")
    shadow = py.get("shadowing") or {}
    if not isinstance(shadow, dict):
        return
    for name in ("torch_npu", "torch"):
        info = shadow.get(name)
        if not isinstance(info, dict) or not info.get("shadowed"):
            continue
        origin = info.get("origin")
        evidence = [f"{origin}/__init__.py is in the working directory {py.get('cwd')} (from {py.get('cwd_source')})"]
        if not info.get("has_extension"):
            evidence.append(f"{origin} has no compiled _C*.so: `import {name}` fails with No module named '{name}._C'")
        if info.get("installed"):
            evidence.append(f"the installed {name} at {info.get('installed')} is hidden behind it")
        yield SHADOWED.finding(
            title=f"The {name} source tree in {py.get('cwd')} shadows the installed {name}",
            evidence=evidence,
            fix=[f"cd ~   # any directory without a {name}/ folder, then run again"],
            subject=name,
        )


@rule
def python_coverage(ctx: Any) -> Iterable[Finding]:
    """K08: the interpreter's Python vs the torch_npu wheels (installed tag, matrix)."""
    py = section(ctx, "python")
    short = python_short(ctx)
    if not short or py.get("error"):
        return
    plat = platform(ctx)
    npu = first(ctx, "torch-npu")
    if npu is not None:
        yield from _installed_wheel(ctx, npu, short, plat)
        return
    if not cann_present(ctx):
        return
    torch = first(ctx, "torch")
    rows = matrix_call(ctx, "fits", python=short, platform=plat)
    if rows is None:
        return
    if not rows:
        yield PY_NOT_COVERED.finding(
            title=f"No torch_npu wheel exists for Python {short} on {plat}",
            evidence=[
                f"Python {py.get('version')} at {py.get('executable')}",
                "compatibility matrix: no row with a wheel for it",
            ],
            fix=["python3.10 -m venv ~/npu-venv   # or: conda create -n npu python=3.10   (a Python torch_npu covers)"],
            severity="warning",
        )
        return
    if torch is not None:
        with_torch = matrix_call(ctx, "fits", torch=str(torch.get("version")), python=short, platform=plat)
        any_torch = matrix_call(ctx, "fits", torch=str(torch.get("version")))
        if with_torch == [] and any_torch:
            versions = sorted({v for r in any_torch for v in row_python(r, plat)})
            yield PY_NOT_COVERED.finding(
                title=f"No torch_npu for torch {torch.get('version')} has a wheel for Python {short}",
                evidence=[
                    describe(torch),
                    f"torch_npu for that torch has wheels for Python {', '.join(versions) or '?'}",
                ],
                fix=[f"create an environment with Python {versions[-1]}" if versions else "pick another torch release"],
                severity="warning",
            )


def _installed_wheel(ctx: Any, npu: Any, short: str, plat: Optional[str]) -> Iterable[Finding]:
    py = section(ctx, "python")
    glibc = _glibc_tuple(py.get("glibc") or section(ctx, "host").get("glibc"))
    for tag in npu.get("wheel_tags") or []:
        parsed = parse_tag(str(tag))
        if parsed is None:
            continue
        tag_py, plats = parsed
        problems = []
        if tag_py and tag_py != short:
            problems.append(f"built for Python {tag_py}, the interpreter is {py.get('version')}")
        if plats and plat and all(arch != plat for _g, arch in plats):
            problems.append(f"built for {plats[0][1]}, this machine is {plat}")
        if plats and glibc and all(g > glibc for g, _a in plats):
            need = min(g for g, _a in plats)
            problems.append(f"needs glibc >= {need[0]}.{need[1]}, the system has {glibc[0]}.{glibc[1]}")
        if problems:
            yield WHEEL_PLATFORM.finding(
                title=f"torch_npu {npu.get('version')} wheel ({tag}) does not fit: {problems[0]}",
                evidence=[describe(npu), f"WHEEL Tag: {tag}"] + problems,
                fix=[
                    f"{python_exe(ctx)} -m pip install --force-reinstall 'torch-npu=={npu.get('version')}'"
                    "   # lets pip pick the wheel for this interpreter (if one exists)"
                ],
                subject=str(tag),
            )
        return
    row = matrix_call(ctx, "find_torch_npu", str(npu.get("version") or ""))
    pys = row_python(row, plat)
    if pys and short not in pys:
        yield PY_NOT_COVERED.finding(
            title=f"torch_npu {npu.get('version')} has no wheel for Python {short} (only {', '.join(pys)})",
            evidence=[
                describe(npu),
                f"Python {py.get('version')} at {py.get('executable')}",
                f"PyPI wheels for {plat}: cp" + ", cp".join(p.replace(".", "") for p in pys),
            ],
            fix=[f"python{pys[-1]} -m venv ~/npu-venv   # or: conda create -n npu python={pys[-1]}"],
        )
