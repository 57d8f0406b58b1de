"""Finding codes as data: the one loader of ``npudoctor/knowledge/data/codes/<area>.toml``.

Each area has one TOML file with one table per code::

    [PKG001]
    name = "torch-npu-torch-mismatch"     # kebab-case, unique over all codes
    area = "packages"                     # one of findings.AREAS; equals the file's name
    severity = "error"                    # error | warning | info (the default of its findings)
    title = "torch and torch_npu are not a matched set"
    kinds = ["K01"]                       # optional: root-cause kinds (signatures.toml [kinds])
    symptom_of = ["CTR002"]               # optional: codes whose problem causes this one
    explain = \"\"\"…what, why, how to fix (``npudoctor explain PKG001``)…\"\"\"

A code is ``PREFIX`` + three digits, and its prefix names its area (``PKG`` → packages,
see :data:`PREFIXES`), so :func:`get` parses only the one file that holds the code: a rule
module costs the parse of its own area's file, once per process.
:func:`all_codes`, :func:`lookup` and :func:`registry` read every file and also check that
names are unique across files.  Any malformed entry raises :class:`CodesError` naming the
file and the code; ``tests/test_codes.py`` loads everything, so a bad edit fails the tests.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING

from npudoctor import lazyre
from npudoctor import tomlread as _toml
from npudoctor.findings import AREAS, SEVERITIES, Code, RegistryError

if TYPE_CHECKING:
    from typing import Any, Dict, List, Mapping, Optional

#: Code prefix → area (the file ``<area>.toml`` holds every code with that prefix).
PREFIXES: Dict[str, str] = {
    "PY": "python",
    "PKG": "packages",
    "CANN": "cann",
    "ENV": "environment",
    "LIB": "libraries",
    "DRV": "driver",
    "DEV": "devices",
    "CTR": "container",
    "HCCL": "hccl",
    "HOST": "host",
    "MTX": "matrix",
    "DEEP": "deep",
    "LNT": "lint",
}

_FIELDS = ("name", "area", "severity", "title", "kinds", "explain", "symptom_of")
_REQUIRED = ("name", "area", "severity", "title", "explain")
_CODE_RE = lazyre.pattern(r"^([A-Z]{2,5})([0-9]{3})$")
_KIND_RE = lazyre.pattern(r"^K[0-9]{2}$")


class CodesError(RegistryError):
    """A finding-codes data file is missing or malformed, or a code is unknown to :func:`get`
    (a programming error, found by the tests)."""


def data_dir() -> str:
    """Directory holding the ``<area>.toml`` files of finding codes."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "codes")


def area_of(code: str) -> Optional[str]:
    """The area that owns ``code`` by its prefix (``"PKG001"`` → ``"packages"``); ``None``
    for a string that is not ``PREFIX`` + three digits with a known prefix."""
    m = _CODE_RE.match(code)
    return PREFIXES.get(m.group(1)) if m else None


def parse_codes(text: str, area: str, source: str = "<text>") -> Dict[str, Code]:
    """Parse and validate the TOML ``text`` of one area's file into ``{code: Code}``, in
    file order.  ``source`` names the file in messages.  Raises :class:`CodesError` for
    invalid TOML (including a code declared twice), an unknown area, a malformed code or
    name, a code whose prefix belongs to another area, an entry whose ``area`` is not the
    file's, an unknown severity, a missing, unknown or mistyped field, a malformed kind,
    or a name used twice in the file."""
    try:
        doc = _toml.loads(text)
    except _toml.TOMLDecodeError as exc:
        raise CodesError(f"{source}: not valid TOML: {exc}") from None
    return codes_of(doc, area, source)


def codes_of(doc: Dict[str, Any], area: str, source: str = "<text>") -> Dict[str, Code]:
    """:func:`parse_codes` of an already parsed document ``doc``.  Raises
    :class:`CodesError` as that does."""
    if area not in AREAS:
        raise CodesError(f"{source}: unknown area {area!r} (known: {', '.join(AREAS)})")
    out: Dict[str, Code] = {}
    names: Dict[str, str] = {}
    for code, entry in doc.items():
        where = f"{source}: [{code}]"
        if not _CODE_RE.match(code):
            raise CodesError(f"{where}: malformed finding code (PREFIX + three digits, e.g. PKG001)")
        if area_of(code) != area:
            raise CodesError(f"{where}: the prefix of {code} belongs to area {area_of(code)!r}, not {area!r}")
        if not isinstance(entry, dict):
            raise CodesError(f"{where}: must be a table")
        unknown = sorted(set(entry) - set(_FIELDS))
        if unknown:
            raise CodesError(f"{where}: unknown field(s) {', '.join(unknown)}")
        missing = [f for f in _REQUIRED if f not in entry]
        if missing:
            raise CodesError(f"{where}: missing field(s) {', '.join(missing)}")
        for f in _REQUIRED:
            if not isinstance(entry[f], str) or not entry[f].strip():
                raise CodesError(f"{where}: field {f!r} must be a non-empty string")
        kinds: Any = entry.get("kinds", [])
        if not isinstance(kinds, list) or not all(isinstance(k, str) and _KIND_RE.match(k) for k in kinds):
            raise CodesError(f"{where}: field 'kinds' must be a list of kinds like \"K01\"")
        symptom_of: Any = entry.get("symptom_of", [])
        if not isinstance(symptom_of, list) or not all(isinstance(c, str) and _CODE_RE.match(c) for c in symptom_of):
            raise CodesError(f"{where}: field 'symptom_of' must be a list of codes like \"CTR002\"")
        if entry["area"] != area:
            raise CodesError(f"{where}: area {entry['area']!r} differs from the file's area {area!r}")
        if entry["severity"] not in SEVERITIES:
            raise CodesError(f"{where}: unknown severity {entry['severity']!r} (known: {', '.join(SEVERITIES)})")
        if entry["name"] in names:
            raise CodesError(f"{where}: name {entry['name']!r} is also used by {names[entry['name']]}")
        try:
            out[code] = Code(
                code,
                entry["name"],
                area=area,
                severity=entry["severity"],
                title=entry["title"],
                explain=entry["explain"],
                kinds=tuple(kinds),
                symptom_of=tuple(symptom_of),
            )
        except RegistryError as exc:
            raise CodesError(f"{where}: {exc}") from None
        names[entry["name"]] = code
    return out


