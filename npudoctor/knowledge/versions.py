"""Every version helper of npudoctor: the ordering of CANN versions and of NPU driver /
firmware / HDK versions, and the parsing and comparison of the other kinds.

Python package versions (torch, torch_npu, numpy) are PEP 440 and use ``packaging``
(imported when first needed: :func:`parse_pep440`, :func:`pep440_public`, …); Python
versions ``X.Y`` have :func:`python_key`, :func:`python_sorted` and :func:`python_release`;
ELF symbol versions (``GLIBCXX_3.4.30``) :func:`symbol_versions`; the ``[low, high]`` ranges
of version.info files :func:`range_bound_key`.  CANN and the Ascend HDK use their own
schemes, which this module orders.

CANN (``CannVersion``), as observed in the CANN release notes, the torch_npu mapping
tables and the installed ``ascend_toolkit_install.info`` / ``version.cfg`` files:

* legacy scheme ``X.Y.RCn`` then ``X.Y.Z``: ``8.0.RC1 < 8.0.RC2 < 8.0.RC3 < 8.0.0 < 8.1.RC1``;
  hotfixes ``6.3.RC3.1`` sort after ``6.3.RC3``;
* pre-releases sort before their release, whatever the spelling:
  ``8.1.RC1.alpha002 < 8.1.RC1``, ``8.5.0.alpha001 < 8.5.0-beta.1 < 8.5.0``,
  ``9.0.0-beta.2 < 9.0.0``, ``8.0.0.beta1 < 8.0.0`` (alpha < beta < rc < release).
  (torch_npu's own comparator ranks ``RCn.alphaNNN`` just *above* ``RCn``; we follow the
  meaning of "alpha", documented here on purpose.)
* internal train builds ``8.0.T63``: their place relative to the RC/final releases of the
  same ``X.Y`` is not published, so comparing them raises :class:`UnorderableVersion`
  (``compare`` returns ``None``).  A bare ``X.Y`` (a directory named ``8.0``) is likewise
  unorderable against any version of the same ``X.Y``.

Driver / HDK / firmware (``DriverVersion``): ``23.0.rc2``, ``23.0.7``, ``24.1.rc1.b030``,
``24.1.rc2.2``, ``25.0.rc1.1``, ``22.0.4.1``, ``26.0.RC1``, firmware ``7.7.0.1.231``.
``X.Y.RCn < X.Y.Z``; a trailing number is a patch (``24.1.rc2 < 24.1.rc2.2``); a ``.bNNN``
build suffix sorts after the plain version and before the next patch
(``24.1.rc1 < 24.1.rc1.b030 < 24.1.rc1.1``); ``X.Y.Tn`` is unorderable within ``X.Y``.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from npudoctor import lazyre

if TYPE_CHECKING:
    from typing import Any, Iterable, List, Optional, Tuple

    from packaging.version import Version

__all__ = [
    "InvalidVersion",
    "UnorderableVersion",
    "CannVersion",
    "DriverVersion",
    "parse_cann",
    "parse_driver",
    "version_in",
    "tokens",
    "pep440",
    "parse_pep440",
    "pep440_public",
    "canonical_version",
    "pep440_release",
    "pep440_local",
    "pep440_prerelease",
    "pep440_key",
    "release_prefix",
    "pep440_normal",
    "pep440_line",
    "range_bound_key",
    "component_line_holds",
    "python_release",
    "python_key",
    "python_sorted",
    "pythons_within",
    "major_minor",
    "cann_key",
    "cann_less",
    "same_cann",
    "symbol_version_key",
    "symbol_versions",
]


class InvalidVersion(ValueError):
    """The text is not a version of the expected kind."""


class UnorderableVersion(ValueError):
    """The order of two versions is not knowable (e.g. an internal T build vs a release)."""


#: Bounds of a version string read from the judged machine: the longest real one (a local
#: build label) is a few dozen characters and no number in one has more than a handful of
#: digits.  Past them it is malformed: never handed to ``int()`` or ``packaging`` (which
#: refuse numbers over 4,300 digits with a ValueError that is not InvalidVersion).
MAX_VERSION_LENGTH = 128
MAX_VERSION_DIGITS = 32
_DIGIT_RUN = lazyre.pattern(f"[0-9]{{{MAX_VERSION_DIGITS + 1},}}")


def malformed_version(text: Optional[str]) -> Optional[str]:
    """Why ``text`` cannot be a version (too long, a number of absurd length), or ``None``
    when it may be one (a ``None`` or empty text is absent, not malformed)."""
    if not text:
        return None
    if len(text) > MAX_VERSION_LENGTH:
        return f"{len(text)} characters long (a version has at most {MAX_VERSION_LENGTH})"
    if _DIGIT_RUN.search(text):
        return f"a number of more than {MAX_VERSION_DIGITS} digits"
    return None


_PRE_RANK = {"alpha": 0, "a": 0, "beta": 1, "b": 1, "rc": 2}
_FINAL = 3  # rank of "no pre-release"

_SPLIT = lazyre.pattern(r"[.\-_]")
_PRE_TOKEN = lazyre.pattern(r"^(alpha|beta)([0-9]*)$", re.I)
_RC_TOKEN = lazyre.pattern(r"^rc([0-9]+)$", re.I)
_T_TOKEN = lazyre.pattern(r"^t([0-9]+)$", re.I)
_B_TOKEN = lazyre.pattern(r"^b([0-9]+)$", re.I)


def _clean(text: object, prefixes: Tuple[str, ...]) -> str:
    if not isinstance(text, str):
        raise InvalidVersion(f"not a version string: {text!r}")
    s = text.strip()
    low = s.lower()
    for p in prefixes:
        if low.startswith(p):
            s = s[len(p) :].strip()
            low = s.lower()
    if s[:1] in ("v", "V") and s[1:2].isdecimal():
        s = s[1:]
    if not s or len(s) > 64 or not s.isascii():
        raise InvalidVersion(f"not a version string: {text!r}")
    return s


def tokens(text: str) -> List[str]:
    """Lower-case components of a version split on ``.``, ``-`` and ``_``
    (``"9.0.0-beta.2"`` -> ``["9", "0", "0", "beta", "2"]``)."""
    return list(_tokens(text))


@functools.lru_cache(maxsize=4096)
def _tokens(text: str) -> Tuple[str, ...]:
    # cached: the planner compares the same few hundred matrix versions many times over
    return tuple(t for t in _SPLIT.split(text.strip().lower()) if t != "")


def _pre_tail(parts: List[str], text: str) -> Tuple[int, int, List[int]]:
    """Parse the tail after the release core: hotfix numbers, then an optional
    pre-release (``alpha002``, ``beta.2``, ``beta1``, ``rc.1``).  Returns
    ``(pre_rank, pre_num, hotfix numbers)``."""
    hotfix: List[int] = []
    i = 0
    while i < len(parts) and parts[i].isdecimal():
        hotfix.append(int(parts[i]))
        i += 1
    if i == len(parts):
        return _FINAL, 0, hotfix
    m = _PRE_TOKEN.match(parts[i])
    rank: Optional[int] = None
    num_text = ""
    if m:
        rank = _PRE_RANK[m.group(1).lower()]
        num_text = m.group(2)
    elif parts[i] == "rc":  # SemVer "-rc.1"
        rank = _PRE_RANK["rc"]
    if rank is None:
        raise InvalidVersion(f"unrecognised version component {parts[i]!r} in {text!r}")
    i += 1
    if not num_text and i < len(parts) and parts[i].isdecimal():
        num_text = parts[i]
        i += 1
    if i != len(parts):
        raise InvalidVersion(f"trailing components after pre-release in {text!r}")
    return rank, int(num_text or 0), hotfix


@functools.total_ordering
class _Base:
    """Shared comparison machinery: ``_key`` is ``(major, minor, kind, rest...)`` where
    ``kind`` is ``None`` for unorderable-within-``X.Y`` versions (T builds, bare X.Y)."""

    _kind_name = "version"
    text: str
    _key: Tuple[Any, ...]

    def __init__(self, text: str) -> None:  # pragma: no cover - every subclass parses its own
        raise NotImplementedError

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.text!r})"

    @property
    def base(self) -> str:
        """``"major.minor"`` (``"8.0"`` for ``8.0.RC3``)."""
        return f"{self._key[0]}.{self._key[1]}"

    @property
    def major(self) -> int:
        return int(self._key[0])

    @property
    def minor(self) -> int:
        return int(self._key[1])

    @property
    def orderable(self) -> bool:
        """False for internal T builds and bare ``X.Y`` (no place in the release order)."""
        return self._key[2] is not None

    def compare(self, other: object) -> Optional[int]:
        """-1, 0 or 1; ``None`` when the order is unknowable.  ``other`` may be a string."""
        o = self._coerce(other)
        if o is None:
            return None
        a, b = self._key, o._key
        if a[:2] != b[:2]:
            return -1 if a[:2] < b[:2] else 1
        if a[2] is None or b[2] is None:
            if a == b and a[2] is None and self._norm() == o._norm():
                return 0
            return None
        if a == b:
            return 0
        return -1 if a < b else 1

    def _norm(self) -> str:
        return ".".join(tokens(self.text))

    def _coerce(self, other: object) -> Optional[_Base]:
        if isinstance(other, type(self)):
            return other
        if isinstance(other, str):
            try:
                return type(self)(other)
            except InvalidVersion:
                return None
        return None

    def _cmp_or_raise(self, other: object) -> int:
        if not isinstance(other, (type(self), str)):
            raise TypeError(f"cannot compare {type(self).__name__} with {type(other).__name__}")
        c = self.compare(other)
        if c is None:
            raise UnorderableVersion(f"the order of {self.kind} {self.text} and {other} is not knowable")
        return c

    @property
    def kind(self) -> str:
        return self._kind_name

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (type(self), str)):
            return NotImplemented
        return self.compare(other) == 0

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._key, self._norm() if self._key[2] is None else ""))

    def __lt__(self, other: object) -> bool:
        return self._cmp_or_raise(other) < 0


class CannVersion(_Base):
    """A CANN (toolkit/kernels/NNAL) public version: ``8.0.RC3``, ``8.0.0``,
    ``8.1.RC1.alpha002``, ``9.0.0-beta.2``, ``8.0.T63``, ``6.3.RC3.1``.

    A leading ``CANN `` or ``v`` is accepted (``"CANN 8.0.RC3"``).  ``str()`` keeps
    the original text.  Raises :class:`InvalidVersion` for anything else (including
    5-part inner versions such as ``7.6.0.1.220``).  Comparisons raise
    :class:`UnorderableVersion` when the order is unknowable; :meth:`compare` returns
    ``None`` instead.  Order source: the naming of the CANN release notes.
    """

    _kind_name = "CANN"

    def __init__(self, text: str) -> None:
        self.text = _clean(text, ("cann-", "cann ", "cann"))
        parts = tokens(self.text)
        if len(parts) < 2 or not parts[0].isdecimal() or not parts[1].isdecimal():
            raise InvalidVersion(f"not a CANN version: {text!r}")
        major, minor = int(parts[0]), int(parts[1])
        rest = parts[2:]
        self.is_internal = False
        if not rest:
            # bare "8.0": a directory name; no place in the release order
            self._key = (major, minor, None)
            self.is_prerelease = False
            return
        head = rest[0]
        m_rc = _RC_TOKEN.match(head)
        m_t = _T_TOKEN.match(head)
        if m_t:
            if any(not p.isdecimal() for p in rest[1:]) or len(rest) > 3:
                raise InvalidVersion(f"not a CANN version: {text!r}")
            self.is_internal = True
            self.is_prerelease = True
            self._key = (major, minor, None)
            return
        if m_rc:
            stage, num = 0, int(m_rc.group(1))
        elif head.isdecimal():
            stage, num = 1, int(head)
        else:
            raise InvalidVersion(f"not a CANN version: {text!r}")
        tail = rest[1:]
        digits = 0
        for p in tail:
            if not p.isdecimal():
                break
            digits += 1
        if stage == 1 and digits > 1:
            raise InvalidVersion(f"not a CANN public version (looks like an inner version): {text!r}")
        pre_rank, pre_num, hotfix = _pre_tail(tail, self.text)
        self.is_prerelease = pre_rank != _FINAL
        self._key = (major, minor, stage, num, tuple(hotfix), pre_rank, pre_num)

    @property
    def release(self) -> str:
        """The release this version belongs to, without pre-release suffix, in the
        official spelling (``"8.1.RC1"`` for ``8.1.RC1.alpha002``; ``"9.0.0"`` for
        ``9.0.0-beta.2``); the text itself for internal builds."""
        if self._key[2] is None:
            return self.text
        major, minor, stage, num, hotfix = self._key[:5]
        core = f"{major}.{minor}." + (f"RC{num}" if stage == 0 else str(num))
        return core + "".join(f".{h}" for h in hotfix)


class DriverVersion(_Base):
    """An NPU driver / Ascend HDK / firmware / npu-smi version: ``23.0.rc2``,
    ``23.0.7``, ``24.1.rc1.b030``, ``24.1.rc2.2``, ``25.0.rc1.1``, ``22.0.4.1``,
    ``26.0.RC1``, ``6.0.rc1.2``, firmware ``7.7.0.1.231``.

    ``RC`` is case-insensitive.  A leading ``Ascend HDK `` is accepted.  Source of the
    forms: the captured ``npu-smi`` outputs and ``version.info`` files in ``tests/fixtures``
    and the HDK release names of ``Ascend/docs`` (torch_npu's ``DriverVersionToNum`` accepts
    the same shapes).  Raises :class:`InvalidVersion`.
    """

    _kind_name = "driver"

    def __init__(self, text: str) -> None:
        self.text = _clean(text, ("ascend hdk", "ascendhdk", "hdk"))
        parts = tokens(self.text)
        if len(parts) < 2 or not parts[0].isdecimal() or not parts[1].isdecimal() or len(parts) > 6:
            raise InvalidVersion(f"not a driver/firmware version: {text!r}")
        major, minor = int(parts[0]), int(parts[1])
        rest = parts[2:]
        self.is_prerelease = False
        self.is_internal = False
        build = 0
        if rest and _B_TOKEN.match(rest[-1]):
            build = int(_B_TOKEN.match(rest[-1]).group(1))  # type: ignore[union-attr]
            rest = rest[:-1]
        if not rest:
            if build:
                raise InvalidVersion(f"not a driver/firmware version: {text!r}")
            self._key = (major, minor, None)
            return
        head = rest[0]
        m_rc = _RC_TOKEN.match(head)
        m_t = _T_TOKEN.match(head)
        if m_t:
            self.is_internal = True
            self._key = (major, minor, None)
            return
        if m_rc:
            stage, num = 0, int(m_rc.group(1))
        elif head.isdecimal():
            stage, num = 1, int(head)
        else:
            raise InvalidVersion(f"not a driver/firmware version: {text!r}")
        pre_rank, pre_num, patch = _pre_tail(rest[1:], self.text)
        self.is_prerelease = pre_rank != _FINAL
        # pre-release of a patch level sorts before it; build sorts after the plain version
        self._key = (major, minor, stage, num, tuple(patch), pre_rank, pre_num, build)

    @property
    def release(self) -> str:
        """Without the ``.bNNN`` build suffix, lower-case ``rc`` (``"24.1.rc1"``)."""
        if self._key[2] is None:
            return self.text
        major, minor, stage, num, patch, pre_rank, pre_num, _build = self._key
        core = f"{major}.{minor}." + (f"rc{num}" if stage == 0 else str(num))
        core += "".join(f".{p}" for p in patch)
        if pre_rank != _FINAL:
            core += f".{['alpha', 'beta', 'rc'][pre_rank]}{pre_num}"
        return core

    def within(self, other: str) -> bool:
        """True when this version is ``other`` or a patch/build of it
        (``25.0.rc1.1`` is within HDK ``25.0.RC1``; ``24.1.rc2.2`` within ``24.1.rc2``)."""
        mine, theirs = tokens(self.text), tokens(other)
        mine = [t for t in mine if not _B_TOKEN.match(t)]
        return len(theirs) <= len(mine) and mine[: len(theirs)] == theirs


def parse_cann(text: object) -> Optional[CannVersion]:
    """``CannVersion(text)`` or ``None`` for anything unparseable; never raises.  A
    string is parsed once: the result is cached (a version is never changed after
    it is made)."""
    if isinstance(text, str):
        return _parse_cann_str(text)
    try:
        return CannVersion(text)  # type: ignore[arg-type]
    except (InvalidVersion, TypeError):
        return None


@functools.lru_cache(maxsize=4096)
def _parse_cann_str(text: str) -> Optional[CannVersion]:
    try:
        return CannVersion(text)
    except InvalidVersion:
        return None


@functools.lru_cache(maxsize=8192)
def pep440(text: str) -> Version:
    """``packaging.version.Version(text)``, parsed once per string (cached; a
    ``Version`` is immutable); raises ``packaging.version.InvalidVersion`` as it does.
    The planner judges the same few hundred torch / torch_npu versions many times."""
    from packaging.version import Version

    return Version(text)


def parse_driver(text: object) -> Optional[DriverVersion]:
    """``DriverVersion(text)`` or ``None``; never raises."""
    try:
        return DriverVersion(text)  # type: ignore[arg-type]
    except (InvalidVersion, TypeError):
        return None


def _strip_prefix(text: str) -> str:
    s = text.strip()
    for p in ("CANN ", "Ascend HDK ", "cann-"):
        if s.lower().startswith(p.lower()):
            s = s[len(p) :]
    return s


def version_in(text: str, patterns: Iterable[str]) -> bool:
    """True when ``text`` matches one of ``patterns``: an exact version (compared
    component-wise, case-insensitive, ``.``/``-``/``_`` equivalent: ``"8.0.rc3"``
    matches ``"8.0.RC3"``) or a wildcard whose last component is ``X``/``x``/``*``
    (``"8.5.X"`` matches ``8.5.0``, ``8.5.1``, ``8.5.0-beta.1``; ``"25.5.X"`` matches
    ``25.5.1``).  Wildcards are the notation of the official release-note tables
    (the "版本兼容性说明" of the TorchNPU and CANN release notes).  Never raises."""
    if not isinstance(text, str) or not text.strip():
        return False
    mine = tokens(_strip_prefix(text))
    for pat in patterns:
        if not isinstance(pat, str):
            continue
        theirs = tokens(_strip_prefix(pat))
        if not theirs:
            continue
        if theirs[-1] in ("x", "*"):
            prefix = theirs[:-1]
            if len(mine) > len(prefix) and mine[: len(prefix)] == prefix:
                return True
        elif mine == theirs:
            return True
    return False


# ------------------------------------------------------------------ PEP 440 (torch, torch_npu, numpy)


def parse_pep440(text: object) -> Optional[Version]:
    """``packaging.version.Version(text)`` (local tag kept), or ``None`` when ``text`` is
    not a PEP 440 version; never raises (``packaging`` refuses a number of 4,300+ digits
    with a plain ``ValueError``)."""
    from packaging.version import InvalidVersion

    try:
        return pep440(str(text))
    except (InvalidVersion, TypeError, ValueError):
        return None


def pep440_public(text: object) -> Optional[Version]:
    """The public part of a torch/torch_npu version (local tag dropped); "1.11.0.rc2
    (beta)" is read as 1.11.0rc2.  ``None`` when not PEP 440; never raises."""
    if not isinstance(text, str):
        return None
    return _pep440_public(text)


