"""Graded verdicts of the Python-side pairings: torch_npu ↔ CANN, torch ↔ torch_npu,
Python ↔ torch_npu wheels and numpy ↔ CANN, each a :class:`~npudoctor.knowledge.grades.Verdict`.

The functions work on matrix rows and plain data (no :class:`Matrix` import: the matrix's
queries call them).  Policy (AUDIT §2, and the severity policy of AUDIT §7 as refined):

* the release line is settled first: an alpha, beta, hotfix or maintenance release of a paired
  or declared CANN (``8.0.RC2.alpha003``, ``8.0.RC3.20``, ``8.2.RC2`` next to ``8.2.RC1``) is
  *same release line*, never "older than" its own release;
* a torch_npu ``.postN`` built from a release tag of a known line inherits that line's CANN
  statement (``[[release_tag]]`` ``ext_version``); rc/dev/``+git`` builds map to their base
  version and are named unofficial;
* a CANN older than every declared-compatible CANN of the line is documented incompatible
  (torch_npu calls CANN APIs the older CANN lacks); a newer CANN with no statement is
  undocumented (a warning naming the build paired with the installed CANN) up to 2 CANN X.Y
  lines beyond the nearest declared version, documented incompatible from 3 lines on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npudoctor.knowledge.grades import Grade, Verdict
from npudoctor.knowledge.matrix.model import TorchNpuRow, _cann_in, _newest_first
from npudoctor.knowledge.versions import CannVersion, parse_cann, pep440_public, tokens

if TYPE_CHECKING:
    from typing import Any, Dict, Iterable, List, Optional, Sequence, Set, Tuple

#: CANN X.Y lines beyond the nearest declared version from which a newer CANN is "far
#: outside every documented window" (the severity policy, AUDIT §7 (a)).
FAR_LINES = 3


# ------------------------------------------------------------------ torch_npu builds
def split_build(version: str) -> Tuple[str, bool]:
    """``(base, unofficial)`` of a torch_npu version: rc/dev/local (``+git…``) builds map to
    their base (``2.9.0.post1+git4c901a4`` -> ``2.9.0.post1``; ``2.7.1.dev20250724`` ->
    ``2.7.1``; ``2.10.0rc1`` -> ``2.10.0``) and are unofficial.  A version that is not
    PEP 440 is returned unchanged, official."""
    from packaging.version import InvalidVersion, Version

    try:
        v = Version(str(version).strip())
    except InvalidVersion:
        return str(version), False
    if v.local is None and v.dev is None and v.pre is None:
        return str(version), False
    base = ".".join(str(p) for p in v.release)
    if v.post is not None:
        base += f".post{v.post}"
    return base, True


def line_key(ext_version: str) -> str:
    """The extension (TorchNPU) line of an extension version: ``7.3.1`` -> ``7.3``,
    ``7.2.0.1`` -> ``7.2``, ``26.0.1`` -> ``26.0``, ``6.0.rc2.1`` -> ``6.0.rc2``
    (each 6.0.rcN is its own line); ``""`` for an empty text."""
    parts = tokens(ext_version or "")
    if len(parts) > 2 and parts[2].startswith("rc"):
        return ".".join(parts[:3])
    return ".".join(parts[:2])


def _row_ext(row: TorchNpuRow, tags: Sequence[Dict[str, Any]]) -> str:
    if row.ext_version:
        return row.ext_version
    want = row.version
    for t in tags:
        if want is not None and pep440_public(str(t.get("torch_npu", ""))) == want and t.get("ext_version"):
            return str(t["ext_version"])
    if "-" in row.branch:
        return row.branch.split("-", 1)[1]
    return ""


def _tag_ext(version: str, tags: Sequence[Dict[str, Any]]) -> Tuple[str, str]:
    """``(ext_version, tag)`` of a tag-built torch_npu version, or ``("", "")``."""
    want = pep440_public(version)
    for t in tags:
        if want is not None and pep440_public(str(t.get("torch_npu", ""))) == want and t.get("ext_version"):
            return str(t["ext_version"]), str(t.get("tag", ""))
    return "", ""


class LineStatement:
    """The CANN statement that applies to one torch_npu build: ``paired`` and ``declared``
    CANN (wildcards allowed), where they come from (``source``), the extension ``ext``
    version, whether the statement is inherited from the build's line (``inherited``) and
    whether the build is unofficial."""

    def __init__(
        self,
        build: str,
        row: Optional[TorchNpuRow],
        paired: List[str],
        declared: List[str],
        source: str,
        ext: str,
        inherited: bool,
        unofficial: bool,
    ) -> None:
        self.build = build
        self.row = row
        self.paired = paired
        self.declared = declared
        self.source = source
        self.ext = ext
        self.inherited = inherited
        self.unofficial = unofficial


def _uniq(values: Iterable[str]) -> List[str]:
    out: List[str] = []
    for v in values:
        if v and v not in out:
            out.append(v)
    return out


def line_statement(
    rows: Sequence[TorchNpuRow], tags: Sequence[Dict[str, Any]], torch_npu: str
) -> Optional[LineStatement]:
    """The CANN statement for installed torch_npu ``torch_npu``: its own row's paired and
    declared CANN; else (a tag-built ``.postN``, a row without CANN data, an rc/dev/``+git``
    build) the union over the rows of its extension line; ``None`` when nothing is known.
    A pre-release with wheels on PyPI (``2.5.1rc1``) is published by Ascend: not unofficial."""
    base, unofficial = split_build(torch_npu)

    def find(version: str) -> Optional[TorchNpuRow]:
        want = pep440_public(version)
        return next((r for r in rows if want is not None and r.version == want), None)

    row = find(torch_npu)
    if unofficial and row is not None and row.on_pypi:
        unofficial = False  # a pre-release Ascend published on PyPI (2.5.1rc1), not a local build
    if row is not None and (row.cann or row.cann_compatible):
        return LineStatement(
            torch_npu,
            row,
            list(row.cann),
            list(row.cann_compatible),
            _row_source(row),
            _row_ext(row, tags),
            False,
            False,
        )
    base_row = find(base)
    if base_row is not None and (base_row.cann or base_row.cann_compatible):
        return LineStatement(
            torch_npu,
            base_row,
            list(base_row.cann),
            list(base_row.cann_compatible),
            _row_source(base_row),
            _row_ext(base_row, tags),
            False,
            unofficial,
        )
    ext, tag = _tag_ext(base, tags)
    if not ext and base_row is not None:
        ext = _row_ext(base_row, tags)
    key = line_key(ext)
    if not key:
        return None
    line_rows = [
        r
        for r in rows
        if (r.cann or r.cann_compatible) and r.status != "prerelease" and line_key(_row_ext(r, tags)) == key
    ]
    if not line_rows:
        return None
    paired = _uniq(c for r in line_rows for c in r.cann)
    declared = _uniq(c for r in line_rows for c in r.cann_compatible)
    how = f"built from tag {tag}" if tag else f"a build of extension {ext}"
    source = f"torch_npu {base} is {how} of the TorchNPU {key} line ({_row_source(line_rows[0])})"
    return LineStatement(torch_npu, base_row, paired, declared, source, ext, True, unofficial)


def _row_source(row: TorchNpuRow) -> str:
    return row.cann_source or row.source


# ------------------------------------------------------------------ CANN lines
def _core(v: CannVersion) -> str:
    """The release without pre-release or hotfix suffix: ``8.0.RC3.20`` -> ``8.0.RC3``,
    ``8.0.RC2.alpha003`` -> ``8.0.RC2``, ``9.0.0-beta.2`` -> ``9.0.0``."""
    return ".".join(v.release.split(".")[:3])


def _line(text: str) -> Optional[Tuple[int, int]]:
    parts = tokens(text)
    if len(parts) >= 2 and parts[0].isdecimal() and parts[1].isdecimal():
        return int(parts[0]), int(parts[1])
    return None


def _concrete(entries: Iterable[str]) -> List[CannVersion]:
    """Orderable CANN versions among ``entries``; a wildcard ``8.5.X`` counts as ``8.5.0``."""
    out: List[CannVersion] = []
    for e in entries:
        parts = tokens(e)
        text = ".".join(parts[:-1] + ["0"]) if parts and parts[-1] in ("x", "*") else e
        v = parse_cann(text)
        if v is not None and v.orderable and not v.is_internal:
            out.append(v)
    return out


def lines_beyond(newest: Tuple[int, int], installed: Tuple[int, int], known: Set[Tuple[int, int]]) -> int:
    """How many CANN X.Y lines lie after ``newest`` up to ``installed`` (inclusive), counting
    the published lines in ``known`` and ``installed`` itself: 8.3 -> 9.1 with 8.5, 9.0, 9.1
    known is 3."""
    return len({ln for ln in known | {installed} if newest < ln <= installed})


def _span(versions: List[CannVersion]) -> str:
    lo, hi = min(versions), max(versions)
    return f"CANN {lo.text}" if lo.compare(hi) == 0 else f"CANN {lo.text}-{hi.text}"


def torch_npu_cann(
    statement: Optional[LineStatement],
    cann: str,
    known_lines: Set[Tuple[int, int]],
    paired_builds: Sequence[TorchNpuRow] = (),
    torch: Optional[str] = None,
) -> Verdict:
    """How CANN ``cann`` fits a torch_npu build whose CANN statement is ``statement``
    (:func:`line_statement`).  ``known_lines``: the published CANN X.Y lines (for "far
    outside"); ``paired_builds``: torch_npu rows paired with the installed CANN's line, best
    first (named in ``recommend``); ``torch``: the installed PyTorch, for which the
    recommended build must be made (else ``recommend`` says torch must change, and to
    what).  Never raises; an unparseable or internal CANN, an unknown torch_npu or a line
    without any statement is *undocumented*."""
    recommend = recommend_build(paired_builds, torch)
    if statement is None:
        return Verdict(
            Grade.UNDOCUMENTED, "the compatibility matrix has no CANN statement for this torch_npu", recommend=recommend
        )
    st = statement
    unofficial = st.unofficial
    v = parse_cann(cann)
    if v is None or not v.orderable or v.is_internal:
        return Verdict(
            Grade.UNDOCUMENTED,
            f"CANN {cann} is not a public release the sources place in order",
            unofficial=unofficial,
            recommend=recommend,
        )
    line_name = f"TorchNPU {line_key(st.ext)}" if st.ext else f"torch_npu {st.build}"
    listed = _listed_verdict(st, cann, v, line_name, recommend)
    if listed is not None:
        return listed
    return _unlisted_verdict(st, v, line_name, known_lines, recommend)


def _listed_verdict(st: LineStatement, cann: str, v: CannVersion, line_name: str, recommend: str) -> Optional[Verdict]:
    """The verdict when the line lists CANN ``v``: paired, declared, a hotfix or
    pre-release of a listed CANN, or a later release of a listed CANN line; else None."""
    unofficial = st.unofficial

    def works(grade: Grade, source: str) -> Verdict:
        if unofficial or (st.inherited and grade in (Grade.PAIRED, Grade.DECLARED)):
            return Verdict(Grade.SAME_LINE, source, unofficial=unofficial, recommend=recommend if unofficial else "")
        return Verdict(grade, source)

    paired_src = f"the official pairing table pairs {st.build} with CANN {', '.join(st.paired)} ({st.source})"
    if st.paired and _cann_in(cann, st.paired):
        return works(Grade.PAIRED, paired_src)
    if st.declared and _cann_in(cann, st.declared):
        hit = next((d for d in st.declared if _cann_in(cann, [d])), cann)
        return works(Grade.DECLARED, f"declared compatible ({hit}) by the {line_name} release notes ({st.source})")
    listed = st.paired + st.declared
    core = _core(v)
    if core != v.text and _cann_in(core, listed):
        kind = "a pre-release" if v.is_prerelease else "a hotfix"
        return Verdict(
            Grade.SAME_LINE,
            f"CANN {v.text} is {kind} of CANN {core}, which the {line_name} line lists ({st.source})",
            unofficial=unofficial,
        )
    mine = _line(v.text)
    same = [c for c in _concrete(listed) if _line(c.text) == mine]
    base = parse_cann(core) or v
    if same and all(base.compare(c) in (0, 1) for c in same):
        newest = max(same)
        return Verdict(
            Grade.SAME_LINE,
            f"CANN {v.text} is a later release of the CANN {mine[0]}.{mine[1]} line (after {newest.text}), "
            f"which the {line_name} line lists ({st.source})"
            if mine
            else st.source,
            unofficial=unofficial,
        )
    return None


def _unlisted_verdict(
    st: LineStatement, v: CannVersion, line_name: str, known_lines: Set[Tuple[int, int]], recommend: str
) -> Verdict:
    """The verdict for a CANN the line does not list: incompatible when older than every
    declared CANN or far beyond the newest documented one, else undocumented (with the
    documented window)."""
    unofficial = st.unofficial
    concrete = _concrete(st.paired + st.declared)
    mine = _line(v.text)
    base = parse_cann(_core(v)) or v
    if not concrete or mine is None:
        return Verdict(
            Grade.UNDOCUMENTED,
            f"the {line_name} line publishes no CANN statement",
            unofficial=unofficial,
            recommend=recommend,
        )
    declared_v = _concrete(st.declared)
    window = _span(declared_v or concrete) + f" for torch_npu {st.build}"
    alt = f"; for CANN {v.text} install torch_npu {recommend}" if recommend else ""
    if declared_v and base.compare(min(declared_v)) == -1:
        return Verdict(
            Grade.INCOMPATIBLE,
            f"CANN {v.text} is older than every CANN the {line_name} release notes declare compatible "
            f"({', '.join(st.declared)}); torch_npu calls CANN APIs an older CANN lacks ({st.source})",
            unofficial=unofficial,
            window=window + alt,
            recommend=recommend,
            newer=False,
        )
    newest = max(concrete)
    newest_line = _line(newest.text)
    if base.compare(newest) == 1 and newest_line is not None:
        n = lines_beyond(newest_line, mine, known_lines)
        if n >= FAR_LINES:
            return Verdict(
                Grade.INCOMPATIBLE,
                f"CANN {v.text} is {n} CANN lines beyond {newest.text}, the newest CANN the {line_name} line "
                f"documents: far outside every documented window ({st.source})",
                unofficial=unofficial,
                window=window + alt,
                recommend=recommend,
                newer=True,
            )
        return Verdict(
            Grade.UNDOCUMENTED,
            f"CANN {v.text} is {n} CANN line{'s' if n != 1 else ''} newer than "
            f"{newest.text}, the newest CANN the {line_name} line documents ({st.source})",
            unofficial=unofficial,
            window=window,
            recommend=recommend,
            newer=True,
        )
    return Verdict(
        Grade.UNDOCUMENTED,
        f"CANN {v.text} lies inside the {line_name} line's window but is not listed ({st.source})",
        unofficial=unofficial,
        window=window,
        recommend=recommend,
        newer=base.compare(newest) == 1,
    )


def recommend_build(builds: Sequence[TorchNpuRow], torch: Optional[str]) -> str:
    """The build to name for the installed CANN: the first of ``builds`` made for PyTorch
    ``torch`` (``"2.9.0.post9 (paired with CANN 9.2.0)"``); when none is, the first build and
    the PyTorch it needs (``"2.13.0 with torch 2.13.0 (paired with CANN 9.2.0; no build
    for torch 2.5.1 is: torch must change to 2.13.0)"``); ``""`` without builds."""
    if not builds:
        return ""
    want = pep440_public(str(torch).split("+")[0]) if torch else None
    for r in builds:
        if want is None or pep440_public(r.torch) == want:
            return f"{r.torch_npu} (paired with CANN {', '.join(r.cann)})"
    r0 = builds[0]
    return (
        f"{r0.torch_npu} with torch {r0.torch} (paired with CANN {', '.join(r0.cann)}; "
        f"no build for torch {torch} is: torch must change to {r0.torch})"
    )


def paired_builds(rows: Sequence[TorchNpuRow], cann: str, torch: Optional[str], exclude: str = "") -> List[TorchNpuRow]:
    """Official torch_npu rows paired with ``cann`` (else with the newest paired release of
    its X.Y line not newer than it), the ones built for ``torch`` first, newest first;
    ``exclude`` (the installed build) is left out."""
    ex = pep440_public(exclude) if exclude else None
    v = parse_cann(cann)
    pool = [
        r for r in rows if r.cann and r.status in ("active", "historical", "release-notes-only") and r.version != ex
    ]
    hits = [r for r in pool if _cann_in(cann, r.cann)]
    if not hits and v is not None and v.orderable:
        core = parse_cann(_core(v)) or v
        mine = _line(v.text)
        same: List[Tuple[CannVersion, TorchNpuRow]] = []
        for r in pool:
            for c in _concrete(r.cann):
                if _line(c.text) == mine and core.compare(c) in (0, 1):
                    same.append((c, r))
        if same:
            best = max(c for c, _ in same)
            hits = [r for c, r in same if c.compare(best) == 0]
    want = pep440_public(str(torch).split("+")[0]) if torch else None
    ordered = _newest_first(hits)
    return [r for r in ordered if want is not None and pep440_public(r.torch) == want] + [
        r for r in ordered if want is None or pep440_public(r.torch) != want
    ]


# ------------------------------------------------------------------ torch ↔ torch_npu
def torch_pairing(
    row: Optional[TorchNpuRow],
    torch_npu: str,
    torch: str,
    requires: Sequence[Tuple[str, bool]] = (),
    metadata_source: str = "",
) -> Verdict:
    """How installed ``torch`` fits installed ``torch_npu``: the wheel's own
    ``Requires-Dist`` on torch first (``requires``: ``(requirement text, satisfied)`` pairs),
    then the matrix row (``row``: the build's or its base's) by PyTorch release (a local
    label ``+cpu`` is ignored).  rc/dev/``+git`` builds that fit are same release line,
    unofficial."""
    _base, unofficial = split_build(torch_npu)
    tv = pep440_public(str(torch).split("+")[0])
    if requires:
        text, ok = requires[0]
        where = f" in {metadata_source}" if metadata_source else " in its METADATA"
        src = f"torch_npu {torch_npu} requires `{text}` (Requires-Dist{where})"
        if ok:
            if unofficial:
                return Verdict(Grade.SAME_LINE, src, unofficial=True)
            return Verdict(Grade.PAIRED, src)
        return Verdict(Grade.INCOMPATIBLE, src, unofficial=unofficial, window=f"`{text}` for torch_npu {torch_npu}")
    if row is None:
        return Verdict(
            Grade.UNDOCUMENTED, f"torch_npu {torch_npu} is not in the compatibility matrix and names no torch"
        )
    src = f"the official pairing table builds torch_npu {row.torch_npu} for PyTorch {row.torch} ({row.source})"
    if tv is not None and pep440_public(row.torch) == tv:
        if unofficial:
            return Verdict(
                Grade.SAME_LINE, src, unofficial=True, recommend=f"{row.torch_npu} (official build of the same base)"
            )
        return Verdict(Grade.PAIRED, src)
    return Verdict(
        Grade.INCOMPATIBLE, src, unofficial=unofficial, window=f"torch {row.torch} for torch_npu {torch_npu}"
    )


# ------------------------------------------------------------------ Python ↔ wheels
def _py_span(pys: Sequence[str]) -> str:
    if not pys:
        return "no Python"
    return f"Python {pys[0]}" if len(pys) == 1 else f"Python {pys[0]}-{pys[-1]}"


def python_wheels(
    row: Optional[TorchNpuRow], python: str, platform: Optional[str], others: Sequence[TorchNpuRow] = ()
) -> Verdict:
    """Whether torch_npu ``row`` has a wheel for CPython ``python`` ("3.10") on
    ``platform``: a wheel on PyPI is *paired* (PyPI is the authority for what installs);
    none while the version has wheels for other Pythons is *documented incompatible*
    (naming ``others``: builds that do have one); a build not on PyPI falls back to the
    Python versions its release notes document (*declared compatible*)."""
    py = ".".join(str(python).strip().split(".")[:2])
    if row is None:
        return Verdict(Grade.UNDOCUMENTED, "torch_npu is not in the compatibility matrix")
    tag = "cp" + py.replace(".", "")
    if row.on_pypi:
        have = row.pythons(platform)
        where = f" for {platform}" if platform else ""
        if py in have:
            return Verdict(Grade.PAIRED, f"PyPI torch-npu {row.torch_npu} has a {tag} wheel{where}")
        alt = ", ".join(str(r.torch_npu) for r in others[:3])
        window = f"{_py_span(have)} for torch_npu {row.torch_npu}" + (
            f"; on Python {py} torch_npu {alt} ({tag} wheels)" if alt else ""
        )
        return Verdict(
            Grade.INCOMPATIBLE,
            f"PyPI torch-npu {row.torch_npu} has no {tag} wheel{where} (its wheels: {_py_span(have)})",
            window=window,
        )
    if py in row.python_doc:
        return Verdict(Grade.DECLARED, f"the release notes of torch_npu {row.torch_npu} list Python {py} (not on PyPI)")
    return Verdict(
        Grade.UNDOCUMENTED,
        f"torch_npu {row.torch_npu} is not on PyPI and its notes do not list Python {py}",
        window=f"{_py_span(row.python_doc)} for torch_npu {row.torch_npu}" if row.python_doc else "",
    )


# ------------------------------------------------------------------ numpy ↔ CANN
def numpy_cann(numpy: str, spec: str, source: str, exact: bool, tested_max: str = "", cann: str = "") -> Verdict:
    """How installed ``numpy`` fits the range ``spec`` (pip specifier) the CANN in use needs
    with this Python (``source``: the CANN row's; ``exact``: the row is the CANN's own, not
    an older release's used as fallback).  ``tested_max``: the newest numpy the install guide
    names (``1.24``): a numpy inside ``spec`` but newer is *undocumented* (info).

    A range borrowed from an older release (``exact`` False) is an inference, never a
    statement about this CANN: a numpy outside it is *undocumented* (a warning naming the
    borrowed range, AUDIT §7 (e)), not *documented incompatible*."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        nv = Version(numpy)
        ok = nv in SpecifierSet(spec, prereleases=True)
    except (InvalidVersion, InvalidSpecifier):
        return Verdict(Grade.UNDOCUMENTED, f"numpy {numpy} or the range numpy{spec} cannot be read")
    who = f"CANN {cann} " if cann else ""
    src = f"{who}needs numpy{spec} ({source})"
    if not exact:
        src = f"{who}has no numpy statement of its own; the nearest older documented CANN needs numpy{spec} ({source})"
    window = f"numpy{spec}" + (f" with CANN {cann}" if cann else "")
    if not exact:
        return Verdict(Grade.UNDOCUMENTED, src, window="" if ok else window)
    if not ok:
        return Verdict(Grade.INCOMPATIBLE, src, window=window)
    if tested_max:
        try:
            top = Version(tested_max)
            if (nv.major, nv.minor) > (top.major, top.minor):
                return Verdict(
                    Grade.UNDOCUMENTED,
                    f"numpy {numpy} is inside numpy{spec} but newer than the "
                    f"{tested_max} the install guide names ({source})",
                )
        except InvalidVersion:
            pass
    return Verdict(Grade.DECLARED, src)
