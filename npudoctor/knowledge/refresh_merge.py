"""The parts of ``matrix refresh``'s merge that carry declared windows.

* :func:`apply_declared` — a TorchNPU release note's "版本兼容性说明" (extension line ->
  CANN versions declared compatible) added to ``cann_compatible`` of every row of that line;
* :func:`line_range` — what a row a refresh adds inherits from its extension line (the
  line's declared CANN), instead of empty lists;
* :func:`apply_cann_notes` — a CANN release note's pairing, HDK lists and Y/N grid merged
  into the ``[[cann]]`` rows (new CANN releases become new rows);
* :func:`dropped` — the known rows / declared entries a merged document would lose (a
  refresh that would drop any is refused).

Merges only ever add: a declared entry is never removed by a refresh.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Set, Tuple

from npudoctor.knowledge.matrix.model import _cann_in
from npudoctor.knowledge.versions import parse_cann, parse_driver, pep440_public

__all__ = ["row_line", "line_range", "apply_declared", "apply_cann_notes", "dropped"]

_KEYS = {
    "torch_npu": "torch_npu",
    "torch_line": "torch",
    "release_tag": "tag",
    "cann": "version",
    "install_pairing": "cann",
    "python_dep": "dist",
    "family": "family",
    "chip": "name",
}


def _line3(ext: str) -> str:
    """``"7.2.0.1"`` -> ``"7.2.0"`` (a patch build belongs to its extension line)."""
    parts = ext.strip().split(".")
    return ".".join(parts[:3]) if len(parts) >= 3 else ext.strip()


def _line_matches(declared_line: str, ext: str) -> bool:
    """Whether a release note's line label (``"26.0.0"``, ``"26.1.X"``) covers ``ext``."""
    if not ext:
        return False
    d = declared_line.strip()
    if re.match(r"^[0-9]+\.[0-9]+\.[xX*]$", d):
        return _line3(ext).split(".")[:2] == d.split(".")[:2]
    return _line3(ext).lower() == d.lower()


def row_line(row: Dict[str, Any], tags: List[Dict[str, Any]]) -> str:
    """The extension line of a torch_npu row: its ``ext_version``, else its branch's, else the
    ``[[release_tag]]`` that built it; ``""`` when none says."""
    from npudoctor.parsers.official import ext_version_from_branch

    ext = str(row.get("ext_version") or "") or ext_version_from_branch(str(row.get("branch") or ""))
    if ext:
        return ext
    want = pep440_public(str(row.get("torch_npu", "")))
    for t in tags:
        if want is not None and pep440_public(str(t.get("torch_npu", ""))) == want and t.get("ext_version"):
            return str(t["ext_version"])
    return ""


def line_range(rows: List[Dict[str, Any]], ext: str, tags: List[Dict[str, Any]]) -> Tuple[List[str], str]:
    """``(cann_compatible, source)`` a new row of extension line ``ext`` inherits: the union of
    the declared CANN of the known rows of the same line (``([], "")`` when none declares)."""
    out: List[str] = []
    source = ""
    if not ext:
        return out, source
    for r in rows:
        if _line3(row_line(r, tags)) != _line3(ext):
            continue
        for c in r.get("cann_compatible", []) or []:
            if c not in out:
                out.append(c)
        source = source or str(r.get("cann_compatible_source") or "")
    return out, source


def _add(existing: List[str], new: List[str]) -> List[str]:
    """``new`` entries not already in ``existing`` (nor covered by an ``X.Y.X`` entry)."""
    added: List[str] = []
    for c in new:
        if c in existing or c in added:
            continue
        if parse_cann(c) is not None and _cann_in(c, [e for e in existing if e[-1:] in ("X", "x", "*")]):
            continue
        added.append(c)
    return added


