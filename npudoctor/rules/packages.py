"""Rules on the installed Python packages (kinds K01, K02, K06, K07).

Codes ``PKG001``-``PKG049`` belong to this module.  Facts read: ``packages.installed``
and ``packages.duplicates``/``modules`` (npudoctor/probes/packages.py), ``python``
(version, machine, executable), ``cann.selected.version`` (the CANN in use, may be
absent).  Matrix queries: ``find_torch_npu``, ``rows_for_torch``, ``numpy_spec``,
``cann_python_deps``, ``import_name``.

The torch <-> torch_npu pairing uses torch_npu's own ``Requires-Dist`` first (it carries
the ``+cpu`` local tag on x86_64 up to 2.11.0: REPORT §2), the matrix second, and the
release-number rule (torch_npu X.Y.Z[.postN] goes with torch X.Y.Z) last.
"""

from __future__ import annotations

import posixpath
from typing import Any, Callable, Dict, Iterable, List, NamedTuple, Optional, Tuple

from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.parsers.metadata import canonical_name, requirements_on, satisfies
from npudoctor.remedies import Command, PipUninstall
from npudoctor.rules import rule
from npudoctor.rules._pyfacts import (
    CPU_INDEX,
    all_records,
    base_interpreter,
    best_torch_npu,
    cann_present,
    cann_version,
    describe,
    first,
    interpreter,
    local,
    matrix_call,
    metadata_source,
    not_in_matrix,
    pip_install,
    platform,
    python_exe,
    python_path,
    python_short,
    records,
    release,
    section,
)

#: PyPI's simple index (torch_npu's official wheels are published there).
PYPI_INDEX = "https://pypi.org/simple"

TORCH_PAIR = codes.get("PKG001")

NO_TORCH = codes.get("PKG002")

DUPLICATE = codes.get("PKG003")

COMPANION = codes.get("PKG004")

TORCHVISION = codes.get("PKG005")

CANN_DEPS = codes.get("PKG006")

NUMPY2 = codes.get("PKG007")

#: Projects whose duplicates matter for the NPU stack.
_STACK = ("torch", "torch-npu", "torchvision", "torchaudio", "numpy")

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

#: CANN Python dependencies when the matrix cannot say (REPORT §6.2 install command and
#: kinds.md K06).  Values are the import names.
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


def _cpu_index(spec_text: str, plat: Optional[str]) -> Optional[str]:
    return CPU_INDEX if "+cpu" in spec_text or plat == "x86_64" else None


def _torch_requirements(rec: Dict[str, Any], env: Dict[str, str]) -> List[Any]:
    return requirements_on(rec.get("requires_dist") or [], "torch", env)


def _matrix_torch_for(ctx: Any, torch_npu_version: str) -> Optional[str]:
    row = matrix_call(ctx, "find_torch_npu", torch_npu_version)
    torch = getattr(row, "torch", None) if row is not None else None
    return str(torch) if torch else None


def _npu_for_torch(ctx: Any, torch_version: str) -> Optional[str]:
    """The torch_npu the matrix pairs with ``torch_version`` for this Python/platform
    (:func:`npudoctor.rules._pyfacts.best_torch_npu`)."""
    return best_torch_npu(ctx, torch_version, python_short(ctx))


