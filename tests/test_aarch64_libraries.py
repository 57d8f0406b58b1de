"""The library audit on an aarch64 machine (issue 14; Kunpeng + Ascend): ``check --root`` on
the aarch64 tree of :mod:`armworld` (real aarch64 ELF files built with
aarch64-linux-gnu-gcc/g++, the cross toolchain's real aarch64 glibc 2.36 / libstdc++ of GCC
12 as the OS libraries), one problem per test.  Skips without the cross compilers."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from builders.armworld import LIB64, SITE, TOOLKIT, arm_world_fixture  # noqa: F401  (session fixture arm_world)
from builders.elfbuild import (
    EXTENSION_SOURCE,
    GLIBCXX_STUB_MAP,
    GLIBCXX_STUB_SOURCE,
    LIBM_STUB_MAP,
    LIBM_STUB_SOURCE,
    TORCH_NPU_SOURCE,
    ElfBuilder,
    extension_name,
    toolchain,
)
from builders.realc10 import TORCH_CHECK_FAIL, real_c10_fixture  # noqa: F401  (session fixture real_c10)
from scenario_runner import prepare, run_check

from npudoctor.parsers.cxxabi import torch_cxx11_abi
from npudoctor.parsers.elf import read_elf
from npudoctor.parsers.ldcache import NEW_MAGIC
from npudoctor.triage import triage_text

OLD_ABI = ["-D_GLIBCXX_USE_CXX11_ABI=0"]
LOADER = "LD_LIBRARY_PATH as set_env.sh sets it: "


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NPUDOCTOR_CACHE_DIR", str(tmp_path / "cache"))


def _scenario(arm_world, tmp_path) -> Path:
    return prepare(arm_world.scenario, tmp_path)


def _lib_findings(run):
    assert run.doc is not None, run.stderr
    return [f for f in run.doc["findings"] if f["code"].startswith("LIB")]


def _x86(tmp_path) -> ElfBuilder:
    if toolchain("x86_64") is None:
        pytest.skip("no gcc for x86_64")
    return ElfBuilder(tmp_path / "x86", "x86_64")


def test_control_aarch64_stack_loads(arm_world, tmp_path):
    """The control: every library of torch_npu, CANN and the driver resolves with the
    aarch64 loader's search (multiarch /lib/aarch64-linux-gnu, RPATH $ORIGIN, set_env.sh's
    LD_LIBRARY_PATH); no LIB finding."""
    run = run_check(_scenario(arm_world, tmp_path))
    assert _lib_findings(run) == []
    facts = run.doc["facts"]
    assert facts["host"]["arch"] == "aarch64"
    assert facts["host"]["arch_source"] == "ELF header of /bin/sh"
    lib = facts["libraries"]
    assert lib["errors"] == [] and lib["missing"] == []
    assert lib["loader"]["default_dirs"][:2] == ["/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu"]
    assert lib["loader"]["hwcaps"] == []  # glibc defines no glibc-hwcaps level for aarch64
    res = {r["name"]: (r["status"], r["via"], r["path"]) for r in lib["resolution"]}
    assert res["libtorch_npu.so"] == ("found", "RPATH", f"/{SITE}/torch_npu/lib/libtorch_npu.so")
    assert res["libc10.so"][:2] == ("torch", "already loaded")
    assert res["libascendcl.so"] == (
        "found",
        "LD_LIBRARY_PATH",
        "/usr/local/Ascend/ascend-toolkit/latest/lib64/libascendcl.so",
    )
    assert res["libascend_hal.so"] == (
        "found",
        "LD_LIBRARY_PATH",
        "/usr/local/Ascend/driver/lib64/driver/libascend_hal.so",
    )
    assert res["libstdc++.so.6"] == ("found", "default dirs", "/lib/aarch64-linux-gnu/libstdc++.so.6")
    # the real aarch64 glibc 2.36 and GCC 12 libstdc++ of the root
    glibc = lib["glibc"]
    assert glibc["provided"] == {"GLIBC": ["GLIBC_2.36"], "GLIBCXX": ["GLIBCXX_3.4.30"], "CXXABI": ["CXXABI_1.3.13"]}
    assert glibc["defined"]["libc.so.6"][0] == "GLIBC_2.17"  # aarch64's first glibc symbol version
    assert lib["torch_cxx11_abi"] is False  # the old-ABI libc10.so of the tree
    assert lib["symbols"]["torch"]["missing_count"] == 0 and lib["symbols"]["torch"]["checked"] >= 1
    assert lib["symbols"]["cann"]["missing_count"] == 0
    assert [s for s in lib["stack"] if s["error"] or s["unresolved"]] == []


def test_built_files_are_aarch64(arm_world):
    for name in ("sh", "libascendcl", "npu_smi", "libc10", "libtorch_npu", "torch_npu_C"):
        info = read_elf(str(arm_world[name]))
        assert (info.error, info.machine, info.bits) == (None, "aarch64", 64), name
    assert read_elf(str(arm_world["torch_npu_C"])).rpath == ["$ORIGIN/lib"]
    acl = read_elf(str(arm_world["libascendcl"]))
    assert (acl.soname, acl.needed, acl.runpath) == (
        "libascendcl.so",
        ["libascend_hal.so", "libc_sec.so", "libc.so.6"],
        ["$ORIGIN"],
    )
    npu = read_elf(str(arm_world["libtorch_npu"]))
    assert npu.soname == "libtorch_npu.so" and npu.rpath == ["$ORIGIN/../../torch/lib"]
    assert npu.needed[:3] == ["libc10.so", "libascendcl.so", "libhccl.so"]
    assert npu.version_needs == {"libc.so.6": ["GLIBC_2.17"]}  # aarch64's first glibc version
    assert arm_world["torch_npu_C"].name == "_C.cpython-311-aarch64-linux-gnu.so"


def test_extension_needing_a_library_on_no_path_names_it_and_runpath_origin_resolves(arm_world, tmp_path):
    """A KV-cache transfer engine linking libhccl.so: the copy with RUNPATH $ORIGIN finds its
    libkv_deps.so beside it; the same library built without RUNPATH cannot: one LIB005."""
    scenario = _scenario(arm_world, tmp_path)
    kv = scenario / "root" / SITE / "kv_engine"
    b = arm_world.builder
    dep = b.stub_library(kv / "libkv_deps.so", "libkv_deps.so", ["kv_dep"])
    src = "void HcclCommInitRootInfo(void);\nvoid kv_dep(void);\nvoid kv(void) { HcclCommInitRootInfo(); kv_dep(); }\n"
    b.build(kv / "libkv_transfer.so", src, soname="libkv_transfer.so", needed=["libhccl.so", dep], runpath=["$ORIGIN"])
    b.build(kv / "libkv_plain.so", src, soname="libkv_plain.so", needed=["libhccl.so", dep])
    run = run_check(scenario)
    (f,) = _lib_findings(run)
    assert f["code"] == "LIB005" and f["severity"] == "error"
    assert f["title"] == "libkv_plain.so (kv_engine) cannot load: libkv_deps.so found on no loader path"
    assert "kv_engine/libkv_plain.so links libhccl.so" in f["evidence"]
    assert f["data"]["unresolved"] == ["libkv_deps.so"]
    # libkv_deps.so is on disk beside it: its directory goes on the loader path, or a RUNPATH into the module
    assert f["fix"][0] == (
        "Put the directory of kv_engine's libraries on the loader path: "
        f"export LD_LIBRARY_PATH=/{SITE}/kv_engine${{LD_LIBRARY_PATH:+:${{LD_LIBRARY_PATH}}}}"
    )
    assert f["fix"][2].startswith("or rebuild kv_engine with a RUNPATH naming that directory")
    checks = {Path(c["object"]).name: c for c in run.doc["facts"]["libraries"]["symbols"]["extensions"]}
    assert checks["libkv_transfer.so"]["unresolved"] == []  # $ORIGIN/libkv_deps.so
    assert checks["libkv_transfer.so"]["missing_count"] == 0  # HcclCommInitRootInfo: libhccl.so


def test_driver_library_missing_names_the_driver(arm_world, tmp_path):
    """libascend_hal.so (needed by CANN's libascendcl.so) absent from the driver: LIB001
    owned by the NPU driver, fix: reinstall the driver (not the toolkit)."""
    scenario = _scenario(arm_world, tmp_path)
    (scenario / "root/usr/local/Ascend/driver/lib64/driver/libascend_hal.so").unlink()
    run = run_check(scenario)
    (f,) = _lib_findings(run)
    assert f["code"] == "LIB001"
    assert f["title"] == (
        "libascend_hal.so cannot be loaded: it ships with the NPU driver, but the driver 24.1.rc2 at "
        "/usr/local/Ascend/driver lacks it (an incomplete install)"
    )
    assert "owner: NPU driver" in f["evidence"]
    assert f["fix"][0].startswith("Reinstall the NPU driver on this host")
    assert "op_tiling/lib/linux/aarch64" in next(e for e in f["evidence"] if e.startswith("LD_LIBRARY_PATH="))


def test_npu_smi_needing_a_driver_library_found_nowhere(arm_world, tmp_path):
    scenario = _scenario(arm_world, tmp_path)
    (scenario / "root/usr/local/Ascend/driver/lib64/driver/libdrvdsmi_host.so").unlink()
    run = run_check(scenario)
    (f,) = _lib_findings(run)
    assert f["code"] == "LIB007" and f["severity"] == "warning"
    assert f["title"].startswith("libdrvdsmi_host.so cannot be loaded: it ships with the NPU driver")
    assert "owner: NPU driver" in f["evidence"]
    stack = {Path(o["path"]).name: o for o in run.doc["facts"]["libraries"]["stack"]}
    assert stack["npu-smi"]["unresolved"] == ["libdrvdsmi_host.so"]
    assert stack["npu-smi"]["version_needs"]["libc.so.6"]  # a real aarch64 program's GLIBC needs
    log = "npu-smi: error while loading shared libraries: libdrvdsmi_host.so: cannot open shared object file\n"
    doc = triage_text(log, facts=run.doc["facts"])
    assert {(t["code"], t["by"]) for t in doc["tied"]} == {("LIB007", "the library libdrvdsmi_host.so")}


def test_version_needs_above_the_aarch64_glibc_and_libstdcxx(arm_world, tmp_path):
    """CANN's ccec needing GLIBC_2.99 through libm.so.6 and a Triton build needing
    GLIBCXX_3.4.99 / CXXABI_1.3.99: judged against the root's real aarch64 libm (up to
    GLIBC_2.35) and libstdc++ (GLIBCXX_3.4.30, CXXABI_1.3.13); one LIB002 per library."""
    scenario = _scenario(arm_world, tmp_path)
    root = scenario / "root"
    b = arm_world.builder
    stubs = tmp_path / "stubs"
    libm = b.build(stubs / "libm/libm.so.6", LIBM_STUB_SOURCE, soname="libm.so.6", version_script=LIBM_STUB_MAP)
    cxx = b.build(
        stubs / "cxx/libstdc++.so.6", GLIBCXX_STUB_SOURCE, soname="libstdc++.so.6", version_script=GLIBCXX_STUB_MAP
    )
    b.build(
        root / TOOLKIT / "aarch64-linux/bin/ccec",
        "void npudoctor_libm_2_99(void);\nint main(void) { npudoctor_libm_2_99(); return 0; }\n",
        shared=False,
        needed=[libm],
    )
    b.build(
        root / SITE / "triton/_C/libtriton.so",
        "void npudoctor_glibcxx_3_4_99(void);\nvoid npudoctor_cxxabi_1_3_99(void);\n"
        "void npudoctor_triton_init(void) { npudoctor_glibcxx_3_4_99(); npudoctor_cxxabi_1_3_99(); }\n",
        soname="libtriton.so",
        needed=[cxx],
    )
    run = run_check(scenario)
    found = {f["subject"]: f for f in _lib_findings(run)}
    assert set(found) == {"libm.so.6", "libstdc++.so.6"}
    libm_f = found["libm.so.6"]
    assert libm_f["code"] == "LIB002" and libm_f["severity"] == "error"
    assert libm_f["title"] == "/lib/aarch64-linux-gnu/libm.so.6 lacks GLIBC_2.99 needed by the CANN toolkit's ccec"
    assert "/lib/aarch64-linux-gnu/libm.so.6 provides up to GLIBC_2.35" in libm_f["evidence"]
    assert any("the OS owns /lib/aarch64-linux-gnu/libm.so.6" in line for line in libm_f["fix"])
    cxx_f = found["libstdc++.so.6"]
    assert cxx_f["title"] == (
        "/lib/aarch64-linux-gnu/libstdc++.so.6 lacks CXXABI_1.3.99, GLIBCXX_3.4.99 needed by the triton wheel"
    )
    assert "/lib/aarch64-linux-gnu/libstdc++.so.6 provides up to GLIBCXX_3.4.30" in cxx_f["evidence"]
    log = (
        "/usr/local/Ascend/ascend-toolkit/latest/bin/ccec: /lib/aarch64-linux-gnu/libm.so.6: "
        "version `GLIBC_2.99' not found (required by /usr/local/Ascend/ascend-toolkit/latest/bin/ccec)\n"
    )
    doc = triage_text(log, facts=run.doc["facts"])
    assert {(t["code"], t["by"]) for t in doc["tied"]} == {("LIB002", "the library libm.so")}


def test_extension_built_against_another_torch_npu(arm_world, tmp_path):
    """An aarch64 extension built against a newer torch_npu (c10_npu::NPUCachingAllocator::
    emptyCache, absent from the installed aarch64 libtorch_npu.so): one LIB005."""
    scenario = _scenario(arm_world, tmp_path)
    ext = arm_world.builder.build(
        scenario / "root" / SITE / "npu_ext" / extension_name("_C", "aarch64"),
        EXTENSION_SOURCE,
        lang="c++",
        needed=[arm_world["libtorch_npu_newer"]],
        runpath=["$ORIGIN/../torch_npu/lib"],
        flags=OLD_ABI,
    )
    run = run_check(scenario)
    (f,) = _lib_findings(run)
    assert f["code"] == "LIB005"
    # the provider of every missing name is the installed torch_npu: named with its version
    assert f["title"] == (
        "_C.cpython-311-aarch64-linux-gnu.so (npu_ext) was built against another torch_npu than the installed "
        "torch_npu 2.1.0.post10"
    )
    assert f["evidence"] == [
        f"1 of 4 symbols of npu_ext/{ext.name} are not exported by torch_npu/lib/libtorch_npu.so",
        "undefined: _ZN7c10_npu19NPUCachingAllocator10emptyCacheEb",
        "provider: libtorch_npu.so of torch_npu 2.1.0.post10 (the one import torch_npu loads)",
    ]
    assert f["fix"] == [
        "Rebuild npu_ext against the installed torch_npu 2.1.0.post10 (or from its source tree): "
        "/usr/local/python3.11.13/bin/python3.11 -m pip install npu_ext --no-build-isolation --no-binary npu_ext "
        "--no-deps --force-reinstall",
        "or install the torch_npu release npu_ext was built for (its release notes or requirements name it)",
    ]
    (check,) = run.doc["facts"]["libraries"]["symbols"]["extensions"]
    assert check["unresolved"] == [] and check["links"] == ["libtorch_npu.so"]
    log = "ImportError: npu_ext/_C.so: undefined symbol: _ZN7c10_npu19NPUCachingAllocator10emptyCacheEb\n"
    doc = triage_text(log, facts=run.doc["facts"])
    (group,) = doc["known"]
    assert group["id"] == "undefined-symbol-c10-npu"
    (cause,) = [c for c in group["causes"] if c["findings"] == ["LIB005"]]
    assert cause["status"] == "cause"


def test_custom_op_wheel_shadows_the_toolkits_libopapi(arm_world, tmp_path):
    scenario = _scenario(arm_world, tmp_path)
    site = scenario / "root" / SITE
    stray = site / "cust_opapi" / "lib"
    arm_world.builder.stub_library(stray / "libopapi.so", "libopapi.so", ["aclnnAdd"])
    dist = site / "cust_opapi-1.2.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: cust-opapi\nVersion: 1.2.0\n")
    (dist / "RECORD").write_text("cust_opapi/lib/libopapi.so,,\ncust_opapi-1.2.0.dist-info/RECORD,,\n")
    spec = scenario / "scenario.toml"
    stray_dir = f"/{SITE}/cust_opapi/lib"
    spec.write_text(spec.read_text().replace('LD_LIBRARY_PATH = "', f'LD_LIBRARY_PATH = "{stray_dir}:', 1))
    run = run_check(scenario)
    (f,) = _lib_findings(run)
    assert f["code"] == "LIB008" and f["severity"] == "warning"
    assert f["title"] == f"libopapi.so of the CANN toolkit is shadowed by {stray_dir}/libopapi.so"
    assert any("via LD_LIBRARY_PATH, owner: the cust-opapi 1.2.0 wheel" in line for line in f["evidence"])


def test_a_wrong_architecture_copy_on_the_path_is_skipped_as_ld_so_does(arm_world, tmp_path):
    """An x86_64 libhccl.so first on LD_LIBRARY_PATH: ld.so skips a file of another machine
    and takes the toolkit's aarch64 copy; nothing is missing nor shadowed."""
    scenario = _scenario(arm_world, tmp_path)
    stray = scenario / "root/opt/x86libs"
    _x86(tmp_path).stub_library(stray / "libhccl.so", "libhccl.so", ["HcclCommInitRootInfo"])
    spec = scenario / "scenario.toml"
    spec.write_text(spec.read_text().replace('LD_LIBRARY_PATH = "', 'LD_LIBRARY_PATH = "/opt/x86libs:', 1))
    run = run_check(scenario)
    assert _lib_findings(run) == []
    res = {r["name"]: r for r in run.doc["facts"]["libraries"]["resolution"]}
    assert res["libhccl.so"]["path"] == "/usr/local/Ascend/ascend-toolkit/latest/lib64/libhccl.so"
    assert run.doc["facts"]["libraries"]["stack_shadowed"] == []


