"""The library audit of the whole NPU stack (issue 14): the toolkit's programs and libraries,
the driver's npu-smi, NNAL, and every extension module of the interpreter, over real ELF
files built here (tests/builders/elfbuild.py) and this machine's own libc/libm/libstdc++ copied into
the scenario root.  Scenario k03 (torch_npu 2.1.0 on CANN 8.0.0, a real-ELF stack) carries
the rest; each test adds exactly one problem."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from builders.elfbuild import elf_world_fixture  # noqa: F401  (session fixture elf_world)
from scenario_runner import prepare, run_check

from npudoctor.probes._elfcache import ElfCache, default_path
from npudoctor.triage import triage_text

SCENARIO = Path(__file__).resolve().parent / "scenarios" / "k03-extension-other-torch-npu"
SITE = "usr/local/python3.11.13/lib/python3.11/site-packages"
TOOLKIT = "usr/local/Ascend/ascend-toolkit/8.0.0"
SYSTEM = Path("/lib/x86_64-linux-gnu")


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NPUDOCTOR_CACHE_DIR", str(tmp_path / "cache"))


def _lib_findings(run):
    assert run.doc is not None, run.stderr
    return [f for f in run.doc["findings"] if f["code"].startswith("LIB")]


def _os_libs(root: Path, *names: str) -> None:
    """Copy this machine's real libraries into the root's OS library directory."""
    dest = root / "usr/lib/x86_64-linux-gnu"
    dest.mkdir(parents=True, exist_ok=True)
    for name in names:
        src = SYSTEM / name
        if not src.exists():
            pytest.skip(f"{src} not on this machine")
        shutil.copy2(os.path.realpath(src), dest / name)


def test_toolkit_program_and_extension_module_need_versions_the_os_lacks(elf_world, tmp_path):
    scenario = prepare(SCENARIO, tmp_path)
    root = scenario / "root"
    b = elf_world.builder
    _os_libs(root, "libc.so.6", "libm.so.6", "libstdc++.so.6")
    # CANN's compiler program needing GLIBC_2.99 through libm (issue: GLIBC_2.29 on a 2.28 OS)
    b.build(
        root / TOOLKIT / "bin" / "ccec",
        "void npudoctor_libm_2_99(void);\nint main(void) { npudoctor_libm_2_99(); return 0; }\n",
        shared=False,
        needed=[elf_world["libm_stub"]],
    )
    # a Triton build needing GLIBCXX_3.4.99 / CXXABI_1.3.99 (no NPU link: checked as an extension module)
    b.build(
        root / SITE / "triton" / "_C" / "libtriton.so",
        "void npudoctor_glibcxx_3_4_99(void);\nvoid npudoctor_cxxabi_1_3_99(void);\n"
        "void npudoctor_triton_init(void) { npudoctor_glibcxx_3_4_99(); npudoctor_cxxabi_1_3_99(); }\n",
        soname="libtriton.so",
        needed=[elf_world["glibcxx_stub"]],
    )
    run = run_check(scenario)
    found = {f["subject"]: f for f in _lib_findings(run) if f["code"] == "LIB002"}
    assert set(found) == {"libm.so.6", "libstdc++.so.6"}
    libm = found["libm.so.6"]
    assert libm["severity"] == "error"
    assert libm["title"] == "/usr/lib/x86_64-linux-gnu/libm.so.6 lacks GLIBC_2.99 needed by the CANN toolkit's ccec"
    assert any(line.endswith("ccec needs GLIBC_2.99 from libm.so.6") for line in libm["evidence"])
    assert any("glibc provides GLIBC_2.99" in line and "the OS owns" in line for line in libm["fix"])
    cxx = found["libstdc++.so.6"]
    assert cxx["title"].startswith("/usr/lib/x86_64-linux-gnu/libstdc++.so.6 lacks ")
    assert "CXXABI_1.3.99" in cxx["title"] and "GLIBCXX_3.4.99" in cxx["title"]
    assert cxx["title"].endswith("needed by the triton wheel")
    # triage: the loader's message names libm.so.6: tied to the LIB002 finding about it
    log = (
        f"/{TOOLKIT}/bin/ccec: /usr/lib/x86_64-linux-gnu/libm.so.6: version `GLIBC_2.99' not found "
        f"(required by /{TOOLKIT}/bin/ccec)\n"
    )
    doc = triage_text(log, facts=run.doc["facts"])
    (group,) = doc["known"]
    assert group["id"] == "loader-version-not-found"
    assert any(c["status"] == "cause" and c["findings"] == ["LIB002"] for c in group["causes"])
    assert {(t["code"], t["by"]) for t in doc["tied"]} == {("LIB002", "the library libm.so")}
    stack = {Path(o["path"]).name: o for o in run.doc["facts"]["libraries"]["stack"]}
    assert stack["ccec"]["where"] == "toolkit bin"
    assert stack["ccec"]["version_needs"]["libm.so.6"] == ["GLIBC_2.99"]
    assert stack["libtriton.so"]["where"] == "extension"


def test_npu_smi_needing_a_driver_library_found_nowhere_is_one_finding(elf_world, tmp_path):
    scenario = prepare(SCENARIO, tmp_path)
    root = scenario / "root"
    b = elf_world.builder
    # npu-smi of the driver needs libc_sec.so (present) and libdrvdsmi_host.so (absent)
    b.build(
        root / "usr/local/Ascend/driver/tools/npu-smi",
        "void dsmi_get_device_count(void);\nint main(void) { dsmi_get_device_count(); return 0; }\n",
        shared=False,
        needed=[elf_world["libc_sec"], elf_world["libdrvdsmi_host"]],
    )
    # a second driver program missing the same library: still one finding
    b.build(
        root / "usr/local/Ascend/driver/lib64/driver/libdsmi_user.so",
        "void dsmi_get_device_count(void);\nvoid u(void) { dsmi_get_device_count(); }\n",
        soname="libdsmi_user.so",
        needed=[elf_world["libdrvdsmi_host"]],
    )
    run = run_check(scenario)
    (f,) = [f for f in _lib_findings(run) if f["code"] == "LIB007"]
    assert f["severity"] == "warning"
    assert f["title"] == (
        "libdrvdsmi_host.so cannot be loaded: it ships with the NPU driver, but the driver 24.1.rc2 at "
        "/usr/local/Ascend/driver lacks it (an incomplete install)"
    )
    assert f["fix"][0] == (
        "Reinstall the NPU driver on this host (the Ascend HDK npu-driver .run package of version 24.1.rc2): "
        "its lib64 lacks libdrvdsmi_host.so"
    )
    assert any("npu-smi" in line and "libdsmi_user.so" in line for line in f["evidence"])
    assert "owner: NPU driver" in f["evidence"]
    # the evidence prints the LD_LIBRARY_PATH the stack was resolved with (the set-up one)
    set_up = run.doc["facts"]["libraries"]["stack_ld_library_path"]
    assert "/usr/local/Ascend/driver/lib64/driver" in set_up
    assert "LD_LIBRARY_PATH as set_env.sh sets it: " + ":".join(set_up) in f["evidence"]
    assert "LIB001" not in {g["code"] for g in run.doc["findings"]}
    stack = {Path(o["path"]).name: o for o in run.doc["facts"]["libraries"]["stack"]}
    assert stack["npu-smi"]["unresolved"] == ["libdrvdsmi_host.so"]  # libc_sec.so: on the path
    # triage: the loader's message names the library: tied to this finding
    log = (
        "npu-smi: error while loading shared libraries: libdrvdsmi_host.so: "
        "cannot open shared object file: No such file or directory\n"
    )
    doc = triage_text(log, facts=run.doc["facts"])
    (group,) = doc["known"]
    assert group["id"] == "driver-library-not-found"
    assert {(t["code"], t["by"]) for t in doc["tied"]} == {("LIB007", "the library libdrvdsmi_host.so")}


def test_a_stray_copy_first_on_ld_library_path_shadows_the_toolkit_library(tmp_path):
    scenario = prepare(SCENARIO, tmp_path)
    root = scenario / "root"
    stray = root / SITE / "custom_ops" / "lib"
    stray.mkdir(parents=True)
    shutil.copy2(root / TOOLKIT / "lib64" / "libhccl.so", stray / "libhccl.so")
    spec = scenario / "scenario.toml"
    text = spec.read_text()
    stray_dir = f"/{SITE}/custom_ops/lib"
    spec.write_text(text.replace('LD_LIBRARY_PATH = "', f'LD_LIBRARY_PATH = "{stray_dir}:', 1))
    run = run_check(scenario)
    (f,) = [f for f in _lib_findings(run) if f["code"] == "LIB008"]
    assert f["title"] == f"libhccl.so of the CANN toolkit is shadowed by {stray_dir}/libhccl.so"
    assert f["severity"] == "warning"
    assert any("via LD_LIBRARY_PATH, owner: the custom_ops wheel" in line for line in f["evidence"])
    (take,) = [line for line in f["fix"] if "export LD_LIBRARY_PATH=" in line]
    lead, export = take.split("export ", 1)
    assert lead == f"Take {stray_dir} off the loader path: "
    assert stray_dir not in export  # the rest of the user's value, in order
    assert export.startswith("LD_LIBRARY_PATH=/usr/local/Ascend/ascend-toolkit/latest/tools/aml/lib64:")
    assert any(line.startswith(f"or delete the stray copy {stray_dir}/libhccl.so") for line in f["fix"])
    log = "ImportError: libtorch_npu.so: undefined symbol: HcclCommInitRootInfoConfig\n"
    doc = triage_text(log, facts=run.doc["facts"])
    (group,) = doc["known"]
    assert group["id"] == "undefined-symbol-cann"
    (stray_cause,) = [c for c in group["causes"] if c["findings"] == ["LIB008"]]
    assert stray_cause["status"] == "cause"
    assert stray_cause["here"] == f"another copy of a CANN library is loaded first here: {f['title']}"


def test_no_shadow_finding_without_a_stray_copy(tmp_path):
    run = run_check(prepare(SCENARIO, tmp_path))
    codes = {f["code"] for f in _lib_findings(run)}
    assert codes == {"LIB005"}  # the scenario's one problem


def test_truncated_and_foreign_stack_files_are_one_note(elf_world, tmp_path):
    if "i686_acl" not in elf_world.files:
        pytest.skip("no i686 build on this machine")
    scenario = prepare(SCENARIO, tmp_path)
    lib64 = scenario / "root" / TOOLKIT / "lib64"
    data = (lib64 / "libgraph.so").read_bytes()
    (lib64 / "libtrunc.so").write_bytes(data[:200])
    shutil.copy2(elf_world["i686_acl"], lib64 / "libforeign.so")  # a 32-bit i386 library
    (lib64 / "libnotes.so.txt").write_text("not an ELF file\n")  # not ELF: not loaded, not listed
    run = run_check(scenario)
    (f,) = [f for f in _lib_findings(run) if f["code"] == "LIB009"]
    assert f["severity"] == "info"
    assert f["title"] == "2 ELF files of the NPU stack could not be read"
    text = "\n".join(f["evidence"])
    assert "libtrunc.so (toolkit lib64): corrupt ELF: truncated" in text
    assert "libforeign.so (toolkit lib64): wrong architecture: i686 32-bit, the loader here is x86_64 64-bit" in text
    assert "libnotes" not in text


def test_elf_cache_reuses_by_path_size_and_mtime(elf_world, tmp_path):
    lib = tmp_path / "libhccl.so"
    shutil.copy2(elf_world["libhccl"], lib)
    cache_file = tmp_path / "c" / "elf-v1.json"
    first = ElfCache(str(cache_file))
    info = first.read(str(lib))
    assert (first.hits, first.misses) == (0, 1)
    first.save()
    second = ElfCache(str(cache_file))
    again = second.read(str(lib))
    assert (second.hits, second.misses) == (1, 0)
    assert again.to_dict() == info.to_dict() and again.needed[:1] == ["libascendcl.so"]
    os.utime(lib, ns=(1, 1))  # another mtime: read again
    third = ElfCache(str(cache_file))
    third.read(str(lib))
    assert (third.hits, third.misses) == (0, 1)


@pytest.mark.parametrize("content", [b"", b"{not json", b'{"version": 1, "entries": {"x": 5}}', b"\xff\xfe"])
def test_broken_elf_cache_is_skipped(elf_world, tmp_path, content):
    lib = tmp_path / "libhccl.so"
    shutil.copy2(elf_world["libhccl"], lib)
    cache_file = tmp_path / "elf-v1.json"
    cache_file.write_bytes(content)
    cache = ElfCache(str(cache_file))
    assert cache.read(str(lib)).needed[:1] == ["libascendcl.so"]
    cache.save()
    assert ElfCache(str(cache_file)).read(str(lib)).needed[:1] == ["libascendcl.so"]


def test_elf_cache_can_be_turned_off(monkeypatch, tmp_path):
    monkeypatch.setenv("NPUDOCTOR_CACHE_DIR", str(tmp_path))
    assert default_path() == str(tmp_path / "elf-v1.json")
    monkeypatch.setenv("NPUDOCTOR_ELF_CACHE", "0")
    assert default_path() is None


def test_second_check_reuses_every_parsed_file_and_says_the_same(tmp_path):
    scenario = prepare(SCENARIO, tmp_path)
    first = run_check(scenario)
    second = run_check(scenario)
    assert first.doc is not None and second.doc is not None
    cold = first.doc["facts"]["libraries"]["elf_cache"]
    warm = second.doc["facts"]["libraries"]["elf_cache"]
    assert cold["misses"] > 0
    assert warm == {"hits": cold["hits"] + cold["misses"], "misses": 0}
    strip = ("duration", "elf_cache")
    assert {k: v for k, v in first.doc["facts"]["libraries"].items() if k not in strip} == {
        k: v for k, v in second.doc["facts"]["libraries"].items() if k not in strip
    }
    assert [f["title"] for f in first.doc["findings"]] == [f["title"] for f in second.doc["findings"]]
    assert (tmp_path / "cache" / "elf-v1.json").is_file()


def test_an_npu_smi_that_failed_in_the_loader_is_dev004_alone(elf_world, tmp_path):
    import subprocess

    from npudoctor.context import Options
    from npudoctor.engine import evaluate
    from npudoctor.knowledge.matrix import load_matrix
    from npudoctor.parsers.npu_smi import parse_error
    from npudoctor.snapshot import Snapshot

    scenario = prepare(SCENARIO, tmp_path)
    smi = elf_world.builder.build(
        scenario / "root" / "usr/local/Ascend/driver/tools/npu-smi",
        "void dsmi_get_device_count(void);\nint main(void) { dsmi_get_device_count(); return 0; }\n",
        shared=False,
        needed=[elf_world["libc_sec"], elf_world["libdrvdsmi_host"]],
    )
    run = run_check(scenario)
    assert [f["code"] for f in _lib_findings(run) if f["code"] == "LIB007"] == ["LIB007"]  # not run: the audit's
    # the same binary run on this machine without the driver's directories: the loader refuses it
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    proc = subprocess.run([str(smi), "info"], capture_output=True, text=True, env=env, timeout=60)
    err = parse_error(proc.stdout + proc.stderr)
    assert err is not None and err["cause"] == "loader"
    facts = dict(run.doc["facts"])
    facts["devices"] = {
        "npu_smi": {
            "path": "/usr/local/Ascend/driver/tools/npu-smi",
            "error": err["message"],
            "cause": err["cause"],
            "message": err["message"],
        }
    }
    codes = [f.code for f in evaluate(Snapshot(facts=facts), load_matrix(), Options())]
    assert "DEV004" in codes and "LIB007" not in codes


def test_aclnn_symbols_are_looked_up_in_every_loaded_cann_library(elf_world, tmp_path):
    scenario = prepare(SCENARIO, tmp_path)
    root = scenario / "root"
    b = elf_world.builder
    b.build(root / TOOLKIT / "lib64" / "libopapi.so", "void aclnnAdd(void) {}\n", soname="libopapi.so")
    # an operator package linking libascendcl.so and libopapi.so: aclInit from the one,
    # aclnnAdd from the other (once checked against libascendcl.so alone), and one aclnn
    # function no installed CANN library exports
    b.build(
        root / SITE / "custom_ops" / "libcust_ops.so",
        "void aclInit(void);\nvoid aclnnAdd(void);\nvoid aclnnFusedInferAttentionScoreV9(void);\n"
        "void run(void) { aclInit(); aclnnAdd(); aclnnFusedInferAttentionScoreV9(); }\n",
        soname="libcust_ops.so",
        needed=["libascendcl.so", "libopapi.so"],
    )
    run = run_check(scenario)
    checks = {Path(c["object"]).name: c for c in run.doc["facts"]["libraries"]["symbols"]["extensions"]}
    cust = checks["libcust_ops.so"]
    assert cust["unresolved"] == []
    assert cust["missing"] == ["aclnnFusedInferAttentionScoreV9"]
    assert cust["checked"] == 3
    (f,) = [f for f in _lib_findings(run) if f["code"] == "LIB005" and "custom_ops" in f["title"]]
    assert "undefined: aclnnFusedInferAttentionScoreV9" in f["evidence"]


def test_an_extension_needing_atb_symbols_nnal_lacks_is_told_about_nnal(elf_world, tmp_path):
    scenario = prepare(SCENARIO, tmp_path)
    root = scenario / "root"
    b = elf_world.builder
    atb_lib = "usr/local/Ascend/nnal/atb/8.0.0/atb/cxx_abi_1/lib"
    b.build(
        root / atb_lib / "libatb.so",
        "namespace atb { int CreateContext(void** ctx) { (void)ctx; return 0; } }\n",
        lang="c++",
        soname="libatb.so",
    )
    b.build(
        root / SITE / "atb_ops" / "libatb_ops.so",
        "namespace atb { int CreateContext(void** ctx); int CreateGraphOperation(int id, void** op); }\n"
        'extern "C" int run(void) { void* c; void* o; atb::CreateContext(&c); return atb::CreateGraphOperation(0, &o); }\n',
        lang="c++",
        soname="libatb_ops.so",
        needed=["libatb.so"],
    )
    spec = scenario / "scenario.toml"
    spec.write_text(spec.read_text().replace('LD_LIBRARY_PATH = "', f'LD_LIBRARY_PATH = "/{atb_lib}:', 1))
    run = run_check(scenario)
    (f,) = [f for f in _lib_findings(run) if f["code"] == "LIB005" and "atb_ops" in f["title"]]
    assert "undefined: _ZN3atb20CreateGraphOperationEiPPv" in f["evidence"]
    assert any(line.startswith("or, when it was built for the NNAL of the installed CANN") for line in f["fix"])
    (nnal,) = [line for line in f["fix"] if "Ascend-cann-nnal_8.0.0_linux-" in line]
    assert nnal.endswith(".run --install")  # the toolkit's CANN 8.0.0


def test_toolkit_plugin_and_op_tiling_directories_are_walked(elf_world, tmp_path):
    """set_env.sh puts lib64/plugin/opskernel, lib64/plugin/nnengine and
    opp/.../op_tiling/lib/linux/<arch> on LD_LIBRARY_PATH: their libraries are audited."""
    scenario = prepare(SCENARIO, tmp_path)
    root = scenario / "root"
    b = elf_world.builder
    tiling = root / TOOLKIT / "opp/built-in/op_impl/ai_core/tbe/op_tiling/lib/linux/x86_64"
    for out in (root / TOOLKIT / "lib64/plugin/opskernel/libfe.so", tiling / "liboptiling.so"):
        b.build(
            out,
            "void npudoctor_gone(void);\nvoid f(void) { npudoctor_gone(); }\n",
            soname=out.name,
            needed=["libnpudoctor_gone.so"],
        )
    run = run_check(scenario)
    (f,) = [f for f in _lib_findings(run) if f["code"] == "LIB007"]
    (line,) = [e for e in f["evidence"] if e.startswith("libnpudoctor_gone.so needed by ")]
    assert "/lib64/plugin/opskernel/libfe.so" in line
    assert "/op_tiling/lib/linux/x86_64/liboptiling.so" in line
    where = {Path(o["path"]).name: o["where"] for o in run.doc["facts"]["libraries"]["stack"]}
    assert where["libfe.so"] == "toolkit lib64"
    assert where["liboptiling.so"] == "toolkit opp"


def test_each_loader_line_is_confirmed_by_the_finding_about_its_library(elf_world, tmp_path):
    """Two libraries found nowhere, of two owners (the OS, unknown): two LIB007 findings;
    each 'cannot open shared object file' line is confirmed by the one naming its library."""
    scenario = prepare(SCENARIO, tmp_path)
    root = scenario / "root"
    elf_world.builder.build(
        root / TOOLKIT / "bin" / "npudoctor_tool",
        "int main(void) { return 0; }\n",
        shared=False,
        needed=["libnuma.so.1", "libnpudoctor_gone.so"],
    )
    run = run_check(scenario)
    found = {f["data"]["libraries"][0]: f for f in _lib_findings(run) if f["code"] == "LIB007"}
    assert set(found) == {"libnuma.so.1", "libnpudoctor_gone.so"}
    log = (
        "npudoctor_tool: error while loading shared libraries: libnuma.so.1: cannot open shared object file\n"
        "other_tool: error while loading shared libraries: libnpudoctor_gone.so: cannot open shared object file\n"
    )
    doc = triage_text(log, facts=run.doc["facts"])
    by_lib = {g["captures"]["lib"]: g for g in doc["known"]}
    assert set(by_lib) == {"libnuma.so.1", "libnpudoctor_gone.so"}
    for lib, group in by_lib.items():
        (cause,) = [c for c in group["causes"] if c["findings"] == ["LIB007"]]
        assert cause["status"] == "cause"
        assert cause["evidence"][0] == "LIB007: " + found[lib]["title"]
        other = next(name for name in found if name != lib)
        assert not any(found[other]["title"] in line for line in cause["evidence"])


def test_a_file_of_an_npu_package_linking_no_npu_library_is_checked_for_unresolved_needs(elf_world, tmp_path):
    """torch_npu's torchair executor links libgraph_base.so only (no libtorch_npu.so,
    libascendcl.so, ...): it belongs to torch-npu (RECORD), so its unresolved DT_NEEDED is
    reported; the same file outside any NPU package's RECORD is not judged."""
    scenario = prepare(SCENARIO, tmp_path)
    site = scenario / "root" / SITE
    rel = "torch_npu/dynamo/torchair/core/_npu_graph_executor.cpython-311-x86_64-linux-gnu.so"
    elf_world.builder.build(
        site / rel,
        "void ge_graph_base_init(void);\nvoid f(void) { ge_graph_base_init(); }\n",
        needed=["libgraph_base.so"],
    )
    dist = site / "torch_npu-2.1.0.post10.dist-info"
    (dist / "RECORD").write_text(f"torch_npu/__init__.py,,\n{rel},,\ntorch_npu-2.1.0.post10.dist-info/RECORD,,\n")
    run = run_check(scenario)
    (f,) = [f for f in _lib_findings(run) if f["code"] == "LIB005" and f["data"].get("package") == "torch-npu"]
    assert f["title"] == f"{Path(rel).name} (torch-npu) cannot load: libgraph_base.so found on no loader path"
    assert f"{rel} is installed by torch-npu (its RECORD), part of the NPU stack" in f["evidence"]
    assert "owner: CANN toolkit" in f["evidence"]
    assert f["fix"][0] == (
        "Install the CANN toolkit torch-npu was built for (it needs libgraph_base.so), "
        "or the torch-npu built for the installed one"
    )
    # without the RECORD line the file is nobody's NPU file: no finding about it
    (dist / "RECORD").write_text("torch_npu/__init__.py,,\n")
    run = run_check(scenario)
    assert not [f for f in _lib_findings(run) if f["code"] == "LIB005" and f["data"].get("package") == "torch-npu"]


