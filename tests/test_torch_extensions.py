"""Modules of site-packages that link torch's libraries, judged as the loader will: the C++
ABI of the torch names each imports against the one torch's libc10.so exports (LIB010), and
those names against torch's exports (LIB011).  Real g++ builds on the first-day site of
tests/builders/npusite.py (torch's libc10.so there is C++11-ABI); each problem is checked against
glibc's own loader too (``ldd -r``: ld.so lists the module's libraries and binds every
symbol), which reports the undefined symbol the audit predicts."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Dict, List

import pytest
from builders.elfbuild import C10_SOURCE, ElfBuilder, extension_name
from builders.npusite import SITE, first_day
from scenario_runner import run_check

from npudoctor.parsers.cxxabi import module_cxx11_abi

#: An extension calling c10's torchCheckFail(const char*, const char*, unsigned, const std::string&).
ABI_EXT = """\
#include <string>
namespace c10 { namespace detail {
void torchCheckFail(const char* func, const char* file, unsigned line, const std::string& msg);
} }
void npudoctor_ext_check(void) { c10::detail::torchCheckFail("f", "file.cpp", 1, std::string("m")); }
"""
#: An extension calling a c10 function no installed torch exports (built against another torch).
NEWER_EXT = """\
namespace c10 { namespace detail { void npudoctorNewerTorchOnly(int); } }
void npudoctor_ext_newer(void) { c10::detail::npudoctorNewerTorchOnly(1); }
"""
NEWER_C10 = "namespace c10 { namespace detail { void npudoctorNewerTorchOnly(int) {} } }\n"


def _site(tmp_path: Path):
    scenario = first_day(tmp_path)
    root = scenario / "root"
    return scenario, root / SITE, ElfBuilder(tmp_path / "build", "x86_64")


def _codes(doc: Dict[str, Any], *codes: str) -> List[Dict[str, Any]]:
    return [f for f in doc["findings"] if f["code"] in codes]


def _loader_says(module: Path, torch_lib: Path) -> str:
    """What glibc's loader reports for ``module`` with torch's lib directory on its path."""
    ldd = shutil.which("ldd")
    if ldd is None:
        pytest.skip("no ldd (glibc's loader front end) here")
    env = dict(os.environ, LD_LIBRARY_PATH=str(torch_lib))
    proc = subprocess.run([ldd, "-r", str(module)], env=env, capture_output=True, text=True, timeout=60)
    return proc.stdout + proc.stderr


def test_old_abi_extension_on_cxx11_torch_is_one_lib010(tmp_path):
    scenario, site, b = _site(tmp_path)
    old_c10 = b.build(
        "abi0/libc10.so", C10_SOURCE, lang="c++", soname="libc10.so", flags=["-D_GLIBCXX_USE_CXX11_ABI=0"]
    )
    for stem in ("_C", "_ops"):
        b.build(
            site / "oldabi_ext" / extension_name(stem, python="310"),
            ABI_EXT,
            lang="c++",
            needed=[old_c10],
            flags=["-D_GLIBCXX_USE_CXX11_ABI=0"],
        )
    module = site / "oldabi_ext" / extension_name("_C", python="310")
    assert "undefined symbol: _ZN3c106detail14torchCheckFailEPKcS2_jRKSs" in _loader_says(module, site / "torch/lib")
    run = run_check(scenario)
    assert run.doc is not None, run.stderr[-2000:]
    (f,) = _codes(run.doc, "LIB010", "LIB011")
    assert f["code"] == "LIB010" and f["severity"] == "error"
    assert f["title"] == (
        f"{extension_name('_C', python='310')}, {extension_name('_ops', python='310')} (oldabi_ext) were built "
        "with the old C++ ABI; torch 2.7.1 uses the C++11 one"
    )
    assert f["remedies"][0]["kind"] == "pip-install" and f["remedies"][0]["command"] == (
        "/usr/local/bin/python3.10 -m pip install oldabi_ext --no-build-isolation --no-binary oldabi_ext "
        "--no-deps --force-reinstall"
    )
    assert f["fix"][0].startswith("Rebuild oldabi_ext against the installed torch 2.7.1 (or from its source tree): ")
    assert any("imports _ZN3c106detail14torchCheckFailEPKcS2_jRKSs" in line for line in f["evidence"])


def test_same_abi_extension_gives_no_finding(tmp_path):
    scenario, site, b = _site(tmp_path)
    c10 = site / "torch/lib/libc10.so"
    module = b.build(site / "goodabi_ext" / extension_name("_C", python="310"), ABI_EXT, lang="c++", needed=[c10])
    assert "undefined symbol" not in _loader_says(module, site / "torch/lib")
    run = run_check(scenario)
    assert run.doc is not None, run.stderr[-2000:]
    checks = run.doc["facts"]["libraries"]["symbols"]["torch_extensions"]
    (mine,) = [c for c in checks if c["package"] == "goodabi_ext"]
    assert (mine["abi"], mine["missing_count"]) == (True, 0)
    assert _codes(run.doc, "LIB010", "LIB011") == []


def test_extension_for_another_torch_is_one_lib011(tmp_path):
    scenario, site, b = _site(tmp_path)
    newer = b.build("newer/libc10.so", NEWER_C10, lang="c++", soname="libc10.so")
    module = b.build(site / "newer_ext" / extension_name("_C", python="310"), NEWER_EXT, lang="c++", needed=[newer])
    said = _loader_says(module, site / "torch/lib")
    assert "undefined symbol: _ZN3c106detail23npudoctorNewerTorchOnlyEi" in said
    run = run_check(scenario)
    assert run.doc is not None, run.stderr[-2000:]
    (f,) = _codes(run.doc, "LIB010", "LIB011")
    assert f["code"] == "LIB011"
    assert f["title"] == (
        f"{extension_name('_C', python='310')} (newer_ext) was built against another torch than the installed torch 2.7.1"
    )
    assert "undefined: _ZN3c106detail23npudoctorNewerTorchOnlyEi" in f["evidence"]


def test_module_abi_from_the_torch_names_it_imports():
    old = "_ZN3c106detail14torchCheckFailEPKcS2_jRKSs"
    new = "_ZN3c106detail14torchCheckFailEPKcS2_jRKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"
    assert module_cxx11_abi([old, "_ZN2at6TensorC1Ev"]) == (False, old)
    assert module_cxx11_abi([new]) == (True, new)
    # libstdc++'s own names and torch names without a std::string say nothing
    assert module_cxx11_abi(["_ZNSsC1Ev", "_ZN2at6TensorC1Ev"]) == (None, None)
    assert module_cxx11_abi([old, new]) == (None, None)


#: An old-ABI C++ extension whose only torch name takes no std::string (the ``const char*``
#: overload of torchCheckFail): its torch interface shows no ABI, and it loads on either torch.
NO_STRING_EXT = """\
#include <string>
namespace c10 { namespace detail {
void torchCheckFail(const char* func, const char* file, unsigned line, const char* msg);
} }
void npudoctor_ext_plain(void) {
  std::string local("m");
  c10::detail::torchCheckFail("f", "file.cpp", 1, local.c_str());
}
"""
#: A pure-C extension module that links libc10.so and imports no C++ name from it.
PURE_C_EXT = "int PyInit__C(void) { return 0; }\n"


def test_module_whose_abi_cannot_be_determined_gives_no_abi_finding(tmp_path):
    scenario, site, b = _site(tmp_path)
    c10 = site / "torch/lib/libc10.so"
    stripped = b.build(
        site / "nostring_ext" / extension_name("_C", python="310"),
        NO_STRING_EXT,
        lang="c++",
        needed=[c10],
        flags=["-D_GLIBCXX_USE_CXX11_ABI=0"],
    )
    strip = shutil.which("strip")
    if strip is None:
        pytest.skip("no strip (binutils) here")
    subprocess.run([strip, "--strip-all", str(stripped)], check=True, timeout=60)
    sections = subprocess.run(["readelf", "-S", str(stripped)], capture_output=True, text=True, timeout=60).stdout
    assert ".dynsym" in sections and ".symtab" not in sections  # stripped: only the dynamic symbols are left
    pure_c = b.build(site / "purec_ext" / extension_name("_C", python="310"), PURE_C_EXT, needed=[c10])
    for module in (stripped, pure_c):
        said = _loader_says(module, site / "torch/lib")
        assert "libc10.so =>" in said and "undefined symbol" not in said
    run = run_check(scenario)
    assert run.doc is not None, run.stderr[-2000:]
    checks = {c["package"]: c for c in run.doc["facts"]["libraries"]["symbols"]["torch_extensions"]}
    assert (checks["nostring_ext"]["abi"], checks["nostring_ext"]["abi_symbol"]) == (None, None)
    assert checks["nostring_ext"]["checked"] == 1 and checks["nostring_ext"]["missing_count"] == 0
    assert (checks["purec_ext"]["abi"], checks["purec_ext"]["checked"]) == (None, 0)
    assert run.doc["facts"]["libraries"]["torch_cxx11_abi"] is True  # torch's own ABI is known
    assert _codes(run.doc, "LIB010", "LIB011") == []