@rule
def torch_pairing(ctx: Any) -> Iterable[Finding]:
    """K01: installed torch vs what the installed torch_npu requires."""
    npu = first(ctx, "torch-npu")
    if npu is None:
        return
    torch = first(ctx, "torch")
    plat = platform(ctx)
    env = _marker_env(ctx)
    reqs = _torch_requirements(npu, env)
    if torch is None:
        spec = str(reqs[0].specifier) if reqs else None
        wanted = f"torch{spec}" if spec else _wanted_from_release(ctx, npu)
        yield NO_TORCH.finding(
            title=f"torch_npu {npu.get('version')} is installed but torch is not",
            evidence=[describe(npu)] + ([f"torch_npu requires {wanted} (Requires-Dist)"] if spec else []),
            fix=[pip_install(ctx, wanted, index=_cpu_index(wanted, plat))] if wanted else [],
            subject="torch",
        )
        return
    tv = str(torch.get("version") or "")
    evidence = [describe(npu), describe(torch)]
    if reqs:
        unmet = [r for r in reqs if satisfies(tv, r.specifier) is False]
        if not unmet:
            return
        siblings = [
            r for r in records(ctx, "torch")[1:] if r.get("location") == torch.get("location") and r.get("version")
        ]
        if any(all(satisfies(str(s["version"]), r.specifier) for r in reqs) for s in siblings):
            return  # two torch dist-infos in one dir, one fits: PKG003 says which to clean
        spec = str(unmet[0].specifier)
        wanted = f"torch{spec}"
        evidence.append(f"torch_npu {npu.get('version')} requires `{unmet[0]}` (Requires-Dist in its METADATA)")
        same_release = any(release(tv) == release(s.version) for s in unmet[0].specifier)
        if same_release and "+" in spec:
            title = (
                f"torch {tv} is not the build torch_npu {npu.get('version')} needs ({wanted}): "
                f"install torch from {CPU_INDEX}"
            )
        else:
            title = f"torch {tv} does not match torch_npu {npu.get('version')} (it requires {wanted})"
        fix = [pip_install(ctx, wanted, index=_cpu_index(wanted, plat))]
        hidden = _hidden_fit(ctx, evidence)
        if hidden is not None:
            fix = hidden
        alt = _npu_for_torch(ctx, tv)
        if alt and not same_release and hidden is None:
            fix.append(
                pip_install(
                    ctx, "torch-npu==" + alt, lead=f"or keep torch {tv} and install the torch_npu built for it: "
                )
            )
        yield TORCH_PAIR.finding(title=title, evidence=evidence, fix=fix, subject="torch")
        return
    # No Requires-Dist on torch (source builds, egg-info): the matrix, then the release rule.
    expected = _matrix_torch_for(ctx, str(npu.get("version") or ""))
    source = "the compatibility matrix"
    if expected is None:
        rel = release(npu.get("version"))
        if rel is None:
            return
        expected = ".".join(str(x) for x in rel[:3])
        source = "the version rule (torch_npu X.Y.Z[.postN] goes with torch X.Y.Z)"
        yield from not_in_matrix(ctx, "torch_npu", str(npu.get("version")), [describe(npu)])
    if release(tv) is None or release(expected) is None:
        return
    if release(tv)[:3] == release(expected)[:3]:
        return
    evidence.append(
        f"torch_npu {npu.get('version')} has no Requires-Dist on torch; {source} pairs it with torch {expected}"
    )
    wanted = f"torch=={expected}" + ("+cpu" if plat == "x86_64" else "")
    fix = [pip_install(ctx, wanted, index=_cpu_index(wanted, plat))]
    hidden = _hidden_fit(ctx, evidence)
    if hidden is not None:
        fix = hidden
    alt = _npu_for_torch(ctx, tv)
    if alt and hidden is None:
        fix.append(
            pip_install(ctx, "torch-npu==" + alt, lead=f"or keep torch {tv} and install the torch_npu built for it: ")
        )
    yield TORCH_PAIR.finding(
        title=f"torch {tv} does not match torch_npu {npu.get('version')} (built for torch {expected})",
        evidence=evidence,
        fix=fix,
        subject="torch",
    )


def _hidden_fit(ctx: Any, evidence: List[str]) -> Optional[List[str]]:
    """When a torch that fits torch_npu is installed in another directory but hidden
    behind the one import takes (a user-site copy shadowing the env), the fix is to
    remove the shadowing copy, not to reinstall: the PKG003 cleanup lines.  Appends the
    evidence line; ``None`` when no hidden copy fits."""
    recs = records(ctx, "torch")
    want = _want_torch(ctx)
    if want is None or len(recs) < 2:
        return None
    hidden = [r for r in recs[1:] if r.get("location") != recs[0].get("location") and want.accepts(r)]
    if not hidden:
        return None
    evidence.append(
        f"torch {hidden[0].get('version')} in {hidden[0].get('location')} fits, but import takes "
        f"{recs[0].get('dist_info')} first"
    )
    fix, _keeper = _cleanup(ctx, "torch", recs, want)
    return fix


def _wanted_from_release(ctx: Any, npu: Dict[str, Any]) -> Optional[str]:
    expected = _matrix_torch_for(ctx, str(npu.get("version") or ""))
    if expected is None:
        rel = release(npu.get("version"))
        expected = ".".join(str(x) for x in rel[:3]) if rel else None
    if expected is None:
        return None
    return f"torch=={expected}" + ("+cpu" if platform(ctx) == "x86_64" else "")


def _marker_env(ctx: Any) -> Dict[str, str]:
    from npudoctor.rules._pyfacts import marker_env

    return marker_env(ctx)


class _Want(NamedTuple):
    """Which copy of a stack project the rest of the stack needs.

    ``accepts(record) -> bool``; ``requirement``: what to ``pip install`` when no
    installed copy fits (``None``: npudoctor cannot say); ``index``: pip index for it;
    ``reason``: the evidence line naming the source (a Requires-Dist, the matrix, a rule).
    """

    accepts: Callable[[Dict[str, Any]], bool]
    requirement: Optional[str]
    index: Optional[str]
    reason: str


def _fits(version: Any, reqs: List[Any]) -> bool:
    return bool(reqs) and all(satisfies(str(version or ""), r.specifier) is True for r in reqs)


