"""Which torch_npu wheels exist: per version, CPython version and architecture, with the
glibc each one needs.

Two sources:

* :meth:`WheelCatalog.from_pypi_json` — a PyPI JSON API document for the project
  ``torch-npu`` (``https://pypi.org/pypi/torch-npu/json``, or a recorded copy such as
  ``tests/fixtures/plan/pypi-torch-npu.json``).  Wheel file names carry the exact
  CPython and platform tags (as PyPI lists them), so the glibc a wheel needs is known
  (``manylinux_2_28`` → glibc ≥ 2.28, PEP 600).
* :meth:`WheelCatalog.from_matrix` — the ``python`` field of the matrix rows (the same
  PyPI listing, recorded when the matrix was built); no platform tags, so no glibc check.

Also: :func:`platform_tags` (the ``--platform`` list pip needs to download for another
machine) and :func:`supported_tags` (what a site's interpreter accepts).
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from npudoctor import lazyre
from npudoctor.knowledge.versions import canonical_version, python_key
from npudoctor.record import MutableRecord

if TYPE_CHECKING:
    from npudoctor.knowledge.matrix import Matrix

_MANYLINUX = lazyre.pattern(r"^manylinux_(\d+)_(\d+)_(.+)$")
_LEGACY = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


def platform_glibc(platform: str) -> Optional[Tuple[Tuple[int, int], str]]:
    """``((2, 28), "aarch64")`` for ``manylinux_2_28_aarch64``; legacy aliases too;
    ``None`` for non-manylinux platforms."""
    m = _MANYLINUX.match(platform)
    if m:
        return (int(m.group(1)), int(m.group(2))), m.group(3)
    prefix, _, arch = platform.partition("_")
    if prefix in _LEGACY:
        return _LEGACY[prefix], arch
    return None


def parse_glibc(text: Optional[str]) -> Optional[Tuple[int, int]]:
    """``(2, 31)`` from ``"2.31"``; ``None`` when unknown or garbled."""
    if not isinstance(text, str):
        return None
    m = re.match(r"^\s*(\d+)\.(\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def platform_tags(arch: str, glibc: Optional[str]) -> List[str]:
    """The platform tags a Linux ``arch`` machine with ``glibc`` accepts, best first, for
    ``pip download --platform`` (pip does not expand ``manylinux_2_X`` by itself).

    Unknown glibc: assume 2.28 (the floor of current torch_npu wheels on PyPI) —
    the caller must say so.  ``manylinux2014``/``2010``/``1`` aliases are included."""
    version = parse_glibc(glibc) or (2, 28)
    major, minor = version
    tags = [f"manylinux_{major}_{m}_{arch}" for m in range(minor, 4, -1)] if major == 2 else []
    for alias, (_maj, amin) in sorted(_LEGACY.items(), key=lambda kv: -kv[1][1]):
        # manylinux2010/manylinux1 were defined for x86 only (PEP 571/513)
        if (major > 2 or minor >= amin) and (alias == "manylinux2014" or arch in ("x86_64", "i686")):
            tags.append(f"{alias}_{arch}")
    tags.append(f"linux_{arch}")
    return tags


def supported_tags(python: str, arch: str, glibc: Optional[str]) -> List[Any]:
    """``packaging.tags.Tag`` objects a CPython ``python`` ("3.10") on ``arch`` with
    ``glibc`` accepts (cpXY-cpXY, abi3, none, py3-none-any), best first."""
    from packaging import tags

    ver = tuple(int(p) for p in python.split(".")[:2])
    plats = platform_tags(arch, glibc)
    out = list(tags.cpython_tags(ver, abis=[f"cp{ver[0]}{ver[1]}"], platforms=plats))
    out += list(tags.compatible_tags(ver, interpreter=f"cp{ver[0]}{ver[1]}", platforms=plats))
    return out


class WheelFile(MutableRecord):
    """One torch_npu wheel file."""

    filename: str
    version: str  # canonical
    python: str  # "3.10"
    arch: str
    min_glibc: Optional[Tuple[int, int]]
    sha256: Optional[str] = None
    size: Optional[int] = None
    url: Optional[str] = None

    @property
    def glibc_text(self) -> Optional[str]:
        return f"{self.min_glibc[0]}.{self.min_glibc[1]}" if self.min_glibc else None


class WheelCatalog:
    """torch_npu wheels per version.  ``exact`` is True when platform tags are known
    (PyPI JSON), False when only Python versions are (matrix rows)."""

    def __init__(self, files: Dict[str, List[WheelFile]], source: str, exact: bool) -> None:
        self._files = files
        self.source = source
        self.exact = exact

    # ---------------------------------------------------------------- building
    @classmethod
    def from_pypi_json(cls, data: Any, source: str = "PyPI JSON") -> WheelCatalog:
        """From a parsed PyPI JSON document (``{"releases": {version: [file, ...]}}``)
        or a path to one.  Raises ``ValueError`` when it is not such a document."""
        from packaging.utils import InvalidWheelFilename, parse_wheel_filename

        if isinstance(data, str):
            source = data
            try:
                with open(data, encoding="utf-8") as fh:
                    data = json.load(fh)
            except (OSError, ValueError, RecursionError) as exc:
                raise ValueError(f"cannot read PyPI JSON {source}: {exc}") from None
        releases = data.get("releases") if isinstance(data, dict) else None
        if not isinstance(releases, dict):
            raise ValueError(f"{source}: not a PyPI JSON document (no 'releases' object)")
        files: Dict[str, List[WheelFile]] = {}
        for entries in releases.values():
            for entry in entries if isinstance(entries, list) else []:
                name = entry.get("filename") if isinstance(entry, dict) else None
                if not isinstance(name, str) or not name.endswith(".whl") or entry.get("yanked"):
                    continue
                try:
                    _n, ver, _b, wtags = parse_wheel_filename(name)
                except InvalidWheelFilename:
                    continue
                for tag in wtags:
                    if not tag.interpreter.startswith("cp") or len(tag.interpreter) < 4:
                        continue
                    pg = platform_glibc(tag.platform)
                    if pg is None:
                        continue
                    python = f"{tag.interpreter[2]}.{tag.interpreter[3:]}"
                    digest = (entry.get("digests") or {}).get("sha256")
                    files.setdefault(canonical_version(str(ver)), []).append(
                        WheelFile(name, canonical_version(str(ver)), python, pg[1], pg[0], digest, entry.get("size"))
                    )
                    break
        return cls(files, source, exact=True)

    @classmethod
    def from_matrix(cls, matrix: Matrix) -> WheelCatalog:
        """From ``Matrix.torch_npu_rows`` (``row.python``: {arch: ["3.9", ...]})."""
        files: Dict[str, List[WheelFile]] = {}
        for row in matrix.torch_npu_rows:
            version = canonical_version(row.torch_npu)
            plat_tags = getattr(row, "platform_tags", None) or {}
            for arch, pythons in (row.python or {}).items():
                floors = []
                for text in plat_tags.get(arch, []) or []:
                    for part in str(text).split("."):
                        pg = platform_glibc(f"{part}_{arch}")
                        if pg is not None:
                            floors.append(pg[0])
                min_glibc = min(floors) if floors else None
                for py in pythons or []:
                    files.setdefault(version, []).append(WheelFile("", version, py, arch, min_glibc))
        exact = any(f.min_glibc for fs in files.values() for f in fs)
        return cls(files, "matrix (PyPI wheel listing recorded in the matrix)", exact=exact)

    # ---------------------------------------------------------------- queries
    def known(self, version: str) -> bool:
        """True when the catalog has any wheel for ``version``."""
        return canonical_version(version) in self._files

    def pythons(self, version: str, arch: str) -> List[str]:
        """CPython versions with a wheel for ``version`` on ``arch``, ascending."""
        found = {f.python for f in self._files.get(canonical_version(version), []) if f.arch == arch}
        return sorted(found, key=python_key)

    def wheel(self, version: str, python: str, arch: str) -> Optional[WheelFile]:
        """The wheel for (version, python, arch), the least demanding one if several."""
        found = [f for f in self._files.get(canonical_version(version), []) if f.arch == arch and f.python == python]
        found.sort(key=lambda f: f.min_glibc or (0, 0))
        return found[0] if found else None

    def versions(self) -> List[str]:
        """All versions with at least one wheel."""
        return list(self._files)


def describe_pythons(pythons: Sequence[str]) -> str:
    """``"cp39, cp310, cp311"`` (or ``"none"``)."""
    return ", ".join("cp" + p.replace(".", "") for p in pythons) or "none"
