"""The driver probe and DRV rules over real driver/firmware version.info samples."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders.build_cann_scenarios import AS, cann85, fixture, write

from npudoctor.context import Options, ProbeContext
from npudoctor.engine import collect, evaluate
from npudoctor.host import Host
from npudoctor.knowledge.matrix import load_matrix
from npudoctor.parsers.info_files import format_ranges
from npudoctor.probes import driver as driver_probe


def probe(root: Path):
    host = Host(str(root), environ={"HOME": "/root"}, commands=False)
    return driver_probe.probe(ProbeContext(host=host, options=Options(), facts={}))


def findings(root: Path, env=None):
    host = Host(str(root), environ=dict(env or {"HOME": "/root", "PATH": "/usr/bin:/bin"}), commands=False)
    snap = collect(host, Options())
    return snap, evaluate(snap, load_matrix(), Options())


def test_driver_and_firmware_facts(tmp_path):
    write(tmp_path, f"{AS}/driver/version.info", fixture("driver_version.info_24.1.rc2.2.txt"))
    write(tmp_path, f"{AS}/driver/lib64/driver/.keep", "")
    write(tmp_path, f"{AS}/firmware/version.info", fixture("firmware_version.info_7.7.0.1.231_pkg25.0.rc1.1.txt"))
    write(tmp_path, "etc/ascend_install.info", fixture("etc_ascend_install.info_driver+firmware_full.txt"))
    facts = probe(tmp_path)
    drv, fw = facts["driver"], facts["firmware"]
    assert (drv["version"], drv["package_version"], drv["lib64"]) == ("24.1.rc2.2", "24.1.rc2.2", True)
    assert drv["compatible_version_fw"] == [["7.0.0", "7.2.99"]]
    assert drv["source"] == "/usr/local/Ascend/driver/version.info"
    assert drv["found_via"] == "Driver_Install_Path_Param"
    assert fw["version"] == "7.7.0.1.231" and fw["package_version"] == "25.0.rc1.1"
    assert fw["compatible_version_drv"][-1] == ["25.0", "25.0."]
    assert facts["install_info"]["values"]["driver_install_type"] == "full"


def test_driver_install_path_param_elsewhere(tmp_path):
    write(tmp_path, "opt/hdk/driver/version.info", fixture("driver_version.info_25.3.rc1_doc.txt"))
    write(
        tmp_path,
        "etc/ascend_install.info",
        "Driver_Install_Path_Param=/opt/hdk\nFirmware_Install_Path_Param=/opt/hdk\n",
    )
    facts = probe(tmp_path)
    assert facts["driver"]["path"] == "/opt/hdk/driver"
    assert facts["driver"]["version"] == "25.3.rc1"
    assert facts["firmware"]["exists"] is False


def test_missing_package_version_line(tmp_path):
    write(tmp_path, f"{AS}/driver/version.info", fixture("driver_version.info_24.1.rc1_no-package_version_doc.txt"))
    facts = probe(tmp_path)
    assert facts["driver"]["version"] == "24.1.rc1"
    assert facts["driver"]["package_version"] is None
    assert facts["driver"]["error"] is None
    assert facts["install_info"] is None


@pytest.mark.parametrize(
    "content,needle",
    [(b"", "no Version= line"), (b"Versi", "no Version= line"), (b"Version=24.1.rc2\xff\n", "not UTF-8")],
)
def test_bad_driver_file(tmp_path, content, needle):
    write(tmp_path, f"{AS}/driver/version.info", content)
    facts = probe(tmp_path)
    assert needle in (facts["driver"]["error"] or "")


def test_version_info_is_a_directory(tmp_path):
    # a bind mount of a missing host file creates an empty directory in the container
    (tmp_path / AS / "driver" / "version.info").mkdir(parents=True)
    facts = probe(tmp_path)
    assert "is a directory" in facts["driver"]["error"]
    _snap, found = findings(tmp_path)
    assert any(f.code == "DRV004" and "is a directory" in f.title for f in found)


def _without_fw_range(name: str) -> str:
    """A real driver version.info with its compatible_version_fw line removed."""
    text = fixture(name).decode()
    return "".join(x for x in text.splitlines(True) if "compatible_version_fw" not in x)


def test_driver_declares_newer_firmware(tmp_path):
    """Driver 25.3.rc1 accepts firmware [7.0.0,8.9.9]: the driver's own statement declares
    firmware 7.7.0.1.231 compatible, although the firmware's older list ([24.1,24.1.],
    [25.0,25.0.]) cannot name the newer driver (evidence grid df-03; issue 13)."""
    write(tmp_path, f"{AS}/driver/version.info", fixture("driver_version.info_25.3.rc1_doc.txt"))
    write(tmp_path, f"{AS}/firmware/version.info", fixture("firmware_version.info_7.7.0.1.231_pkg25.0.rc1.1.txt"))
    _snap, found = findings(tmp_path)
    assert not [f for f in found if f.code == "DRV003"]


def test_firmware_rejects_driver(tmp_path):
    """A driver file without compatible_version_fw: the firmware's compatible_version_drv
    decides, and it does not list 25.3 -> documented incompatible (error)."""
    write(tmp_path, f"{AS}/driver/version.info", _without_fw_range("driver_version.info_25.3.rc1_doc.txt"))
    write(tmp_path, f"{AS}/firmware/version.info", fixture("firmware_version.info_7.7.0.1.231_pkg25.0.rc1.1.txt"))
    _snap, found = findings(tmp_path)
    drv003 = [f for f in found if f.code == "DRV003"]
    assert len(drv003) == 1 and drv003[0].severity == "error"
    assert "7.7.0.1.231" in drv003[0].title and "25.3.rc1" in drv003[0].title
    assert drv003[0].data["grade"] == "documented-incompatible"
    assert "firmware's own version.info" in drv003[0].data["source"]


def test_driver_rejects_newer_firmware(tmp_path):
    """Driver 24.1.rc2.2 accepts firmware [7.0.0,7.2.99] only: firmware 7.7.0.1.231 is
    documented incompatible although the firmware lists [24.1,24.1.] -- the driver is the side
    that refuses ('driver and firmware packages do not match'; evidence grid df-05)."""
    write(tmp_path, f"{AS}/driver/version.info", fixture("driver_version.info_24.1.rc2.2.txt"))
    write(tmp_path, f"{AS}/firmware/version.info", fixture("firmware_version.info_7.7.0.1.231_pkg25.0.rc1.1.txt"))
    _snap, found = findings(tmp_path)
    drv003 = [f for f in found if f.code == "DRV003"]
    assert len(drv003) == 1 and drv003[0].severity == "error"
    assert drv003[0].data["grade"] == "documented-incompatible"
    assert "driver's own version.info accepts firmware 7.0.0 to 7.2.99 only" in drv003[0].data["source"]


def test_container_cann_newer_than_host_driver(tmp_path):
    cann85(tmp_path, "8.5.0", "ascend_toolkit_install_8.5.0_aarch64_new-cann-layout_doc.info", None)
    write(tmp_path, ".dockerenv", "")
    write(tmp_path, f"{AS}/driver/version.info", fixture("driver_version.info_24.1.rc2.2.txt"))
    _snap, found = findings(tmp_path)
    drv = [f for f in found if f.code == "DRV002"]
    # CANN 8.5.0's release notes list HDK 25.0.X-25.5.X; 24.1.RC2 is three HDK releases before
    # 25.0.RC1: not documented either way, within about a year -> warning (AUDIT §7(d); grid cd-12)
    assert len(drv) == 1 and drv[0].severity == "warning"
    assert "24.1.rc2.2" in drv[0].title and "8.5.0" in drv[0].title
    assert drv[0].data["grade"] == "undocumented"
    assert any("host" in x for x in drv[0].fix)


def test_driver_missing_only_when_something_needs_it(tmp_path):
    _snap, found = findings(tmp_path)
    assert not [f for f in found if f.code.startswith("DRV")]
    cann85(tmp_path, "8.5.0", "ascend_toolkit_install_8.5.0_aarch64_new-cann-layout_doc.info", None)
    _snap, found = findings(tmp_path)
    drv001 = [f for f in found if f.code == "DRV001"]
    assert len(drv001) == 1 and drv001[0].severity == "warning"  # no torch_npu: not fatal yet
    # no NPU listed, so the chip part of the file name is unknown: prose, not a placeholder
    assert any(x.startswith("install the NPU driver 25.") and "chip type (unknown here" in x for x in drv001[0].fix)
    assert not [x for x in drv001[0].fix if "<" in x or "…" in x]


def test_probe_module_contract():
    assert (driver_probe.SECTION, driver_probe.NEEDS, driver_probe.QUICK) == ("driver", (), True)


def test_firmware_ranges_for_humans_and_firmware_line_with_chip(tmp_path):
    """k14 data: the firmware's compatible_version_drv shown as 23.0.0.x, 24.0.x, …; the fix
    is runnable (chmod +x) and names the package chip once npu-smi listed the chip.  (The
    driver file has no compatible_version_fw, so the firmware's list decides: df-03 shows the
    driver's own range would declare the pair compatible.)"""
    write(tmp_path, f"{AS}/driver/version.info", _without_fw_range("driver_version.info_25.3.rc1_doc.txt"))
    write(tmp_path, f"{AS}/firmware/version.info", fixture("firmware_version.info_7.7.0.1.231_pkg25.0.rc1.1.txt"))
    snap, found = findings(tmp_path)
    (drv003,) = [f for f in found if f.code == "DRV003"]
    assert "firmware accepts drivers 23.0.0.x, 24.0.x, 24.1.x, 25.0.x" in drv003.evidence
    # the firmware build of HDK 25.3.rc1 is not published: prose instead of `<fw>` in a command
    assert drv003.fix[0] == (
        "install the NPU firmware of Ascend HDK 25.3.rc1 (its .run file name carries its own build number) "
        "for this machine's NPU chip type (unknown here: no NPU chip of a known type was seen; one of 910b, 310p or 910), run with --full"
    )
    snap.facts.setdefault("devices", {})["chips"] = [{"name": "310P3"}]
    (drv003,) = [f for f in evaluate(snap, load_matrix(), Options()) if f.code == "DRV003"]
    assert drv003.fix[0] == (
        "install the NPU firmware of Ascend HDK 25.3.rc1 (its .run file name carries its own build number), "
        "run with --full"
    )


@pytest.mark.parametrize(
    "ranges,text",
    [
        (
            [("23.0.0", "23.0.0."), ("24.0", "24.0."), ("24.1", "24.1."), ("25.0", "25.0.")],
            "23.0.0.x, 24.0.x, 24.1.x, 25.0.x",
        ),
        ([("7.0.0", "7.2.99")], "7.0.0 to 7.2.99"),
        ([("24.0", "24.1.")], "24.0 to 24.1.x"),
        ([("7.1.0", "7.1.0")], "7.1.0"),
        ([], ""),
    ],
)
def test_format_ranges(ranges, text):
    assert format_ranges(ranges) == text


def test_driver_missing_before_any_cann_names_the_hdk_of_the_cann_cann001_installs(tmp_path):
    """torch_npu 2.7.1, no CANN, no driver: CANN001 installs the CANN the matrix pairs with
    that torch_npu, so DRV001's driver is the HDK the matrix pairs with that CANN -- a
    driver file and firmware of a named HDK, not "the HDK your CANN pairs with"."""
    from scenario_runner import REPO, prepare, run_check

    from npudoctor.plan.fit import hdk_for

    run = run_check(prepare(REPO / "tests/scenarios/no-cann-torch-npu-installed", tmp_path))
    by_code = {f["code"]: f for f in run.doc["findings"]}
    row = load_matrix().find_torch_npu("2.7.1")
    assert row is not None and row.cann[0] == "8.3.RC1"
    assert by_code["CANN001"]["title"].endswith("(it needs CANN 8.3.RC1)")
    hdk = hdk_for(load_matrix(), "8.3.RC1")
    assert hdk == "25.3.RC1"
    drv = by_code["DRV001"]
    assert drv["evidence"][-1] == (
        "matrix: CANN 8.3.RC1, the one torch_npu 2.7.1 is paired with (CANN001 installs it), "
        "is paired with Ascend HDK 25.3.RC1"
    )
    assert "Ascend-hdk-910b-npu-driver_25.3.rc1_linux-aarch64.run --full" in drv["fix"][0]
    assert drv["fix"][1].startswith("install the NPU firmware of Ascend HDK 25.3.RC1 ")
    assert not any("your CANN" in line for line in drv["fix"])


def test_driver_known_only_from_npu_smi_is_used_and_judged_against_the_cann_to_install(tmp_path):
    """case 46's host: npu-smi's header says driver 23.0.7, the driver directory has no
    version.info, no CANN is installed.  The version npu-smi gives is the driver's (summary,
    DRV004 only a note), and CANN001's install of CANN 8.1.RC1 starts with the HDK that CANN
    needs, because the matrix documents none as old as 23.0.7 for it."""
    from clirun import npudoctor
    from scenario_runner import REPO, environment, prepare, run_check

    scenario = prepare(REPO / "tests/scenarios/case46-ray-worker-empty-rt-visible-devices", tmp_path)
    run = run_check(scenario)
    by_code = {f["code"]: f for f in run.doc["findings"]}
    note = by_code["DRV004"]
    assert note["severity"] == "info"
    assert note["title"] == (
        "/usr/local/Ascend/driver/version.info: not found; npu-smi reports driver 23.0.7, which the driver checks use"
    )
    cann = by_code["CANN001"]
    assert cann["title"].endswith("(it needs CANN 8.1.RC1)")
    assert cann["fix"][0] == (
        "first the NPU driver + firmware of Ascend HDK 25.0.RC1, the one CANN 8.1.RC1 is documented with "
        "(driver 23.0.7 is older than every HDK documented for it), and a reboot; then:"
    )
    assert "the installed driver 23.0.7 does not fit CANN 8.1.RC1 (matrix)" in cann["evidence"]
    text = npudoctor("check", "--root", str(scenario / "root"), env=environment(scenario, run.spec)).stdout
    assert "  ✓ Driver and firmware: driver 23.0.7 (npu-smi)" in text.splitlines()


def test_a_framework_that_needs_a_newer_cann_names_the_hdk_when_the_driver_is_older(tmp_path):
    """vllm-ascend 0.11.0rc2 on CANN 8.2.RC1 with driver 24.1.rc2.2: CANN012 moves to CANN
    8.3.RC2, whose documented HDKs are all newer than that driver, so its fix starts with
    that HDK (a driver not documented either way: "documented with", not "needs")."""
    from scenario_runner import REPO, prepare, run_check

    run = run_check(prepare(REPO / "tests/scenarios/fw-vllm-ascend-0.11.0rc2-on-cann-8.2.RC1", tmp_path))
    (f,) = [f for f in run.doc["findings"] if f["code"] == "CANN012"]
    assert f["title"] == "vllm-ascend 0.11.0rc2 needs CANN 8.3.RC2 or newer, but CANN 8.2.RC1 is in use"
    assert f["fix"][0] == (
        "first the NPU driver + firmware of Ascend HDK 25.3.RC1, the one CANN 8.3.RC2 is documented with "
        "(driver 24.1.rc2.2 is older than every HDK documented for it), and a reboot; then:"
    )
    assert f["fix"][1].startswith("chmod +x Ascend-cann-toolkit_8.3.RC2_linux-aarch64.run")


def test_the_driver_verdict_is_said_once(tmp_path):
    """k14 (a CANN 8.5.0 image on a host driver 24.1.rc2.2): DRV002's title says the verdict
    and what it rests on; the evidence lists the facts without saying the verdict again."""
    import tomllib
    from clirun import npudoctor
    from scenario_runner import REPO, environment, prepare

    scenario = prepare(REPO / "tests/scenarios/k14-container-cann-8.5-host-driver-24.1", tmp_path)
    env = environment(scenario, tomllib.loads((scenario / "scenario.toml").read_text()))
    out = npudoctor("check", "-v", "--root", str(scenario / "root"), env=env).stdout
    block = out[out.index("  ! DRV002 ") : out.index("      fix:", out.index("  ! DRV002 "))].splitlines()
    assert block == [
        "  ! DRV002 Driver 24.1.rc2.2 with CANN 8.5.0 (host driver, image CANN): not documented either way"
        " (older than 25.0.X, the oldest HDK documented for CANN 8.5.0, by less than about a year)",
        "      evidence: driver 24.1.rc2.2 from /usr/local/Ascend/driver/version.info",
        "      evidence: CANN 8.5.0 at /usr/local/Ascend/cann-8.5.0"
        " (from /usr/local/Ascend/cann-8.5.0/aarch64-linux/ascend_toolkit_install.info)",
        "      evidence: matrix: CANN 8.5.0 is paired with HDK 25.5.0; works with 25.5.X, 25.3.X, 25.2.X, 25.0.X",
    ]  # the window ("documented to work: Ascend HDK 25.5.X, ...") is the matrix line's: said once
