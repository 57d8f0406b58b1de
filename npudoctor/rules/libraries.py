"""Rules over the loader facts of the ``libraries`` section: will the shared libraries of
torch_npu and the NPU stack load (LIB001, K10), and do the libc/libstdc++ found provide the
symbol versions they need (LIB002)?  The symbol rules (LIB003-LIB006) are in
rules/library_symbols.py; the ATB C++ ABI directory check of K11 is CANN009 in
rules/cann.py, fed by ``libraries.torch_cxx11_abi``."""

from __future__ import annotations

import posixpath
import re
from typing import Dict, Iterable, List, Optional, Sequence, Tuple, Union

from npudoctor.context import RuleContext
from npudoctor.facts.runtime_env import LibrariesFacts, Resolution
from npudoctor.findings import Code, Finding
from npudoctor.knowledge import codes
from npudoctor.knowledge.packages import CANN_LAYOUT_SET_ENV, NNAL_SET_ENV, set_env_script
from npudoctor.knowledge.toolchain import DISTRO_GCC, gcc_for
from npudoctor.knowledge.versions import symbol_version_key
from npudoctor.record import Record
from npudoctor.remedies import (
    Command,
    DockerFlags,
    Export,
    InstallPackage,
    PipUninstall,
    PrependPath,
    Remedy,
    SourceFile,
)
from npudoctor.remedies.python import interpreter
from npudoctor.rules import rule
from npudoctor.rules._env_vars import off_missing_dirs, recorded_set_env_script
from npudoctor.rules._libowners import DRIVER, KERNELS, NNAL, OS, TOOLKIT, TORCH, TORCH_NPU, owner, owner_of_path
from npudoctor.rules._symbol_versions import TooNew
from npudoctor.rules._symbol_versions import too_new as needed_too_new

READS = ("cann", "environment", "host", "libraries", "python")
ONLY_WITH = ("libraries",)
#: A LIB finding names CANN001, CTR002, DRV001, ENV001, ENV003 or ENV005 in ``data["because"]`` (kept
#: when reported).
FOLDS = {"libraries": ("cann", "container", "driver", "environment")}

#: A fix line: a structured remedy or prose.
FixLine = Union[Remedy, str]

NOT_LOADABLE = codes.get("LIB001")

GLIBCXX = codes.get("LIB002")

AUTOLOAD = codes.get("LIB012")


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


def where_on_disk(libs: LibrariesFacts, names: Sequence[str], who: str) -> Tuple[List[str], List[FixLine]]:
    """``(evidence, fix)`` for libraries ``who`` (a package) needs that are on no loader
    path, from where the bounded search of the root found them (``libraries.located``):
    the directory to put on the loader path (``LD_LIBRARY_PATH`` for the shell, or an
    ``ld.so.conf.d`` entry and ``ldconfig`` for every process), or "not on this machine".
    Empty lists when the snapshot has no search (older snapshots)."""
    located = libs.located
    if located is None:
        return [], []
    evidence: List[str] = []
    dirs: List[str] = []
    nowhere: List[str] = []
    for name in names:
        copies = located.names.get(name)
        if copies is None:
            continue
        if copies:
            evidence.append(f"{name} is on disk at {', '.join(copies)}, a directory on no loader path")
            d = posixpath.dirname(copies[0])
            if d not in dirs:
                dirs.append(d)
        else:
            nowhere.append(name)
    searched = "site-packages, /usr/local/lib*, /opt, /usr/local/Ascend"
    if nowhere:
        evidence.append(
            f"{', '.join(nowhere)}: not on this machine (searched {searched})"
            if located.complete
            else f"{', '.join(nowhere)}: not found in the part of {searched} searched (the search stopped early)"
        )
    fix: List[FixLine] = []
    if dirs:
        conf = re.sub(r"[^A-Za-z0-9_.-]", "-", who) or "libraries"
        fix.append(_prepend_ld(dirs, lead=f"Put the directory of {who}'s libraries on the loader path: "))
        fix.append(
            Command(
                (
                    "sh",
                    "-c",
                    " && ".join(
                        f"echo {d} {'>' if i == 0 else '>>'} /etc/ld.so.conf.d/{conf}.conf" for i, d in enumerate(dirs)
                    )
                    + " && ldconfig",
                ),
                lead="or, for every process (as root): ",
            )
        )
    if nowhere and located.complete:
        fix.append(
            f"{', '.join(nowhere)} {'is' if len(nowhere) == 1 else 'are'} not on this machine: install what ships "
            f"{'it' if len(nowhere) == 1 else 'them'} for {who} (its documentation names the runtime), or reinstall {who}"
        )
    return evidence, fix


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


