"""The compatibility matrix's model: constants, row types and the normalisation helpers
shared by its schema check (:mod:`.schema`), queries (:mod:`.queries`) and loader
(:mod:`.load`).  Import the public names from :mod:`npudoctor.knowledge.matrix`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from npudoctor import lazyre
from npudoctor.knowledge.versions import parse_driver, pep440_public, same_cann, tokens, version_in
from npudoctor.record import MutableRecord, Record, field

if TYPE_CHECKING:  # packaging is imported when first needed (start-up time of health)
    from typing import Any, Dict, Iterable, List, Optional, Tuple


SCHEMA_VERSION = 1
PLATFORMS = ("aarch64", "x86_64")
STATUSES = ("active", "historical", "release-notes-only", "prerelease", "unmapped")


class MatrixError(ValueError):
    """The matrix could not be loaded or failed validation (message names file/row/field)."""


_DATE = lazyre.pattern(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")


def _valid_date(text: str) -> bool:
    if not _DATE.match(text):
        return False
    import datetime as _dt  # here, not on every start: only a date to check needs it

    try:
        _dt.date.fromisoformat(text)
    except ValueError:
        return False
    return True


# ------------------------------------------------------------------ normalisation helpers


def _cann_in(cann: str, entries: Iterable[str]) -> bool:
    """``cann`` equals one of ``entries`` or matches a wildcard entry (``8.5.X``)."""
    for e in entries:
        last = tokens(e)[-1:] if e else []
        if last and last[0] in ("x", "*"):
            if version_in(cann, [e]):
                return True
        elif same_cann(cann, e):
            return True
    return False


def _python_key(py: str) -> Tuple[int, ...]:
    try:
        return tuple(int(p) for p in py.split("."))
    except ValueError:
        return (0,)


class TorchNpuRow(MutableRecord):
    """One torch_npu package version.  ``python``: platform -> CPython versions with a
    wheel on PyPI (empty when not on PyPI); ``cann``: officially paired CANN;
    ``cann_compatible``: CANN versions/patterns declared compatible with the line;
    ``cann_source``: where that declaration comes from."""

    torch_npu: str
    torch: str
    cann: List[str] = field(default_factory=list)
    cann_compatible: List[str] = field(default_factory=list)
    cann_source: str = ""
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
        return pep440_public(self.torch_npu)

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


class DriverRequirement(MutableRecord):
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


class Chip(MutableRecord):
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
    #: the official product series (its own row's, else its family's; ``""`` = not recorded)
    product_line: str = ""
    product_line_source: str = ""


class Family(MutableRecord):
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
    #: the official product series name (``"Atlas A2 training products / Atlas A2 inference
    #: products"``) and the product models of the family; ``""`` = not recorded
    product_line: str = ""
    product_line_source: str = ""
    products: str = ""


class CannFloor(Record):
    """A ``[[cann_floor]]`` row: the first CANN release (``cann``) that supports
    ``product`` -- a chip family, or only its ``chips`` (npu-smi Names) when given.
    ``statement``: ``"requires"`` (an official note requires CANN >= ``cann``: an older one
    is documented unsupported) or ``"first-supported"`` (the release notes of ``cann``
    announce the support: an older one predates it); ``chips_inferred``: the link from the
    chips to the product is an inference, not a statement."""

    family: str
    chips: Tuple[str, ...]
    product: str
    cann: str
    statement: str
    chips_inferred: bool
    note: str
    source: str
    retrieved: str

    @property
    def documented_unsupported(self) -> bool:
        """Whether a CANN older than the floor is documented unsupported (an error), not
        only older than the first announced support (a warning)."""
        return self.statement == "requires" and not self.chips_inferred

    def covers(self, chip: Chip) -> bool:
        """Whether the floor applies to ``chip`` (its family, and one of ``chips`` when the
        row names some)."""
        if chip.family != self.family:
            return False
        return not self.chips or any(c.lower() == chip.name.lower() for c in self.chips)


# ------------------------------------------------------------------ helpers of the queries
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
        cann_source=r.get("cann_compatible_source", ""),
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
