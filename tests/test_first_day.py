"""The first-day state: torch and torch_npu installed, the NPU driver installed, no CANN.

torch_npu's own extension modules (torchair's ``_npu_utils.so``, ``_torchair.so``) cannot
load only because CANN's libraries are absent: one root cause, CANN001, whose fix names
the CANN release paired with torch_npu; the modules' LIB005 folds under it.  The torch_npu
tree is built here with gcc/g++ (real ELF files, as the wheel lays them out)."""

from __future__ import annotations

import shutil
import subprocess
from typing import Any, Dict, List

from builders.elfbuild import ElfBuilder
from builders.npusite import SITE, first_day
from scenario_runner import run_check

from npudoctor.findings import Finding
from npudoctor.knowledge.matrix import load_matrix
from npudoctor.report.summary import area_lines
from npudoctor.rules._cannfacts import nearest_pairing


def _shown(doc: Dict[str, Any], severity: str) -> List[Dict[str, Any]]:
    """Findings of ``severity`` the report shows on their own (not folded under a cause)."""
    return [f for f in doc["findings"] if f["severity"] == severity and not f["data"].get("because")]


def test_first_day_is_one_error_cann001_with_the_paired_version(tmp_path):
    scenario = first_day(tmp_path)
    ldd = shutil.which("ldd")
    if ldd is not None:  # glibc's loader agrees: torchair's module misses CANN's libraries
        module = scenario / "root" / SITE / "torch_npu/dynamo/torchair/core/_npu_utils.so"
        said = subprocess.run([ldd, str(module)], capture_output=True, text=True, timeout=60).stdout
        assert "libge_runner.so => not found" in said and "libascendcl.so => not found" in said
    run = run_check(scenario)
    assert run.doc is not None, run.stderr[-2000:]
    (error,) = _shown(run.doc, "error")
    assert error["code"] == "CANN001"
    assert error["title"] == "torch_npu 2.7.1 is installed but no CANN toolkit is (it needs CANN 8.3.RC1)"
    lib005 = [f for f in run.doc["findings"] if f["code"] == "LIB005"]
    assert len(lib005) == 1
    (f,) = lib005
    assert f["data"]["because"] == "CANN001"
    assert f["data"]["modules"] == ["_npu_utils.so", "_torchair.so"]
    assert f["title"] == "_npu_utils.so, _torchair.so (torch-npu) cannot load: no CANN toolkit is installed"
    assert not any("Rebuild" in str(line) for line in f["fix"])


def test_unpaired_torch_npu_names_the_cann_of_the_nearest_paired_release(tmp_path):
    matrix = load_matrix()
    paired = [r for r in matrix.torch_npu_rows if r.cann and r.version is not None and not r.version.is_prerelease]
    newest = max(paired, key=lambda r: r.version)
    assert nearest_pairing(matrix, "2.99.0") is newest
    run = run_check(first_day(tmp_path, version="2.99.0"))
    assert run.doc is not None, run.stderr[-2000:]
    (error,) = _shown(run.doc, "error")
    assert error["code"] == "CANN001"
    assert error["title"] == (
        "torch_npu 2.99.0 is installed but no CANN toolkit is "
        f"(the nearest paired release, torch_npu {newest.torch_npu}, needs CANN {newest.cann[0]})"
    )
    assert not any("matrix show" in str(line) for line in error["fix"])


def test_nearest_pairing_prefers_the_own_torch_line():
    matrix = load_matrix()
    line = [
        r
        for r in matrix.torch_npu_rows
        if r.cann and r.version is not None and not r.version.is_prerelease and r.version.release[:2] == (2, 1)
    ]
    own = max(line, key=lambda r: r.version)
    later = ".".join(str(n) for n in own.version.release) + f".post{(own.version.post or 0) + 50}"
    assert nearest_pairing(matrix, later) is own
    assert nearest_pairing(matrix, "1.0.0") is None


def _deep_failed(severity: str, **data: Any) -> Finding:
    return Finding(
        "DEEP002",
        "deep-import-torch-npu-failed",
        severity,
        "deep",
        "import torch_npu failed with ImportError: libhccl.so: cannot open shared object file",
        data=data,
    )


def test_a_failed_deep_probe_is_never_a_check_mark():
    facts = {"deep": {"ran": True, "outcome": "failed", "failed_step": "import_torch_npu"}}
    explained = _deep_failed("info", severity_was="error", explained_by=["CANN001"])
    (line,) = [a for a in area_lines(facts, [explained]) if a.area == "deep"]
    assert (line.mark, line.found) == ("✗", "import torch_npu: failed; explained by CANN001")
    skipped = {"deep": {"ran": False, "outcome": "not_run", "reason": "--no-commands"}}
    (line,) = [a for a in area_lines(skipped, []) if a.area == "deep"]
    assert (line.mark, line.found) == ("–", "not checked: not run: --no-commands")


def test_a_library_torch_npu_needs_elsewhere_on_disk_names_its_directory(tmp_path):
    scenario = first_day(tmp_path, npu_needs=["libnuma.so.1"])
    root = scenario / "root"
    ElfBuilder(root, "x86_64").stub_library("opt/numa/lib/libnuma.so.1", "libnuma.so.1", ["numa_available"])
    run = run_check(scenario)
    assert run.doc is not None, run.stderr[-2000:]
    (f,) = [g for g in run.doc["findings"] if g["code"] == "LIB001" and "libnuma" in g["title"]]
    assert (
        f["title"] == "libnuma.so.1 cannot be loaded: on disk, but in no directory on the loader path (owner: the OS)"
    )
    assert "libnuma.so.1 is on disk at /opt/numa/lib/libnuma.so.1, a directory on no loader path" in f["evidence"]
    assert f["fix"][0] == (
        "Put the directory of torch_npu's libraries on the loader path: "
        "export LD_LIBRARY_PATH=/opt/numa/lib${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}"
    )


def test_torch_npu_of_the_other_cxx_abi_than_torch_is_said_so(tmp_path):
    scenario = first_day(tmp_path, torch_abi=0)
    site = scenario / "root" / SITE
    # a torchair module of the same (C++11) build, passing a std::string to c10: folded under LIB003
    rel = "torch_npu/dynamo/torchair/core/_abi_compat.so"
    ElfBuilder(tmp_path / "build", "x86_64").build(
        site / rel,
        "#include <string>\nnamespace c10 { namespace detail {\n"
        "void torchCheckFail(const char*, const char*, unsigned, const std::string&);\n} }\n"
        'void npudoctor_abi(void) { c10::detail::torchCheckFail("f", "f.cpp", 1, std::string("m")); }\n',
        lang="c++",
        needed=[site / "torch/lib/libc10.so"],
    )
    with open(site / "torch_npu-2.7.1.dist-info" / "RECORD", "a") as fh:
        fh.write(f"{rel},,\n")
    run = run_check(scenario)
    assert run.doc is not None, run.stderr[-2000:]
    (f,) = [g for g in run.doc["findings"] if g["code"] == "LIB003"]
    assert f["title"] == (
        "torch_npu 2.7.1 was built with the C++11 C++ ABI; the installed torch 2.7.1 uses the old one"
    )
    assert f["evidence"][0] == (
        "libtorch_npu.so imports _ZN3c106detail14torchCheckFailEPKcS2_jRKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"
        " (the C++11 ABI (_GLIBCXX_USE_CXX11_ABI=1))"
    )
    (lib010,) = [g for g in run.doc["findings"] if g["code"] == "LIB010"]
    assert lib010["data"]["modules"] == ["_abi_compat.so"] and lib010["data"]["because"] == "LIB003"
