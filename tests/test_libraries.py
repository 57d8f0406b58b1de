"""The libraries probe: ld.so search order, ld.so.conf fallback, and the LIB rules,
through `npudoctor check --root` on trees of tiny real ELF files."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from clirun import npudoctor

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures"))
from builders.elf_build import build_so, have_gcc  # noqa: E402

pytestmark = pytest.mark.skipif(not have_gcc(), reason="gcc not available")
SITE = "usr/lib/python3/dist-packages"


def _tree(root: Path, npu_runpath=None, npu_rpath=("$ORIGIN/lib/", "$ORIGIN/")) -> Path:
    site = root / "usr/local/lib/python3.10/dist-packages"
    (site / "torch-2.1.0.dist-info").mkdir(parents=True)
    (site / "torch-2.1.0.dist-info/METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.1.0\n")
    (site / "torch_npu-2.1.0.post10.dist-info").mkdir(parents=True)
    (site / "torch_npu-2.1.0.post10.dist-info/METADATA").write_text(
        "Metadata-Version: 2.1\nName: torch_npu\nVersion: 2.1.0.post10\nRequires-Dist: torch==2.1.0\n"
    )
    build_so(str(site / "torch/lib/libc10.so"), "libc10.so", defines=["_ZN3c105ErrorC1Ev"])
    build_so(
        str(site / "torch_npu/lib/libtorch_npu.so"),
        "libtorch_npu.so",
        needed=["libhccl.so", "libc10.so"],
        rpath=list(npu_rpath) if not npu_runpath else [],
        runpath=list(npu_runpath or []),
        undefined=["_ZN3c105ErrorC1Ev", "HcclCommInitRootInfo"],
    )
    build_so(
        str(site / "torch_npu/_C.cpython-310-x86_64-linux-gnu.so"),
        None,
        needed=["libtorch_npu.so"],
        rpath=["$ORIGIN/lib"],
    )
    return site


def _check(root: Path, env=None) -> dict:
    proc = npudoctor(
        "check", "--root", str(root), "--json", "--no-commands", env={"PATH": "/usr/bin:/bin", **(env or {})}
    )
    return json.loads(proc.stdout)


def _res(doc, name):
    return next(r for r in doc["facts"]["libraries"]["resolution"] if r["name"] == name)


def test_missing_library_found_nowhere_and_torch_counted_loaded(tmp_path):
    _tree(tmp_path)
    doc = _check(tmp_path)
    libs = doc["facts"]["libraries"]
    assert libs["missing"] == ["libhccl.so"]
    assert _res(doc, "libc10.so")["status"] == "torch"
    assert _res(doc, "libtorch_npu.so")["via"] == "RPATH"
    lib001 = [f for f in doc["findings"] if f["code"] == "LIB001"]
    assert len(lib001) == 1 and "no CANN toolkit is installed" in lib001[0]["title"]
    assert any("set_env.sh" in fix for fix in lib001[0]["fix"])
    assert libs["symbols"]["torch"]["missing_count"] == 0 and libs["symbols"]["torch"]["checked"] == 1


def test_ld_library_path_beats_runpath_and_rpath_beats_ld_library_path(tmp_path):
    good = tmp_path / "opt/good"
    build_so(str(good / "libhccl.so"), "libhccl.so", defines=["HcclCommInitRootInfo"])
    other = tmp_path / "opt/other"
    build_so(str(other / "libhccl.so"), "libhccl.so", defines=["HcclCommInitRootInfo"])
    _tree(tmp_path, npu_runpath=["/opt/other"])
    doc = _check(tmp_path, {"LD_LIBRARY_PATH": "/opt/good"})
    assert (_res(doc, "libhccl.so")["path"], _res(doc, "libhccl.so")["via"]) == (
        "/opt/good/libhccl.so",
        "LD_LIBRARY_PATH",
    )
    doc = _check(tmp_path)
    assert (_res(doc, "libhccl.so")["path"], _res(doc, "libhccl.so")["via"]) == ("/opt/other/libhccl.so", "RUNPATH")


def test_rpath_wins_over_ld_library_path(tmp_path):
    site = tmp_path / "usr/local/lib/python3.10/dist-packages"
    build_so(str(site / "torch_npu/lib/libhccl.so"), "libhccl.so", defines=["HcclCommInitRootInfo"])
    build_so(str(tmp_path / "opt/good/libhccl.so"), "libhccl.so")
    _tree(tmp_path)
    doc = _check(tmp_path, {"LD_LIBRARY_PATH": "/opt/good"})
    rec = _res(doc, "libhccl.so")
    assert rec["via"] == "RPATH" and rec["path"].endswith("torch_npu/lib/libhccl.so")


def test_ld_so_conf_used_when_no_cache_and_wrong_arch_skipped(tmp_path):
    _tree(tmp_path)
    (tmp_path / "etc/ld.so.conf.d").mkdir(parents=True)
    (tmp_path / "etc/ld.so.conf").write_text("include /etc/ld.so.conf.d/*.conf\n")
    (tmp_path / "etc/ld.so.conf.d/ascend.conf").write_text("/opt/notelf\n/opt/cann/lib64\n")
    (tmp_path / "opt/notelf").mkdir(parents=True)
    (tmp_path / "opt/notelf/libhccl.so").write_text("not an ELF file\n")
    build_so(str(tmp_path / "opt/cann/lib64/libhccl.so"), "libhccl.so", defines=["HcclCommInitRootInfo"])
    doc = _check(tmp_path)
    rec = _res(doc, "libhccl.so")
    assert (rec["status"], rec["via"], rec["path"]) == ("found", "ld.so.conf", "/opt/cann/lib64/libhccl.so")
    assert doc["facts"]["libraries"]["loader"]["conf_dirs"] == ["/opt/notelf", "/opt/cann/lib64"]
    assert doc["facts"]["libraries"]["symbols"]["cann"]["missing_count"] == 0
    assert not [f for f in doc["findings"] if f["code"].startswith("LIB")]


def test_cann_symbols_missing_in_loaded_hccl(tmp_path):
    build_so(str(tmp_path / "opt/cann/lib64/libhccl.so"), "libhccl.so", defines=["HcclCommDestroy"])
    _tree(tmp_path)
    doc = _check(tmp_path, {"LD_LIBRARY_PATH": "/opt/cann/lib64"})
    lib006 = [f for f in doc["findings"] if f["code"] == "LIB006"]
    assert lib006 and any("HcclCommInitRootInfo" in e for e in lib006[0]["evidence"])


def test_no_torch_npu_means_no_library_facts(tmp_path):
    (tmp_path / "usr/local/lib/python3.10/dist-packages").mkdir(parents=True)
    doc = _check(tmp_path)
    libs = doc["facts"]["libraries"]
    assert libs["torch_npu"] is None and "resolution" not in libs
    assert not [f for f in doc["findings"] if f["area"] == "libraries"]
