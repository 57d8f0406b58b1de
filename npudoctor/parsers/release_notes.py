"""Parsers of the release notes that declare compatibility windows, for ``matrix refresh``.

* CANN release notes (``hicann/release-management`` / gitcode ``cann/release-management``
  ``<version>/release-notes.md``):

  - up to 9.0.x: "CANN与Ascend HDK版本配套关系", a pipe table ``CANN版本 | 配套Ascend HDK版本``
    whose HDK cell is a ``<br>`` list (every HDK listed works with that CANN; no single
    pairing is singled out);
  - from 9.1.0: "CANN软件版本配套表", an HTML table ``CANN | 驱动版本（Ascend HDK）`` with one
    HDK per CANN (the pairing), and "CANN与Ascend HDK版本兼容", an HTML grid: one row per
    CANN (``8.5.2``, ``9.0.X``), one column per HDK (``25.0.X``, ``26.0.RC1/25.7.RC1``),
    cells ``Y`` (compatible) or ``N`` (not compatible).

* The TorchNPU (Ascend/pytorch) "版本兼容性说明": either a pipe table ``TorchNPU版本 | CANN版本``
  with a ``<br>`` list of CANN versions per extension line (7.x, 26.0.0), or an HTML grid
  with ``Y`` cells (26.1.0 on) — parsed by :func:`parse_compat_grid`.

Pure functions: text in, data out; :class:`~npudoctor.parsers._official_base.OfficialParseError`
for a document that holds none of these tables.
"""

from __future__ import annotations

import html
import re
from typing import Callable, Dict, List, Optional, Tuple, Union

from npudoctor import lazyre
from npudoctor.parsers._official_base import OfficialParseError
from npudoctor.parsers._official_base import cells as pipe_cells
from npudoctor.record import MutableRecord, field

__all__ = [
    "HtmlTable",
    "html_tables",
    "CannNotes",
    "is_cann_notes",
    "parse_cann_notes",
    "grid_values",
    "split_versions",
]

_CANN_TITLE = lazyre.pattern(r"^#\s*CANN\s+(\S+?)\s*(?:版本说明|Release Notes)", re.M | re.I)
_HDK_PAT = lazyre.pattern(r"(?<![0-9.])[0-9]{2}\.[0-9]{1,2}\.(?:RC[0-9]+|rc[0-9]+|X|x|[0-9]+)(?:\.[0-9]+)*")
_CANN_PAT = lazyre.pattern(
    r"(?<![0-9.])[0-9]{1,2}\.[0-9]{1,2}\.(?:RC[0-9]+|X|x|[0-9]+)(?:[.-](?:alpha|beta)[.-]?[0-9]+|\.[0-9]+)?", re.I
)


class HtmlTable(MutableRecord):
    """One HTML ``<table>``: ``header_rows`` (cell texts of each ``<th>`` row, colspans
    expanded), ``rows`` (cell texts of each body row), ``caption`` (the non-empty line just
    before the table) and ``heading`` (the Markdown heading it sits under)."""

    header_rows: List[List[str]]
    rows: List[List[str]]
    caption: str
    heading: str


def _text(cell: str) -> str:
    s = re.sub(r"<br\s*/?>", "\n", cell, flags=re.I)
    s = re.sub(r"<[^>]+>", " ", s)
    s = html.unescape(s).replace("\u3000", " ")
    return "\n".join(re.sub(r"[ \t]+", " ", line).strip() for line in s.splitlines()).strip()


def html_tables(text: str) -> List[HtmlTable]:
    """Every ``<table>`` of a Markdown/HTML document, cells as plain text (``<br>`` becomes a
    newline).  A ``<tr>`` made only of ``<th>`` cells is a header row; ``colspan`` repeats a
    header cell so that the last header row lines up with the body columns."""
    out: List[HtmlTable] = []
    for m in re.finditer(r"<table\b.*?</table>", text, flags=re.S | re.I):
        before = text[: m.start()].rstrip().splitlines()
        caption = before[-1].strip() if before else ""
        heading = ""
        for line in reversed(before):
            if line.lstrip().startswith("#"):
                heading = line.strip().lstrip("#").strip()
                break
        headers: List[List[str]] = []
        rows: List[List[str]] = []
        for tr in re.finditer(r"<tr\b.*?</tr>", m.group(0), flags=re.S | re.I):
            cells = re.findall(r"<(t[hd])\b([^>]*)>(.*?)</t[hd]>", tr.group(0), flags=re.S | re.I)
            if not cells:
                continue
            if all(tag.lower() == "th" for tag, _a, _c in cells) and not rows:
                row: List[str] = []
                for _tag, attrs, content in cells:
                    span = re.search(r'colspan="?([0-9]{1,3})(?![0-9])', attrs)  # bounded: a row of 10**9 cells
                    row.extend([_text(content)] * (int(span.group(1)) if span else 1))
                headers.append(row)
            else:
                rows.append([_text(c) for _t, _a, c in cells])
        out.append(HtmlTable(header_rows=headers, rows=rows, caption=caption, heading=heading))
    return out


