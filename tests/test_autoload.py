"""torch's autoloaded device backends (entry points ``torch.backends``): ``import torch``
imports each registered backend itself (torch 2.5+, unless TORCH_DEVICE_BACKEND_AUTOLOAD
says otherwise) and fails on the first whose native modules cannot load (LIB012).  Real
gcc builds on the first-day site of tests/builders/npusite.py, where torch_npu (registered too) fails
only because CANN is absent: its LIB012 folds under LIB001 / CANN001."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any, Dict, List

import pytest
from builders.elfbuild import ElfBuilder, extension_name
from builders.npusite import SITE, first_day
from scenario_runner import run_check

from npudoctor.knowledge.torch_autoload import autoload
from npudoctor.probes._autoload import entry_points

TORCH_NPU_EP = "[console_scripts]\ntorch_npu_run = torch_npu.distributed.run:_main\n\n[torch.backends]\ntorch_npu = torch_npu:_autoload\n"


def _dist(site: Path, name: str, version: str, entry: str) -> None:
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(entry)


def _site(tmp_path: Path, torch: str = "2.7.1") -> Path:
    """The first-day site with torch_npu's entry point and a backend ``torch_foo`` whose
    ``_C`` module links a library shipped nowhere."""
    scenario = first_day(tmp_path)
    site = scenario / "root" / SITE
    (site / "torch_npu-2.7.1.dist-info" / "entry_points.txt").write_text(TORCH_NPU_EP)
    _dist(site, "torch_foo", "0.3.0", "[torch.backends]\nfoo = torch_foo:_autoload\n")
    ElfBuilder(tmp_path / "build", "x86_64").build(
        site / "torch_foo" / extension_name("_C", python="310"),
        "void foo_runtime_init(void);\nint PyInit__C(void) { foo_runtime_init(); return 0; }\n",
        needed=["libfoo_runtime.so"],
    )
    meta = site / "torch-2.7.1.dist-info" / "METADATA"
    meta.write_text(meta.read_text().replace("Version: 2.7.1", f"Version: {torch}"))
    return scenario


def _lib012(doc: Dict[str, Any]) -> List[Dict[str, Any]]:
    return [f for f in doc["findings"] if f["code"] == "LIB012"]


def test_a_backend_that_cannot_load_breaks_import_torch(tmp_path):
    scenario = _site(tmp_path)
    module = scenario / "root" / SITE / "torch_foo" / extension_name("_C", python="310")
    ldd = shutil.which("ldd")
    if ldd is not None:  # glibc's loader agrees: the library is nowhere it looks
        said = subprocess.run([ldd, str(module)], capture_output=True, text=True, timeout=60).stdout
        assert "libfoo_runtime.so => not found" in said
    run = run_check(scenario)
    assert run.doc is not None, run.stderr[-2000:]
    auto = run.doc["facts"]["libraries"]["autoload"]
    assert auto["enabled"] is True and auto["variable"] is None
    assert [(b["dist"], b["name"], b["value"]) for b in auto["backends"]] == [
        ("torch_foo", "foo", "torch_foo:_autoload"),
        ("torch_npu", "torch_npu", "torch_npu:_autoload"),
    ]
    assert [u["name"] for u in auto["backends"][0]["unresolved"]] == ["libfoo_runtime.so"]
    assert {u["name"] for u in auto["backends"][1]["unresolved"]} == {"libascendcl.so", "libhccl.so"}
    # torch stops at the first backend that raises: torch_foo, found before torch_npu
    (f,) = _lib012(run.doc)
    assert f["severity"] == "error" and "because" not in f["data"]
    assert f["title"] == (
        "import torch fails: it loads torch_foo by itself (entry point torch.backends), "
        f"whose {extension_name('_C', python='310')} cannot load libfoo_runtime.so"
    )
    assert (
        "torch will raise: RuntimeError: Failed to load the backend extension: foo. "
        "You can disable extension auto-loading with TORCH_DEVICE_BACKEND_AUTOLOAD=0."
    ) in f["evidence"]
    assert f["fix"][1:] == [
        "or, to import torch without its backends meanwhile: export TORCH_DEVICE_BACKEND_AUTOLOAD=0",
        "or, when torch_foo is not used here: /usr/local/bin/python3.10 -m pip uninstall -y torch_foo",
    ]


def test_torch_npu_backend_without_cann_folds_under_the_missing_libraries(tmp_path):
    scenario = _site(tmp_path)
    site = scenario / "root" / SITE
    (site / "torch_foo-0.3.0.dist-info" / "entry_points.txt").write_text("[console_scripts]\nfoo = torch_foo:main\n")
    run = run_check(scenario)
    assert run.doc is not None, run.stderr[-2000:]
    (f,) = _lib012(run.doc)
    assert f["data"]["dist"] == "torch_npu" and f["data"]["because"] == "LIB001"
    errors = [g["code"] for g in run.doc["findings"] if g["severity"] == "error" and not g["data"].get("because")]
    assert errors == ["CANN001"]


@pytest.mark.parametrize(
    ("torch", "env"),
    [
        ("2.4.1", {}),
        ("2.7.1", {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}),
        ("2.7.1", {"TORCH_DEVICE_BACKEND_AUTOLOAD": "no"}),
    ],
)
def test_no_prediction_when_torch_does_not_autoload(tmp_path, torch, env):
    scenario = _site(tmp_path, torch=torch)
    if env:
        toml = scenario / "scenario.toml"
        toml.write_text(
            toml.read_text().replace(
                '[env]\nHOME = "/root"\n', '[env]\nHOME = "/root"\n' + "".join(f'{k} = "{v}"\n' for k, v in env.items())
            )
        )
    run = run_check(scenario)
    assert run.doc is not None, run.stderr[-2000:]
    assert run.doc["facts"]["libraries"]["autoload"]["enabled"] is False
    assert _lib012(run.doc) == []


def test_entry_points_file_and_the_autoload_switch():
    text = "# comment\n[console_scripts]\nx = a:b\n[torch.backends]\n npu = torch_npu:_autoload \n; other\n[other]\ny = c:d\n"
    assert entry_points(text, "torch.backends") == [("npu", "torch_npu:_autoload")]
    data = autoload()
    assert data.applies("2.5.0", {}) is True
    assert data.applies("2.4.1", {}) is False
    assert data.applies("2.6.0", {"TORCH_DEVICE_BACKEND_AUTOLOAD": "1"}) is True
    assert data.applies("2.6.0", {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}) is False
    assert data.applies("not a version", {}) is None


def test_a_missing_library_on_disk_names_its_directory_and_the_fix_lines(tmp_path):
    scenario = _site(tmp_path)
    root = scenario / "root"
    ElfBuilder(root, "x86_64").stub_library("opt/foo/lib/libfoo_runtime.so", "libfoo_runtime.so", ["foo_runtime_init"])
    run = run_check(scenario)
    assert run.doc is not None, run.stderr[-2000:]
    (f,) = _lib012(run.doc)
    assert (
        "libfoo_runtime.so is on disk at /opt/foo/lib/libfoo_runtime.so, a directory on no loader path" in f["evidence"]
    )
    assert f["fix"][:2] == [
        "Put the directory of torch_foo's libraries on the loader path: "
        "export LD_LIBRARY_PATH=/opt/foo/lib${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}",
        "or, for every process (as root): sh -c 'echo /opt/foo/lib > /etc/ld.so.conf.d/torch_foo.conf && ldconfig'",
    ]


def test_a_missing_library_nowhere_is_not_on_this_machine(tmp_path):
    run = run_check(_site(tmp_path))
    assert run.doc is not None, run.stderr[-2000:]
    (f,) = _lib012(run.doc)
    assert (
        "libfoo_runtime.so: not on this machine (searched site-packages, /usr/local/lib*, /opt, /usr/local/Ascend)"
        in f["evidence"]
    )
    assert f["fix"][0].startswith("libfoo_runtime.so is not on this machine: install what ships it for torch_foo")


def test_a_backend_whose_modules_are_an_lib005_folds_under_it(tmp_path):
    scenario = _site(tmp_path)
    site = scenario / "root" / SITE
    # torch_foo's module links NNAL's libatb.so (an NPU extension, so LIB005's), absent here
    ElfBuilder(tmp_path / "build2", "x86_64").build(
        site / "torch_foo" / extension_name("_C", python="310"),
        "void atbCreateContext(void);\nint PyInit__C(void) { atbCreateContext(); return 0; }\n",
        needed=["libatb.so"],
    )
    run = run_check(scenario)
    assert run.doc is not None, run.stderr[-2000:]
    (f,) = _lib012(run.doc)
    assert f["data"]["dist"] == "torch_foo" and f["data"]["because"] == "LIB005"
    assert f["fix"][0] == "Make libatb.so loadable (the fix of LIB005)"