def group_of(rec: Resolution) -> str:
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
    if ctx.view.container.in_container:
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
        groups.setdefault(group_of(r), []).append(r)
    for key, items in groups.items():
        yield not_loadable(ctx, NOT_LOADABLE, key, items, "error")


def not_loadable(
    ctx: RuleContext,
    code: Code,
    key: str,
    items: List[Resolution],
    severity: str,
    ld_path: Optional[Tuple[str, ...]] = None,
) -> Finding:
    """The finding of ``code`` for one group (``key``: :func:`group_of`) of libraries that
    will not resolve: the title and fix of their owner (``severity``; a group needed only
    by a lazily-loaded plugin is a warning).  ``ld_path``: the LD_LIBRARY_PATH the
    libraries were resolved with when it is not the environment's own (the stack audit's,
    set up as set_env.sh sets it); the evidence prints it."""
    libs = ctx.view.libraries
    ld = libs.loader.ld_library_path if libs.loader is not None else ()
    if ld_path is not None:
        ld = ld_path
    names = [r.name for r in items]
    optional = all(r.optional for r in items)
    evidence = _unresolved_evidence(libs, items)
    label = "LD_LIBRARY_PATH as set_env.sh sets it: " if ld_path is not None else "LD_LIBRARY_PATH="
    cause = _cause(ctx, key, items)
    evidence += list(cause.located)
    evidence.append(label + (":".join(ld) if ld else "(unset)"))
    evidence += list(cause.evidence)
    title = cause.title
    if optional:
        title += " (needed only when ATB operators are used)"
    owners = sorted({owner(r) for r in items})
    evidence.append("owner: " + ", ".join(owners))
    because = cause.because
    return code.finding(
        title=title,
        evidence=evidence,
        fix=list(cause.fix),
        severity="warning" if optional else severity,
        subject=key,
        data=dict({"libraries": names, "owners": owners}, **({"because": because} if because else {})),
    )


def _unresolved_evidence(libs: LibrariesFacts, items: List[Resolution]) -> List[str]:
    """One line per library that will not resolve: who needs it and where it is on disk."""
    evidence = []
    for r in items:
        by = ", ".join(_short(p, libs) for p in r.needed_by)
        at = r.found_at
        located = libs.located.names.get(r.name) if libs.located is not None else None
        where = (
            "; on disk at " + ", ".join(f"{f.path} ({f.where})" for f in at)
            if at
            else "; not in the CANN, driver or NNAL directories"
            if located
            else "; not found on disk"
        )
        evidence.append(
            f"{r.name} needed by {by}: not in RPATH/RUNPATH, LD_LIBRARY_PATH, ld.so.cache or default dirs{where}"
        )
    return evidence


class _Cause(Record):
    """Why one group of libraries will not load, as its owner must hear it: the title, the
    fix, the code it folds under (``because``), where else the libraries are on disk
    (``located``: evidence before the loader path line) and further ``evidence`` after it."""

    title: str
    fix: Tuple[FixLine, ...]
    because: Optional[str] = None
    located: Tuple[str, ...] = ()
    evidence: Tuple[str, ...] = ()


def _is_are(names: List[str]) -> str:
    return "is" if len(names) == 1 else "are"


def _driver_dir(ctx: RuleContext) -> str:
    env = ctx.view.environment
    return (env.expected.driver if env.expected is not None else None) or "/usr/local/Ascend/driver"


def _cause(ctx: RuleContext, key: str, items: List[Resolution]) -> _Cause:
    """The :class:`_Cause` of the group ``key`` (:func:`group_of`)."""
    names = [r.name for r in items]
    if key == "toolkit":
        return _cause_off_path_toolkit(ctx, items, names)
    if key == "driver":
        return _cause_off_path_driver(ctx, items, names)
    if key == "nnal":
        return _cause_nnal_not_sourced(ctx, items, names)
    if key == "other-cann":
        return _cause_other_cann(ctx, names)
    if key == "nnal-missing":
        return _cause_nnal_missing(ctx, names)
    if key == "driver-missing":
        return _cause_driver_missing(ctx, names)
    if ctx.view.cann.present or key[len("missing:") :] not in (TOOLKIT, KERNELS, "unknown"):
        return _cause_not_on_disk(ctx, key[len("missing:") :], names)
    return _cause_no_toolkit(names)


