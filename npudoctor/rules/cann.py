"""Rules about the CANN toolkit, its kernels/ops package and NNAL/ATB (kinds K04, K05,
K11, K12), from the ``cann`` facts (``npudoctor/probes/cann.py``) plus ``packages``,
``devices.chips``, ``host.arch`` and ``libraries.torch_cxx11_abi`` when present.

Codes ``CANN001``-``CANN011``.  Package file names and install order follow the official
offline packages (../shared/matrix/REPORT.md §5): toolkit -> kernels/ops -> ``source
set_env.sh`` -> NNAL.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, Optional, Tuple

from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.rules import rule
from npudoctor.rules.overview import npu_stack_present

# --------------------------------------------------------------------------- codes

NO_CANN = codes.get("CANN001")

OLDER_SELECTED = codes.get("CANN002")

TORCH_NPU_CANN = codes.get("CANN003")

KERNELS_MISSING = codes.get("CANN004")

KERNELS_OTHER_SOC = codes.get("CANN005")

KERNELS_VERSION = codes.get("CANN006")

NNAL_MISSING = codes.get("CANN007")

NNAL_VERSION = codes.get("CANN008")

ATB_ABI = codes.get("CANN009")

UNREADABLE = codes.get("CANN010")

ARCH_MISMATCH = codes.get("CANN011")

FRAMEWORK_CANN = codes.get("CANN012")

# --------------------------------------------------------------------------- helpers

_NEEDS_NNAL = ("vllm-ascend", "vllm_ascend", "mindie", "mindie-turbo", "mindie_turbo", "mindie-llm", "mindie_llm")


def _installed(ctx: Any, *names: str) -> List[Dict[str, Any]]:
    installed = ctx.facts("packages").get("installed") or {}
    out: List[Dict[str, Any]] = []
    if not isinstance(installed, dict):
        return out
    for name in names:
        out.extend(r for r in installed.get(name) or [] if isinstance(r, dict))
    return out


def torch_npu_record(ctx: Any) -> Optional[Dict[str, Any]]:
    """The installed torch_npu record of the packages facts (first one), or ``None``."""
    recs = _installed(ctx, "torch-npu", "torch_npu")
    return recs[0] if recs else None


def parse_cann(text: Optional[str]) -> Any:
    """A :class:`npudoctor.knowledge.versions.CannVersion` or ``None`` (garbage)."""
    from npudoctor.knowledge.versions import parse_cann as _parse

    if not text:
        return None
    try:
        return _parse(text)
    except Exception:
        return None


def cann_less(a: Optional[str], b: Optional[str]) -> Optional[bool]:
    """``a < b`` for CANN version strings; ``None`` when unknowable (T builds, garbage)."""
    va, vb = parse_cann(a), parse_cann(b)
    if va is None or vb is None:
        return None
    try:
        return bool(va < vb)
    except (ValueError, TypeError):
        return None


def same_release(a: Optional[str], b: Optional[str]) -> Optional[bool]:
    """Whether two CANN version strings name the same release (``8.2.RC1`` == ``8.2.rc1``;
    a ``.B150`` build suffix is ignored).  ``None`` when one is missing."""
    if not a or not b:
        return None

    def norm(v: str) -> str:
        return re.sub(r"\.b\d+$", "", v.strip().lower())

    if norm(a) == norm(b):
        return True
    va, vb = parse_cann(norm(a)), parse_cann(norm(b))
    if va is not None and vb is not None:
        try:
            return bool(va == vb)
        except (ValueError, TypeError):
            pass
    return False


def major_minor(version: Optional[str]) -> Optional[Tuple[int, int]]:
    """``"8.2.RC1"`` -> ``(8, 2)``; ``None`` if it does not start with two numbers."""
    m = re.match(r"^\s*(\d+)\.(\d+)", version or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def host_arch(ctx: Any) -> Optional[str]:
    """Machine architecture from the host facts, else the torch_npu wheel tag."""
    arch = ctx.facts("host").get("arch")
    if arch in ("aarch64", "x86_64"):
        return arch
    rec = torch_npu_record(ctx)
    for tag in (rec or {}).get("wheel_tags") or []:
        if "aarch64" in str(tag):
            return "aarch64"
        if "x86_64" in str(tag):
            return "x86_64"
    return None


def chips(ctx: Any) -> List[Dict[str, Any]]:
    """Chip records of the devices facts (``[{"name": "910B3", ...}]``)."""
    return [c for c in ctx.facts("devices").get("chips") or [] if isinstance(c, dict) and c.get("name")]


def chip_info(ctx: Any, name: str) -> Any:
    """``matrix.chip(name)`` or ``None`` (no matrix, unknown chip)."""
    matrix = ctx.matrix
    if matrix is None:
        return None
    try:
        return matrix.chip(name)
    except Exception:
        return None


def package_chip(ctx: Any) -> Optional[str]:
    """The chip part of the package names (``910b``, ``310p``, ``910``, ``A3``) for the
    NPU chips of this machine, or ``None`` when no chip is known.

    From ``devices.chips[*].name`` via ``matrix.chip(name).kernels_package_chip``; for a
    chip name the matrix does not list, the ``family`` the devices probe recorded via the
    matrix family's ``package_chip`` (chips.toml, REPORT.md §5)."""
    found = chips(ctx)
    for chip in found:
        info = chip_info(ctx, str(chip["name"]))
        pkg = getattr(info, "kernels_package_chip", None)
        if pkg:
            return str(pkg)
    families = ctx.matrix.families if ctx.matrix is not None else None
    if isinstance(families, dict):
        for chip in found:
            fam = families.get(str(chip.get("family") or ""))
            pkg = getattr(fam, "package_chip", None)
            if pkg:
                return str(pkg)
    return None


