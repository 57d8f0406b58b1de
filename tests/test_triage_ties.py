"""Tracebacks are evidence (issues 16/17): a traceback frame, or an import/loader error naming a
file inside a distribution that a check finding names -- CUDA-only (PKG052), built for another
SoC (PKG051) -- ties the log to that finding in ``npudoctor triage`` even where no line carries
a code; and the operator-package SoC mismatch line is a signature confirmed by PKG051.

The machines are the real scenario trees (tests/scenarios, built by
tests/builders/build_framework_scenarios.py); the log lines are copied verbatim from the public reports
named beside each excerpt."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

try:
    import tomllib  # type: ignore[import-not-found]
except ImportError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS / "fixtures"))

from clirun import npudoctor  # noqa: E402
from scenario_runner import environment, prepare  # noqa: E402

SCENARIOS = TESTS / "scenarios"
CUDA = "fw-cuda-flash-attn-transformer-engine-beside-torch-npu"
SP = "usr/local/lib/python3.10/site-packages"

# huggingface/autotrain-advanced#292 (the same traceback in Dao-AILab/flash-attention#631)
FLASH_ATTN = """\
  File "/app/env/lib/python3.9/site-packages/transformers/models/llama/modeling_llama.py", line 45, in <module>
    from flash_attn import flash_attn_func, flash_attn_varlen_func
  File "/app/env/lib/python3.9/site-packages/flash_attn/__init__.py", line 3, in <module>
    from flash_attn.flash_attn_interface import (
  File "/app/env/lib/python3.9/site-packages/flash_attn/flash_attn_interface.py", line 8, in <module>
    import flash_attn_2_cuda as flash_attn_cuda
ImportError: libcudart.so.12: cannot open shared object file: No such file or directory
"""

# modelscope/ms-swift#6968 (npu下跑megatron报错: NVIDIA TE stops MindSpeed on Ascend)
TRANSFORMER_ENGINE = """\
  File "/home/ma-user/anaconda3/envs/PyTorch-2.6.0/lib/python3.10/importlib/__init__.py", line 126, in import_module
    return _bootstrap._gcd_import(name[level:], package, level)
  File "/home/ma-user/anaconda3/envs/PyTorch-2.6.0/lib/python3.10/site-packages/transformer_engine/__init__.py", line 11, in <module>
    import transformer_engine.common
"""

# huggingface/accelerate#1475: an import error naming TE's extension module (no frame)
TE_EXTENSION = (
    "ImportError: /usr/local/lib/python3.8/dist-packages/transformer_engine_extensions.cpython-38-x86_64-linux-gnu.so: "
    "undefined symbol: _ZN5torch3jit17parseSchemaOrNameERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE\n"
)

# vllm-ascend#19: a warning naming a file of torch_npu is not an error about torch_npu
WARNING_PATH = (
    "/home/fdd/miniconda3/envs/vllm/lib/python3.10/site-packages/torch_npu/utils/collect_env.py:58: UserWarning: "
    "Warning: The /usr/local/Ascend/ascend-toolkit/latest owner does not match the current owner.\n"
)

# vllm-ascend#6676: a vllm-ascend built for Ascend910B1 on an Ascend310P3
SOC_MISMATCH = (
    "the socversion Ascend910B1 of bin package does not match the current device socverison Ascend310P3. "
    "Please modify default socversion in run.sh or execute run.sh with socversion parameter.\n"
)
# vllm-ascend#340: a traceback frame inside vllm_ascend
VLLM_ASCEND_FRAME = """\
[rank0]:   File "/home/xxx/anaconda3/envs/PyTorch-2.1.0/lib/python3.9/site-packages/vllm_ascend/attention.py", line 845, in forward
[rank0]:     torch_npu._npu_flash_attention(
"""


def _triage(scenario: Path, log: str, tmp_path: Path) -> Dict[str, Any]:
    spec = tomllib.loads((scenario / "scenario.toml").read_text(encoding="utf-8"))
    path = tmp_path / "run.log"
    path.write_text(log, encoding="utf-8")
    proc = npudoctor("triage", str(path), "--root", str(scenario / "root"), "--json", env=environment(scenario, spec))
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def _tied(doc: Dict[str, Any]) -> List[Tuple[str, str, int]]:
    return [(t["code"], t["by"], t["first"]["line"]) for t in doc["tied"]]


def test_a_flash_attn_traceback_is_tied_to_the_cuda_only_finding(tmp_path: Path) -> None:
    s = prepare(SCENARIOS / CUDA, tmp_path / "s")
    check = npudoctor(
        "check",
        "--root",
        str(s / "root"),
        "--json",
        env=environment(s, tomllib.loads((s / "scenario.toml").read_text())),
    )
    pkg052 = next(f for f in json.loads(check.stdout)["findings"] if f["code"] == "PKG052")
    # the finding names what a traceback or a loader message would: import names and libraries
    assert pkg052["data"]["modules"] == [
        "flash_attn",
        "flash_attn_2_cuda",
        "nvidia",
        "transformer_engine",
        "transformer_engine_extensions",
    ]
    assert pkg052["data"]["libraries"] == ["libcudart.so.12", "libc10_cuda.so"]
    doc = _triage(s, FLASH_ATTN, tmp_path)
    assert sorted(_tied(doc)) == [
        ("PKG052", "a traceback frame in flash_attn", 3),
        ("PKG052", "the library libcudart.so", 7),
    ]
    assert doc["tied"][0]["title"] == pkg052["title"] and doc["tied"][0]["severity"] == "error"


def test_a_transformer_engine_traceback_and_its_extension_error_are_tied(tmp_path: Path) -> None:
    s = prepare(SCENARIOS / CUDA, tmp_path / "s")
    doc = _triage(s, TRANSFORMER_ENGINE + TE_EXTENSION + WARNING_PATH, tmp_path)
    assert sorted(_tied(doc)) == [
        ("PKG052", "a traceback frame in transformer_engine", 3),
        ("PKG052", "an error naming a file of transformer_engine_extensions", 5),
    ]


def test_without_the_finding_nothing_is_tied(tmp_path: Path) -> None:
    """The same log on the same machine without the CUDA-only distributions ties nothing."""
    s = prepare(SCENARIOS / CUDA, tmp_path / "s")
    sp = s / "root" / SP
    for name in (
        "flash_attn",
        "flash_attn-2.7.4.post1.dist-info",
        "transformer_engine-2.20.2.dist-info",
        "nvidia_cuda_runtime_cu12-12.9.79.dist-info",
        "nvidia",
    ):
        shutil.rmtree(sp / name, ignore_errors=True)
    (sp / "flash_attn_2_cuda.cpython-310-aarch64-linux-gnu.so").unlink()
    doc = _triage(s, FLASH_ATTN + TRANSFORMER_ENGINE + TE_EXTENSION, tmp_path)
    assert [t for t in doc["tied"] if t["code"] == "PKG052"] == []


def test_a_vllm_ascend_build_for_another_soc_confirms_the_mismatch_line_and_ties_its_frames(tmp_path: Path) -> None:
    s = prepare(SCENARIOS / "k13-310p-duo-vllm-ascend", tmp_path / "s")
    # vllm-ascend#6206 / #11160: the PyPI wheel records an A2 (910B) build
    (s / "root" / SP / "vllm_ascend").mkdir(exist_ok=True)
    (s / "root" / SP / "vllm_ascend/_build_info.py").write_text("# Auto-generated file\n__device_type__ = 'A2'\n")
    doc = _triage(s, SOC_MISMATCH + VLLM_ASCEND_FRAME, tmp_path)
    group = next(g for g in doc["known"] if g["id"] == "bin-package-soc-mismatch")
    assert group["title"] == "an operator package built for Ascend910B1 runs on Ascend310P3"
    assert group["label"] == "msg:bin-package-soc-mismatch"
    top = group["causes"][0]
    assert (top["status"], top["findings"]) == ("cause", ["PKG051"])
    assert top["here"].startswith("vllm-ascend 0.9.1 was built for 910B chips")
    assert ("PKG051", "a traceback frame in vllm_ascend", 2) in _tied(doc)
