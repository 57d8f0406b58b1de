"""Rules over the ``libraries`` section: will torch_npu's shared libraries load, and do
their symbols match torch, CANN, NNAL/ATB and third-party extensions? (K10, K01, K04,
K03, K05; the ATB C++ ABI directory check of K11 is CANN009 in rules/cann.py, fed by
``libraries.torch_cxx11_abi``.)"""

from __future__ import annotations

import posixpath
from typing import Any, Dict, Iterable, List

from npudoctor.findings import Code, Finding
from npudoctor.rules import rule

NOT_LOADABLE = Code(
    "LIB001",
    "library-not-loadable",
    area="libraries",
    severity="error",
    title="A shared library torch_npu needs cannot be found by the loader",
    explain=(
        "npudoctor resolves every DT_NEEDED entry of torch_npu/_C*.so and "
        "torch_npu/lib/libtorch_npu.so the way ld.so does (RPATH/RUNPATH with $ORIGIN, "
        "LD_LIBRARY_PATH, /etc/ld.so.cache or /etc/ld.so.conf, default directories), without "
        "importing anything. A library that cannot be resolved makes `import torch_npu` fail with "
        "`ImportError: libhccl.so: cannot open shared object file` (torch_npu adds 'Please run "
        "source set_env.sh in the CANN installation path'). torch's own libraries count as "
        "loaded because `import torch` loads them first.\n\nFor each missing library npudoctor "
        "says where it is on disk: in the toolkit (set_env.sh not sourced), in the driver "
        "(driver lib64 directories not on LD_LIBRARY_PATH), in NNAL (nnal/atb/set_env.sh not "
        "sourced), or nowhere (CANN/NNAL not installed).\n\nFix: source the toolkit's set_env.sh, "
        "or install the CANN toolkit that matches torch_npu and then source it."
    ),
    kinds=("K10", "K11"),
)

GLIBCXX = Code(
    "LIB002",
    "system-libstdcxx-too-old",
    area="libraries",
    severity="error",
    title="The system libc/libstdc++ is older than torch_npu's binaries need",
    explain=(
        "ELF files record the symbol versions they need from libc.so.6 (GLIBC_2.x) and "
        "libstdc++.so.6 (GLIBCXX_3.4.x, CXXABI_1.3.x). When the library the loader finds does not "
        "define one of them, the import fails with `version `GLIBCXX_3.4.29' not found`. Typical "
        "on old distributions or when a conda env's older libstdc++ comes first on the loader "
        "path.\n\nFix: use a libstdc++ that provides the version (conda: `conda install -c "
        "conda-forge libstdcxx-ng`, or put the system one first), or a distribution with a newer "
        "glibc for GLIBC_ versions."
    ),
)

TORCH_SYMBOLS = Code(
    "LIB003",
    "torch-npu-torch-symbols-missing",
    area="libraries",
    severity="error",
    title="libtorch_npu.so needs torch symbols the installed torch does not export",
    explain=(
        "The undefined symbols of libtorch_npu.so in torch's namespaces (at::, c10::, torch::, "
        "c10d::) were looked up in the installed torch libraries (libtorch_cpu.so, libc10.so, "
        "libtorch_python.so, ...) through their GNU hash tables. Missing ones mean torch_npu was "
        "built for another torch build: `libtorch_npu.so: undefined symbol: _ZN5torch…`.\n\nFix: "
        "install the torch version torch_npu requires (its Requires-Dist, e.g. torch==2.1.0+cpu) "
        "or the torch_npu built for the installed torch."
    ),
    kinds=("K01",),
)

ATB_SYMBOLS = Code(
    "LIB004",
    "atb-symbols-missing",
    area="libraries",
    severity="error",
    title="torch_npu needs ATB symbols the installed NNAL does not export",
    explain=(
        "The undefined atb:: symbols of libtorch_npu.so and torch_npu/lib/libop_plugin_atb.so "
        "were looked up in NNAL's libatb.so. Missing ones mean the NNAL release does not match "
        "torch_npu / the toolkit: `undefined symbol: _ZN3atb15CreateOperation…`.\n\nFix: install "
        "NNAL from the same CANN release as the toolkit, then re-source nnal/atb/set_env.sh after "
        "installing torch."
    ),
    kinds=("K04",),
)

