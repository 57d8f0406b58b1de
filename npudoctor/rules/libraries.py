"""Rules over the ``libraries`` section: will torch_npu's shared libraries load, and do
their symbols match torch, CANN, NNAL/ATB and third-party extensions? (K10, K01, K04,
K03, K05; the ATB C++ ABI directory check of K11 is CANN009 in rules/cann.py, fed by
``libraries.torch_cxx11_abi``.)"""

from __future__ import annotations

import posixpath
import re
from typing import Dict, Iterable, List, Optional, Sequence, Tuple, Union

from npudoctor.engine import RuleContext
from npudoctor.facts.runtime_env import LibrariesFacts, Resolution, SymbolCheck, Symbols
from npudoctor.findings import Code, Finding
from npudoctor.knowledge import codes
from npudoctor.knowledge.packages import CANN_LAYOUT_SET_ENV, NNAL_SET_ENV, set_env_script
from npudoctor.knowledge.toolchain import DISTRO_GCC, gcc_for
from npudoctor.remedies import Command, DockerFlags, Export, InstallPackage, PrependPath, Remedy, SourceFile
from npudoctor.rules import rule
from npudoctor.rules._devfacts import in_container
from npudoctor.rules._env_vars import recorded_set_env_script
from npudoctor.rules._libowners import DRIVER, KERNELS, NNAL, OS, TOOLKIT, TORCH, TORCH_NPU, owner, owner_of_name
from npudoctor.rules._pyfacts import cann_present, cann_version
from npudoctor.rules._symbol_versions import TooNew
from npudoctor.rules._symbol_versions import too_new as needed_too_new

#: A fix line: a structured remedy or prose.
FixLine = Union[Remedy, str]

NOT_LOADABLE = codes.get("LIB001")

GLIBCXX = codes.get("LIB002")

TORCH_SYMBOLS = codes.get("LIB003")

ATB_SYMBOLS = codes.get("LIB004")

EXT_SYMBOLS = codes.get("LIB005")

CANN_SYMBOLS = codes.get("LIB006")


def _set_env_script(ctx: RuleContext) -> Optional[str]:
    """The toolkit's set_env.sh to tell users to source -- one that exists in the diagnosed
    root (``environment.set_env_script``; for snapshots without it the script the
    environment probe evaluated, else the cann probe's ``selected.set_env``, both files
    that exist) -- or ``None``: fixes then give export lines."""
    env = ctx.view.environment
    recorded, script = recorded_set_env_script(env)
    if recorded:
        return script
    expected = env.expected
    if expected is not None and expected.script and expected.method != "set_env.sh (rebased)":
        return expected.script
    sel = ctx.view.cann.selected
    return sel.set_env if sel is not None and sel.set_env else None


def _nnal_script(ctx: RuleContext) -> Optional[str]:
    """NNAL's ``nnal/atb/set_env.sh`` when it exists in the root (environment or cann probe)."""
    nnal = ctx.view.environment.nnal
    if nnal is not None and nnal.script:
        return nnal.script
    cann_nnal = ctx.view.cann.nnal
    if cann_nnal is not None and cann_nnal.set_env:
        return cann_nnal.set_env
    return None


def _prepend_ld(dirs: List[str], lead: str = "") -> PrependPath:
    """``dirs`` in front of LD_LIBRARY_PATH (keeps the user's value, adds no empty entry
    when it is unset)."""
    return PrependPath("LD_LIBRARY_PATH", tuple(dirs), lead=lead)


def _arch(ctx: RuleContext) -> Optional[str]:
    """``aarch64`` | ``x86_64`` of this machine, or ``None``."""
    arch = ctx.view.host.arch
    return arch if arch in ("aarch64", "x86_64") else None


def _found_dirs(items: Sequence[Resolution], where: str) -> List[str]:
    """Directories holding the missing libraries, from the ``found_at`` records whose
    ``where`` starts with ``where``."""
    out: List[str] = []
    for r in items:
        for f in r.found_at:
            if f.where.startswith(where) and f.usable and f.path:
                d = posixpath.dirname(f.path)
                if d not in out:
                    out.append(d)
    return out


def _short(path: str, libs: LibrariesFacts) -> str:
    pkg = libs.torch_npu.location if libs.torch_npu is not None else None
    if pkg and path.startswith(pkg + "/"):
        return path[len(pkg) + 1 :]
    return path