def test_x86_64_files_in_an_aarch64_tree_are_one_note(arm_world, tmp_path):
    """An x86_64 library in the toolkit's lib64 and an x86_64 NPU extension module in
    site-packages: one LIB009 note naming both; the extension is not reported as built for
    another torch_npu, nor as needing GLIBC_2.2.5 (x86_64's base version) of the aarch64 libc."""
    scenario = _scenario(arm_world, tmp_path)
    root = scenario / "root"
    x86 = _x86(tmp_path)
    x86.stub_library(root / LIB64 / "libforeign.so", "libforeign.so", ["aclInit"])
    ext = x86.build(
        root / SITE / "npu_x86" / extension_name("_C", "x86_64"),
        EXTENSION_SOURCE,
        lang="c++",
        needed=["libtorch_npu.so"],
    )
    run = run_check(scenario)
    (f,) = _lib_findings(run)
    assert f["code"] == "LIB009" and f["severity"] == "info"
    assert f["title"] == "2 ELF files of the NPU stack could not be read"
    wrong = "wrong architecture: x86_64 64-bit, the loader here is aarch64 64-bit"
    assert f["evidence"] == [
        f"/{SITE}/npu_x86/{ext.name} (extension): {wrong}",
        f"/usr/local/Ascend/ascend-toolkit/latest/lib64/libforeign.so (toolkit lib64): {wrong}",
    ]
    assert f["fix"] == [
        "Reinstall the package that owns them (CANN toolkit, the npu_x86 wheel) if the stack loads them"
    ]
    assert run.doc["facts"]["libraries"]["symbols"]["extensions"] == []


