"""torch's autoloading of device backends (entry-point group ``torch.backends``): the data of
``npudoctor/knowledge/data/torch_autoload.toml`` (sources and retrieval date there) and the
one question it answers, whether ``import torch`` of a given release and environment
imports the registered backends itself."""

from __future__ import annotations

import os
from typing import Dict, Mapping, Optional, Tuple

from npudoctor import tomlread
from npudoctor.record import Record


class Autoload(Record):
    """The facts of the data file (see its header)."""

    group: str
    first_torch: str
    variable: str
    enabled: str
    error: str
    sources: Tuple[str, ...]
    retrieved: str

    def applies(self, torch_version: Optional[str], environ: Mapping[str, str]) -> Optional[bool]:
        """Whether ``import torch`` of ``torch_version`` autoloads in ``environ``: ``None``
        when the version cannot be read."""
        from packaging.version import InvalidVersion, Version

        try:
            release = Version(str(torch_version)).release
        except InvalidVersion:
            return None
        if release[:2] < Version(self.first_torch).release[:2]:
            return False
        return environ.get(self.variable, self.enabled) == self.enabled


_CACHE: Dict[str, Autoload] = {}


def autoload() -> Autoload:
    """The bundled data, parsed once per process."""
    if "data" not in _CACHE:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "torch_autoload.toml")
        doc = tomlread.load_bundled(path)
        _CACHE["data"] = Autoload(
            group=str(doc["group"]),
            first_torch=str(doc["first_torch"]),
            variable=str(doc["variable"]),
            enabled=str(doc["enabled"]),
            error=str(doc["error"]),
            sources=tuple(str(s) for s in doc["sources"]),
            retrieved=str(doc["retrieved"]),
        )
    return _CACHE["data"]