def kernels_file(cann: str, chip: Optional[str], arch: Optional[str]) -> str:
    """The official file name of the kernels/ops package (REPORT.md §5).

    ``< 8.0.RC3``: ``Ascend-cann-kernels-{chip}_{ver}_linux.run``; ``8.0.RC3``-``8.3``:
    ``Ascend-cann-kernels-{chip}_{ver}_linux-{arch}.run`` (A3: ``Atlas-A3-cann-kernels_…``);
    ``>= 8.5``: ``Ascend-cann-{chip}-ops_{ver}_linux-{arch}.run``.
    """
    chip = chip or "<chip: 910b|910|310p|A3>"
    arch = arch or "$(uname -m)"
    mm = major_minor(cann) or (0, 0)
    if mm >= (8, 5):
        return f"Ascend-cann-{'A3' if chip.lower() == 'a3' else chip}-ops_{cann}_linux-{arch}.run"
    if chip.lower() == "a3":
        return f"Atlas-A3-cann-kernels_{cann}_linux-{arch}.run"
    old = mm < (8, 0) or (mm == (8, 0) and re.match(r"^8\.0\.rc[12]\b", cann.lower()) is not None)
    if old:
        return f"Ascend-cann-kernels-{chip}_{cann}_linux.run"
    return f"Ascend-cann-kernels-{chip}_{cann}_linux-{arch}.run"


def toolkit_file(cann: str, arch: Optional[str]) -> str:
    return f"Ascend-cann-toolkit_{cann}_linux-{arch or '$(uname -m)'}.run"


def nnal_file(cann: str, arch: Optional[str]) -> str:
    return f"Ascend-cann-nnal_{cann}_linux-{arch or '$(uname -m)'}.run"


def set_env_path(toolkit: Optional[Dict[str, Any]], cann: Optional[str] = None) -> Optional[str]:
    """The set_env.sh to source: the one the cann probe found next to a toolkit record
    (``None`` when that toolkit has none), or, for a fresh install of ``cann``, where
    the installer puts it (``/usr/local/Ascend/cann/set_env.sh`` from 8.5, else
    ``/usr/local/Ascend/ascend-toolkit/set_env.sh``)."""
    if toolkit is not None:
        return str(toolkit["set_env"]) if toolkit.get("set_env") else None
    if (major_minor(cann) or (0, 0)) >= (8, 5):
        return "/usr/local/Ascend/cann/set_env.sh"
    return "/usr/local/Ascend/ascend-toolkit/set_env.sh"


def source_cmd(toolkit: Optional[Dict[str, Any]], cann: Optional[str] = None) -> str:
    """The shell line that applies a toolkit's environment: ``source <set_env.sh>``
    when that script exists, else ``export ASCEND_TOOLKIT_HOME=<toolkit> && eval
    "$(npudoctor env)"`` (npudoctor computes the variables the script would set for the
    toolkit that variable names) -- never a script that is not there."""
    script = set_env_path(toolkit, cann)
    if script:
        return f"source {script}"
    where = (toolkit or {}).get("path")
    if not where:
        return 'eval "$(npudoctor env)"  # npudoctor computes what set_env.sh would set'
    # `npudoctor env` applies the toolkit ASCEND_TOOLKIT_HOME names (the cann probe selects it).
    return (
        f'export ASCEND_TOOLKIT_HOME={where} && eval "$(npudoctor env)"'
        "  # no set_env.sh next to this toolkit: npudoctor computes what it would set"
    )


def run_cmd(file: str) -> str:
    return f"chmod +x {file} && ./{file} --install"


def not_in_matrix_line(what: str) -> str:
    """The "refresh the matrix" fix line, in the matrix area's wording."""
    from npudoctor.rules.matrix import refresh_hint

    return refresh_hint(what)


def _versions_disagree(tk: Dict[str, Any]) -> List[str]:
    seen = tk.get("versions") or {}
    values = {str(v).lower() for v in seen.values()}
    if len(values) <= 1:
        return []
    return [f"{v} in {p}" for p, v in seen.items()]


def _toolkit_line(tk: Dict[str, Any]) -> str:
    via = tk.get("found_via")
    how = f" (via {via})" if via and via != tk.get("path") else ""
    return f"CANN {tk.get('version') or '(unknown version)'} at {tk.get('path')}{how}, read from {tk.get('source')}"


# --------------------------------------------------------------------------- rules


