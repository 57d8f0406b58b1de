"""What a framework built on torch_npu needs (torch_npu build, Ascend Extension line, oldest
CANN) where its own metadata does not say it (kinds K01 and K05).

Data: ``npudoctor/knowledge/data/frameworks/torch_npu_requirements.toml`` (every row with its
sources and the date they were read).  Rules use these rows only where the package's own
``Requires-Dist`` does not pin torch-npu (metadata first).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from npudoctor import tomlread
from npudoctor.knowledge.versions import parse_pep440

if TYPE_CHECKING:
    pass


#: Projects of the data that are pip distributions (their rows hold PEP 440 specifiers).
PIP_PROJECTS = ("vllm-ascend", "triton-ascend")


@dataclass(frozen=True)
class FrameworkRow:
    """One ``[[row]]``: releases ``versions`` of ``project`` (``vllm-ascend``: PEP 440
    specifiers; ``mindie`` / ``atb-models``: version.info release spellings) need torch_npu
    ``torch_npu`` (or a build of Ascend Extension line ``ext``) and CANN ``cann_min`` or newer;
    ``None`` where the sources say nothing.  ``sources`` were read on ``checked_on``."""

    project: str
    versions: Tuple[str, ...]
    torch_npu: Optional[str]
    ext: Optional[str]
    cann_min: Optional[str]
    sources: Tuple[str, ...]
    checked_on: str

    @property
    def source(self) -> str:
        """The sources as one line."""
        return "; ".join(self.sources)


def data_path() -> str:
    """Path of the bundled torch_npu_requirements.toml."""
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(here, "data", "frameworks", "torch_npu_requirements.toml")


_CACHE: Dict[str, Tuple[FrameworkRow, ...]] = {}


def _opt(value: Any) -> Optional[str]:
    return str(value) if value else None


def table() -> Tuple[FrameworkRow, ...]:
    """Every row of the data, in file order (oldest release first per project)."""
    if "rows" not in _CACHE:
        doc = tomlread.load_bundled(data_path())
        _CACHE["rows"] = tuple(
            FrameworkRow(
                project=str(r["project"]),
                versions=tuple(str(v) for v in r.get("versions", ())),
                torch_npu=_opt(r.get("torch_npu")),
                ext=_opt(r.get("ext")),
                cann_min=_opt(r.get("cann_min")),
                sources=tuple(str(s) for s in r.get("sources", ())),
                checked_on=str(r.get("checked_on", "")),
            )
            for r in doc.get("row", [])
        )
    return _CACHE["rows"]


def rows_for(project: str, version: Optional[str]) -> List[FrameworkRow]:
    """The rows of ``project`` that cover ``version`` (normally one).  Rows of pip projects
    match by PEP 440 specifier (a local ``+g…`` tag and ``.devN`` of a source checkout
    count as the release they precede: ``0.8.4rc2.dev4+g5442b46`` -> ``0.8.4rc2``);
    MindIE / ATB-models rows match the release part of the version.info spelling
    (``1.0.RC2.B010`` -> ``1.0.RC2``)."""
    if not version:
        return []
    out: List[FrameworkRow] = []
    if project in PIP_PROJECTS:
        from packaging.specifiers import SpecifierSet

        v = parse_pep440(version)
        if v is None:
            return []
        plain = parse_pep440(str(v.public).split(".dev")[0]) or v
        for row in table():
            if row.project == project and any(plain in SpecifierSet(s, prereleases=True) for s in row.versions):
                out.append(row)
        # an exact release row ("==0.8.4rc2") wins over the range that holds it
        out.sort(key=lambda row: not any(x.startswith("==") for x in row.versions))
        return out[:1]
    text = str(version).upper()
    for row in table():
        if row.project != project:
            continue
        for spelled in row.versions:
            s = spelled.upper()
            if text == s or text.startswith(s + ".") or text.startswith(s + "-"):
                out.append(row)
    return out[:1]


def npu_fits(installed: str, documented: str) -> Optional[bool]:
    """Whether torch_npu ``installed`` is the build ``documented`` names or a later
    build of the same line.  ``None`` when the order is not knowable.

    PEP 440 order is wrong here: ``2.5.1rc1`` sorts after ``2.5.1.dev20250218`` but the
    dev build is the later one, carrying the custom ops the rc lacks (vllm-ascend#340).
    So: another X.Y.Z -> False; a pre-release (rc/alpha/beta) that is not the documented
    build -> False; a dev build against a dev build -> by date; a dev build against a
    final/post build, or a final against a dev build -> ``None``; finals and posts -> by
    post number."""
    a, b = parse_pep440(installed), parse_pep440(documented)
    if a is None or b is None:
        return None
    if a.release != b.release:
        return False
    if a.public == b.public:
        return True
    if a.pre is not None:
        return False
    if b.is_devrelease and a.is_devrelease:
        return int(a.dev or 0) >= int(b.dev or 0)
    if a.is_devrelease or b.is_devrelease:
        return None
    return int(a.post or 0) >= int(b.post or 0)


#: Last releases of the NumPy 1.x lines the CANN 8.x packages are used with (PyPI): a requirement
#: that admits none of them needs NumPy 2, i.e. it pulled NumPy 2 into an environment whose CANN
#: needs NumPy 1.
NUMPY1_RELEASES = ("1.26.4", "1.24.4", "1.23.5")