def _cause_off_path_toolkit(ctx: RuleContext, items: List[Resolution], names: List[str]) -> _Cause:
    """In the selected toolkit, off the loader path: set_env.sh not sourced."""
    script = _set_env_script(ctx)
    return _Cause(
        title=f"{', '.join(names)} {_is_are(names)} in the CANN toolkit but not on the loader path",
        fix=(SourceFile(script),) if script else (_prepend_ld(_found_dirs(items, "selected toolkit")),),
        because="ENV001",  # set_env.sh not sourced: folded under it when reported
    )


def _cause_off_path_driver(ctx: RuleContext, items: List[Resolution], names: List[str]) -> _Cause:
    """In the driver's directories, off the loader path.  When set_env.sh was applied
    only in part and its missing LD_LIBRARY_PATH entries are where these libraries lie,
    that is the one cause: ENV003 names them and gives the same fix (folded under it)."""
    driver = _driver_dir(ctx)
    script = _set_env_script(ctx)
    fix: List[FixLine] = [_prepend_ld([f"{driver}/lib64", f"{driver}/lib64/common", f"{driver}/lib64/driver"])]
    if script:
        fix.append(SourceFile(script, lead="or: "))
    partly = set(off_missing_dirs(ctx.view.environment, items)) == set(names)
    return _Cause(
        title=f"{', '.join(names)} {_is_are(names)} in the NPU driver but not on the loader path",
        fix=tuple(fix),
        because="ENV003" if partly else None,
    )


def _cause_nnal_not_sourced(ctx: RuleContext, items: List[Resolution], names: List[str]) -> _Cause:
    """In NNAL, whose set_env.sh is not sourced."""
    nnal_script = _nnal_script(ctx)
    fix: List[FixLine]
    if nnal_script:
        fix = [SourceFile(nnal_script, note="after torch is installed")]
    else:
        env = ctx.view.environment
        home = env.nnal.expected_atb_home if env.nnal is not None else None
        fix = (
            [Export("ATB_HOME_PATH", home), _prepend_ld([f"{home}/lib"])]
            if home
            else [_prepend_ld(_found_dirs(items, "NNAL")[:1])]
        )
    return _Cause(
        title=f"{', '.join(names)} {_is_are(names)} in NNAL but nnal/atb/set_env.sh is not sourced",
        fix=tuple(fix),
        because="ENV005",  # nnal/atb/set_env.sh not sourced: folded under it when reported (and as severe)
    )


def _cause_other_cann(ctx: RuleContext, names: List[str]) -> _Cause:
    """Only in another CANN install than the one in use."""
    script = _set_env_script(ctx)
    fix: List[FixLine] = [SourceFile(script)] if script else []
    fix.append("Install the missing CANN component for the toolkit in use")
    return _Cause(title=f"{', '.join(names)} exist only in another CANN install than the one in use", fix=tuple(fix))


def _cause_nnal_missing(ctx: RuleContext, names: List[str]) -> _Cause:
    """NNAL (ATB) is not installed."""
    fix = (
        InstallPackage(
            "nnal",
            ctx.view.cann.version,
            arch=_arch(ctx),
            unknown="the same CANN version as the toolkit",
            lead="Install NNAL of the same CANN version as the toolkit: ",
        ),
        SourceFile(NNAL_SET_ENV, note="after torch is installed"),
    )
    return _Cause(
        title=f"{', '.join(names)} cannot be loaded: NNAL (ATB) is not installed",
        fix=fix,
        # NNAL comes with the CANN release that is missing altogether
        because=None if ctx.view.cann.present else "CANN001",
    )


def _cause_driver_missing(ctx: RuleContext, names: List[str]) -> _Cause:
    """The driver's libraries are not on disk: not installed / mounted, or incomplete."""
    driver = _driver_dir(ctx)
    container = ctx.view.container.in_container
    where = "in this container" if container else "on this machine"
    ships = f"{', '.join(names)} cannot be loaded: {'it ships' if len(names) == 1 else 'they ship'} with the NPU driver"
    installed = ctx.view.driver.driver
    evidence: Tuple[str, ...] = ()
    if installed.exists:
        # version.info is there: an incomplete driver (or a partial mount), not a missing one
        title = (
            f"{ships}, but the driver {installed.version or ''} at {driver} lacks "
            f"{'it' if len(names) == 1 else 'them'} ({'a partial mount' if container else 'an incomplete install'})"
        ).replace("driver  at", "driver at")
        evidence = (f"driver version.info: {installed.path}",)
    else:
        title = f"{ships}, which is not {'mounted' if container else 'installed'} {where}"
    fix = _driver_missing_fix(ctx, driver)
    if installed.exists and not container:
        fix[0] = (
            "Reinstall the NPU driver on this host (the Ascend HDK npu-driver .run package of version "
            f"{installed.version or 'the installed one'}): its lib64 lacks {', '.join(names)}"
        )
    because = None if installed.exists else "CTR002" if container else "DRV001"  # folded when that is reported
    return _Cause(title=title, fix=tuple(fix), because=because, evidence=evidence)


