"""SoC facts of torch_npu builds: which extension line first knows each SoC, and the edge
SoC families frameworks reject."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Dict
#: SoC names that torch_npu learned after its first 2.1/1.11 releases: the extension line
#: (release-branch suffix, e.g. v2.1.0-6.0.rc1) whose SoC table first lists them.  Older
#: builds raise ``Unsupported soc version: <name>`` at ``import torch_npu``/first device use.
#: Source: torch_npu's NpuVariables.cpp, read on each release branch: 310B4 added in -6.0.rc1, 910B4-1 in -6.0.rc2, 310P5/310P7
#: and Ascend910_9362 in -7.0.0.
SOC_FIRST_EXT: Dict[str, str] = {
    "Ascend310B4": "6.0.rc1",
    "Ascend910B4-1": "6.0.rc2",
    "Ascend310P5": "7.0.0",
    "Ascend310P7": "7.0.0",
    "Ascend910_9362": "7.0.0",
}

#: Edge SoC families: torch_npu's SoC table lists them, but the torch_npu install guide
#: (v2.7.1-26.x installation_description.md, "Supported hardware products") marks
#: "Atlas 200I/500 A2 inference" x, and the field reports (Ascend/pytorch#57;
#: llama.cpp#10719 `SOC_VERSION ascend310b1 does not support`) show frameworks rejecting them.
EDGE_FAMILIES = ("310B",)
