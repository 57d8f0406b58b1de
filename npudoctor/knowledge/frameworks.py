"""What a framework built on torch_npu needs (torch_npu build, Ascend Extension line, oldest
CANN) where its own metadata does not say it (kinds K01 and K05).

Data: ``npudoctor/knowledge/data/frameworks/torch_npu_requirements.toml`` (every row with its
sources and the date they were read; per project how its installed release is told and how it
is installed) and ``vllm_ascend_images.toml`` (the vllm-ascend container images and the CANN,
torch and torch_npu each carries).  Rules use the rows only where the package's own
``Requires-Dist`` does not pin torch-npu (metadata first).
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from npudoctor import tomlread
from npudoctor.knowledge.versions import parse_pep440
from npudoctor.record import Record

if TYPE_CHECKING:
    pass


#: Projects of the data that are pip distributions (their rows hold PEP 440 specifiers).
PIP_PROJECTS = ("vllm-ascend", "triton-ascend", "mindspeed", "mindspeed-llm", "lmdeploy")
#: .run-package projects whose release spellings (``2.1.RC1``, ``3.0.0``) order as PEP 440
#: versions do (``2.1rc1`` < ``2.1rc2`` < ``2.3.0``), so "newer than every row" can be told.
ORDERED_RUN_PACKAGES = ("mindie",)


class FrameworkRow(Record):
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
    #: torch releases (X.Y.Z) the release's own version table names; () = not stated.
    torch: Tuple[str, ...] = ()
    #: PEP 440 specifier on torch-npu from the release's requirement file; None = none.
    torch_npu_spec: Optional[str] = None
    #: the published release name(s) where the installed version does not spell it.
    release: Optional[str] = None
    #: ``(torch X.Y.Z, extension line)`` pairs where the release's table names a line per torch.
    ext_by_torch: Tuple[Tuple[str, str], ...] = ()
    #: torch_npu builds another official page of the release names: accepted, never proposed.
    torch_npu_also: Tuple[str, ...] = ()

    @property
    def source(self) -> str:
        """The sources as one line."""
        return "; ".join(self.sources)

    def ext_for(self, torch_xyz: str) -> Optional[str]:
        """The Ascend Extension for PyTorch line the release names for torch ``torch_xyz``
        (``X.Y.Z``): its per-torch line where it names one, else ``ext``."""
        return dict(self.ext_by_torch).get(torch_xyz, self.ext)


def data_path() -> str:
    """Path of the bundled torch_npu_requirements.toml."""
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(here, "data", "frameworks", "torch_npu_requirements.toml")


class Project(Record):
    """One ``[project.NAME]`` table: the name the framework's documents use, how it is
    installed (``"pypi"``, ``"source"``, ``"run-package"``), how its installed release is
    told, and the published table the rows follow."""

    name: str
    label: str
    install: str
    identify: str
    policy: str
    #: False when installed versions are not in release order (MindSpeed Core's 1.0.RC2
    #: installs as 1.1.0, later releases as 0.6.0 .. 0.12.1): "newer than the data" cannot be
    #: told, so any version without a row is unknown.
    ordered: bool = True
    #: how a "source" project's documents install release {release}: environment pairs and
    #: the pip requirement ("" = not documented as one pip command).
    install_env: Tuple[Tuple[str, str], ...] = ()
    install_requirement: str = ""


_CACHE: Dict[str, Any] = {}


def _document() -> Dict[str, Any]:
    return tomlread.bundled_document(data_path())


def _opt(value: Any) -> Optional[str]:
    return str(value) if value else None


def table() -> Tuple[FrameworkRow, ...]:
    """Every row of the data, in file order (oldest release first per project)."""
    if "rows" not in _CACHE:
        doc = _document()
        _CACHE["rows"] = tuple(
            FrameworkRow(
                project=str(r["project"]),
                versions=tuple(str(v) for v in r.get("versions", ())),
                torch_npu=_opt(r.get("torch_npu")),
                ext=_opt(r.get("ext")),
                cann_min=_opt(r.get("cann_min")),
                sources=tuple(str(s) for s in r.get("sources", ())),
                checked_on=str(r.get("checked_on", "")),
                torch=tuple(str(t) for t in r.get("torch", ())),
                torch_npu_spec=_opt(r.get("torch_npu_spec")),
                release=_opt(r.get("release")),
                ext_by_torch=tuple((str(t), str(e)) for t, e in dict(r.get("ext_by_torch", {})).items()),
                torch_npu_also=tuple(str(v) for v in r.get("torch_npu_also", ())),
            )
            for r in doc.get("row", [])
        )
    rows: Tuple[FrameworkRow, ...] = _CACHE["rows"]
    return rows


def project(name: str) -> Optional[Project]:
    """The ``[project.NAME]`` table of ``name``; ``None`` for a project the data lacks."""
    raw = _document().get("project", {}).get(name)
    if not isinstance(raw, dict):
        return None
    return Project(
        name=name,
        label=str(raw.get("label", name)),
        install=str(raw.get("install", "")),
        identify=str(raw.get("identify", "")),
        policy=str(raw.get("policy", "")),
        ordered=bool(raw.get("ordered", True)),
        install_env=tuple((str(k), str(v)) for k, v in dict(raw.get("install_env", {})).items()),
        install_requirement=str(raw.get("install_requirement", "")),
    )


def checked_on(project_name: str) -> str:
    """The newest date the rows of ``project_name`` were read ("" when it has none)."""
    return max((r.checked_on for r in table() if r.project == project_name), default="")


def newer_than_rows(project_name: str, version: Optional[str]) -> bool:
    """Whether ``version`` of a pip project is newer than every release its rows name (a
    release the data predates), counting a ``.devN`` / local build as the release it
    precedes.  ``False`` when a row covers it or nothing is comparable."""
    if project_name not in PIP_PROJECTS + ORDERED_RUN_PACKAGES or rows_for(project_name, version):
        return False
    v = parse_pep440(version)
    if v is None:
        return False
    plain = parse_pep440(str(v.public).split(".dev")[0]) or v
    named = [
        parse_pep440(m)
        for r in table()
        if r.project == project_name
        for spec in r.versions
        for m in re.findall(r"[0-9][0-9A-Za-z.]*", spec)
    ]
    known = [n for n in named if n is not None]
    return bool(known) and all(plain > n for n in known)


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