EXT_SYMBOLS = Code(
    "LIB005",
    "extension-built-for-other-torch-npu",
    area="libraries",
    severity="error",
    title="A compiled extension needs symbols the installed torch_npu/CANN do not export",
    explain=(
        "A third-party extension in site-packages links libtorch_npu.so or libascendcl.so, and "
        "some of its undefined c10_npu::/at_npu::/acl* symbols are not exported by the installed "
        "torch_npu or CANN: it was built against another version (`<ext>.so: undefined symbol: "
        "_ZN7c10_npu…`).\n\nFix: rebuild the extension against the installed torch_npu/CANN, or "
        "install the versions it was built for."
    ),
    kinds=("K03",),
)

CANN_SYMBOLS = Code(
    "LIB006",
    "torch-npu-cann-symbols-missing",
    area="libraries",
    severity="error",
    title="libtorch_npu.so needs CANN symbols the loaded CANN libraries do not export",
    explain=(
        "The undefined CANN symbols of libtorch_npu.so (acl*, Hccl*, Msprof*, ge::) were looked up "
        "in the CANN libraries the loader resolves. Missing ones mean the toolkit is older or newer "
        "than the one torch_npu was built for (`undefined symbol: MsprofSysCycleTime`, `Failed to "
        "find function HcclCommInitRootInfoConfig`).\n\nFix: install the CANN version paired with "
        "this torch_npu, or the torch_npu paired with this CANN."
    ),
    kinds=("K05",),
)


def _libs(ctx: Any) -> Dict[str, Any]:
    value = ctx.facts("libraries")
    return value if isinstance(value, dict) else {}


def _set_env_script(ctx: Any) -> str:
    env = ctx.facts("environment")
    script = ((env.get("expected") or {}) if isinstance(env, dict) else {}).get("script")
    if script:
        return str(script)
    sel = (ctx.facts("cann").get("selected") or {}) if isinstance(ctx.facts("cann"), dict) else {}
    if isinstance(sel, dict) and sel.get("set_env"):
        return str(sel["set_env"])
    if isinstance(sel, dict) and sel.get("path"):
        return posixpath.join(posixpath.dirname(str(sel["path"])), "set_env.sh")
    return "/usr/local/Ascend/ascend-toolkit/set_env.sh"


def _short(path: str, libs: Dict[str, Any]) -> str:
    pkg = (libs.get("torch_npu") or {}).get("location")
    if pkg and path.startswith(str(pkg) + "/"):
        return path[len(str(pkg)) + 1 :]
    return path


def _group(rec: Dict[str, Any]) -> str:
    where = [f.get("where", "") for f in rec.get("found_at") or [] if f.get("usable", True)]
    if any(w == "selected toolkit" for w in where):
        return "toolkit"
    if any(w == "driver" for w in where):
        return "driver"
    if any(w.startswith("NNAL") for w in where):
        return "nnal"
    if any(w.startswith("CANN") for w in where):
        return "other-cann"
    if rec.get("name") == "libatb.so" or rec.get("name", "").startswith(("libatb", "libasdops", "libmki")):
        return "nnal-missing"
    return "missing"


