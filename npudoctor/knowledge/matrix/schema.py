"""The compatibility matrix's schema check: :func:`validate` a merged document."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from npudoctor import lazyre
from npudoctor.knowledge.matrix.model import PLATFORMS, SCHEMA_VERSION, STATUSES, _valid_date
from npudoctor.knowledge.versions import parse_cann, parse_driver, pep440_public

if TYPE_CHECKING:
    from typing import Any, Dict, List, Tuple

# ------------------------------------------------------------------ schema
_PY = lazyre.pattern(r"^3\.[0-9]{1,2}$")

# field -> (type, required)
_STR, _LIST, _BOOL, _DICT, _INT = "string", "list of strings", "boolean", "table", "integer"
_HDK_PATTERN = lazyre.pattern(r"^[0-9]+\.[0-9]+\.[Xx*]$")
_INNER_LINE = lazyre.pattern(r"^V[0-9]{3}R[0-9]{3}C[0-9]{2}$")
_SCHEMA: Dict[str, Dict[str, Tuple[str, bool]]] = {
    "torch_npu": {
        "torch_npu": (_STR, True),
        "torch": (_STR, True),
        "cann": (_LIST, True),
        "cann_compatible": (_LIST, False),
        "cann_compatible_source": (_STR, False),
        "python": (_DICT, False),
        "python_doc": (_LIST, False),
        "python_doc_source": (_STR, False),
        "platform_tags": (_DICT, False),
        "branch": (_STR, False),
        "ext_version": (_STR, False),
        "status": (_STR, True),
        "eol": (_STR, False),
        "note": (_STR, False),
        "source": (_STR, True),
        "retrieved": (_STR, True),
    },
    "torch_line": {
        "torch": (_STR, True),
        "status": (_STR, True),
        "released": (_STR, False),
        "eol": (_STR, False),
        "next_state": (_STR, False),
        "conflict": (_STR, False),
        "python_doc": (_LIST, False),
        "source": (_STR, True),
        "retrieved": (_STR, True),
    },
    "release_tag": {
        "tag": (_STR, True),
        "date": (_STR, False),
        "torch_npu": (_STR, True),
        "ext_version": (_STR, False),
        "on_pypi": (_BOOL, False),
        "source": (_STR, True),
        "retrieved": (_STR, True),
    },
    "cann": {
        "version": (_STR, True),
        "hdk_paired": (_LIST, False),
        "hdk_compatible": (_LIST, False),
        "hdk_compatible_source": (_STR, False),
        "hdk_grid": (_DICT, False),
        "hdk_grid_source": (_STR, False),
        "hdk_notes": (_BOOL, False),
        "hdk_products": ("list of tables", False),
        "hdk_products_source": (_STR, False),
        "hdk_minimum": (_STR, False),
        "inner_line": (_STR, False),
        "ops_toolkit": (_LIST, False),
        "ops_source": (_STR, False),
        "python": (_STR, False),
        "numpy": ("list of tables", False),
        "numpy_doc": (_STR, False),
        "protobuf": (_STR, False),
        "protobuf_source": (_STR, False),
        "note": (_STR, False),
        "source": (_STR, True),
        "retrieved": (_STR, True),
    },
    "install_pairing": {
        "cann": (_STR, True),
        "chip": (_STR, True),
        "driver": (_STR, True),
        "firmware": (_STR, False),
        "source": (_STR, True),
        "retrieved": (_STR, True),
    },
    "hdk_release": {
        "families": (_LIST, True),
        "releases": (_LIST, True),
        "per_year": (_INT, True),
        "note": (_STR, False),
        "source": (_STR, True),
        "retrieved": (_STR, True),
    },
    "hdk_floor": {
        "chips": (_LIST, True),
        "hdk": (_STR, True),
        "cann": (_STR, False),
        "product": (_STR, True),
        "note": (_STR, False),
        "source": (_STR, True),
        "retrieved": (_STR, True),
    },
    "inner_line": {
        "line": (_STR, True),
        "cann": (_LIST, False),
        "driver": (_LIST, False),
        "note": (_STR, False),
        "source": (_STR, True),
        "retrieved": (_STR, True),
    },
    "python_dep": {
        "dist": (_STR, True),
        "import": (_STR, True),
        "spec": (_STR, False),
        "optional": (_BOOL, False),
        "note": (_STR, False),
        "source": (_STR, True),
        "retrieved": (_STR, True),
    },
    "family": {
        "family": (_STR, True),
        "label": (_STR, True),
        "products": (_STR, False),
        "bf16": (_BOOL, True),
        "kernels_dir": (_STR, True),
        "package_chip": (_STR, True),
        "kernels_package": (_STR, False),
        "ops_package": (_STR, False),
        "supported": (_STR, True),
        "since_torch_npu": (_LIST, False),
        "since_ext": (_STR, False),
        "product_line": (_STR, False),
        "product_line_source": (_STR, False),
        "product_line_retrieved": (_STR, False),
        "note": (_STR, False),
        "source": (_STR, True),
        "retrieved": (_STR, True),
    },
    "chip": {
        "name": (_STR, True),
        "soc_version": (_STR, True),
        "family": (_STR, True),
        "product_line": (_STR, False),
        "product_line_source": (_STR, False),
        "product_line_retrieved": (_STR, False),
        "note": (_STR, False),
        "source": (_STR, True),
        "retrieved": (_STR, True),
    },
    "cann_floor": {
        "family": (_STR, True),
        "chips": (_LIST, False),
        "product": (_STR, True),
        "cann": (_STR, True),
        "statement": (_STR, True),
        "chips_inferred": (_BOOL, False),
        "note": (_STR, False),
        "source": (_STR, True),
        "retrieved": (_STR, True),
    },
}
#: ``[[cann_floor]]`` statements: an official requirement (older CANN documented unsupported)
#: or a release announcing the support (older CANN predates it).
FLOOR_STATEMENTS = ("requires", "first-supported")
_KEY_FIELD = {
    "torch_npu": "torch_npu",
    "torch_line": "torch",
    "release_tag": "tag",
    "cann": "version",
    "install_pairing": "cann",
    "hdk_release": "families",
    "hdk_floor": "hdk",
    "inner_line": "line",
    "python_dep": "dist",
    "family": "family",
    "chip": "name",
    "cann_floor": "product",
}


def _type_ok(kind: str, value: Any) -> bool:
    if kind == _STR:
        return isinstance(value, str)
    if kind == _BOOL:
        return isinstance(value, bool)
    if kind == _INT:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == _LIST:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind == _DICT:
        return isinstance(value, dict)
    if kind == "list of tables":
        return isinstance(value, list) and all(isinstance(v, dict) for v in value)
    return False


def validate(data: Dict[str, Any], where: str = "matrix", partial: bool = False) -> List[str]:
    """Check a merged matrix document against the schema.  Returns the list of problems
    (empty when valid), each naming ``where``, the table, the row number and key, and the
    field: ``"matrix.toml: [[torch_npu]] row 3 (torch_npu = 2.1.0): field 'cann': ..."``.
    ``partial`` accepts one part of the matrix (e.g. ``cann.toml`` alone)."""
    problems: List[str] = []
    sv = data.get("schema_version")
    if sv != SCHEMA_VERSION:
        problems.append(f"{where}: schema_version is {sv!r}, expected {SCHEMA_VERSION}")
    if not partial and not data.get("torch_npu"):
        problems.append(f"{where}: no [[torch_npu]] rows")
    if partial and not any(data.get(t) for t in _SCHEMA):
        problems.append(f"{where}: no matrix table ({', '.join('[[' + t + ']]' for t in _SCHEMA)})")
    for table, fields in _SCHEMA.items():
        rows = data.get(table, [])
        if not isinstance(rows, list):
            problems.append(f"{where}: [[{table}]] must be an array of tables")
            continue
        for i, row in enumerate(rows, 1):
            if not isinstance(row, dict):
                problems.append(f"{where}: [[{table}]] row {i}: not a table")
                continue
            keyf = _KEY_FIELD[table]
            label = f"{where}: [[{table}]] row {i} ({keyf} = {row.get(keyf, '?')})"
            for name, (kind, required) in fields.items():
                if name not in row:
                    if required:
                        problems.append(f"{label}: missing field '{name}'")
                    continue
                if not _type_ok(kind, row[name]):
                    problems.append(f"{label}: field '{name}' must be a {kind}, got {type(row[name]).__name__}")
            for name in row:
                if name not in fields:
                    problems.append(f"{label}: unknown field '{name}'")
            problems.extend(_check_values(table, row, label))
    problems.extend(_check_floor_refs(data, where))
    return problems


def _check_floor_refs(data: Dict[str, Any], where: str) -> List[str]:
    """Each ``[[cann_floor]]`` names a ``[[family]]`` and chips of that family (when the
    document holds those tables: a partial document may carry the floors alone)."""
    floors = data.get("cann_floor")
    families = data.get("family")
    chips = data.get("chip")
    if not isinstance(floors, list) or not isinstance(families, list) or not isinstance(chips, list):
        return []
    known = {r.get("family") for r in families if isinstance(r, dict)}
    family_of = {r.get("name"): r.get("family") for r in chips if isinstance(r, dict)}
    out: List[str] = []
    for i, row in enumerate(floors, 1):
        if not isinstance(row, dict):
            continue
        label = f"{where}: [[cann_floor]] row {i} (product = {row.get('product', '?')})"
        fam = row.get("family")
        if fam not in known:
            out.append(f"{label}: field 'family' names no [[family]] row: {fam!r}")
            continue
        for name in row.get("chips", []) if isinstance(row.get("chips"), list) else []:
            if family_of.get(name) != fam:
                out.append(f"{label}: field 'chips' holds {name!r}, not a [[chip]] of family {fam!r}")
    return out


def _check_values(table: str, row: Dict[str, Any], label: str) -> List[str]:
    out: List[str] = []
    ret = row.get("retrieved")
    if isinstance(ret, str) and not _valid_date(ret):
        out.append(f"{label}: field 'retrieved' must be a date YYYY-MM-DD, got {ret!r}")
    if isinstance(row.get("source"), str) and not row["source"].strip():
        out.append(f"{label}: field 'source' is empty")
    if table == "torch_npu":
        for f in ("torch_npu", "torch"):
            if isinstance(row.get(f), str) and pep440_public(row[f]) is None:
                out.append(f"{label}: field '{f}' is not a version: {row[f]!r}")
        if isinstance(row.get("status"), str) and row["status"] not in STATUSES:
            out.append(f"{label}: field 'status' must be one of {', '.join(STATUSES)}, got {row['status']!r}")
        for c in row.get("cann", []) if isinstance(row.get("cann"), list) else []:
            if isinstance(c, str) and parse_cann(c) is None:
                out.append(f"{label}: field 'cann' holds {c!r}, not a CANN version")
        for c in row.get("cann_compatible", []) if isinstance(row.get("cann_compatible"), list) else []:
            if isinstance(c, str) and parse_cann(c) is None and not re.match(r"^[0-9]+\.[0-9]+\.[Xx*]$", c):
                out.append(f"{label}: field 'cann_compatible' holds {c!r}, not a CANN version or X.Y.X pattern")
        py = row.get("python")
        if isinstance(py, dict):
            for plat, vers in py.items():
                if plat not in PLATFORMS:
                    out.append(f"{label}: field 'python' has unknown platform {plat!r}")
                elif not (isinstance(vers, list) and all(isinstance(v, str) and _PY.match(v) for v in vers)):
                    out.append(f"{label}: field 'python.{plat}' must list versions like \"3.10\"")
        for v in row.get("python_doc", []) if isinstance(row.get("python_doc"), list) else []:
            if isinstance(v, str) and not _PY.match(v):
                out.append(f"{label}: field 'python_doc' holds {v!r}, not a Python version like 3.10")
        if isinstance(row.get("eol"), str) and not _valid_date(row["eol"]):
            out.append(f"{label}: field 'eol' must be a date YYYY-MM-DD, got {row['eol']!r}")
    elif table == "cann":
        if isinstance(row.get("version"), str) and parse_cann(row["version"]) is None:
            out.append(f"{label}: field 'version' is not a CANN version: {row['version']!r}")
        for f in ("hdk_paired", "hdk_compatible"):
            for v in row.get(f, []) if isinstance(row.get(f), list) else []:
                if isinstance(v, str) and not _hdk_ok(v):
                    out.append(f"{label}: field '{f}' holds {v!r}, not an HDK version or X.Y.X pattern")
        out.extend(_check_hdk_statements(row, label))
        if isinstance(row.get("hdk_minimum"), str) and parse_driver(row["hdk_minimum"]) is None:
            out.append(f"{label}: field 'hdk_minimum' is not an HDK version: {row['hdk_minimum']!r}")
        for f in ("python", "protobuf"):
            if isinstance(row.get(f), str) and row[f] and not _spec_ok(row[f]):
                out.append(f"{label}: field '{f}' is not a version range: {row[f]!r}")
        for j, entry in enumerate(row.get("numpy", []) if isinstance(row.get("numpy"), list) else [], 1):
            if not isinstance(entry, dict) or set(entry) != {"python", "spec"}:
                out.append(f"{label}: field 'numpy' entry {j} must be {{python = ..., spec = ...}}")
            elif not (_spec_ok(entry["python"]) and _spec_ok(entry["spec"])):
                out.append(f"{label}: field 'numpy' entry {j} has an invalid range")
    elif table in ("hdk_release", "hdk_floor", "inner_line"):
        out.extend(_check_hdk_tables(table, row, label))
    elif table == "install_pairing":
        if isinstance(row.get("driver"), str) and parse_driver(row["driver"]) is None:
            out.append(f"{label}: field 'driver' is not a driver version: {row['driver']!r}")
    elif table == "python_dep" and isinstance(row.get("spec"), str) and row["spec"] and not _spec_ok(row["spec"]):
        out.append(f"{label}: field 'spec' is not a version range: {row['spec']!r}")
    elif table in ("family", "chip"):
        out.extend(_check_product_line(row, label))
    elif table == "cann_floor":
        if isinstance(row.get("cann"), str) and parse_cann(row["cann"]) is None:
            out.append(f"{label}: field 'cann' is not a CANN version: {row['cann']!r}")
        if isinstance(row.get("statement"), str) and row["statement"] not in FLOOR_STATEMENTS:
            out.append(
                f"{label}: field 'statement' must be one of {', '.join(FLOOR_STATEMENTS)}, got {row['statement']!r}"
            )
    return out


def _check_product_line(row: Dict[str, Any], label: str) -> List[str]:
    """A ``product_line`` of a ``[[family]]`` or ``[[chip]]`` row carries its source and
    retrieval date (knowledge is data with provenance)."""
    out: List[str] = []
    if not row.get("product_line"):
        for f in ("product_line_source", "product_line_retrieved"):
            if f in row:
                out.append(f"{label}: field '{f}' without 'product_line'")
        return out
    src = row.get("product_line_source")
    if not (isinstance(src, str) and src.strip()):
        out.append(f"{label}: field 'product_line' needs 'product_line_source'")
    when = row.get("product_line_retrieved")
    if not (isinstance(when, str) and _valid_date(when)):
        out.append(f"{label}: field 'product_line' needs 'product_line_retrieved' (a date YYYY-MM-DD)")
    return out


def _spec_ok(text: Any) -> bool:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    if not isinstance(text, str):
        return False
    try:
        SpecifierSet(text)
    except InvalidSpecifier:
        return False
    return True


def _hdk_ok(text: str) -> bool:
    """An HDK version (``26.0.RC1``) or a release-note wildcard (``25.5.X``)."""
    return parse_driver(text) is not None or bool(_HDK_PATTERN.match(text))


def _check_hdk_statements(row: Dict[str, Any], label: str) -> List[str]:
    """The issue-13 fields of a ``[[cann]]`` row: the Y/N grid, per-product pairings, the
    inner version line and the ops package's toolkit list."""
    out: List[str] = []
    grid = row.get("hdk_grid")
    if isinstance(grid, dict):
        for col, cell in grid.items():
            if not _hdk_ok(str(col)):
                out.append(f"{label}: field 'hdk_grid' column {col!r} is not an HDK version or X.Y.X pattern")
            if cell not in ("Y", "N"):
                out.append(f'{label}: field \'hdk_grid\' cell {col!r} must be "Y" or "N", got {cell!r}')
        if grid and not row.get("hdk_grid_source"):
            out.append(f"{label}: field 'hdk_grid' needs 'hdk_grid_source' (the release notes it copies)")
    products = row.get("hdk_products")
    for j, entry in enumerate(products if isinstance(products, list) else [], 1):
        if not isinstance(entry, dict) or set(entry) != {"family", "hdk", "product"}:
            out.append(f"{label}: field 'hdk_products' entry {j} must be {{family = ..., hdk = [...], product = ...}}")
        elif not isinstance(entry["hdk"], list) or not all(isinstance(v, str) and _hdk_ok(v) for v in entry["hdk"]):
            out.append(f"{label}: field 'hdk_products' entry {j}: 'hdk' must list HDK versions")
    if products and not row.get("hdk_products_source"):
        out.append(f"{label}: field 'hdk_products' needs 'hdk_products_source'")
    line = row.get("inner_line")
    if isinstance(line, str) and not _INNER_LINE.match(line):
        out.append(f"{label}: field 'inner_line' is not an inner version line like V100R001C22: {line!r}")
    for v in row.get("ops_toolkit", []) if isinstance(row.get("ops_toolkit"), list) else []:
        if isinstance(v, str) and parse_cann(v) is None and not _HDK_PATTERN.match(v):
            out.append(f"{label}: field 'ops_toolkit' holds {v!r}, not a CANN version or X.Y.X pattern")
    if row.get("ops_toolkit") and not row.get("ops_source"):
        out.append(f"{label}: field 'ops_toolkit' needs 'ops_source'")
    if "protobuf_source" in row and "protobuf" not in row:
        out.append(f"{label}: field 'protobuf_source' without 'protobuf'")
    return out


