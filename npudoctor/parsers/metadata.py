"""Pure parsers of Python distribution metadata (no I/O).

Formats (the packaging specifications, "Core metadata" and "Recording installed
projects"):

* ``METADATA`` (``*.dist-info``) and ``PKG-INFO`` (``*.egg-info``): RFC 822-style
  headers ``Key: value`` (continuation lines start with whitespace) up to the first
  blank line, then the long description.  Keys repeat (``Requires-Dist``,
  ``Classifier``).
* ``WHEEL``: the same header syntax; ``Tag:`` repeats (``cp311-cp311-manylinux_2_28_x86_64``).
* ``RECORD``: CSV rows ``path,sha256=<urlsafe-b64>,size``.
* ``requires.txt`` (egg-info): requirement lines grouped under ``[extra]``,
  ``[:marker]`` or ``[extra:marker]`` sections.
* directory names ``<name>-<version>.dist-info`` / ``.egg-info`` (name escaped with
  ``_`` for ``-``; egg-info may carry ``-pyX.Y`` after the version).

Every parser tolerates garbage: it never raises, and returns what it could read.
"""

from __future__ import annotations

import functools
import io
import re
from typing import TYPE_CHECKING

from npudoctor import lazyre
from npudoctor.parsers.numbers import to_int
from npudoctor.record import Record

if TYPE_CHECKING:
    from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Tuple

_NAME_RE = re.compile(r"[-_.]+")  # used at import (canonical names of the packages probe)


@functools.lru_cache(maxsize=8192)  # asked several times per installed distribution by the rules
def canonical_name(name: str) -> str:
    """PEP 503 normalised project name: ``Torch_NPU`` -> ``torch-npu``."""
    dashed = name.strip().replace("_", "-").replace(".", "-")
    if "--" not in dashed:  # no run of separators to fold (nearly every name): no regex
        return dashed.lower()
    return _NAME_RE.sub("-", dashed).lower()


def parse_headers(text: str) -> List[Tuple[str, str]]:
    """``(key, value)`` pairs of an RFC 822-style header block, in file order.

    Stops at the first blank line (the start of the body).  Continuation lines (leading
    space or tab) are joined to the previous value with a newline.  Lines without a
    ``:`` outside a continuation are skipped.  Keys keep their spelling; values are
    stripped.
    """
    out: List[Tuple[str, str]] = []
    for raw in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if raw.strip() == "":
            if out:
                break
            continue
        if raw[0] in " \t" and out:
            key, value = out[-1]
            out[-1] = (key, (value + "\n" + raw.strip()).strip())
            continue
        key, sep, value = raw.partition(":")
        if not sep or not key.strip() or " " in key.strip():
            continue
        out.append((key.strip(), value.strip()))
    return out


def parse_metadata(text: str) -> Dict[str, Any]:
    """Fields of a ``METADATA``/``PKG-INFO`` file.

    Returns ``{"name", "version", "summary", "requires_python", "requires_dist" (list of
    requirement strings as written), "provides_extra" (list), "metadata_version",
    "valid" (bool: name and version both present)}``.  Missing fields are ``None`` or
    empty lists.
    """
    headers = parse_headers(text or "")
    first: Dict[str, str] = {}
    requires: List[str] = []
    extras: List[str] = []
    for key, value in headers:
        low = key.lower()
        if low == "requires-dist":
            if value:
                requires.append(value)
        elif low == "provides-extra":
            if value:
                extras.append(value)
        elif low not in first:
            first[low] = value
    name = first.get("name") or None
    version = first.get("version") or None
    return {
        "name": name,
        "version": version,
        "summary": first.get("summary") or None,
        "requires_python": first.get("requires-python") or None,
        "metadata_version": first.get("metadata-version") or None,
        "requires_dist": requires,
        "provides_extra": extras,
        "valid": bool(name and version),
    }


def parse_wheel(text: str) -> Dict[str, Any]:
    """Fields of a ``WHEEL`` file: ``{"wheel_version", "generator", "root_is_purelib"
    (bool or None), "build", "tags": [..]}``."""
    tags: List[str] = []
    first: Dict[str, str] = {}
    for key, value in parse_headers(text or ""):
        if key.lower() == "tag":
            if value:
                tags.append(value)
        else:
            first.setdefault(key.lower(), value)
    purelib = first.get("root-is-purelib")
    return {
        "wheel_version": first.get("wheel-version") or None,
        "generator": first.get("generator") or None,
        "root_is_purelib": None if purelib is None else purelib.strip().lower() == "true",
        "build": first.get("build") or None,
        "tags": tags,
    }


