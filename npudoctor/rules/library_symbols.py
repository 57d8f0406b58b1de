"""Rules over the symbols of the ``libraries`` section: does libtorch_npu.so find the torch,
CANN and NNAL/ATB symbols it needs, and do third-party extensions find theirs? (K01 LIB003,
K04 LIB004, K05 LIB006, K03 LIB005; split from rules/libraries.py, which keeps the loader
rules.)"""

from __future__ import annotations

import posixpath
from typing import Dict, Iterable, List, Optional, Tuple

from npudoctor import lazyre
from npudoctor.context import RuleContext
from npudoctor.facts.runtime_env import LibrariesFacts, SymbolCheck, Symbols
from npudoctor.findings import Code, Finding
from npudoctor.knowledge import codes
from npudoctor.knowledge.packages import NNAL_SET_ENV
from npudoctor.record import replace
from npudoctor.remedies import InstallPackage, PipInstall, PrependPath, SourceFile
from npudoctor.rules import rule
from npudoctor.rules._libowners import DRIVER, KERNELS, NNAL, TOOLKIT, owner_of_name
from npudoctor.rules.libraries import FixLine, _arch, _short, where_on_disk

READS = ("cann", "host", "libraries", "packages", "python")
ONLY_WITH = ("libraries",)
#: A LIB005 of modules that fail only because no CANN is installed names CANN001 in
#: ``data["because"]`` (folded under it when reported).
FOLDS = {"libraries": ("cann",)}

TORCH_SYMBOLS = codes.get("LIB003")

ATB_SYMBOLS = codes.get("LIB004")

EXT_SYMBOLS = codes.get("LIB005")

CANN_SYMBOLS = codes.get("LIB006")

ABI_MISMATCH = codes.get("LIB010")

TORCH_EXT_SYMBOLS = codes.get("LIB011")

#: torch_npu's C++ API (c10_npu::, at_npu::, torch_npu::, op_api::, op_plugin::), mangled:
#: exported by torch_npu's libtorch_npu.so.
_NPU_RE = lazyre.pattern(r"^_Z(?:T[VIST])?N?K?(?:7c10_npu|6at_npu|9torch_npu|3op_api|7op_plugin)(?:\d|[A-Z])")
#: ATB's C++ API (namespaces atb::, Mki::, AsdOps::), mangled: exported by NNAL's libatb.so.
_ATB_RE = lazyre.pattern(r"^_Z(?:T[VIST])?N?K?(?:3atb|3Mki|6AsdOps)(?:\d|[A-Z])")


def _symbol_finding(
    code: Code,
    check: Optional[SymbolCheck],
    libs: LibrariesFacts,
    title: str,
    fix: List[FixLine],
    extra: Optional[List[str]] = None,
) -> Iterable[Finding]:
    if check is None or not check.missing_count:
        return
    evidence = [
        f"{check.missing_count} of {check.checked} symbols of {_short(str(check.object), libs)} are not exported by "
        + ", ".join(_short(a, libs) for a in check.against)
    ]
    evidence += [f"undefined: {s}" for s in check.missing[:8]]
    evidence += list(extra or [])
    yield code.finding(title=title, evidence=evidence, fix=fix, subject=str(check.object))


