"""vllm-ascend's container images (``quay.io/ascend/vllm-ascend``): which tag is built for
which chip family, and the CANN, torch and torch_npu each release's images carry.

Data: ``npudoctor/knowledge/data/frameworks/vllm_ascend_images.toml`` (read from every
release tag's Dockerfiles and requirements.txt and the installation guide's image table;
sources and date in the file).
"""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Tuple

from npudoctor import tomlread
from npudoctor.record import Record


class Variant(Record):
    """One tag suffix (``"-a3"``): the chip family and OS its image is built for."""

    suffix: str
    family: str
    hardware: str
    os: str
    dockerfile: str


class ImageRelease(Record):
    """The images of one release tag: ``cann`` maps each chip family that has an image to
    the CANN of its base image; ``torch`` / ``torch_npu`` come from requirements.txt
    (``""`` = not pinned there); ``policy`` is false for a tag the versioning policy does
    not list."""

    tag: str
    commit: str
    cann: Tuple[Tuple[str, str], ...]
    python: str
    torch: str
    torch_npu: str
    openeuler: bool
    policy: bool

    def cann_for(self, family: str) -> Optional[str]:
        """CANN of this release's image for ``family``; ``None``: no image for it."""
        return dict(self.cann).get(family)


def data_path() -> str:
    """Path of the bundled vllm_ascend_images.toml."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "frameworks", "vllm_ascend_images.toml")


def _doc() -> Dict[str, Any]:
    return tomlread.bundled_document(data_path())


def repository() -> str:
    """The image repository (``quay.io/ascend/vllm-ascend``)."""
    return str(_doc().get("repository", ""))


def checked_on() -> str:
    """The date the sources were read."""
    return str(_doc().get("checked_on", ""))


def variants() -> Tuple[Variant, ...]:
    """Every tag suffix, in file order (Ubuntu before openEuler per family)."""
    return tuple(
        Variant(
            suffix=str(v.get("suffix", "")),
            family=str(v.get("family", "")),
            hardware=str(v.get("hardware", "")),
            os=str(v.get("os", "")),
            dockerfile=str(v.get("dockerfile", "")),
        )
        for v in _doc().get("variant", [])
    )


def releases() -> Tuple[ImageRelease, ...]:
    """Every release tag of the data, in file order."""
    return tuple(
        ImageRelease(
            tag=str(r.get("tag", "")),
            commit=str(r.get("commit", "")),
            cann=tuple((str(k), str(v)) for k, v in dict(r.get("cann", {})).items()),
            python=str(r.get("python", "")),
            torch=str(r.get("torch", "")),
            torch_npu=str(r.get("torch_npu", "")),
            openeuler=bool(r.get("openeuler", False)),
            policy=bool(r.get("policy", True)),
        )
        for r in _doc().get("release", [])
    )


def release_of(version: Optional[str]) -> Optional[ImageRelease]:
    """The image release of vllm-ascend ``version`` (``0.9.1`` -> tag ``v0.9.1``)."""
    if not version:
        return None
    want = "v" + str(version).split("+")[0]
    return next((r for r in releases() if r.tag == want), None)


def image_for(version: Optional[str], family: str) -> Optional[str]:
    """The Ubuntu image of vllm-ascend ``version`` built for chip ``family``
    (``quay.io/ascend/vllm-ascend:v0.10.0rc1-a3``), or ``None`` when that release has no
    image for the family."""
    rel = release_of(version)
    if rel is None or rel.cann_for(family) is None:
        return None
    suffix = next((v.suffix for v in variants() if v.family == family and v.os == "Ubuntu"), None)
    if suffix is None:
        return None
    return f"{repository()}:{rel.tag}{suffix}"


def newest_with(family: str) -> Optional[ImageRelease]:
    """The newest release the versioning policy lists that has an image for ``family``."""
    from packaging.version import InvalidVersion, Version

    best: Optional[Tuple[Version, ImageRelease]] = None
    for rel in releases():
        if not rel.policy or rel.cann_for(family) is None:
            continue
        try:
            v = Version(rel.tag.lstrip("v"))
        except InvalidVersion:
            continue
        if best is None or v > best[0]:
            best = (v, rel)
    return best[1] if best else None


def family_of_package_chip(package_chip: Optional[str]) -> Optional[str]:
    """The image family of a CANN package chip name (``A3`` -> ``910_93``); ``None`` when
    no vllm-ascend image is built for it."""
    if not package_chip:
        return None
    value = dict(_doc().get("package_chip_family", {})).get(package_chip)
    return str(value) if value else None
