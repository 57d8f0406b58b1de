"""Parsers of the official compatibility sources that ``npudoctor matrix refresh`` reads.

* Markdown documents of Ascend/pytorch: ``COMPATIBILITY.md`` / ``COMPATIBILITY.en.md``
  (master; a "TorchNPU version mapping table" for the active versions plus a collapsed
  ``<details>`` block of historical/EOL versions) and the older release-branch README
  layouts ("Ascend Auxiliary Software" / "昇腾辅助软件": a CANN-first table whose CANN cell
  is left blank on follow-up rows; some revisions add an AscendHub image column) and
  their "PyTorch and Python Version Matching Table".  Columns are recognised by the
  meaning of their header (English or Chinese), never by position, because the headers
  change between releases.
* The PyPI JSON API for ``torch-npu`` (``https://pypi.org/pypi/torch-npu/json``): the wheel
  file names give the CPython versions and platforms per package version.

Pure functions: text in, data out; malformed input gives :class:`OfficialParseError`
(naming what was expected and what was found), never another exception.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Set, Tuple

from npudoctor import lazyre
from npudoctor.parsers import jsontext
from npudoctor.parsers._official_base import OfficialParseError
from npudoctor.parsers._official_base import cells as _cells
from npudoctor.parsers.release_notes import is_cann_notes, parse_compat_grid, parse_compat_list
from npudoctor.record import MutableRecord, field

__all__ = [
    "OfficialParseError",
    "MappingRow",
    "MarkdownResult",
    "parse_markdown",
    "parse_pypi_json",
    "looks_like_html",
    "ext_version_from_branch",
    "PypiRelease",
    "classify",
    "summary",
]


class MappingRow(MutableRecord):
    """One row of a torch_npu mapping table.  ``section``: ``active`` / ``historical``
    (COMPATIBILITY.md) or ``readme`` (release-branch README, no such split)."""

    torch_npu: str
    torch: str
    cann: str
    branch: str
    section: str
    note: str = ""
    #: the extension (product) version of a "TorchNPU版本" column, when the table has one
    ext_version: str = ""
    #: further CANN named in the cell ("商用版：8.0.RC3.20<br>社区版：8.0.0" -> ["8.0.0"])
    cann_also: List[str] = field(default_factory=list)


class MarkdownResult(MutableRecord):
    """What a Markdown document holds: mapping ``rows``, documented Python per PyTorch
    line (``python_lines``: torch -> ["3.9", ...]), ``layout`` (``compatibility`` or
    ``readme``) and ``warnings`` (e.g. merge-conflict markers left in the document)."""

    rows: List[MappingRow] = field(default_factory=list)
    python_lines: Dict[str, List[str]] = field(default_factory=dict)
    layout: str = ""
    warnings: List[str] = field(default_factory=list)
    #: release notes' "版本兼容性说明": extension line ("7.3.0", "26.1.X") -> declared CANN
    declared: Dict[str, List[str]] = field(default_factory=dict)


# ---------------------------------------------------------------- helpers
_CONFLICT = lazyre.pattern(r"^(<{7}|={7}|>{7})(\s|$)")
_SEPARATOR_CELL = lazyre.pattern(r"^:?-{2,}:?$")


def looks_like_html(text: str) -> bool:
    """True for an HTML page (an error page, a login wall, a GitHub "blob" page)."""
    head = text.lstrip()[:512].lower()
    return head.startswith("<!doctype html") or head.startswith("<html") or "<head>" in head or "<body" in head


def _clean_value(text: str) -> str:
    s = re.sub(r"<[^>]+>", " ", text)  # inline HTML (<br>, <sup>)
    s = s.replace("**", "").replace("`", "").replace("\u3000", " ")
    s = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", s)  # markdown links -> text
    return re.sub(r"\s+", " ", s).strip()


_PACKAGE_WORDS = ("安装包", "package", "wheel", "whl")


def _header_kind(header: str) -> str:
    """Meaning of a column header: torch_npu / torch / cann / branch / python / image / other.

    A torch_npu-ish header naming the package ("TorchNPU安装包版本", "installation package
    version") is ``package``; :func:`_resolve_kinds` then reads the other torch_npu-ish
    column of that table ("TorchNPU版本", "Ascend Extension for PyTorch版本": the product
    version, e.g. 26.1.0) as ``ext_version``."""
    h = _clean_value(header).lower().replace(" ", "")
    if not h:
        return "other"
    if "image" in h or "镜像" in h or "ascendhub" in h:
        return "image"
    if "branch" in h or "分支" in h:
        return "branch"
    if any(k in h for k in _PACKAGE_WORDS) and not ("cann" in h or "python" in h):
        return "package"
    if any(k in h for k in ("torchnpu", "torch_npu", "torch-npu", "extension", "插件", "adapter")):
        return "torch_npu"
    if "cann" in h:
        return "cann"
    if "python" in h:
        return "python"
    if "pytorch" in h or h in ("torch", "torch版本", "torchversion"):
        return "torch"
    return "other"


def _resolve_kinds(kinds: List[str]) -> List[str]:
    """Settle which column is the package: a ``package`` column wins and every other
    torch_npu-ish column becomes ``ext_version``; without one, the torch_npu-ish column is the
    package (older READMEs: "Supported Extension Version" holds 2.1.0.post4)."""
    if "package" not in kinds:
        return kinds
    return ["torch_npu" if k == "package" else ("ext_version" if k == "torch_npu" else k) for k in kinds]


def _norm_cann(cell: str) -> str:
    """The CANN of a mapping cell: ``"CANN 8.0.RC1"`` -> ``"8.0.RC1"``; a
    ``"商用版：9.0.0<br>社区版：9.0.0"`` cell -> the commercial one (see :func:`_cann_editions`)."""
    eds = _cann_editions(cell)
    if eds:
        return eds[0]
    s = _clean_value(cell)
    s = re.sub(r"^(cann)\s*", "", s, flags=re.I)
    return s.strip()


def _cann_editions(cell: str) -> List[str]:
    """``"商用版：8.0.RC3.20<br>社区版：8.0.0"`` -> ``["8.0.RC3.20", "8.0.0"]`` (commercial
    first, repeats dropped); ``[]`` for a cell without edition labels."""
    s = _clean_value(cell)
    found = re.findall(
        r"(?:商用版|商发版|社区版|commercial(?:edition)?|community(?:edition)?)\s*[:：]\s*(?:CANN\s*)?(\S+)",
        s,
        flags=re.I,
    )
    out: List[str] = []
    for v in found:
        v = v.strip("、,;；")
        if v and v not in out:
            out.append(v)
    return out


def _norm_pkg(cell: str) -> Tuple[str, str]:
    """``"1.11.0.rc2（beta)"`` -> ``("1.11.0.rc2", "beta")``."""
    s = _clean_value(cell)
    note = ""
    m = re.search(r"[（(]\s*([^)）]*)\s*[)）]", s)
    if m:
        note = m.group(1).strip()
        s = (s[: m.start()] + s[m.end() :]).strip()
    return s, note


def _release_clash(pkg: str, torch: str) -> str:
    """How the release of torch_npu package ``pkg`` differs from PyTorch ``torch`` (a
    torch_npu package carries the release of the PyTorch it is built for: 2.9.0.post9 for
    2.9.0): ``"line"`` (another major version: 26.2.0 for 2.9.0, a TorchNPU product version
    read as the package), ``"typo"`` (same major: the tables' own slips, kept as published:
    1.5.0.post3 for 1.8.1, 2.5.0 for 2.5.1), ``""`` (same release, or not a version)."""
    a = re.match(r"^v?([0-9]+)\.([0-9]+)\.([0-9]+)", pkg.strip())
    b = re.match(r"^v?([0-9]+)\.([0-9]+)\.([0-9]+)", torch.strip())
    if not a or not b or a.groups() == b.groups():
        return ""
    return "typo" if a.group(1) == b.group(1) else "line"


def _python_versions(cell: str) -> List[str]:
    found = re.findall(r"python\s*([0-9])\.([0-9]{1,2})", _clean_value(cell), flags=re.I)
    out: List[str] = []
    for major, minor in found:
        v = f"{major}.{minor}"
        if v not in out:
            out.append(v)
    return out


def ext_version_from_branch(branch: str) -> str:
    """``"v2.1.0-6.0.rc3"`` -> ``"6.0.rc3"``; ``""`` for development branches
    (``"v2.6.0"``) and the old ``2.0.4.tr5`` branches.  Naming rule from COMPATIBILITY.md
    ("{PyTorch version}-{TorchNPU version}")."""
    m = re.match(r"^v?[0-9]+\.[0-9]+\.[0-9]+-(.+)$", branch.strip())
    return m.group(1) if m else ""


class _Table(MutableRecord):
    header: List[str]
    rows: List[List[str]]
    line: int
    section: str


def _tables(text: str, warnings: List[str]) -> List[_Table]:
    """Markdown pipe tables with the section they sit in (``historical`` inside a
    ``<details>`` block or under a heading naming history/EOL)."""
    lines = text.splitlines()
    tables: List[_Table] = []
    section = "active"
    in_details = False
    i = 0
    conflict_seen = False
    while i < len(lines):
        raw = lines[i]
        s = raw.strip()
        low = s.lower()
        if "<details" in low:
            in_details = True
        if "</details" in low:
            in_details = False
        if s.startswith("#"):
            section = "historical" if re.search(r"histor|eol|历史", low) else "active"
        if s.startswith("|") and i + 1 < len(lines):
            sep = _cells(lines[i + 1])
            if sep and all(_SEPARATOR_CELL.match(c.replace(" ", "")) for c in sep if c != "") and any(sep):
                header = _cells(s)
                body: List[List[str]] = []
                j = i + 2
                while j < len(lines):
                    t = lines[j].strip()
                    if t.startswith("|"):
                        body.append(_cells(t))
                    elif _CONFLICT.match(t):
                        conflict_seen = True
                    elif t == "" and j + 1 < len(lines) and _CONFLICT.match(lines[j + 1].strip()):
                        pass  # blank line just before a conflict marker: still the same table
                    else:
                        break
                    j += 1
                sec = "historical" if (in_details or section == "historical") else "active"
                tables.append(_Table(header=header, rows=body, line=i + 1, section=sec))
                i = j
                continue
        i += 1
    if conflict_seen:
        warnings.append("the document contains unresolved git merge-conflict markers inside a table")
    return tables


# ---------------------------------------------------------------- markdown
def parse_markdown(text: str) -> MarkdownResult:
    """Parse a COMPATIBILITY.md/.en.md or README document.

    Returns every mapping row (torch_npu package, PyTorch, CANN, branch) of every
    mapping table, in document order, and the "PyTorch and Python" table.  A mapping
    table is one with columns meaning torch_npu package, PyTorch, CANN and branch; CANN
    cells left blank continue the CANN of the row above (README layout).  Raises
    :class:`OfficialParseError` when the text is HTML, or holds no mapping table (the
    message lists the column headers it did see, e.g. after a column was renamed).
    """
    if not isinstance(text, str) or not text.strip():
        raise OfficialParseError("empty document")
    if looks_like_html(text):
        raise OfficialParseError("got an HTML page, not the Markdown document (an error page or a web view URL?)")
    result = MarkdownResult()
    tables = _tables(text, result.warnings)
    seen_headers: List[str] = []
    _declared_ranges(text, tables, result)
    for tb in tables:
        kinds = _resolve_kinds([_header_kind(h) for h in tb.header])
        seen_headers.append(" | ".join(_clean_value(h) for h in tb.header))
        if "torch" in kinds and "python" in kinds and "cann" not in kinds and "torch_npu" not in kinds:
            _read_python_lines(tb, kinds, result)
            continue
        need = _mapping_columns(tb, kinds, result, seen_headers[-1])
        if need:
            _read_mapping_rows(tb, kinds, need, result)
    if not result.rows and result.declared:
        result.layout = result.layout or "release_notes"
        return result
    if not result.rows:
        if seen_headers:
            raise OfficialParseError(
                "no torch_npu mapping table found (need columns for the torch_npu package, PyTorch, CANN and the "
                "branch); tables seen: " + "; ".join(seen_headers[:6])
            )
        raise OfficialParseError("no Markdown table found in the document")
    return result


def _read_python_lines(tb: _Table, kinds: List[str], result: MarkdownResult) -> None:
    """The "PyTorch and Python" table: the documented Pythons of each PyTorch line."""
    ti, pi = kinds.index("torch"), kinds.index("python")
    for r in tb.rows:
        if len(r) <= max(ti, pi):
            continue
        m = re.search(r"([0-9]+\.[0-9]+\.[0-9]+)", _clean_value(r[ti]))
        if m:
            result.python_lines[m.group(1)] = _python_versions(r[pi])


def _mapping_columns(tb: _Table, kinds: List[str], result: MarkdownResult, headers: str) -> Tuple[str, ...]:
    """The columns a mapping table needs, when ``tb`` is one (else ``()``, with a warning
    for a table that looks like one but lacks a column).  Raises
    :class:`OfficialParseError` when two columns read as the torch_npu version."""
    # the branch column may be left out when the product version is given (COMPATIBILITY.md
    # from TorchNPU 26.1.1 on: TorchNPU版本 | TorchNPU安装包版本 | PyTorch版本 | CANN版本)
    need: Tuple[str, ...] = ("torch_npu", "torch", "cann", "branch")
    if "branch" not in kinds and "ext_version" in kinds:
        need = ("torch_npu", "torch", "cann")
    if not all(k in kinds for k in need):
        declared_table = kinds[:2] == ["torch_npu", "cann"] and bool(result.declared)
        if sum(k in kinds for k in need) >= 2 and "ext_version" not in kinds and not declared_table:
            missing = [k for k in need if k not in kinds]
            result.warnings.append(
                f"table at line {tb.line} looks like a mapping table but has no column for {', '.join(missing)} "
                f"(headers: {headers})"
            )
        return ()
    if kinds.count("torch_npu") > 1:
        cols = [_clean_value(h) for h, k in zip(tb.header, kinds) if k == "torch_npu"]
        raise OfficialParseError(
            f"table at line {tb.line}: ambiguous columns {' and '.join(repr(c) for c in cols)}: both read as the "
            "torch_npu version and neither names the package (安装包/package/wheel); refused"
        )
    return need


def _read_mapping_rows(tb: _Table, kinds: List[str], need: Tuple[str, ...], result: MarkdownResult) -> None:
    """The rows of a mapping table (and the document's layout, from its first one).
    Raises :class:`OfficialParseError` for a torch_npu cell of another PyTorch line."""
    idx = {k: kinds.index(k) for k in need}
    # a release note's table: product version and branch next to the package
    notes = "ext_version" in kinds and "branch" in kinds
    cann_first = idx["cann"] == 0 and not notes
    if not result.layout:
        result.layout = "release_notes" if notes else ("readme" if cann_first else "compatibility")
    current_cann = ""
    for r in tb.rows:
        if len(r) < len(tb.header):
            r = r + [""] * (len(tb.header) - len(r))
        cann = _norm_cann(r[idx["cann"]])
        if cann:
            current_cann = cann
        elif cann_first:
            cann = current_cann
        pkg, note = _norm_pkg(r[idx["torch_npu"]])
        torch = _clean_value(r[idx["torch"]])
        branch = _clean_value(r[idx["branch"]]) if "branch" in idx else ""
        if not (pkg and torch and cann and (branch or "branch" not in idx)):
            result.warnings.append(f"table at line {tb.line}: incomplete row skipped: {' | '.join(r)}")
            continue
        section = "release_notes" if notes else ("readme" if cann_first else tb.section)
        if _release_clash(pkg, torch) == "line":
            raise OfficialParseError(
                f"table at line {tb.line}, row '{' | '.join(_clean_value(c) for c in r)}': torch_npu cell "
                f"{pkg!r} is not a build for the PyTorch cell {torch!r} (another major version: a product "
                "version read as the package?); refused"
            )

        ext = _clean_value(r[kinds.index("ext_version")]) if "ext_version" in kinds else ""
        also = [c for c in _cann_editions(r[idx["cann"]]) if c != cann]
        result.rows.append(
            MappingRow(
                torch_npu=pkg,
                torch=torch,
                cann=cann,
                branch=branch,
                section=section,
                note=note,
                ext_version=ext,
                cann_also=also,
            )
        )


def _declared_ranges(text: str, tables: List[_Table], result: MarkdownResult) -> None:
    """Fill ``result.declared`` from a release note's "版本兼容性说明": a pipe table
    ``TorchNPU版本 | CANN版本`` (one ``<br>`` list of CANN per extension line) or an HTML grid
    with ``Y`` cells (:func:`npudoctor.parsers.release_notes.parse_compat_grid`)."""
    for tb in tables:
        kinds = [_header_kind(h) for h in tb.header]
        if not (kinds[:2] == ["torch_npu", "cann"] and "torch" not in kinds and "branch" not in kinds):
            continue
        for r in tb.rows:
            if len(r) < 2:
                continue
            line = _clean_value(r[0])
            canns = parse_compat_list(r[1])
            if re.match(r"^[0-9]+\.[0-9]+\.([0-9]+|[xX]|rc[0-9]+)$", line) and canns:
                result.declared.setdefault(line, [])
                result.declared[line] += [c for c in canns if c not in result.declared[line]]
    for line, canns in parse_compat_grid(text).items():
        if canns and line not in result.declared:
            result.declared[line] = canns


# ---------------------------------------------------------------- PyPI JSON
class PypiRelease(MutableRecord):
    """Wheels of one torch-npu version: ``python`` platform -> ["3.10", ...];
    ``platform_tags`` platform -> ["manylinux_2_28", "manylinux_2_17.manylinux2014"]."""

    version: str
    python: Dict[str, List[str]]
    platform_tags: Dict[str, List[str]]
    uploaded: str = ""
    yanked: bool = False


def _arch_of(platform_tag: str) -> Optional[str]:
    if platform_tag.endswith("aarch64"):
        return "aarch64"
    if platform_tag.endswith("x86_64"):
        return "x86_64"
    return None


def parse_pypi_json(text: str, project: str = "torch-npu") -> Dict[str, PypiRelease]:
    """Parse the PyPI JSON API document of ``project``.  Returns version ->
    :class:`PypiRelease` from the wheel file names (``packaging.utils.parse_wheel_filename``:
    ``cp310`` -> ``"3.10"``; ``manylinux_2_17_aarch64.manylinux2014_aarch64`` ->
    aarch64, ``"manylinux_2_17.manylinux2014"``).  Yanked files are left out.  Raises
    :class:`OfficialParseError` for anything that is not that document."""
    from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

    if not isinstance(text, str) or not text.strip():
        raise OfficialParseError("empty document")
    if looks_like_html(text):
        raise OfficialParseError("got an HTML page, not the PyPI JSON document")
    try:
        doc = jsontext.loads(text)
    except (ValueError, RecursionError) as exc:
        raise OfficialParseError(f"not JSON: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("releases"), dict):
        raise OfficialParseError("not a PyPI JSON project document (no 'releases' object)")
    info = doc.get("info") if isinstance(doc.get("info"), dict) else {}
    name = info.get("name") if isinstance(info, dict) else None
    if isinstance(name, str) and canonicalize_name(name) != canonicalize_name(project):
        raise OfficialParseError(f"the document is for project {name!r}, not {project!r}")
    out: Dict[str, PypiRelease] = {}
    for version, files in doc["releases"].items():
        if not isinstance(files, list):
            continue
        py: Dict[str, Set[str]] = {"aarch64": set(), "x86_64": set()}
        tags: Dict[str, Set[str]] = {"aarch64": set(), "x86_64": set()}
        uploaded = ""
        for f in files:
            if not isinstance(f, dict) or f.get("yanked"):
                continue
            fname = f.get("filename")
            if not isinstance(fname, str) or not fname.endswith(".whl"):
                continue
            try:
                _name, _ver, _build, wtags = parse_wheel_filename(fname)
            except (InvalidWheelFilename, ValueError):
                continue
            plat_by_arch: Dict[str, List[str]] = {}
            for t in wtags:
                m = re.match(r"^cp([0-9])([0-9]+)$", t.interpreter)
                arch = _arch_of(t.platform)
                if m and arch is not None:
                    py[arch].add(f"{m.group(1)}.{m.group(2)}")
            # platform tags in the order the file name gives them (a frozenset above)
            for plat in fname[:-4].split("-")[-1].split("."):
                arch = _arch_of(plat)
                if arch is None:
                    continue
                base = plat[: -len(arch) - 1]
                lst = plat_by_arch.setdefault(arch, [])
                if base not in lst:
                    lst.append(base)
            for arch, bases in plat_by_arch.items():
                tags[arch].add(".".join(bases))
            up = f.get("upload_time_iso_8601") or f.get("upload_time") or ""
            if isinstance(up, str) and (not uploaded or up < uploaded):
                uploaded = up
        if not any(py.values()):
            continue
        out[version] = PypiRelease(
            version=version,
            python={a: sorted(v, key=lambda s: tuple(int(x) for x in s.split("."))) for a, v in py.items()},
            platform_tags={a: sorted(v) for a, v in tags.items()},
            uploaded=uploaded[:10],
        )
    if not out:
        raise OfficialParseError("the PyPI document lists no wheel files")
    return out


def classify(text: str) -> str:
    """``"pypi"`` for a JSON document, ``"cann_notes"`` for a CANN release note (CANN ↔ HDK
    tables), ``"markdown"`` otherwise (``"html"`` for HTML)."""
    s = text.lstrip()
    if looks_like_html(s):
        return "html"
    if s.startswith("{"):
        return "pypi"
    if is_cann_notes(s):
        return "cann_notes"
    return "markdown"


def summary(result: Any) -> str:
    """One line describing a parse result (for refresh reports)."""
    if isinstance(result, MarkdownResult):
        sections: Dict[str, int] = {}
        for r in result.rows:
            sections[r.section] = sections.get(r.section, 0) + 1
        parts = ", ".join(f"{n} {s}" for s, n in sections.items())
        text = f"{len(result.rows)} mapping rows ({parts}), {len(result.python_lines)} PyTorch-Python lines"
        if result.declared:
            text += f", declared CANN ranges of {len(result.declared)} extension lines"
        return text
    if isinstance(result, dict):
        return f"{len(result)} torch-npu versions with wheels"
    return ""
