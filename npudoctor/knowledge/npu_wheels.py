"""Python distributions that are part of the NPU stack: their shared objects are audited
by the library check even when they link no NPU library directly.

A ``.so`` such a distribution installs (its ``RECORD``) is loaded by the NPU workload
(vllm-ascend's custom kernels, triton-ascend's compiler libraries, torchair's graph
executor inside torch_npu), so a ``DT_NEEDED`` entry it cannot resolve is reported even
when it names no ``libtorch_npu.so`` / ``libascendcl.so`` / ... .

Sources: the frameworks of ``data/frameworks/framework_support.toml`` ("vllm-ascend",
"mindie", "mindspeed", "torchair", "apex-npu", "triton-ascend") and its ``build_info``
rows, which name the distributions (``triton_ascend-<version>.dist-info``,
``torchair-<version>-py3-none-any.whl``, ``apex-0.1+ascend-<py>-<arch>.whl``); torch-npu
(PyPI ``torch-npu``); MindIE's Python parts are installed as ``mindie*`` distributions.
"""

from __future__ import annotations

from typing import Optional

#: Canonical (PEP 503) names of the NPU stack's distributions.
NPU_DISTRIBUTIONS = frozenset({"torch-npu", "vllm-ascend", "triton-ascend", "torchair", "mindspeed"})
#: Canonical-name prefixes of NPU distributions (MindIE ships several).
NPU_PREFIXES = ("mindie",)


def is_npu_distribution(name: str, version: Optional[str] = None) -> bool:
    """True when the distribution ``name`` (canonical, ``vllm-ascend``) of ``version`` is part
    of the NPU stack.  ``apex`` counts only as Ascend's build (local version ``+ascend``:
    ``apex-0.1+ascend``); NVIDIA's apex is not an NPU package."""
    if name in NPU_DISTRIBUTIONS or name.startswith(NPU_PREFIXES):
        return True
    return name == "apex" and "+ascend" in (version or "").lower()