def _want_torch(ctx: Any) -> Optional[_Want]:
    """torch: what torch_npu's Requires-Dist names, else the matrix / release rule."""
    npu = first(ctx, "torch-npu")
    if npu is None:
        return None
    reqs = _torch_requirements(npu, _marker_env(ctx))
    if reqs:
        spec = ",".join(str(r.specifier) for r in reqs)
        return _Want(
            lambda rec: _fits(rec.get("version"), reqs),
            f"torch{spec}",
            _cpu_index(spec, platform(ctx)),
            f"torch_npu {npu.get('version')} requires `{reqs[0]}` (Requires-Dist in its METADATA)",
        )
    wanted = _wanted_from_release(ctx, npu)
    if wanted is None:
        return None
    expected = release(wanted.split("==", 1)[1])
    return _Want(
        lambda rec: expected is not None and (release(rec.get("version")) or ())[:3] == expected[:3],
        wanted,
        _cpu_index(wanted, platform(ctx)),
        f"torch_npu {npu.get('version')} goes with {wanted} (compatibility matrix / torch_npu X.Y.Z[.postN] rule)",
    )


def _want_torch_npu(ctx: Any) -> Optional[_Want]:
    """torch_npu: a copy whose Requires-Dist (or matrix row) fits the installed torch."""
    torch = first(ctx, "torch")
    if torch is None:
        return None
    tv = str(torch.get("version") or "")
    env = _marker_env(ctx)

    def accepts(rec: Dict[str, Any]) -> bool:
        reqs = _torch_requirements(rec, env)
        if reqs:
            return _fits(tv, reqs)
        paired = _matrix_torch_for(ctx, str(rec.get("version") or ""))
        return bool(paired) and (release(paired) or ())[:3] == (release(tv) or ())[:3]

    alt = _npu_for_torch(ctx, tv)
    return _Want(
        accepts, f"torch-npu=={alt}" if alt else None, None, f"torch {tv} is installed ({metadata_source(torch)})"
    )


def _want_vision(ctx: Any, name: str) -> Optional[_Want]:
    """torchvision/torchaudio: the copy built for the installed torch."""
    torch = first(ctx, "torch")
    if torch is None:
        return None
    tv = str(torch.get("version") or "")
    env = _marker_env(ctx)
    _fit, _ev, wanted = _vision_fit(name, {"version": ""}, tv, env)
    return _Want(
        lambda rec: _vision_fit(name, rec, tv, env)[0] is True,
        wanted,
        _vision_index(ctx, tv),
        f"torch {tv} is installed ({metadata_source(torch)})",
    )


def _want_numpy(ctx: Any) -> Optional[_Want]:
    target = _numpy_target(ctx)
    if target is None:
        return None
    spec_text, reason = target
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        spec = SpecifierSet(spec_text)
    except InvalidSpecifier:
        return None
    return _Want(lambda rec: satisfies(str(rec.get("version") or ""), spec) is True, f"numpy{spec}", None, reason)


def _want(ctx: Any, name: str) -> Optional[_Want]:
    if name == "torch":
        return _want_torch(ctx)
    if name == "torch-npu":
        return _want_torch_npu(ctx)
    if name in ("torchvision", "torchaudio"):
        return _want_vision(ctx, name)
    if name == "numpy":
        return _want_numpy(ctx)
    return None


def _user_home(location: str) -> Optional[str]:
    """``/home/dev`` of ``/home/dev/.local/lib/python3.10/site-packages``."""
    head, sep, _tail = location.partition("/.local/lib/")
    return head if sep and head.startswith("/") else None


def _remove_command(ctx: Any, name: str, rec: Dict[str, Any], keep_user_site: bool, same_dir: int) -> PipUninstall:
    """The remedy that uninstalls exactly ``rec`` (a copy of ``name``).

    ``pip uninstall`` removes the first copy on the running interpreter's sys.path (its
    RECORD lists every file, console scripts included), so the command picks the
    interpreter and flags that put ``rec`` first (checked with real pip 23 on CPython
    3.8, tests/test_packages_rules.py):

    * user site: the non-venv interpreter (pip in a venv refuses "outside environment")
      with ``HOME`` of that user site -- the user site precedes every site dir there;
    * the environment's own site dir: the target interpreter, with ``-s`` (no user site
      on sys.path) when a user-site copy is kept;
    * a system site dir seen by a venv (include-system-site-packages): the base
      interpreter with ``-s``;
    * any other directory (PYTHONPATH, a .pth entry): ``PYTHONPATH=<dir>`` puts it first.
    """
    py = section(ctx, "python")
    loc = str(rec.get("location") or "")
    what = f"{rec.get('name')} {rec.get('version')}"
    if same_dir > 1:
        what = f"one of the {same_dir} {rec.get('name')} dist-infos"
    prefix = str(py.get("prefix") or "").rstrip("/")
    in_env = bool(prefix) and loc.startswith(prefix + "/")
    site_dir = posixpath.basename(loc.rstrip("/")) in ("site-packages", "dist-packages")
    if rec.get("user_site"):
        home = _user_home(loc)
        return PipUninstall(
            base_interpreter(ctx, env=(("HOME", home),) if home else ()),
            (name,),
            site=loc,
            note=f"pip removes the first copy on sys.path, the user site's: {what} in {loc}",
        )
    if site_dir and (in_env or not py.get("is_venv")):
        if keep_user_site:
            return PipUninstall(
                interpreter(ctx, flags=("-s",)),
                (name,),
                site=loc,
                note=f"-s hides the user site: removes {what} in {loc}",
            )
        return PipUninstall(interpreter(ctx), (name,), site=loc, note=f"removes {what} in {loc}")
    if site_dir:
        return PipUninstall(
            base_interpreter(ctx, flags=("-s",)),
            (name,),
            site=loc,
            note=f"the base interpreter (pip in the venv refuses): removes {what} in {loc}",
        )
    return PipUninstall(
        base_interpreter(ctx, flags=("-s",), env=(("PYTHONPATH", loc),)),
        (name,),
        site=loc,
        note=f"PYTHONPATH puts {loc} first: removes {what} there",
    )


