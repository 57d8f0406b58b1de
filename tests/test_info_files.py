"""Golden tests of npudoctor.parsers.info_files over the real samples in tests/fixtures/,
plus fuzzing (no exception on any input)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npudoctor.parsers import info_files as f


def test_toolkit_install_info_classic(fixture_text):
    info = f.toolkit_install_info(fixture_text("ascend_toolkit_install_8.0.0_aarch64.info"))
    assert info["version"] == "8.0.0"
    assert info["innerversion"] == "V100R001C20SPC001B251"
    assert info["arch"] == "aarch64"
    assert info["path"] == "/usr/local/Ascend/ascend-toolkit/8.0.0/aarch64-linux"
    assert info["compatible_version"] == ["V100R001C15", "V100R001C17", "V100R001C18", "V100R001C19", "V100R001C20"]


@pytest.mark.parametrize(
    "name,version,path",
    [
        (
            "ascend_toolkit_install_8.5.0_new-layout_path-without-arch-suffix.info",
            "8.5.0",
            "/usr/local/Ascend/cann-8.5.0",
        ),
        (
            "ascend_toolkit_install_8.5.0_aarch64_new-cann-layout_doc.info",
            "8.5.0",
            "/usr/local/Ascend/cann-8.5.0/aarch64-linux",
        ),
        (
            "ascend_toolkit_install_7.0.RC1_310B_arm64-linux.info",
            "7.0.RC1",
            "/usr/local/Ascend/ascend-toolkit/7.0.RC1/aarch64-linux",
        ),
        (
            "ascend_toolkit_install_8.2.RC1_aarch64.info",
            "8.2.RC1",
            "/usr/local/Ascend/ascend-toolkit/8.2.RC1/aarch64-linux",
        ),
    ],
)
def test_toolkit_install_info_layouts(fixture_text, name, version, path):
    info = f.toolkit_install_info(fixture_text(name))
    assert (info["version"], info["path"], info["package_name"]) == (version, path, "Ascend-cann-toolkit")


def test_version_cfg_classic_has_no_opp_kernel(fixture_text):
    cfg = f.parse_version_cfg(fixture_text("version.cfg_toolkit_8.0.0_no-opp_kernel.txt"))
    assert cfg["toolkit"]["running"] == [{"inner": "7.6.0.1.220", "public": "8.0.0"}]
    assert set(cfg) == {"runtime", "compiler", "hccl", "opp", "toolkit", "aoe", "ncs"}
    assert set(cfg["hccl"]) == {"running", "upgrade", "installed"}


def test_version_cfg_internal_t_build(fixture_text):
    cfg = f.parse_version_cfg(fixture_text("version.cfg_toolkit_8.0.T63_internal-build.txt"))
    assert cfg["opp_kernel"]["installed"] == [{"inner": "7.6.T13.0.B094", "public": "8.0.T63"}]


def test_version_cfg_several_groups_and_any_order():
    text = "opp_installed_version=[7.6.0.1.220:8.0.0][7.5.0.3.220:8.0.RC3]\n# c\ntoolkit_running_version=[x]\n"
    cfg = f.parse_version_cfg(text)
    assert cfg["opp"]["installed"] == [
        {"inner": "7.6.0.1.220", "public": "8.0.0"},
        {"inner": "7.5.0.3.220", "public": "8.0.RC3"},
    ]
    assert cfg["toolkit"]["running"] == [{"inner": "x"}]


def test_component_version_info_quoted_ranges(fixture_text):
    info = f.component_version_info(fixture_text("toolkit_version.info_8.2.RC1_component.txt"))
    assert info["version"] == "8.2.0.0.201"
    assert info["version_dir"] == "8.2.RC1"
    assert info["required"]["opp_kernel"] == ">=7.6, <=8.2"
    assert info["required"]["runtime"] == "8.2"
    kern = f.component_version_info(fixture_text("opp_kernel_version.info_8.2.RC1.txt"))
    assert kern["extra"]["ops_version"] == "8.2.0.0.201"
    opp = f.component_version_info(fixture_text("opp_version.info_8.5.0_doc.txt"))
    assert (opp["version"], opp["version_dir"]) == ("8.5.0.2.220", "8.5.0")


def test_driver_version_info(fixture_text):
    d = f.driver_version_info(fixture_text("driver_version.info_24.1.rc2.2.txt"))
    assert d["version"] == "24.1.rc2.2"
    assert d["package_version"] == "24.1.rc2.2"
    assert d["innerversion"] == "V100R001C18SPC001B233"
    assert d["compatible_version_fw"] == [("7.0.0", "7.2.99")]
    old = f.driver_version_info(fixture_text("driver_version.info_24.1.rc1_no-package_version_doc.txt"))
    assert old["version"] == "24.1.rc1" and old["package_version"] is None
    assert old["ascendhal_version"] == "7.35.19"


def test_firmware_prefix_ranges(fixture_text):
    fw = f.firmware_version_info(fixture_text("firmware_version.info_7.7.0.1.231_pkg25.0.rc1.1.txt"))
    assert fw["version"] == "7.7.0.1.231"
    assert fw["package_version"] == "25.0.rc1.1"
    ranges = fw["compatible_version_drv"]
    assert ranges == [("23.0.0", "23.0.0."), ("24.0", "24.0."), ("24.1", "24.1."), ("25.0", "25.0.")]
    assert f.ranges_contain(ranges, "25.0.rc1.1") is True
    assert f.ranges_contain(ranges, "24.1.rc2.2") is True
    assert f.ranges_contain(ranges, "23.0.0") is True
    assert f.ranges_contain(ranges, "25.3.rc1") is False
    assert f.ranges_contain(ranges, "23.0.7") is False  # 23.0.0. prefix holds only 23.0.0.x
    doc = f.firmware_version_info(fixture_text("firmware_version.info_7.1.0.11.220_pkg23.0.7_doc.txt"))
    assert f.ranges_contain(doc["compatible_version_drv"], "23.0.rc3") is True
    assert f.ranges_contain(doc["compatible_version_drv"], "24.1.rc1") is False


def test_full_ranges():
    assert f.range_contains("7.0.0", "7.2.99", "7.1.0.11.220") is True
    assert f.range_contains("7.0.0", "7.2.99", "7.7.0.1.231") is False
    assert f.range_contains("7.0.0", "8.9.9", "7.7.0.1.231") is True
    assert f.range_contains("7.0.0", "7.2.99", "seven") is None


def test_nnal_indented(fixture_text):
    n = f.nnal_version_info(fixture_text("nnal_atb_version.info_8.2.RC1_indented.txt"))
    assert (n["package"], n["version"], n["build"], n["platform"]) == (
        "Ascend-cann-atb",
        "8.2.RC1",
        "8.2.RC1.B150",
        "aarch64",
    )
    assert n["commit"] == "f10dc20391d8af04c3f8024aca0e0dfa94d2a0a5"
    t = f.nnal_version_info(fixture_text("nnal_atb_version.info_8.0.T63_indented.txt"))
    assert (t["version"], t["build"]) == ("8.0.T63", "8.0.T63.B020")


def test_nnal_build_line_only():
    assert f.nnal_version_info("    Ascend-cann-atb Version : 8.2.RC1.B150\n")["version"] == "8.2.RC1"


def test_mindie_and_atb_models(fixture_text):
    m = f.mindie_version_info(fixture_text("mindie_version.info_2.1.RC1.txt"))
    assert m["version"] == "2.1.RC1"
    assert m["components"]["mindie-sd"] == "2.1.RC1.B152"  # no space around ':'
    a = f.mindie_version_info(fixture_text("atb-models_version.info_2.0.T3.txt"))
    assert a["version"] == "2.0.T3"
    assert "MindIE-ATB Version" not in a["components"]  # empty value


def test_colon_info_keeps_colons_in_values(fixture_text):
    kv = f.parse_colon_info(fixture_text("atb-models_version.info_2.0.T3.txt"))
    assert kv["Time"] == "2025-02-05 03:45:45 PM CST"
    assert kv["MindIE-ATB Version"] == ""


def test_ascend_install_info(fixture_text):
    kv = f.ascend_install_info(fixture_text("etc_ascend_install.info_driver+firmware_full.txt"))
    assert kv["driver_install_path_param"] == "/usr/local/Ascend"
    assert kv["username"] == "HwHiAiUser"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "package_name=Ascend-cann-toolkit\nversi",  # truncated mid-key
        "version=\x00\x00\x00\n",
        "version=\ufffd\ufffd8.0\n",
        "=====\n[[[\n::::\n",
        "version=8.0.0\r\narch=aarch64\r\n",
    ],
)
def test_bad_input_gives_no_version_or_a_clean_one(text):
    info = f.toolkit_install_info(text)
    assert info["version"] in (None, "8.0.0")
    if "8.0.0" in text:
        assert info["version"] == "8.0.0" and info["arch"] == "aarch64"


_PARSERS = [
    f.parse_key_values,
    f.parse_version_cfg,
    f.parse_colon_info,
    f.toolkit_install_info,
    f.component_version_info,
    f.driver_version_info,
    f.firmware_version_info,
    f.nnal_version_info,
    f.mindie_version_info,
    f.ascend_install_info,
    f.parse_ranges,
    f.parse_bracket_list,
]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=400))
def test_fuzz_never_raises(text):
    for parser in _PARSERS:
        parser(text)
    f.ranges_contain(f.parse_ranges(text), text[:20])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["[", "]", ",", ".", "rc", "1", "24", "b0", "x", "-"]), max_size=30))
def test_fuzz_ranges(parts):
    text = "".join(parts)
    for lo, hi in f.parse_ranges(text):
        assert f.range_contains(lo, hi, "24.1.rc2") in (True, False, None)