def split_versions(cell: str, pattern: Union[re.Pattern[str], lazyre.LazyPattern[str]]) -> List[str]:
    """Versions named in one cell, in order, without repeats: ``"26.0.RC1/25.7.RC1"`` ->
    both; ``"CANN 9.0.0<br>CANN 8.5.0"`` -> ``["9.0.0", "8.5.0"]``."""
    out: List[str] = []
    for v in pattern.findall(_text(cell)):
        if v not in out:
            out.append(v)
    return out


#: grid cells that say nothing (left out of :func:`grid_values`)
_EMPTY_CELLS = ("", "/", "-", "—")


def grid_values(table: HtmlTable) -> Dict[str, Dict[str, bool]]:
    """A Y/N grid as ``row label -> {column label -> True (Y) / False (N)}``.  Column
    labels come from the last header row; an empty cell (blank, ``/``, ``-``) is left out.
    Raises :class:`OfficialParseError` naming the table, row and cell for a body row whose
    length differs from the header's (its cells would shift under the wrong columns) and
    for a cell that is not Y, N or empty: a grid read wrongly would declare what the
    source does not."""
    if not table.header_rows:
        return {}
    cols = table.header_rows[-1]
    # the last header row lacks the row-label column when the first header row spans it
    offset = 1 if len(table.header_rows) > 1 and len(cols) < max(len(r) for r in table.rows or [[]]) else 0
    width = len(cols) + offset
    where = f"grid {(table.caption or table.heading or 'table')!r}"
    out: Dict[str, Dict[str, bool]] = {}
    for n, r in enumerate(table.rows, 1):
        if not r or not any(c.strip() for c in r):
            continue
        label = r[0].strip()
        if len(r) != width:
            raise OfficialParseError(
                f"{where}, row {n} ({label or 'no label'}): {len(r)} cells under a header of {width} columns "
                f"({' | '.join(cols)}); refused"
            )
        cells: Dict[str, bool] = {}
        for i, value in enumerate(r[1:]):
            j = i if offset else i + 1
            v = value.strip().upper()
            if v in ("Y", "N"):
                cells[cols[j]] = v == "Y"
            elif v not in _EMPTY_CELLS:
                raise OfficialParseError(
                    f"{where}, row {n} ({label}), column {cols[j]!r}: cell {value.strip()!r} is not Y, N or empty; "
                    "refused"
                )
        if label:
            out[label] = cells
    return out


class CannNotes(MutableRecord):
    """What one CANN release note declares.

    ``version``: the CANN the note is for; ``paired``: CANN -> [HDK] of the one-HDK
    "软件版本配套表" (≥ 9.1.0); ``listed``: CANN -> [HDK] of the ``<br>``-list table
    (≤ 9.0.x: each listed HDK works with that CANN); ``grid``: CANN row label (``8.5.2``,
    ``9.1.X``) -> {HDK -> Y/N} of the "版本兼容" grid, a ``26.0.RC1/25.7.RC1`` column split
    into its two HDKs."""

    version: str
    paired: Dict[str, List[str]] = field(default_factory=dict)
    listed: Dict[str, List[str]] = field(default_factory=dict)
    grid: Dict[str, Dict[str, bool]] = field(default_factory=dict)
    warnings: List[str] = field(default_factory=list)


def is_cann_notes(text: str) -> bool:
    """True for a CANN release note ("# CANN 9.1.1版本说明" with an HDK table)."""
    return bool(_CANN_TITLE.search(text[:4000])) and ("Ascend HDK" in text or "驱动版本" in text)


