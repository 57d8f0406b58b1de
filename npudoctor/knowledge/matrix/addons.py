"""CANN ↔ kernels/ops and CANN ↔ NNAL verdicts.

Evidence, strongest first: the same release (paired); the packages' own statements — the
toolkit's ``toolkit/version.info`` ``required_package_opp_kernel_version`` and the kernels'
``opp_kernel/version.info`` ``required_package_toolkit_version`` (``">=7.6, <=8.2"``, component
version lines); from CANN 8.5 the release notes' "CANN ops与Toolkit配套关系" (``ops_toolkit`` of
the ops release's ``[[cann]]`` row); then the same release line; otherwise not documented either
way.  No source states NNAL compatibility across CANN releases: each release note lists NNAL
only as a sub-package of its own bundle.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Protocol, Tuple

from npudoctor.knowledge.grades import Grade, Verdict
from npudoctor.knowledge.versions import component_line_holds, parse_cann, version_in


class CannRows(Protocol):
    """What the judgements read of :class:`~npudoctor.knowledge.matrix.Matrix`."""

    def cann_row(self, cann: str) -> Optional[Dict[str, Any]]: ...


def _line(version: Optional[str]) -> Optional[Tuple[int, int]]:
    """``(major, minor)`` of a public CANN version, ``None`` when unparseable."""
    v = parse_cann(version) if version else None
    return (v.major, v.minor) if v is not None else None


def _component(inner: Optional[str], public: Optional[str]) -> Optional[str]:
    """The component version line ``"7.6"`` the ``required_package_*`` ranges speak of: from a
    5-part inner version (``7.6.0.1.220``), else from a public version of CANN ≥ 8.1, whose
    components carry the public number (``8.2.RC1`` → ``8.2.0.0.201``; 8.0.0 is ``7.6``)."""
    parts = (inner or "").split(".")
    if len(parts) >= 2 and parts[0].isdecimal() and parts[1].isdecimal():
        return f"{parts[0]}.{parts[1]}"
    line = _line(public)
    if line is not None and line >= (8, 1):
        return f"{line[0]}.{line[1]}"
    return None


def kernels_verdict(
    matrix: CannRows,
    toolkit: str,
    kernels: str,
    kernels_inner: Optional[str] = None,
    toolkit_requires: Optional[Dict[str, str]] = None,
    kernels_requires: Optional[Dict[str, str]] = None,
) -> Verdict:
    """The verdict on kernels/ops package ``kernels`` with CANN toolkit ``toolkit``.
    ``kernels_inner``: the kernels' ``Version=`` (``7.6.0.1.220``); ``toolkit_requires`` /
    ``kernels_requires``: the ``required_package_<pkg>_version`` values of the toolkit's and
    the kernels' ``version.info``.  Never raises."""
    tv, kv = parse_cann(toolkit), parse_cann(kernels)
    if tv is not None and kv is not None and tv.compare(kv) == 0:
        return Verdict(Grade.PAIRED, f"the same release {toolkit}")
    k_comp = _component(kernels_inner, kernels)
    t_comp = _component(None, toolkit)
    t_spec = (toolkit_requires or {}).get("opp_kernel")
    k_spec = (kernels_requires or {}).get("toolkit")
    t_says, k_says = component_line_holds(t_spec, k_comp), component_line_holds(k_spec, t_comp)
    if k_says is False:
        return Verdict(
            Grade.INCOMPATIBLE,
            f"the kernels' own opp_kernel/version.info requires toolkit {k_spec}; toolkit {toolkit} is component line {t_comp}",
            window=f"a toolkit of component line {k_spec} for these kernels, or kernels {toolkit} for toolkit {toolkit}",
            newer=None,
        )
    if t_says is False:
        return Verdict(
            Grade.INCOMPATIBLE,
            f"the toolkit's own toolkit/version.info requires kernels {t_spec}; kernels {kernels} are component line {k_comp}",
            window=f"kernels of component line {t_spec}, or kernels {toolkit}",
        )
    if t_says:
        return Verdict(
            Grade.DECLARED,
            f"declared compatible by the toolkit's own toolkit/version.info: required_package_opp_kernel_version "
            f"{t_spec} holds kernels {kernels_inner or kernels}",
        )
    if k_says:
        return Verdict(
            Grade.DECLARED,
            f"declared compatible by the kernels' own opp_kernel/version.info: required_package_toolkit_version "
            f"{k_spec} holds toolkit {toolkit} (line {t_comp})",
        )
    row = matrix.cann_row(kernels)
    listed: List[str] = [str(x) for x in (row or {}).get("ops_toolkit", [])]
    if listed:
        src = str((row or {}).get("ops_source", ""))
        if version_in(toolkit, listed):
            return Verdict(Grade.DECLARED, f"ops {kernels} are declared for toolkit {', '.join(listed)} ({src})")
        return Verdict(
            Grade.UNDOCUMENTED,
            f"not documented either way: ops {kernels} are declared for toolkit {', '.join(listed)} ({src}); "
            f"{toolkit} is not named",
            window=f"toolkit {', '.join(listed)}, or ops {toolkit}",
        )
    return _line_verdict("kernels", toolkit, kernels)


def nnal_verdict(toolkit: str, nnal: str) -> Verdict:
    """The verdict on NNAL (ATB) ``nnal`` with CANN toolkit ``toolkit``: the same release is
    paired, the same release line is same-line, anything else is not documented either way
    (no source states NNAL compatibility across CANN releases).  Never raises."""
    tv, nv = parse_cann(toolkit), parse_cann(nnal)
    if tv is not None and nv is not None and tv.compare(nv) == 0:
        return Verdict(Grade.PAIRED, f"the same release {toolkit} (NNAL is a sub-package of its CANN bundle)")
    return _line_verdict("NNAL", toolkit, nnal)


def _line_verdict(what: str, toolkit: str, other: str) -> Verdict:
    t, o = _line(toolkit), _line(other)
    if t is not None and t == o:
        return Verdict(
            Grade.SAME_LINE, f"{what} {other} and toolkit {toolkit} are releases of the same line {t[0]}.{t[1]}"
        )
    return Verdict(
        Grade.UNDOCUMENTED,
        f"not documented either way: each CANN release note lists {what} only as part of its own bundle",
        window=f"{what} {toolkit}",
    )