@rule
def libraries_not_loadable(ctx: Any) -> Iterable[Finding]:
    """LIB001: DT_NEEDED entries that will not resolve, grouped by remedy."""
    libs = _libs(ctx)
    recs = [r for r in libs.get("resolution") or [] if isinstance(r, dict) and r.get("status") == "missing"]
    if not recs:
        return
    groups: Dict[str, List[Dict[str, Any]]] = {}
    for r in recs:
        groups.setdefault(_group(r), []).append(r)
    script = _set_env_script(ctx)
    cann = ctx.facts("cann") if isinstance(ctx.facts("cann"), dict) else {}
    has_toolkit = bool(cann.get("selected") or cann.get("toolkits"))
    env = ctx.facts("environment")
    driver = ((env.get("expected") or {}) if isinstance(env, dict) else {}).get("driver") or "/usr/local/Ascend/driver"
    ld = (libs.get("loader") or {}).get("ld_library_path") or []
    for key, items in groups.items():
        names = [r["name"] for r in items]
        optional = all(r.get("optional") for r in items)
        evidence = []
        for r in items:
            by = ", ".join(_short(p, libs) for p in r.get("needed_by") or [])
            at = r.get("found_at") or []
            where = (
                "; on disk at " + ", ".join(f"{f['path']} ({f['where']})" for f in at) if at else "; not found on disk"
            )
            evidence.append(
                f"{r['name']} needed by {by}: not in RPATH/RUNPATH, LD_LIBRARY_PATH, ld.so.cache or default dirs{where}"
            )
        evidence.append("LD_LIBRARY_PATH=" + (":".join(ld) if ld else "(unset)"))
        if key == "toolkit":
            title = f"{', '.join(names)} {'is' if len(names) == 1 else 'are'} in the CANN toolkit but not on the loader path"
            fix = [f"source {script}"]
        elif key == "driver":
            title = (
                f"{', '.join(names)} {'is' if len(names) == 1 else 'are'} in the NPU driver but not on the loader path"
            )
            fix = [
                f"export LD_LIBRARY_PATH={driver}/lib64:{driver}/lib64/common:{driver}/lib64/driver:$LD_LIBRARY_PATH",
                f"or: source {script}",
            ]
        elif key == "nnal":
            title = f"{', '.join(names)} {'is' if len(names) == 1 else 'are'} in NNAL but nnal/atb/set_env.sh is not sourced"
            fix = ["source /usr/local/Ascend/nnal/atb/set_env.sh  # after torch is installed"]
        elif key == "other-cann":
            title = f"{', '.join(names)} exist only in another CANN install than the one in use"
            fix = [f"source {script}", "or install the missing CANN component for the toolkit in use"]
        elif key == "nnal-missing":
            title = f"{', '.join(names)} cannot be loaded: NNAL (ATB) is not installed"
            fix = [
                "Install Ascend-cann-nnal of the same CANN version as the toolkit (./Ascend-cann-nnal_<ver>_linux-<arch>.run --install)",
                "source /usr/local/Ascend/nnal/atb/set_env.sh  # after torch is installed",
            ]
        elif has_toolkit:
            title = f"{', '.join(names)} cannot be loaded and {'is' if len(names) == 1 else 'are'} not in the installed CANN"
            fix = [
                f"source {script}",
                "If it is still missing, the CANN install is incomplete: reinstall the toolkit (and kernels) of the version torch_npu needs",
            ]
        else:
            title = f"{', '.join(names)} cannot be loaded: no CANN toolkit is installed"
            fix = [
                "Install the CANN toolkit that matches torch_npu (Ascend-cann-toolkit_<ver>_linux-<arch>.run --install; see `npudoctor explain CANN001`)",
                "source /usr/local/Ascend/ascend-toolkit/set_env.sh  # CANN 8.5+: /usr/local/Ascend/cann/set_env.sh",
            ]
        if optional:
            title += " (needed only when ATB operators are used)"
        yield NOT_LOADABLE.finding(
            title=title,
            evidence=evidence,
            fix=fix,
            severity="warning" if optional else "error",
            subject=key,
            data={"libraries": names},
        )