def _cause_not_on_disk(ctx: RuleContext, who: str, names: List[str]) -> _Cause:
    """Not in the stack's directories; owned by ``who``.  The wider search may still find
    them elsewhere on disk: then the fix puts that directory on the loader path."""
    libs = ctx.view.libraries
    title = f"{', '.join(names)} cannot be loaded and {_is_are(names)} not on disk (owner: {who})"
    fix = _missing_fix(ctx, who, names, _set_env_script(ctx))
    elsewhere, placed = where_on_disk(libs, names, "torch_npu")
    if placed and isinstance(placed[0], PrependPath):
        # in none of the stack's directories, but elsewhere on disk (the wider search)
        title = f"{', '.join(names)} cannot be loaded: on disk, but in no directory on the loader path (owner: {who})"
        fix = placed + fix
    return _Cause(title=title, fix=tuple(fix), located=tuple(elsewhere))


def _cause_no_toolkit(names: List[str]) -> _Cause:
    """A CANN library while no CANN toolkit is installed at all."""
    return _Cause(
        title=f"{', '.join(names)} cannot be loaded: no CANN toolkit is installed",
        fix=(
            "Install the CANN toolkit that matches torch_npu (its Ascend-cann-toolkit .run package with --install; "
            "see `npudoctor explain CANN001`)",
            SourceFile(set_env_script(None), note=f"CANN 8.5+: {CANN_LAYOUT_SET_ENV}"),
        ),
        because="CANN001",  # folded under "no CANN toolkit" when that is reported
    )


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
    gcc = max(gccs, key=symbol_version_key) if gccs else None
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
            Command(
                ("apt-get", "update"),
                then=(
                    ("apt-get", "install", "-y", "software-properties-common"),
                    ("add-apt-repository", "-y", "ppa:ubuntu-toolchain-r/test"),
                    ("apt-get", "update"),
                    ("apt-get", "install", "-y", "libstdc++6"),
                ),
                note="the toolchain PPA's libstdc++6 comes from a newer GCC",
            )
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


def _needers(items: List[TooNew]) -> List[str]:
    """Who needs the versions: ``torch_npu`` for its own walk, else the owner of each file
    (the CANN toolkit, NNAL, the NPU driver, ``the <top> wheel``), in order."""
    out: List[str] = []
    for t in items:
        if t["where"] is None:
            who = TORCH_NPU
        elif t["where"] == "npu-smi":
            who = "npu-smi"
        else:
            who = owner_of_path(t["needed_by"]) or posixpath.basename(t["needed_by"])
        if who == TOOLKIT and "bin" in (t["where"] or ""):
            who = f"the CANN toolkit's {posixpath.basename(t['needed_by'])}"
        if who not in out:
            out.append(who)
    return out


@rule
def glibcxx_too_old(ctx: RuleContext) -> Iterable[Finding]:
    """LIB002: GLIBC_/GLIBCXX_/CXXABI_ versions needed but not provided."""
    libs = ctx.view.libraries
    by_lib: Dict[str, List[TooNew]] = {}
    for t in needed_too_new(libs):
        # glibc's libraries (libc, libm, libpthread, ...) are one root cause: the OS's glibc
        key = t["library"] if re.match(r"^(libstdc\+\+|libgcc_s)\.", t["library"]) else "glibc"
        by_lib.setdefault(key, []).append(t)
    for items in by_lib.values():
        lib = items[0]["library"]
        versions = sorted({t["version"] for t in items}, key=symbol_version_key)
        provider = str(items[0]["provider"])
        evidence = [f"{_short(t['needed_by'], libs)} needs {t['version']} from {t['library']}" for t in items[:10]]
        if len(items) > 10:
            evidence.append(f"and {len(items) - 10} more")
        for t in items:
            line = f"{t['provider']} provides up to {t['highest']}"
            if line not in evidence:
                evidence.append(line)
        who = _needers(items)
        fix: List[FixLine]
        if "stdc++" in lib:
            gccs = [g for g in (gcc_for(v) for v in versions) if g]
            if gccs:
                evidence.append(
                    f"{versions[-1]} first came with the libstdc++ of GCC {max(gccs, key=symbol_version_key)}"
                )
            fix = _libstdcxx_fix(ctx, provider, versions)
        else:
            why = "torch_npu wheels are manylinux builds" if who == ["torch_npu"] else f"the OS owns {provider}"
            fix = [
                f"Use a distribution/container image whose glibc provides {', '.join(versions)} "
                f"({provider} is too old; {why})"
            ]
        evidence.append("needed by: " + ", ".join(who))
        yield GLIBCXX.finding(
            title=f"{provider} lacks {', '.join(versions[-3:])} needed by {', '.join(who[:3])}"
            + (f" and {len(who) - 3} more" if len(who) > 3 else ""),
            evidence=evidence,
            fix=fix,
            data={"versions": versions, "needed_by": who},
            subject=lib,
        )


