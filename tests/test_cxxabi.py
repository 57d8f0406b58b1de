"""torch's C++ ABI from c10's own exports (issue 14): real libc10.so of both ABIs, the
stub ones of the ELF fixtures, and the NNAL cxx_abi judgement end to end.

Every real libc10.so also exports libstdc++'s own ``std::__cxx11`` names, so
"``__cxx11`` anywhere in the file" read every real old-ABI torch as C++11 and told users
with the right ``cxx_abi_0`` to switch.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from builders.elfbuild import elf_world_fixture  # noqa: F401  (session fixture elf_world)
from builders.realc10 import TORCH_CHECK_FAIL, real_c10_fixture  # noqa: F401  (session fixture real_c10)
from scenario_runner import failures, prepare, run_check

from npudoctor.parsers.cxxabi import torch_cxx11_abi

SCENARIOS = Path(__file__).resolve().parent / "scenarios"
CASE27 = SCENARIOS / "case27-atb-cxx-abi-1-with-old-abi-torch"
C10_IN_CASE27 = "usr/local/lib/python3.10/site-packages/torch/lib/libc10.so"

#: libstdc++'s own C++11-ABI names, as the real old-ABI libc10.so of torch 2.5.1 exports
#: them (tests/fixtures/elf/README.md: 210 such ``std::`` names).
STD_CXX11_NAMES = (
    "_ZGTtNSt11logic_errorC1ERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE",
    "_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE4swapERS4_",
)


def _c10_with_std_cxx11(elf_world, out: str, abi: int) -> Path:
    """A libc10.so exporting c10's torchCheckFail of ``abi`` *and* libstdc++'s own
    ``std::__cxx11`` names, as every real libc10.so does."""
    names = (TORCH_CHECK_FAIL[abi],) + STD_CXX11_NAMES
    body = "".join(f'void f{i}(void) __asm__("{n}");\nvoid f{i}(void) {{}}\n' for i, n in enumerate(names))
    return elf_world.builder.build(out, body, soname="libc10.so")


@pytest.mark.slow
def test_real_libc10_of_both_abis(real_c10):
    old = real_c10["old"].read_bytes()
    new = real_c10["new"].read_bytes()
    assert b"__cxx11" in old  # the trap: the old-ABI file holds __cxx11 names too
    assert torch_cxx11_abi(old) == (False, TORCH_CHECK_FAIL[0])
    assert torch_cxx11_abi(new) == (True, TORCH_CHECK_FAIL[1])


def test_stub_libc10_of_both_abis(elf_world):
    assert torch_cxx11_abi(elf_world["libc10_old"].read_bytes()) == (False, TORCH_CHECK_FAIL[0])
    assert torch_cxx11_abi(elf_world["libc10_new"].read_bytes()) == (True, TORCH_CHECK_FAIL[1])
    old = _c10_with_std_cxx11(elf_world, "abi-trap/old/libc10.so", 0).read_bytes()
    assert b"__cxx11" in old
    assert torch_cxx11_abi(old) == (False, TORCH_CHECK_FAIL[0])
    assert torch_cxx11_abi(_c10_with_std_cxx11(elf_world, "abi-trap/new/libc10.so", 1).read_bytes())[0] is True


def test_other_c10_names_decide_without_torch_check_fail(elf_world):
    # the scenarios' stub: c10::Error::Error(SourceLocation, std::__cxx11::basic_string)
    lib = next(SCENARIOS.glob("k10-set-env-not-sourced/root/**/torch/lib/libc10.so"))
    abi, sym = torch_cxx11_abi(lib.read_bytes())
    assert abi is True and sym is not None and sym.startswith("_ZN3c105Error")
    only_std = elf_world.builder.build(
        "abi-trap/std-only/libc10.so",
        "".join(f'void f{i}(void) __asm__("{n}");\nvoid f{i}(void) {{}}\n' for i, n in enumerate(STD_CXX11_NAMES)),
        soname="libc10.so",
    )
    assert torch_cxx11_abi(only_std.read_bytes()) == (None, None)  # std:: names say nothing


@pytest.mark.parametrize("data", [b"", b"\x7fEL", b"not an elf at all", b"\x7fELF" + b"\0" * 8])
def test_no_answer_never_raises(data):
    assert torch_cxx11_abi(data) == (None, None)


def _case27_with(tmp_path: Path, c10: Path, abi_dir: str) -> Path:
    scenario = prepare(CASE27, tmp_path)
    shutil.copyfile(c10, scenario / "root" / C10_IN_CASE27)
    toml = scenario / "scenario.toml"
    toml.write_text(re.sub(r"cxx_abi_1", abi_dir, toml.read_text(encoding="utf-8")), encoding="utf-8")
    return scenario


def _abi_findings(run):
    return [f for f in run.doc["findings"] if f["code"] == "CANN009"]


def _check_old_abi_torch(tmp_path: Path, c10: Path) -> None:
    right = run_check(_case27_with(tmp_path / "right", c10, "cxx_abi_0"))
    assert right.doc is not None, right.stderr
    assert right.doc["facts"]["libraries"]["torch_cxx11_abi"] is False
    assert right.doc["facts"]["environment"]["torch_cxx11_abi"] is False
    assert _abi_findings(right) == [], "cxx_abi_0 is right for an old-ABI torch"
    wrong = run_check(_case27_with(tmp_path / "wrong", c10, "cxx_abi_1"))
    assert failures(wrong) == []  # case 27's own expectations: CANN009 names cxx_abi_0
    assert "cxx_abi_0" in _abi_findings(wrong)[0]["title"]


def test_scenario_old_abi_torch_with_std_cxx11_names(elf_world, tmp_path):
    _check_old_abi_torch(tmp_path, _c10_with_std_cxx11(elf_world, "abi-trap/scenario/libc10.so", 0))


@pytest.mark.slow
def test_scenario_real_old_abi_torch(real_c10, tmp_path):
    _check_old_abi_torch(tmp_path, real_c10["old"])