def _torch_pin(ctx: RuleContext) -> Tuple[Optional[str], str]:
    """The torch version torch_npu was built for and where that comes from: the exact pin
    of its ``Requires-Dist: torch==X`` (the torch-npu record's ``requires_dist``, markers
    evaluated for the target interpreter), else the rule that torch_npu X.Y.Z[.postN]
    goes with torch X.Y.Z.  ``(None, "")`` without torch_npu."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.specifiers import InvalidSpecifier
    from packaging.version import InvalidVersion, Version

    from npudoctor.parsers.metadata import canonical_name
    from npudoctor.rules._pyfacts import marker_env

    npu = ctx.view.packages.torch_npu
    if npu is None:
        return None, ""
    for text in npu.requires_dist:
        try:
            req = Requirement(text)
        except (InvalidRequirement, InvalidSpecifier):
            continue
        if canonical_name(req.name) != "torch":
            continue
        if req.marker is not None:
            try:
                if not req.marker.evaluate(marker_env(ctx.view.python, ctx.view.host)):
                    continue
            except Exception:
                pass
        specs = list(req.specifier)
        if len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version:
            return specs[0].version, f"Requires-Dist: {text} ({npu.metadata_source})"
    try:
        release = Version(str(npu.version)).release
    except InvalidVersion:
        return None, ""
    if len(release) >= 2:
        base = ".".join(str(x) for x in (list(release) + [0])[:3])
        return base, f"torch_npu {npu.version} goes with torch {base} (no exact Requires-Dist pin)"
    return None, ""


def _torch_fix(ctx: RuleContext, installed: Optional[str]) -> Tuple[List[FixLine], List[str]]:
    """``(fix lines, evidence lines)`` for LIB003: the exact pip command for the torch
    torch_npu was built for, with the target interpreter (``python.executable``, else
    ``python3``).  On x86_64 torch_npu is built against the CPU build of torch
    (``torch==X+cpu`` from https://download.pytorch.org/whl/cpu; a PyPI-default torch of
    the same number is the CUDA build and does not export the same symbols)."""
    from packaging.version import InvalidVersion, Version

    from npudoctor.remedies.python import CPU_INDEX, pip_install
    from npudoctor.rules._pyfacts import platform

    pin, source = _torch_pin(ctx)
    if pin is None:
        return ["Install the torch release torch_npu was built for (its METADATA Requires-Dist names it)"], []
    wanted = pin
    if platform(ctx.view.python, ctx.view.host) == "x86_64" and "+" not in wanted:
        wanted += "+cpu"
    try:
        same = installed is not None and Version(installed) == Version(wanted)
    except InvalidVersion:
        same = False
    cmd = pip_install(
        ctx.view.python,
        f"torch=={wanted}",
        index=CPU_INDEX if wanted.endswith("+cpu") else None,
        options=("--force-reinstall", "--no-deps") if same else (),
    )
    evidence = [f"torch_npu needs torch {pin}: {source}"]
    if wanted != pin:
        evidence.append(f"on x86_64 torch_npu is built against the CPU build: torch {wanted}")
    return [cmd], evidence


def _symbols(libs: LibrariesFacts) -> Symbols:
    return libs.symbols if libs.symbols is not None else Symbols()


def _rebuild(ctx: RuleContext, pkg: str, against: str, isolation: bool = True, note: str = "") -> PipInstall:
    """Rebuild the extension ``pkg`` from its source distribution against the installed
    ``against`` (``torch_npu 2.1.0.post10``): pip with ``--no-binary`` for the target
    interpreter, ``--no-build-isolation`` (when ``isolation``) so the build sees the
    installed torch/torch_npu instead of a fresh copy in an isolated build environment."""
    from npudoctor.remedies.python import pip_install

    options = ("--no-build-isolation",) if isolation else ()
    return pip_install(
        ctx.view.python,
        pkg,
        options=options + ("--no-binary", pkg, "--no-deps", "--force-reinstall"),
        lead=f"Rebuild {pkg} against the installed {against} (or from its source tree): ",
        note=note,
    )


def _built_for(ctx: RuleContext, pkg: str) -> FixLine:
    """The other way out for an extension built against another torch_npu: install the
    torch_npu it was built for -- the exact pin of its own ``Requires-Dist: torch-npu==X``
    (a pip command for the target interpreter) when it has one, else said in words."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.specifiers import InvalidSpecifier

    from npudoctor.parsers.metadata import canonical_name
    from npudoctor.remedies.python import pip_install

    for rec in ctx.view.packages.records(canonical_name(pkg))[:1]:
        for text in rec.requires_dist:
            try:
                req = Requirement(text)
            except (InvalidRequirement, InvalidSpecifier):
                continue
            specs = list(req.specifier)
            if canonical_name(req.name) == "torch-npu" and len(specs) == 1 and specs[0].operator in ("==", "==="):
                return pip_install(
                    ctx.view.python,
                    f"torch-npu=={specs[0].version}",
                    lead=f"or install the torch_npu {pkg} was built for (its Requires-Dist: {text}): ",
                )
    return f"or install the torch_npu release {pkg} was built for (its release notes or requirements name it)"


def _torch_npu_version(libs: LibrariesFacts) -> Optional[str]:
    return libs.torch_npu.version if libs.torch_npu is not None else None