def _cleanup(ctx: Any, name: str, recs: List[Dict[str, Any]], want: Optional[_Want]) -> Tuple[List[Any], Any]:
    """Fix lines that leave exactly one good copy of ``name``, and the copy kept (or
    ``None`` when every copy goes and ``want.requirement`` is installed afresh).

    The kept copy is the first (in sys.path order) that ``want`` accepts and that is
    alone in its directory: two dist-infos in one directory share the package files
    (the last install wrote them), so neither can be trusted.  Without ``want`` the
    copy import uses now is kept."""
    per_dir: Dict[str, int] = {}
    for r in recs:
        per_dir[str(r.get("location"))] = per_dir.get(str(r.get("location")), 0) + 1
    keeper = None
    for r in recs if want is not None else recs[:1]:
        if per_dir[str(r.get("location"))] == 1 and (want is None or want.accepts(r)):
            keeper = r
            break
    keep_user = bool(keeper is not None and keeper.get("user_site"))
    fix = [_remove_command(ctx, name, r, keep_user, per_dir[str(r.get("location"))]) for r in recs if r is not keeper]
    if keeper is not None:
        fix.append(
            Command(
                (python_path(ctx), "-m", "pip", "show", name),
                note=f"must now show Version: {keeper.get('version')}, Location: {keeper.get('location')}",
            )
        )
        return fix, keeper
    if want is not None and want.requirement:
        fix.append(pip_install(ctx, want.requirement, index=want.index))
    else:
        fix.append(pip_install(ctx, name + "==" + str(recs[0].get("version")), note="or the version you want"))
    return fix, None


@rule
def duplicate_installs(ctx: Any) -> Iterable[Finding]:
    """K01: two metadata dirs of torch/torch_npu/torchvision/torchaudio/numpy."""
    for name in _STACK:
        recs = records(ctx, name)
        if len(recs) < 2:
            continue
        versions = [str(r.get("version")) for r in recs]
        differ = len(set(versions)) > 1
        where = []
        for r in recs:
            tag = " (user site)" if r.get("user_site") else ""
            where.append(f"{r.get('name')} {r.get('version')} at {r.get('dist_info')}{tag}")
        effective = recs[0]
        if len({r.get("location") for r in recs}) == 1:
            note = f"all in {effective.get('location')}: the files there come from the last install; pip and importlib.metadata may report either version"
        else:
            note = f"import takes the first on sys.path: {effective.get('dist_info')}"
        evidence = where + [note]
        want = _want(ctx, name)
        fix, keeper = _cleanup(ctx, name, recs, want)
        if want is not None:
            evidence.append(want.reason)
        if keeper is not None:
            evidence.append(f"keep {keeper.get('name')} {keeper.get('version')} in {keeper.get('location')}")
        severity = "error" if differ and name in ("torch", "torch-npu") else "warning"
        label = ", ".join(versions)
        yield DUPLICATE.finding(
            title=f"{recs[0].get('name')} is installed {len(recs)} times ({label})",
            evidence=evidence,
            fix=fix,
            severity=severity,
            subject=name,
        )


def _installed_version(ctx: Any, name: str) -> Optional[str]:
    rec = first(ctx, name)
    return str(rec.get("version")) if rec and rec.get("version") else None