def _check_hdk_tables(table: str, row: Dict[str, Any], label: str) -> List[str]:
    """``[[hdk_release]]`` (ordered HDK releases per product line), ``[[hdk_floor]]``
    (documented product floors) and ``[[inner_line]]`` (V100R001Cxx lines)."""
    out: List[str] = []
    if table == "hdk_release":
        releases = [parse_driver(v) for v in row.get("releases", []) if isinstance(v, str)]
        if any(v is None for v in releases):
            out.append(f"{label}: field 'releases' holds a value that is not an HDK version")
        elif any(a.compare(b) != -1 for a, b in zip(releases, releases[1:])):  # type: ignore[union-attr]
            out.append(f"{label}: field 'releases' must be in release order, oldest first")
        if isinstance(row.get("per_year"), int) and row["per_year"] < 1:
            out.append(f"{label}: field 'per_year' must be at least 1")
    elif table == "hdk_floor":
        if isinstance(row.get("hdk"), str) and parse_driver(row["hdk"]) is None:
            out.append(f"{label}: field 'hdk' is not an HDK version: {row['hdk']!r}")
        if isinstance(row.get("cann"), str) and parse_cann(row["cann"]) is None:
            out.append(f"{label}: field 'cann' is not a CANN version: {row['cann']!r}")
    else:
        if isinstance(row.get("line"), str) and not _INNER_LINE.match(row["line"]):
            out.append(f"{label}: field 'line' is not an inner version line like V100R001C22: {row['line']!r}")
        for v in row.get("cann", []) if isinstance(row.get("cann"), list) else []:
            if isinstance(v, str) and parse_cann(v) is None:
                out.append(f"{label}: field 'cann' holds {v!r}, not a CANN version")
        for v in row.get("driver", []) if isinstance(row.get("driver"), list) else []:
            if isinstance(v, str) and parse_driver(v) is None:
                out.append(f"{label}: field 'driver' holds {v!r}, not an HDK version")
    return out