@rule
def torch_symbols(ctx: RuleContext) -> Iterable[Finding]:
    """LIB003: K01 by symbols."""
    libs = ctx.view.libraries
    check = _symbols(libs).torch
    tv = libs.torch.version if libs.torch is not None else None
    nv = _torch_npu_version(libs)
    if check is None or not check.missing_count:
        return
    torch_abi = libs.torch_cxx11_abi
    if check.abi is not None and torch_abi is not None and check.abi != torch_abi:
        # the names differ by their std::string mangling: the other C++ ABI, not another release
        yield TORCH_SYMBOLS.finding(
            title=f"torch_npu {nv} was built with the {'C++11' if check.abi else 'old'} C++ ABI; the installed torch "
            f"{tv} uses the {'C++11' if torch_abi else 'old'} one",
            evidence=[
                f"libtorch_npu.so imports {check.abi_symbol} ({_abi_name(check.abi)})",
                f"torch {tv} is built with {_abi_name(torch_abi)}: {libs.abi_source} exports its names",
                f"{check.missing_count} of {check.checked} torch symbols of libtorch_npu.so are not exported by torch",
                *(f"undefined: {sym}" for sym in check.missing[:8]),
            ],
            fix=_torch_fix(ctx, tv or None)[0]
            + [
                f"torch_npu {nv} wheels are built against the torch its Requires-Dist names, from PyPI (or "
                "download.pytorch.org/whl/cpu on x86_64): a torch from another source or a source build may use the other ABI"
            ],
            subject="abi",
            data={"abi": check.abi, "torch_abi": torch_abi},
        )
        return
    fix, extra = _torch_fix(ctx, tv or None)
    yield from _symbol_finding(
        TORCH_SYMBOLS,
        check,
        libs,
        f"torch_npu {nv} was built for another torch than the installed torch {tv} (undefined torch symbols)",
        fix + ["or install the torch_npu release built for torch " + str(tv)],
        extra,
    )


@rule
def atb_symbols(ctx: RuleContext) -> Iterable[Finding]:
    """LIB004: K04 by symbols."""
    libs = ctx.view.libraries
    yield from _symbol_finding(
        ATB_SYMBOLS,
        _symbols(libs).atb,
        libs,
        "NNAL's libatb.so does not export the ATB symbols torch_npu needs",
        [
            "Install NNAL from the same CANN release as the toolkit",
            SourceFile(NNAL_SET_ENV, note="after torch is installed"),
        ],
    )


@rule
def cann_symbols(ctx: RuleContext) -> Iterable[Finding]:
    """LIB006: K05 by symbols."""
    libs = ctx.view.libraries
    yield from _symbol_finding(
        CANN_SYMBOLS,
        _symbols(libs).cann,
        libs,
        f"torch_npu {_torch_npu_version(libs)} needs CANN functions the installed CANN libraries do not export",
        [
            "Install the CANN toolkit paired with this torch_npu (see the cann findings), or the torch_npu paired with this CANN"
        ],
    )