def apply_declared(
    data: Dict[str, Any], declared: Dict[str, List[str]], source: str, today: str
) -> Tuple[List[str], List[str]]:
    """Add a release note's declared CANN (``line -> [CANN]``) to ``cann_compatible`` of every
    torch_npu row of that line.  Returns ``(changes, warnings)``; a line no row belongs to is
    a warning (its rows arrive with a mapping table)."""
    rows: List[Dict[str, Any]] = data.setdefault("torch_npu", [])
    tags: List[Dict[str, Any]] = data.get("release_tag", [])
    changes: List[str] = []
    warnings: List[str] = []
    for line, canns in declared.items():
        hit = False
        for r in rows:
            if not _line_matches(line, row_line(r, tags)):
                continue
            hit = True
            have = list(r.get("cann_compatible", []) or [])
            added = _add(have, canns)
            if added:
                r["cann_compatible"] = have + added
                src = str(r.get("cann_compatible_source") or "")
                if source not in src:
                    r["cann_compatible_source"] = f"{src}; {source} ({today})" if src else f"{source} ({today})"
                changes.append(
                    f"changed torch_npu {r['torch_npu']}: cann_compatible + {', '.join(added)} (line {line})"
                )
        if not hit:
            warnings.append(f"declared CANN of extension line {line} ({', '.join(canns)}): no torch_npu row of it")
    return changes, warnings


