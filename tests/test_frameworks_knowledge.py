"""Issue 16 knowledge and parsers on the recorded data: every pre-release torch_npu row of
prerelease_torch_npu.toml (copied verbatim from the wheels' METADATA) is found again by the
description parser with its CANN; the chip-support queries answer what the sources say; the
CUDA-only judgement follows each entry's recognise/not_if rules; the parsers never raise."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from builders.realwheel import realwheel_venv  # noqa: F401  (session fixture)
from hypothesis import given, settings
from hypothesis import strategies as st

from npudoctor.knowledge import chip_support, cuda_only
from npudoctor.knowledge.grades import Grade
from npudoctor.knowledge.prerelease import metadata_verdict
from npudoctor.parsers.build_info import python_constants, torch_npu_description_row

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[no-redef]

DATA = Path(__file__).resolve().parent.parent / "npudoctor" / "knowledge" / "data" / "frameworks"
BUILDS = tomllib.loads((DATA / "prerelease_torch_npu.toml").read_text(encoding="utf-8"))["build"]
HEADER = "| CANN Version | Supported PyTorch Version | Supported Adapter Version | Github Branch |\n|---|---|---|---|\n"


@pytest.mark.parametrize(
    "build", [b for b in BUILDS if b["description_row"].startswith("|")], ids=lambda b: b["version"]
)
def test_each_recorded_markdown_row_gives_its_cann(build: dict) -> None:
    found = torch_npu_description_row(HEADER + build["description_row"] + "\n", build["version"])
    assert found is not None and found[1] == build["cann_named"]


def test_the_html_row_of_2_1_0rc1_and_rows_under_a_shared_cann_cell() -> None:
    html = (
        "<table><tr><th>CANN版本</th><th>支持的PyTorch版本</th><th>支持的Adapter版本</th><th>Github分支</th></tr>"
        '<tr><td rowspan="4">CANN 7.0.RC1.alpha003</td><td>2.1.0</td><td>2.1.0.rc1</td><td>v2.1.0-5.0.rc3</td></tr>'
        "<tr><td>2.0.1</td><td>2.0.1.rc1</td><td>v2.0.1-5.0.rc3</td></tr></table>"
    )
    assert torch_npu_description_row(html, "2.1.0rc1") == (
        "CANN 7.0.RC1.alpha003 | 2.1.0 | 2.1.0.rc1 | v2.1.0-5.0.rc3",
        "7.0.RC1.alpha003",
    )
    assert torch_npu_description_row(html, "2.0.1rc1") == ("2.0.1 | 2.0.1.rc1 | v2.0.1-5.0.rc3", "7.0.RC1.alpha003")
    # 2.13.0rc1's README has no table: no row, no CANN
    assert torch_npu_description_row("Take installing TorchNPU 2.10.0.post2 as an example", "2.13.0rc1") is None


def test_metadata_verdicts_use_the_one_grade_model() -> None:
    row = "CANN 8.0.RC3.alpha001 | 2.4.0 | 2.4.0rc1 | v2.4.0"
    assert metadata_verdict("2.4.0rc1", "8.0.RC3.alpha001", row, "8.0.RC3.alpha001").grade is Grade.DECLARED  # type: ignore[union-attr]
    same = metadata_verdict("2.4.0rc1", "8.0.RC3.alpha001", row, "8.0.RC3")
    assert same is not None and same.grade is Grade.SAME_LINE and same.unofficial
    other = metadata_verdict("2.4.0rc1", "8.0.RC3.alpha001", row, "8.2.RC1")
    assert other is not None and other.grade is Grade.UNDOCUMENTED and other.window.startswith("CANN 8.0.RC3.alpha001")
    assert metadata_verdict("2.13.0rc1", None, None, "9.0.0") is None


def test_chip_support_answers_what_the_sources_say() -> None:
    assert chip_support.support_for("vllm-ascend", "310P", "0.9.1").status == "unsupported"  # type: ignore[union-attr]
    assert chip_support.support_for("vllm-ascend", "310P", "0.9.1rc1").status == "experimental"  # type: ignore[union-attr]
    assert chip_support.support_for("vllm-ascend", "910B", "0.9.1").status == "supported"  # type: ignore[union-attr]
    assert chip_support.support_for("vllm-ascend", "310B", "0.23.0").status == "unsupported"  # type: ignore[union-attr]
    assert chip_support.support_for("mindie", "910_93", "2.1.RC1.B152").status == "supported"  # type: ignore[union-attr]
    assert chip_support.support_for("mindspeed", "950", "1.0.0").status == "supported"  # type: ignore[union-attr]
    assert chip_support.support_for("sglang", "310P", "0.5.0") is None  # no row: not documented either way
    assert chip_support.support_for("deepspeed", "910B", "0.10.0").status == "unsupported"  # type: ignore[union-attr]
    assert chip_support.support_for("deepspeed", "910B", "0.10.1").status == "supported"  # type: ignore[union-attr]
    assert chip_support.newest_supported("vllm-ascend", "310p").first_version == "0.14.0rc1"  # type: ignore[union-attr]
    assert chip_support.vllm_ascend_family("A3", None) == "910_93"
    assert chip_support.vllm_ascend_family(None, "ASCEND910_9391") == "910_93"
    assert chip_support.vllm_ascend_family(None, "Ascend910B4-1") == "910b"
    assert chip_support.vllm_ascend_family("Z9", "ascend710") is None


def test_every_cuda_entry_example_is_named_and_exclusions_hold() -> None:
    raw = tomllib.loads((DATA / "cuda_only.toml").read_text(encoding="utf-8"))["entry"]
    for entry in raw:
        for example in entry["examples"]:
            assert cuda_only.entry_for(example) is not None, example
    assert cuda_only.judge("apex", "0.1+ascend", [], [], {"apex/x.so": ["libcudart.so.12"]}) is None
    apex = cuda_only.judge("apex", "0.1", [], [], {"apex/x.so": ["libcudart.so.12"]})
    assert apex is not None and apex.severity == "error"
    assert cuda_only.judge("apex", "0.1", [], [], {}) is None  # pure-Python NVIDIA apex is harmless
    assert cuda_only.judge("torch", "2.6.0", [], [], {}) is None  # torch by name alone proves nothing
    assert cuda_only.judge("torch", "2.6.0+cpu", [], [], {}) is None
    assert cuda_only.judge("triton", "3.2.0", [], [], {}, installed=["triton"]) is None
    flagged = cuda_only.judge("triton", "3.2.0", [], [], {}, installed=["triton", "triton-ascend"])
    assert flagged is not None and flagged.entry is not None and flagged.entry.id == "triton-cuda-beside-triton-ascend"
    gen = cuda_only.judge("torchvision", "0.21.0+cu124", [], [], {})
    assert gen is not None and gen.entry is None and gen.severity == "error"
    reqs = cuda_only.judge("vllm", "0.9.1", ["nvidia-cudnn-frontend", "torch"], [], {})
    assert (
        reqs is not None and reqs.severity == "warning" and reqs.evidence == ("Requires-Dist: nvidia-cudnn-frontend",)
    )


def test_cuda_library_names() -> None:
    for name in (
        "libcudart.so.12",
        "libcudart-45da57e3.so.11.0",
        "libcublasLt.so.12",
        "libcuda.so.1",
        "libtorch_cuda.so",
    ):
        assert cuda_only.CUDA_LIBRARY.match(name), name
    for name in ("libc10.so", "libascendcl.so", "libcudaxx.txt", "libhccl.so"):
        assert not cuda_only.CUDA_LIBRARY.match(name), name


@settings(max_examples=200, deadline=2000)
@given(st.text(max_size=400), st.sampled_from(["2.4.0rc1", "2.1.0rc1", "x", ""]))
def test_parsers_never_raise(text: str, version: str) -> None:
    assert isinstance(python_constants(text), dict)
    got = torch_npu_description_row(text, version)
    assert got is None or isinstance(got[0], str)


def _interesting_one_by_one(path: str) -> bool:
    """The definition :func:`cuda_only.interesting_file` must agree with: each data
    pattern tried in turn, and the file name against CUDA_LIBRARY."""
    base = path.rsplit("/", 1)[-1]
    return bool(cuda_only.CUDA_LIBRARY.match(base)) or any(p.fullmatch(path) for p in cuda_only.file_patterns())


#: RECORD paths that each data pattern (or CUDA_LIBRARY) keeps, and near misses.
_FILE_CASES = (
    "transformer_engine/__init__.py",
    "transformer_engine/lib/libtransformer_engine.so",
    "nvidia/cublas/lib/libcublas.so.12",
    "nvidia/cuda_runtime/lib/libcudart.so.12",
    "cuda/bindings/_bindings/cydriver.cpython-311-x86_64-linux-gnu.so",
    "cuda/pathfinder/__init__.py",
    "torch/lib/libtorch_cuda.so",
    "torch/lib/libc10_cuda.so",
    "flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so",
    "bitsandbytes/libbitsandbytes_cuda121.so",
    "bitsandbytes/libbitsandbytes_cpu.so",
    "bitsandbytes/backends/npu/ops.py",
    "xformers/_C.so",
    "cupy/_core/core.cpython-311-x86_64-linux-gnu.so",
    "triton/backends/nvidia/bin/ptxas",
    "triton/_C/libtriton.cpython-311-x86_64-linux-gnu.so",
    "autogptq_cuda_64.cpython-311-x86_64-linux-gnu.so",
    "exllamav2_kernels.cpython-311-x86_64-linux-gnu.so",
    "xformers-0.0.35.dist-info/RECORD",
    "libcudart-45da57e3.so.11.0",
    "torch/lib/libtorch_cuda.so.bak",
    "nvidia/cublas/lib/libcublas.so.12/x",
    "torch/lib/libc10.so",
    "torch_npu/lib/libtorch_npu.so",
    "a/b/c/libcudnn_ops.so.9",
    "libnccl.so.2",
    "lib/libcuda.so/x.py",
    "nvidia/nccl/lib/libnccl.so.2.bak",
    "",
)


def test_interesting_file_is_the_one_by_one_answer() -> None:
    kept = [p for p in _FILE_CASES if cuda_only.interesting_file(p)]
    assert kept == [p for p in _FILE_CASES if _interesting_one_by_one(p)]
    assert "torch/lib/libtorch_cuda.so" in kept and "triton/backends/nvidia/bin/ptxas" in kept
    assert "torch/lib/libc10.so" not in kept and "torch/lib/libtorch_cuda.so.bak" not in kept


@pytest.mark.slow
def test_interesting_file_on_the_real_torch_and_torch_npu_records(realwheel_venv) -> None:  # noqa: F811
    paths = []
    for record in sorted(realwheel_venv.site_packages.glob("*.dist-info/RECORD")):
        paths += [line.split(",", 1)[0].strip() for line in record.read_text(encoding="utf-8").splitlines()]
    assert len(paths) > 20000  # torch's RECORD alone lists ~15,000 files
    assert [p for p in paths if cuda_only.interesting_file(p)] == [p for p in paths if _interesting_one_by_one(p)]