@rule
def no_cann(ctx: Any) -> Iterable[Finding]:
    """CANN001: no toolkit at all (error with torch_npu installed, info otherwise)."""
    cann = ctx.facts("cann")
    if "toolkits" not in cann or cann.get("toolkits"):
        return
    if not npu_stack_present(ctx.snapshot):
        return  # HOST050 says it calmly
    tnpu = torch_npu_record(ctx)
    arch = host_arch(ctx)
    searched = cann.get("searched") or []
    evidence = ["no CANN toolkit found; looked in: " + ", ".join(str(s) for s in searched[:10])]
    env = cann.get("env") or {}
    for var in ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH"):
        fact = env.get(var)
        if fact:
            evidence.append(f"{var}={fact.get('value')} ({'exists' if fact.get('exists') else 'no such directory'})")
    frameworks = [
        f"{name} {rec.get('version')}"
        for name in ("vllm-ascend", "mindie", "mindie-turbo")
        for rec in ((ctx.facts("packages").get("installed") or {}).get(name) or [])[:1]
    ]
    if tnpu is None and frameworks:
        yield NO_CANN.finding(
            title=f"{', '.join(frameworks)} is installed, but no CANN toolkit (and no torch_npu) is",
            evidence=evidence + [f"{f} runs on torch_npu and CANN" for f in frameworks],
            fix=[
                "Install the torch_npu build the framework needs first (see PKG004), then the CANN it is paired "
                "with: npudoctor matrix show --torch-npu <that version>",
                "then the CANN toolkit, kernels/ops and NNAL packages of that release, and " + source_cmd(None, None),
            ],
        )
        return
    if tnpu is None:
        yield NO_CANN.finding(
            title="No CANN toolkit installed (no torch_npu either; fine on a host that runs CANN in containers)",
            evidence=evidence,
            severity="info",
        )
        return
    tver = str(tnpu.get("version") or "")
    evidence.insert(0, f"torch_npu {tver} installed in {tnpu.get('location')}")
    cann_ver = None
    matrix = ctx.matrix
    if matrix is not None:
        try:
            row = matrix.find_torch_npu(tver)
        except Exception:
            row = None
        if row is not None and getattr(row, "cann", None):
            cann_ver = str(row.cann[0])
            evidence.append(f"torch_npu {tver} is paired with CANN {cann_ver} ({getattr(row, 'source', 'matrix')})")
    ver = cann_ver or "<CANN version paired with your torch_npu: npudoctor matrix>"
    chip = package_chip(ctx)
    fix = [
        run_cmd(toolkit_file(ver, arch)),
        run_cmd(kernels_file(ver, chip, arch)),
        source_cmd(None, cann_ver),
    ]
    if _nnal_needed(ctx)[0]:
        fix.append(run_cmd(nnal_file(ver, arch)))
        fix.append("source /usr/local/Ascend/nnal/atb/set_env.sh")
    yield NO_CANN.finding(
        title=f"torch_npu {tver} is installed but no CANN toolkit is"
        + (f" (it needs CANN {cann_ver})" if cann_ver else ""),
        evidence=evidence,
        fix=fix,
        data={"torch_npu": tver, "cann": cann_ver},
    )


@rule
def unreadable_files(ctx: Any) -> Iterable[Finding]:
    """CANN010: version files that could not be read or parsed."""
    cann = ctx.facts("cann")
    for tk in cann.get("toolkits") or []:
        errors = tk.get("errors") or []
        if not errors:
            continue
        severe = tk.get("version") is None
        evidence = [f"{e.get('path')}: {e.get('error')}" for e in errors]
        if tk.get("version"):
            evidence.append(f"version {tk['version']} taken from {tk.get('source')}")
        yield UNREADABLE.finding(
            title=(
                f"The CANN version at {tk.get('path')} cannot be read"
                if severe
                else f"Some CANN version files at {tk.get('path')} cannot be read"
            ),
            evidence=evidence,
            fix=[f"ls -l {errors[0].get('path')}", "reinstall the damaged package if the file is truncated or garbled"],
            severity="warning" if severe else "info",
            subject=str(tk.get("path")),
        )
    for rec in cann.get("nnal_all") or []:
        for err in rec.get("errors") or []:
            yield UNREADABLE.finding(
                title=f"The NNAL version file at {err.get('path')} cannot be read",
                evidence=[f"{err.get('path')}: {err.get('error')}"],
                fix=[f"ls -l {err.get('path')}"],
                severity="warning",
                subject=str(err.get("path")),
            )


@rule
def arch_mismatch(ctx: Any) -> Iterable[Finding]:
    """CANN011: toolkit arch differs from the machine's."""
    arch = ctx.facts("host").get("arch")
    tk = ctx.facts("cann").get("selected")
    if not tk or arch not in ("aarch64", "x86_64") or tk.get("arch") not in ("aarch64", "x86_64"):
        return
    if tk["arch"] == arch:
        return
    ver = tk.get("version") or "<version>"
    yield ARCH_MISMATCH.finding(
        title=f"CANN {ver} at {tk.get('path')} is built for {tk['arch']}, this machine is {arch}",
        evidence=[_toolkit_line(tk), f"machine architecture {arch} ({ctx.facts('host').get('arch_source')})"],
        fix=[run_cmd(toolkit_file(ver, arch))],
    )


