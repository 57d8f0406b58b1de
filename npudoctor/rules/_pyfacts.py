"""Helpers shared by the python, packages and host-hygiene rules (not a rule module:
the leading underscore keeps it out of rule discovery).

They read the ``python``, ``packages``, ``host`` and ``cann`` sections defensively
(a missing section or key is normal) and wrap matrix queries so that a matrix without a
method, or one that raises, counts as "the matrix does not know".
"""

from __future__ import annotations

import re
import shlex
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from npudoctor.parsers.metadata import canonical_name, marker_environment
from npudoctor.remedies import Interpreter, PipInstall, PipUninstall

if TYPE_CHECKING:
    from npudoctor.knowledge.matrix import TorchNpuRow

#: Where the CPU builds of torch/torchvision/torchaudio live (the x86_64 torch_npu wheels
#: pin ``torch==X+cpu``; REPORT §2 and the torch_npu README install lines).
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def section(ctx: Any, name: str) -> Dict[str, Any]:
    """One facts section (``RuleContext.facts`` already gives ``{}`` when absent or not
    an object)."""
    return ctx.facts(name)


def records(ctx: Any, name: str) -> List[Dict[str, Any]]:
    """Records of project ``name`` (any spelling) in import order."""
    installed = section(ctx, "packages").get("installed") or {}
    if not isinstance(installed, dict):
        return []
    want = canonical_name(name)
    out: List[Dict[str, Any]] = []
    for key, recs in installed.items():
        if canonical_name(str(key)) == want and isinstance(recs, list):
            out.extend(r for r in recs if isinstance(r, dict))
    return out


def first(ctx: Any, name: str) -> Optional[Dict[str, Any]]:
    """The record ``import``/``importlib.metadata`` would see, or ``None``."""
    recs = records(ctx, name)
    return recs[0] if recs else None


def all_records(ctx: Any) -> List[Dict[str, Any]]:
    """The effective (first) record of every installed project."""
    installed = section(ctx, "packages").get("installed") or {}
    out = []
    if isinstance(installed, dict):
        for recs in installed.values():
            if isinstance(recs, list) and recs and isinstance(recs[0], dict):
                out.append(recs[0])
    return out


def metadata_source(rec: Dict[str, Any]) -> str:
    """``…/torch_npu-2.1.0.dist-info/METADATA`` (the file a version came from)."""
    if rec.get("metadata"):
        return str(rec["metadata"])
    path = str(rec.get("dist_info") or rec.get("location") or "?")
    return f"{path}/PKG-INFO" if rec.get("kind") == "egg-info" else f"{path}/METADATA"


def describe(rec: Dict[str, Any]) -> str:
    """``torch_npu 2.1.0.post10 (…/METADATA)`` for evidence."""
    return f"{rec.get('name')} {rec.get('version')} ({metadata_source(rec)})"


def python_path(ctx: Any) -> str:
    """The interpreter every fix names (a path as on the diagnosed machine, unquoted):
    one helper for all rules, so PKG001..PKG007 and PY00x never disagree.

    ``facts["python"]["executable"]`` (the live/``--python`` interpreter, or the one found
    under ``--root``: ``/usr/local/python3.10.14/bin/python3.10``, ``<venv>/bin/python3.10``),
    else ``--python`` as given, else (``--root`` trees that leave the binary out) the
    interpreter every such prefix has: ``<prefix>/bin/python`` of a venv or conda env
    (``python -m venv`` and conda's python package create it),
    ``<prefix>/bin/pythonX.Y`` of any other prefix whose ``lib/pythonX.Y`` was found
    (CPython's install creates it: ``/usr/local/python3.11.13/bin/python3.11``) --
    ``/usr/bin/pythonX.Y`` for Debian's ``dist-packages`` under /usr or /usr/local --, else
    ``python3`` (the interpreter is unknown).
    """
    py = section(ctx, "python")
    exe = py.get("executable") or py.get("requested")
    prefix = str(py.get("prefix") or "").rstrip("/")
    if not exe and prefix:
        short = python_short(ctx)
        dist_packages = any(str(d).endswith("/dist-packages") for d in py.get("site_packages") or [])
        if py.get("is_venv") or py.get("conda_prefix"):
            exe = prefix + "/bin/python"
        elif short and prefix in ("/usr", "/usr/local") and dist_packages:
            exe = f"/usr/bin/python{short}"  # Debian/Ubuntu: /usr/local/lib/pythonX.Y/dist-packages is /usr/bin's
        elif short:
            exe = f"{prefix}/bin/python{short}"
    return str(exe or "python3")