def load_area(area: str, directory: Optional[str] = None) -> Dict[str, Code]:
    """Read and validate ``<directory>/<area>.toml`` (default :func:`data_dir`) into
    ``{code: Code}``.  Raises :class:`CodesError` (also for an unreadable file)."""
    path = os.path.join(directory or data_dir(), f"{area}.toml")
    try:
        doc = _toml.load_bundled(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise CodesError(f"cannot read finding codes {path}: {exc}") from None
    except _toml.TOMLDecodeError as exc:
        raise CodesError(f"{path}: not valid TOML: {exc}") from None
    return codes_of(doc, area, source=path)


#: Per-process caches: area → its codes (filled by :func:`get`), and the full registry.
_AREAS_LOADED: Dict[str, Dict[str, Code]] = {}
_ALL: List[Dict[str, Code]] = []


def load_all(directory: Optional[str] = None) -> Dict[str, Code]:
    """Every code of every ``*.toml`` in ``directory`` (default :func:`data_dir`), sorted
    by code.  Raises :class:`CodesError` for a file whose name is not an area, any
    malformed entry, or a name used by codes of two files."""
    base = directory or data_dir()
    try:
        files = sorted(f for f in os.listdir(base) if f.endswith(".toml"))
    except OSError as exc:
        raise CodesError(f"cannot list finding codes in {base}: {exc}") from None
    found: Dict[str, Code] = {}
    names: Dict[str, str] = {}
    for f in files:
        area = f[: -len(".toml")]
        if directory is None:
            table = _AREAS_LOADED.get(area)
            if table is None:
                table = _AREAS_LOADED[area] = load_area(area)
        else:
            table = load_area(area, base)
        for code, c in table.items():
            if code in found:  # pragma: no cover - a prefix belongs to one area, hence one file
                raise CodesError(f"{os.path.join(base, f)}: [{code}] is declared twice")
            if c.name in names:
                raise CodesError(f"{os.path.join(base, f)}: [{code}] name {c.name!r} is also used by {names[c.name]}")
            found[code] = c
            names[c.name] = code
    return dict(sorted(found.items()))


def get(code: str) -> Code:
    """The :class:`Code` declared as ``code`` (exact spelling, e.g. ``"PKG001"``); parses
    only the file of its area, once per process.  Raises :class:`CodesError` when no file
    declares it (rule modules call this at import time, so a typo fails every test)."""
    area = area_of(code)
    if area is None:
        raise CodesError(f"no finding code {code!r}: not PREFIX + three digits with a known prefix")
    table = _AREAS_LOADED.get(area)
    if table is None:
        table = _AREAS_LOADED[area] = load_area(area)
    found = table.get(code)
    if found is None:
        raise CodesError(f"finding code {code} is not declared in {os.path.join(data_dir(), area + '.toml')}")
    return found


def registry() -> Mapping[str, Code]:
    """Every declared code, ``{code: Code}`` sorted by code (all files parsed and checked
    once per process).  Raises :class:`CodesError`."""
    if not _ALL:
        _ALL.append(load_all())
    return _ALL[0]


def all_codes() -> List[Code]:
    """Every declared :class:`Code`, sorted by code (for ``npudoctor explain --list``)."""
    return list(registry().values())


def lookup(code_or_name: str) -> Optional[Code]:
    """The code for ``PKG001`` or ``torch-npu-torch-mismatch`` (any case, surrounding
    blanks ignored); ``None`` when there is none."""
    key = code_or_name.strip()
    if area_of(key.upper()) is not None:  # a code: its area's file is enough
        with contextlib.suppress(CodesError):
            return get(key.upper())
    codes = registry()
    if key.upper() in codes:
        return codes[key.upper()]
    for c in codes.values():
        if c.name == key.lower():
            return c
    return None