def test_a_custom_op_wheel_on_ld_library_path_shadows_two_toolkit_libraries_in_one_finding(elf_world, tmp_path):
    """A custom-operator wheel ships its own libopapi.so and libnnopbase.so and puts its lib
    directory first on LD_LIBRARY_PATH: the toolkit's copies (not on torch_npu's own load
    chain here) are shadowed.  One finding for the directory, naming the wheel (RECORD)."""
    scenario = prepare(SCENARIO, tmp_path)
    root = scenario / "root"
    b = elf_world.builder
    site = root / SITE
    stray = site / "cust_opapi" / "lib"
    for name, fn in (("libopapi.so", "aclnnAdd"), ("libnnopbase.so", "aclCreateTensor")):
        b.stub_library(root / TOOLKIT / "lib64" / name, name, [fn, fn + "V2"])
        b.stub_library(stray / name, name, [fn])
    dist = site / "cust_opapi-1.2.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: cust-opapi\nVersion: 1.2.0\n")
    (dist / "RECORD").write_text(
        "cust_opapi/lib/libopapi.so,,\ncust_opapi/lib/libnnopbase.so,,\ncust_opapi-1.2.0.dist-info/RECORD,,\n"
    )
    spec = scenario / "scenario.toml"
    stray_dir = f"/{SITE}/cust_opapi/lib"
    spec.write_text(spec.read_text().replace('LD_LIBRARY_PATH = "', f'LD_LIBRARY_PATH = "{stray_dir}:', 1))
    run = run_check(scenario)
    (f,) = [f for f in _lib_findings(run) if f["code"] == "LIB008"]
    assert f["severity"] == "warning"
    assert f["title"] == f"libnnopbase.so, libopapi.so of the CANN toolkit are shadowed by the copies in {stray_dir}"
    assert f["data"]["libraries"] == ["libnnopbase.so", "libopapi.so"]
    assert (
        f"the loader takes {stray_dir}/libopapi.so (via LD_LIBRARY_PATH, owner: the cust-opapi 1.2.0 wheel "
        "(its RECORD)) for libopapi.so" in f["evidence"]
    )
    # the toolkit as selected (its latest link)
    assert "the CANN toolkit's copy: /usr/local/Ascend/ascend-toolkit/latest/lib64/libopapi.so" in f["evidence"]
    (take,) = [line for line in f["fix"] if "export LD_LIBRARY_PATH=" in line]
    lead, export = take.split("export ", 1)
    assert lead == f"Take {stray_dir} off the loader path: "
    assert stray_dir not in export
    assert export.startswith("LD_LIBRARY_PATH=/usr/local/Ascend/ascend-toolkit/latest/tools/aml/lib64:")
    assert f["fix"][1] == (
        f"or delete the stray copies {stray_dir}/libnnopbase.so {stray_dir}/libopapi.so (cust-opapi installs them) "
        "if nothing else needs them"
    )
    shadowed = {s["name"]: s for s in run.doc["facts"]["libraries"]["stack_shadowed"]}
    assert set(shadowed) == {"libnnopbase.so", "libopapi.so"}
    assert shadowed["libopapi.so"]["taken_by"] == "cust-opapi 1.2.0"
    assert shadowed["libopapi.so"]["via"] == "LD_LIBRARY_PATH"


def test_a_copy_inside_the_same_toolkit_is_not_a_stray_one(elf_world, tmp_path):
    """set_env.sh puts the toolkit's tools/aml/lib64 before its lib64: a library of the same
    name there is the toolkit's own layout, not a shadowing copy."""
    scenario = prepare(SCENARIO, tmp_path)
    root = scenario / "root"
    for d in ("lib64", "tools/aml/lib64"):
        elf_world.builder.stub_library(root / TOOLKIT / d / "libopapi.so", "libopapi.so", ["aclnnAdd"])
    run = run_check(scenario)
    assert run.doc["facts"]["libraries"]["stack_shadowed"] == []
    assert "LIB008" not in {f["code"] for f in run.doc["findings"]}