@rule
def companion_pins(ctx: Any) -> Iterable[Finding]:
    """K01: vllm-ascend, MindIE, … pins on torch/torch_npu/torchvision/torchaudio."""
    if first(ctx, "torch-npu") is None and not any(first(ctx, c) for c in ("vllm-ascend", "mindie-turbo")):
        return
    env = _marker_env(ctx)
    has_vllm_ascend = first(ctx, "vllm-ascend") is not None
    targets = ("torch", "torch-npu", "torchvision", "torchaudio")
    for rec in all_records(ctx):
        name = canonical_name(str(rec.get("name") or ""))
        if name in targets:
            continue
        reqs_all = rec.get("requires_dist") or []
        names_npu = bool(requirements_on(reqs_all, "torch-npu"))
        if name not in _COMPANIONS and not names_npu:
            continue
        for target in targets:
            for req in requirements_on(reqs_all, target, env):
                installed = _installed_version(ctx, target)
                if installed is not None and satisfies(installed, req.specifier) is not False:
                    continue
                if installed is None and target != "torch-npu":
                    continue
                if name == "vllm" and has_vllm_ascend and target in ("torch", "torchvision", "torchaudio"):
                    continue  # expected: vllm-ascend pins the previous torch (vllm-ascend#5710)
                wanted = f"{target}{req.specifier}"
                have = f"{target} {installed} is installed" if installed else f"{target} is not installed"
                fix = [
                    pip_install(ctx, wanted, index=_cpu_index(wanted, platform(ctx)) if target != "torch-npu" else None)
                ]
                if name == "vllm-ascend":
                    vllm = _installed_version(ctx, "vllm")
                    fix = [
                        pip_install(ctx, f"vllm=={vllm}" if vllm else "vllm", note="vllm first"),
                        pip_install(
                            ctx,
                            f"vllm-ascend=={rec.get('version')}",
                            note="then vllm-ascend: it re-pins torch/torch_npu",
                        ),
                    ]
                yield COMPANION.finding(
                    title=f"{rec.get('name')} {rec.get('version')} requires {wanted}, but {have}",
                    evidence=[describe(rec), f"Requires-Dist: {req}"]
                    + ([describe(first(ctx, target))] if installed else []),
                    fix=fix,
                    subject=f"{name}:{target}",
                )


def _torch_minor_plus_15(torch_version: str) -> Optional[str]:
    rel = release(torch_version)
    if not rel or len(rel) < 2 or rel[0] != 2:
        return None
    return f"0.{rel[1] + 15}"


def _vision_wanted(name: str, tv: str) -> str:
    """The requirement of the torchvision/torchaudio built for torch ``tv`` (the
    release-number rules of PKG005)."""
    if name == "torchvision":
        want = _torch_minor_plus_15(tv)
        return f"torchvision=={want}.*" if want else "torchvision"
    rel_t = release(tv)
    return f"torchaudio=={rel_t[0]}.{rel_t[1]}.*" if rel_t and len(rel_t) >= 2 else "torchaudio"


def _vision_fit(name: str, rec: Dict[str, Any], tv: str, env: Dict[str, str]) -> Tuple[Optional[bool], List[str], str]:
    """``(fits, evidence, wanted)`` of a torchvision/torchaudio record for torch ``tv``:
    its ``Requires-Dist`` on torch first, else the release rule; ``fits`` is ``None``
    when neither can say."""
    version = str(rec.get("version") or "")
    wanted = _vision_wanted(name, tv)
    reqs = requirements_on(rec.get("requires_dist") or [], "torch", env)
    if reqs:
        unmet = [r for r in reqs if satisfies(tv, r.specifier) is False]
        if not unmet:
            return True, [], wanted
        return False, [f"{name} {version} requires `{unmet[0]}` (Requires-Dist)"], wanted
    rel_t, rel_x = release(tv), release(version)
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


def _vision_index(ctx: Any, tv: str) -> Optional[str]:
    return CPU_INDEX if local(tv) == "cpu" or (platform(ctx) == "x86_64" and first(ctx, "torch-npu")) else None


@rule
def torchvision_torchaudio(ctx: Any) -> Iterable[Finding]:
    """K02: torchvision/torchaudio built for another torch."""
    torch = first(ctx, "torch")
    if torch is None:
        return
    tv = str(torch.get("version") or "")
    env = _marker_env(ctx)
    index = _vision_index(ctx, tv)
    for name in ("torchvision", "torchaudio"):
        rec = first(ctx, name)
        if rec is None:
            continue
        fits, why, wanted = _vision_fit(name, rec, tv, env)
        if fits is not False:
            continue
        yield TORCHVISION.finding(
            title=f"{name} {rec.get('version')} is not built for torch {tv} (install {wanted})",
            evidence=[describe(rec), describe(torch)] + why,
            fix=[pip_install(ctx, wanted, index=index)],
            subject=name,
        )