def test_an_x86_64_torch_npu_on_an_aarch64_machine_is_the_wheel_tag_finding(arm_world, tmp_path):
    """torch_npu's x86_64 wheel copied into an aarch64 environment (a venv from another
    machine): the WHEEL tag finding (PY004) says so; the library audit keeps the machine's
    loader (aarch64) and reports none of CANN's aarch64 libraries as missing or foreign."""
    scenario = _scenario(arm_world, tmp_path)
    site = scenario / "root" / SITE
    x86 = _x86(tmp_path)
    (site / "torch_npu" / extension_name("_C", "aarch64")).unlink()
    (site / "torch_npu/lib/libtorch_npu.so").unlink()
    lib = x86.build(
        site / "torch_npu/lib/libtorch_npu.so",
        TORCH_NPU_SOURCE,
        lang="c++",
        soname="libtorch_npu.so",
        needed=["libc10.so", "libascendcl.so", "libhccl.so"],
        rpath=["$ORIGIN/../../torch/lib"],
        flags=OLD_ABI,
    )
    x86.build(
        site / "torch_npu" / extension_name("_C", "x86_64"), "int PyInit__C;\n", needed=[lib], rpath=["$ORIGIN/lib"]
    )
    wheel = site / "torch_npu-2.1.0.post10.dist-info/WHEEL"
    wheel.write_text(wheel.read_text().replace("aarch64", "x86_64"))
    run = run_check(scenario)
    assert _lib_findings(run) == []
    (py,) = [f for f in run.doc["findings"] if f["code"] == "PY004"]
    assert "built for x86_64, this machine is aarch64" in py["title"]
    lib_facts = run.doc["facts"]["libraries"]
    assert lib_facts["errors"] == [
        f"/{SITE}/torch_npu/_C.cpython-311-x86_64-linux-gnu.so: wrong architecture: x86_64 64-bit, "
        "the loader here is aarch64 64-bit: torch_npu's libraries not followed"
    ]
    assert [s for s in lib_facts["stack"] if s["error"]] == []