@functools.lru_cache(maxsize=4096)
def _pep440_public(text: str) -> Optional[Version]:
    # cached: the planner asks for the same rows' versions hundreds of thousands of times
    clean = re.sub(r"[（(].*?[)）]", "", text).strip()
    v = parse_pep440(clean)
    return pep440(v.public) if v is not None else None


def canonical_version(text: str) -> str:
    """PEP 440 normal form without local tag (``"2.1.0.rc1"`` → ``"2.1.0rc1"``); the text
    itself (stripped) when it is not PEP 440."""
    v = parse_pep440(text)
    return v.public if v is not None else text.strip()


def pep440_release(version: Optional[str]) -> Optional[Tuple[int, ...]]:
    """``(2, 1, 0)`` of a PEP 440 version string (local/post parts dropped), or ``None``."""
    v = parse_pep440(version) if version is not None else None
    return v.release if v is not None else None


def release_xyz(version: Optional[str]) -> str:
    """``2.7.1`` of ``2.7.1+cpu`` / ``2.7.1.post2``: the first three release numbers
    (``""`` when unparsable)."""
    rel = pep440_release(version)
    return ".".join(str(x) for x in rel[:3]) if rel else ""


def pep440_local(version: Optional[str]) -> Optional[str]:
    """The local tag of a PEP 440 version (``"cpu"`` of ``2.1.0+cpu``), or ``None``."""
    v = parse_pep440(version) if version is not None else None
    return v.local if v is not None else None


