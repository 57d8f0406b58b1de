"""The planner's choices for the issue-6 site scenarios, through the CLI (``--json``) and
the API.  Which torch_npu wheels exist comes from the recorded PyPI JSON
(tests/fixtures/plan/pypi-torch-npu.json); every assertion about a wheel is checked
against that file, not hard-coded."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from clirun import npudoctor
from packaging.utils import parse_wheel_filename
from packaging.version import Version

from npudoctor.knowledge.matrix import load_matrix
from npudoctor.plan.files import cann_packages, driver_packages
from npudoctor.plan.resolve import TORCH_CPU_INDEX, Request, Resolver, resolve
from npudoctor.plan.site import site_from_snapshot
from npudoctor.plan.wheels import WheelCatalog, platform_tags
from npudoctor.snapshot import Snapshot

FIX = Path(__file__).resolve().parent / "fixtures" / "plan"
PYPI = FIX / "pypi-torch-npu.json"
A64_PY39 = FIX / "site_aarch64_py3.9_910B3_drv24.1.rc2.json"
X86_PY312 = FIX / "site_x86_64_py3.12_910B4_drv25.5.1.json"
X86_310P = FIX / "site_x86_64_py3.10_310P3_drv24.1.rc2.json"
A64_OLD_DRV = FIX / "site_aarch64_py3.10_910B3_drv23.0.3.json"
A64_PY310 = FIX / "site_aarch64_py3.10_910B3_drv25.5.1.json"


def pypi_wheels(version: str):
    """{(python "3.10", arch)} with a wheel for ``version`` in the recorded PyPI JSON."""
    data = json.loads(PYPI.read_text())
    out = set()
    for f in data["releases"].get(version, []):
        _n, _v, _b, tags = parse_wheel_filename(f["filename"])
        tag = next(iter(tags))
        arch = "x86_64" if tag.platform.endswith("x86_64") else "aarch64"
        out.add((f"{tag.interpreter[2]}.{tag.interpreter[3:]}", arch))
    return out


def plan_cli(*args: str):
    return npudoctor("plan", *args, "--pypi-json", str(PYPI))


def plan_json(site: Path, *args: str):
    proc = plan_cli("--for", str(site), "--json", *args)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


@pytest.fixture(scope="module")
def matrix():
    return load_matrix()


def test_site_facts_read_from_snapshot(matrix):
    # the family comes from the current matrix (a family the snapshot stored is ignored)
    site = site_from_snapshot(Snapshot.load(str(A64_PY39)), matrix=matrix)
    assert (site.arch, site.glibc, site.python, site.python_full) == ("aarch64", "2.34", "3.9", "3.9.18")
    assert (site.driver, site.firmware, site.cann) == ("24.1.rc2", "7.3.0.1.231", "8.0.0")
    assert site.chip.name == "910B3" and site.chip.count == 8 and site.chip.family == "910B"
    assert site.packages["torch-npu"] == "2.1.0.post10"
    assert site.missing == []


def test_live_collect_holds_what_the_planner_needs(tmp_path):
    """`npudoctor collect -o site.json` on this (NPU-less) machine: arch, glibc, Python
    and packages are there; the NPU facts are reported missing, not invented."""
    out = tmp_path / "site.json"
    proc = npudoctor("collect", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    site = site_from_snapshot(Snapshot.load(str(out)))
    import platform

    assert site.arch == platform.machine()
    assert site.python == "{}.{}".format(*sys.version_info[:2])
    assert site.glibc and site.glibc.startswith("2.")
    assert "packaging" in site.packages
    assert "devices.chips" in site.missing and site.chips == []


def test_aarch64_py39_910B3_driver_24_1_rc2_newest(matrix):
    code, doc = plan_json(A64_PY39, "--newest")
    assert code == 0
    plan = doc["plan"]
    assert plan["python"] == "3.9" and plan["arch"] == "aarch64"
    assert ("3.9", "aarch64") in pypi_wheels(plan["torch_npu"])
    assert plan["torch_requirement"] == f"torch=={plan['torch']}" and plan["torch_index"] is None
    assert plan["driver"]["action"] == "keep"
    assert matrix.driver_fit(plan["cann"], "24.1.rc2") in ("paired", "compatible")
    # every newer build passed over is named with its reason
    assert doc["rejected"] and all(r.startswith("not torch_npu ") for r in doc["rejected"])
    assert any("no cp39 wheel" in r for r in doc["rejected"])
    # why this torch_npu, CANN, driver and numpy: each choice is explained
    reasons = "\n".join(plan["reasons"])
    for needle in (f"torch_npu {plan['torch_npu']}:", f"CANN {plan['cann']}:", "driver 24.1.rc2", "numpy"):
        assert needle in reasons
    kinds = [p["kind"] for p in plan["packages"]]
    assert kinds[0] == "toolkit" and "nnal" in kinds
    chipped = [p["filename"] for p in plan["packages"] if p["kind"] in ("kernels", "ops")]
    assert chipped and "910b" in chipped[0] and chipped[0].endswith("_linux-aarch64.run")
    assert "numpy" in plan["numpy"] and plan["numpy"] in plan["requirements"]


def test_no_target_keeps_the_sites_torch_line_and_its_official_pairing(matrix):
    """The site runs torch 2.1.0 + torch_npu 2.1.0.post10 on CANN 8.0.0 (driver 24.1.rc2):
    with no target the plan stays on that line and CANN rather than moving two torch lines
    and a CANN release forward; --newest moves forward."""
    code, doc = plan_json(A64_PY39)
    assert code == 0
    plan = doc["plan"]
    assert (plan["torch"], plan["cann"]) == ("2.1.0", "8.0.0")
    assert plan["torch_npu"].startswith("2.1.0")
    assert matrix.cann_fit(matrix.find_torch_npu(plan["torch_npu"]), "8.0.0") == "paired"
    assert plan["reasons"][0] == (
        "torch 2.1.0 line kept: the site's (torch 2.1.0, torch_npu 2.1.0.post10); --newest plans the newest set"
    )
    assert plan["driver"]["action"] == "keep"
    assert all(r.startswith("not torch_npu 2.1.0") for r in doc["rejected"])
    code, newest = plan_json(A64_PY39, "--newest")
    assert code == 0 and newest["plan"]["torch"] != "2.1.0"


def test_no_target_moves_off_a_torch_line_that_does_not_fit_and_says_why(tmp_path):
    """A site whose torch line (1.5.0) has no wheel on PyPI: the newest set, with the reason."""
    doc = json.loads(A64_PY39.read_text())
    for rec in doc["facts"]["packages"]["installed"]["torch"]:
        rec["version"] = "1.5.0"
    site = tmp_path / "old.json"
    site.write_text(json.dumps(doc))
    code, out = plan_json(site)
    assert code == 0
    first = out["plan"]["reasons"][0]
    assert first.startswith(
        "moving off the site's torch 1.5.0 line (torch 1.5.0, torch_npu 2.1.0.post10): torch_npu 1.5.0"
    )
    assert "has no wheel on PyPI" in first
    _, newest = plan_json(A64_PY39, "--newest")
    assert out["plan"]["torch_npu"] == newest["plan"]["torch_npu"]


def test_x86_64_py312_torch_cpu_pin_follows_the_torch_line():
    code, doc = plan_json(X86_PY312, "--torch", "2.7.1")
    assert code == 0
    plan = doc["plan"]
    assert plan["torch_requirement"] == "torch==2.7.1+cpu" and plan["torch_index"] == TORCH_CPU_INDEX
    assert ("3.12", "x86_64") in pypi_wheels(plan["torch_npu"])
    assert any("+cpu" in r and "PyTorch CPU index" in r for r in plan["reasons"])
    code, doc = plan_json(X86_PY312, "--torch-npu", "2.12.0")
    assert code == 0
    # x86_64 torch always comes from the CPU index: PyPI's x86_64 torch is a CUDA build (issue 16)
    assert doc["plan"]["torch_requirement"] == "torch==2.12.0" and doc["plan"]["torch_index"] == TORCH_CPU_INDEX
    code, doc = plan_json(X86_PY312)  # newest set: +cpu exactly when its torch is below 2.12.0
    assert code == 0
    plan = doc["plan"]
    assert plan["torch_requirement"].endswith("+cpu") == (Version(plan["torch"]) < Version("2.12.0"))


def test_310P3_chip_decides_kernels_and_driver_package_names():
    code, doc = plan_json(X86_310P, "--cann", "8.5.0", "--allow-driver-upgrade")
    assert code == 0
    plan = doc["plan"]
    assert plan["package_chip"] == "310p" and plan["cann"] == "8.5.0"
    names = [p["filename"] for p in plan["packages"]]
    assert "Ascend-cann-310p-ops_8.5.0_linux-x86_64.run" in names
    assert "Ascend-cann-toolkit_8.5.0_linux-x86_64.run" in names
    assert plan["driver"]["action"] == "upgrade"
    driver = [p for p in plan["packages"] if p["kind"] == "driver"][0]
    assert driver["filename"] == f"Ascend-hdk-310p-npu-driver_{driver['version']}_linux-x86-64.run"
    # install order: driver, firmware before toolkit before ops before nnal
    kinds = [p["kind"] for p in plan["packages"]]
    assert kinds == ["driver", "firmware", "toolkit", "ops", "nnal"]


def test_driver_too_old_for_requested_cann_is_refused_with_alternatives():
    proc = plan_cli("--for", str(A64_OLD_DRV), "--cann", "8.5.0")
    assert proc.returncode == 1
    out = proc.stdout
    assert "no install set fits" in out
    assert "23.0.3" in out and "--allow-driver-upgrade" in out and "too-old" in out
    assert "nearest sets that fit" in out and "driver upgrade to" in out
    code, doc = plan_json(A64_OLD_DRV, "--cann", "8.5.0", "--allow-driver-upgrade")
    assert code == 0
    plan = doc["plan"]
    assert plan["driver"]["installed"] == "23.0.3" and plan["driver"]["action"] == "upgrade"
    assert plan["packages"][0]["kind"] == "driver"
    assert plan["packages"][0]["filename"].startswith("Ascend-hdk-910b-npu-driver_")
    assert any("allowed by --allow-driver-upgrade" in r for r in plan["reasons"])


def test_python_312_with_torch_npu_260_names_the_post_release_that_has_it():
    code, doc = plan_json(A64_PY310, "--torch-npu", "2.6.0", "--python", "3.12")
    assert code == 1 and doc["plan"] is None
    assert ("3.12", "aarch64") not in pypi_wheels("2.6.0")
    assert any("no cp312 wheel" in r and "cp39, cp310, cp311" in r for r in doc["reasons"])
    first = doc["alternatives"][0]
    assert first.startswith("torch_npu 2.6.0.post5 ") and "CANN 8.5.0" in first and "cp312" in first
    assert ("3.12", "aarch64") in pypi_wheels("2.6.0.post5")
    assert any("Python 3.11" in a and "--python 3.11" in a for a in doc["alternatives"])


def test_glibc_too_old_for_manylinux_2_28_wheel(matrix):
    site = site_from_snapshot(Snapshot.load(str(X86_PY312)), matrix=matrix)
    site.glibc = "2.17"
    res = resolve(site, Request(torch_npu="2.7.1.post8"), matrix, WheelCatalog.from_pypi_json(str(PYPI)))
    assert not res.ok
    assert any("glibc ≥ 2.28" in r and "2.17" in r for r in res.reasons)
    # the 2.6.0 line's x86_64 wheels are manylinux2014 (REPORT.md §2): the nearest set that fits glibc 2.17
    assert res.alternatives and res.alternatives[0].startswith("torch_npu 2.6.0")
    wheel = WheelCatalog.from_pypi_json(str(PYPI)).wheel(res.alternatives[0].split()[1], "3.12", "x86_64")
    assert wheel is not None and wheel.min_glibc <= (2, 17)


def test_usage_errors_exit_2(tmp_path):
    assert plan_cli().returncode == 2
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    proc = plan_cli("--for", str(bad))
    assert proc.returncode == 2 and "not valid JSON" in proc.stderr
    proc = plan_cli("--for", str(A64_PY39), "--python", "3")
    assert proc.returncode == 2 and "MAJOR.MINOR" in proc.stderr
    proc = plan_cli("--for", str(A64_PY39), "--cann", "banana")
    assert proc.returncode == 2
    proc = plan_cli("--for", str(A64_PY39), "--torch-npu", "9.9.9")
    assert proc.returncode == 1 and "not in the compatibility matrix" in proc.stdout


def test_help_documents_exit_codes():
    proc = npudoctor("plan", "--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "0 a plan was made" in text and "1 no set fits" in text and "2 usage error" in text
    assert "or the bundle cannot install" in text and "--newest" in text
    proc = npudoctor("plan", "verify", "--help")
    assert proc.returncode == 0 and "Exit codes" in proc.stdout


@pytest.mark.parametrize(
    "cann,arch,chip,expected",
    [
        ("8.0.RC2", "aarch64", "910b", "Ascend-cann-kernels-910b_8.0.RC2_linux.run"),
        ("8.0.0", "x86_64", "910b", "Ascend-cann-kernels-910b_8.0.0_linux-x86_64.run"),
        ("8.2.RC1", "aarch64", "A3", "Atlas-A3-cann-kernels_8.2.RC1_linux-aarch64.run"),
        ("8.5.0", "aarch64", "910b", "Ascend-cann-910b-ops_8.5.0_linux-aarch64.run"),
        ("8.5.0.alpha002", "aarch64", "910b", "Ascend-cann-kernels-910b_8.5.0.alpha002_linux-aarch64.run"),
        ("9.1.0-beta.3", "x86_64", "A3", "Ascend-cann-A3-ops_9.1.0-beta.3_linux-x86_64.run"),
    ],
)
def test_cann_package_file_names(cann, arch, chip, expected):
    """REPORT.md §5 examples."""
    names = [p.filename for p in cann_packages(cann, arch, chip)]
    assert names[0] == f"Ascend-cann-toolkit_{cann}_linux-{arch}.run"
    assert names[1] == expected
    assert names[2] == f"Ascend-cann-nnal_{cann}_linux-{arch}.run"


def test_driver_package_names_use_x86_hyphen_and_known_firmware():
    drv, fw = driver_packages("24.1.RC2", "x86_64", "910b")
    assert drv.filename == "Ascend-hdk-910b-npu-driver_24.1.rc2_linux-x86-64.run"
    assert drv.url.endswith("/Ascend%20HDK/Ascend%20HDK%2024.1.RC2/" + drv.filename)
    assert fw.filename == "Ascend-hdk-910b-npu-firmware_7.3.0.1.231.run"
    _drv, fw = driver_packages("25.5.0", "aarch64", "910b")
    assert "<version>" in fw.filename and not fw.verified_name


def test_platform_tags_follow_glibc():
    tags = platform_tags("x86_64", "2.17")
    assert "manylinux_2_17_x86_64" in tags and "manylinux2014_x86_64" in tags
    assert "manylinux_2_28_x86_64" not in tags
    tags = platform_tags("aarch64", "2.34")
    assert tags[0] == "manylinux_2_34_aarch64" and "manylinux_2_28_aarch64" in tags
    assert "manylinux1_aarch64" not in tags and tags[-1] == "linux_aarch64"


@pytest.mark.parametrize("cann", ["8.0.0", "8.1.RC1", "8.2.RC2", "8.5.1"])
def test_protobuf_is_pinned_to_the_line_the_cann_row_states(cann, matrix):
    """CANN 8.x needs protobuf 3.20.x (install guides; the 8.1-8.3 images pin 3.20): the plan
    pins it from the CANN row (8.5.1: its line's 8.5.0 row), never a bare `protobuf`."""
    code, doc = plan_json(A64_PY39, "--torch", "2.6.0", "--python", "3.10", "--cann", cann, "--allow-driver-upgrade")
    assert code == 0, doc
    plan = doc["plan"]
    assert "protobuf==3.20.*" in plan["requirements"] and "protobuf" not in plan["requirements"]
    assert "protobuf==3.20.*" in plan["python_deps"]
    row = "8.5.0" if cann == "8.5.1" else cann
    why = next(r for r in plan["reasons"] if r.startswith("protobuf"))
    assert why.startswith(f"protobuf==3.20.*: CANN {cann} ")
    assert f"{row} states" in why if row != cann else "needs it (" in why
    assert matrix.protobuf_requirement(cann)[:2] == ("==3.20.*", row)


def test_protobuf_stays_unpinned_where_no_source_states_a_version(matrix):
    """9.1.0's guide lists protobuf without a version (9.1.1 inherits it); nothing documents
    9.2.0's: both unpinned, each saying why, no version invented."""
    assert matrix.protobuf_requirement("9.1.1")[:2] == ("", "9.1.0")
    assert matrix.protobuf_requirement("9.2.0") is None
    assert matrix.protobuf_pin("9.2.0") == matrix.protobuf_pin("9.1.1") == "protobuf"
    site = site_from_snapshot(Snapshot.load(str(A64_PY310)), matrix=matrix)
    resolver = Resolver(site, Request(), matrix)
    reasons: list = []
    assert resolver._protobuf("9.2.0", reasons) == "protobuf"
    assert reasons == ["protobuf: no source states the protobuf version CANN 9.2.0 needs; left unpinned"]
    reasons = []
    assert resolver._protobuf("9.1.1", reasons) == "protobuf"
    assert reasons[0].startswith("protobuf: CANN 9.1.1 (as its release line's 9.1.0 states) lists it without a version")


@pytest.mark.parametrize("python", [None, "3.10"])
@pytest.mark.parametrize("cann", ["8.2.RC1", "8.2.RC2"])
def test_cann_request_takes_the_official_pairing_of_the_sites_torch_line(cann, python, matrix):
    """The site runs torch 2.1.0.  CANN 8.2.RC1 is officially paired with 2.6.0, 2.5.1.post1
    and 2.1.0.post13 (8.2.RC2: the same release line): the plan stays on the site's line with
    2.1.0.post13, never a newer build only declared compatible (2.8.0.post4, 2.10.0)."""
    assert [r.torch_npu for r in matrix.rows_for_cann("8.2.RC1")] == ["2.6.0", "2.5.1.post1", "2.1.0.post13"]
    args = ["--cann", cann] + (["--python", python] if python else [])
    code, doc = plan_json(A64_PY39, *args)
    assert code == 0
    plan = doc["plan"]
    assert (plan["torch_npu"], plan["torch"], plan["cann"]) == ("2.1.0.post13", "2.1.0", cann)
    tag = f"cp{(python or '3.9').replace('.', '')}"
    paired = "officially paired with CANN 8.2.RC1" + (
        ", of the same release line as CANN 8.2.RC2" if cann != "8.2.RC1" else ""
    )
    assert plan["reasons"][0] == (
        f"torch_npu 2.1.0.post13: {paired}, and of the site's torch 2.1.0 line; has a {tag} wheel for aarch64"
    )


def test_cann_request_without_a_paired_build_of_the_sites_line_takes_the_newest_paired(tmp_path):
    """A site on torch 2.7.1 (no 2.7.1 build is paired with CANN 8.2.RC1): the newest build
    officially paired with it (2.6.0), ahead of newer builds only declared compatible."""
    doc = json.loads(A64_PY39.read_text())
    doc["facts"]["packages"]["installed"]["torch"][0]["version"] = "2.7.1"
    doc["facts"]["packages"]["installed"]["torch-npu"][0]["version"] = "2.7.1"
    site = tmp_path / "site271.json"
    site.write_text(json.dumps(doc))
    code, out = plan_json(site, "--cann", "8.2.RC1", "--python", "3.10")
    assert code == 0
    plan = out["plan"]
    assert plan["torch_npu"] == "2.6.0" and plan["cann_fit"] == "paired"
    assert plan["reasons"][0] == (
        "torch_npu 2.6.0: the newest build officially paired with CANN 8.2.RC1 "
        "(no build of the site's torch 2.7.1 line is; has a cp310 wheel for aarch64)"
    )


def test_driver_words_list_every_documented_hdk_and_say_older(tmp_path):
    """CANN 8.1.RC1: the plan accepts driver 24.1.rc2 (a tested install pairing), so with no
    driver known it lists it too, every HDK sorted by version; a driver older than every HDK
    documented for CANN 8.5.0 is called so, not "unknown"."""
    doc = json.loads(A64_PY39.read_text())
    doc["facts"].pop("driver")
    doc["facts"]["devices"]["npu_smi"].pop("driver_version")
    site = tmp_path / "nodriver.json"
    site.write_text(json.dumps(doc))
    code, out = plan_json(site, "--cann", "8.1.RC1")
    assert code == 0
    assert (
        "the snapshot has no driver version; CANN 8.1.RC1 needs Ascend HDK 25.5.0, 25.3.RC1, 25.2.0, 25.0.RC1, "
        "24.1.rc2 — check with npu-smi"
    ) in out["plan"]["warnings"]
    doc = json.loads(A64_PY39.read_text())
    doc["facts"]["driver"]["driver"]["version"] = "24.1.rc2.2"
    site = tmp_path / "drv2.json"
    site.write_text(json.dumps(doc))
    code, out = plan_json(site, "--cann", "8.1.RC1")
    assert code == 0 and out["plan"]["driver"]["action"] == "keep"
    code, out = plan_json(site, "--cann", "8.5.0", "--python", "3.10")
    assert code == 1
    assert "the site has 24.1.rc2.2 (older than every HDK documented for it, the oldest 25.0.X)" in out["reasons"][0]
    assert "(unknown)" not in " ".join(out["reasons"])