def test_an_aarch64_library_in_an_x86_64_tree_is_one_note(arm_world, tmp_path):
    """The reverse: an aarch64 libascendcl.so copied into the x86_64 toolkit of scenario k03."""
    k03 = Path(__file__).resolve().parent / "scenarios" / "k03-extension-other-torch-npu"
    scenario = prepare(k03, tmp_path)
    lib64 = scenario / "root/usr/local/Ascend/ascend-toolkit/8.0.0/lib64"
    shutil.copyfile(arm_world["libascendcl"], lib64 / "libacl_arm.so")
    run = run_check(scenario)
    (f,) = [f for f in _lib_findings(run) if f["code"] == "LIB009"]
    assert f["evidence"] == [
        "/usr/local/Ascend/ascend-toolkit/latest/lib64/libacl_arm.so (toolkit lib64): "
        "wrong architecture: aarch64 64-bit, the loader here is x86_64 64-bit"
    ]
    assert {g["code"] for g in _lib_findings(run)} == {"LIB005", "LIB009"}  # k03's own problem + this one


@pytest.mark.parametrize("abi", [0, 1])
def test_c10_abi_of_an_aarch64_libc10(arm_world, tmp_path, abi):
    """torch's C++ ABI from the aarch64 compiler's real mangling of
    ``c10::detail::torchCheckFail(…, std::string const&)``: ``…RKSs`` with
    ``-D_GLIBCXX_USE_CXX11_ABI=0``, ``…RKNSt7__cxx1112basic_string…`` with ``=1``; the
    whole check reads it from the tree's torch/lib/libc10.so."""
    from builders.elfbuild import C10_SOURCE

    scenario = _scenario(arm_world, tmp_path)
    c10 = scenario / "root" / SITE / "torch/lib/libc10.so"
    arm_world.builder.build(c10, C10_SOURCE, lang="c++", soname="libc10.so", flags=[f"-D_GLIBCXX_USE_CXX11_ABI={abi}"])
    assert read_elf(str(c10)).machine == "aarch64"
    assert torch_cxx11_abi(c10.read_bytes()) == (bool(abi), TORCH_CHECK_FAIL[abi])
    run = run_check(scenario)
    lib = run.doc["facts"]["libraries"]
    assert lib["torch_cxx11_abi"] is bool(abi)
    assert lib["abi_source"] == f"/{SITE}/torch/lib/libc10.so"
    # torch_npu of the tree is an old-ABI build: against a C++11 libc10 its torchCheckFail is missing
    if abi:
        (f,) = _lib_findings(run)
        assert f["code"] == "LIB003"
        assert f"undefined: {TORCH_CHECK_FAIL[0]}" in f["evidence"]
    else:
        assert _lib_findings(run) == []