def python_exe(ctx: Any) -> str:
    """:func:`python_path` as evidence shows it (quoted like the fix lines quote it)."""
    return shlex.quote(python_path(ctx))


def interpreter(ctx: Any, flags: Tuple[str, ...] = (), env: Tuple[Tuple[str, str], ...] = ()) -> Interpreter:
    """The target interpreter (:func:`python_path`) as a remedy's :class:`Interpreter`."""
    return Interpreter(python_path(ctx), flags=flags, env=env)


def base_interpreter(ctx: Any, flags: Tuple[str, ...] = (), env: Tuple[Tuple[str, str], ...] = ()) -> Interpreter:
    """The non-venv interpreter behind the target: the target itself when it is not a
    venv, else ``facts["python"]["base_executable"]`` or ``<base_prefix>/bin/pythonX.Y``.
    pip run by it treats the user site and the system site-packages as its own (pip run
    inside a venv refuses to uninstall outside the venv: "Not uninstalling … outside
    environment")."""
    py = section(ctx, "python")
    exe: Optional[str] = None
    if py.get("is_venv"):
        exe = py.get("base_executable")
        if not exe and py.get("base_prefix"):
            short = python_short(ctx)
            exe = str(py["base_prefix"]).rstrip("/") + "/bin/python" + (short or "3")
    return Interpreter(str(exe) if exe else python_path(ctx), flags=flags, env=env)


def pip_install(
    ctx: Any,
    *requirements: str,
    index: Optional[str] = None,
    options: Tuple[str, ...] = (),
    lead: str = "",
    note: str = "",
) -> PipInstall:
    """The remedy ``<python> -m pip install 'req' ... [--index-url index] [options]``
    for the target interpreter."""
    return PipInstall(interpreter(ctx), tuple(requirements), index_url=index, options=options, lead=lead, note=note)


def pip_uninstall(ctx: Any, *names: str) -> PipUninstall:
    """The remedy ``<python> -m pip uninstall -y name ...`` for the target interpreter."""
    return PipUninstall(interpreter(ctx), tuple(names))


def platform(ctx: Any) -> Optional[str]:
    """``aarch64`` | ``x86_64`` of the target interpreter (host arch as fallback)."""
    py = section(ctx, "python")
    machine = py.get("machine") or section(ctx, "host").get("arch")
    if machine in ("arm64",):
        return "aarch64"
    if machine in ("amd64", "AMD64"):
        return "x86_64"
    return str(machine) if machine else None


def python_short(ctx: Any) -> Optional[str]:
    """``"3.10"`` for the target interpreter, or ``None``."""
    info = section(ctx, "python").get("version_info") or []
    if isinstance(info, list) and len(info) >= 2 and all(isinstance(x, int) for x in info[:2]):
        return f"{info[0]}.{info[1]}"
    version = section(ctx, "python").get("version")
    m = re.match(r"^(\d+)\.(\d+)", str(version or ""))
    return f"{m.group(1)}.{m.group(2)}" if m else None


def marker_env(ctx: Any) -> Dict[str, str]:
    py = dict(section(ctx, "python"))
    py.setdefault("machine", platform(ctx))
    return marker_environment(py)


def cann_selected(ctx: Any) -> Optional[Dict[str, Any]]:
    """The CANN toolkit in use (``facts["cann"]["selected"]``) or ``None``."""
    sel = section(ctx, "cann").get("selected")
    return sel if isinstance(sel, dict) else None