def _numpy_target(ctx: Any) -> Optional[Tuple[str, str]]:
    """``(numpy specifier, evidence line)`` for the interpreter: the range the installed
    CANN needs with this Python (matrix ``numpy_spec``, REPORT §6.2); with no CANN
    version known, the range of the CANN the matrix pairs with the installed torch_npu
    (its row's ``cann``).  ``None`` when neither is documented."""
    py = python_short(ctx)
    if not py:
        return None
    cv = cann_version(ctx)
    if cv:
        spec = matrix_call(ctx, "numpy_spec", cv, py)
        if spec:
            return str(spec), f"CANN {cv} with Python {py} needs numpy{spec} (compatibility matrix, REPORT §6.2)"
        return None
    npu = first(ctx, "torch-npu")
    row = matrix_call(ctx, "find_torch_npu", str(npu.get("version") or "")) if npu else None
    for paired in list(getattr(row, "cann", None) or []):
        spec = matrix_call(ctx, "numpy_spec", str(paired), py)
        if spec:
            state = "the installed CANN's version is unknown" if cann_present(ctx) else "no CANN is installed"
            return str(spec), (
                f"{state}: numpy{spec} is what CANN {paired}, the CANN the compatibility matrix pairs with "
                f"torch_npu {npu.get('version')}, needs with Python {py}"  # type: ignore[union-attr]
            )
    return None


def _cann_deps(ctx: Any) -> Dict[str, str]:
    """``{pip name: import name}`` the CANN in use needs (matrix first)."""
    names = matrix_call(ctx, "cann_python_deps", cann_version(ctx))
    if not names:
        return dict(DEFAULT_CANN_DEPS)
    out: Dict[str, str] = {}
    for name in names:
        imp = matrix_call(ctx, "import_name", name) or DEFAULT_CANN_DEPS.get(canonical_name(str(name)))
        out[str(name)] = str(imp or str(name).replace("-", "_"))
    out.setdefault("numpy", "numpy")
    return out


def _module_found(ctx: Any, import_name: str) -> bool:
    modules = section(ctx, "packages").get("modules") or {}
    return bool(isinstance(modules, dict) and modules.get(import_name))


@rule
def cann_python_deps(ctx: Any) -> Iterable[Finding]:
    """K06: the CANN Python dependencies in the torch_npu interpreter."""
    npu = first(ctx, "torch-npu")
    cann = cann_present(ctx)
    if npu is None and not cann:
        return
    pkgs = section(ctx, "packages")
    if not pkgs.get("scanned"):
        return
    missing = []
    for pip_name, import_name in _cann_deps(ctx).items():
        from packaging.requirements import InvalidRequirement, Requirement

        try:
            dist = Requirement(pip_name).name
        except InvalidRequirement:
            dist = pip_name
        if first(ctx, dist) is not None:
            continue
        if _module_found(ctx, import_name):
            continue
        missing.append(pip_name)
    if not missing:
        return
    numpy = _numpy_target(ctx) if "numpy" in missing else None
    install = [f"numpy{numpy[0]}" if (m == "numpy" and numpy) else m for m in missing]
    cv = cann_version(ctx)
    where = (
        f"CANN {cv}" if cv else ("the CANN toolkit" if cann else f"CANN (which torch_npu {npu.get('version')} runs on)")
    )
    evidence = [f"not installed in {python_exe(ctx)}: {', '.join(missing)}"]
    evidence.append(f"searched: {', '.join(pkgs.get('scanned') or [])}")
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
        fix=[pip_install(ctx, *install)],
        severity="error" if cann else "info",
        subject="cann-python-deps",
    )


@rule
def numpy_major(ctx: Any) -> Iterable[Finding]:
    """K07: numpy >= 2 where the CANN/Python pair needs numpy < 2 (matrix.numpy_spec)."""
    numpy = first(ctx, "numpy")
    cv = cann_version(ctx)
    py = python_short(ctx)
    if numpy is None or not cv or not py:
        return
    version = str(numpy.get("version") or "")
    spec_text = matrix_call(ctx, "numpy_spec", cv, py)
    if not spec_text:
        return
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        spec = SpecifierSet(str(spec_text))
    except InvalidSpecifier:
        return
    if satisfies(version, spec) is not False:
        return
    evidence = [describe(numpy), f"CANN {cv} with Python {py} needs numpy{spec} (compatibility matrix, REPORT §6.2)"]
    env = _marker_env(ctx)
    pullers = []
    for rec in all_records(ctx):
        for req in requirements_on(rec.get("requires_dist") or [], "numpy", env):
            if (
                req.specifier
                and satisfies(version, req.specifier)
                and not any(satisfies(v, req.specifier) for v in ("1.26.4", "1.24.4", "1.23.5"))
            ):
                pullers.append(f"{rec.get('name')} {rec.get('version')} requires `{req}`")
    evidence += pullers
    fix = [pip_install(ctx, f"numpy{spec}")]
    if pullers:
        fix.append(
            "then pin the packages above to releases that accept NumPy 1.x (they pulled NumPy 2 in), "
            "or install them before torch_npu and re-run the numpy pin"
        )
    title = f"numpy {version} is installed but CANN {cv} on Python {py} needs numpy{spec}"
    if pullers:
        title += f" ({pullers[0].split(' requires')[0]} requires numpy>=2)"
    yield NUMPY2.finding(title=title, evidence=evidence, fix=fix, subject="numpy")