def _cann_rows_for(label: str, rows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Rows a grid label names: ``"8.5.2"`` exactly; ``"9.1.X"`` every final 9.1 release."""
    if re.match(r"^[0-9]+\.[0-9]+\.[xX*]$", label):
        out = []
        for r in rows:
            v = parse_cann(str(r.get("version", "")))
            if v is not None and not v.is_prerelease and _cann_in(str(r["version"]), [label]):
                out.append(r)
        return out
    return [r for r in rows if str(r.get("version", "")) == label]


def _below_minimum(row: Dict[str, Any], hdks: List[str]) -> List[str]:
    """The ``hdks`` (``25.0.X`` read as 25.0.0) older than the row's ``hdk_minimum``."""
    floor = parse_driver(str(row.get("hdk_minimum") or ""))
    if floor is None:
        return []
    out = []
    for h in hdks:
        v = parse_driver(re.sub(r"\.[xX*]$", ".0", h))
        if v is not None and v < floor:
            out.append(h)
    return out


def _merge_grid(
    row: Dict[str, Any], cells: Dict[str, bool], cite: str, changes: List[str], warnings: List[str]
) -> None:
    """Add a grid row's cells to ``row["hdk_grid"]`` (column -> "Y" | "N").  A column the
    row already has with the other value is kept and reported: a refresh only adds."""
    grid = dict(row.get("hdk_grid") or {})
    added = []
    for col, ok in cells.items():
        value = "Y" if ok else "N"
        if col not in grid:
            grid[col] = value
            added.append(f"{col}={value}")
        elif grid[col] != value:
            warnings.append(f"CANN {row['version']} × HDK {col}: {cite} says {value}, the matrix {grid[col]} (kept)")
    if added:
        row["hdk_grid"] = grid
        src = str(row.get("hdk_grid_source") or "")
        if cite not in src:
            row["hdk_grid_source"] = f"{src}; {cite}" if src else cite
        changes.append(f"changed CANN {row['version']}: hdk_grid + {', '.join(added)}")


def _hdk_schema_has(name: str) -> bool:
    from npudoctor.knowledge.matrix.schema import _SCHEMA

    return name in _SCHEMA.get("cann", {})


def apply_cann_notes(data: Dict[str, Any], notes: Any, source: str, today: str) -> Tuple[List[str], List[str]]:
    """Merge one CANN release note (:class:`npudoctor.parsers.release_notes.CannNotes`) into
    ``data["cann"]``: the one-HDK pairing sets ``hdk_paired``; listed HDKs are added to
    ``hdk_compatible``.  The Y/N grid goes, cell by cell, into ``hdk_grid`` (column -> "Y" |
    "N") when the matrix schema has that field (the verdict-drv schema); otherwise its ``Y``
    cells are added to ``hdk_compatible`` and its ``N`` cells reported as warnings, not stored.
    A grid row ``9.1.X`` applies to every final 9.1 release of the matrix.  A CANN the matrix
    does not know yet (the note's own version, or a listed one) becomes a new row.  Returns
    ``(changes, warnings)``."""
    rows: List[Dict[str, Any]] = data.setdefault("cann", [])
    changes: List[str] = []
    warnings: List[str] = []
    cite = f"{source} (CANN {notes.version} release notes)"

    def row_for(version: str) -> Dict[str, Any]:
        for r in rows:
            if str(r.get("version")) == version:
                return r
        new = {"version": version, "hdk_compatible": [], "source": cite, "retrieved": today}
        new["note"] = f"added by npudoctor matrix refresh from the CANN {notes.version} release notes"
        rows.append(new)
        changes.append(f"added CANN {version} (CANN {notes.version} release notes)")
        return new

    def add_hdk(r: Dict[str, Any], field: str, hdks: List[str]) -> None:
        have = list(r.get(field, []) or [])
        added = [h for h in hdks if h not in have]
        if added:
            r[field] = have + added
            changes.append(f"changed CANN {r['version']}: {field} + {', '.join(added)}")

    for cann, hdks in notes.paired.items():
        r = row_for(cann)
        if list(r.get("hdk_paired", []) or []) != hdks:
            changes.append(f"changed CANN {cann}: hdk_paired {r.get('hdk_paired')} -> {hdks}")
            r["hdk_paired"] = list(hdks)
        add_hdk(r, "hdk_compatible", hdks)
    for cann, hdks in notes.listed.items():
        add_hdk(row_for(cann), "hdk_compatible", hdks)
    if notes.version not in [str(r.get("version")) for r in rows] and parse_cann(notes.version) is not None:
        row_for(notes.version)
    grid_field = _hdk_schema_has("hdk_grid")  # the verdict-drv schema: the Y/N row kept as it is
    for label, cells in notes.grid.items():
        targets = _cann_rows_for(label, rows)
        if not targets and parse_cann(label) is not None:
            targets = [row_for(label)]
        yes = [h for h, ok in cells.items() if ok]
        no = [h for h, ok in cells.items() if not ok]
        for r in targets:
            if grid_field:
                _merge_grid(r, cells, cite, changes, warnings)
            else:
                add_hdk(r, "hdk_compatible", yes)
            below = _below_minimum(r, yes)
            if below:
                warnings.append(
                    f"CANN {r['version']}: hdk_minimum {r['hdk_minimum']} is newer than HDK {', '.join(below)}, "
                    f"which the CANN {notes.version} release notes mark 'Y' (hdk_minimum left as it is)"
                )
            if not grid_field and r.get("source") and cite not in str(r["source"]) and (yes or no):
                r["source"] = f"{r['source']}; grid: {cite}"
                r["retrieved"] = today
        if no and not grid_field:
            warnings.append(
                f"CANN {label} × HDK {', '.join(no)}: 'N' in the CANN {notes.version} release notes, "
                "not stored (the matrix schema has no hdk_grid field)"
            )
    return changes, warnings


def dropped(base: Dict[str, Any], data: Dict[str, Any]) -> List[str]:
    """What ``data`` lost against ``base``: rows (by key, per table) and paired or declared
    entries (``cann`` / ``cann_compatible`` of a torch_npu row, ``hdk_compatible`` / ``hdk_grid`` columns of a
    CANN row).  Empty when
    nothing known is dropped."""
    from npudoctor.knowledge.matrix.schema import _KEY_FIELD

    out: List[str] = []
    for table, key in {**_KEYS, **_KEY_FIELD}.items():
        new: Dict[str, Dict[str, Any]] = {str(r.get(key)): r for r in data.get(table, []) if isinstance(r, dict)}
        seen: Set[str] = set()
        for r in base.get(table, []):
            if not isinstance(r, dict):
                continue
            k = str(r.get(key))
            if k in seen:
                continue
            seen.add(k)
            now: Optional[Dict[str, Any]] = new.get(k)
            if now is None:
                out.append(f"[[{table}]] {k}")
                continue
            for field in ("cann", "cann_compatible", "hdk_compatible", "hdk_grid"):
                was, got = r.get(field) or [], now.get(field) or []
                if not isinstance(was, (list, dict)) or not isinstance(got, (list, dict)):
                    continue  # a single value ([[install_pairing]] cann), not a list
                lost = [v for v in was if v not in got]
                if lost:
                    out.append(f"[[{table}]] {k} {field} {', '.join(lost)}")
    return out