# --------------------------------------------------------------------------- ld.so.cache
LDCONFIG = shutil.which("ldconfig") or ("/sbin/ldconfig" if Path("/sbin/ldconfig").exists() else None)
DRIVER_DIRS = (
    "/usr/local/Ascend/driver/lib64",
    "/usr/local/Ascend/driver/lib64/common",
    "/usr/local/Ascend/driver/lib64/driver",
)
#: glibc sysdeps/generic/ldconfig.h: FLAG_ELF_LIBC6 | FLAG_X8664_LIB64 and | FLAG_AARCH64_LIB64
X8664_LIBC6, AARCH64_LIBC6 = 0x0303, 0x0A03


def _driver_cache(arm_world, tmp_path, flags: int) -> bytes:
    """The ld.so.cache ``ldconfig -r`` writes for the driver's directories listed in
    ld.so.conf.d, with every entry's architecture flags set to ``flags``.

    This machine's ldconfig indexes only x86_64 files, so it runs on x86_64 copies of the
    driver's libraries (same names, same sonames); an aarch64 ldconfig writes the same
    table with FLAG_AARCH64_LIB64 (0x0a00) in place of FLAG_X8664_LIB64 (0x0300)."""
    import struct

    if LDCONFIG is None:
        pytest.skip("ldconfig not available")
    x86 = _x86(tmp_path)
    root = tmp_path / "ldconfig-root"
    for name in ("libascend_hal.so", "libdrvdsmi_host.so", "libc_sec.so"):
        sub = "common" if name == "libc_sec.so" else "driver"
        x86.stub_library(root / f"usr/local/Ascend/driver/lib64/{sub}/{name}", name, ["f"])
    conf = root / "etc/ld.so.conf"
    (conf.parent / "ld.so.conf.d").mkdir(parents=True)
    conf.write_text("include /etc/ld.so.conf.d/*.conf\n")
    (conf.parent / "ld.so.conf.d/ascend.conf").write_text("\n".join(DRIVER_DIRS) + "\n")
    proc = subprocess.run(
        [LDCONFIG, "-X", "-r", str(root), "-C", "/etc/ld.so.cache", "-f", "/etc/ld.so.conf"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    cache = root / "etc/ld.so.cache"
    if not cache.exists():
        pytest.skip(f"ldconfig -r did not write a cache: {proc.stderr[-300:]}")
    data = bytearray(cache.read_bytes())
    assert data.startswith(NEW_MAGIC), "glibc >= 2.32 writes the new format only"
    (count,) = struct.unpack_from("<I", data, 20)
    for i in range(count):
        off = 48 + 24 * i
        (old,) = struct.unpack_from("<i", data, off)
        assert old == X8664_LIBC6
        struct.pack_into("<i", data, off, flags)
    return bytes(data)


@pytest.mark.parametrize("flags", [AARCH64_LIBC6, X8664_LIBC6])
def test_driver_directories_through_ld_so_cache_of_aarch64_flavour(arm_world, tmp_path, flags):
    """The driver's directories in /etc/ld.so.conf.d + ``ldconfig`` instead of
    LD_LIBRARY_PATH (LIB001's other fix): an aarch64 cache serves libascend_hal.so; a cache
    whose entries are x86-64 ones (an image's cache written on another machine) serves
    nothing to the aarch64 loader: LIB001 names the driver."""
    scenario = _scenario(arm_world, tmp_path)
    root = scenario / "root"
    (root / "etc/ld.so.conf.d").mkdir(parents=True)
    (root / "etc/ld.so.conf").write_text("include /etc/ld.so.conf.d/*.conf\n")
    (root / "etc/ld.so.conf.d/ascend.conf").write_text("\n".join(DRIVER_DIRS) + "\n")
    (root / "etc/ld.so.cache").write_bytes(_driver_cache(arm_world, tmp_path, flags))
    spec = scenario / "scenario.toml"
    text = spec.read_text()
    for d in DRIVER_DIRS:
        text = text.replace(f":{d}", "")
    spec.write_text(text)
    run = run_check(scenario)
    lib = run.doc["facts"]["libraries"]
    assert lib["loader"]["cache"] == {"path": "/etc/ld.so.cache", "format": "new", "entries": 3, "error": None}
    assert not any("/driver/" in d for d in lib["loader"]["ld_library_path"])
    res = {r["name"]: r for r in lib["resolution"]}
    if flags == AARCH64_LIBC6:
        assert res["libascend_hal.so"]["via"] == "ld.so.cache"
        assert res["libascend_hal.so"]["path"] == "/usr/local/Ascend/driver/lib64/driver/libascend_hal.so"
        assert res["libc_sec.so"]["via"] == "ld.so.cache"
        assert _lib_findings(run) == []
    else:
        assert res["libascend_hal.so"]["status"] == "missing"
        (f,) = _lib_findings(run)
        assert f["code"] == "LIB001"
        assert f["title"] == "libascend_hal.so, libc_sec.so are in the NPU driver but not on the loader path"


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["old", "new"])
def test_real_aarch64_libc10_in_the_tree(arm_world, real_c10, tmp_path, kind):
    """The real aarch64 libc10.so of PyPI's torch 2.5.1 (old ABI; NEEDED
    ld-linux-aarch64.so.1, RPATH $ORIGIN) and 2.6.0 (C++11 ABI) in the tree: the ABI is read
    from c10's own std::string mangling; their symbol versions (GLIBC_2.17,
    GLIBCXX_3.4.19 / 3.4.22) fit the root's aarch64 glibc 2.36 and GCC 12 libstdc++."""
    scenario = _scenario(arm_world, tmp_path)
    shutil.copyfile(real_c10[kind], scenario / "root" / SITE / "torch/lib/libc10.so")
    run = run_check(scenario)
    lib = run.doc["facts"]["libraries"]
    assert lib["torch_cxx11_abi"] is (kind == "new")
    (rec,) = [s for s in lib["stack"] if s["path"].endswith("/torch/lib/libc10.so")]
    cxx = "GLIBCXX_3.4.19" if kind == "old" else "GLIBCXX_3.4.22"
    assert rec["version_needs"]["libc.so.6"] == ["GLIBC_2.17"]
    assert cxx in rec["version_needs"]["libstdc++.so.6"]
    assert "LIB002" not in {f["code"] for f in _lib_findings(run)}
    # the tree's torch_npu is an old-ABI build: only the C++11 libc10 lacks its torchCheckFail
    assert [f["code"] for f in _lib_findings(run)] == ([] if kind == "old" else ["LIB003"])


def test_op_tiling_directory_of_aarch64_is_walked(arm_world, tmp_path):
    """set_env.sh puts opp/.../op_tiling/lib/linux/$(arch) on LD_LIBRARY_PATH: on aarch64
    its libraries are audited (a library there needing one found nowhere: LIB007)."""
    scenario = _scenario(arm_world, tmp_path)
    tiling = scenario / "root" / TOOLKIT / "opp/built-in/op_impl/ai_core/tbe/op_tiling/lib/linux/aarch64"
    arm_world.builder.build(
        tiling / "liboptiling.so",
        "void npudoctor_gone(void);\nvoid f(void) { npudoctor_gone(); }\n",
        soname="liboptiling.so",
        needed=["libnpudoctor_gone.so"],
    )
    run = run_check(scenario)
    (f,) = _lib_findings(run)
    assert f["code"] == "LIB007"
    (line,) = [e for e in f["evidence"] if e.startswith("libnpudoctor_gone.so needed by ")]
    assert "/op_tiling/lib/linux/aarch64/liboptiling.so" in line
    where = {Path(o["path"]).name: o["where"] for o in run.doc["facts"]["libraries"]["stack"]}
    assert where["liboptiling.so"] == "toolkit opp"


def test_extension_needing_atb_symbols_is_told_the_aarch64_nnal_package(arm_world, tmp_path):
    """An operator library needing an ATB function the installed NNAL's libatb.so lacks:
    the NNAL package named in the fix is the aarch64 one of the toolkit's CANN 8.0.0."""
    scenario = _scenario(arm_world, tmp_path)
    root = scenario / "root"
    b = arm_world.builder
    atb_lib = "usr/local/Ascend/nnal/atb/8.0.0/atb/cxx_abi_0/lib"
    b.build(
        root / atb_lib / "libatb.so",
        "namespace atb { int CreateContext(void** ctx) { (void)ctx; return 0; } }\n",
        lang="c++",
        soname="libatb.so",
        flags=OLD_ABI,
    )
    b.build(
        root / SITE / "atb_ops" / "libatb_ops.so",
        "namespace atb { int CreateContext(void** ctx); int CreateGraphOperation(int id, void** op); }\n"
        'extern "C" int run(void) { void* c; void* o; atb::CreateContext(&c); return atb::CreateGraphOperation(0, &o); }\n',
        lang="c++",
        soname="libatb_ops.so",
        needed=["libatb.so"],
        flags=OLD_ABI,
    )
    spec = scenario / "scenario.toml"
    spec.write_text(spec.read_text().replace('LD_LIBRARY_PATH = "', f'LD_LIBRARY_PATH = "/{atb_lib}:', 1))
    run = run_check(scenario)
    (f,) = _lib_findings(run)
    assert f["code"] == "LIB005" and "atb_ops" in f["title"]
    assert "undefined: _ZN3atb20CreateGraphOperationEiPPv" in f["evidence"]
    (nnal,) = [line for line in f["fix"] if "Ascend-cann-nnal_" in line]
    assert "Ascend-cann-nnal_8.0.0_linux-aarch64.run --install" in nnal
