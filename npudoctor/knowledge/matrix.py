"""The compatibility matrix: model, loader, schema check and queries.

The matrix is TOML (``schema_version = 1``), one or several files merged:

* ``torch_npu.toml``: ``[[torch_npu]]`` rows (exact package version, torch, CANN, Python
  per platform from the PyPI wheels, branch, status, EOL), ``[[torch_line]]`` (lifecycle and
  documented Python per PyTorch line), ``[[release_tag]]`` (git tag -> package version);
* ``cann.toml``: ``[[cann]]`` rows (HDK pairing/compatibility/minimum, Python range, numpy
  bound per Python), ``[[install_pairing]]`` (tested driver/firmware), ``[[python_dep]]``;
* ``chips.toml``: ``[[family]]`` and ``[[chip]]`` rows.

Every file has a ``[meta]`` table (``name``, ``source``, ``retrieved`` = YYYY-MM-DD) and every
row a ``source`` and ``retrieved``.  The facts come from ``../shared/matrix/REPORT.md``
(official Ascend/pytorch tables, CANN release notes, PyPI); each row cites its own source.

``load_matrix(path=None)`` returns the matrix in use: ``path`` (a .toml file or a directory
of them) if given; else the refreshed copy in the user cache (``npudoctor matrix refresh``)
if it validates and is not older than the bundled one; else the bundled ``matrix/*.toml``
(``npudoctor/_matrix`` in a wheel).  A malformed matrix raises :class:`MatrixError` with a
message naming the file, the row and the field.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Tuple

from npudoctor.knowledge.versions import parse_cann, parse_driver, tokens, version_in

SCHEMA_VERSION = 1
PLATFORMS = ("aarch64", "x86_64")
STATUSES = ("active", "historical", "release-notes-only", "prerelease", "unmapped")
#: Name of the refreshed matrix file inside the cache directory (JSON: the same document
#: as the TOML files, read ~30x faster than TOML by the C JSON parser).
CACHE_FILE = "matrix.json"
#: Environment variable overriding the user cache directory (tests, read-only homes).
CACHE_ENV = "NPUDOCTOR_CACHE_DIR"


class MatrixError(ValueError):
    """The matrix could not be loaded or failed validation (message names file/row/field)."""


def bundled_dir() -> str:
    """Directory of the bundled matrix: ``npudoctor/_matrix`` in a wheel, else the
    repository's top-level ``matrix/``."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    inside = os.path.join(package, "_matrix")
    if os.path.isdir(inside):
        return inside
    return os.path.join(os.path.dirname(package), "matrix")