@rule
def older_selected(ctx: Any) -> Iterable[Finding]:
    """CANN002: several installs and the selected one is not the newest."""
    cann = ctx.facts("cann")
    toolkits = [t for t in cann.get("toolkits") or [] if t.get("version")]
    selected = cann.get("selected")
    if not selected or len(toolkits) < 2 or not selected.get("version"):
        return
    newer = [t for t in toolkits if cann_less(selected["version"], t["version"]) is True]
    if not newer:
        return
    newest = newer[0]
    for t in newer[1:]:
        if cann_less(newest["version"], t["version"]) is True:
            newest = t
    evidence = [
        f"in use ({cann.get('selected_via')}): " + _toolkit_line(selected),
        "newest on disk: " + _toolkit_line(newest),
    ]
    evidence += ["also installed: " + _toolkit_line(t) for t in toolkits if t not in (selected, newest)]
    severity = "warning"
    tnpu = torch_npu_record(ctx)
    if tnpu and ctx.matrix is not None:
        fit_sel = _fit(ctx, str(tnpu.get("version")), selected["version"])
        fit_new = _fit(ctx, str(tnpu.get("version")), newest["version"])
        if fit_sel in ("paired", "compatible") and fit_new not in ("paired", "compatible"):
            severity = "info"
            evidence.append(
                f"torch_npu {tnpu.get('version')} is {fit_sel} with CANN {selected['version']} "
                f"but {fit_new} with {newest['version']}: keeping the older one is right"
            )
    yield OLDER_SELECTED.finding(
        title=f"CANN {selected['version']} is in use but CANN {newest['version']} is also installed",
        evidence=evidence,
        fix=[source_cmd(newest)],
        severity=severity,
        data={"selected": selected["version"], "newest": newest["version"]},
    )


def _fit(ctx: Any, torch_npu: str, cann: str) -> str:
    matrix = ctx.matrix
    try:
        row = matrix.find_torch_npu(torch_npu)
        if row is None:
            return "unknown"
        return str(matrix.cann_fit(row, cann))
    except Exception:
        return "unknown"


@rule
def torch_npu_cann(ctx: Any) -> Iterable[Finding]:
    """CANN003: torch_npu vs the selected CANN via the matrix (K05)."""
    tk = ctx.facts("cann").get("selected")
    tnpu = torch_npu_record(ctx)
    matrix = ctx.matrix
    if not tk or not tk.get("version") or tnpu is None or matrix is None:
        return
    tver = str(tnpu.get("version") or "")
    cver = str(tk["version"])
    if not tver:
        return
    try:
        row = matrix.find_torch_npu(tver)
    except Exception:
        row = None
    evidence = [
        f"torch_npu {tver} from {tnpu.get('dist_info') or tnpu.get('location')}",
        _toolkit_line(tk),
    ]
    if row is None:
        yield TORCH_NPU_CANN.finding(
            title=f"torch_npu {tver} is not in the compatibility matrix; its CANN pairing is unknown",
            evidence=evidence,
            fix=[not_in_matrix_line(f"torch_npu {tver}")],
            severity="warning",
            subject="torch_npu",
        )
        return
    try:
        fit = str(matrix.cann_fit(row, cver))
    except Exception:
        fit = "unknown"
    paired = [str(c) for c in getattr(row, "cann", []) or []]
    compatible = [str(c) for c in getattr(row, "cann_compatible", []) or []]
    evidence.append(
        f"matrix: torch_npu {tver} paired with CANN {', '.join(paired) or '?'}"
        + (f"; compatible: {', '.join(compatible)}" if compatible else "")
        + f" ({getattr(row, 'source', 'matrix')})"
    )
    if fit in ("paired", "compatible"):
        return
    if fit == "unknown":
        yield TORCH_NPU_CANN.finding(
            title=f"CANN {cver} is not in the matrix for torch_npu {tver}; pairing unknown",
            evidence=evidence,
            fix=[not_in_matrix_line(f"CANN {cver}")],
            severity="warning",
            subject="torch_npu",
        )
        return
    plan = cann_plan(ctx)
    fix = _cann003_fix(ctx, plan) if plan else []
    yield TORCH_NPU_CANN.finding(
        title=f"torch_npu {tver} does not work with CANN {cver}"
        + (f" (it is paired with CANN {paired[0]})" if paired else ""),
        evidence=evidence,
        fix=fix,
        subject="torch_npu",
        data={
            "torch_npu": tver,
            "cann": cver,
            "fit": fit,
            "paired": paired,
            "keep_cann": (plan or {}).get("keep_cann"),
            "move_to_cann": (plan or {}).get("move_to"),
        },
    )


def _python_tag(ctx: Any) -> Tuple[Optional[str], Optional[str]]:
    """``(python "3.10", platform "aarch64"|"x86_64")`` of the target interpreter, each
    ``None`` when unknown (the python facts first, the host arch as platform fallback)."""
    from npudoctor.rules._pyfacts import platform, python_short

    try:
        plat = platform(ctx)
    except Exception:
        plat = None
    try:
        py = python_short(ctx)
    except Exception:
        py = None
    return py, (plat if plat in ("aarch64", "x86_64") else host_arch(ctx))