def _pipe_rows(text: str, header_test: Callable[[List[str]], bool]) -> List[Tuple[str, str]]:
    """``(first cell, second cell)`` of the body rows of the first pipe table whose header
    passes ``header_test``."""
    lines = text.splitlines()
    out: List[Tuple[str, str]] = []
    for i, line in enumerate(lines):
        s = line.strip()
        if not (s.startswith("|") and header_test(pipe_cells(s))):
            continue
        for body in lines[i + 2 :]:
            b = body.strip()
            if not b.startswith("|"):
                break
            row = pipe_cells(b)
            if len(row) >= 2:
                out.append((row[0], row[1]))
        break
    return out


def parse_cann_notes(text: str) -> CannNotes:
    """Parse a CANN release note (either layout).  Raises ``OfficialParseError`` when the
    title is missing or no HDK table is found."""
    m = _CANN_TITLE.search(text[:4000])
    if not m:
        raise OfficialParseError("not a CANN release note (no '# CANN <version>版本说明' title)")
    notes = CannNotes(version=m.group(1))
    for tb in html_tables(text):
        first = tb.header_rows[0] if tb.header_rows else []
        if not first or "CANN" not in first[0].upper():
            continue
        if "兼容" in tb.caption or "兼容" in tb.heading or "Compatib" in tb.caption:
            for label, cells in grid_values(tb).items():
                label_cann = label.replace("CANN", "").strip()
                row: Dict[str, bool] = {}
                for col, ok in cells.items():
                    for hdk in split_versions(col, _HDK_PAT):
                        row[hdk] = ok
                if row:
                    notes.grid[label_cann] = row
        elif any("HDK" in h or "驱动" in h for h in first):
            for r in tb.rows:
                if len(r) >= 2:
                    cann = split_versions(r[0], _CANN_PAT)
                    hdks = split_versions(r[1], _HDK_PAT)
                    if cann and hdks:
                        notes.paired[cann[0]] = hdks
    for cann_cell, hdk_cell in _pipe_rows(
        text, lambda h: len(h) >= 2 and "CANN" in h[0] and "HDK" in h[1] and "配套" in "".join(h)
    ):
        cann = split_versions(cann_cell, _CANN_PAT)
        hdks = split_versions(hdk_cell, _HDK_PAT)
        if cann and hdks:
            notes.listed[cann[0]] = hdks
    if not (notes.paired or notes.listed or notes.grid):
        raise OfficialParseError(
            f"CANN {notes.version} release note: no CANN ↔ Ascend HDK table found "
            "(expected 'CANN与Ascend HDK版本配套关系' or 'CANN与Ascend HDK版本兼容')"
        )
    return notes


def parse_compat_grid(text: str) -> Dict[str, List[str]]:
    """TorchNPU "版本兼容性说明" as an HTML grid: extension line (``26.1.X``) -> the CANN
    columns marked ``Y`` (``["8.5.X", "9.0.X", "9.1.X"]``).  Rows may be CANN and columns
    TorchNPU lines instead: the group header ("CANN版本" over the columns) decides."""
    out: Dict[str, List[str]] = {}
    for tb in html_tables(text):
        if not tb.header_rows or "兼容" not in (tb.heading + tb.caption):
            continue
        first = " ".join(tb.header_rows[0])
        if "TorchNPU" not in first and "PyTorch" not in first:
            continue
        cols_are_cann = "CANN" in " ".join(tb.header_rows[0][1:])
        for label, cells in grid_values(tb).items():
            for col, ok in cells.items():
                if not ok:
                    continue
                line, cann = (label, col) if cols_are_cann else (col, label)
                cann = cann.replace("CANN", "").strip()
                lst = out.setdefault(line.strip(), [])
                if cann not in lst:
                    lst.append(cann)
    return out


def parse_compat_list(cell: str) -> List[str]:
    """The ``<br>`` list of a pipe-table "CANN版本" cell: ``"CANN 9.0.0<br>CANN 8.5.0"``."""
    return split_versions(cell, _CANN_PAT)


def first_version(cell: str) -> Optional[str]:
    """The first CANN version named in a cell, or None."""
    found = split_versions(cell, _CANN_PAT)
    return found[0] if found else None