@rule
def extension_symbols(ctx: RuleContext) -> Iterable[Finding]:
    """LIB005: K03, one finding per third-party extension that will not load against the
    installed torch_npu / CANN: undefined symbols the installed libraries do not export,
    or DT_NEEDED entries that resolve nowhere."""
    libs = ctx.view.libraries
    nv = _torch_npu_version(libs)
    no_cann: Dict[str, List[SymbolCheck]] = {}
    has_cann = ctx.view.cann.present
    for check in _symbols(libs).extensions:
        if not check.missing_count and not check.unresolved:
            continue
        if not check.missing_count and not has_cann and _only_cann_missing(check):
            no_cann.setdefault(str(check.package), []).append(check)
            continue
        pkg = check.package
        name = posixpath.basename(str(check.object))
        fix: List[FixLine] = [
            _rebuild(ctx, str(pkg), f"torch_npu {nv} and CANN", isolation=False),
            f"or install the {pkg} build made for this torch_npu/CANN",
        ]
        if any(_ATB_RE.match(sym) for sym in check.missing):
            fix.append(
                InstallPackage(
                    "nnal",
                    ctx.view.cann.version,
                    arch=_arch(ctx),
                    unknown="the same CANN version as the toolkit",
                    lead="or, when it was built for the NNAL of the installed CANN, install that NNAL: ",
                )
            )
        if check.missing_count:
            title = f"{name} ({pkg}) was built against another torch_npu/CANN than the installed ones"
            extra = [f"{name} needs {', '.join(check.unresolved)}: found on no loader path"] if check.unresolved else []
            if check.missing and all(_NPU_RE.match(sym) for sym in check.missing):
                # every missing name is torch_npu's: the provider is the installed torch_npu
                title = f"{name} ({pkg}) was built against another torch_npu than the installed torch_npu {nv}"
                extra.append(f"provider: libtorch_npu.so of torch_npu {nv} (the one import torch_npu loads)")
                fix = [_rebuild(ctx, str(pkg), f"torch_npu {nv}"), _built_for(ctx, str(pkg))]
            yield from _symbol_finding(EXT_SYMBOLS, check, libs, title, fix, extra or None)
            continue
        owners = sorted({owner_of_name(n) or "unknown" for n in check.unresolved})
        if not check.links:  # a file of an NPU distribution linking no NPU library directly
            needs = ", ".join(check.unresolved)
            stack = [o for o in owners if o in (TOOLKIT, KERNELS, NNAL, DRIVER)]
            if stack and len(stack) == len(owners):
                fix = [
                    f"Install the {' and '.join(stack)} {pkg} was built for (it needs {needs}), "
                    f"or the {pkg} built for the installed one"
                ]
            else:
                fix = [f"Reinstall {pkg} (pip install --force-reinstall --no-deps {pkg}): it needs {needs}"]
        where, placed = where_on_disk(libs, list(check.unresolved), str(pkg))
        yield EXT_SYMBOLS.finding(
            title=f"{name} ({pkg}) cannot load: {', '.join(check.unresolved)} found on no loader path",
            evidence=[
                f"{_short(str(check.object), libs)} links {', '.join(check.links)}"
                if check.links
                else f"{_short(str(check.object), libs)} is installed by {pkg} (its RECORD), part of the NPU stack",
                f"DT_NEEDED not resolved after import torch_npu (RPATH/RUNPATH, LD_LIBRARY_PATH, ld.so.cache, default dirs): {', '.join(check.unresolved)}",
                *where,
                "owner: " + ", ".join(owners),
            ],
            fix=_where_fix(str(pkg), placed, fix),
            subject=str(check.object),
            data={"package": pkg, "unresolved": list(check.unresolved), "owners": owners},
        )
    for pkg, checks in no_cann.items():
        yield _without_cann(ctx, pkg, checks, libs)


#: Owners of the libraries a CANN release installs (toolkit, kernels/ops, NNAL).
_CANN_OWNERS = (TOOLKIT, KERNELS, NNAL)


def _where_fix(pkg: str, placed: List[FixLine], fix: List[FixLine]) -> List[FixLine]:
    """The fix of a module whose libraries are on no loader path, by where they are: on
    disk (``placed`` starts with the loader-path line) -> that directory on the loader
    path, or a RUNPATH into the module; not on this machine -> the owner's ``fix`` (the
    evidence says where it was looked for); not searched -> ``fix`` and the generic line."""
    if placed and isinstance(placed[0], PrependPath):
        return placed + [
            f"or rebuild {pkg} with a RUNPATH naming that directory ($ORIGIN-relative), so that no loader path is needed"
        ]
    if placed:
        return fix
    return fix + [
        "or, when the library is on disk, add its directory to the loader path (LD_LIBRARY_PATH, or a file in "
        "/etc/ld.so.conf.d/ and `ldconfig`)"
    ]


def _only_cann_missing(check: SymbolCheck) -> bool:
    """Whether every library ``check`` misses is one a CANN release ships: with no CANN
    toolkit installed the module fails only because CANN is absent (CANN001's)."""
    return bool(check.unresolved) and all(owner_of_name(n) in _CANN_OWNERS for n in check.unresolved)


