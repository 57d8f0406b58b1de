"""Third-party NPU extensions in site-packages (issue 14): every .so that links
libtorch_npu / libascendcl / libhccl / libatb / libopapi is checked as it would load after
``import torch_npu``: unresolved DT_NEEDED entries and undefined torch_npu / CANN symbols
give one LIB005 per extension, naming it and the fix (rebuild/reinstall against the
installed torch_npu).  Real ELF files: the scenario k03 plus extensions built here."""

from __future__ import annotations

from pathlib import Path

from builders.elfbuild import EXTENSION_SOURCE, elf_world_fixture, extension_name  # noqa: F401  (session fixture elf_world)
from scenario_runner import prepare, run_check

SCENARIO = Path(__file__).resolve().parent / "scenarios" / "k03-extension-other-torch-npu"
SITE = "usr/local/python3.11.13/lib/python3.11/site-packages"


def test_one_finding_per_extension_for_unresolved_needs_and_foreign_symbols(elf_world, tmp_path):
    scenario = prepare(SCENARIO, tmp_path)
    site = scenario / "root" / SITE
    b = elf_world.builder
    # links libhccl.so (found through LD_LIBRARY_PATH) and a library shipped nowhere
    kv = b.build(
        site / "kv_engine" / "libkv_transfer.so",
        "void HcclCommInitRootInfo(void);\nvoid kv_dep(void);\nvoid kv(void) { HcclCommInitRootInfo(); kv_dep(); }\n",
        soname="libkv_transfer.so",
        needed=["libhccl.so", "libkv_deps.so"],
        runpath=["$ORIGIN"],
    )
    # the extension of the ELF fixtures: linked against a newer torch_npu (emptyCache)
    ext = b.build(
        site / "npu_ext2" / extension_name("_C"),
        EXTENSION_SOURCE,
        lang="c++",
        needed=[elf_world["libtorch_npu_newer"]],
        runpath=["$ORIGIN/../torch_npu/lib"],
    )
    # an unrelated .so: not an NPU extension, never reported
    b.stub_library(site / "plain_pkg" / "libplain.so", "libplain.so", ["plain"], needed=["libnot_there.so"])
    run = run_check(scenario)
    assert run.doc is not None, run.stderr
    checks = {Path(c["object"]).parent.name: c for c in run.doc["facts"]["libraries"]["symbols"]["extensions"]}
    assert set(checks) == {"npu_ext_ops", "kv_engine", "npu_ext2"}
    assert checks["kv_engine"]["links"] == ["libhccl.so"]
    assert checks["kv_engine"]["unresolved"] == ["libkv_deps.so"]
    assert checks["kv_engine"]["missing_count"] == 0  # HcclCommInitRootInfo: libhccl.so exports it
    assert checks["npu_ext2"]["unresolved"] == []  # libtorch_npu.so: loaded by import torch_npu
    assert "_ZN7c10_npu19NPUCachingAllocator10emptyCacheEb" in checks["npu_ext2"]["missing"]
    found = [f for f in run.doc["findings"] if f["code"] == "LIB005"]
    by_pkg = {}
    for f in found:
        by_pkg.setdefault(f["subject"].split("/site-packages/")[1].split("/")[0], []).append(f)
    assert {k: len(v) for k, v in by_pkg.items()} == {"npu_ext_ops": 1, "kv_engine": 1, "npu_ext2": 1}
    (kvf,) = by_pkg["kv_engine"]
    assert kvf["title"] == f"{kv.name} (kv_engine) cannot load: libkv_deps.so found on no loader path"
    assert any(line.startswith("Rebuild kv_engine against the installed torch_npu") for line in kvf["fix"])
    (extf,) = by_pkg["npu_ext2"]
    assert ext.name in extf["title"] and "another torch_npu" in extf["title"]
    assert any("_ZN7c10_npu19NPUCachingAllocator10emptyCacheEb" in line for line in extf["evidence"])


def test_unresolved_library_on_disk_names_the_directory_to_add(elf_world, tmp_path):
    scenario = prepare(SCENARIO, tmp_path)
    root = scenario / "root"
    b = elf_world.builder
    b.build(
        root / SITE / "kv_engine" / "libkv_transfer.so",
        "void HcclCommInitRootInfo(void);\nvoid kv_dep(void);\nvoid kv(void) { HcclCommInitRootInfo(); kv_dep(); }\n",
        soname="libkv_transfer.so",
        needed=["libhccl.so", "libkv_deps.so"],
        runpath=["$ORIGIN"],
    )
    b.stub_library(root / "usr/local/lib/kv/libkv_deps.so", "libkv_deps.so", ["kv_dep"])
    run = run_check(scenario)
    assert run.doc is not None, run.stderr
    (f,) = [g for g in run.doc["findings"] if g["code"] == "LIB005" and "/kv_engine/" in g["subject"]]
    assert "libkv_deps.so is on disk at /usr/local/lib/kv/libkv_deps.so, a directory on no loader path" in f["evidence"]
    assert f["fix"] == [
        "Put the directory of kv_engine's libraries on the loader path: "
        "export LD_LIBRARY_PATH=/usr/local/lib/kv${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}",
        "or, for every process (as root): sh -c 'echo /usr/local/lib/kv > /etc/ld.so.conf.d/kv_engine.conf && ldconfig'",
        "or rebuild kv_engine with a RUNPATH naming that directory ($ORIGIN-relative), so that no loader path is needed",
    ]


def test_extension_pinning_its_torch_npu_names_the_provider_and_the_two_ways_out(elf_world, tmp_path):
    scenario = prepare(SCENARIO, tmp_path)
    site = scenario / "root" / SITE
    elf_world.builder.build(
        site / "npu_ext2" / extension_name("_C"),
        EXTENSION_SOURCE,
        lang="c++",
        needed=[elf_world["libtorch_npu_newer"]],
        runpath=["$ORIGIN/../torch_npu/lib"],
    )
    info = site / "npu_ext2-1.0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: npu_ext2\nVersion: 1.0.0\nRequires-Dist: torch-npu==2.1.0.post12\n"
    )
    run = run_check(scenario)
    assert run.doc is not None, run.stderr
    (f,) = [g for g in run.doc["findings"] if g["code"] == "LIB005" and "/npu_ext2/" in g["subject"]]
    assert f["title"] == (
        f"{extension_name('_C')} (npu_ext2) was built against another torch_npu than the installed torch_npu 2.1.0.post10"
    )
    assert "provider: libtorch_npu.so of torch_npu 2.1.0.post10 (the one import torch_npu loads)" in f["evidence"]
    assert f["fix"] == [
        "Rebuild npu_ext2 against the installed torch_npu 2.1.0.post10 (or from its source tree): "
        "/usr/local/python3.11.13/bin/python3.11 -m pip install npu_ext2 --no-build-isolation --no-binary npu_ext2 "
        "--no-deps --force-reinstall",
        "or install the torch_npu npu_ext2 was built for (its Requires-Dist: torch-npu==2.1.0.post12): "
        "/usr/local/python3.11.13/bin/python3.11 -m pip install torch-npu==2.1.0.post12",
    ]