def pep440_prerelease(version: str) -> bool:
    """Whether ``version`` is an rc / alpha / beta / dev build (``False`` when it is not
    PEP 440)."""
    v = parse_pep440(version)
    return v is not None and (v.is_prerelease or v.is_devrelease)


def pep440_key(text: str) -> Tuple[int, Any]:
    """Sort key of a PEP 440 version: every PEP 440 version after every other text, each
    kind in its own order."""
    v = parse_pep440(text)
    return (1, v) if v is not None else (0, text)


def release_prefix(text: str) -> Optional[Tuple[int, ...]]:
    """``"2.4.0+cpu"`` → ``(2, 4)``: the leading release numbers, trailing zeros dropped
    (so ``2.4`` and ``2.4.0`` compare equal); ``None`` when ``text`` starts with no number."""
    m = re.match(r"^\s*(\d+(?:\.\d+)*)", text or "")
    if not m:
        return None
    parts = [int(x) for x in m.group(1).split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def pep440_normal(text: str) -> str:
    """PEP 440 normal form, local tag kept (``"2.1.0.rc1"`` → ``"2.1.0rc1"``, ``"2.1.0+CPU"``
    → ``"2.1.0+cpu"``); the text itself stripped and lower-cased when it is not PEP 440."""
    v = parse_pep440(text.strip())
    return str(v) if v is not None else text.strip().lower()


def pep440_line(version: Version) -> Tuple[int, ...]:
    """The release line of a parsed PEP 440 version: its first three release numbers
    (``2.1.0.post10`` → ``(2, 1, 0)``; ``2.1`` → ``(2, 1)``)."""
    return tuple(version.release[:3])


def range_bound_key(version: str) -> Optional[Tuple[Tuple[int, int], ...]]:
    """Sort key of a dotted driver/firmware/CANN version as the ``[low, high]`` ranges of
    version.info files write them: numbers compare as numbers, ``rcN`` sorts below the final
    ``0`` of its line (``23.0.rc3 < 23.0.0``), a ``bNNN`` part counts as the number ``NNN``.
    ``None`` for any other part (or one over 20 characters)."""
    key: List[Tuple[int, int]] = []
    for part in version.strip().lower().split("."):
        if len(part) > 20 or not part.isascii():
            return None
        if part.isdecimal():
            key.append((1, int(part)))
        elif part.startswith("rc") and part[2:].isdecimal():
            key.append((0, int(part[2:])))
        elif part.startswith("b") and part[1:].isdecimal():
            key.append((1, int(part[1:])))
        elif part == "":
            continue
        else:
            return None
    return tuple(key) if key else None


_LINE_CLAUSE = lazyre.pattern(r"(>=|<=|==|!=|>|<)?\s*([0-9]{1,6}(?:\.[0-9]{1,6}){0,3})")


def component_line_holds(spec: Optional[str], line: Optional[str]) -> Optional[bool]:
    """Whether a CANN ``required_package_<pkg>_version`` range holds component line
    ``line`` (``"7.6"``).  The ranges are what CANN's own version.info files write: a bare
    line (``"8.2"``: that line) or comparisons joined by commas (``">=7.6, <=8.2"``), lines
    compared number by number (``8.2`` is ``8.2.0``).  ``None`` when either is absent or
    not in that form."""
    if not spec or not line:
        return None
    own = _LINE_CLAUSE.fullmatch(line.strip())
    if own is None or own.group(1):
        return None
    have = tuple(int(n) for n in own.group(2).split("."))
    holds = True
    for clause in spec.strip().strip('"').split(","):
        m = _LINE_CLAUSE.fullmatch(clause.strip())
        if m is None:
            return None
        want = tuple(int(n) for n in m.group(2).split("."))
        width = max(len(have), len(want))
        a, b = have + (0,) * (width - len(have)), want + (0,) * (width - len(want))
        op = m.group(1) or "=="
        holds = holds and {
            ">=": a >= b, "<=": a <= b, "==": a == b, "!=": a != b, ">": a > b, "<": a < b
        }[op]  # fmt: skip
    return holds


# ------------------------------------------------------------------ Linux kernel releases


def kernel_release(text: Optional[str]) -> Optional[Tuple[int, int, int]]:
    """``(major, minor, patch)`` of a kernel release as ``uname -r`` prints it, read the way
    msprechecker's ``Version`` reads it: the leading ``X.Y`` and an optional ``.Z`` (0 when
    absent), the distribution's suffix ignored (``5.4.0-150-generic`` -> ``(5, 4, 0)``,
    ``4.19.90-24.4.v2101.ky10.aarch64`` -> ``(4, 19, 90)``); ``None`` when the text does not
    start with ``X.Y``."""
    m = re.match(r"^\s*([0-9]{1,4})\.([0-9]{1,4})(?![0-9])(?:\.([0-9]{1,4})(?![0-9]))?", text or "")
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


# ------------------------------------------------------------------ Python X.Y


def python_release(text: str) -> Optional[List[int]]:
    """``[3, 11, 4]`` of a Python version text (``"3.11.4"``, ``"3.11"``, ``"3.11.4 (main,
    …)"`` as pyvenv.cfg writes it): the leading two or three numbers, ``None`` when it does
    not start with ``X.Y``."""
    m = re.match(r"^\s*([0-9]{1,9})\.([0-9]{1,9})(?:\.([0-9]{1,9}))?(?![0-9])", text or "")
    if not m:
        return None
    return [int(g) for g in m.groups() if g is not None]


def python_key(python: str) -> Tuple[int, ...]:
    """Sort key of ``"3.10"`` (``(0,)`` for text that is not dotted numbers)."""
    try:
        return tuple(int(p) for p in python.split("."))
    except ValueError:
        return (0,)


def python_sorted(versions: Iterable[str]) -> List[str]:
    """``["3.8", "3.9", "3.10", "3.11"]``: Python versions in numeric order (``"3.10"``
    after ``"3.9"``), duplicates and unparseable entries dropped."""
    out = {}
    for v in versions:
        m = re.match(r"^([0-9]{1,18})\.([0-9]{1,18})$", str(v).strip())
        if m:
            out[(int(m.group(1)), int(m.group(2)))] = f"{m.group(1)}.{m.group(2)}"
    return [out[k] for k in sorted(out)]


def pythons_within(versions: List[str], spec_text: Optional[str]) -> List[str]:
    """The Python versions of ``versions`` inside a pip-style range (``">=3.7,<3.12"``,
    e.g. a CANN's supported Pythons from ``matrix.cann_python_range``); all of them when
    the range is unknown or unparseable, or when none would remain."""
    if not spec_text:
        return list(versions)
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        spec = SpecifierSet(str(spec_text))
    except InvalidSpecifier:
        return list(versions)
    kept = [v for v in versions if spec.contains(v + ".0", prereleases=True)]
    return kept or list(versions)


# ------------------------------------------------------------------ CANN comparisons


def major_minor(version: Optional[str]) -> Optional[Tuple[int, int]]:
    """``"8.2.RC1"`` -> ``(8, 2)``; ``None`` if it does not start with two numbers."""
    m = re.match(r"^\s*([0-9]{1,18})\.([0-9]{1,18})(?![0-9])", version or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def cann_key(text: str) -> Tuple[Any, ...]:
    """Sort key of a CANN version (``(0, 0, 0)`` when it is not one or its place is not
    known)."""
    v = parse_cann(text)
    return v._key if v is not None and v.orderable else (0, 0, 0)


def cann_less(a: Optional[str], b: Optional[str]) -> Optional[bool]:
    """``a < b`` for CANN version strings; ``None`` when unknowable (T builds, garbage)."""
    va, vb = parse_cann(a), parse_cann(b)
    if va is None or vb is None:
        return None
    try:
        return bool(va < vb)
    except (ValueError, TypeError):
        return None


@functools.lru_cache(maxsize=8192)
def same_cann(a: str, b: str) -> bool:
    """Whether two CANN version strings name the same release: equal as
    :class:`CannVersion`, or a legacy community re-release (``8.0.RC3.beta1`` ==
    commercial ``8.0.RC3``, CANN <= 8.0, per the MindStudio and hiascend release notes).
    Cached: the matrix compares the same few hundred versions many times over."""
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


# ------------------------------------------------------------------ ELF symbol versions


def symbol_version_key(name: str) -> Tuple[int, ...]:
    """Sort key of a symbol version name: ``GLIBCXX_3.4.30`` → ``(3, 4, 30)`` (a
    non-numeric part, as in ``GLIBC_PRIVATE``, counts 0)."""
    tail = name.split("_", 1)[-1]
    return tuple(int(p) if p.isascii() and p.isdecimal() and len(p) <= 9 else 0 for p in tail.split("."))


def symbol_versions(names: List[str], family: str) -> List[str]:
    """The distinct symbol version names of one family (``GLIBC``: ``GLIBC_*``) in
    ascending order."""
    return sorted({n for n in names if n.startswith(family + "_")}, key=symbol_version_key)
