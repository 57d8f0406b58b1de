"""Typed view of the ``frameworks`` section (shape documented in
:mod:`npudoctor.probes.frameworks`): vllm-ascend's recorded build target, a pre-release
torch_npu's own description row, and the CUDA evidence of installed distributions."""

from __future__ import annotations

from typing import Dict, Optional, Tuple

from npudoctor.facts._typed import JSON
from npudoctor.facts._view import View, field


class BuildInfo(View):
    """A generated Python file of a framework build (``vllm_ascend/_build_info.py``)."""

    path: Optional[str] = None
    values: Dict[str, JSON] = field(default_factory=dict)
    """literal assignments: __device_type__, __soc_version__, ..."""
    error: Optional[str] = None


class Description(View):
    """The row of a pre-release torch_npu's own METADATA description naming its version."""

    metadata: Optional[str] = None
    version: Optional[str] = None
    row: Optional[str] = None
    """the table row, cells joined with ' | '"""
    cann: Optional[str] = None
    """the CANN that row names"""
    error: Optional[str] = None


class CudaEvidence(View):
    """An installed distribution with CUDA files or CUDA DT_NEEDED entries."""

    name: Optional[str] = None
    version: Optional[str] = None
    dist_info: Optional[str] = None
    files: Tuple[str, ...] = ()
    """RECORD paths of CUDA libraries or the data's patterns"""
    needed: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    """extension module (RECORD path) -> CUDA DT_NEEDED names"""
    checked: int = 0
    """extension modules whose DT_NEEDED was read"""


class FrameworksFacts(View):
    """What frameworks record about their own build, and CUDA evidence."""

    vllm_ascend: Optional[BuildInfo] = None
    torch_npu_description: Optional[Description] = None
    cuda: Tuple[CudaEvidence, ...] = ()
    errors: Tuple[str, ...] = ()
