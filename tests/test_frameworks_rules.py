"""Issue 16 rules through the CLI (``check --json``, in-process) on real trees: each test starts
from a clean, officially paired scenario of tests/builders/build_framework_scenarios.py (910B3, CANN
8.2.RC1, NNAL, torch/torch_npu/vllm-ascend with their dist-info) and adds exactly one thing.

PKG050 torch without torch_npu, PKG051 a vllm-ascend build for another chip, PKG052 CUDA-only
distributions (their own metadata, RECORD and DT_NEEDED of real ELF files built with gcc), DEV040
framework support per chip family from framework_support.toml, CANN003 for a pre-release
torch_npu the matrix lacks, judged by the CANN its own METADATA names.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS / "fixtures"))

from builders.build_cann_scenarios import dist, write  # noqa: E402
from builders.build_framework_scenarios import record  # noqa: E402
from builders.elf_build import build_so  # noqa: E402
from scenario_runner import prepare, run_check  # noqa: E402

SCENARIOS = TESTS / "scenarios"
CLEAN = "fw-vllm-ascend-910b-build-on-910b3"
SP = "usr/local/lib/python3.10/site-packages"
T = "cp310-cp310-manylinux_2_17_aarch64"


def _clean(tmp_path: Path, name: str = CLEAN) -> Path:
    return prepare(SCENARIOS / name, tmp_path)


def _findings(scenario: Path, extra: List[str] = ()) -> List[Dict[str, Any]]:  # type: ignore[assignment]
    run = run_check(scenario, list(extra))
    assert run.doc is not None, run.stderr
    return list(run.doc["findings"])


def _one(findings: List[Dict[str, Any]], code: str) -> Dict[str, Any]:
    got = [f for f in findings if f["code"] == code]
    assert len(got) == 1, [(f["code"], f["title"]) for f in findings]
    return got[0]


def _codes(findings: List[Dict[str, Any]]) -> List[str]:
    return [f["code"] for f in findings]


def test_the_clean_base_has_no_framework_findings(tmp_path: Path) -> None:
    codes = _codes(_findings(_clean(tmp_path)))
    assert not {"PKG050", "PKG051", "PKG052", "DEV040", "CANN003"} & set(codes), codes


# ---------------------------------------------------------------- PKG051 build info


@pytest.mark.parametrize(
    "text,built",
    [
        ("# Auto-generated file\n__device_type__ = 'A3'\n", "910_93"),
        ("# Auto-generated file\n__device_type__ = '_310P'\n", "310P"),
        ("# Auto-generated file\n__soc_version__ = 'ascend310p3'\n__sleep_mode_enabled__ = False\n", "310P"),
    ],
)
def test_a_build_for_another_family_is_an_error(tmp_path: Path, text: str, built: str) -> None:
    s = _clean(tmp_path)
    (s / "root" / SP / "vllm_ascend/_build_info.py").write_text(text)
    f = _one(_findings(s), "PKG051")
    assert f["severity"] == "error"
    assert f["title"].startswith(f"vllm-ascend 0.9.1 was built for {built.upper()} chips")
    assert f["title"].endswith("but the NPUs here are 910B3 (910B)")
    assert f["data"]["built_for"] == built.lower() and f["data"]["chips"] == ["910B"]
    assert any("does not match the installed version's device type" in e for e in f["evidence"])


@pytest.mark.parametrize(
    "text",
    [
        "# Auto-generated file\n__device_type__ = 'A2'\n",  # the right family (new format)
        "__device_type__ = 'A9'\n",  # a value vllm-ascend does not define: not judged
        "import os\n__soc_version__ = os.environ['SOC_VERSION']\n",  # not a literal: never executed
        "__soc_version__ = 'ASCEND310P3'\n(((",  # does not parse
        "\x00\xff garbage",
    ],
)
def test_the_right_or_an_unreadable_build_gives_no_finding(tmp_path: Path, text: str) -> None:
    s = _clean(tmp_path)
    (s / "root" / SP / "vllm_ascend/_build_info.py").write_text(text, errors="surrogateescape")
    findings = _findings(s)
    assert "PKG051" not in _codes(findings) and "HOST099" not in _codes(findings)


# ---------------------------------------------------------------- DEV040 support per chip family


def test_vllm_ascend_without_310p_support_on_310p_names_the_first_that_can(tmp_path: Path) -> None:
    s = prepare(SCENARIOS / "k13-310p-duo-vllm-ascend", tmp_path)
    f = _one(_findings(s), "DEV040")
    assert f["severity"] == "error"
    assert f["title"] == "vllm-ascend 0.9.1 does not support 310P3 (family 310P)"
    assert f["fix"] == [
        "Use vllm-ascend 0.14.0rc1 or newer (supported on 310P from that release on), installed after the driver,"
        " CANN and torch_npu it needs; or run on hardware this release supports",
        "vllm-ascend 0.14.0rc1 needs torch_npu 2.9.0 and CANN 8.5.0 or newer",
    ]
    assert any("'this feature will NOT be included in v0.9.1-dev branch" in e for e in f["evidence"])
    # the release table's row for 0.14.0rc1, with its source
    assert any(
        e.startswith("vllm-ascend 0.14.0rc1 needs torch_npu 2.9.0 and CANN 8.5.0 or newer: built-in table, ")
        and "versioning_policy.md" in e
        for e in f["evidence"]
    )
    assert f["data"] == {"framework": "vllm-ascend", "installed": "0.9.1", "move_to": "0.14.0rc1"}


@pytest.mark.parametrize(
    "version,severity,words",
    [
        ("0.9.1rc1", "info", "only experimentally"),  # stated: 'Atlas 300I series is experimental supported'
        ("0.12.0", "warning", "(inferred from its release notes)"),  # the gap before 0.14.0rc1, inferred
        ("0.14.0rc1", None, ""),  # '310P support is back now'
    ],
)
def test_310p_support_follows_the_release_notes(tmp_path: Path, version: str, severity: str, words: str) -> None:
    s = prepare(SCENARIOS / "k13-310p-duo-vllm-ascend", tmp_path)
    sp = s / "root" / SP
    shutil.rmtree(sp / "vllm_ascend-0.9.1.dist-info")
    dist(s / "root", "vllm_ascend", version, tag=T)
    findings = _findings(s)
    got = [f for f in findings if f["code"] == "DEV040"]
    if severity is None:
        assert got == []
    else:
        assert [(f["severity"], words in f["title"]) for f in got] == [(severity, True)]
        assert got[0]["data"] == {}  # no release to move to is imposed (rules/_chipmove.py)
    # only a stated "does not run" makes the CANN and torch_npu fixes another release's
    assert not [f["code"] for f in findings if "for_release" in f["data"]]


# ---------------------------------------------------------------- PKG052 CUDA-only distributions


def test_a_cuda_torch_and_its_nvidia_wheels_are_one_finding_with_the_cpu_torch_back(tmp_path: Path) -> None:
    s = _clean(tmp_path)
    r = s / "root"
    shutil.rmtree(r / SP / "torch-2.5.1.dist-info")
    dist(
        r,
        "torch",
        "2.5.1+cu124",
        requires=[
            'nvidia-cublas-cu12==12.4.5.8; platform_system == "Linux" and platform_machine == "x86_64"',
            "filelock",
        ],
        tag=T,
    )
    record(r, SP, "torch", "2.5.1+cu124", ["torch/__init__.py", "torch/lib/libtorch_cuda.so", "torch/lib/libc10.so"])
    dist(r, "nvidia-cublas-cu12", "12.4.5.8", tag="py3-none-manylinux2014_aarch64")
    record(r, SP, "nvidia_cublas_cu12", "12.4.5.8", ["nvidia/cublas/lib/libcublas.so.12"])
    f = _one(_findings(s), "PKG052")
    assert f["severity"] == "error"
    assert f["data"]["distributions"] == ["nvidia-cublas-cu12", "torch"]
    assert f["fix"][0] == "/usr/local/bin/python3.10 -m pip uninstall -y nvidia-cublas-cu12 torch"
    assert f["fix"][1].startswith(
        "/usr/local/bin/python3.10 -m pip install torch==2.5.1 --index-url https://download.pytorch.org/whl/cpu"
    )
    torch_line = next(e for e in f["evidence"] if e.startswith("torch 2.5.1+cu124"))
    assert "the local tag +cu124" in torch_line and "torch/lib/libtorch_cuda.so" in torch_line
    # the aarch64 interpreter does not evaluate the x86_64-only requirement
    assert "nvidia-cublas-cu12" not in torch_line


def test_a_cuda_torch_of_another_release_gets_back_the_torch_torch_npu_needs(tmp_path: Path) -> None:
    # a CUDA recipe moved torch to 2.6.0+cu124 beside torch_npu 2.5.1 (Requires-Dist torch==2.5.1):
    # the fix installs the CPU torch torch_npu needs (it installed 2.6.0), and the torch/torch_npu
    # pairing (PKG001, whose fix installs that same torch) folds under the CUDA recipe
    s = _clean(tmp_path)
    r = s / "root"
    shutil.rmtree(r / SP / "torch-2.5.1.dist-info")
    dist(r, "torch", "2.6.0+cu124", requires=["nvidia-cublas-cu12==12.4.5.8", "filelock"], tag=T)
    record(r, SP, "torch", "2.6.0+cu124", ["torch/__init__.py", "torch/lib/libtorch_cuda.so", "torch/lib/libc10.so"])
    dist(r, "nvidia-cublas-cu12", "12.4.5.8", tag="py3-none-manylinux2014_aarch64")
    record(r, SP, "nvidia_cublas_cu12", "12.4.5.8", ["nvidia/cublas/lib/libcublas.so.12"])
    findings = _findings(s)
    f = _one(findings, "PKG052")
    assert f["fix"][:2] == [
        "/usr/local/bin/python3.10 -m pip uninstall -y nvidia-cublas-cu12 torch",
        "/usr/local/bin/python3.10 -m pip install torch==2.5.1 --index-url https://download.pytorch.org/whl/cpu"
        "  # the CPU build torch_npu is made for",
    ]
    pairing = _one(findings, "PKG001")
    assert pairing["data"]["because"] == "PKG052"
    assert pairing["fix"][0] == "/usr/local/bin/python3.10 -m pip install torch==2.5.1"


def test_an_unknown_distribution_is_recognised_by_its_extension_modules(tmp_path: Path) -> None:
    s = _clean(tmp_path)
    r = s / "root"
    so = "fused_ops/_C.cpython-310-aarch64-linux-gnu.so"
    dist(r, "fused-ops", "0.3.0", tag=T)
    build_so(str(r / SP / so), needed=["libcublas.so.12", "libcudart-45da57e3.so.11.0"])
    record(r, SP, "fused_ops", "0.3.0", [so, "fused_ops/__init__.py"])
    f = _one(_findings(s), "PKG052")
    assert f["severity"] == "error"
    assert f["evidence"] == [
        f"fused-ops 0.3.0: {so} links libcublas.so.12, libcudart-45da57e3.so.11.0 (DT_NEEDED)",
    ]


def test_upstream_triton_is_flagged_beside_triton_ascend_only(tmp_path: Path) -> None:
    s = _clean(tmp_path)
    r = s / "root"
    dist(r, "triton", "3.2.0", tag=T)
    record(r, SP, "triton", "3.2.0", ["triton/backends/nvidia/compiler.py", "triton/__init__.py"])
    assert "PKG052" not in _codes(_findings(s))
    dist(r, "triton-ascend", "3.2.0", tag=T)
    f = _one(_findings(s), "PKG052")
    assert f["data"]["distributions"] == ["triton"]
    assert f["fix"][:2] == [
        "/usr/local/bin/python3.10 -m pip uninstall -y triton",
        "/usr/local/bin/python3.10 -m pip install triton-ascend --force-reinstall --no-deps  # restore its files",
    ]


def test_npu_builds_sharing_a_cuda_name_are_not_flagged(tmp_path: Path) -> None:
    s = _clean(tmp_path)
    r = s / "root"
    # Ascend's apex patch: apex-0.1+ascend (gitcode.com/Ascend/apex README)
    dist(r, "apex", "0.1+ascend", tag=T)
    # bitsandbytes 0.50.2 ships its CPU library next to the CUDA ones (readelf of the PyPI wheel)
    dist(r, "bitsandbytes", "0.50.2", tag="py3-none-manylinux_2_24_aarch64")
    cpu, cuda = "bitsandbytes/libbitsandbytes_cpu.so", "bitsandbytes/libbitsandbytes_cuda126.so"
    build_so(str(r / SP / cpu), needed=["libgomp.so.1"])
    build_so(str(r / SP / cuda), needed=["libcudart.so.12", "libcublas.so.12", "libcublasLt.so.12"])
    record(r, SP, "bitsandbytes", "0.50.2", [cpu, cuda])
    assert "PKG052" not in _codes(_findings(s))


def test_a_cuda_only_bitsandbytes_is_flagged_as_a_warning(tmp_path: Path) -> None:
    s = _clean(tmp_path)
    r = s / "root"
    dist(r, "bitsandbytes", "0.41.1", tag="py3-none-any")
    cuda = "bitsandbytes/libbitsandbytes_cuda118.so"
    build_so(str(r / SP / cuda), needed=["libcudart.so.11.0", "libcublas.so.11"])
    record(r, SP, "bitsandbytes", "0.41.1", [cuda])
    f = _one(_findings(s), "PKG052")
    assert f["severity"] == "warning" and f["data"]["entries"] == ["bitsandbytes"]


# ---------------------------------------------------------------- PKG050 torch without torch_npu


def test_torch_without_torch_npu_on_python_3_12_names_the_cp312_build(tmp_path: Path) -> None:
    f = _one(_findings(prepare(SCENARIOS / "fw-torch-2.6.0-python-3.12-no-torch-npu", tmp_path)), "PKG050")
    assert f["severity"] == "warning"
    assert f["title"] == (
        "torch 2.6.0 is installed but torch_npu is not: torch cannot use the NPUs; torch_npu 2.6.0.post5 fits "
        "torch 2.6.0, Python 3.12 on aarch64 and CANN 8.2.RC1"
    )
    assert "torch_npu 2.6.0 (paired with CANN 8.2.RC1): wheels for Python 3.9-3.11 only on aarch64" in f["evidence"]
    assert f["fix"] == ["/usr/local/bin/python3.12 -m pip install torch-npu==2.6.0.post5"]


def test_torch_without_torch_npu_off_an_npu_machine_is_not_reported(tmp_path: Path) -> None:
    s = prepare(SCENARIOS / "fw-torch-2.6.0-python-3.12-no-torch-npu", tmp_path)
    shutil.rmtree(s / "root" / "dev")
    shutil.rmtree(s / "root" / "usr/local/Ascend/driver")
    (s / "bin" / "npu-smi").unlink()
    assert "PKG050" not in _codes(_findings(s))


# ---------------------------------------------------------------- pre-release torch_npu (CANN003)

#: The row torch_npu 2.5.1rc1's own METADATA description has for its version (README table,
#: npudoctor/knowledge/data/frameworks/prerelease_torch_npu.toml).
RC_README = (
    "| CANN Version | Supported PyTorch Version | Supported Adapter Version | Github Branch |\n"
    "|-----------------------|---------------------------|-----------------------------|-------------------|\n"
    "| CANN 8.0.0.alpha001   | 2.5.1                     | 2.5.1rc1                    | v2.5.1            |\n"
)


def _matrix_without(tmp_path: Path, version: str) -> Path:
    """The bundled matrix with the torch_npu row of ``version`` removed (a matrix older than it)."""
    src = TESTS.parent / "matrix"
    dst = tmp_path / "matrix"
    shutil.copytree(src, dst)
    text = (dst / "torch_npu.toml").read_text(encoding="utf-8")
    blocks = re.split(r"(?m)^(?=\[\[)", text)
    kept = [b for b in blocks if not re.search(rf'(?m)^torch_npu = "{re.escape(version)}"$', b)]
    assert len(kept) == len(blocks) - 1
    (dst / "torch_npu.toml").write_text("".join(kept), encoding="utf-8")
    return dst


@pytest.mark.parametrize(
    "cann_dir,info,grade,severity",
    [
        ("8.0.0", "ascend_toolkit_install_8.0.0_aarch64.info", "same-release-line", "warning"),
        ("8.1.RC1", "ascend_toolkit_install_8.1.RC1_aarch64.info", "undocumented", "warning"),
    ],
)
def test_a_prerelease_the_matrix_lacks_is_judged_by_its_own_metadata(
    tmp_path: Path, cann_dir: str, info: str, grade: str, severity: str
) -> None:
    from builders.build_cann_scenarios import classic_toolkit

    s = _clean(tmp_path)
    r = s / "root"
    shutil.rmtree(r / "usr/local/Ascend/ascend-toolkit")
    classic_toolkit(r, cann_dir, info, kernels=["ascend910b"])
    for d in ("torch_npu-2.5.1.post1.dist-info", "vllm_ascend-0.9.1.dist-info", "vllm-0.9.1.dist-info"):
        shutil.rmtree(r / SP / d)
    shutil.rmtree(r / SP / "vllm_ascend")
    write(
        r,
        f"{SP}/torch_npu-2.5.1rc1.dist-info/METADATA",
        "Metadata-Version: 2.1\nName: torch_npu\nVersion: 2.5.1rc1\nRequires-Dist: torch ==2.5.1\n\n" + RC_README,
    )
    matrix = _matrix_without(tmp_path, "2.5.1rc1")
    f = _one(_findings(s, ["--matrix", str(matrix)]), "CANN003")
    assert (f["severity"], f["data"]["grade"]) == (severity, grade)
    assert (
        "the wheel's own METADATA description names CANN 8.0.0.alpha001 for torch_npu 2.5.1rc1" in f["data"]["source"]
    )
    assert "CANN 8.0.0.alpha001   | 2.5.1" not in f["data"]["source"]  # cells are re-joined, stripped
    assert "'CANN 8.0.0.alpha001 | 2.5.1 | 2.5.1rc1 | v2.5.1'" in f["data"]["source"]


def test_hostile_build_info_and_extension_files_are_facts_not_hangs(tmp_path: Path) -> None:
    import os

    s = _clean(tmp_path)
    r = s / "root"
    info = r / SP / "vllm_ascend/_build_info.py"
    info.unlink()
    os.mkfifo(info)
    so = "fused_ops/_C.cpython-310-aarch64-linux-gnu.so"
    dist(r, "fused-ops", "0.3.0", tag=T)
    (r / SP / "fused_ops").mkdir()
    os.mkfifo(r / SP / so)
    record(r, SP, "fused_ops", "0.3.0", [so, "../../../../../../etc/passwd.so", "/etc/ld.so.cache"])
    run = run_check(s, ["--deadline", "10"])
    assert run.doc is not None, run.stderr
    codes = _codes(run.doc["findings"])
    assert not {"PKG051", "PKG052", "HOST099"} & set(codes), codes
    vllm = run.doc["facts"]["frameworks"]["vllm_ascend"]
    assert vllm["values"] == {} and "not a regular file" in vllm["error"]


def test_on_x86_64_the_torch_npu_install_adds_the_cpu_index(tmp_path: Path) -> None:
    # torch_npu's x86_64 wheels pin torch==X.Y.Z+cpu (its README): pip needs the CPU index beside PyPI
    s = prepare(SCENARIOS / "fw-torch-2.6.0-python-3.12-no-torch-npu", tmp_path)
    for wheel in (s / "root/usr/local/lib/python3.12/site-packages").glob("*.dist-info/WHEEL"):
        wheel.write_text(wheel.read_text().replace("aarch64", "x86_64"))
    f = _one(_findings(s), "PKG050")
    assert "Python 3.12 on x86_64" in f["title"]
    assert f["fix"] == [
        "/usr/local/bin/python3.12 -m pip install torch-npu==2.6.0.post5 --extra-index-url https://download.pytorch.org/whl/cpu"
    ]


def test_triton_ascend_on_310p_is_an_error_naming_its_source(tmp_path: Path) -> None:
    # vllm-ascend#8295: 'the triton-ascend cannot use by 310p'; triton-ascend 3.2.0 supports Atlas A2/A3
    s = prepare(SCENARIOS / "k13-310p-duo-vllm-ascend", tmp_path)
    dist(s / "root", "triton_ascend", "3.2.0", tag=T)
    got = [f for f in _findings(s) if f["code"] == "DEV040" and f["subject"].startswith("triton-ascend")]
    assert [(f["severity"], f["title"]) for f in got] == [
        ("error", "triton-ascend 3.2.0 does not support 310P3 (family 310P)")
    ]
    assert got[0]["fix"] == ["Run triton-ascend on hardware its documentation lists; no release is documented for 310P"]
    assert any("vllm-project/vllm-ascend#8295" in e for e in got[0]["evidence"])
