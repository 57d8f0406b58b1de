"""Helpers shared by the python, packages and host-hygiene rules (not a rule module:
the leading underscore keeps it out of rule discovery).

They read the typed views (``ctx.view.python``, ``ctx.view.packages``, ``ctx.view.host``,
``ctx.view.cann``) and wrap matrix queries (:func:`ask`) so that a query that raises
counts as "the matrix does not know".
"""

from __future__ import annotations

import re
import shlex
from typing import TYPE_CHECKING, Callable, Dict, Iterable, List, Optional, Tuple, TypeVar

from npudoctor.context import RuleContext
from npudoctor.facts.system import Distribution
from npudoctor.findings import Finding
from npudoctor.parsers.metadata import marker_environment
from npudoctor.remedies import Interpreter, PipInstall, PipUninstall

if TYPE_CHECKING:
    from npudoctor.knowledge.matrix import Matrix, TorchNpuRow

T = TypeVar("T")

#: Where the CPU builds of torch/torchvision/torchaudio live (the x86_64 torch_npu wheels
#: pin ``torch==X+cpu``; REPORT §2 and the torch_npu README install lines).
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def describe(rec: Distribution) -> str:
    """``torch_npu 2.1.0.post10 (…/METADATA)`` for evidence."""
    return f"{rec.name} {rec.version} ({rec.metadata_source})"


def python_path(ctx: RuleContext) -> str:
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
    py = ctx.view.python
    exe = py.executable or py.requested
    prefix = (py.prefix or "").rstrip("/")
    if not exe and prefix:
        short = py.short
        dist_packages = any(d.endswith("/dist-packages") for d in py.site_packages)
        if py.is_venv or py.conda_prefix:
            exe = prefix + "/bin/python"
        elif short and prefix in ("/usr", "/usr/local") and dist_packages:
            exe = f"/usr/bin/python{short}"  # Debian/Ubuntu: /usr/local/lib/pythonX.Y/dist-packages is /usr/bin's
        elif short:
            exe = f"{prefix}/bin/python{short}"
    return exe or "python3"


def python_exe(ctx: RuleContext) -> str:
    """:func:`python_path` as evidence shows it (quoted like the fix lines quote it)."""
    return shlex.quote(python_path(ctx))


def interpreter(ctx: RuleContext, flags: Tuple[str, ...] = (), env: Tuple[Tuple[str, str], ...] = ()) -> Interpreter:
    """The target interpreter (:func:`python_path`) as a remedy's :class:`Interpreter`."""
    return Interpreter(python_path(ctx), flags=flags, env=env)


def base_interpreter(
    ctx: RuleContext, flags: Tuple[str, ...] = (), env: Tuple[Tuple[str, str], ...] = ()
) -> Interpreter:
    """The non-venv interpreter behind the target: the target itself when it is not a
    venv, else ``facts["python"]["base_executable"]`` or ``<base_prefix>/bin/pythonX.Y``.
    pip run by it treats the user site and the system site-packages as its own (pip run
    inside a venv refuses to uninstall outside the venv: "Not uninstalling … outside
    environment")."""
    py = ctx.view.python
    exe: Optional[str] = None
    if py.is_venv:
        exe = py.base_executable
        if not exe and py.base_prefix:
            exe = py.base_prefix.rstrip("/") + "/bin/python" + (py.short or "3")
    return Interpreter(exe if exe else python_path(ctx), flags=flags, env=env)


def pip_install(
    ctx: RuleContext,
    *requirements: str,
    index: Optional[str] = None,
    options: Tuple[str, ...] = (),
    lead: str = "",
    note: str = "",
) -> PipInstall:
    """The remedy ``<python> -m pip install 'req' ... [--index-url index] [options]``
    for the target interpreter."""
    return PipInstall(interpreter(ctx), tuple(requirements), index_url=index, options=options, lead=lead, note=note)


def pip_uninstall(ctx: RuleContext, *names: str) -> PipUninstall:
    """The remedy ``<python> -m pip uninstall -y name ...`` for the target interpreter."""
    return PipUninstall(interpreter(ctx), tuple(names))


def platform(ctx: RuleContext) -> Optional[str]:
    """``aarch64`` | ``x86_64`` of the target interpreter (host arch as fallback)."""
    machine = ctx.view.python.machine or ctx.view.host.arch
    if machine in ("arm64",):
        return "aarch64"
    if machine in ("amd64", "AMD64"):
        return "x86_64"
    return machine or None