def cann_version(ctx: Any) -> Optional[str]:
    sel = cann_selected(ctx)
    version = sel.get("version") if sel else None
    return str(version) if version else None


def cann_present(ctx: Any) -> bool:
    cann = section(ctx, "cann")
    return bool(cann.get("selected") or cann.get("toolkits"))


def matrix_call(ctx: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    """``ctx.matrix.<method>(*args)``; ``None`` when there is no matrix or the query
    raises (unknown versions must never crash a rule).  ``method`` is a method of
    :class:`npudoctor.knowledge.matrix.Matrix` (another name raises AttributeError)."""
    if ctx.matrix is None:
        return None
    func = getattr(ctx.matrix, method)
    try:
        return func(*args, **kwargs)
    except Exception:
        return None


def row_python(row: Optional[TorchNpuRow], plat: Optional[str]) -> List[str]:
    """Python versions with a PyPI wheel for ``plat`` in a matrix row (empty: no row, no
    platform, or none known)."""
    if row is None or not plat:
        return []
    return [str(v) for v in row.pythons(plat)]


def release(version: Optional[str]) -> Optional[tuple]:
    """``(2, 1, 0)`` of a PEP 440 version string (local/post parts dropped)."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(str(version)).release
    except (InvalidVersion, TypeError):
        return None


def local(version: Optional[str]) -> Optional[str]:
    from packaging.version import InvalidVersion, Version

    try:
        return Version(str(version)).local
    except (InvalidVersion, TypeError):
        return None


def not_in_matrix(ctx: Any, what: str, version: str, evidence: List[str]) -> List[Any]:
    """The "not in the matrix (refresh it)" finding of :func:`npudoctor.rules.matrix.not_in_matrix`
    (none when no matrix is loaded)."""
    from npudoctor.rules.matrix import not_in_matrix as matrix_not_in_matrix

    return list(matrix_not_in_matrix(ctx, what, version, evidence=evidence))


def python_sorted(versions: Any) -> List[str]:
    """``["3.8", "3.9", "3.10", "3.11"]``: Python versions in numeric order (``"3.10"``
    after ``"3.9"``), duplicates and unparseable entries dropped."""
    out = {}
    for v in versions or []:
        m = re.match(r"^(\d+)\.(\d+)$", str(v).strip())
        if m:
            out[(int(m.group(1)), int(m.group(2)))] = f"{m.group(1)}.{m.group(2)}"
    return [out[k] for k in sorted(out)]


def within_range(versions: List[str], spec_text: Optional[str]) -> List[str]:
    """The Python versions of ``versions`` inside a pip-style range (``">=3.7,<3.12"``,
    e.g. a CANN's supported Pythons from ``matrix.cann_python_range``); all of them when
    the range is unknown or unparseable, or when none would remain."""
    if not spec_text:
        return list(versions)
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        spec = SpecifierSet(str(spec_text))
    except InvalidSpecifier:
        return list(versions)
    kept = [v for v in versions if spec.contains(v + ".0", prereleases=True)]
    return kept or list(versions)


def best_torch_npu(ctx: Any, torch_version: Optional[str], python: Optional[str]) -> Optional[str]:
    """The torch_npu release to recommend for ``torch_version`` (any torch when ``None``)
    on ``python`` ("3.11"; any when ``None``) and this platform, from the compatibility
    matrix (``fits``): among the rows with a wheel, one officially paired with the
    installed CANN first, then one declared compatible with it, then the newest.
    ``None`` when the matrix has no such row."""
    rows = matrix_call(ctx, "fits", torch=torch_version or None, python=python, platform=platform(ctx))
    if not rows:
        return None
    from packaging.version import InvalidVersion, Version

    cann = cann_version(ctx) or ""
    rank = {"paired": 2, "compatible": 1}

    def key(row: Any) -> Any:
        fit = matrix_call(ctx, "cann_fit", row, cann) if cann else None
        try:
            version = Version(str(row.torch_npu))
        except InvalidVersion:
            version = Version("0")
        return (rank.get(str(fit), 0), version)

    return str(max(rows, key=key).torch_npu)
