"""(Re)build the scenarios of the handed cases of kinds K01-K12 (../shared/cases/cases.md)
that no other builder covers, from the real samples in tests/fixtures/.

    python tests/builders/build_case_scenarios.py          # rewrites the case<NN>-* folders

Trees reuse the layouts of tests/builders/build_cann_scenarios.py (classic ``ascend-toolkit``
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

HERE = Path(__file__).resolve().parents[1]  # tests/
sys.path.insert(0, str(HERE))

from builders.build_cann_scenarios import (  # noqa: E402
    AS,
    HOME_ENV,
    SOURCED_800,
    cann85,
    classic_toolkit,
    dist,
    driver,
    fixture,
    nnal,
    npu_smi,
    scenario,
    write,
)
from builders.elf_build import build_so  # noqa: E402

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


T800 = "/usr/local/Ascend/ascend-toolkit/latest"
DRIVER_LIBS = (
    "/usr/local/Ascend/driver/lib64:/usr/local/Ascend/driver/lib64/common:/usr/local/Ascend/driver/lib64/driver"
)
#: What /usr/local/Ascend/ascend-toolkit/set_env.sh (set_env_toolkit_8.0.0.sh.txt) sets on aarch64.
SOURCED_FULL = {
    "ASCEND_TOOLKIT_HOME": T800,
    "ASCEND_HOME_PATH": T800,
    "ASCEND_AICPU_PATH": T800,
    "ASCEND_OPP_PATH": f"{T800}/opp",
    "TOOLCHAIN_HOME": f"{T800}/toolkit",
    "LD_LIBRARY_PATH": ":".join(
        [
            f"{T800}/tools/aml/lib64",
            f"{T800}/tools/aml/lib64/plugin",
            f"{T800}/lib64",
            f"{T800}/lib64/plugin/opskernel",
            f"{T800}/lib64/plugin/nnengine",
            f"{T800}/opp/built-in/op_impl/ai_core/tbe/op_tiling/lib/linux/aarch64",
            DRIVER_LIBS,
        ]
    ),
    "PYTHONPATH": f"{T800}/python/site-packages:{T800}/opp/built-in/op_impl/ai_core/tbe",
}


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

    # ------------------------------------------------------------------ K01 case 05
    py = "3.10"
    sp = site(py)
    t = tag(py)
    s = scenario(
        "case05-mindie-atb-models-1.0.RC2-torch-npu-2.1.0.post4",
        "MindIE ATB models 1.0.RC2 (torch2.1.0-abi0) installed next to torch_npu 2.1.0.post4 on CANN 8.0.RC1",
        "case 05: Ascend/pytorch#37 (module 'torch_npu.dynamo.torchair' has no attribute 'get_npu_backend'; "
        "fixed by torch_npu 2.1.0.post5); atb-models version.info from the real sample with the ATB-Models "
        "version changed to 1.0.RC2 (EDITED_), toolkit install info of 8.0.0 with version/path 8.0.RC1 (EDITED_)",
        dict(HOME_ENV, **SOURCED_800),
        codes=["PKG004"],
        absent=["PKG001"],
        exit_code=1,
        findings=[
            {
                "severity": ["error"],
                "match": ["ATB models 1\\.0\\.RC2", "torch_npu 2\\.1\\.0\\.post5", "2\\.1\\.0\\.post4"],
            }
        ],
    )
    r = s / "root"
    classic_toolkit(r, "8.0.RC1", "EDITED_ascend_toolkit_install_8.0.RC1_aarch64.info", kernels=["ascend910b"])
    write(r, f"{AS}/atb-models/version.info", fixture("EDITED_atb-models_version.info_1.0.RC2.txt"))
    dist(r, "torch", "2.1.0", tag=t, site=sp)
    dist(r, "torch_npu", "2.1.0.post4", requires=["torch==2.1.0", "pyyaml", "setuptools"], tag=t, site=sp)
    driver(r, "driver_version.info_24.1.rc1_no-package_version_doc.txt")
    npu_smi(s, "npu-smi-info_910B3_24.1.rc1.b030_8npu_devices_only.txt")
    deps(r, sp)
    built.append(s.name)

    # ------------------------------------------------------------------ K05 case 11
    py = "3.11"
    sp = site(py)
    t = tag(py)
    c9 = "/usr/local/Ascend/cann-9.0.0-beta.2"
    s = scenario(
        "case11-torch-npu-2.7.1-on-cann-9.0.0-beta.2",
        "triton-ascend quick start: torch_npu 2.7.1 (built for CANN 8.2.RC1) over CANN 9.0.0-beta.2 (cann-<ver> layout)",
        "case 11: triton-lang/triton-ascend#328 (undefined symbol: MsprofSysCycleTime; only 2.7.1.post4 matches "
        "CANN 9.0); install info of the 8.5.0 layout sample with version/path 9.0.0-beta.2 (EDITED_)",
        dict(
            HOME_ENV,
            ASCEND_TOOLKIT_HOME=c9,
            ASCEND_HOME_PATH=c9,
            ASCEND_OPP_PATH=f"{c9}/opp",
            ASCEND_TOOLKIT_LATEST_HOME=T800,
        ),
        codes=["CANN003"],
        exit_code=1,
        findings=[
            {
                "severity": ["warning"],
                "grade": "undocumented",
                "match": ["torch_npu 2\\.7\\.1", "CANN 9\\.0\\.0", "not documented either way", "2\\.7\\.1\\.post4"],
                "source": "issue 13 grid tc-13: the 7.2.0 line declares CANN up to 8.3.RC1 (hiascend Pytorch/720 "
                "releasenote_0005); 9.0 is 2 CANN lines beyond (8.5, 9.0), not the 3 of 'far outside', so the "
                "version pair alone is undocumented (a warning naming the build paired with 9.0.0); the "
                "MsprofSysCycleTime import failure is an error only from a probe or a log. Exit 1: DRV001",
            }
        ],
    )
    r = s / "root"
    cann85(
        r,
        "9.0.0-beta.2",
        "EDITED_ascend_toolkit_install_9.0.0-beta.2_aarch64_new-cann-layout.info",
        None,
        ["ascend910b"],
    )
    dist(r, "torch", "2.7.1", tag=t, site=sp)
    dist(r, "torch_npu", "2.7.1", requires=["torch==2.7.1", "pyyaml", "setuptools"], tag=t, site=sp)
    dist(r, "triton_ascend", "3.2.0", requires=["torch-npu"], tag=t, site=sp)
    deps(r, sp)
    built.append(s.name)

    # ------------------------------------------------------------------ K05 case 13
    py = "3.10"
    sp = site(py)
    t = tag(py)
    s = scenario(
        "case13-vllm-ascend-0.7.3-on-cann-8.0.0",
        "vllm-ascend 0.7.3 (documented with CANN 8.1.RC1) with torch_npu 2.5.1 on CANN 8.0.0",
        "case 13: vllm-project/vllm-ascend#672 (hcclCommInitRootInfoConfig(...), error code is 15 with DP+EP; "
        "fixed by CANN 8.1.RC1); vllm-ascend versioning policy (v0.7.3 - v0.9.0rc2: CANN 8.1.RC1)",
        dict(HOME_ENV, **SOURCED_FULL),
        codes=["CANN012"],
        absent=["CANN003", "PKG001", "PKG004"],
        exit_code=1,
        findings=[
            {
                "severity": ["error"],
                "match": ["vllm.ascend 0\\.7\\.3", "CANN 8\\.1\\.RC1", "8\\.0\\.0", "Ascend-cann-toolkit_8\\.1\\.RC1"],
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
    dist(r, "torch", "2.5.1", tag=t, site=sp)
    dist(r, "torch_npu", "2.5.1", requires=["torch==2.5.1", "pyyaml", "setuptools"], tag=t, site=sp)
    dist(r, "vllm", "0.7.3", requires=["torch==2.5.1"], tag="py3-none-any", site=sp)
    dist(r, "vllm_ascend", "0.7.3", requires=["numpy<2.0.0", "torch>=2.5.1", "torchvision<0.21.0"], tag=t, site=sp)
    driver(r, "driver_version.info_24.1.rc2.2.txt")
    deps(r, sp)
    built.append(s.name)

    # ------------------------------------------------------------------ K05 case 14 (framework side)
    home = "/home/ma-user/Ascend/ascend-toolkit/latest"
    s = scenario(
        "case14-vllm-ascend-0.7.3rc1-cann-7.0-custom-prefix",
        "vllm-ascend 0.7.3rc1 with CANN 7.0.RC1 at a non-default prefix named only by ASCEND_TOOLKIT_HOME",
        "case 14: vllm-project/vllm-ascend#380 ('vllm-ascend only work on >=CANN8.0'; the env collector looked "
        "only at /usr/local/Ascend/ascend-toolkit/latest)",
        {"HOME": "/home/ma-user", "ASCEND_TOOLKIT_HOME": home, "ASCEND_HOME_PATH": home},
        codes=["CANN012"],
        absent=["CANN001"],
        exit_code=1,
        findings=[
            {
                "severity": ["error"],
                "match": ["vllm.ascend 0\\.7\\.3rc1", "CANN 8\\.0\\.0", "7\\.0\\.RC1", "/home/ma-user/Ascend"],
            }
        ],
    )
    r = s / "root"
    classic_toolkit(
        r, "7.0.RC1", "ascend_toolkit_install_7.0.RC1_310B_arm64-linux.info", base="home/ma-user/Ascend/ascend-toolkit"
    )
    sp = site(py)
    dist(r, "torch", "2.5.1", tag=t, site=sp)
    dist(r, "torch_npu", "2.5.1.dev20250308", requires=["torch==2.5.1", "pyyaml", "setuptools"], tag=t, site=sp)
    dist(r, "vllm", "0.7.3", requires=["torch==2.5.1"], tag="py3-none-any", site=sp)
    dist(r, "vllm_ascend", "0.7.3rc1", requires=["numpy<2.0.0", "torch>=2.5.1"], tag=t, site=sp)
    deps(r, sp)
    built.append(s.name)

    # ------------------------------------------------------------------ K07 case 17 (conda env)
    env_prefix = "/opt/conda/envs/vllm"
    sp = site("3.10", prefix=env_prefix.lstrip("/"))
    t = tag("3.10")
    s = scenario(
        "case17-conda-vllm-ascend-numpy-2-cann-8.2.RC1",
        "conda env with vllm-ascend 0.9.1 and numpy 2.2.6 (installed outside the documented procedure), CANN 8.2.RC1",
        "case 17: vllm-project/vllm-ascend#1875 (`np.float_` was removed in the NumPy 2.0 release; maintainer: "
        "'the CANN required numpy < 2.0.0')",
        dict(HOME_ENV, **SOURCED_800, CONDA_PREFIX=env_prefix, CONDA_DEFAULT_ENV="vllm"),
        codes=["PKG007"],
        absent=["PKG004", "CANN012"],
        exit_code=1,
        # CANN 8.2.RC1 states no numpy range: the older release's is inferred, so a warning
        findings=[{"severity": ["warning"], "match": ["numpy", "(<\\s*2|1\\.x)"]}],
    )
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
    write(r, f"{env_prefix.lstrip('/')}/bin/.keep", "")
    write(r, f"{env_prefix.lstrip('/')}/conda-meta/history", "# created by conda\n")
    dist(r, "torch", "2.5.1", tag=t, site=sp)
    dist(r, "torch_npu", "2.5.1.post1", requires=["torch==2.5.1", "pyyaml", "setuptools"], tag=t, site=sp)
    dist(r, "vllm", "0.9.1", requires=["torch==2.7.0"], tag="py3-none-any", site=sp)
    dist(
        r,
        "vllm_ascend",
        "0.9.1",
        requires=["numpy<2.0.0", "torch>=2.5.1", "torch-npu==2.5.1.post1", "torchvision<0.21.0"],
        tag=t,
        site=sp,
    )
    deps(r, sp, numpy="2.2.6")
    built.append(s.name)

    # ------------------------------------------------------------------ K10 case 23
    sp = site("3.10")
    t = tag("3.10")
    s = scenario(
        "case23-toolkit-sourced-never-kernels-missing",
        "CANN 8.0.0 toolkit installed from the .run file, set_env.sh never sourced, kernels package not installed",
        "case 23: vllm-project/vllm-ascend#144 (toolkit install OK, kernels install fails: set_env.sh must be "
        "sourced right after the toolkit, before the kernels; Ascend/docs PR#69)",
        dict(HOME_ENV),
        codes=["ENV001", "CANN004"],
        # a capture of the host's files without /dev: its device nodes are not judged, never "missing"
        absent=["DEV020"],
        exit_code=1,
        findings=[
            {
                "severity": ["error", "warning"],
                "match": ["set_env\\.sh", "source /usr/local/Ascend/ascend-toolkit/set_env\\.sh"],
            },
            # the kernels install runs where set_env.sh is sourced: ENV001's step, not a second `source`
            {"severity": ["error"], "match": ["kernels", "Ascend-cann-kernels-910b_8\\.0\\.0", "ENV001's fix"]},
        ],
    )
    r = s / "root"
    classic_toolkit(
        r,
        "8.0.0",
        "ascend_toolkit_install_8.0.0_aarch64.info",
        version_cfg="version.cfg_toolkit_8.0.0_no-opp_kernel.txt",
    )
    driver(r, "driver_version.info_24.1.rc2.2.txt")
    npu_smi(s, "npu-smi-info_910B3_24.1.rc1.b030_8npu_devices_only.txt")
    dist(r, "torch", "2.1.0", tag=t, site=sp)
    dist(r, "torch_npu", "2.1.0.post10", requires=["torch==2.1.0", "pyyaml", "setuptools"], tag=t, site=sp)
    deps(r, sp)
    built.append(s.name)

    # ------------------------------------------------------------------ K10 case 25
    env25 = dict(SOURCED_FULL)
    del env25["PYTHONPATH"]
    s = scenario(
        "case25-training-launcher-without-cann-pythonpath",
        "CANN 8.0.0 libraries on the loader path (launcher env), but PYTHONPATH lacks the toolkit's "
        "python/site-packages: tbe/te not importable when graph compile starts",
        "case 25: Ascend/pytorch#29 (inference OK, LoRA training: No module named 'tbe.common' -> TbeInit Failed)",
        dict(HOME_ENV, **env25),
        codes=["ENV004"],
        absent=["ENV001"],
        findings=[{"severity": ["error", "warning"], "match": ["PYTHONPATH", "python/site-packages", "tbe"]}],
    )
    r = s / "root"
    classic_toolkit(
        r,
        "8.0.0",
        "ascend_toolkit_install_8.0.0_aarch64.info",
        version_cfg="version.cfg_toolkit_8.0.0_no-opp_kernel.txt",
        kernels=["ascend910b"],
    )
    for pkg in ("te", "tbe/common"):
        # latest/python is a real directory in the ls -l sample (ls-l_ascend-toolkit_latest_8.2.RC2_symlink-layout)
        write(r, f"{AS}/ascend-toolkit/latest/python/site-packages/{pkg}/__init__.py", "")
    driver(r, "driver_version.info_24.1.rc2.2.txt")
    dist(r, "torch", "2.1.0", tag=t, site=sp)
    dist(r, "torch_npu", "2.1.0.post10", requires=["torch==2.1.0", "pyyaml", "setuptools"], tag=t, site=sp)
    deps(r, sp)
    built.append(s.name)

    # ------------------------------------------------------------------ K11 case 27
    nnal_abi1 = "/usr/local/Ascend/nnal/atb/latest/atb/cxx_abi_1"
    s = scenario(
        "case27-atb-cxx-abi-1-with-old-abi-torch",
        "NNAL set_env.sh sourced before torch was installed: ATB_HOME_PATH names atb/cxx_abi_1, torch 2.5.1 "
        "is built with the old C++ ABI",
        "case 27: vllm-project/vllm-ascend#1144 (undefined symbol _ZNK6AsdOps3Ops18GetOperationByNameERKSs on "
        "import mindie_turbo; maintainer: source nnal/atb/set_env.sh after installing torch)",
        dict(
            HOME_ENV,
            **SOURCED_800,
            ATB_HOME_PATH=nnal_abi1,
            LD_LIBRARY_PATH=f"{nnal_abi1}/lib:{nnal_abi1}/examples:{nnal_abi1}/tests/atbopstest:{DRIVER_LIBS}",
        ),
        codes=["CANN009"],
        absent=["CANN007"],
        exit_code=1,
        findings=[{"severity": ["error"], "match": ["cxx_abi_1", "cxx_abi_0", "nnal/atb/set_env\\.sh"]}],
    )
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
    dist(r, "torch", "2.5.1", tag=t, site=sp)
    # an old-ABI libc10.so: std::string arguments mangle as Ss, no __cxx11 names
    build_so(
        str(r / sp / "torch/lib/libc10.so"),
        soname="libc10.so",
        defines=["_ZN3c106detail14torchCheckFailEPKcS2_jRKSs"],
    )
    dist(r, "torch_npu", "2.5.1.post1", requires=["torch==2.5.1", "pyyaml", "setuptools"], tag=t, site=sp)
    dist(r, "vllm", "0.9.1", requires=["torch==2.7.0"], tag="py3-none-any", site=sp)
    dist(r, "vllm_ascend", "0.9.1", requires=["torch-npu==2.5.1.post1", "torch>=2.5.1"], tag=t, site=sp)
    dist(r, "mindie_turbo", "2.0rc1", requires=["torch-npu"], tag=t, site=sp)
    deps(r, sp)
    built.append(s.name)

    # ------------------------------------------------------------------ K09 case 22
    sp = site("3.9")
    t = tag("3.9")
    s = scenario(
        "case22-torch-npu-not-on-configured-mirror-aarch64",
        "ARM + 910B: torch 2.1.0 installed, torch_npu missing, pip configured (~/.pip/pip.conf) for a mirror",
        "case 22: Ascend/pytorch#18 (Could not find a version that satisfies the requirement torch-npu==2.1.0rc1 "
        "(from versions: none); maintainer: 'You may need to check the pip source')",
        dict(HOME_ENV, **SOURCED_FULL),
        codes=["PKG008"],
        absent=["PKG001", "PKG002"],
        findings=[
            {
                "severity": ["warning", "error"],
                "match": ["torch.npu", "mirrors\\.aliyun\\.com", "pip\\.conf", "pypi\\.org/simple", "aarch64"],
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
    # the usual mirror setup of `pip config set global.index-url ...` (pip's INI format)
    write(
        r,
        "root/.pip/pip.conf",
        "[global]\nindex-url = https://mirrors.aliyun.com/pypi/simple/\n\n[install]\ntrusted-host = mirrors.aliyun.com\n",
    )
    driver(r, "driver_version.info_24.1.rc2.2.txt")
    dist(r, "torch", "2.1.0", tag=t, site=sp)
    deps(r, sp)
    built.append(s.name)

    return built


if __name__ == "__main__":
    for name in build():
        print("built", HERE / "scenarios" / name)