@rule
def autoload_breaks_import_torch(ctx: RuleContext) -> Iterable[Finding]:
    """LIB012: ``import torch`` imports the registered device backends itself (torch 2.5+,
    unless TORCH_DEVICE_BACKEND_AUTOLOAD disables it); the first one whose native modules
    cannot load makes ``import torch`` fail.  A symptom of LIB001 when the libraries it
    misses are torch_npu's (the same ones): folded under it."""
    from npudoctor.knowledge.torch_autoload import autoload

    auto = ctx.view.libraries.autoload
    if auto is None or not auto.enabled:
        return
    libs = ctx.view.libraries
    data = autoload()
    for index, backend in enumerate(auto.backends):
        if not backend.unresolved:
            continue
        names = [u.name for u in backend.unresolved]
        by = list(dict.fromkeys(p for u in backend.unresolved for p in u.needed_by))
        before = [f"{b.dist} ({b.name})" for b in auto.backends[:index]]
        evidence = [
            f"{backend.dist} {backend.version or ''} registers the entry point {data.group}: "
            f"{backend.name} = {backend.value}".replace("  ", " "),
            f"torch {auto.torch_version} imports it at `import torch` "
            + (
                f"(TORCH_DEVICE_BACKEND_AUTOLOAD={auto.variable})"
                if auto.variable is not None
                else "(TORCH_DEVICE_BACKEND_AUTOLOAD unset: enabled)"
            ),
        ]
        if before:
            evidence.append("after the backends " + ", ".join(before) + ", which load")
        evidence += [
            f"{u.name} needed by {', '.join(_short(p, libs) for p in u.needed_by)}: found on no loader path"
            for u in backend.unresolved
        ]
        evidence.append("torch will raise: " + data.error.format(name=backend.name))
        missing_main = {r.name for r in libs.resolution if r.status == "missing"}
        because = "LIB001" if missing_main.intersection(names) else None
        symbols = libs.symbols
        ext_missing = {
            n
            for c in (symbols.extensions if symbols is not None else ())
            if str(c.package or "").replace("_", "-").lower() == str(backend.dist or "").replace("_", "-").lower()
            for n in c.unresolved
        }
        if because is None and ext_missing.intersection(names):
            because = "LIB005"  # the backend's own modules are that finding's (an NPU distribution's files)
        where, placed = ([], []) if because else where_on_disk(libs, names, str(backend.dist))
        evidence[-1:-1] = where
        first: List[FixLine] = (
            [f"Make {', '.join(names[:4])} loadable (the fix of {because})"]
            if because
            else placed
            or [
                f"Install what ships {', '.join(names[:4])} for {backend.dist}, or add "
                f"{'their' if len(names) > 1 else 'its'} directory to the loader path (LD_LIBRARY_PATH, or a file "
                "in /etc/ld.so.conf.d/ and `ldconfig`)"
            ]
        )
        yield AUTOLOAD.finding(
            title=f"import torch fails: it loads {backend.dist} by itself (entry point {data.group}), "
            f"whose {', '.join(posixpath.basename(p) for p in by[:2])} cannot load {', '.join(names[:4])}"
            + (f" and {len(names) - 4} more" if len(names) > 4 else ""),
            evidence=evidence,
            fix=first
            + [
                Export(data.variable, "0", lead="or, to import torch without its backends meanwhile: "),
                PipUninstall(
                    interpreter(ctx.view.python),
                    (str(backend.dist),),
                    lead=f"or, when {backend.dist} is not used here: ",
                ),
            ],
            subject=str(backend.dist),
            data=dict(
                {"backend": backend.name, "dist": backend.dist, "libraries": names},
                **({"because": because} if because else {}),
            ),
        )
        return  # torch stops at the first backend that fails