def _without_cann(ctx: RuleContext, pkg: str, checks: List[SymbolCheck], libs: LibrariesFacts) -> Finding:
    """One LIB005 for the modules of ``pkg`` that cannot load only because no CANN is
    installed: a symptom of CANN001 (``because``), whose fix installs the CANN release."""
    names = [posixpath.basename(str(c.object)) for c in checks]
    needs = list(dict.fromkeys(n for c in checks for n in c.unresolved))
    evidence = [f"{_short(str(c.object), libs)} needs {', '.join(c.unresolved)}" for c in checks[:10]]
    if len(checks) > 10:
        evidence.append(f"and {len(checks) - 10} more")
    owners = sorted({str(owner_of_name(n)) for n in needs})
    evidence.append("no CANN toolkit is installed; owner: " + ", ".join(owners))
    return EXT_SYMBOLS.finding(
        title=f"{', '.join(names)} ({pkg}) cannot load: no CANN toolkit is installed",
        evidence=evidence,
        fix=["Install the CANN release torch_npu is paired with (see CANN001); these modules then load"],
        subject=pkg,
        data={"package": pkg, "modules": names, "unresolved": needs, "owners": owners, "because": "CANN001"},
    )


def _abi_name(cxx11: bool) -> str:
    return "the C++11 ABI (_GLIBCXX_USE_CXX11_ABI=1)" if cxx11 else "the old C++ ABI (_GLIBCXX_USE_CXX11_ABI=0)"


@rule
def torch_extensions(ctx: RuleContext) -> Iterable[Finding]:
    """LIB010 / LIB011: each package whose modules link torch's libraries and will not load
    against the installed torch: built with the other C++ ABI (LIB010: the ABI the torch
    names it imports mangle differs from the one libc10.so's exports show), else built
    against another torch release (LIB011: torch names it imports that torch does not
    export).  One finding per package (one root cause: how that package was built)."""
    libs = ctx.view.libraries
    torch_abi = libs.torch_cxx11_abi
    tv = libs.torch.version if libs.torch is not None else None
    by_pkg: Dict[Tuple[str, str], List[SymbolCheck]] = {}
    for check in _symbols(libs).torch_extensions:
        pkg = str(check.package or posixpath.basename(str(check.object)))
        if check.abi is not None and torch_abi is not None and check.abi != torch_abi:
            by_pkg.setdefault((pkg, "abi"), []).append(check)
        elif check.missing_count:
            by_pkg.setdefault((pkg, "symbols"), []).append(check)
    for (pkg, kind), checks in by_pkg.items():
        names = [posixpath.basename(str(c.object)) for c in checks]
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        rebuild = _rebuild(ctx, pkg, f"torch {tv}", note="its build takes the ABI and symbols from torch")
        evidence = [
            f"{_short(str(c.object), libs)}: {c.missing_count} of {c.checked} torch symbols not exported by torch's "
            "libraries"
            for c in checks[:5]
            if c.missing_count
        ]
        if kind == "abi":
            first = checks[0]
            evidence = [
                f"{_short(str(c.object), libs)} was built with {_abi_name(bool(c.abi))}: it imports {c.abi_symbol}"
                for c in checks[:5]
            ] + evidence
            evidence.append(
                f"torch {tv} is built with {_abi_name(bool(torch_abi))}: {libs.abi_source} exports its names"
            )
            yield ABI_MISMATCH.finding(
                title=f"{shown} ({pkg}) {'was' if len(names) == 1 else 'were'} built with the "
                f"{'C++11' if first.abi else 'old'} C++ ABI; torch {tv} uses the {'C++11' if torch_abi else 'old'} one",
                evidence=evidence,
                fix=[
                    rebuild,
                    f"or install the {pkg} build made for torch {tv} (the same index and release line as torch)",
                ],
                subject=pkg,
                data=dict(
                    {"package": pkg, "modules": names, "abi": first.abi, "torch_abi": torch_abi},
                    # torch_npu's own modules: libtorch_npu.so's mismatch (LIB003) is the one cause
                    **({"because": "LIB003"} if pkg in ("torch-npu", "torch_npu") else {}),
                ),
            )
            continue
        evidence += [f"undefined: {s}" for s in checks[0].missing[:5]]
        yield TORCH_EXT_SYMBOLS.finding(
            title=f"{shown} ({pkg}) {'was' if len(names) == 1 else 'were'} built against another torch than the "
            f"installed torch {tv}",
            evidence=evidence,
            fix=[f"Install the {pkg} build made for torch {tv}", replace(rebuild, lead="or r" + rebuild.lead[1:])],
            subject=pkg,
            data=dict(
                {"package": pkg, "modules": names},
                **({"because": "LIB003"} if pkg in ("torch-npu", "torch_npu") else {}),
            ),
        )