def _framework_releases(ctx: Any) -> List[Tuple[str, str, str, str, bool]]:
    """``(project, label, version, where, pins_torch_npu)`` of the framework releases of
    the built-in table (npudoctor/rules/_frameworks.py) found on this machine."""
    out: List[Tuple[str, str, str, str, bool]] = []
    rec = first(ctx, "vllm-ascend")
    if rec is not None and rec.get("version"):
        pins = bool(requirements_on(rec.get("requires_dist") or [], "torch-npu"))
        out.append(("vllm-ascend", "vllm-ascend", str(rec["version"]), metadata_source(rec), pins))
    cann = section(ctx, "cann")
    for key, project, label in (("mindie", "mindie", "MindIE"), ("atb_models", "atb-models", "MindIE ATB models")):
        fact = cann.get(key)
        if isinstance(fact, dict) and fact.get("version"):
            out.append((project, label, str(fact["version"]), str(fact.get("source") or fact.get("path")), False))
    return out


def _companion_without_torch_npu(ctx: Any, torch_version: str) -> Iterable[Finding]:
    """A framework release of the built-in table is installed but torch_npu is not:
    nothing NPU-related can run (the pinned case is judged by ``companion_pins``)."""
    from npudoctor.rules._frameworks import rows_for

    for project, label, version, where, pins in _framework_releases(ctx):
        rows = rows_for(project, version) if not pins else []
        want = _documented_npu(ctx, rows[0], torch_version) if rows else None
        if not want:
            continue
        torch_needed = ".".join(str(x) for x in (release(want) or ())[:3])
        reqs = ([f"torch=={torch_needed}"] if torch_needed and not torch_version else []) + [f"torch-npu=={want}"]
        yield COMPANION.finding(
            title=f"{label} {version} needs torch_npu {want}, but torch_npu is not installed",
            evidence=[
                f"{label} {version} from {where}",
                "no torch_npu dist-info in the target interpreter",
                f"{label} {version} needs torch_npu {want}: built-in table, {rows[0].source}",
            ],
            fix=[
                pip_install(ctx, *reqs, index=None)
                if _on_pypi(ctx, want)
                else f"install the torch_npu {want} wheel that {label} {version}'s installation guide links (not on PyPI)"
            ],
            subject=f"{project}:torch-npu",
        )


def _documented_npu(ctx: Any, row: Any, torch_version: str) -> Optional[str]:
    """The torch_npu build a table row names: its own ``torch_npu``, or the build of its
    Ascend Extension for PyTorch line (matrix ``ext_version``) for the installed torch."""
    if row.torch_npu:
        return str(row.torch_npu)
    if not row.ext:
        return None
    for r in matrix_call(ctx, "rows_for_torch", torch_version) or []:
        if str(getattr(r, "ext_version", "")).lower() == str(row.ext).lower():
            return str(r.torch_npu)
    return None


def _on_pypi(ctx: Any, version: str) -> bool:
    row = matrix_call(ctx, "find_torch_npu", version)
    return bool(row is not None and any(getattr(row, "python", {}).values()))


@rule
def companion_table(ctx: Any) -> Iterable[Finding]:
    """K01: vllm-ascend releases that do not pin torch-npu in their metadata (up to 0.9.0)
    and MindIE / ATB models (.run packages) vs the torch_npu build their documentation
    names (built-in table, npudoctor/rules/_frameworks.py)."""
    from npudoctor.rules._frameworks import npu_fits, rows_for

    npu = first(ctx, "torch-npu")
    torch = first(ctx, "torch")
    tv = str((torch or {}).get("version") or "")
    if npu is None:
        yield from _companion_without_torch_npu(ctx, tv)
        return
    installed = str(npu.get("version") or "")
    for project, label, version, where, pins in _framework_releases(ctx):
        if pins:
            continue  # its Requires-Dist names torch-npu: companion_pins judges that
        rows = rows_for(project, version)
        if not rows:
            continue
        row = rows[0]
        want = _documented_npu(ctx, row, tv or installed)
        if not want or npu_fits(installed, want) is not False:
            continue
        rel_i, rel_w = release(installed), release(want)
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
            + (f" (Ascend Extension for PyTorch {row.ext})" if row.ext else "")
            + f": built-in table, {row.source}",
            why,
        ]
        torch_needed = ".".join(str(x) for x in (rel_w or ())[:3])
        reqs = [f"torch-npu=={want}"]
        if torch_needed and release(tv) and release(tv)[:3] != rel_w[:3]:  # type: ignore[index]
            reqs.insert(0, f"torch=={torch_needed}")
        if _on_pypi(ctx, want):
            fix = [pip_install(ctx, *reqs, index=None)]
        else:
            fix = [
                f"install the torch_npu {want} wheel that {label} {version}'s installation guide links "
                f"(not on PyPI): download it, then pip-install the downloaded .whl file with {python_exe(ctx)} -m pip"
            ]
        if project == "vllm-ascend":
            newer = _vllm_ascend_on_pypi(ctx, installed, tv)
            if newer:
                fix.append(
                    pip_install(
                        ctx,
                        "vllm==" + newer[0].split("rc")[0],
                        lead=f"or move to vllm-ascend {newer[0]}, whose torch_npu {newer[1]} is on PyPI"
                        + (f" (it needs CANN >= {newer[2]})" if newer[2] else "")
                        + ": ",
                        note="vllm first",
                    )
                )
                fix.append(pip_install(ctx, "vllm-ascend==" + newer[0], "torch-npu==" + newer[1], lead="  then "))
        yield COMPANION.finding(
            title=f"{label} {version} needs torch_npu {want}, but torch_npu {installed} is installed",
            evidence=evidence,
            fix=fix,
            subject=f"{project}:torch-npu",
        )


