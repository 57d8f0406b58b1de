"""Which torch_npu / CANN / HDK set fits a machine that has a torch_npu ↔ CANN mismatch:
the solver behind the fixes of CANN003, DRV001 and DRV002 (the rules gather the facts and
call it; :class:`~npudoctor.plan.resolve.Resolver` shares :func:`hdk_for` for the driver
step of ``npudoctor plan``).

Every answer comes from the matrix (:mod:`npudoctor.knowledge.matrix`: ``find_torch_npu``,
``cann_fit``, ``fits``, ``driver_requirement``, ``driver_fit``; sources: Ascend/pytorch
COMPATIBILITY.md and release notes, CANN release notes).  A matrix query that raises
(an unknown or unorderable version) counts as "the matrix does not know".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from npudoctor.knowledge.versions import parse_cann, pep440_public, release_prefix
from npudoctor.record import Record, asdict

if TYPE_CHECKING:  # the matrix is passed in by the caller that loaded it
    from npudoctor.knowledge.matrix import Matrix, TorchNpuRow


class KeepCann(Record):
    """Option A of a mismatch: keep the CANN and install ``torch_npu`` (built for
    ``torch``), which is ``fit`` (``paired`` | ``compatible``) with it; ``torch_changes``
    when the installed torch is not the one that build needs."""

    torch_npu: str
    torch: str
    fit: str
    torch_changes: bool


class MismatchPlan(Record):
    """The two ways out of a torch_npu/CANN mismatch: the installed pair (``torch_npu``,
    ``cann``), option A (``keep_cann``, preferred when the matrix has such a build) and
    option B (``move_to``: the CANN the installed torch_npu is paired with)."""

    torch_npu: str
    cann: str
    keep_cann: Optional[KeepCann]
    move_to: Optional[str]

    def keep_dict(self) -> Optional[Dict[str, Any]]:
        """Option A as a plain dict (finding data), or ``None``."""
        return asdict(self.keep_cann) if self.keep_cann is not None else None


def hdk_for(matrix: Optional[Matrix], cann: str) -> Optional[str]:
    """The Ascend HDK to install for CANN ``cann``: the one the matrix pairs with it (its own
    row's or its release line's), else the newest HDK it lists as compatible (a version, not
    a ``25.5.X`` pattern), else its documented floor; ``None`` (no matrix, CANN unknown).
    A tested install combination is never a floor."""
    try:
        req = matrix.driver_requirement(cann) if matrix is not None else None
    except Exception:
        return None
    if req is None:
        return None
    paired = list(req.paired or [])
    if paired:
        return str(paired[0])
    listed = [c for c in req.compatible if not c.upper().endswith(".X")]
    if listed:
        return str(listed[0])
    return str(req.minimum) if req.minimum else None


def driver_fit(matrix: Optional[Matrix], cann: str, driver: str) -> Optional[str]:
    """``matrix.driver_fit(cann, driver)`` (``paired`` | ``compatible`` | ``too-old`` |
    ``incompatible`` | ``unknown``), or ``None`` without a matrix or when it raises."""
    if matrix is None:
        return None
    try:
        return str(matrix.driver_fit(cann, driver))
    except Exception:
        return None


def driver_shortfall(matrix: Optional[Matrix], cann: str, driver: str) -> Optional[str]:
    """Why driver ``driver`` wants an upgrade for CANN ``cann``, for fix texts:
    ``"incompatible"`` (documented incompatible: an explicit N, a documented floor, far older
    than every documented HDK), ``"older"`` (not documented either way and older than every
    HDK documented for it), or ``None`` (it works, is newer, or no matrix/answer).  Source:
    :meth:`Matrix.driver_verdict`."""
    if matrix is None:
        return None
    try:
        v = matrix.driver_verdict(cann, driver).verdict
    except Exception:
        return None
    if v.grade.value in ("documented-incompatible", "proven-broken"):
        return "incompatible"
    if v.grade.value == "undocumented" and v.newer is False:
        return "older"
    return None


def keep_cann_build(
    matrix: Optional[Matrix],
    cann: str,
    torch: Optional[str],
    python: Optional[str],
    platform: Optional[str],
    installed: str = "",
) -> Optional[Tuple[TorchNpuRow, str]]:
    """The torch_npu build to install to keep CANN ``cann``: ``(row, fit)`` or ``None``.

    Candidates are the matrix rows that fit ``cann`` (``Matrix.fits``: paired or declared
    compatible, no pre-releases) and have a wheel for ``python`` ("3.10") on ``platform``
    ("aarch64").  Order of preference: a build for the installed ``torch`` paired with
    ``cann``, one declared compatible with it, then (torch must change too) the newest
    build paired with ``cann``, then the newest declared compatible.  ``installed``: the
    torch_npu already installed, never proposed again (a fix never installs what is
    already there)."""
    if matrix is None:
        return None
    mine = pep440_public(installed) if installed else None
    try:
        rows = [
            r for r in matrix.fits(python=python, platform=platform, cann=cann) if mine is None or r.version != mine
        ]
    except Exception:
        return None
    parsed = parse_cann(cann)
    rel = parsed.release if parsed is not None else None
    if rel and rel != cann:
        # a beta/alpha of a release (9.0.0-beta.2) is served best by the build paired with
        # that release (2.7.1.post4 for 9.0.0: triton-ascend#328), not the newest "9.0.X" one
        try:
            extra = [
                r
                for r in matrix.fits(python=python, platform=platform, cann=rel)
                if r not in rows and (mine is None or r.version != mine)
            ]
        except Exception:
            extra = []
        rows = sorted(rows + extra, key=lambda r: rows.index(r) if r in rows else len(rows))
    want = release_prefix(str(torch or "").split("+")[0])
    ranked: List[Tuple[int, int, TorchNpuRow, str]] = []
    for i, row in enumerate(rows):  # newest first
        try:
            fit = str(matrix.cann_fit(row, cann))
            if rel and rel != cann and str(matrix.cann_fit(row, rel)) == "paired":
                fit = "paired"  # paired with the release this pre-release belongs to
        except Exception:
            continue
        same_torch = want is not None and release_prefix(str(row.torch)) == want
        rank = (0 if same_torch else 2) + (0 if fit == "paired" else 1)
        ranked.append((rank, i, row, fit))
    if not ranked:
        return None
    _rank, _i, row, fit = min(ranked, key=lambda t: (t[0], t[1]))
    return row, fit


def mismatch_plan(
    matrix: Optional[Matrix],
    torch_npu: str,
    cann: str,
    torch: Optional[str] = None,
    python: Optional[str] = None,
    platform: Optional[str] = None,
) -> Optional[MismatchPlan]:
    """The ways out of installed ``torch_npu`` on CANN ``cann`` (with ``torch``, on
    ``python``/``platform``), or ``None`` when the evidence says the pair works (paired,
    declared compatible, same release line: :meth:`Matrix.cann_verdict`), the matrix has
    no row for the torch_npu, or the CANN cannot be placed in the release order.  An
    undocumented pair gets a plan too: its finding names the build paired with the CANN."""
    if matrix is None or not torch_npu or not cann:
        return None
    parsed = parse_cann(cann)
    if parsed is None or not parsed.orderable or parsed.is_internal:
        return None
    try:
        row = matrix.find_torch_npu(torch_npu)
        verdict = matrix.cann_verdict(torch_npu, cann, torch)
    except Exception:
        return None
    if row is None or verdict.grade.works or not (row.cann or row.cann_compatible):
        return None
    keep = keep_cann_build(matrix, cann, torch, python, platform, installed=torch_npu)
    keep_info = None
    if keep is not None:
        krow, kfit = keep
        keep_info = KeepCann(
            torch_npu=str(krow.torch_npu),
            torch=str(krow.torch),
            fit=kfit,
            torch_changes=release_prefix(str(torch or "").split("+")[0]) != release_prefix(str(krow.torch)),
        )
    paired = [str(c) for c in row.cann or []]
    return MismatchPlan(torch_npu=torch_npu, cann=cann, keep_cann=keep_info, move_to=paired[0] if paired else None)