def _group(rec: Resolution) -> str:
    """The root cause of one missing library, named by who must act (one LIB001 each):
    on disk but off the loader path (``toolkit``, ``driver``, ``nnal``, ``other-cann``),
    or not on disk (``driver-missing``, ``nnal-missing``, ``missing:<owner>``)."""
    where = [f.where for f in rec.found_at if f.usable]
    if any(w == "selected toolkit" for w in where):
        return "toolkit"
    if any(w == "driver" for w in where):
        return "driver"
    if any(w.startswith("NNAL") for w in where):
        return "nnal"
    if any(w.startswith("CANN") for w in where):
        return "other-cann"
    who = owner(rec)
    if who == DRIVER:
        return "driver-missing"
    if who == NNAL:
        return "nnal-missing"
    return "missing:" + who


def _driver_missing_fix(ctx: RuleContext, driver: str) -> List[FixLine]:
    """The driver's libraries are not on disk: in a container they come from mounting the
    host's driver; on a host from installing the driver package."""
    dirs = [f"{driver}/lib64", f"{driver}/lib64/common", f"{driver}/lib64/driver"]
    if in_container(ctx):
        return [
            DockerFlags(
                mounts=(driver,),
                read_only=True,
                lead="Mount the host's NPU driver into the container: ",
                note="the driver's libraries come from the host, never from the CANN toolkit",
            ),
            _prepend_ld(dirs, lead="then, inside the container: "),
        ]
    return [
        "Install the NPU driver on this host (the Ascend HDK npu-driver .run package for this NPU), then reboot "
        "if its installer asks",
        _prepend_ld(dirs, lead="then: "),
    ]


def _missing_fix(ctx: RuleContext, who: str, names: List[str], script: Optional[str]) -> List[FixLine]:
    """Fix lines for libraries found nowhere, by their owner."""
    if who in (TOOLKIT, KERNELS):
        fix: List[FixLine] = [SourceFile(script)] if script else []
        fix.append(
            f"If it is still missing, the CANN install is incomplete: reinstall the {who} of the version torch_npu needs"
        )
        return fix
    if who == TORCH:
        return ["Reinstall torch (the release torch_npu was built for): its wheel ships " + ", ".join(names)]
    if who == TORCH_NPU:
        return ["Reinstall torch_npu: its wheel ships " + ", ".join(names)]
    if who == OS:
        return [f"Install the OS package that provides {', '.join(names)} (e.g. `apt-file search` / `dnf provides`)"]
    if who.startswith("the ") and who.endswith(" wheel"):
        return [f"Reinstall {who[4:]} (pip install --force-reinstall --no-deps): it ships or needs {', '.join(names)}"]
    return [
        f"Find which package ships {', '.join(names)} and install it, or add its directory to the loader path "
        "(LD_LIBRARY_PATH, or a file in /etc/ld.so.conf.d/ and `ldconfig`)"
    ]