def keep_cann_build(ctx: Any, cann: str) -> Optional[Tuple[Any, str]]:
    """The torch_npu build to install to keep CANN ``cann``: ``(row, fit)`` or ``None``.

    Candidates are the matrix rows that fit ``cann`` (``Matrix.fits``: paired or declared
    compatible, no pre-releases) and have a wheel for the target Python/platform.  Order
    of preference: a build for the installed torch paired with ``cann``, one declared
    compatible with it, then (torch must change too) the newest build paired with
    ``cann``, then the newest declared compatible.  Source: the bundled matrix
    (Ascend/pytorch COMPATIBILITY.md and release notes)."""
    matrix = ctx.matrix
    if matrix is None:
        return None
    py, plat = _python_tag(ctx)
    try:
        rows = list(matrix.fits(python=py, platform=plat, cann=cann))
    except Exception:
        return None
    rel = getattr(parse_cann(cann), "release", None)
    if rel and rel != cann:
        # a beta/alpha of a release (9.0.0-beta.2) is served best by the build paired with
        # that release (2.7.1.post4 for 9.0.0: triton-ascend#328), not the newest "9.0.X" one
        try:
            extra = [r for r in matrix.fits(python=py, platform=plat, cann=rel) if r not in rows]
        except Exception:
            extra = []
        rows = sorted(rows + extra, key=lambda r: rows.index(r) if r in rows else len(rows))
    torch = _installed(ctx, "torch")
    tv = str(torch[0].get("version") or "").split("+")[0] if torch else ""
    want = _pep440_release(tv)
    ranked: List[Tuple[int, int, Any, str]] = []
    for i, row in enumerate(rows):  # newest first
        try:
            fit = str(matrix.cann_fit(row, cann))
            if rel and rel != cann and str(matrix.cann_fit(row, rel)) == "paired":
                fit = "paired"  # paired with the release this pre-release belongs to
            paired = fit == "paired"
        except Exception:
            continue
        same_torch = want is not None and _pep440_release(str(getattr(row, "torch", ""))) == want
        rank = (0 if same_torch else 2) + (0 if paired else 1)
        ranked.append((rank, i, row, fit))
    if not ranked:
        return None
    _rank, _i, row, fit = min(ranked, key=lambda t: (t[0], t[1]))
    return row, fit