def python_short(ctx: RuleContext) -> Optional[str]:
    """``"3.10"`` for the target interpreter, or ``None`` (:attr:`PythonFacts.short`)."""
    return ctx.view.python.short


def marker_env(ctx: RuleContext) -> Dict[str, str]:
    """PEP 508 marker variables of the target interpreter (machine: the interpreter's,
    else :func:`platform`); made once per rule context (rules ask per distribution)."""
    cached: Optional[Dict[str, str]] = getattr(ctx, "_marker_env", None)
    if cached is not None:
        return dict(cached)
    py = ctx.view.python
    env = marker_environment(
        {
            "version_info": list(py.version_info),
            "version": py.version,
            "implementation": py.implementation,
            "machine": py.machine if py.machine is not None else platform(ctx),
        }
    )
    setattr(ctx, "_marker_env", env)  # noqa: B010 -- a per-context memo, not a field
    return dict(env)


def cann_version(ctx: RuleContext) -> Optional[str]:
    """Version of the CANN toolkit in use (``cann.selected``), or ``None``."""
    sel = ctx.view.cann.selected
    return (sel.version or None) if sel is not None else None


def cann_present(ctx: RuleContext) -> bool:
    """Whether any CANN toolkit was found."""
    cann = ctx.view.cann
    return bool(cann.selected is not None or cann.toolkits)


def ask(ctx: RuleContext, query: Callable[[Matrix], T]) -> Optional[T]:
    """``query(ctx.matrix)``; ``None`` when there is no matrix or the query raises
    (unknown versions must never crash a rule)."""
    if ctx.matrix is None:
        return None
    try:
        return query(ctx.matrix)
    except Exception:
        return None


def row_python(row: Optional[TorchNpuRow], plat: Optional[str]) -> List[str]:
    """Python versions with a PyPI wheel for ``plat`` in a matrix row (empty: no row, no
    platform, or none known)."""
    if row is None or not plat:
        return []
    return [str(v) for v in row.pythons(plat)]


def release(version: Optional[str]) -> Optional[Tuple[int, ...]]:
    """``(2, 1, 0)`` of a PEP 440 version string (local/post parts dropped)."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(str(version)).release
    except (InvalidVersion, TypeError):
        return None


def local(version: Optional[str]) -> Optional[str]:
    """The local tag of a PEP 440 version (``"cpu"`` of ``2.1.0+cpu``), or ``None``."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(str(version)).local
    except (InvalidVersion, TypeError):
        return None


def not_in_matrix(ctx: RuleContext, what: str, version: str, evidence: List[str]) -> List[Finding]:
    """The "not in the matrix (refresh it)" finding of :func:`npudoctor.rules.matrix.not_in_matrix`
    (none when no matrix is loaded)."""
    from npudoctor.rules.matrix import not_in_matrix as matrix_not_in_matrix

    return list(matrix_not_in_matrix(ctx, what, version, evidence=evidence))


def python_sorted(versions: Iterable[str]) -> List[str]:
    """``["3.8", "3.9", "3.10", "3.11"]``: Python versions in numeric order (``"3.10"``
    after ``"3.9"``), duplicates and unparseable entries dropped."""
    out = {}
    for v in versions:
        m = re.match(r"^([0-9]{1,18})\.([0-9]{1,18})$", str(v).strip())
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


def best_torch_npu(ctx: RuleContext, torch_version: Optional[str], python: Optional[str]) -> Optional[str]:
    """The torch_npu release to recommend for ``torch_version`` (any torch when ``None``)
    on ``python`` ("3.11"; any when ``None``) and this platform, from the compatibility
    matrix (``fits``): among the rows with a wheel, one officially paired with the
    installed CANN first, then one declared compatible with it, then the newest.
    ``None`` when the matrix has no such row."""
    plat = platform(ctx)
    rows = ask(ctx, lambda m: m.fits(torch=torch_version or None, python=python, platform=plat))
    if not rows:
        return None
    from packaging.version import InvalidVersion, Version

    cann = cann_version(ctx) or ""
    rank = {"paired": 2, "compatible": 1}

    def key(row: TorchNpuRow) -> Tuple[int, Version]:
        fit = ask(ctx, lambda m: m.cann_fit(row, cann)) if cann else None
        try:
            version = Version(str(row.torch_npu))
        except InvalidVersion:
            version = Version("0")
        return (rank.get(str(fit), 0), version)

    return str(max(rows, key=key).torch_npu)