@rule
def glibcxx_too_old(ctx: Any) -> Iterable[Finding]:
    """LIB002: GLIBC_/GLIBCXX_/CXXABI_ versions needed but not provided."""
    libs = _libs(ctx)
    too_new = [t for t in (libs.get("glibc") or {}).get("too_new") or [] if isinstance(t, dict)]
    by_lib: Dict[str, List[Dict[str, Any]]] = {}
    for t in too_new:
        by_lib.setdefault(str(t.get("library")), []).append(t)
    for lib, items in by_lib.items():
        versions = sorted({str(t["version"]) for t in items})
        provider = items[0].get("provider")
        highest = items[0].get("highest")
        evidence = [f"{_short(str(t['needed_by']), libs)} needs {t['version']} from {lib}" for t in items[:10]]
        evidence.append(f"{provider} provides up to {highest}")
        fix = (
            ["conda install -c conda-forge 'libstdcxx-ng>=12'  # or put the system libstdc++ first on LD_LIBRARY_PATH"]
            if "stdc++" in lib
            else ["Use a distribution/container image with a newer glibc (torch_npu wheels are manylinux builds)"]
        )
        yield GLIBCXX.finding(
            title=f"{provider} lacks {', '.join(versions[-3:])} needed by torch_npu",
            evidence=evidence,
            fix=fix,
            subject=lib,
        )


def _symbol_finding(code: Code, check: Any, libs: Dict[str, Any], title: str, fix: List[str]) -> Iterable[Finding]:
    if not isinstance(check, dict) or not check.get("missing_count"):
        return
    evidence = [
        f"{check['missing_count']} of {check.get('checked')} symbols of {_short(str(check.get('object')), libs)} are not exported by "
        + ", ".join(_short(str(a), libs) for a in check.get("against") or [])
    ]
    evidence += [f"undefined: {s}" for s in (check.get("missing") or [])[:8]]
    yield code.finding(title=title, evidence=evidence, fix=fix, subject=str(check.get("object")))


@rule
def torch_symbols(ctx: Any) -> Iterable[Finding]:
    """LIB003: K01 by symbols."""
    libs = _libs(ctx)
    check = (libs.get("symbols") or {}).get("torch")
    tv = (libs.get("torch") or {}).get("version")
    nv = (libs.get("torch_npu") or {}).get("version")
    yield from _symbol_finding(
        TORCH_SYMBOLS,
        check,
        libs,
        f"torch_npu {nv} was built for another torch than the installed torch {tv} (undefined torch symbols)",
        [
            "pip install 'torch==<the version torch_npu's Requires-Dist names>'  # see the packages findings",
            "or install the torch_npu release built for torch " + str(tv),
        ],
    )


@rule
def atb_symbols(ctx: Any) -> Iterable[Finding]:
    """LIB004: K04 by symbols."""
    libs = _libs(ctx)
    yield from _symbol_finding(
        ATB_SYMBOLS,
        (libs.get("symbols") or {}).get("atb"),
        libs,
        "NNAL's libatb.so does not export the ATB symbols torch_npu needs",
        [
            "Install NNAL from the same CANN release as the toolkit",
            "source /usr/local/Ascend/nnal/atb/set_env.sh  # after torch is installed",
        ],
    )


@rule
def cann_symbols(ctx: Any) -> Iterable[Finding]:
    """LIB006: K05 by symbols."""
    libs = _libs(ctx)
    yield from _symbol_finding(
        CANN_SYMBOLS,
        (libs.get("symbols") or {}).get("cann"),
        libs,
        f"torch_npu {(libs.get('torch_npu') or {}).get('version')} needs CANN functions the installed CANN libraries do not export",
        [
            "Install the CANN toolkit paired with this torch_npu (see the cann findings), or the torch_npu paired with this CANN"
        ],
    )


@rule
def extension_symbols(ctx: Any) -> Iterable[Finding]:
    """LIB005: K03, third-party extensions vs installed torch_npu/CANN."""
    libs = _libs(ctx)
    for check in (libs.get("symbols") or {}).get("extensions") or []:
        if not isinstance(check, dict) or not check.get("missing_count"):
            continue
        pkg = check.get("package")
        yield from _symbol_finding(
            EXT_SYMBOLS,
            check,
            libs,
            f"{posixpath.basename(str(check.get('object')))} ({pkg}) was built against another torch_npu/CANN than the installed ones",
            [
                f"Rebuild {pkg} against the installed torch_npu {(libs.get('torch_npu') or {}).get('version')} and CANN (pip install --no-binary :all: --force-reinstall {pkg}, or from source)",
                f"or install the {pkg} build made for this torch_npu/CANN",
            ],
        )
