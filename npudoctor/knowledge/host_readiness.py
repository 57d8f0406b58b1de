"""Host readiness expectations of Ascend's own tools: the data of
``npudoctor/knowledge/data/host_readiness.toml`` (sources and retrieval date there) and the
one question it answers today, whether a kernel release is older than msprechecker's
minimum."""

from __future__ import annotations

import os
from typing import Dict, Optional

from npudoctor import tomlread
from npudoctor.knowledge.versions import kernel_release
from npudoctor.record import Record


class KernelFloor(Record):
    """The ``[kernel]`` table of the data file (see its header)."""

    minimum: str
    package: str
    version: str
    path: str
    key: str
    severity: str
    reason: str
    reason_en: str
    source: str
    retrieved: str

    @property
    def cited(self) -> str:
        """Where the minimum is written: ``msprechecker 0.4.0 presets/default.yaml sys.release``."""
        return f"{self.package} {self.version} {self.path.partition('/')[2]} {self.key}"

    def older(self, release: Optional[str]) -> Optional[bool]:
        """Whether ``release`` (``uname -r``) is below the minimum; ``None`` when it cannot
        be read as a release."""
        found, floor = kernel_release(release), kernel_release(self.minimum)
        if found is None or floor is None:
            return None
        return found < floor


_CACHE: Dict[str, KernelFloor] = {}


def kernel_floor() -> KernelFloor:
    """The bundled ``[kernel]`` table, parsed once per process."""
    if "kernel" not in _CACHE:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "host_readiness.toml")
        table = tomlread.load_bundled(path)["kernel"]
        _CACHE["kernel"] = KernelFloor(**{name: str(table[name]) for name in KernelFloor.__struct_fields__})
    return _CACHE["kernel"]