def _pep440_release(text: str) -> Optional[Tuple[int, ...]]:
    m = re.match(r"^\s*(\d+(?:\.\d+)*)", text or "")
    if not m:
        return None
    parts = [int(x) for x in m.group(1).split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def cann_plan(ctx: Any) -> Optional[Dict[str, Any]]:
    """The two ways out of a torch_npu/CANN mismatch (CANN003), shared with the driver
    rules so that their wording agrees.  ``None`` when the installed torch_npu fits the
    selected CANN (or either is unknown).  Otherwise::

        {"torch_npu": "2.10.0", "cann": "8.0.0",          # installed pair
         "keep_cann": {"torch_npu": "2.4.0.post2", "torch": "2.4.0", "fit": "paired",
                       "torch_changes": True} | None,       # option A (preferred)
         "move_to": "9.0.0" | None}                         # option B: torch_npu's CANN

    Source: the matrix (``find_torch_npu``, ``cann_fit``, ``fits``)."""
    tk = ctx.facts("cann").get("selected")
    tnpu = torch_npu_record(ctx)
    matrix = ctx.matrix
    if not tk or not tk.get("version") or tnpu is None or matrix is None:
        return None
    tver = str(tnpu.get("version") or "")
    cver = str(tk["version"])
    try:
        row = matrix.find_torch_npu(tver)
        fit = str(matrix.cann_fit(row, cver)) if row is not None else "unknown"
    except Exception:
        return None
    if row is None or fit != "incompatible":
        return None
    keep = keep_cann_build(ctx, cver)
    keep_info = None
    if keep is not None:
        krow, kfit = keep
        torch = _installed(ctx, "torch")
        tv = str(torch[0].get("version") or "").split("+")[0] if torch else ""
        keep_info = {
            "torch_npu": str(krow.torch_npu),
            "torch": str(krow.torch),
            "fit": kfit,
            "torch_changes": _pep440_release(tv) != _pep440_release(str(krow.torch)),
        }
    paired = [str(c) for c in getattr(row, "cann", []) or []]
    return {"torch_npu": tver, "cann": cver, "keep_cann": keep_info, "move_to": paired[0] if paired else None}


def _hdk_for(ctx: Any, cann: str) -> Optional[str]:
    """The Ascend HDK the matrix pairs with ``cann`` (else its minimum), or ``None``."""
    matrix = ctx.matrix
    try:
        req = matrix.driver_requirement(cann) if matrix is not None else None
    except Exception:
        req = None
    if req is None:
        return None
    paired = list(getattr(req, "paired", None) or [])
    return str(paired[0]) if paired else (str(req.minimum) if getattr(req, "minimum", None) else None)


def _installed_driver(ctx: Any) -> Optional[str]:
    drv = ctx.facts("driver").get("driver") or {}
    if isinstance(drv, dict) and drv.get("version"):
        return str(drv["version"])
    smi = ctx.facts("devices").get("npu_smi") or {}
    if isinstance(smi, dict) and smi.get("driver_version"):
        return str(smi["driver_version"])
    return None


def _driver_fit(ctx: Any, cann: str, driver: str) -> Optional[str]:
    """``matrix.driver_fit(cann, driver)`` or ``None`` (no matrix, error)."""
    matrix = ctx.matrix
    if matrix is None:
        return None
    try:
        return str(matrix.driver_fit(cann, driver))
    except Exception:
        return None


def _cann003_fix(ctx: Any, plan: Dict[str, Any]) -> List[str]:
    """Fix lines of CANN003: option A (keep the CANN, change torch_npu; preferred when a
    build exists), then option B (install the CANN torch_npu is paired with, and the
    driver that CANN needs).  Continuation lines are indented by two spaces."""
    from npudoctor.rules._pyfacts import CPU_INDEX, pip_install

    cver, tver = plan["cann"], plan["torch_npu"]
    keep, move = plan.get("keep_cann"), plan.get("move_to")
    out: List[str] = []
    if keep:
        what = f"torch_npu {keep['torch_npu']} is {'paired' if keep['fit'] == 'paired' else 'declared compatible'} with CANN {cver}"
        if keep["torch_changes"]:
            _py, plat = _python_tag(ctx)
            torch_req = f"torch=={keep['torch']}" + ("+cpu" if plat == "x86_64" else "")
            head = f"option A (preferred: keep CANN {cver}; {what} and built for torch {keep['torch']}): "
            if plat == "x86_64":
                out.append(head + pip_install(ctx, torch_req, index=CPU_INDEX))
                out.append("  " + pip_install(ctx, f"torch-npu=={keep['torch_npu']}"))
            else:
                out.append(head + pip_install(ctx, torch_req, f"torch-npu=={keep['torch_npu']}"))
        else:
            out.append(
                f"option A (preferred: keep CANN {cver} and your torch; {what}): "
                + pip_install(ctx, f"torch-npu=={keep['torch_npu']}")
            )
    driver = _installed_driver(ctx)
    if keep and driver and _driver_fit(ctx, cver, driver) in ("too-old", "incompatible"):
        hdk = _hdk_for(ctx, cver)
        out.append(
            f"  and upgrade the driver {driver}, which CANN {cver} does not support"
            + (f", to Ascend HDK {hdk}" if hdk else "")
            + " (DRV002)"
        )
    if move:
        arch = host_arch(ctx)
        head = (
            f"option B (install CANN {move}, the one torch_npu {tver} is paired with): "
            if keep
            else f"install CANN {move}, the one torch_npu {tver} is paired with (no torch_npu build for CANN {cver} in the matrix): "
        )
        out.append(head + run_cmd(toolkit_file(move, arch)))
        out.append("  " + run_cmd(kernels_file(move, package_chip(ctx), arch)))
        out.append("  " + source_cmd(None, move))
        hdk = _hdk_for(ctx, move)
        fit = _driver_fit(ctx, move, driver) if driver else None
        if driver and fit in ("paired", "compatible"):
            out.append(f"  the installed driver {driver} already fits CANN {move}")
        elif hdk:
            out.append(
                f"  and the NPU driver + firmware of Ascend HDK {hdk}, which CANN {move} needs"
                + (f" (driver {driver} does not fit it)" if driver and fit in ("too-old", "incompatible") else "")
                + "; then reboot"
            )
    return out


def _selected_kernels(ctx: Any) -> Tuple[Optional[Dict[str, Any]], Dict[str, Any]]:
    tk = ctx.facts("cann").get("selected")
    return tk, (tk or {}).get("kernels") or {}


@rule
def kernels_for_chip(ctx: Any) -> Iterable[Finding]:
    """CANN004/CANN005: kernels for the chips of this machine (K12)."""
    tk, kernels = _selected_kernels(ctx)
    if not tk:
        return
    ver = tk.get("version") or "<toolkit version>"
    arch = host_arch(ctx) or tk.get("arch")
    present = sorted(set(kernels.get("socs") or []) | set(kernels.get("configs") or []))
    kdir = f"{tk.get('opp_path') or str(tk.get('path')) + '/opp'}/built-in/op_impl/ai_core/tbe/kernel"
    wanted: Dict[str, List[str]] = {}
    pkg_chip: Dict[str, Optional[str]] = {}
    for chip in chips(ctx):
        info = chip_info(ctx, str(chip["name"]))
        kd = getattr(info, "kernels_dir", None)
        if kd:
            wanted.setdefault(str(kd), []).append(str(chip["name"]))
            pkg_chip[str(kd)] = getattr(info, "kernels_package_chip", None)
    set_env = source_cmd(tk)
    if not wanted:
        if not present and chips(ctx) == [] and torch_npu_record(ctx) is not None:
            yield KERNELS_MISSING.finding(
                title=f"No CANN kernels package is installed in CANN {ver} at {tk.get('path')}",
                evidence=[
                    _toolkit_line(tk),
                    f"{kdir}/ holds no SoC directory",
                    "no NPU chip listed (npu-smi), so the chip is unknown",
                ],
                fix=[set_env, run_cmd(kernels_file(ver, None, arch))],
                severity="warning",
            )
        return
    for soc_dir, names in sorted(wanted.items()):
        if soc_dir in present:
            continue
        chip_names = ", ".join(sorted(set(names)))
        evidence = [
            _toolkit_line(tk),
            f"NPU chip(s) {chip_names} need kernels in {kdir}/{soc_dir}/ and {kdir}/config/{soc_dir}/binary_info_config.json",
            f"present: {', '.join(present) if present else 'none'}",
        ]
        fix = [set_env, run_cmd(kernels_file(ver, pkg_chip.get(soc_dir), arch))]
        if present:
            yield KERNELS_OTHER_SOC.finding(
                title=f"CANN kernels are installed for {', '.join(present)} only; this machine's {chip_names} needs {soc_dir}",
                evidence=evidence,
                fix=fix,
                subject=soc_dir,
            )
        else:
            yield KERNELS_MISSING.finding(
                title=f"No CANN kernels for {chip_names} ({soc_dir}) in CANN {ver}",
                evidence=evidence,
                fix=fix,
                subject=soc_dir,
            )


@rule
def kernels_version(ctx: Any) -> Iterable[Finding]:
    """CANN006: kernels package version differs from the toolkit's."""
    tk, kernels = _selected_kernels(ctx)
    if not tk or not tk.get("version") or not kernels.get("version"):
        return
    same = same_release(tk["version"], kernels["version"])
    if same is not False:
        return
    ver = str(tk["version"])
    ops_era = (major_minor(ver) or (0, 0)) >= (8, 5) and (major_minor(kernels["version"]) or (0, 0)) >= (8, 5)
    yield KERNELS_VERSION.finding(
        title=f"Kernels package {kernels['version']} does not match CANN toolkit {ver}",
        evidence=[_toolkit_line(tk), f"kernels {kernels['version']} from {kernels.get('source')}"],
        fix=[
            source_cmd(tk),
            run_cmd(kernels_file(ver, package_chip(ctx), host_arch(ctx) or tk.get("arch"))),
        ],
        severity="warning" if ops_era else "error",
    )


def _nnal_needed(ctx: Any) -> Tuple[bool, List[str]]:
    reasons: List[str] = []
    for name in _NEEDS_NNAL:
        for rec in _installed(ctx, name):
            reasons.append(f"{rec.get('name') or name} {rec.get('version')} is installed (it links NNAL's libatb.so)")
    cann = ctx.facts("cann")
    env = (cann.get("env") or {}).get("ATB_HOME_PATH")
    if env and env.get("value"):
        reasons.append(f"ATB_HOME_PATH={env['value']} is set")
    if cann.get("mindie"):
        reasons.append(f"MindIE {cann['mindie'].get('version')} is installed at {cann['mindie'].get('path')}")
    return bool(reasons), reasons


@rule
def nnal_missing(ctx: Any) -> Iterable[Finding]:
    """CANN007: NNAL needed (vllm-ascend, MindIE, ATB_HOME_PATH) but not installed (K11)."""
    cann = ctx.facts("cann")
    if "nnal_all" not in cann or cann.get("nnal_all"):
        return
    needed, reasons = _nnal_needed(ctx)
    if not needed:
        return
    tk = cann.get("selected")
    ver = (tk or {}).get("version") or "<CANN toolkit version>"
    arch = host_arch(ctx) or (tk or {}).get("arch")
    evidence = reasons + [
        "no NNAL found: looked for nnal/atb/latest/version.info under /usr/local/Ascend, ~/Ascend, /home/*/Ascend"
    ]
    env = (cann.get("env") or {}).get("ATB_HOME_PATH")
    if env and env.get("value") and not env.get("exists"):
        evidence.append(f"ATB_HOME_PATH={env['value']} does not exist")
    fix = []
    if tk:
        fix.append(source_cmd(tk))
    fix += [run_cmd(nnal_file(ver, arch)), "source /usr/local/Ascend/nnal/atb/set_env.sh"]
    yield NNAL_MISSING.finding(
        title=f"NNAL (ATB) is not installed, but it is needed: {reasons[0]}",
        evidence=evidence,
        fix=fix,
    )


@rule
def nnal_version(ctx: Any) -> Iterable[Finding]:
    """CANN008: NNAL version differs from the toolkit's (K04)."""
    cann = ctx.facts("cann")
    tk = cann.get("selected")
    nnal = cann.get("nnal")
    if not tk or not nnal or not tk.get("version") or not nnal.get("version"):
        return
    if same_release(tk["version"], nnal["version"]) is not False:
        return
    ver = str(tk["version"])
    arch = host_arch(ctx) or tk.get("arch")
    yield NNAL_VERSION.finding(
        title=f"NNAL {nnal['version']} does not match CANN toolkit {ver}",
        evidence=[_toolkit_line(tk), f"NNAL/ATB {nnal.get('build') or nnal['version']} from {nnal.get('source')}"],
        fix=[
            source_cmd(tk),
            run_cmd(nnal_file(ver, arch)),
            "source /usr/local/Ascend/nnal/atb/set_env.sh",
        ],
    )


def _torch_cxx11_abi(ctx: Any) -> Optional[bool]:
    libs = ctx.facts("libraries")
    for key in ("torch_cxx11_abi", "torch_cxx_abi"):
        value = libs.get(key)
        if isinstance(value, bool):
            return value
        if isinstance(value, dict) and isinstance(value.get("value"), bool):
            return bool(value["value"])
        if value in (0, 1):
            return bool(value)
    return None


@rule
def atb_abi(ctx: Any) -> Iterable[Finding]:
    """CANN009: ATB_HOME_PATH names a missing dir, or the other C++ ABI than torch (K11)."""
    cann = ctx.facts("cann")
    env = (cann.get("env") or {}).get("ATB_HOME_PATH")
    if not env or not env.get("value"):
        return
    value = str(env["value"]).rstrip("/")
    m = re.search(r"cxx_abi_([01])$", value)
    abi = int(m.group(1)) if m else None
    fix = ["source /usr/local/Ascend/nnal/atb/set_env.sh  # after torch is installed, in a fresh shell"]
    if not env.get("exists"):
        nnal = cann.get("nnal") or {}
        yield ATB_ABI.finding(
            title=f"ATB_HOME_PATH={value} does not exist",
            evidence=[f"ATB_HOME_PATH={value}: no such directory"]
            + (
                [
                    f"NNAL {nnal.get('version')} at {nnal.get('path')} has {', '.join(nnal.get('abi_dirs') or []) or 'no cxx_abi_* directory'}"
                ]
                if nnal
                else []
            ),
            fix=fix,
        )
        return
    torch_abi = _torch_cxx11_abi(ctx)
    if abi is None or torch_abi is None or bool(abi) == torch_abi:
        return
    want = 1 if torch_abi else 0
    yield ATB_ABI.finding(
        title=f"ATB_HOME_PATH uses cxx_abi_{abi} but torch is built with the {'C++11' if torch_abi else 'old'} ABI (needs cxx_abi_{want})",
        evidence=[f"ATB_HOME_PATH={value}", f"torch compiled with _GLIBCXX_USE_CXX11_ABI={want} (libraries facts)"],
        fix=fix + [f"or: source /usr/local/Ascend/nnal/atb/set_env.sh --cxx_abi={want}"],
    )


def _frameworks_installed(ctx: Any) -> List[Tuple[str, str, str, str]]:
    """``(project, label, version, where)`` of each framework release found: vllm-ascend
    from its dist-info, MindIE and ATB models from their version.info (cann facts)."""
    out: List[Tuple[str, str, str, str]] = []
    for rec in _installed(ctx, "vllm-ascend", "vllm_ascend")[:1]:
        if rec.get("version"):
            where = str(rec.get("dist_info") or rec.get("location") or "")
            out.append(("vllm-ascend", "vllm-ascend", str(rec["version"]), where))
    cann = ctx.facts("cann")
    for key, project, label in (("mindie", "mindie", "MindIE"), ("atb_models", "atb-models", "MindIE ATB models")):
        fact = cann.get(key)
        if isinstance(fact, dict) and fact.get("version"):
            out.append((project, label, str(fact["version"]), str(fact.get("source") or fact.get("path") or "")))
    return out


def _framework_for_cann(project: str, cann: str) -> Optional[str]:
    """The newest release of ``project`` in the built-in table whose documented CANN is
    ``cann`` or older (a release made for the CANN in use), as an installable version."""
    from npudoctor.rules._frameworks import TABLE

    best = None
    for row in TABLE:
        if row.project != project or not row.cann_min or cann_less(cann, row.cann_min) is not False:
            continue
        spec = row.versions[0]
        m = re.search(r"(?:==|>=)\s*([0-9][0-9A-Za-z.]*)", spec)
        if m:
            best = m.group(1)  # rows are oldest first: the last fitting one is the newest
    return best


@rule
def framework_cann(ctx: Any) -> Iterable[Finding]:
    """CANN012: vllm-ascend / MindIE release older CANN than it documents (K05)."""
    from npudoctor.rules._frameworks import rows_for

    tk = ctx.facts("cann").get("selected")
    if not isinstance(tk, dict) or not tk.get("version"):
        return
    cv = str(tk["version"])
    have = parse_cann(cv)
    if have is None:
        return
    arch = host_arch(ctx)
    for project, label, version, where in _frameworks_installed(ctx):
        rows = rows_for(project, version)
        if not rows or not rows[0].cann_min:
            continue
        row = rows[0]
        need = str(row.cann_min)
        # a beta/alpha of the documented release counts as it (8.0.0.beta1 for ">= 8.0.0")
        if cann_less(getattr(have, "release", cv), need) is not True:
            continue
        fix = [
            run_cmd(toolkit_file(need, arch)),
            run_cmd(kernels_file(need, package_chip(ctx), arch)),
            run_cmd(nnal_file(need, arch)),
            source_cmd(None, need),
            f"source /usr/local/Ascend/nnal/atb/set_env.sh  # CANN {need} for {label} {version}",
        ]
        older = _framework_for_cann(project, cv) if project == "vllm-ascend" else None
        if older:
            fix.append(
                f"or keep CANN {cv} and install vllm-ascend {older} (made for it): "
                f"pip install vllm=={older.split('rc')[0]}  # vllm first, then: pip install vllm-ascend=={older}"
            )
        yield FRAMEWORK_CANN.finding(
            title=f"{label} {version} needs CANN {need} or newer, but CANN {cv} is in use",
            evidence=[
                f"{label} {version} from {where}",
                _toolkit_line(tk),
                f"{label} {version} documents CANN {need} (built-in table: {row.source})",
            ],
            fix=fix,
            subject=f"{project}:cann",
        )
