"""Framework support per Ascend chip family, and the chip family a framework build records.
Data: ``npudoctor/knowledge/data/frameworks/framework_support.toml`` (every row
with its sources, checked 2026-12-01).

Chip families are the matrix's (``matrix/chips.toml``: ``910B``, ``910_93``, ``310P``, ...),
compared case-insensitively with the data's lower-case spelling.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from npudoctor import tomlread
from npudoctor.record import Record

if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple


class Support(Record):
    """One ``[[support]]`` row: ``framework`` on chip ``family`` has ``status``
    (``supported`` | ``experimental`` | ``unsupported`` | ``not-stated``) for the
    releases in ``versions`` (a PEP 440 specifier; ``""`` = every release);
    ``confidence``: ``stated`` or ``inferred``; ``first_version``: the first release with this
    status, or ``""``."""

    framework: str
    family: str
    status: str
    versions: str
    first_version: str
    confidence: str
    note: str
    sources: Tuple[str, ...]


def data_path() -> str:
    """Path of the bundled framework_support.toml."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "frameworks", "framework_support.toml")


def _doc() -> Dict[str, Any]:
    return tomlread.bundled_document(data_path())


_CACHE: Dict[str, Any] = {}


def rows() -> Tuple[Support, ...]:
    """Every ``[[support]]`` row of the data, in file order."""
    if "rows" not in _CACHE:
        _CACHE["rows"] = tuple(
            Support(
                framework=str(r["framework"]),
                family=str(r["chip"]).lower(),
                status=str(r["status"]),
                versions=str(r.get("versions", "")),
                first_version=str(r.get("first_version", "")),
                confidence=str(r.get("confidence", "stated")),
                note=str(r.get("note", "")),
                sources=tuple(str(s) for s in r.get("sources", ())),
            )
            for r in _doc().get("support", [])
        )
    out: Tuple[Support, ...] = _CACHE["rows"]
    return out


def _covers(spec: str, version: str) -> Optional[bool]:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    if not spec:
        return True
    try:
        v = Version(version)
        # a source checkout ("0.9.1rc2.dev4+g5442b46") counts as the release it precedes
        plain = Version(str(v.public).split(".dev")[0])
        return plain in SpecifierSet(spec, prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return None


def support_for(framework: str, family: str, version: Optional[str]) -> Optional[Support]:
    """The row saying how ``framework`` ``version`` runs on chip ``family`` (any case), or
    ``None`` when the data has no row (not documented either way).  A row with a version
    range wins over an unversioned one; an unparseable version matches only unversioned rows."""
    fam = family.lower()
    best: Optional[Support] = None
    for row in rows():
        if row.framework != framework or row.family != fam:
            continue
        if row.versions:
            if version and _covers(row.versions, version):
                return row
            continue
        if best is None:
            best = row
    return best


def first_supporting(framework: str, family: str) -> Optional[Support]:
    """The earliest row with status ``supported`` or ``experimental`` for ``framework`` on
    ``family`` that names its first release (``first_version``), preferring ``supported``
    rows from the first one on that stays supported (the answer to "which version can run
    on this chip at all")."""
    fam = family.lower()
    candidates: List[Support] = [
        r
        for r in rows()
        if r.framework == framework
        and r.family == fam
        and r.status in ("supported", "experimental")
        and r.first_version
    ]
    if not candidates:
        return None
    from packaging.version import InvalidVersion, Version

    def key(r: Support) -> Any:
        try:
            return Version(r.first_version)
        except InvalidVersion:
            return Version("0")

    return min(candidates, key=key)


def newest_supported(framework: str, family: str) -> Optional[Support]:
    """The open-ended ``supported`` row (``>=X``) for ``framework`` on ``family``: the release
    line to move to; ``None`` when the data has none."""
    fam = family.lower()
    for r in rows():
        if (
            r.framework == framework
            and r.family == fam
            and r.status == "supported"
            and r.versions.startswith(">=")
            and "," not in r.versions
        ):
            return r
    return None


def vllm_ascend_family(device_type: Optional[str], soc_version: Optional[str]) -> Optional[str]:
    """The chip family (data spelling, ``"910b"``) a vllm-ascend build records in
    ``vllm_ascend/_build_info.py``: ``__device_type__`` (``A2``/``A3``/``_310P``/``A5``) or,
    for builds before it, the prefix of ``__soc_version__`` (``ASCEND310P3`` → ``310p``).
    ``None`` when neither maps (an unknown value is not judged)."""
    doc = _doc()
    if device_type:
        fam = (doc.get("vllm_ascend_device_type") or {}).get(str(device_type))
        if fam:
            return str(fam)
    if soc_version:
        soc = str(soc_version).lower()
        prefixes = doc.get("vllm_ascend_soc_prefix") or {}
        for prefix in sorted(prefixes, key=len, reverse=True):
            if soc.startswith(prefix):
                return str(prefixes[prefix])
    return None


def build_info_source(framework: str) -> str:
    """The sources of the ``[[build_info]]`` rows of ``framework``, joined (for evidence)."""
    out: List[str] = []
    for r in _doc().get("build_info", []):
        if r.get("framework") == framework:
            for s in r.get("sources", ()):
                if s not in out:
                    out.append(str(s))
    return "; ".join(out[:2])