@rule
def libraries_not_loadable(ctx: RuleContext) -> Iterable[Finding]:
    """LIB001: DT_NEEDED entries that will not resolve, grouped by remedy."""
    libs = ctx.view.libraries
    recs = [r for r in libs.resolution if r.status == "missing"]
    if not recs:
        return
    groups: Dict[str, List[Resolution]] = {}
    for r in recs:
        groups.setdefault(_group(r), []).append(r)
    script = _set_env_script(ctx)
    has_toolkit = cann_present(ctx)
    env = ctx.view.environment
    driver = (env.expected.driver if env.expected is not None else None) or "/usr/local/Ascend/driver"
    ld = libs.loader.ld_library_path if libs.loader is not None else ()
    for key, items in groups.items():
        names = [r.name for r in items]
        optional = all(r.optional for r in items)
        evidence = []
        for r in items:
            by = ", ".join(_short(p, libs) for p in r.needed_by)
            at = r.found_at
            where = "; on disk at " + ", ".join(f"{f.path} ({f.where})" for f in at) if at else "; not found on disk"
            evidence.append(
                f"{r.name} needed by {by}: not in RPATH/RUNPATH, LD_LIBRARY_PATH, ld.so.cache or default dirs{where}"
            )
        evidence.append("LD_LIBRARY_PATH=" + (":".join(ld) if ld else "(unset)"))
        fix: List[FixLine]
        if key == "toolkit":
            title = f"{', '.join(names)} {'is' if len(names) == 1 else 'are'} in the CANN toolkit but not on the loader path"
            fix = [SourceFile(script)] if script else [_prepend_ld(_found_dirs(items, "selected toolkit"))]
        elif key == "driver":
            title = (
                f"{', '.join(names)} {'is' if len(names) == 1 else 'are'} in the NPU driver but not on the loader path"
            )
            fix = [_prepend_ld([f"{driver}/lib64", f"{driver}/lib64/common", f"{driver}/lib64/driver"])]
            if script:
                fix.append(SourceFile(script, lead="or: "))
        elif key == "nnal":
            title = f"{', '.join(names)} {'is' if len(names) == 1 else 'are'} in NNAL but nnal/atb/set_env.sh is not sourced"
            nnal_script = _nnal_script(ctx)
            if nnal_script:
                fix = [SourceFile(nnal_script, note="after torch is installed")]
            else:
                home = env.nnal.expected_atb_home if env.nnal is not None else None
                fix = (
                    [Export("ATB_HOME_PATH", home), _prepend_ld([f"{home}/lib"])]
                    if home
                    else [_prepend_ld(_found_dirs(items, "NNAL")[:1])]
                )
        elif key == "other-cann":
            title = f"{', '.join(names)} exist only in another CANN install than the one in use"
            fix = [SourceFile(script)] if script else []
            fix.append("Install the missing CANN component for the toolkit in use")
        elif key == "nnal-missing":
            title = f"{', '.join(names)} cannot be loaded: NNAL (ATB) is not installed"
            fix = [
                InstallPackage(
                    "nnal",
                    cann_version(ctx),
                    arch=_arch(ctx),
                    unknown="the same CANN version as the toolkit",
                    lead="Install NNAL of the same CANN version as the toolkit: ",
                ),
                SourceFile(NNAL_SET_ENV, note="after torch is installed"),
            ]
        elif key == "driver-missing":
            where = "in this container" if in_container(ctx) else "on this machine"
            title = f"{', '.join(names)} cannot be loaded: {'it ships' if len(names) == 1 else 'they ship'} with the NPU driver, which is not {'mounted' if in_container(ctx) else 'installed'} {where}"
            fix = _driver_missing_fix(ctx, driver)
        elif has_toolkit or key[len("missing:") :] not in (TOOLKIT, KERNELS, "unknown"):
            who = key[len("missing:") :]
            title = f"{', '.join(names)} cannot be loaded and {'is' if len(names) == 1 else 'are'} not on disk (owner: {who})"
            fix = _missing_fix(ctx, who, names, script)
        else:
            title = f"{', '.join(names)} cannot be loaded: no CANN toolkit is installed"
            fix = [
                "Install the CANN toolkit that matches torch_npu (its Ascend-cann-toolkit .run package with --install; "
                "see `npudoctor explain CANN001`)",
                SourceFile(set_env_script(None), note=f"CANN 8.5+: {CANN_LAYOUT_SET_ENV}"),
            ]
        if optional:
            title += " (needed only when ATB operators are used)"
        owners = sorted({owner(r) for r in items})
        evidence.append("owner: " + ", ".join(owners))
        yield NOT_LOADABLE.finding(
            title=title,
            evidence=evidence,
            fix=fix,
            severity="warning" if optional else "error",
            subject=key,
            data={"libraries": names, "owners": owners},
        )


def _vkey(version: str) -> Tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"[0-9]+", version))


def _conda_prefix(ctx: RuleContext, provider: str) -> Optional[str]:
    """The conda env the target interpreter runs in (``python.conda_prefix``), or the one
    the too-old library comes from (``<prefix>/lib/libstdc++.so.6`` of a known conda
    environment)."""
    py = ctx.view.python
    if py.conda_prefix:
        return py.conda_prefix
    for env in py.environments:
        if env.kind == "conda" and env.prefix and provider.startswith(env.prefix.rstrip("/") + "/lib/"):
            return env.prefix
    return None


def _libstdcxx_fix(ctx: RuleContext, provider: str, versions: List[str]) -> List[FixLine]:
    """Fix lines for a libstdc++ that lacks ``versions``: the conda package in a conda
    env; otherwise the OS's libstdc++ (the Ubuntu toolchain PPA on Ubuntu), a newer base
    image, or a newer GCC runtime put first on the loader path."""
    gccs = [g for g in (gcc_for(v) for v in versions) if g]
    gcc = max(gccs, key=_vkey) if gccs else None
    major = int(gcc.split(".")[0]) if gcc else None
    need = ", ".join(versions)
    runtime = f"GCC >= {gcc}" if gcc else "a newer GCC"
    prefix = _conda_prefix(ctx, provider)
    if prefix:
        pkg = f"libstdcxx-ng>={major}" if major else "libstdcxx-ng"
        return [
            Command(
                ("conda", "install", "-p", prefix, "-c", "conda-forge", pkg),
                note=f"the libstdc++ of {runtime} provides {need}",
            )
        ]
    fix: List[FixLine] = []
    if (ctx.view.host.os.id or "").lower() == "ubuntu":
        fix.append(
            "apt-get update && apt-get install -y software-properties-common && "
            "add-apt-repository -y ppa:ubuntu-toolchain-r/test && apt-get update && apt-get install -y libstdc++6"
            "  # the toolchain PPA's libstdc++6 comes from a newer GCC"
        )
    images = [name for name, g in DISTRO_GCC if major is not None and g >= major]
    fix.append(
        ("or use" if fix else "Use")
        + f" a base image whose system libstdc++ provides {need} ({runtime}"
        + (f", e.g. {', '.join(images)})" if images else ")")
        + f"; {provider} is too old"
    )
    fix.append(f"or install the libstdc++ of {runtime} in its own directory and put its lib64 first in LD_LIBRARY_PATH")
    return fix


