"""The exact fix text of the LIB findings: the command that fits the diagnosed machine
(conda env or system libstdc++, the torch pin torch_npu's Requires-Dist names, the target
interpreter, scripts that exist), on the scenario trees and on snapshots of probe facts."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
from scenario_runner import REPO, prepare, run_check

from npudoctor.context import Options
from npudoctor.engine import evaluate
from npudoctor.findings import Finding
from npudoctor.knowledge.matrix import load_matrix
from npudoctor.knowledge.toolchain import gcc_for
from npudoctor.report.build import fix_list
from npudoctor.snapshot import Snapshot

SCEN = REPO / "tests" / "scenarios"
SITE = "/usr/local/python3.11.13/lib/python3.11/site-packages"
STDCXX = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"


def _scenario(name: str, tmp_path: Path) -> Dict[str, Any]:
    run = run_check(prepare(SCEN / name, tmp_path))
    assert run.doc is not None, run.stderr[-2000:]
    return run.doc


def _one(findings: List[Any], code: str) -> Any:
    hits = [f for f in findings if (f["code"] if isinstance(f, dict) else f.code) == code]
    assert len(hits) == 1, hits
    return hits[0]


def test_glibcxx_on_ubuntu_system_python_names_os_fix_gcc_and_file(tmp_path):
    doc = _scenario("lib-glibcxx-too-old", tmp_path)
    f = _one(doc["findings"], "LIB002")
    assert f["fix"] == [
        "apt-get update && apt-get install -y software-properties-common && "
        "add-apt-repository -y ppa:ubuntu-toolchain-r/test && apt-get update && apt-get install -y libstdc++6"
        "  # the toolchain PPA's libstdc++6 comes from a newer GCC",
        "or use a base image whose system libstdc++ provides GLIBCXX_3.4.29 (GCC >= 11.1.0, e.g. Ubuntu 22.04, "
        f"Ubuntu 24.04, Debian 12, openEuler 24.03); {STDCXX} is too old",
        # no `<that gcc>` placeholder inside a command: the directory is the user's choice, said in words
        "or install the libstdc++ of GCC >= 11.1.0 in its own directory and put its lib64 first in LD_LIBRARY_PATH",
    ]
    assert "GLIBCXX_3.4.29 first came with the libstdc++ of GCC 11.1.0" in f["evidence"]


def test_torch_symbols_fix_is_the_exact_pip_command_from_requires_dist(tmp_path):
    doc = _scenario("lib-k01-torch-symbols", tmp_path)
    f = _one(doc["findings"], "LIB003")
    # the target interpreter of the root: /usr/local/python3.11.13 (official CANN images)
    assert f["fix"] == [
        "/usr/local/python3.11.13/bin/python3.11 -m pip install torch==2.1.0+cpu --index-url https://download.pytorch.org/whl/cpu",
        "or install the torch_npu release built for torch 2.1.0",
    ]
    assert (
        f"torch_npu needs torch 2.1.0+cpu: Requires-Dist: torch (==2.1.0+cpu) ({SITE}/torch_npu-2.1.0.post10.dist-info/METADATA)"
        in f["evidence"]
    )
    # The symbols prove PKG001's mismatch: one cause, one fix. LIB003 folds under PKG001
    # and the fix list prints the pip command once.
    pairing = _one(doc["findings"], "PKG001")
    assert pairing["fix"][0] == f["fix"][0]
    assert f["data"]["because"] == "PKG001"
    listed = [g.code for g in fix_list([Finding.from_dict(g) for g in doc["findings"]])]
    assert "PKG001" in listed and "LIB003" not in listed, listed


@pytest.mark.parametrize(
    "version,gcc",
    [
        ("GLIBCXX_3.4.28", "9.3.0"),
        ("GLIBCXX_3.4.29", "11.1.0"),
        ("GLIBCXX_3.4.30", "12.1.0"),
        ("GLIBCXX_3.4.33", "14.1.0"),
        ("CXXABI_1.3.13", "11.1.0"),
        ("GLIBC_2.28", None),
    ],
)
def test_gcc_release_of_symbol_versions(version, gcc):
    # libstdc++ manual, ABI Policy and Guidelines, "Versioning"
    assert gcc_for(version) == gcc


def _snap(python: Dict[str, Any], libraries: Dict[str, Any], packages: Optional[Dict[str, Any]] = None, **extra):
    facts = {
        "host": {"arch": python.get("machine")},
        "python": python,
        "packages": {"installed": packages or {}},
        "libraries": libraries,
    }
    facts.update(extra)
    return Snapshot(facts=facts)


def _codes(snap: Snapshot) -> List[Any]:
    return list(evaluate(snap, load_matrix(), Options()))


def test_glibcxx_in_a_conda_env_gives_the_conda_package():
    prefix = "/root/miniconda3/envs/npu"
    site = f"{prefix}/lib/python3.10/site-packages/torch_npu"
    libs = {
        "objects": [
            {"path": f"{site}/lib/libtorch_npu.so", "version_needs": {"libstdc++.so.6": ["GLIBCXX_3.4.30"]}},
            {"path": f"{site}/_C.so", "version_needs": {"libstdc++.so.6": ["GLIBCXX_3.4.29"]}},
        ],
        "glibc": {
            "providers": {"libstdc++.so.6": f"{prefix}/lib/libstdc++.so.6"},
            "defined": {"libstdc++.so.6": [f"GLIBCXX_3.4.{n}" for n in range(29)]},
        },
    }
    py = {"machine": "aarch64", "executable": f"{prefix}/bin/python", "conda_prefix": prefix}
    f = _one(_codes(_snap(py, libs)), "LIB002")
    assert f.fix == [
        f"conda install -p {prefix} -c conda-forge 'libstdcxx-ng>=12'  # the libstdc++ of GCC >= 12.1.0 "
        "provides GLIBCXX_3.4.29, GLIBCXX_3.4.30"
    ]


def _torch_check(missing: str = "_ZN5torch10ValueErrorC1EPKcz") -> Dict[str, Any]:
    return {
        "torch_npu": {"version": "2.1.0.post10", "location": f"{SITE}/torch_npu"},
        "torch": {"version": "2.1.0", "lib_dir": f"{SITE}/torch/lib"},
        "symbols": {
            "torch": {
                "object": f"{SITE}/torch_npu/lib/libtorch_npu.so",
                "against": [f"{SITE}/torch/lib/libtorch_cpu.so"],
                "checked": 3,
                "missing_count": 1,
                "missing": [missing],
            }
        },
    }


def _pkgs(requires: List[str]) -> Dict[str, Any]:
    return {
        "torch-npu": [
            {
                "name": "torch-npu",
                "version": "2.1.0.post10",
                "location": SITE,
                "dist_info": f"{SITE}/torch_npu-2.1.0.post10.dist-info",
                "requires_dist": requires,
            }
        ],
        "torch": [{"name": "torch", "version": "2.1.0", "location": SITE}],
    }


def test_torch_symbols_on_aarch64_with_the_pinned_number_installed_forces_a_reinstall():
    py = {"machine": "aarch64", "executable": "/opt/venv/bin/python", "version_info": [3, 10, 14]}
    f = _one(_codes(_snap(py, _torch_check(), _pkgs(["torch==2.1.0"]))), "LIB003")
    assert f.fix[0] == "/opt/venv/bin/python -m pip install torch==2.1.0 --force-reinstall --no-deps"


def test_torch_symbols_without_a_pin_uses_the_release_rule_and_python3():
    py = {"machine": "x86_64", "version_info": [3, 10, 14]}
    f = _one(_codes(_snap(py, _torch_check(), _pkgs(["numpy"]))), "LIB003")
    assert f.fix[0] == "python3 -m pip install torch==2.1.0+cpu --index-url https://download.pytorch.org/whl/cpu"
    assert "torch_npu needs torch 2.1.0: torch_npu 2.1.0.post10 goes with torch 2.1.0 (no exact Requires-Dist pin)" in (
        f.evidence
    )


def test_loader_fix_without_any_set_env_script_exports_the_toolkit_lib64():
    tk = "/usr/local/Ascend/cann-8.5.0"
    libs = {
        "torch_npu": {"version": "2.9.0", "location": f"{SITE}/torch_npu"},
        "resolution": [
            {
                "name": "libhccl.so",
                "needed_by": [f"{SITE}/torch_npu/lib/libtorch_npu.so"],
                "status": "missing",
                "found_at": [{"path": f"{tk}/lib64/libhccl.so", "where": "selected toolkit", "usable": True}],
            }
        ],
        "loader": {"ld_library_path": []},
    }
    env = {"toolkit": {"path": tk}, "set_env_script": None, "expected": {"method": "documented", "script": None}}
    f = _one(_codes(_snap({"machine": "x86_64"}, libs, environment=env)), "LIB001")
    assert f.fix == [f"export LD_LIBRARY_PATH={tk}/lib64" + "${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}"]


def test_toolkit_libraries_off_the_loader_path_fold_under_set_env_not_sourced(tmp_path):
    doc = _scenario("k10-set-env-not-sourced", tmp_path)
    lib = _one(doc["findings"], "LIB001")
    assert "libhccl.so" in lib["title"] and lib["data"]["because"] == "ENV001"
    shown = [f["code"] for f in doc["findings"] if f["severity"] == "error" and not f["data"].get("because")]
    assert "ENV001" in shown and "LIB001" not in shown


def test_nnal_libraries_fold_under_nnal_set_env_only_when_as_severe(tmp_path):
    doc = _scenario("lib-nnal-not-sourced", tmp_path)
    libs = [f for f in doc["findings"] if f["code"] == "LIB001" and "libatb" in f["title"]]
    env5 = [f for f in doc["findings"] if f["code"] == "ENV005"]
    assert libs and env5
    rank = {"error": 0, "warning": 1, "info": 2}
    for f in libs:
        folded = f["data"].get("because") == "ENV005"
        assert folded == (rank[env5[0]["severity"]] <= rank[f["severity"]]), (f["severity"], env5[0]["severity"])


def test_driver_libraries_off_a_partly_applied_loader_path_fold_under_it(tmp_path):
    # set_env.sh's variables copied without the driver's directories: ENV003 names the
    # directories, LIB001 observes that libascend_hal.so and libc_sec.so lie only there.
    # One cause, one finding: ENV003 is an error (observed) and LIB001 folds under it.
    doc = _scenario("lib-driver-not-on-loader-path", tmp_path)
    env3 = _one(doc["findings"], "ENV003")
    lib = _one(doc["findings"], "LIB001")
    assert env3["severity"] == "error"
    assert (
        "libascend_hal.so, libc_sec.so will not load: they lie in these directories only (LIB001)" in env3["evidence"]
    )
    assert lib["data"]["because"] == "ENV003"
    listed = [g.code for g in fix_list([Finding.from_dict(g) for g in doc["findings"]])]
    assert "ENV003" in listed and "LIB001" not in listed, listed
    export = "export LD_LIBRARY_PATH=/usr/local/Ascend/driver/lib64:/usr/local/Ascend/driver/lib64/common:"
    assert [line for g in doc["findings"] if g["code"] == "ENV003" for line in g["fix"] if line.startswith(export)]


def test_a_partly_applied_loader_path_without_an_observed_failure_stays_a_warning(tmp_path):
    # the driver's directories are missing from LD_LIBRARY_PATH, but no library is observed
    # failing for it (no Python stack to resolve): unknown is not broken
    doc = _scenario("k14-container-cann-8.5-host-driver-24.1", tmp_path)
    env3 = _one(doc["findings"], "ENV003")
    assert env3["severity"] == "warning"
    assert not any("will not load" in e for e in env3["evidence"])
