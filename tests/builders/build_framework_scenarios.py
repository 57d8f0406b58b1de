"""(Re)build the scenarios of issue 16 (frameworks): torch without torch_npu, a vllm-ascend
build for another chip, a vllm-ascend release made for another CANN, CUDA-only distributions.

    python tests/builders/build_framework_scenarios.py          # rewrites the fw-* folders

Each tree is an officially paired stack on a captured 910B3 machine (npu-smi table
npu-smi-info_910B3_24.1.rc1.b030_8npu_devices_only.txt, driver 24.1.rc2.2, CANN 8.2.RC1 toolkit
with its 910b kernels and NNAL from real install-info samples) plus the one problem the scenario
is about.  Distribution metadata and RECORD files are written the way pip writes them; the
extension module of flash-attn is a real ELF built with gcc whose DT_NEEDED names
libcudart.so.12 and libc10_cuda.so, as the wheel's own does (Dao-AILab/flash-attention#631,
huggingface/autotrain-advanced#292).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Dict, Iterable, List, Tuple

HERE = Path(__file__).resolve().parents[1]  # tests/
sys.path.insert(0, str(HERE))

from builders.build_cann_scenarios import (  # noqa: E402
    HOME_ENV,
    classic_toolkit,
    dist,
    driver,
    nnal,
    npu_smi,
    scenario,
    write,
)
from builders.build_case_scenarios import SOURCED_FULL, deps, site, tag  # noqa: E402
from builders.elf_build import build_so  # noqa: E402

NPU_SMI = "npu-smi-info_910B3_24.1.rc1.b030_8npu_devices_only.txt"
#: The toolkit's and NNAL's set_env.sh applied (NNAL's names its cxx_abi_0 directory).
ATB = "/usr/local/Ascend/nnal/atb/latest/atb/cxx_abi_0"
ENV = dict(HOME_ENV, **SOURCED_FULL)
ENV.update(ATB_HOME_PATH=ATB, LD_LIBRARY_PATH=f"{ATB}/lib:{SOURCED_FULL['LD_LIBRARY_PATH']}")


def paired_910b3(s: Path) -> Path:
    """CANN 8.2.RC1 toolkit + 910b kernels + NNAL 8.2.RC1, driver 24.1.rc2.2, npu-smi on 8x 910B3,
    /dev/davinci nodes."""
    r = s / "root"
    classic_toolkit(
        r,
        "8.2.RC1",
        "ascend_toolkit_install_8.2.RC1_aarch64.info",
        toolkit_info="toolkit_version.info_8.2.RC1_component.txt",
        opp_kernel_info="opp_kernel_version.info_8.2.RC1.txt",
        kernels=["ascend910b"],
    )
    nnal(r, "8.2.RC1", "nnal_atb_version.info_8.2.RC1_indented.txt")
    driver(r, "driver_version.info_24.1.rc2.2.txt")
    npu_smi(s, NPU_SMI)
    for n in range(8):
        write(r, f"dev/davinci{n}", "")
    for node in ("davinci_manager", "devmm_svm", "hisi_hdc"):
        write(r, f"dev/{node}", "")
    return r


def record(root: Path, sp: str, name: str, version: str, files: Iterable[str]) -> None:
    """A RECORD listing ``files`` (and the dist-info's own files), as pip writes it."""
    info = f"{name.replace('-', '_')}-{version}.dist-info"
    rows = [f"{f},," for f in files] + [f"{info}/{x},," for x in ("METADATA", "WHEEL", "INSTALLER", "RECORD")]
    write(root, f"{sp}/{info}/RECORD", "\n".join(rows) + "\n")


def build_info_scenarios(built: List[str]) -> None:
    sp, t = site("3.10"), tag("3.10")
    cases: Tuple[Tuple[str, str, str, Dict[str, object]], ...] = (
        (
            "fw-vllm-ascend-310p-build-on-910b3",
            "vllm-ascend 0.9.1 whose _build_info.py records SOC_VERSION ASCEND310P3, on 8x 910B3",
            "ASCEND310P3",
            {
                "codes": ["PKG051"],
                "exit_code": 1,
                "findings": [
                    {
                        "severity": ["error"],
                        "match": ["vllm-ascend 0\\.9\\.1", "310P", "910B3", "__soc_version__ = 'ASCEND310P3'"],
                    }
                ],
            },
        ),
        (
            "fw-vllm-ascend-910b-build-on-910b3",
            "control: vllm-ascend 0.9.1 built with SOC_VERSION ASCEND910B3, on 8x 910B3",
            "ASCEND910B3",
            {"absent": ["PKG051", "DEV040", "PKG052", "PKG050"]},
        ),
    )
    for name, title, soc, expect in cases:
        s = scenario(
            name,
            title,
            "vllm-ascend setup.py custom_build_info (writes __soc_version__ from SOC_VERSION); vllm-ascend v0.9.1 "
            "release-compatibility matrix: torch_npu 2.5.1.post1, CANN 8.2.RC1",
            ENV,
            absent=list(expect.get("absent", ["PKG050", "PKG052"])),  # type: ignore[call-overload]
            codes=list(expect.get("codes", [])),  # type: ignore[call-overload]
            exit_code=expect.get("exit_code"),  # type: ignore[arg-type]
            findings=list(expect.get("findings", [])),  # type: ignore[call-overload]
        )
        r = paired_910b3(s)
        dist(r, "torch", "2.5.1", tag=t, site=sp)
        dist(r, "torch_npu", "2.5.1.post1", requires=["torch==2.5.1", "pyyaml", "setuptools"], tag=t, site=sp)
        dist(r, "vllm", "0.9.1", requires=["torch==2.7.0"], tag="py3-none-any", site=sp)
        dist(r, "vllm_ascend", "0.9.1", requires=["torch-npu==2.5.1.post1", "torch>=2.5.1"], tag=t, site=sp)
        write(r, f"{sp}/vllm_ascend/__init__.py", "")
        write(
            r,
            f"{sp}/vllm_ascend/_build_info.py",
            f"# Auto-generated file\n__soc_version__ = '{soc}'\n__sleep_mode_enabled__ = True\n",
        )
        record(r, sp, "vllm_ascend", "0.9.1", ["vllm_ascend/__init__.py", "vllm_ascend/_build_info.py"])
        deps(r, sp)
        built.append(s.name)


def framework_cann_scenario(built: List[str]) -> None:
    """vllm-ascend 0.11.0rc2 (its versioning policy: Stable CANN 8.3.RC2, torch_npu 2.7.1) on an
    otherwise paired torch 2.7.1 / torch_npu 2.7.1 / CANN 8.2.RC1 stack: a framework release made
    for another CANN.  The fix names the CANN it needs, or the release made for the CANN in use."""
    sp, t = site("3.10"), tag("3.10")
    s = scenario(
        "fw-vllm-ascend-0.11.0rc2-on-cann-8.2.RC1",
        "vllm-ascend 0.11.0rc2 (made for CANN 8.3.RC2) with torch_npu 2.7.1 on CANN 8.2.RC1, 8x 910B3",
        "vllm-project/vllm-ascend docs/source/community/versioning_policy.md 'Release compatibility matrix': "
        "v0.11.0rc2 -> Stable CANN 8.3.RC2, PyTorch/torch_npu 2.7.1 / 2.7.1; v0.10.0rc1 -> CANN 8.2.RC1",
        ENV,
        codes=["CANN012"],
        absent=["PKG001", "CANN003", "PKG050", "PKG051", "PKG052"],
        findings=[
            {
                "match": [
                    "vllm-ascend 0\\.11\\.0rc2 needs CANN 8\\.3\\.RC2 or newer, but CANN 8\\.2\\.RC1 is in use",
                    "install vllm-ascend 0\\.10\\.0rc1 \\(made for it\\)",
                ],
            }
        ],
    )
    r = paired_910b3(s)
    dist(r, "torch", "2.7.1", tag=t, site=sp)
    dist(r, "torch_npu", "2.7.1", requires=["torch==2.7.1", "pyyaml", "setuptools"], tag=t, site=sp)
    dist(r, "vllm", "0.11.0", requires=["torch==2.8.0"], tag="py3-none-any", site=sp)
    dist(r, "vllm_ascend", "0.11.0rc2", requires=["torch-npu==2.7.1", "torch==2.7.1"], tag=t, site=sp)
    deps(r, sp)
    built.append(s.name)


def framework_table_scenario(built: List[str]) -> None:
    """lmdeploy 0.9.2 (its requirements/runtime_ascend.txt: torch-npu==2.3.1; the PyPI wheel is
    built for CUDA, so its METADATA does not carry the pin) beside the paired torch 2.5.1 /
    torch_npu 2.5.1.post1 / CANN 8.2.RC1 stack: a framework release made for another
    torch_npu, named by its own table; the fix names the release whose requirement admits the
    installed build."""
    sp, t = site("3.10"), tag("3.10")
    s = scenario(
        "fw-lmdeploy-0.9.2-beside-torch-npu-2.5.1.post1",
        "lmdeploy 0.9.2 (Ascend requirements torch-npu==2.3.1) with torch 2.5.1 / torch_npu 2.5.1.post1 on "
        "CANN 8.2.RC1, 8x 910B3",
        "InternLM/lmdeploy requirements/runtime_ascend.txt at v0.9.2 (torch-npu==2.3.1) and v0.12.1 .. v0.16.0 "
        "(torch-npu>=2.3.1,<2.10.0); torch_npu_requirements.toml",
        ENV,
        codes=["PKG004"],
        absent=["PKG001", "CANN003", "CANN012", "PKG050", "PKG052"],
        exit_code=1,
        findings=[
            {
                "severity": ["error"],
                "match": [
                    "lmdeploy 0\\.9\\.2 requires torch-npu==2\\.3\\.1 on Ascend, but torch_npu 2\\.5\\.1\\.post1 is installed",
                    "LMDEPLOY_TARGET_DEVICE=ascend .*-m pip install git\\+https://github\\.com/InternLM/lmdeploy\\.git@v0\\.16\\.0",
                ],
            }
        ],
    )
    r = paired_910b3(s)
    dist(r, "torch", "2.5.1", tag=t, site=sp)
    dist(r, "torch_npu", "2.5.1.post1", requires=["torch==2.5.1", "pyyaml", "setuptools"], tag=t, site=sp)
    dist(r, "lmdeploy", "0.9.2", requires=["transformers"], tag=t, site=sp)
    deps(r, sp)
    built.append(s.name)


def build() -> List[str]:
    built: List[str] = []

    # ------------------------------------------------------------------ torch without torch_npu
    sp, t = site("3.12"), tag("3.12")
    s = scenario(
        "fw-torch-2.6.0-python-3.12-no-torch-npu",
        "torch 2.6.0 on Python 3.12 on 8x 910B3 with CANN 8.2.RC1, torch_npu never installed",
        "issue 16: torch-npu 2.6.0 has cp39-cp311 wheels only; 2.6.0.post5 has cp312 (PyPI file lists in "
        "matrix/torch_npu.toml) and is declared compatible with CANN 8.2.RC1 by the TorchNPU release notes",
        ENV,
        codes=["PKG050"],
        absent=["PY001", "PKG052", "PKG051"],
        findings=[
            {
                "severity": ["warning"],
                "match": [
                    "torch 2\\.6\\.0 is installed but torch_npu is not",
                    "torch_npu 2\\.6\\.0\\.post5 fits torch 2\\.6\\.0, Python 3\\.12",
                    "torch_npu 2\\.6\\.0 \\(paired with CANN 8\\.2\\.RC1\\): wheels for Python 3\\.9-3\\.11 only",
                    "python3\\.12 -m pip install torch-npu==2\\.6\\.0\\.post5",
                ],
            }
        ],
    )
    r = paired_910b3(s)
    dist(r, "torch", "2.6.0", tag=t, site=sp)
    deps(r, sp)
    built.append(s.name)

    build_info_scenarios(built)
    framework_cann_scenario(built)
    framework_table_scenario(built)

    # ------------------------------------------------------------------ CUDA-only distributions
    sp, t = site("3.10"), tag("3.10")
    s = scenario(
        "fw-cuda-flash-attn-transformer-engine-beside-torch-npu",
        "a paired torch 2.7.1 / torch_npu 2.7.1 / CANN 8.2.RC1 stack on 910B3 plus flash-attn (CUDA extension), "
        "NVIDIA transformer-engine and nvidia-cuda-runtime-cu12 from a CUDA recipe",
        "cuda_only.toml: Dao-AILab/flash-attention#631 (flash_attn_2_cuda needs libcudart.so.12), "
        "modelscope/ms-swift#6968 (TE stops mindspeed.megatron_adaptor on Ascend), nvidia-cuda-runtime-cu12 12.9.79 wheel",
        ENV,
        codes=["PKG052"],
        absent=["PKG050", "PKG051"],
        exit_code=1,
        findings=[
            {
                "severity": ["error"],
                "match": [
                    "3 CUDA-only distribution\\(s\\)",
                    "flash_attn_2_cuda\\.cpython-310-aarch64-linux-gnu\\.so links libcudart\\.so\\.12, libc10_cuda\\.so",
                    "pip uninstall -y flash-attn nvidia-cuda-runtime-cu12 transformer-engine",
                    "npu_fusion_attention",
                ],
            }
        ],
    )
    r = paired_910b3(s)
    dist(r, "torch", "2.7.1", tag=t, site=sp)
    dist(r, "torch_npu", "2.7.1", requires=["torch==2.7.1", "pyyaml", "setuptools"], tag=t, site=sp)
    so = "flash_attn_2_cuda.cpython-310-aarch64-linux-gnu.so"
    dist(r, "flash_attn", "2.7.4.post1", requires=["torch", "einops"], tag=t, site=sp)
    build_so(str(r / sp / so), needed=["libcudart.so.12", "libc10_cuda.so"])
    record(r, sp, "flash_attn", "2.7.4.post1", [so, "flash_attn/__init__.py"])
    write(r, f"{sp}/flash_attn/__init__.py", "")
    dist(r, "nvidia-cuda-runtime-cu12", "12.9.79", tag="py3-none-manylinux2014_aarch64", site=sp)
    record(
        r,
        sp,
        "nvidia_cuda_runtime_cu12",
        "12.9.79",
        ["nvidia/__init__.py", "nvidia/cuda_runtime/__init__.py", "nvidia/cuda_runtime/lib/libcudart.so.12"],
    )
    dist(
        r,
        "transformer_engine",
        "2.20.2",
        requires=[
            'transformer_engine_cu12==2.20.2; extra == "core"',
            'transformer_engine_torch==2.20.2; extra == "pytorch"',
        ],
        tag="py3-none-any",
        site=sp,
    )
    deps(r, sp)
    built.append(s.name)
    return built


if __name__ == "__main__":
    for name in build():
        print(name)
