"""Typed views of the ``tunables`` section (``npudoctor/probes/tunables.py``): the runtime
settings torch_npu, CANN and HCCL read, as set in the judged environment."""

from __future__ import annotations

from typing import Dict, Optional

from npudoctor.facts._view import View, field


class TunableDir(View):
    """A directory a tunable names, as the root resolves it."""

    path: Optional[str] = None
    exists: Optional[bool] = None
    parent_exists: Optional[bool] = None


class TunablesFacts(View):
    """The runtime tunables set in the diagnosed environment (probes/tunables.py)."""

    variables: Dict[str, str] = field(default_factory=dict)
    """watched variables that are set"""
    dirs: Dict[str, TunableDir] = field(default_factory=dict)
    """directories created with one mkdir"""