def _vllm_ascend_on_pypi(ctx: Any, installed: str, torch_version: str) -> Optional[Tuple[str, str, str]]:
    """``(vllm-ascend version, torch_npu, CANN minimum)``: the oldest table release whose torch_npu
    is on PyPI and built for the installed torch (same X.Y.Z), or ``None``."""
    import re

    from npudoctor.rules._frameworks import TABLE

    rel_t = release(torch_version or installed)
    for row in TABLE:
        if row.project != "vllm-ascend" or not row.torch_npu or not _on_pypi(ctx, row.torch_npu):
            continue
        if rel_t and release(row.torch_npu) and release(row.torch_npu)[:3] != rel_t[:3]:  # type: ignore[index]
            continue
        m = re.search(r"(?:==|>=)\s*([0-9][0-9A-Za-z.]*)", row.versions[0])
        if m:
            return m.group(1), str(row.torch_npu), str(row.cann_min or "")
    return None


INDEX_MIRROR = codes.get("PKG008")

_PYPI_HOSTS = ("pypi.org", "pypi.python.org", "files.pythonhosted.org")


@rule
def index_mirror(ctx: Any) -> Iterable[Finding]:
    """K09: torch_npu missing while pip's index is a mirror (pip configuration facts)."""
    from urllib.parse import urlparse

    if first(ctx, "torch-npu") is not None:
        return
    torch = first(ctx, "torch")
    if torch is None and not cann_present(ctx):
        return
    conf = section(ctx, "packages").get("pip_config") or {}
    index = conf.get("index_url") if isinstance(conf, dict) else None
    if not index:
        return
    host = (urlparse(str(index)).hostname or "").lower()
    if not host or any(host == h or host.endswith("." + h) for h in _PYPI_HOSTS):
        return
    extras = [str(u) for u in conf.get("extra_index_urls") or []]
    if any((urlparse(u).hostname or "").lower() in _PYPI_HOSTS for u in extras):
        return  # PyPI is searched too
    py = python_short(ctx)
    plat = platform(ctx)
    tv = str((torch or {}).get("version") or "")
    evidence = [f"pip index: {index} (from {conf.get('index_source')})"]
    if extras:
        evidence.append("extra indexes: " + ", ".join(extras))
    evidence.append("torch_npu is not installed" + (f"; {describe(torch)}" if torch else ""))
    want = best_torch_npu(ctx, tv, py) if tv else None
    where = f"Python {py or '?'} on {plat or 'this platform'}"
    if want:
        evidence.append(f"PyPI has torch_npu {want} for torch {tv.split('+')[0]} and {where} (compatibility matrix)")
        fix = [pip_install(ctx, f"torch-npu=={want}", index=PYPI_INDEX)]
    else:
        rows = matrix_call(ctx, "fits", python=py, platform=plat) or []
        names = [str(getattr(r, "torch_npu", "")) for r in rows[:5]]
        if names:
            evidence.append(f"PyPI has torch_npu wheels for {where}: {', '.join(names)} (compatibility matrix)")
        else:
            evidence.append(f"the compatibility matrix knows no torch_npu wheel for {where} (see PY001)")
        fix = [
            pip_install(
                ctx,
                "torch-npu",
                index=PYPI_INDEX,
                note="the newest torch_npu with a wheel for this Python; pin a release from `npudoctor matrix show` to pick another",
            )
        ]
    fix.append(
        f"or point pip at an index that carries torch-npu for {where}: edit {conf.get('index_source')}"
        if conf.get("index_source") != "PIP_INDEX_URL"
        else f"or unset PIP_INDEX_URL (it names {index})"
    )
    yield INDEX_MIRROR.finding(
        title=f"torch_npu is not installed and pip uses the mirror {index}: check that it carries torch-npu for {where}",
        evidence=evidence,
        fix=fix,
        subject="torch-npu:index",
    )