def cache_dir() -> str:
    """The user cache directory of npudoctor: ``$NPUDOCTOR_CACHE_DIR`` if set, else
    ``platformdirs.user_cache_dir("npudoctor")`` (``~/.cache/npudoctor`` on Linux)."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return env
    import platformdirs

    return platformdirs.user_cache_dir("npudoctor", appauthor=False)


def cache_path() -> str:
    """Path of the refreshed matrix in the cache (may not exist)."""
    return os.path.join(cache_dir(), CACHE_FILE)


# ------------------------------------------------------------------ normalisation helpers
def _pep440(text: str) -> Optional[Any]:
    """``packaging.version.Version`` of a torch/torch_npu version, local tag dropped;
    "1.11.0.rc2 (beta)" is read as 1.11.0rc2.  ``None`` when not PEP 440."""
    from packaging.version import InvalidVersion, Version

    if not isinstance(text, str):
        return None
    clean = re.sub(r"[（(].*?[)）]", "", text).strip()
    try:
        v = Version(clean)
    except InvalidVersion:
        return None
    return Version(v.public)


def _same_cann(a: str, b: str) -> bool:
    """Whether two CANN version strings name the same release: equal as
    :class:`CannVersion`, or a legacy community re-release (``8.0.RC3.beta1`` ==
    commercial ``8.0.RC3``, CANN <= 8.0; REPORT.md §3.6)."""
    va, vb = parse_cann(a), parse_cann(b)
    if va is None or vb is None:
        return tokens(a) == tokens(b)
    if va.compare(vb) == 0:
        return True
    for x, y in ((va, vb), (vb, va)):
        community = any(t.startswith("beta") for t in tokens(x.text)) and (x.major, x.minor) <= (8, 0)
        if community and x.orderable and not y.is_prerelease and x.release == y.release:
            return True
    return False


def _cann_in(cann: str, entries: Iterable[str]) -> bool:
    """``cann`` equals one of ``entries`` or matches a wildcard entry (``8.5.X``)."""
    for e in entries:
        last = tokens(e)[-1:] if e else []
        if last and last[0] in ("x", "*"):
            if version_in(cann, [e]):
                return True
        elif _same_cann(cann, e):
            return True
    return False


def _python_key(py: str) -> Tuple[int, ...]:
    try:
        return tuple(int(p) for p in py.split("."))
    except ValueError:
        return (0,)


# ------------------------------------------------------------------ row types
@dataclass
class TorchNpuRow:
    """One torch_npu package version.  ``python``: platform -> CPython versions with a
    wheel on PyPI (empty when not on PyPI); ``cann``: officially paired CANN;
    ``cann_compatible``: CANN versions/patterns declared compatible with the line."""

    torch_npu: str
    torch: str
    cann: List[str] = field(default_factory=list)
    cann_compatible: List[str] = field(default_factory=list)
    python: Dict[str, List[str]] = field(default_factory=dict)
    python_doc: List[str] = field(default_factory=list)
    platform_tags: Dict[str, List[str]] = field(default_factory=dict)
    branch: str = ""
    ext_version: str = ""
    status: str = "active"
    eol: Optional[str] = None
    note: str = ""
    source: str = ""
    retrieved: str = ""

    @property
    def version(self) -> Any:
        """``packaging`` Version of the package (``None`` if not PEP 440)."""
        return _pep440(self.torch_npu)

    @property
    def on_pypi(self) -> bool:
        return any(self.python.get(p) for p in PLATFORMS)

    def pythons(self, platform: Optional[str] = None) -> List[str]:
        """Python versions a wheel exists for (on ``platform``, or any), falling back
        to the documented ones when the version is not on PyPI."""
        if self.on_pypi:
            if platform:
                return list(self.python.get(platform, []))
            out = sorted({p for plat in PLATFORMS for p in self.python.get(plat, [])}, key=_python_key)
            return out
        return list(self.python_doc)

    def to_dict(self) -> Dict[str, Any]:
        return {
            "torch_npu": self.torch_npu,
            "torch": self.torch,
            "cann": list(self.cann),
            "cann_compatible": list(self.cann_compatible),
            "python": {k: list(v) for k, v in self.python.items()},
            "python_doc": list(self.python_doc),
            "branch": self.branch,
            "ext_version": self.ext_version,
            "status": self.status,
            "eol": self.eol,
            "note": self.note,
            "source": self.source,
            "retrieved": self.retrieved,
        }


@dataclass
class DriverRequirement:
    """What a CANN version needs from the NPU driver (Ascend HDK).  ``paired``: HDK
    releases officially matched; ``compatible``: versions/patterns declared compatible,
    without repeats and without the paired ones, newest first (``25.5.X`` sorts as the
    newest of its line); ``minimum``: oldest HDK any official source pairs/tests/requires
    with it.  :attr:`versions` is the one list to show: paired, then compatible."""

    cann: str
    paired: List[str]
    compatible: List[str]
    minimum: Optional[str]
    source: str
    note: str = ""

    @property
    def versions(self) -> List[str]:
        """Every HDK version/pattern that works with the CANN, once each: the paired
        ones first, then the compatible ones newest first (``9.1.0`` -> ``26.1.0,
        26.0.RC1, 25.7.RC1, 25.5.X``)."""
        return _unique_hdk(list(self.paired) + list(self.compatible))


@dataclass
class Chip:
    """An NPU chip as named by npu-smi.  ``soc_version`` is ``None`` when it needs the
    Chip Name + NPU Name of ``npu-smi info -t board`` (A3, 950)."""

    name: str
    soc_version: Optional[str]
    family: str
    bf16: bool
    kernels_dir: str
    kernels_package_chip: str
    note: str = ""
    source: str = ""


@dataclass
class Family:
    """A chip family (``910``, ``910B``, ``910_93``, ``310P``, ``310B``, ``310``, ``950``)."""

    family: str
    label: str
    bf16: bool
    kernels_dir: str
    package_chip: str
    kernels_package: str
    ops_package: str
    supported: str
    since_torch_npu: List[str]
    since_ext: str = ""
    note: str = ""
    source: str = ""


# ------------------------------------------------------------------ schema
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_PY = re.compile(r"^3\.\d{1,2}$")

# field -> (type, required)
_STR, _LIST, _BOOL, _DICT = "string", "list of strings", "boolean", "table"
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
        "hdk_minimum": (_STR, False),
        "python": (_STR, False),
        "numpy": ("list of tables", False),
        "numpy_doc": (_STR, False),
        "protobuf": (_STR, False),
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
        "note": (_STR, False),
        "source": (_STR, True),
        "retrieved": (_STR, True),
    },
    "chip": {
        "name": (_STR, True),
        "soc_version": (_STR, True),
        "family": (_STR, True),
        "note": (_STR, False),
        "source": (_STR, True),
        "retrieved": (_STR, True),
    },
}
_KEY_FIELD = {
    "torch_npu": "torch_npu",
    "torch_line": "torch",
    "release_tag": "tag",
    "cann": "version",
    "install_pairing": "cann",
    "python_dep": "dist",
    "family": "family",
    "chip": "name",
}


def _type_ok(kind: str, value: Any) -> bool:
    if kind == _STR:
        return isinstance(value, str)
    if kind == _BOOL:
        return isinstance(value, bool)
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
    return problems


def _check_values(table: str, row: Dict[str, Any], label: str) -> List[str]:
    out: List[str] = []
    ret = row.get("retrieved")
    if isinstance(ret, str) and not _valid_date(ret):
        out.append(f"{label}: field 'retrieved' must be a date YYYY-MM-DD, got {ret!r}")
    if isinstance(row.get("source"), str) and not row["source"].strip():
        out.append(f"{label}: field 'source' is empty")
    if table == "torch_npu":
        for f in ("torch_npu", "torch"):
            if isinstance(row.get(f), str) and _pep440(row[f]) is None:
                out.append(f"{label}: field '{f}' is not a version: {row[f]!r}")
        if isinstance(row.get("status"), str) and row["status"] not in STATUSES:
            out.append(f"{label}: field 'status' must be one of {', '.join(STATUSES)}, got {row['status']!r}")
        for c in row.get("cann", []) if isinstance(row.get("cann"), list) else []:
            if isinstance(c, str) and parse_cann(c) is None:
                out.append(f"{label}: field 'cann' holds {c!r}, not a CANN version")
        for c in row.get("cann_compatible", []) if isinstance(row.get("cann_compatible"), list) else []:
            if isinstance(c, str) and parse_cann(c) is None and not re.match(r"^\d+\.\d+\.[Xx*]$", c):
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
                if isinstance(v, str) and parse_driver(v) is None and not re.match(r"^\d+\.\d+\.[Xx*]$", v):
                    out.append(f"{label}: field '{f}' holds {v!r}, not an HDK version or X.Y.X pattern")
        if isinstance(row.get("hdk_minimum"), str) and parse_driver(row["hdk_minimum"]) is None:
            out.append(f"{label}: field 'hdk_minimum' is not an HDK version: {row['hdk_minimum']!r}")
        for f in ("python",):
            if isinstance(row.get(f), str) and row[f] and not _spec_ok(row[f]):
                out.append(f"{label}: field '{f}' is not a version range: {row[f]!r}")
        for j, entry in enumerate(row.get("numpy", []) if isinstance(row.get("numpy"), list) else [], 1):
            if not isinstance(entry, dict) or set(entry) != {"python", "spec"}:
                out.append(f"{label}: field 'numpy' entry {j} must be {{python = ..., spec = ...}}")
            elif not (_spec_ok(entry["python"]) and _spec_ok(entry["spec"])):
                out.append(f"{label}: field 'numpy' entry {j} has an invalid range")
    elif table == "install_pairing":
        if isinstance(row.get("driver"), str) and parse_driver(row["driver"]) is None:
            out.append(f"{label}: field 'driver' is not a driver version: {row['driver']!r}")
    elif table == "python_dep" and isinstance(row.get("spec"), str) and row["spec"] and not _spec_ok(row["spec"]):
        out.append(f"{label}: field 'spec' is not a version range: {row['spec']!r}")
    return out


def _valid_date(text: str) -> bool:
    if not _DATE.match(text):
        return False
    try:
        _dt.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _spec_ok(text: Any) -> bool:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    if not isinstance(text, str):
        return False
    try:
        SpecifierSet(text)
    except InvalidSpecifier:
        return False
    return True


# ------------------------------------------------------------------ the matrix
class Matrix:
    """Rows of the compatibility matrix, their provenance, and the queries rules use.

    ``data`` is the merged TOML document; ``provenance`` is
    ``{source, retrieved, sha256, origin ("bundled"|"cache"|"file"), files, sources}``.
    """

    def __init__(self, data: Dict[str, Any], provenance: Dict[str, Any]) -> None:
        self.data = data
        self.provenance = provenance
        self.torch_npu_rows: List[TorchNpuRow] = [_torch_npu_row(r) for r in data.get("torch_npu", [])]
        self.cann_rows: List[Dict[str, Any]] = list(data.get("cann", []))
        self.families: Dict[str, Family] = {}
        for r in data.get("family", []):
            fam = Family(
                family=r["family"],
                label=r["label"],
                bf16=bool(r["bf16"]),
                kernels_dir=r["kernels_dir"],
                package_chip=r["package_chip"],
                kernels_package=r.get("kernels_package", ""),
                ops_package=r.get("ops_package", ""),
                supported=r["supported"],
                since_torch_npu=list(r.get("since_torch_npu", [])),
                since_ext=r.get("since_ext", ""),
                note=r.get("note", ""),
                source=r.get("source", ""),
            )
            self.families[fam.family] = fam
        self.chips: List[Chip] = []
        for r in data.get("chip", []):
            fam = self.families.get(r["family"])
            self.chips.append(
                Chip(
                    name=r["name"],
                    soc_version=r["soc_version"] or None,
                    family=r["family"],
                    bf16=fam.bf16 if fam else False,
                    kernels_dir=fam.kernels_dir if fam else "",
                    kernels_package_chip=fam.package_chip if fam else "",
                    note=r.get("note", "") or (fam.note if fam else ""),
                    source=r.get("source", ""),
                )
            )
        self._deps: List[Dict[str, Any]] = list(data.get("python_dep", []))

    # ---- compatibility with the bootstrap API
    @property
    def torch_npu(self) -> List[Dict[str, Any]]:
        """The raw ``[[torch_npu]]`` tables."""
        return list(self.data.get("torch_npu", []))

    # ---- provenance
    def age_days(self, today: Optional[_dt.date] = None) -> Optional[int]:
        """Days from the newest ``retrieved`` date to ``today`` (default: today);
        ``None`` when no date is recorded."""
        ret = self.provenance.get("retrieved")
        if not isinstance(ret, str) or not _valid_date(ret):
            return None
        today = today or _dt.date.today()
        return (today - _dt.date.fromisoformat(ret)).days

    # ---- torch_npu queries
    def find_torch_npu(self, version: str) -> Optional[TorchNpuRow]:
        """The row of this exact torch_npu version (PEP 440 normalised: ``2.1.0rc1`` ==
        ``2.1.0.rc1``; a local tag ``+git…`` is ignored), or ``None``."""
        want = _pep440(version)
        if want is None:
            return None
        for row in self.torch_npu_rows:
            if row.version == want:
                return row
        return None

    def rows_for_torch(self, torch_version: str) -> List[TorchNpuRow]:
        """Rows whose torch is ``torch_version`` (``2.1.0+cpu`` matches ``2.1.0``), newest first."""
        want = _pep440(torch_version)
        if want is None:
            return []
        return _newest_first([r for r in self.torch_npu_rows if _pep440(r.torch) == want])

    def rows_for_cann(self, cann: str) -> List[TorchNpuRow]:
        """Rows whose official pairing (the mapping table's CANN column) is ``cann``,
        newest first.  ``8.0.0`` -> 2.4.0.post2, 2.3.1.post4, 2.1.0.post10."""
        return _newest_first([r for r in self.torch_npu_rows if r.cann and _cann_in(cann, r.cann)])

    def cann_fit(self, row: TorchNpuRow, cann: str) -> str:
        """How ``cann`` fits ``row``: ``"paired"`` (the official pairing),
        ``"compatible"`` (declared compatible with the extension line by the release
        notes), ``"incompatible"`` (the row states its CANN and this is not it) or
        ``"unknown"`` (no CANN statement for the row, or an unparseable/internal version)."""
        v = parse_cann(cann)
        if v is None:
            return "unknown"
        if row.cann and _cann_in(cann, row.cann):
            return "paired"
        if row.cann_compatible and _cann_in(cann, row.cann_compatible):
            return "compatible"
        if v.is_internal:
            return "unknown"
        if row.cann or row.cann_compatible:
            return "incompatible"
        return "unknown"

    def fits(
        self,
        torch: Optional[str] = None,
        python: Optional[str] = None,
        platform: Optional[str] = None,
        cann: Optional[str] = None,
    ) -> List[TorchNpuRow]:
        """torch_npu rows that fit all given constraints, newest first.  Pre-release
        rows are left out.  ``python`` ("3.10") is checked against the PyPI wheels of
        ``platform`` (``aarch64``/``x86_64``; any platform if ``None``), falling back to
        the documented Python versions for builds that are not on PyPI.  ``cann`` must be
        ``paired`` or ``compatible`` (:meth:`cann_fit`)."""
        rows = [r for r in self.torch_npu_rows if r.status != "prerelease"]
        if torch:
            want = _pep440(torch)
            rows = [r for r in rows if _pep440(r.torch) == want]
        if python:
            py = ".".join(python.strip().split(".")[:2])
            rows = [r for r in rows if py in r.pythons(platform)]
        elif platform:
            rows = [r for r in rows if not r.on_pypi or r.python.get(platform)]
        if cann:
            rows = [r for r in rows if self.cann_fit(r, cann) in ("paired", "compatible")]
        return _newest_first(rows)

    def torch_line(self, torch: str) -> Optional[Dict[str, Any]]:
        """The ``[[torch_line]]`` row (lifecycle, documented Python) of a PyTorch version."""
        want = _pep440(torch)
        for r in self.data.get("torch_line", []):
            if _pep440(r.get("torch", "")) == want:
                return r
        return None

    def support(self, row: TorchNpuRow, today: Optional[_dt.date] = None) -> Dict[str, Any]:
        """Lifecycle of a torch_npu row's PyTorch line as of ``today`` (default: the
        later of today and the matrix's ``retrieved`` date, so a stale clock does not
        revive a line the sources already called EOL).

        Returns ``{"state": "eol"|"maintenance"|"development"|"planned"|"unknown",
        "since": date or None, "next": "EOL from 2027-01-25" or None, "text": "EOL since
        2025-12-30", "conflict": note or None, "source": ...}``.  ``state`` differs from
        ``row.status`` (whether the mapping table lists the row): 2.1.0.post10 is an
        ``active`` row of a line that is EOL since 2025-12-30.  Source: the row's ``eol``
        and the ``[[torch_line]]`` rows (Ascend/pytorch SUPPORT.md: status, EOL date,
        ``next_state`` "maintenance from D" / "EOL from D")."""
        ref = today or _dt.date.today()
        retrieved = self.provenance.get("retrieved")
        if today is None and isinstance(retrieved, str) and _valid_date(retrieved):
            ref = max(ref, _dt.date.fromisoformat(retrieved))
        line = self.torch_line(row.torch) or {}
        status = str(line.get("status") or "")
        eol = row.eol or line.get("eol")
        nxt = str(line.get("next_state") or "")
        m = re.match(r"^\s*(eol|maintenance)\s+from\s+(\d{4}-\d{2}-\d{2})\s*$", nxt, re.I)
        next_state, next_date = (m.group(1).lower(), m.group(2)) if m and _valid_date(m.group(2)) else (None, None)

        def passed(date: Any) -> bool:
            return isinstance(date, str) and _valid_date(date) and _dt.date.fromisoformat(date) <= ref

        out: Dict[str, Any] = {
            "state": "unknown",
            "since": None,
            "next": nxt or None,
            "conflict": line.get("conflict") or None,
            "source": line.get("source") or row.source,
        }
        if status == "eol" or passed(eol) or (next_state == "eol" and passed(next_date)):
            when = eol if isinstance(eol, str) and _valid_date(eol) else (next_date if next_state == "eol" else None)
            out.update(state="eol", since=when, next=None, text=f"EOL since {when}" if when else "EOL")
        elif status == "maintenance" or (next_state == "maintenance" and passed(next_date)):
            since = next_date if next_state == "maintenance" else line.get("released")
            out["state"] = "maintenance"
            out["since"] = since if status != "maintenance" else None
            eol_next = next_date if next_state == "eol" else (eol if isinstance(eol, str) else None)
            out["next"] = f"EOL from {eol_next}" if eol_next else None
            out["text"] = (f"maintenance since {since}" if status != "maintenance" else "maintenance") + (
                f", EOL from {eol_next}" if eol_next else ""
            )
        elif status in ("development", "planned"):
            out["state"] = status
            out["text"] = status + (f", {nxt}" if nxt else "")
        elif isinstance(eol, str) and _valid_date(eol):
            out["next"] = f"EOL from {eol}"
            out["text"] = f"EOL from {eol}"
        else:
            out["text"] = "-"
        if out["conflict"]:
            out["text"] += " (sources disagree)"
        return out

    def ext_version_of(self, torch_npu: str) -> Optional[str]:
        """The extension (TorchNPU product) version that built ``torch_npu``, from its
        row or from the release tags (``2.1.0.post14`` -> ``7.1.0.1``)."""
        row = self.find_torch_npu(torch_npu)
        if row and row.ext_version:
            return row.ext_version
        want = _pep440(torch_npu)
        for t in self.data.get("release_tag", []):
            if want is not None and _pep440(t.get("torch_npu", "")) == want and t.get("ext_version"):
                return str(t["ext_version"])
        return None

    # ---- CANN queries
    def cann_row(self, cann: str) -> Optional[Dict[str, Any]]:
        """The ``[[cann]]`` row of this CANN release (community ``.beta1`` re-releases of
        CANN <= 8.0 map to their commercial release), or ``None``."""
        for r in self.cann_rows:
            if _same_cann(cann, r.get("version", "")):
                return r
        return None

    def driver_requirement(self, cann: str) -> Optional[DriverRequirement]:
        """The driver (Ascend HDK) requirement of a CANN version, ``None`` when the
        matrix has no row for it.  Source per row (CANN release notes, MindSpore pages)."""
        r = self.cann_row(cann)
        if r is None or not (r.get("hdk_paired") or r.get("hdk_compatible") or r.get("hdk_minimum")):
            return None
        paired = _unique_hdk(r.get("hdk_paired", []))
        taken = {_hdk_norm(p) for p in paired}
        compatible = sorted(
            (c for c in _unique_hdk(r.get("hdk_compatible", [])) if _hdk_norm(c) not in taken),
            key=_hdk_sort_key,
            reverse=True,
        )
        return DriverRequirement(
            cann=r["version"],
            paired=paired,
            compatible=compatible,
            minimum=r.get("hdk_minimum") or None,
            source=r.get("source", ""),
            note=r.get("note", ""),
        )

    def driver_fit(self, cann: str, driver: str) -> str:
        """How an installed driver version fits a CANN version:

        * ``"paired"``: the driver is (a patch/build of) the officially paired HDK;
        * ``"compatible"``: listed as compatible by the CANN release notes, or a
          tested install combination of the official install helper (``[[install_pairing]]``);
        * ``"too-old"``: older than the oldest HDK any source pairs or tests with it;
        * ``"incompatible"``: the release notes give a closed list and this driver,
          inside the listed range, is not on it;
        * ``"unknown"``: no statement (no row, newer than everything listed, internal
          build, unparseable version).
        """
        req = self.driver_requirement(cann)
        d = parse_driver(driver)
        if req is None or d is None or not d.orderable:
            return "unknown"
        if any(d.within(p) for p in req.paired):
            return "paired"
        for c in req.compatible:
            if (tokens(c)[-1:] in (["x"], ["*"]) and version_in(d.release, [c])) or (
                tokens(c)[-1:] not in (["x"], ["*"]) and d.within(c)
            ):
                return "compatible"
        for pair in self.data.get("install_pairing", []):
            if _same_cann(cann, pair.get("cann", "")) and d.within(str(pair.get("driver", ""))):
                return "compatible"
        floor = req.minimum
        if floor is not None and d.compare(floor) == -1:
            return "too-old"
        if req.compatible:
            listed = [parse_driver(c.replace("X", "0").replace("x", "0")) for c in req.compatible + req.paired]
            listed_v = [v for v in listed if v is not None and v.orderable]
            if listed_v:
                lo = min(listed_v)
                hi = max(listed_v)
                if d.compare(lo) == -1:
                    return "too-old"
                newest_line = (hi.major, hi.minor)
                if (d.major, d.minor) > newest_line:
                    return "unknown"
                return "incompatible"
        return "unknown"

    def numpy_requirement(self, cann: str, python: str) -> Optional[Tuple[str, str, bool]]:
        """``(spec, source, exact)`` of the numpy range CANN's Python components need
        with this Python: from the CANN's own row (``exact`` True) or else from the
        newest documented CANN release before it (``exact`` False).  ``None`` when no
        documented row applies (unknown or internal CANN build older than all rows)."""
        from packaging.specifiers import SpecifierSet

        v = parse_cann(cann)
        if v is None:
            return None
        row = self.cann_row(cann)
        exact = row is not None and bool(row.get("numpy"))
        if not exact:
            best = None
            for r in self.cann_rows:
                if not r.get("numpy"):
                    continue
                rv = parse_cann(r["version"])
                if rv is None or rv.compare(v) not in (-1,):
                    continue
                if best is None or parse_cann(best["version"]).compare(rv) == -1:  # type: ignore[union-attr]
                    best = r
            row = best
        if row is None:
            return None
        py = ".".join(python.strip().split(".")[:2]) if python else ""
        for entry in row.get("numpy", []):
            if not py or py in SpecifierSet(entry["python"]):
                return entry["spec"], f"CANN {row['version']}: {row.get('source', '')}", exact
        return None

    def numpy_spec(self, cann: str, python: str) -> Optional[str]:
        """pip specifier for numpy that this CANN needs with this Python, e.g.
        ``">=1.19.2,<2"`` (CANN 8.0.0), ``">2.1"`` (CANN 8.5.0 + Python 3.13),
        ``">=1.19.2"`` (9.x, no upper bound); ``None`` when undocumented.  REPORT.md §6.2."""
        req = self.numpy_requirement(cann, python)
        return req[0] if req else None

    def cann_python_range(self, cann: str) -> Optional[str]:
        """pip-style range of CPython versions the CANN install guide supports, or None."""
        r = self.cann_row(cann)
        return (r.get("python") or None) if r else None

    def cann_python_deps(self, cann: Optional[str] = None) -> List[str]:
        """pip distribution names CANN's Python components need at runtime (required
        ones; ``pathlib2`` and other optional entries left out).  The list does not vary
        by CANN version in the documented range (6.2.RC2 … 9.1.0)."""
        return [d["dist"] for d in self._deps if not d.get("optional")]

    def python_dep_spec(self, dist: str) -> str:
        """Documented requirement of a CANN Python dependency (``">=4.4.0"``) or ``""``."""
        for d in self._deps:
            if d["dist"] == dist:
                return d.get("spec", "")
        return ""

    def import_name(self, dist: str) -> str:
        """Import name of a dependency: ``absl-py`` -> ``absl``, ``pyyaml`` -> ``yaml``,
        ``protobuf`` -> ``google.protobuf``; unknown names -> dashes to underscores."""
        for d in self._deps:
            if d["dist"].lower() == dist.lower():
                return d["import"]
        return dist.replace("-", "_")

    # ---- chips
    def chip(self, npu_smi_name: str) -> Optional[Chip]:
        """The chip for an npu-smi Name ("910B3", "Ascend 910B3", "910B4-1", "310P3",
        "Ascend910" (A3), "910B" (legacy 910)) or a SoC name ("Ascend910B3",
        "Ascend910_9391"); ``None`` when unknown."""
        if not isinstance(npu_smi_name, str):
            return None
        raw = npu_smi_name.strip()
        squashed = re.sub(r"\s+", "", raw)
        candidates = [raw, squashed]
        if squashed.lower().startswith("ascend"):
            candidates.append(squashed[6:])
        for cand in candidates:
            for c in self.chips:
                if c.name.lower() == cand.lower() or (c.soc_version and c.soc_version.lower() == cand.lower()):
                    return c
        if squashed.lower().startswith("ascend950"):
            for c in self.chips:
                if c.family == "950":
                    return c
        return None

    def family_supported(self, family: str, torch_npu: Optional[str]) -> Optional[bool]:
        """Whether torch_npu (a package version; ``None`` = any current release) supports
        a chip family.  ``None`` when the sources conflict (legacy 310) or the family is
        unknown.  From REPORT.md §1.8/§4.4: A3 (``910_93``) from the 6.0.rc3 line
        (2.1.0.post8, 2.3.1.post2, 2.4.0 and every later line), 950 from 26.0.0."""
        fam = self.families.get(family)
        if fam is None:
            return None
        if fam.supported == "yes":
            return True
        if fam.supported == "no":
            return False
        if fam.supported != "since":
            return None
        if torch_npu is None:
            return True
        v = _pep440(torch_npu)
        if v is None:
            return None
        firsts = [x for x in (_pep440(s) for s in fam.since_torch_npu) if x is not None]
        if not firsts:
            return None
        for first in firsts:
            if first.release == v.release:
                return v >= first
        newest_line = max(f.release for f in firsts)
        return v.release > newest_line

    def newest_for(
        self, family: str, platform: Optional[str], python: Optional[str], driver: Optional[str] = None
    ) -> Optional[TorchNpuRow]:
        """The newest officially paired torch_npu row for a chip family, platform and
        Python (and, given a driver version, whose paired CANN the driver does not rule
        out: ``driver_fit`` not ``too-old``/``incompatible``).  ``None`` when none fits."""
        for row in self.fits(python=python, platform=platform):
            if row.status not in ("active", "historical", "release-notes-only") or not row.cann:
                continue
            if self.family_supported(family, row.torch_npu) is not True:
                continue
            if driver and self.driver_fit(row.cann[0], driver) in ("too-old", "incompatible"):
                continue
            return row
        return None


def _hdk_norm(text: str) -> str:
    """Case- and separator-insensitive form of an HDK version or pattern (``26.0.RC1`` ==
    ``26.0.rc1``; ``25.5.X`` == ``25.5.x``)."""
    return ".".join(tokens(str(text)))


def _unique_hdk(values: Iterable[Any]) -> List[str]:
    """HDK versions/patterns without repeats, first spelling and order kept."""
    seen = set()
    out: List[str] = []
    for v in values:
        key = _hdk_norm(str(v))
        if key and key not in seen:
            seen.add(key)
            out.append(str(v))
    return out


def _hdk_sort_key(text: str) -> Tuple[int, Any]:
    """Sort key of an HDK version or ``X.Y.X`` pattern (a pattern sorts as the newest
    version of its line: ``25.5.X`` after ``25.5.2``); unparseable text sorts first."""
    parts = tokens(str(text))
    if parts and parts[-1] in ("x", "*"):
        parts = parts[:-1] + ["99999"]
    v = parse_driver(".".join(parts))
    if v is None or not v.orderable:
        return (0, ())
    return (1, v)


def _newest_first(rows: List[TorchNpuRow]) -> List[TorchNpuRow]:
    from packaging.version import Version

    zero = Version("0")
    return sorted(rows, key=lambda r: r.version or zero, reverse=True)


def _torch_npu_row(r: Dict[str, Any]) -> TorchNpuRow:
    py = r.get("python") or {}
    return TorchNpuRow(
        torch_npu=r["torch_npu"],
        torch=r["torch"],
        cann=list(r.get("cann", [])),
        cann_compatible=list(r.get("cann_compatible", [])),
        python={p: list(py.get(p, [])) for p in PLATFORMS},
        python_doc=list(r.get("python_doc", [])),
        platform_tags={k: list(v) for k, v in (r.get("platform_tags") or {}).items()},
        branch=r.get("branch", ""),
        ext_version=r.get("ext_version", ""),
        status=r.get("status", "active"),
        eol=r.get("eol"),
        note=r.get("note", ""),
        source=r.get("source", ""),
        retrieved=r.get("retrieved", ""),
    )


# ------------------------------------------------------------------ loading
def _read_doc(file: str) -> Tuple[Dict[str, Any], bytes]:
    """Parse one matrix file: TOML, or JSON for ``*.json`` (the refreshed cache copy).
    Raises :class:`MatrixError` naming the file."""
    try:
        with open(file, "rb") as fh:
            raw = fh.read(32 * 1024 * 1024 + 1)
    except OSError as exc:
        raise MatrixError(f"cannot read matrix file {file}: {exc.strerror or exc}") from None
    if len(raw) > 32 * 1024 * 1024:
        raise MatrixError(f"matrix file {file} is larger than 32 MiB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MatrixError(f"matrix file {file} is not UTF-8 text: {exc}") from None
    if file.endswith(".json"):
        import json

        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise MatrixError(f"matrix file {file} is not valid JSON (truncated?): {exc}") from None
        if not isinstance(doc, dict):
            raise MatrixError(f"matrix file {file} does not hold a matrix document")
        return doc, raw
    try:
        import tomllib as _toml  # Python 3.11+
    except ImportError:  # pragma: no cover - exercised on 3.8-3.10
        import tomli as _toml  # type: ignore[no-redef]
    try:
        return _toml.loads(text), raw
    except ValueError as exc:
        raise MatrixError(f"matrix file {file} is not valid TOML: {exc}") from None


_META_RETRIEVED = re.compile(r'^\[meta\][^\[]*?^retrieved\s*=\s*"(\d{4}-\d{2}-\d{2})"', re.M | re.S)


def _bundled_retrieved(directory: str) -> str:
    """Newest ``[meta] retrieved`` date of the bundled files, read without parsing the
    TOML (so that a valid cache copy is used without the cost of loading both)."""
    best = ""
    try:
        names = [n for n in os.listdir(directory) if n.endswith(".toml")]
    except OSError:
        return best
    for name in names:
        try:
            with open(os.path.join(directory, name), encoding="utf-8", errors="replace") as fh:
                m = _META_RETRIEVED.search(fh.read())
        except OSError:
            continue
        if m and m.group(1) > best:
            best = m.group(1)
    return best


def merge_documents(docs: Iterable[Tuple[str, Dict[str, Any]]]) -> Dict[str, Any]:
    """Merge parsed matrix files: arrays of tables are concatenated, ``[meta]`` tables
    are collected into ``metas`` (one per file), ``schema_version`` must agree.
    Raises :class:`MatrixError`."""
    data: Dict[str, Any] = {"schema_version": SCHEMA_VERSION, "metas": []}
    for name, doc in docs:
        sv = doc.get("schema_version")
        if sv != SCHEMA_VERSION:
            raise MatrixError(f"matrix file {name}: schema_version is {sv!r}, expected {SCHEMA_VERSION}")
        for key, value in doc.items():
            if key == "schema_version":
                continue
            if key == "meta":
                if not isinstance(value, dict):
                    raise MatrixError(f"matrix file {name}: [meta] must be a table")
                data["metas"].append(dict(value, file=os.path.basename(name)))
            elif key == "metas":
                if not isinstance(value, list):
                    raise MatrixError(f"matrix file {name}: metas must be an array of tables")
                data["metas"].extend(value)
            elif isinstance(value, list):
                data.setdefault(key, []).extend(value)
            else:
                raise MatrixError(f"matrix file {name}: unexpected top-level key '{key}'")
    return data


def _files_of(target: str) -> List[str]:
    if os.path.isdir(target):
        try:
            names = sorted(f for f in os.listdir(target) if f.endswith((".toml", ".json")))
        except OSError as exc:
            raise MatrixError(f"cannot list matrix directory {target}: {exc.strerror or exc}") from None
        if not names:
            raise MatrixError(f"matrix directory {target} holds no .toml file")
        return [os.path.join(target, f) for f in names]
    if not os.path.exists(target):
        raise MatrixError(f"matrix file {target} does not exist")
    return [target]


def load_from(target: str, origin: str, partial: bool = False) -> Matrix:
    """Load, merge and validate the matrix at ``target`` (file or directory);
    ``partial`` accepts a part of the matrix (see :func:`validate`).
    Raises :class:`MatrixError` naming the file, row and field of the first problems."""
    files = _files_of(target)
    digest = hashlib.sha256()
    docs = []
    for f in files:
        doc, raw = _read_doc(f)
        digest.update(raw)
        docs.append((f, doc))
    data = merge_documents(docs)
    where = target if len(files) == 1 else f"{target}/*.toml"
    problems = validate(data, where=os.path.basename(where) if len(files) == 1 else where, partial=partial)
    for _i, meta in enumerate(data["metas"], 1):
        ret = meta.get("retrieved")
        if not (isinstance(ret, str) and _valid_date(ret)):
            problems.append(f"{meta.get('file', where)}: [meta] field 'retrieved' must be a date YYYY-MM-DD")
    if problems:
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise MatrixError("invalid matrix: " + "; ".join(problems[:5]) + more)
    dates = [m["retrieved"] for m in data["metas"] if isinstance(m.get("retrieved"), str)]
    sources: List[str] = []
    for m in data["metas"]:
        for s in m.get("sources", []) or []:
            if isinstance(s, str) and s not in sources:
                sources.append(s)
    prov = {
        "source": target,
        "origin": origin,
        "retrieved": max(dates) if dates else None,
        "sha256": digest.hexdigest(),
        "files": [os.path.basename(f) for f in files],
        "sources": sources,
    }
    refreshed = [m for m in data["metas"] if m.get("refreshed")]
    if refreshed:
        prov["refreshed"] = refreshed[-1]["refreshed"]
        prov["refreshed_from"] = list(refreshed[-1].get("refreshed_from", []))
    return Matrix(data, prov)


_LOADED: Dict[Any, Matrix] = {}


def _stat_key(path: str) -> Any:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def load_matrix(path: Optional[str] = None) -> Matrix:
    """:func:`load_uncached`, memoised per process: the devices probe and the rules of
    one run share one parse.  A changed file (refresh, edit) is loaded anew: the key
    holds the path and the size and mtime of the file or cache copy it reads."""
    key = (path, _stat_key(path) if path else _stat_key(cache_path()))
    found = _LOADED.get(key)
    if found is None:
        found = _LOADED[key] = load_uncached(path)
    return found


def load_uncached(path: Optional[str] = None) -> Matrix:
    """The matrix in use.  ``path`` (a .toml/.json file or a directory of them) if
    given (origin "file"); else the refreshed copy in the user cache when it validates
    and is not older than the bundled matrix (origin "cache"); else the bundled matrix
    (origin "bundled").  A broken cache copy is skipped (its problem is recorded in
    ``provenance["cache_error"]``).  Raises :class:`MatrixError`."""
    if path:
        return load_from(path, "file")
    cached_file = cache_path()
    cache_error = cache_note = None
    if os.path.exists(cached_file):
        try:
            cached = load_from(cached_file, "cache")
        except MatrixError as exc:
            cache_error = str(exc)
        else:
            if (cached.provenance.get("retrieved") or "") >= _bundled_retrieved(bundled_dir()):
                return cached
            cache_note = f"cached matrix {cached_file} is older than the bundled one; not used"
    bundled = load_from(bundled_dir(), "bundled")
    if cache_error:
        bundled.provenance["cache_error"] = cache_error
    if cache_note:
        bundled.provenance["cache_note"] = cache_note
    return bundled
