"""Helpers shared by the python, packages and host-hygiene rules (not a rule module:
the leading underscore keeps it out of rule discovery).

They take the typed views they read (the python, host and packages sections) or plain
values, and wrap matrix queries (:func:`ask`) so that a query that raises counts as "the
matrix does not know".
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Tuple, TypeVar

from npudoctor.facts.system import Distribution, HostFacts, PythonFacts
from npudoctor.parsers.metadata import marker_environment

if TYPE_CHECKING:
    from npudoctor.knowledge.matrix import Matrix, TorchNpuRow

T = TypeVar("T")


def describe(rec: Distribution) -> str:
    """``torch_npu 2.1.0.post10 (…/METADATA)`` for evidence."""
    return f"{rec.name} {rec.version} ({rec.metadata_source})"


def python_exe(py: PythonFacts) -> str:
    """:attr:`PythonFacts.interpreter_path` as evidence shows it (quoted like the fix lines
    quote it)."""
    return shlex.quote(py.interpreter_path)


def platform(py: PythonFacts, host: HostFacts) -> Optional[str]:
    """``aarch64`` | ``x86_64`` of the target interpreter (host arch as fallback)."""
    machine = py.machine or host.arch
    if machine in ("arm64",):
        return "aarch64"
    if machine in ("amd64", "AMD64"):
        return "x86_64"
    return machine or None


def marker_env(py: PythonFacts, host: HostFacts) -> Dict[str, str]:
    """PEP 508 marker variables of the target interpreter (machine: the interpreter's,
    else :func:`platform`)."""
    return marker_environment(
        {
            "version_info": list(py.version_info),
            "version": py.version,
            "implementation": py.implementation,
            "machine": py.machine if py.machine is not None else platform(py, host),
        }
    )


def ask(matrix: Optional[Matrix], query: Callable[[Matrix], T]) -> Optional[T]:
    """``query(matrix)``; ``None`` when there is no matrix or the query raises
    (unknown versions must never crash a rule)."""
    if matrix is None:
        return None
    try:
        return query(matrix)
    except Exception:
        return None


def row_python(row: Optional[TorchNpuRow], plat: Optional[str]) -> List[str]:
    """Python versions with a PyPI wheel for ``plat`` in a matrix row (empty: no row, no
    platform, or none known)."""
    if row is None or not plat:
        return []
    return [str(v) for v in row.pythons(plat)]


def best_torch_npu(
    matrix: Optional[Matrix], torch_version: Optional[str], python: Optional[str], plat: Optional[str], cann: str
) -> Optional[str]:
    """The torch_npu release to recommend for ``torch_version`` (any torch when ``None``)
    on ``python`` ("3.11"; any when ``None``) and platform ``plat``, from the compatibility
    matrix (``fits``): among the rows with a wheel, one officially paired with the
    installed CANN ``cann`` (``""``: unknown) first, then one declared compatible with it,
    then the newest.  ``None`` when the matrix has no such row."""
    rows = ask(matrix, lambda m: m.fits(torch=torch_version or None, python=python, platform=plat))
    if not rows:
        return None
    from packaging.version import InvalidVersion, Version

    rank = {"paired": 2, "compatible": 1}

    def key(row: TorchNpuRow) -> Tuple[int, Version]:
        fit = ask(matrix, lambda m: m.cann_fit(row, cann)) if cann else None
        try:
            version = Version(str(row.torch_npu))
        except InvalidVersion:
            version = Version("0")
        return (rank.get(str(fit), 0), version)

    return str(max(rows, key=key).torch_npu)
