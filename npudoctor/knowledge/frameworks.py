"""Built-in table of frameworks built on torch_npu whose own metadata does not say which
torch_npu build or CANN they need (kinds K01 and K05).

vllm-ascend up to 0.9.0 was installed next to a torch_npu that pip could not fetch (dev
builds from a download link), so its ``Requires-Dist`` names no torch-npu; MindIE and its
ATB models are ``.run``/tar packages with only a ``version.info``.  What they need comes
from their documentation, listed per row in ``source``.  Rules use this table only where
the package's own ``Requires-Dist`` does not pin torch-npu (metadata first).

Rows (:class:`FrameworkRow`):

    project    canonical name: "vllm-ascend" (a pip distribution), "mindie" or
               "atb-models" (version.info facts of the cann probe)
    versions   PEP 440 specifier (vllm-ascend) or the list of MindIE release spellings
    torch_npu  the documented torch_npu build ("2.5.1.dev20250218"), or None
    ext        Ascend Extension for PyTorch version the release ships with ("7.1.0"):
               the torch_npu builds of that extension line (matrix ``ext_version``)
    cann_min   oldest CANN the release works on ("8.1.RC1"), or None
    source     where the row comes from
"""

from __future__ import annotations

from typing import TYPE_CHECKING, List, NamedTuple, Optional, Tuple

if TYPE_CHECKING:
    from packaging.version import Version

VERSIONING = (
    "vllm-project/vllm-ascend docs/source/community/versioning_policy.md 'Release compatibility matrix' (REPORT §7)"
)


class FrameworkRow(NamedTuple):
    project: str
    versions: Tuple[str, ...]
    torch_npu: Optional[str]
    ext: Optional[str]
    cann_min: Optional[str]
    source: str


TABLE: Tuple[FrameworkRow, ...] = (
    FrameworkRow(
        "vllm-ascend",
        (">=0.7.1rc1,<0.7.3rc1",),
        "2.5.1.dev20250218",
        None,
        "8.0.0",
        "vllm-ascend v0.7.1rc1 release note ('relies on an unreleased torch_npu version', installed by hand); "
        "vllm-ascend#340 ('unpaired version of torch-npu'), #152 (2.5.1.dev20250218); #380 "
        "('vllm-ascend only work on >=CANN8.0')",
    ),
    FrameworkRow(
        "vllm-ascend",
        ("==0.7.3rc1", "==0.7.3rc2"),
        "2.5.1.dev20250308",
        None,
        "8.0.0",
        "vllm-ascend v0.7.3rc1 installation.md (CANN >= 8.0.0, torch-npu >= 2.5.1.dev20250308) and release note "
        "('Bump torch_npu version to dev20250308')",
    ),
    FrameworkRow("vllm-ascend", (">=0.7.3,<0.9.1rc1",), "2.5.1", None, "8.1.RC1", VERSIONING + ": v0.7.3 - v0.9.0rc2"),
    FrameworkRow("vllm-ascend", ("==0.8.4rc2",), "2.5.1", None, "8.0.0", VERSIONING + ": v0.8.4rc2 -> CANN 8.0.0"),
    FrameworkRow("vllm-ascend", (">=0.9.1,<0.10.0rc1",), "2.5.1.post1", None, "8.2.RC1", VERSIONING + ": v0.9.1"),
    FrameworkRow(
        "vllm-ascend", (">=0.10.0rc1,<0.11.0rc1",), "2.7.1.dev20250724", None, "8.2.RC1", VERSIONING + ": v0.10.x"
    ),
    FrameworkRow("vllm-ascend", (">=0.11.0,<0.12.0rc1",), "2.7.1.post1", None, "8.3.RC2", VERSIONING + ": v0.11.0"),
    FrameworkRow("vllm-ascend", (">=0.13.0,<0.14.0rc1",), "2.8.0.post2", None, "8.5.0", VERSIONING + ": v0.13.0"),
    FrameworkRow(
        "vllm-ascend", (">=0.14.0rc1,<0.20.0rc1",), "2.9.0", None, "8.5.0", VERSIONING + ": v0.14.0rc1 - v0.19.1rc1"
    ),
    FrameworkRow(
        "vllm-ascend", (">=0.20.2rc1,<0.23.0rc1",), "2.10.0", None, "9.0.0", VERSIONING + ": v0.20.2rc1 - v0.22.1rc1"
    ),
    FrameworkRow("vllm-ascend", ("==0.23.0rc1",), "2.10.0.post2", None, "9.0.1", VERSIONING + ": v0.23.0rc1"),
    FrameworkRow("vllm-ascend", ("==0.23.0",), "2.10.0.post4", None, "9.1.0", VERSIONING + ": v0.23.0"),
    FrameworkRow(
        "atb-models",
        ("1.0.RC2",),
        "2.1.0.post5",
        None,
        None,
        "Ascend/pytorch#37: Ascend-mindie-atb-models 1.0.RC2 calls torch_npu.dynamo.torchair.get_npu_backend, "
        "missing in 2.1.0.post4; the reporter's fix was torch_npu 2.1.0.post5",
    ),
    FrameworkRow(
        "mindie",
        ("2.1.RC1",),
        None,
        "7.1.0",
        "8.2.RC1",
        "MindIE 2.1.RC1 release note (hiascend mindie/21RC1 releasenote_0004): CANN 8.2.RC1, Ascend Extension "
        "for PyTorch 7.1.0 (REPORT §3.2)",
    ),
)


def _pep440(text: Optional[str]) -> Optional[Version]:
    from packaging.version import InvalidVersion, Version

    try:
        return Version(str(text))
    except (InvalidVersion, TypeError, ValueError):  # ValueError: a number of 4,300+ digits
        return None


def rows_for(project: str, version: Optional[str]) -> List[FrameworkRow]:
    """The rows of ``project`` that cover ``version`` (normally one).  vllm-ascend rows
    match by PEP 440 specifier (a local ``+g…`` tag and ``.devN`` of a source checkout
    count as the release they precede: ``0.8.4rc2.dev4+g5442b46`` -> ``0.8.4rc2``);
    MindIE / ATB-models rows match the release part of the version.info spelling
    (``1.0.RC2.B010`` -> ``1.0.RC2``)."""
    if not version:
        return []
    out: List[FrameworkRow] = []
    if project == "vllm-ascend":
        from packaging.specifiers import SpecifierSet

        v = _pep440(version)
        if v is None:
            return []
        plain = _pep440(str(v.public).split(".dev")[0]) or v
        for row in TABLE:
            if row.project == project and any(plain in SpecifierSet(s, prereleases=True) for s in row.versions):
                out.append(row)
        # an exact release row ("==0.8.4rc2") wins over the range that holds it
        out.sort(key=lambda row: not any(x.startswith("==") for x in row.versions))
        return out[:1]
    text = str(version).upper()
    for row in TABLE:
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
    a, b = _pep440(installed), _pep440(documented)
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
