"""(Re)build the scenarios of the handed cases of kinds K01-K12 (../shared/cases/cases.md)
that no other builder covers, from the real samples in tests/fixtures/.

    python tests/build_case_scenarios.py          # rewrites the case<NN>-* folders

Trees reuse the layouts of tests/build_cann_scenarios.py (classic ``ascend-toolkit``
with ``latest`` of relative symlinks, the 8.5+ ``cann-<ver>`` layout, NNAL with
``atb/cxx_abi_{0,1}``).  Files marked ``EDITED_`` in tests/fixtures are real samples with
one value changed (named in the scenario's source line).  Each scenario.toml is written
here, next to the tree that justifies its expectations: codes AND the regexes a
case-writer would write from the case text.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "fixtures"))

from build_cann_scenarios import (  # noqa: E402
    AS,
    HOME_ENV,
    SOURCED_800,
    cann85,
    classic_toolkit,
    dist,
    driver,
    fixture,
    mkdir,
    nnal,
    npu_smi,
    scenario,
    write,
)

#: The CANN Python dependencies (REPORT §6.2 install command), so that PKG006 stays quiet
#: where a case is about something else.
CANN_DEPS = (
    "decorator",
    "attrs",
    "psutil",
    "absl-py",
    "cloudpickle",
    "ml-dtypes",
    "scipy",
    "tornado",
    "sympy",
    "cffi",
    "protobuf",
    "PyYAML",
    "requests",
)


def site(py: str, prefix: str = "usr/local") -> str:
    return f"{prefix}/lib/python{py}/site-packages"


def tag(py: str, arch: str = "aarch64") -> str:
    cp = "cp" + py.replace(".", "")
    return f"{cp}-{cp}-manylinux_2_17_{arch}"


def deps(root: Path, sp: str, numpy: str = "1.26.4") -> None:
    for name in CANN_DEPS:
        dist(root, name, "1.0.0", tag="py3-none-any", site=sp)
    dist(root, "numpy", numpy, site=sp)


def build() -> List[str]:
    built: List[str] = []

    # ------------------------------------------------------------------ K01 case 02
    py = "3.9"
    sp = site(py)
    s = scenario(
        "case02-vllm-ascend-0.7.1rc1-torch-npu-2.5.1rc1",
        "vllm-ascend 0.7.1rc1 (needs the torch_npu 2.5.1.dev20250218 build with its custom ops) "
        "with the public torch_npu 2.5.1rc1",
        "case 02: vllm-project/vllm-ascend#340 (module 'torch_npu' has no attribute '_npu_flash_attention'; "
        "maintainer: 'You are using a unpaired version of torch-npu'); vllm-ascend v0.7.1rc1 release note "
        "(relies on an unreleased torch_npu, installed by hand: its metadata does not pin torch-npu)",
        dict(HOME_ENV, **SOURCED_800),
        codes=["PKG004"],
        absent=["PKG001", "PKG005"],
        exit_code=1,
        findings=[
            {
                "severity": ["error"],
                "match": ["vllm.ascend 0\\.7\\.1rc1", "torch.npu", "2\\.5\\.1\\.dev20250218", "2\\.5\\.1rc1"],
            }
        ],
    )
    r = s / "root"
    classic_toolkit(
        r,
        "8.0.0",
        "ascend_toolkit_install_8.0.0_aarch64.info",
        version_cfg="version.cfg_toolkit_8.0.0_no-opp_kernel.txt",
        kernels=["ascend910b"],
    )
    t = tag(py)
    dist(r, "torch", "2.5.1", requires=["filelock", "typing-extensions>=4.8.0"], tag=t, site=sp)
    dist(r, "torch_npu", "2.5.1rc1", requires=["torch==2.5.1", "pyyaml", "setuptools"], tag=t, site=sp)
    dist(r, "torchvision", "0.20.1", requires=["numpy", "torch==2.5.1", "pillow!=8.3.*,>=5.3.0"], tag=t, site=sp)
    dist(r, "torchaudio", "2.5.1", requires=["torch==2.5.1"], tag=t, site=sp)
    dist(r, "vllm", "0.7.1", requires=["torch==2.5.1", "torchvision==0.20.1"], tag="py3-none-any", site=sp)
    # v0.7.1rc1 requirements.txt: torch>=2.5.1, torchvision<0.21.0, no torch-npu line
    dist(
        r,
        "vllm_ascend",
        "0.7.1rc1",
        requires=["decorator", "numpy<2.0.0", "pyyaml", "scipy", "torch>=2.5.1", "torchvision<0.21.0"],
        tag=t,
        site=sp,
    )
    deps(r, sp)
    built.append(s.name)

    return built


if __name__ == "__main__":
    for name in build():
        print("built", HERE / "scenarios" / name)
