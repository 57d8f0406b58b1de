"""(Re)build the CANN / driver scenarios in tests/scenarios/ from the real samples in
tests/fixtures/ (copied from ../shared/samples, file names kept).

    python tests/builders/build_cann_scenarios.py          # rewrites the scenario folders it owns

Trees follow the real layouts (../shared/samples/INDEX.md §4 and §9):

* classic toolkit: ``ascend-toolkit/<ver>/`` holds the components and
  ``<arch>-linux/ascend_toolkit_install.info``; ``ascend-toolkit/latest/`` is a real
  directory of *relative* symlinks ``runtime -> ../<ver>/runtime`` (as in
  ls-l_ascend-toolkit_latest_8.2.RC2_symlink-layout.txt), with ``arm64-linux -> aarch64-linux``;
* 8.5+ layout: ``/usr/local/Ascend/cann-<ver>/``, ``cann -> cann-<ver>`` and the absolute
  ``ascend-toolkit/latest -> /usr/local/Ascend/cann``;
* NNAL: ``nnal/atb/latest -> <ver>`` with ``version.info`` and ``atb/cxx_abi_{0,1}``.

The scenario.toml files are written here too, so the expectations live next to the
tree that justifies them.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path
from typing import Dict, Iterable, List, Optional

from builders.scenario_top_level import expect_lines

HERE = Path(__file__).resolve().parents[1]  # tests/
FIX = HERE / "fixtures"
OUT = HERE / "scenarios"
AS = "usr/local/Ascend"
SITE = "usr/local/lib/python3.10/site-packages"


def fixture(name: str) -> bytes:
    return (FIX / name).read_bytes()


def write(root: Path, rel: str, data: bytes | str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def link(root: Path, rel: str, target: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or path.exists():
        path.unlink()
    os.symlink(target, path)


def mkdir(root: Path, rel: str) -> None:
    """A directory that survives git (which drops empty directories): holds an empty ``.keep``."""
    (root / rel).mkdir(parents=True, exist_ok=True)
    (root / rel / ".keep").touch()


def classic_toolkit(
    root: Path,
    version: str,
    install_info: Optional[str],
    base: str = f"{AS}/ascend-toolkit",
    version_cfg: Optional[str] = None,
    toolkit_info: Optional[str] = None,
    opp_kernel_info: Optional[str] = None,
    kernels: Iterable[str] = (),
    latest: bool = True,
    set_env: bool = True,
) -> None:
    """A classic ``ascend-toolkit/<version>`` install plus (optionally) its ``latest``."""
    vdir = f"{base}/{version}"
    for comp in ("runtime", "compiler", "hccl", "toolkit", "opp"):
        mkdir(root, f"{vdir}/{comp}")
    mkdir(root, f"{vdir}/aarch64-linux/lib64")
    if install_info:
        write(root, f"{vdir}/aarch64-linux/ascend_toolkit_install.info", fixture(install_info))
    link(root, f"{vdir}/arm64-linux", "aarch64-linux")
    if toolkit_info:
        write(root, f"{vdir}/toolkit/version.info", fixture(toolkit_info))
    if opp_kernel_info:
        write(root, f"{vdir}/opp_kernel/version.info", fixture(opp_kernel_info))
    kernel = f"{vdir}/opp/built-in/op_impl/ai_core/tbe/kernel"
    for soc in kernels:
        write(root, f"{kernel}/{soc}/cast/Cast_1.json", "{}\n")
        write(root, f"{kernel}/config/{soc}/binary_info_config.json", "{}\n")
    if not latest:
        return
    lat = f"{base}/latest"
    mkdir(root, lat)
    for comp in ("runtime", "compiler", "hccl", "toolkit", "opp"):
        link(root, f"{lat}/{comp}", f"../{version}/{comp}")
    if opp_kernel_info or kernels:
        mkdir(root, f"{vdir}/opp_kernel")
        link(root, f"{lat}/opp_kernel", f"../{version}/opp_kernel")
    link(root, f"{lat}/ops", f"../{version}/opp")
    # latest/aarch64-linux is a real directory (dr-xr-xr-x in the ls -l sample)
    mkdir(root, f"{lat}/aarch64-linux")
    if install_info:
        link(
            root,
            f"{lat}/aarch64-linux/ascend_toolkit_install.info",
            f"../../{version}/aarch64-linux/ascend_toolkit_install.info",
        )
    link(root, f"{lat}/arm64-linux", "aarch64-linux")
    link(root, f"{lat}/lib64", "aarch64-linux/lib64")
    if version_cfg:
        write(root, f"{lat}/version.cfg", fixture(version_cfg))
    if set_env:
        write(root, f"{base}/set_env.sh", fixture("set_env_toolkit_8.0.0.sh.txt"))


def cann85(root: Path, version: str, install_info: str, opp_info: Optional[str], kernels: Iterable[str] = ()) -> None:
    """The 8.5+ layout: cann-<ver>, cann -> cann-<ver>, ascend-toolkit/latest -> /usr/local/Ascend/cann."""
    cdir = f"{AS}/cann-{version}"
    for comp in ("runtime", "compiler", "opp"):
        mkdir(root, f"{cdir}/{comp}")
    write(root, f"{cdir}/aarch64-linux/ascend_toolkit_install.info", fixture(install_info))
    if opp_info:
        write(root, f"{cdir}/opp/version.info", fixture(opp_info))
    write(root, f"{cdir}/set_env.sh", "# CANN 8.5 set_env.sh (content not captured)\n")
    kernel = f"{cdir}/opp/built-in/op_impl/ai_core/tbe/kernel"
    for soc in kernels:
        write(root, f"{kernel}/{soc}/cast/Cast_1.json", "{}\n")
        write(root, f"{kernel}/config/{soc}/binary_info_config.json", "{}\n")
    link(root, f"{AS}/cann", f"cann-{version}")
    link(root, f"{AS}/ascend-toolkit/latest", f"/{AS}/cann")
    write(root, f"{AS}/ascend-toolkit/set_env.sh", "# compatibility entry point (content not captured)\n")


def nnal(root: Path, version: str, info: str, abi_dirs: Iterable[str] = ("cxx_abi_0", "cxx_abi_1")) -> None:
    base = f"{AS}/nnal/atb"
    write(root, f"{base}/{version}/version.info", fixture(info))
    for abi in abi_dirs:
        mkdir(root, f"{base}/{version}/atb/{abi}/lib")
    link(root, f"{base}/latest", version)
    write(root, f"{base}/set_env.sh", "# NNAL set_env.sh (content not captured)\n")


def driver(root: Path, info: Optional[str], firmware: Optional[str] = None, install_info: bool = True) -> None:
    if info:
        write(root, f"{AS}/driver/version.info", fixture(info))
        mkdir(root, f"{AS}/driver/lib64/driver")
    if firmware:
        write(root, f"{AS}/firmware/version.info", fixture(firmware))
    if install_info:
        write(root, "etc/ascend_install.info", fixture("etc_ascend_install.info_driver+firmware_full.txt"))


def dist(
    root: Path,
    name: str,
    version: str,
    requires: Iterable[str] = (),
    tag: str = "cp310-cp310-manylinux_2_17_aarch64",
    site: str = SITE,
) -> None:
    """A real-looking dist-info (METADATA, WHEEL, INSTALLER)."""
    dirname = f"{name.replace('-', '_')}-{version}.dist-info"
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    meta += [f"Requires-Dist: {r}" for r in requires]
    write(root, f"{site}/{dirname}/METADATA", "\n".join(meta) + "\n\n")
    write(
        root,
        f"{site}/{dirname}/WHEEL",
        f"Wheel-Version: 1.0\nGenerator: bdist_wheel\nRoot-Is-Purelib: false\nTag: {tag}\n",
    )
    write(root, f"{site}/{dirname}/INSTALLER", "pip\n")


def npu_smi(scenario: Path, table: str) -> None:
    """bin/npu-smi printing a captured `npu-smi info` table (other sub-commands: not captured)."""
    write(scenario, "bin/npu-smi-info.txt", fixture(table))
    script = (
        "#!/bin/sh\n"
        "# replays a captured `npu-smi info` (tests/fixtures/" + table + ")\n"
        'if [ "$*" = "info" ]; then cat "$(dirname "$0")/npu-smi-info.txt"; exit 0; fi\n'
        'echo "npu-smi $*: not captured in this scenario" >&2\nexit 1\n'
    )
    path = write(scenario, "bin/npu-smi", script)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    s = str(v).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{s}"'


def scenario(
    name: str,
    title: str,
    source: str,
    env: Dict[str, str],
    codes: List[str] = (),  # type: ignore[assignment]
    absent: List[str] = (),  # type: ignore[assignment]
    exit_code: Optional[int] = None,
    findings: List[Dict[str, object]] = (),  # type: ignore[assignment]
) -> Path:
    path = OUT / name
    if path.exists():
        shutil.rmtree(path)
    (path / "root").mkdir(parents=True)
    lines = ["[scenario]", f"title = {toml_value(title)}", f"source = {toml_value(source)}", "", "[env]"]
    lines += [f"{k} = {toml_value(v)}" for k, v in env.items()]
    lines += ["", "[expect]"] + expect_lines(name)
    if codes:
        lines.append(f"codes = {toml_value(list(codes))}")
    if absent:
        lines.append(f"absent = {toml_value(list(absent))}")
    if exit_code is not None:
        lines.append(f"exit = {exit_code}")
    for f in findings:
        lines += ["", "[[expect.finding]]"]
        lines += [f"{k} = {toml_value(v)}" for k, v in f.items()]
    (path / "scenario.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    write(path / "root", "etc/hostname", name + "\n")
    return path


def torch_pair(root: Path, torch: str, torch_npu: str) -> None:
    dist(root, "torch", torch)
    dist(root, "torch_npu", torch_npu, requires=[f"torch=={torch}", "pyyaml", "setuptools"])


HOME_ENV = {"HOME": "/root"}
SOURCED_800 = {
    "ASCEND_TOOLKIT_HOME": "/usr/local/Ascend/ascend-toolkit/latest",
    "ASCEND_HOME_PATH": "/usr/local/Ascend/ascend-toolkit/latest",
    "ASCEND_OPP_PATH": "/usr/local/Ascend/ascend-toolkit/latest/opp",
}

ALL_CANN = [f"CANN{n:03d}" for n in range(1, 12)]
ALL_DRV = [f"DRV{n:03d}" for n in range(1, 5)]


def build() -> List[str]:
    built: List[str] = []

    # ---------------------------------------------------------------- no CANN at all
    s = scenario(
        "no-cann-plain-machine",
        "a plain machine: no CANN, no driver, no torch_npu, no NPU",
        "tried as a new user would (the issue's 'calm report on a machine without NPU')",
        dict(HOME_ENV),
        codes=["HOST050"],
        absent=ALL_CANN + ALL_DRV,
        exit_code=0,
    )
    dist(s / "root", "numpy", "1.26.4")
    built.append(s.name)

    s = scenario(
        "no-cann-torch-npu-installed",
        "torch 2.7.1 + torch_npu 2.7.1 installed, no CANN toolkit anywhere",
        "cases.md K10/K05 signature: `ImportError: libhccl.so` (error_import-torch_npu_libhccl-not-found_*)",
        dict(HOME_ENV),
        codes=["CANN001"],
        absent=["HOST050", "CANN003"],
        exit_code=1,
        findings=[
            {
                "severity": ["error"],
                "match": ["torch_npu 2\\.7\\.1", "Ascend-cann-toolkit_8\\.3\\.RC1_linux-", "set_env\\.sh"],
            }
        ],
    )
    torch_pair(s / "root", "2.7.1", "2.7.1")
    built.append(s.name)

    # ---------------------------------------------------------------- K05
    s = scenario(
        "k05-cann-too-old-custom-prefix",
        "CANN 7.0.RC1 at a non-default prefix named by ASCEND_TOOLKIT_HOME, torch_npu 2.5.1",
        "case 14 (vllm-project/vllm-ascend#380): honour ASCEND_TOOLKIT_HOME; CANN < 8.0",
        {
            "HOME": "/home/ma-user",
            "ASCEND_TOOLKIT_HOME": "/home/ma-user/Ascend/ascend-toolkit/latest",
            "ASCEND_HOME_PATH": "/home/ma-user/Ascend/ascend-toolkit/latest",
        },
        codes=["CANN003"],
        absent=["CANN001"],
        exit_code=1,
        findings=[
            {"severity": ["error"], "match": ["torch_npu 2\\.5\\.1", "CANN 7\\.0\\.RC1", "/home/ma-user/Ascend"]}
        ],
    )
    classic_toolkit(
        s / "root",
        "7.0.RC1",
        "ascend_toolkit_install_7.0.RC1_310B_arm64-linux.info",
        base="home/ma-user/Ascend/ascend-toolkit",
    )
    torch_pair(s / "root", "2.5.1", "2.5.1")
    built.append(s.name)

    s = scenario(
        "k05-torch-npu-2.10-on-cann-8.0.0",
        "torch_npu 2.10.0 (built for CANN 9.0.0) over the CANN 8.0.0 toolkit",
        "case 11 kind (triton-lang/triton-ascend#328): torch_npu and CANN from different release lines",
        dict(HOME_ENV, **SOURCED_800),
        codes=["CANN003", "DRV001"],
        exit_code=1,
        findings=[
            {"severity": ["error"], "match": ["torch_npu 2\\.10\\.0", "CANN 8\\.0\\.0"]},
            {
                # option A first (keep CANN 8.0.0: the torch_npu build paired with it, torch too),
                # then option B (the CANN torch_npu 2.10.0 is paired with, and its HDK)
                "severity": ["error"],
                "match": [
                    "\\noption A \\(preferred: keep CANN 8\\.0\\.0; torch_npu 2\\.4\\.0\\.post2 is paired with "
                    "CANN 8\\.0\\.0 and built for torch 2\\.4\\.0\\): \\S+ -m pip install torch==2\\.4\\.0 "
                    "torch-npu==2\\.4\\.0\\.post2\\n"
                    "option B \\(install CANN 9\\.0\\.0, the one torch_npu 2\\.10\\.0 is paired with\\): "
                    "chmod \\+x Ascend-cann-toolkit_9\\.0\\.0_linux-aarch64\\.run",
                    "\\n  and the NPU driver \\+ firmware of Ascend HDK 26\\.0\\.RC1, which CANN 9\\.0\\.0 needs",
                ],
            },
            {
                # DRV001 names the HDK of the CANN that stays and says what changes with option B
                "severity": ["error"],
                "match": [
                    "the CANN 8\\.0\\.0 in use is paired with Ascend HDK 24\\.1\\.0",
                    "npu-driver_24\\.1\\.0_linux-aarch64\\.run --full",
                    "\\ninstall the NPU firmware of Ascend HDK 24\\.1\\.0 ",
                    "if you move to CANN 9\\.0\\.0 for torch_npu 2\\.10\\.0 \\(CANN003 option B\\), "
                    "install Ascend HDK 26\\.0\\.RC1 instead",
                ],
            },
        ],
    )
    classic_toolkit(
        s / "root",
        "8.0.0",
        "ascend_toolkit_install_8.0.0_aarch64.info",
        version_cfg="version.cfg_toolkit_8.0.0_no-opp_kernel.txt",
        kernels=["ascend910b"],
        opp_kernel_info=None,
    )
    torch_pair(s / "root", "2.10.0", "2.10.0")
    built.append(s.name)

    s = scenario(
        "k05-paired-cann-8.2.RC1-torch-npu-2.7.1",
        "control: torch_npu 2.7.1 with CANN 8.2.RC1 (declared compatible) and kernels of the same release",
        "samples: ascend_toolkit_install_8.2.RC1 (vllm-ascend#6063), toolkit/opp_kernel version.info 8.2.RC1",
        dict(HOME_ENV, **SOURCED_800),
        absent=["CANN001", "CANN002", "CANN003", "CANN006", "CANN010", "HOST050"],
    )
    classic_toolkit(
        s / "root",
        "8.2.RC1",
        "ascend_toolkit_install_8.2.RC1_aarch64.info",
        toolkit_info="toolkit_version.info_8.2.RC1_component.txt",
        opp_kernel_info="opp_kernel_version.info_8.2.RC1.txt",
        kernels=["ascend910b"],
    )
    torch_pair(s / "root", "2.7.1", "2.7.1")
    built.append(s.name)

    # ---------------------------------------------------------------- K12
    s = scenario(
        "k12-kernels-missing-910b3",
        "CANN 8.0.0 toolkit without the kernels package on a 910B3 machine",
        "case 28 (hiyouga/LlamaFactory#3796): `Op Cast does not has any binary`",
        dict(HOME_ENV, **SOURCED_800),
        codes=["CANN004"],
        absent=["CANN005", "CANN001"],
        exit_code=1,
        findings=[
            {
                "severity": ["error"],
                "match": ["910B3", "ascend910b", "Ascend-cann-kernels-910b_8\\.0\\.0_linux-aarch64\\.run"],
            }
        ],
    )
    classic_toolkit(
        s / "root",
        "8.0.0",
        "ascend_toolkit_install_8.0.0_aarch64.info",
        version_cfg="version.cfg_toolkit_8.0.0_no-opp_kernel.txt",
    )
    driver(s / "root", "driver_version.info_24.1.rc1_no-package_version_doc.txt")
    torch_pair(s / "root", "2.1.0", "2.1.0.post10")
    npu_smi(s, "npu-smi-info_910B3_24.1.rc1.b030_8npu_devices_only.txt")
    built.append(s.name)

    s = scenario(
        "k12-kernels-for-910b-on-310p3",
        "image with kernels for A2 (ascend910b) only, run on an Atlas 300I Duo (310P3)",
        "case 29 (vllm-project/vllm-ascend#237): `read binary_info_config.json failed`",
        dict(HOME_ENV, **SOURCED_800),
        codes=["CANN005"],
        absent=["CANN004", "CANN006"],
        exit_code=1,
        findings=[
            {
                "severity": ["error"],
                "match": ["310P3", "ascend310p", "ascend910b", "Ascend-cann-kernels-310p_8\\.2\\.RC1"],
            }
        ],
    )
    classic_toolkit(
        s / "root",
        "8.2.RC1",
        "ascend_toolkit_install_8.2.RC1_aarch64.info",
        toolkit_info="toolkit_version.info_8.2.RC1_component.txt",
        opp_kernel_info="opp_kernel_version.info_8.2.RC1.txt",
        kernels=["ascend910b"],
    )
    write(s / "root", ".dockerenv", "")
    driver(s / "root", "driver_version.info_24.1.rc2.2.txt")
    torch_pair(s / "root", "2.5.1", "2.5.1")
    npu_smi(s, "npu-smi-info_310P3-Duo_24.1.rc2_1card2chip_npuid1792_noproc.txt")
    built.append(s.name)

    s = scenario(
        "k12-kernels-8.2.RC1-over-toolkit-8.0.0",
        "kernels package of CANN 8.2.RC1 installed over a CANN 8.0.0 toolkit",
        "case 37 hypothesis (vllm-project/vllm-ascend#4284): kernels from another CANN release. Graded (issue 13): "
        "neither package places the other (the kernels accept toolkit components >=7.6, <=8.2; the 8.0.0 toolkit's "
        "component line is not in its files here) and no release note pairs them -- not documented either way: warning",
        dict(HOME_ENV, **SOURCED_800),
        codes=["CANN006"],
        exit_code=0,
        findings=[
            {
                "severity": ["warning"],
                "match": ["8\\.2\\.RC1", "8\\.0\\.0", "opp_kernel/version\\.info", "not documented either way"],
            }
        ],
    )
    classic_toolkit(
        s / "root",
        "8.0.0",
        "ascend_toolkit_install_8.0.0_aarch64.info",
        version_cfg="version.cfg_toolkit_8.0.0_no-opp_kernel.txt",
        opp_kernel_info="opp_kernel_version.info_8.2.RC1.txt",
        kernels=["ascend910b"],
    )
    built.append(s.name)

    # ---------------------------------------------------------------- K11 / K04
    s = scenario(
        "k11-nnal-missing-vllm-ascend",
        "vllm-ascend 0.7.1rc1 + torch_npu 2.5.1.dev20250218 on CANN 8.0.0 without NNAL",
        "case 26 (vllm-project/vllm-ascend#152): `ImportError: libatb.so`",
        dict(HOME_ENV, **SOURCED_800),
        codes=["CANN007"],
        exit_code=1,
        findings=[
            {
                "severity": ["error"],
                "match": ["vllm.ascend", "Ascend-cann-nnal_8\\.0\\.0_linux-aarch64\\.run", "nnal/atb/set_env\\.sh"],
            }
        ],
    )
    classic_toolkit(
        s / "root",
        "8.0.0",
        "ascend_toolkit_install_8.0.0_aarch64.info",
        version_cfg="version.cfg_toolkit_8.0.0_no-opp_kernel.txt",
        kernels=["ascend910b"],
    )
    torch_pair(s / "root", "2.5.1", "2.5.1.dev20250218")
    dist(s / "root", "vllm", "0.7.1")
    dist(s / "root", "vllm_ascend", "0.7.1rc1", requires=["torch-npu==2.5.1.dev20250218"])
    built.append(s.name)

    s = scenario(
        "k11-atb-home-abi-dir-missing",
        "ATB_HOME_PATH names atb/cxx_abi_1, but this NNAL ships only cxx_abi_0",
        "case 27 kind (vllm-project/vllm-ascend#1144): ATB ABI directory chosen wrongly",
        dict(
            HOME_ENV,
            **SOURCED_800,
            ATB_HOME_PATH="/usr/local/Ascend/nnal/atb/latest/atb/cxx_abi_1",
        ),
        codes=["CANN009"],
        absent=["CANN007", "CANN008"],
        exit_code=1,
        findings=[{"severity": ["error"], "match": ["cxx_abi_1", "does not exist"]}],
    )
    classic_toolkit(
        s / "root",
        "8.2.RC1",
        "ascend_toolkit_install_8.2.RC1_aarch64.info",
        toolkit_info="toolkit_version.info_8.2.RC1_component.txt",
        opp_kernel_info="opp_kernel_version.info_8.2.RC1.txt",
        kernels=["ascend910b"],
    )
    nnal(s / "root", "8.2.RC1", "nnal_atb_version.info_8.2.RC1_indented.txt", abi_dirs=["cxx_abi_0"])
    torch_pair(s / "root", "2.7.1", "2.7.1")
    built.append(s.name)

    s = scenario(
        "k04-nnal-8.2.RC1-on-toolkit-8.0.0",
        "NNAL/ATB 8.2.RC1 next to a CANN 8.0.0 toolkit",
        "case 10 kind (Ascend/pytorch#99): NNAL from another CANN release than the toolkit. Graded (issue 13): no "
        "source states NNAL compatibility across CANN releases (each release note lists NNAL only inside its own "
        "bundle) -- not documented either way: warning (evidence grid ck-10)",
        dict(HOME_ENV, **SOURCED_800, ATB_HOME_PATH="/usr/local/Ascend/nnal/atb/latest/atb/cxx_abi_0"),
        codes=["CANN008"],
        absent=["CANN007", "CANN009"],
        exit_code=0,
        findings=[
            {
                "severity": ["warning"],
                "match": ["NNAL 8\\.2\\.RC1", "8\\.0\\.0", "not documented either way", "Ascend-cann-nnal_8\\.0\\.0"],
            }
        ],
    )
    classic_toolkit(
        s / "root",
        "8.0.0",
        "ascend_toolkit_install_8.0.0_aarch64.info",
        version_cfg="version.cfg_toolkit_8.0.0_no-opp_kernel.txt",
        kernels=["ascend910b"],
    )
    nnal(s / "root", "8.2.RC1", "nnal_atb_version.info_8.2.RC1_indented.txt")
    built.append(s.name)

    # ---------------------------------------------------------------- K14
    s = scenario(
        "k14-container-cann-8.5-host-driver-24.1",
        "container with CANN 8.5.0 (new cann-8.5.0 layout) on a host whose driver is 24.1.rc2.2",
        "case 35 (vllm-project/vllm-ascend#5468): container CANN newer than the host driver. Graded (issue 13): the "
        "CANN 8.5.0 release notes list Ascend HDK 25.5.X / 25.3.X / 25.2.X / 25.0.X; 24.1.RC2 is three HDK releases "
        "before 25.0.RC1 -- not documented either way, within about a year: warning (AUDIT §7(d); grid cd-12). The "
        "toolkit's compatible_version lists the driver's line C18, but it is 8.2.RC1's list carried forward: the notes decide",
        {
            "HOME": "/root",
            "ASCEND_TOOLKIT_HOME": "/usr/local/Ascend/cann-8.5.0",
            "ASCEND_HOME_PATH": "/usr/local/Ascend/cann-8.5.0",
            "ASCEND_TOOLKIT_LATEST_HOME": "/usr/local/Ascend/ascend-toolkit/latest",
            "ASCEND_OPP_PATH": "/usr/local/Ascend/cann-8.5.0/opp",
        },
        codes=["DRV002"],
        absent=["CANN002", "DRV001"],
        exit_code=1,
        findings=[
            {
                "severity": ["warning"],
                "match": ["24\\.1\\.rc2\\.2", "CANN 8\\.5\\.0", "not documented either way", "Ascend-hdk-"],
            }
        ],
    )
    cann85(
        s / "root",
        "8.5.0",
        "ascend_toolkit_install_8.5.0_aarch64_new-cann-layout_doc.info",
        "opp_version.info_8.5.0_doc.txt",
        kernels=["ascend910b"],
    )
    write(s / "root", ".dockerenv", "")
    mkdir(s / "root", "dev")  # the container's /dev, without the NPU nodes (CTR001)
    driver(s / "root", "driver_version.info_24.1.rc2.2.txt")
    built.append(s.name)

    s = scenario(
        "k14-firmware-25.0-with-driver-25.3",
        "driver 25.3.rc1 upgraded without its firmware (firmware of HDK 25.0.rc1.1 stays)",
        "samples: driver_version.info_25.3.rc1_doc + firmware_version.info_7.7.0.1.231_pkg25.0.rc1.1. Graded (issue 13): "
        "the driver's own compatible_version_fw=[7.0.0,8.9.9] holds 7.7.0.1.231 -- declared compatible, no finding; the "
        "firmware's older compatible_version_drv cannot name the newer driver (evidence grid df-03)",
        dict(HOME_ENV),
        absent=["DRV001", "DRV003", "DRV004"],
    )
    driver(s / "root", "driver_version.info_25.3.rc1_doc.txt", "firmware_version.info_7.7.0.1.231_pkg25.0.rc1.1.txt")
    built.append(s.name)

    # ---------------------------------------------------------------- several CANN installs
    s = scenario(
        "multi-cann-older-selected",
        "CANN 8.0.0 and 8.2.RC1 side by side (plus a stray 8.0 dir); ASCEND_TOOLKIT_HOME names 8.0.0",
        "samples: ls_ascend-toolkit_dir_8.0.0_and_PATH (8.0 and 8.0.0 side by side)",
        {
            "HOME": "/root",
            "ASCEND_TOOLKIT_HOME": "/usr/local/Ascend/ascend-toolkit/8.0.0",
            "ASCEND_HOME_PATH": "/usr/local/Ascend/ascend-toolkit/8.0.0",
        },
        codes=["CANN002"],
        findings=[
            {
                "severity": ["warning"],
                "match": [
                    "CANN 8\\.0\\.0 is in use",
                    "8\\.2\\.RC1",
                    "source /usr/local/Ascend/ascend-toolkit/set_env\\.sh",
                ],
            }
        ],
    )
    classic_toolkit(
        s / "root", "8.0.0", "ascend_toolkit_install_8.0.0_aarch64.info", latest=False, kernels=["ascend910b"]
    )
    classic_toolkit(
        s / "root",
        "8.2.RC1",
        "ascend_toolkit_install_8.2.RC1_aarch64.info",
        toolkit_info="toolkit_version.info_8.2.RC1_component.txt",
        kernels=["ascend910b"],
    )
    mkdir(s / "root", f"{AS}/ascend-toolkit/8.0")  # the stray directory of the sample: no files
    built.append(s.name)

    s = scenario(
        "multi-cann-8.5-next-to-classic-8.2",
        "CANN 8.5.0 (cann-8.5.0, cann, ascend-toolkit/latest -> /usr/local/Ascend/cann) next to an old ascend-toolkit/8.2.RC1",
        "INDEX.md §9 layout 2 (user notes: cann -> cann-8.5.1 with ascend-toolkit/8.2.RC1 left behind)",
        dict(HOME_ENV),
        absent=["CANN001", "CANN002", "CANN010"],
    )
    cann85(
        s / "root",
        "8.5.0",
        "ascend_toolkit_install_8.5.0_new-layout_path-without-arch-suffix.info",
        "opp_version.info_8.5.0_doc.txt",
        kernels=["ascend910_93"],
    )
    classic_toolkit(
        s / "root",
        "8.2.RC1",
        "ascend_toolkit_install_8.2.RC1_aarch64.info",
        toolkit_info="toolkit_version.info_8.2.RC1_component.txt",
        latest=False,
        set_env=False,
    )
    built.append(s.name)

    return built


if __name__ == "__main__":
    for name in build():
        print("built", OUT / name)