@rule
def glibcxx_too_old(ctx: RuleContext) -> Iterable[Finding]:
    """LIB002: GLIBC_/GLIBCXX_/CXXABI_ versions needed but not provided."""
    libs = ctx.view.libraries
    by_lib: Dict[str, List[TooNew]] = {}
    for t in needed_too_new(libs):
        by_lib.setdefault(t["library"], []).append(t)
    for lib, items in by_lib.items():
        versions = sorted({t["version"] for t in items}, key=_vkey)
        provider = str(items[0]["provider"])
        highest = items[0]["highest"]
        evidence = [f"{_short(t['needed_by'], libs)} needs {t['version']} from {lib}" for t in items[:10]]
        evidence.append(f"{provider} provides up to {highest}")
        fix: List[FixLine]
        if "stdc++" in lib:
            gccs = [g for g in (gcc_for(v) for v in versions) if g]
            if gccs:
                evidence.append(f"{versions[-1]} first came with the libstdc++ of GCC {max(gccs, key=_vkey)}")
            fix = _libstdcxx_fix(ctx, provider, versions)
        else:
            fix = [
                f"Use a distribution/container image whose glibc provides {', '.join(versions)} "
                f"({provider} is too old; torch_npu wheels are manylinux builds)"
            ]
        yield GLIBCXX.finding(
            title=f"{provider} lacks {', '.join(versions[-3:])} needed by torch_npu",
            evidence=evidence,
            fix=fix,
            subject=lib,
        )


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
    from packaging.version import InvalidVersion, Version

    from npudoctor.parsers.metadata import canonical_name
    from npudoctor.rules._pyfacts import marker_env

    npu = ctx.view.packages.torch_npu
    if npu is None:
        return None, ""
    for text in npu.requires_dist:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if canonical_name(req.name) != "torch":
            continue
        if req.marker is not None:
            try:
                if not req.marker.evaluate(marker_env(ctx)):
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

    from npudoctor.rules._pyfacts import CPU_INDEX, pip_install, platform

    pin, source = _torch_pin(ctx)
    if pin is None:
        return ["Install the torch release torch_npu was built for (its METADATA Requires-Dist names it)"], []
    wanted = pin
    if platform(ctx) == "x86_64" and "+" not in wanted:
        wanted += "+cpu"
    try:
        same = installed is not None and Version(installed) == Version(wanted)
    except InvalidVersion:
        same = False
    cmd = pip_install(
        ctx,
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
    for check in _symbols(libs).extensions:
        if not check.missing_count and not check.unresolved:
            continue
        pkg = check.package
        name = posixpath.basename(str(check.object))
        fix: List[FixLine] = [
            f"Rebuild {pkg} against the installed torch_npu {nv} and CANN (pip install --no-binary {pkg} --no-deps --force-reinstall {pkg}, or from source)",
            f"or install the {pkg} build made for this torch_npu/CANN",
        ]
        if check.missing_count:
            yield from _symbol_finding(
                EXT_SYMBOLS,
                check,
                libs,
                f"{name} ({pkg}) was built against another torch_npu/CANN than the installed ones",
                fix,
                [f"{name} needs {', '.join(check.unresolved)}: found on no loader path"] if check.unresolved else None,
            )
            continue
        owners = sorted({owner_of_name(n) or "unknown" for n in check.unresolved})
        yield EXT_SYMBOLS.finding(
            title=f"{name} ({pkg}) cannot load: {', '.join(check.unresolved)} found on no loader path",
            evidence=[
                f"{_short(str(check.object), libs)} links {', '.join(check.links)}",
                f"DT_NEEDED not resolved after import torch_npu (RPATH/RUNPATH, LD_LIBRARY_PATH, ld.so.cache, default dirs): {', '.join(check.unresolved)}",
                "owner: " + ", ".join(owners),
            ],
            fix=fix
            + [
                "or, when the library is on disk, add its directory to the loader path (LD_LIBRARY_PATH, or a file in /etc/ld.so.conf.d/ and `ldconfig`)"
            ],
            subject=str(check.object),
            data={"package": pkg, "unresolved": list(check.unresolved), "owners": owners},
        )