def parse_record(text: str) -> List[Dict[str, Any]]:
    """Rows of a ``RECORD`` file: ``[{"path", "hash" (str or None), "size" (int or
    None)}]``.  Rows without a path are skipped; a malformed size is ``None``."""
    import csv  # here, not on every start: only RECORD files need it

    rows: List[Dict[str, Any]] = []
    try:
        reader = csv.reader(io.StringIO(text or ""))
        for row in reader:
            if not row or not row[0].strip():
                continue
            size: Optional[int] = None
            if len(row) > 2 and row[2].strip().isdecimal():
                size = to_int(row[2])
            rows.append({"path": row[0], "hash": (row[1] or None) if len(row) > 1 else None, "size": size})
    except csv.Error:
        pass
    return rows


_SECTION_RE = lazyre.pattern(r"^\[(?P<extra>[^:\]]*)(?::(?P<marker>.*))?\]$")


def parse_requires_txt(text: str) -> List[str]:
    """``requires.txt`` of an egg-info as ``Requires-Dist`` strings.

    ``[extra]`` sections become ``; extra == "extra"``, ``[:marker]`` sections
    ``; marker`` and ``[extra:marker]`` both, joined with ``and``.
    """
    out: List[str] = []
    extra = ""
    marker = ""
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _SECTION_RE.match(line)
        if m:
            extra = (m.group("extra") or "").strip()
            marker = (m.group("marker") or "").strip()
            continue
        parts = []
        if marker:
            parts.append(f"({marker})" if extra else marker)
        if extra:
            parts.append(f'extra == "{extra}"')
        out.append(line + ("; " + " and ".join(parts) if parts else ""))
    return out


_DIST_DIR_RE = lazyre.pattern(
    r"^(?P<name>.+?)-(?P<version>[0-9][^-]*?)(?:-py[0-9][0-9.]*)?(?:-[^-]+)?\.(?:dist|egg)-info$"
)


def split_dist_dir(dirname: str) -> Tuple[Optional[str], Optional[str]]:
    """``("torch_npu", "2.1.0.post10")`` from ``torch_npu-2.1.0.post10.dist-info``;
    ``(name, None)`` when there is no version (``foo.egg-info``); ``(None, None)`` for
    anything that is not a metadata directory name."""
    if not (dirname.endswith(".dist-info") or dirname.endswith(".egg-info")):
        return None, None
    stem = dirname[: dirname.rindex(".")]
    name, _sep, version = stem.partition("-")
    if name and version[:1].isdigit() and "-" not in version:  # what pip writes: name-version
        return name, version
    m = _DIST_DIR_RE.match(dirname)
    if m:
        return m.group("name"), m.group("version")
    stem = dirname.rsplit(".", 1)[0]
    return (stem or None), None


#: A ``Requires-Dist`` string of a name and version specifiers only (``torch==2.13.0.*``,
#: ``numpy>=1.21,<2``, ``pyyaml``): no extras, marker, URL or parenthesis.
_OP = r"(?:~=|===|==|!=|<=|>=|<|>)"
_SIMPLE_REQUIREMENT_RE = lazyre.pattern(
    rf"([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)((?:{_OP}[A-Za-z0-9.*+!_-]+)(?:,{_OP}[A-Za-z0-9.*+!_-]+)*)?"
)


class SimpleRequirement(Record):
    """What :class:`packaging.requirements.Requirement` holds for a requirement that is a
    name and version specifiers only: ``name``, ``specifier`` (a ``SpecifierSet``),
    ``extras`` (empty), ``marker`` and ``url`` (``None``).  Made without importing
    ``packaging.requirements`` (its PEP 508 parser and marker machinery, on every check:
    torch_npu's ``torch==2.13.0.*`` is always parsed; docs/performance.md)."""

    name: str
    specifier: Any
    extras: FrozenSet[str] = frozenset()
    marker: Any = None
    url: Optional[str] = None

    def __str__(self) -> str:
        return f"{self.name}{self.specifier}"


def parse_requirement(text: str) -> Optional[Any]:
    """A :class:`packaging.requirements.Requirement` for a ``Requires-Dist`` string (a
    :class:`SimpleRequirement` with the same name and specifier when the string is only a
    name and specifiers; property-tested against packaging), or ``None`` when it does not
    parse.  Old-style ``torch (==2.1.0+cpu)`` is accepted."""
    from packaging.specifiers import InvalidSpecifier  # also what some packaging releases' Requirement raises

    simple = _SIMPLE_REQUIREMENT_RE.fullmatch(text or "")
    if simple:
        from packaging.specifiers import SpecifierSet

        try:
            return SimpleRequirement(simple.group(1), SpecifierSet(simple.group(2) or ""))
        except InvalidSpecifier:
            pass  # packaging's parser decides
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        return Requirement(text)
    except (InvalidRequirement, InvalidSpecifier):
        pass
    m = re.match(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*\(([^)]*)\)\s*(;.*)?$", text or "")
    if m:
        try:
            return Requirement(f"{m.group(1)}{m.group(2).replace(' ', '')}{m.group(3) or ''}")
        except (InvalidRequirement, InvalidSpecifier):
            return None
    return None


#: The project name a ``Requires-Dist`` string starts with (PEP 508: the name comes first;
#: packaging >= 25 takes this whole token as the name, older releases stop at its last
#: letter or digit and then reject the string); group 2: an old-style ``name (x...)``
#: whose parenthesis starts with a name character, which :func:`parse_requirement` joins
#: to the name (``"a (b)"`` parses as ``ab``).
_LEADING_NAME_RE = lazyre.pattern(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)(\s*\(\s*[A-Za-z0-9._-])?")


def requirement_name(text: str) -> Optional[str]:
    """The PEP 503 name a ``Requires-Dist`` string names (``"Torch_NPU (==2.1.0)"`` ->
    ``"torch-npu"``), found without packaging, or ``None`` when that takes parsing (no
    leading name, or an odd old-style parenthesis).  When :func:`parse_requirement` parses
    ``text`` and this is not ``None``, the parsed name has this canonical form: callers
    skip, unparsed, the requirements on other projects."""
    m = _LEADING_NAME_RE.match(text or "")
    return canonical_name(m.group(1)) if m and not m.group(2) else None


def marker_environment(python: Mapping[str, Any]) -> Dict[str, str]:
    """PEP 508 marker variables for the target interpreter described by ``python`` facts
    (``version``, ``version_info``, ``implementation``, ``machine``); unknown values
    fall back to the common CPython/Linux ones."""
    info = [int(x) for x in (python.get("version_info") or []) if isinstance(x, int)]
    version = str(python.get("version") or ".".join(str(x) for x in info) or "")
    short = ".".join(str(x) for x in info[:2]) if len(info) >= 2 else ".".join(version.split(".")[:2])
    impl = str(python.get("implementation") or "cpython").lower()
    return {
        "python_version": short,
        "python_full_version": version,
        "implementation_name": impl,
        "platform_python_implementation": {"cpython": "CPython", "pypy": "PyPy"}.get(impl, impl),
        "implementation_version": version,
        "platform_machine": str(python.get("machine") or ""),
        "sys_platform": "linux",
        "os_name": "posix",
        "platform_system": "Linux",
        "platform_release": "",
        "platform_version": "",
        "extra": "",
    }


def applicable(req: Any, environment: Mapping[str, str]) -> bool:
    """True when ``req`` (a parsed requirement) applies to ``environment`` without any
    extra selected; an unevaluable marker counts as applicable."""
    if req is None:
        return False
    if req.marker is None:
        return True
    try:
        return bool(req.marker.evaluate(dict(environment)))
    except Exception:  # packaging raises several types for odd markers
        return True


def requirements_on(requires_dist: List[str], name: str, environment: Optional[Mapping[str, str]] = None) -> List[Any]:
    """Parsed requirements among ``requires_dist`` that name project ``name`` (any
    spelling) and apply to ``environment`` (all of them when ``None``)."""
    want = canonical_name(name)
    out = []
    for text in requires_dist or []:
        if requirement_name(text) not in (want, None):
            continue  # names another project (or none): not parsed (packaging's parse is the cost)
        req = parse_requirement(text)
        if req is None or canonical_name(req.name) != want:
            continue
        if environment is not None and not applicable(req, environment):
            continue
        out.append(req)
    return out


def satisfies(version: str, specifier: Any) -> Optional[bool]:
    """Whether ``version`` meets ``specifier`` (a ``SpecifierSet``), pre-releases
    allowed; ``None`` when the version does not parse."""
    from packaging.version import InvalidVersion, Version

    try:
        parsed = Version(version)
    except InvalidVersion:
        return None
    return bool(specifier.contains(parsed, prereleases=True))
