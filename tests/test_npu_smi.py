"""Golden tests: every `npu-smi info` capture in tests/fixtures parses to the right chips,
values and processes (values checked by hand against the captures), plus the other
npu-smi outputs (-m, -l, -t board/health/usages/common/proc-mem, -v, errors)."""

from __future__ import annotations

from pathlib import Path

import pytest

from npudoctor.facts._typed import load
from npudoctor.facts.devices import NpuSmi
from npudoctor.parsers.npu_smi import (
    merge_mapping,
    parse_board,
    parse_common,
    parse_error,
    parse_health,
    parse_info,
    parse_list,
    parse_mapping,
    parse_proc_mem,
    parse_usages,
    parse_version,
)
from npudoctor.rules.devices import npu_smi_cause as _npu_smi_cause


def npu_smi_cause(error):
    """The rules' judgement of a parsed npu-smi error, read through the npu_smi view."""
    return _npu_smi_cause(load(NpuSmi, error)[0])


FIXTURES = Path(__file__).resolve().parent / "fixtures"

# file: (npu-smi version, driver version, layout,
#        [(npu, chip, phy_id|device, name, health, power W, temp C, aicore %, (used, total) HBM or DDR MB, bus id)],
#        [(npu, chip, pid, name, MB, container pid)], npus with "No running processes")
GOLDEN = {
    "npu-smi-info_310B1_23.0.rc3.txt": (
        "23.0.rc3",
        "23.0.rc3",
        "310",
        [(0, 0, 0, "310B1", "OK", 9.2, 53, 0, (3841, 11577), "NA")],
        [],
        [],
    ),
    "npu-smi-info_310B4_23.0.0_Alarm_16GB_trailing-spaces_nputop-fixture.txt": (
        "23.0.0",
        "23.0.0",
        "310",
        [(0, 0, 0, "310B4", "Alarm", 0.0, 65, 0, (3628, 15609), "NA")],
        [],
        [],
    ),
    "npu-smi-info_310B4_23.0.rc3_orangepi_narrow.txt": (
        "23.0.rc3",
        "23.0.rc3",
        "310",
        [(0, 0, 0, "310B4", "OK", 7.7, 54, 0, (2166, 3513), "NA")],
        [],
        [],
    ),
    "npu-smi-info_310P3-Duo_24.1.rc2_1card2chip_npuid1792_noproc.txt": (
        "24.1.rc2",
        "24.1.rc2",
        "310",
        [
            (1792, 0, 0, "310P3", "OK", None, 36, 0, (1821, 44280), "0000:07:00.0"),
            (1792, 1, 1, "310P3", "OK", None, 36, 0, (1041, 43693), "0000:07:00.0"),
        ],
        [],
        [1792],
    ),
    "npu-smi-info_310P3-Duo_25.2.0_1card2chip_noproc.txt": (
        "25.2.0",
        "25.2.0",
        "310",
        [
            (2, 0, 0, "310P3", "OK", None, 51, 0, (1529, 44280), "0000:01:00.0"),
            (2, 1, 1, "310P3", "OK", None, 49, 0, (1411, 43693), "0000:01:00.0"),
        ],
        [],
        [2],
    ),
    "npu-smi-info_310P3_22.0.0-drv22.0.2_1npu_devices_only.txt": (
        "22.0.0",
        "22.0.2",
        "310",
        [(0, 0, 0, "310P3", "OK", 16.3, 53, 0, (4060, 21534), "0000:86:00.0")],
        [],
        [],
    ),
    "npu-smi-info_310P3_23.0.0_1npu_id24_noproc.txt": (
        "23.0.0",
        "23.0.0",
        "310",
        [(24, 0, 0, "310P3", "OK", None, 29, 0, (1832, 21527), "0000:04:00.0")],
        [],
        [24],
    ),
    "npu-smi-info_310P3_25.5.2_cann9.1.0_1chip-visible_npuid32896_nputop-fixture.txt": (
        "25.5.2",
        "25.5.2",
        "310",
        [(32896, 0, 0, "310P3", "OK", None, 54, 0, (1904, 44213), "0000:00:00.0")],
        [],
        [32896],
    ),
    "npu-smi-info_910B-legacy32GB_24.1.0_8npu_process-on-npu7.txt": (
        "24.1.0",
        "24.1.0",
        "910",
        [
            (0, 0, None, "910B", "OK", 68.5, 40, 0, (0, 32768), "0000:C1:00.0"),
            (1, 0, None, "910B", "OK", 65.1, 41, 0, (0, 32768), "0000:81:00.0"),
            (2, 0, None, "910B", "OK", 67.9, 41, 0, (0, 32768), "0000:41:00.0"),
            (3, 0, None, "910B", "OK", 65.6, 41, 0, (0, 32768), "0000:01:00.0"),
            (4, 0, None, "910B", "OK", 67.5, 41, 0, (0, 32768), "0000:C2:00.0"),
            (5, 0, None, "910B", "OK", 63.2, 41, 0, (0, 32768), "0000:82:00.0"),
            (6, 0, None, "910B", "OK", 66.6, 41, 0, (0, 32768), "0000:42:00.0"),
            (7, 0, None, "910B", "OK", 65.0, 40, 0, (124, 32768), "0000:02:00.0"),
        ],
        [(7, 0, 87322, "python3", 109, None)],
        [0, 1, 2, 3, 4, 5, 6],
    ),
    "npu-smi-info_910B-legacy_22.0.4.1_1npu_devices_only.txt": (
        "22.0.4.1",
        "22.0.4.1",
        "910",
        [(0, 0, None, "910B", "OK", 79.4, 82, 0, (0, 32768), "0000:81:00.0")],
        [],
        [],
    ),
    "npu-smi-info_910B1_23.0.rc2_8npu_elided-by-author.txt": (
        "23.0.rc2",
        "23.0.rc2",
        "910",
        [
            (0, 0, None, "910B1", "OK", 88.4, 46, 0, (4175, 65536), "0000:C1:00.0"),
            (1, 0, None, "910B1", "OK", 92.1, 47, 0, (4175, 65536), "0000:01:00.0"),
            (7, 0, None, "910B1", "OK", 92.7, 48, 0, (4174, 65536), "0000:42:00.0"),
        ],
        [],
        [],
    ),
    "npu-smi-info_910B2C_23.0.2.1_2npu_with_process_trailing-spaces_nputop-fixture.txt": (
        "23.0.2.1",
        "23.0.2.1",
        "910",
        [
            (0, 0, None, "910B2C", "OK", 88.6, 51, 0, (20701, 65536), "0000:5A:00.0"),
            (1, 0, None, "910B2C", "OK", 99.6, 50, 0, (20687, 65536), "0000:19:00.0"),
        ],
        [(0, 0, 124528, "python3.8", 17400, None)],
        [],
    ),
    "npu-smi-info_910B3_23.0.7_8npu_noproc.txt": (
        "23.0.7",
        "23.0.7",
        "910",
        [
            (0, 0, None, "910B3", "OK", 102.8, 55, 0, (3338, 65536), "0000:C1:00.0"),
            (1, 0, None, "910B3", "OK", 97.6, 54, 0, (3337, 65536), "0000:C2:00.0"),
            (2, 0, None, "910B3", "OK", 96.5, 56, 0, (3334, 65536), "0000:81:00.0"),
            (3, 0, None, "910B3", "OK", 108.7, 57, 0, (3334, 65536), "0000:82:00.0"),
            (4, 0, None, "910B3", "OK", 103.9, 58, 0, (3334, 65536), "0000:01:00.0"),
            (5, 0, None, "910B3", "OK", 99.3, 56, 0, (3334, 65536), "0000:02:00.0"),
            (6, 0, None, "910B3", "OK", 107.7, 58, 0, (3334, 65536), "0000:41:00.0"),
            (7, 0, None, "910B3", "OK", 105.1, 59, 0, (3338, 65536), "0000:42:00.0"),
        ],
        [],
        [0, 1, 2, 3, 4, 5, 6, 7],
    ),
    "npu-smi-info_910B3_24.1.rc1.b030_8npu_devices_only.txt": (
        "24.1.rc1.b030",
        "24.1.rc1.b030",
        "910",
        [
            (0, 0, None, "910B3", "OK", 101.8, 43, 0, (3318, 65536), "0000:C1:00.0"),
            (1, 0, None, "910B3", "OK", 92.0, 39, 0, (3314, 65536), "0000:C2:00.0"),
            (2, 0, None, "910B3", "OK", 102.0, 40, 0, (3314, 65536), "0000:81:00.0"),
            (3, 0, None, "910B3", "OK", 99.8, 40, 0, (3314, 65536), "0000:82:00.0"),
            (4, 0, None, "910B3", "OK", 98.6, 45, 0, (3314, 65536), "0000:01:00.0"),
            (5, 0, None, "910B3", "OK", 99.7, 44, 0, (3314, 65536), "0000:02:00.0"),
            (6, 0, None, "910B3", "OK", 103.8, 45, 0, (3314, 65536), "0000:41:00.0"),
            (7, 0, None, "910B3", "OK", 98.2, 44, 0, (3315, 65536), "0000:42:00.0"),
        ],
        [],
        [],
    ),
    "npu-smi-info_910B3_25.5.1_2npu-excerpt_with-process.txt": (
        "25.5.1",
        "25.5.1",
        "910",
        [
            (0, 0, None, "910B3", "OK", 102.8, 45, 0, (3445, 65536), "0000:C1:00.0"),
            (5, 0, None, "910B3", "OK", 100.8, 44, 12, (60156, 65536), "0000:02:00.0"),
        ],
        [(5, 0, 2290156, "VLLMEngineCore", 56630, None)],
        [],
    ),
    "npu-smi-info_910B4-1_26.x-wide_rows-only-excerpt_VLLMWorker_TP.txt": (
        None,
        None,
        "910",
        [
            (1, 0, None, "910B4-1", "OK", 79.4, 54, 0, (58408, 65536), "0000:0E:00.0"),
            (7, 0, None, "910B4-1", "OK", 79.0, 52, 0, (3401, 65536), "0000:03:00.0"),
        ],
        [(1, 0, 3774161, "VLLMWorker_TP", 55048, None)],
        [7],
    ),
    "npu-smi-info_910B4-32GB_25.0.rc1.1_8npu_noproc_Atlas800IA2.txt": (
        "25.0.rc1.1",
        "25.0.rc1.1",
        "910",
        [
            (0, 0, None, "910B4", "OK", 87.2, 33, 0, (2654, 32768), "0000:C1:00.0"),
            (1, 0, None, "910B4", "OK", 82.7, 33, 0, (2654, 32768), "0000:C2:00.0"),
            (2, 0, None, "910B4", "OK", 82.7, 33, 0, (2654, 32768), "0000:81:00.0"),
            (3, 0, None, "910B4", "OK", 89.1, 34, 0, (2654, 32768), "0000:82:00.0"),
            (4, 0, None, "910B4", "OK", 84.5, 39, 0, (2654, 32768), "0000:01:00.0"),
            (5, 0, None, "910B4", "OK", 84.8, 37, 0, (2654, 32768), "0000:02:00.0"),
            (6, 0, None, "910B4", "OK", 87.1, 38, 0, (2654, 32768), "0000:41:00.0"),
            (7, 0, None, "910B4", "OK", 81.6, 37, 0, (2653, 32768), "0000:42:00.0"),
        ],
        [],
        [0, 1, 2, 3, 4, 5, 6, 7],
    ),
    "npu-smi-info_910B4_25.0.rc1.1_1npu_busid-masked.txt": (
        "25.0.rc1.1",
        "25.0.rc1.1",
        "910",
        [(0, 0, None, "910B4", "OK", 105.5, 39, 5, (6154, 65536), "xxxx:xx:xx.x")],
        [],
        [],
    ),
    "npu-smi-info_910B4_26.0.rc1_1npu_noproc_truncated.txt": (
        "26.0.rc1",
        "26.0.rc1",
        "910",
        [(0, 0, None, "910B4", "OK", 82.6, 32, 0, (2871, 32768), "0000:C1:00.0")],
        [],
        [0],
    ),
    "npu-smi-info_A3_Ascend910_25.2.0_2npu4chip_process-on-chip1_nputop-fixture.txt": (
        "25.2.0",
        "25.2.0",
        "910",
        [
            (0, 0, 0, "Ascend910", "OK", 162.8, 37, 0, (3133, 65536), "0000:9C:00.0"),
            (0, 1, 1, "Ascend910", "OK", None, 37, 0, (2876, 65536), "0000:9E:00.0"),
            (1, 0, 2, "Ascend910", "OK", 167.1, 38, 0, (3116, 65536), "0000:37:00.0"),
            (1, 1, 3, "Ascend910", "OK", None, 38, 0, (10568, 65536), "0000:39:00.0"),
        ],
        [(1, 1, 990711, "python", 7746, None)],
        [0],
    ),
    "npu-smi-info_A3_Ascend910_25.2.1_Alarm_head-excerpt_cann9.0.0_vllm-ascend-9824.txt": (
        "25.2.1",
        "25.2.1",
        "910",
        [(0, 0, 0, "Ascend910", "Alarm", 161.8, 34, 0, (3165, 65536), "0000:9D:00.0")],
        [],
        [],
    ),
    "npu-smi-info_A3_Ascend910_26.0.rc2_wide_EXCERPTS_head+tail.txt": (
        "26.0.rc2",
        "26.0.rc2",
        "910",
        [
            (0, 0, 0, "Ascend910", "OK", 162.6, 34, 0, (3419, 65536), "0000:9D:00.0"),
            (0, 1, 1, "Ascend910", "OK", None, 34, 0, (2874, 65536), "0000:9F:00.0"),
            (7, 1, 15, "Ascend910", "OK", None, 35, 0, (31877, 65536), "0000:83:00.0"),
        ],
        [(0, 0, 632268, "python3.1", 197, None)],
        [1],
    ),
    "npu-smi-info_A3_Ascend910_910_93_24.1.rc3.7_8npu16chip_noproc.txt": (
        "24.1.rc3.7",
        "24.1.rc3.7",
        "910",
        [
            (0, 0, 0, "Ascend910", "OK", 174.3, 37, 0, (3440, 65536), "0000:9D:00.0"),
            (0, 1, 1, "Ascend910", "OK", None, 36, 0, (3205, 65536), "0000:9F:00.0"),
            (1, 0, 2, "Ascend910", "OK", 184.0, 37, 0, (3432, 65536), "0000:99:00.0"),
            (1, 1, 3, "Ascend910", "OK", None, 37, 0, (3208, 65536), "0000:9B:00.0"),
            (2, 0, 4, "Ascend910", "OK", 176.8, 36, 0, (3443, 65536), "0000:95:00.0"),
            (2, 1, 5, "Ascend910", "OK", None, 36, 0, (3196, 65536), "0000:97:00.0"),
            (3, 0, 6, "Ascend910", "OK", 188.1, 36, 0, (3433, 65536), "0000:91:00.0"),
            (3, 1, 7, "Ascend910", "OK", None, 36, 0, (3210, 65536), "0000:93:00.0"),
            (4, 0, 8, "Ascend910", "OK", 175.2, 37, 0, (3439, 65536), "0000:8D:00.0"),
            (4, 1, 9, "Ascend910", "OK", None, 36, 0, (3205, 65536), "0000:8F:00.0"),
            (5, 0, 10, "Ascend910", "OK", 177.1, 36, 0, (3433, 65536), "0000:89:00.0"),
            (5, 1, 11, "Ascend910", "OK", None, 36, 0, (3205, 65536), "0000:8B:00.0"),
            (6, 0, 12, "Ascend910", "OK", 176.9, 35, 0, (3452, 65536), "0000:85:00.0"),
            (6, 1, 13, "Ascend910", "OK", None, 34, 0, (3194, 65536), "0000:87:00.0"),
            (7, 0, 14, "Ascend910", "OK", 183.1, 35, 0, (3447, 65536), "0000:81:00.0"),
            (7, 1, 15, "Ascend910", "OK", None, 37, 0, (3192, 65536), "0000:83:00.0"),
        ],
        [],
        [0, 1, 2, 3, 4, 5, 6, 7],
    ),
    "npu-smi-info_A3_Ascend910_Alarm-mixed_rows-excerpt_vllm-ascend-9395.txt": (
        None,
        None,
        "910",
        [
            (0, 0, 0, "Ascend910", "Alarm", 201.1, 36, 100, (62460, 65536), "0000:9D:00.0"),
            (0, 1, 1, "Ascend910", "Alarm", None, 36, 100, (61781, 65536), "0000:9F:00.0"),
            (1, 0, 2, "Ascend910", "OK", 197.6, 37, 100, (62414, 65536), "0000:99:00.0"),
            (1, 1, 3, "Ascend910", "OK", None, 38, 100, (62166, 65536), "0000:9B:00.0"),
        ],
        [],
        [],
    ),
}


def read(name: str) -> str:
    return (FIXTURES / name).read_bytes().decode("utf-8", errors="replace")


def test_every_table_capture_has_a_golden_entry():
    captures = sorted(p.name for p in FIXTURES.glob("npu-smi-info_*"))
    assert captures and sorted(GOLDEN) == captures


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_info_golden(name):
    version, driver, layout, chips, procs, idle = GOLDEN[name]
    r = parse_info(read(name))
    assert (r["version"], r["driver_version"], r["layout"]) == (version, driver, layout)
    got = [
        (
            c["npu_id"],
            c["chip_id"],
            c["phy_id"] if c["phy_id"] is not None else c["device_id"],
            c["name"],
            c["health"],
            c["power_w"],
            c["temp_c"],
            c["aicore_pct"],
            (c["hbm_used_mb"], c["hbm_total_mb"])
            if c["hbm_total_mb"] is not None
            else (c["memory_used_mb"], c["memory_total_mb"]),
            c["bus_id"],
        )
        for c in r["chips"]
    ]
    assert got == chips
    assert [
        (p["npu_id"], p["chip_id"], p["pid"], p["name"], p["memory_mb"], p["container_pid"]) for p in r["processes"]
    ] == procs
    assert r["idle_npus"] == idle
    assert r["error"] is None


def test_quirks_of_specific_layouts():
    legacy = parse_info(read("npu-smi-info_910B-legacy32GB_24.1.0_8npu_process-on-npu7.txt"))
    # first-gen 910 fills both DDR and HBM
    assert (legacy["chips"][0]["memory_used_mb"], legacy["chips"][0]["memory_total_mb"]) == (2382, 15038)
    duo = parse_info(read("npu-smi-info_310P3-Duo_25.2.0_1card2chip_noproc.txt"))
    assert [c["logic_id"] for c in duo["chips"]] == [0, 1] and duo["second_id"] == "device"
    assert duo["chips"][0]["hbm_total_mb"] is None
    truncated = parse_info(read("npu-smi-info_910B4_26.0.rc1_1npu_noproc_truncated.txt"))
    assert truncated["truncated"] and truncated["container_pid_column"]
    rows_only = parse_info(read("npu-smi-info_910B4-1_26.x-wide_rows-only-excerpt_VLLMWorker_TP.txt"))
    assert not rows_only["header"] and rows_only["container_pid_column"]
    elided = parse_info(read("npu-smi-info_910B1_23.0.rc2_8npu_elided-by-author.txt"))
    assert elided["elided"] and [c["npu_id"] for c in elided["chips"]] == [0, 1, 7]
    a3 = parse_info(read("npu-smi-info_A3_Ascend910_910_93_24.1.rc3.7_8npu16chip_noproc.txt"))
    assert a3["second_id"] == "phy_id" and [c["phy_id"] for c in a3["chips"]] == list(range(16))


def test_table_inside_a_pasted_session_with_tabs_and_logs():
    table = read("npu-smi-info_910B3_25.5.1_2npu-excerpt_with-process.txt")
    noisy = (
        "(venv) root@host:~/src# npu-smi info\n"
        "INFO 05-09 10:00:01 [__init__.py:30] Available plugins | ascend\n"
        "DrvMngGetConsoleLogLevel failed. (g_conLogLevel=3)\n```\n"
        + "\n".join("\t" + line + "   " for line in table.splitlines())
        + "\n```\n(venv) root@host:~/src# "
    )
    assert parse_info(noisy)["chips"] == parse_info(table)["chips"]
    assert parse_info(noisy)["processes"] == parse_info(table)["processes"]


def test_errors_map_to_causes():
    # The parser recognises the DCMI line; the rules judge what the code means.
    e = parse_error(read("error_npu-smi_dcmi-8005_in-container_g_conLogLevel.txt"))
    assert (e["code"], e["cause"], npu_smi_cause(e)) == (-8005, "dcmi", "busy")
    assert "initialize failed" in e["message"]
    e = parse_error(read("error_npu-smi_dcmi-8020_device-used_in-container.txt"))
    assert (e["code"], e["cause"], npu_smi_cause(e)) == (-8020, "dcmi", "busy") and "device is used" in e["message"]
    assert parse_error(read("error_npu-smi_dcmi-8005_after-fw-upgrade-no-reboot.txt"))["code"] == -8005
    e = parse_error(read("error_npu-smi_command-not-found_gha-runner-container.txt"))
    assert (e["code"], e["cause"]) == (None, "not-installed")
    assert parse_error("bash: npu-smi: command not found")["cause"] == "not-installed"
    assert parse_error("dcmi init failed, error code: -8005")["code"] == -8005
    assert npu_smi_cause(parse_error("dcmi module initialize failed. ret is -8001")) == "driver"
    # stderr noise alone is not an error
    assert parse_error(read("collect_env_stderr-noise_DrvMng_PROFILING_in-container_-8020.txt")) is None
    assert parse_info(read("error_npu-smi_dcmi-8020_device-used_in-container.txt"))["error"]["code"] == -8020


def test_mapping():
    tab = parse_mapping(read("npu-smi-info-m_910B3_25.5.1_2npu-excerpt_tab-indented_trailing-spaces.txt"))
    assert [(r["npu_id"], r["chip_id"], r["logic_id"], r["chip_name"], r["is_mcu"]) for r in tab] == [
        (0, 0, 0, "Ascend 910B3", False),
        (0, 1, None, "Mcu", True),
        (1, 0, 1, "Ascend 910B3", False),
        (1, 1, None, "Mcu", True),
    ]
    eight = parse_mapping(read("npu-smi-info-m_910B4_25.0.rc1.1_8npu_8space-indent-in-source.txt"))
    assert [r["logic_id"] for r in eight if not r["is_mcu"]] == list(range(8))
    a3 = parse_mapping(read("npu-smi-info-m_A3_Ascend910_PhyID-column_fixture-excerpt.txt"))
    assert [(r["npu_id"], r["chip_id"], r["logic_id"], r["phy_id"], r["chip_name"]) for r in a3] == [
        (0, 0, 0, 0, "Ascend910"),
        (0, 1, 1, 1, "Ascend910"),
        (0, 2, None, None, "Mcu"),
        (1, 0, 2, 2, "Ascend910"),
    ]
    chips = parse_info(read("npu-smi-info_A3_Ascend910_25.2.0_2npu4chip_process-on-chip1_nputop-fixture.txt"))["chips"]
    filled, unmatched = merge_mapping(chips, a3)
    assert filled == 3 and unmatched == [] and [c["logic_id"] for c in chips] == [0, 1, 2, None]


def test_list_and_kv_outputs():
    lst = parse_list(read("npu-smi-info-l_910B4_25.0.rc1.1_8npu.txt"))
    assert lst["total"] == 8 and lst["npus"][7] == {"npu_id": 7, "chip_count": 1}
    board = parse_board(read("npu-smi-info-t-board-i0_910-class_23.0.5_doc.txt"))
    assert (board["software_version"], board["firmware_version"], board["compatibility"]) == (
        "23.0.5",
        "7.1.0.7.220",
        "OK",
    )
    assert board["pci_device_id"] == "0xD801"
    assert (
        parse_board(read("npu-smi-info-t-board-i0-c0_chip_910-class_doc_serials-redacted.txt"))["soc_version"] is None
    )
    assert parse_board("Chip Type : Ascend\nChip Name : 910B3\n")["soc_version"] == "Ascend910B3"
    assert (
        parse_board("Chip Type : Ascend\nChip Name : Ascend910\nNPU Name : 9391\n")["soc_version"] == "Ascend910_9391"
    )
    health = parse_health(read("npu-smi-info-t-health_310B4_23.0.0_Alarm_80E3A203.txt"))
    assert health["status"] == "Alarm" and health["error_codes"] == ["80E3A203"]
    assert health["information"].endswith("The function of obtaining the current is abnormal")
    ok = parse_health(read("npu-smi-info-t-health_OK_doc.txt"))
    assert ok == {"status": "OK", "error_codes": [], "information": None}
    u = parse_usages(read("npu-smi-info-t-usages-i0_910-class-DDR+HBM_doc.txt"))
    assert (u["ddr_capacity_mb"], u["hbm_capacity_mb"], u["aivector_usage_pct"]) == (13553, 32768, None)
    u = parse_usages(read("npu-smi-info-t-usages-i0_910B1_23.0.rc2.txt"))
    assert (u["hbm_capacity_mb"], u["hbm_usage_pct"], u["aivector_usage_pct"]) == (65536, 4, 0)
    common = parse_common(read("npu-smi-info-t-common-i1_910B1_23.0.rc2_with-mcu.txt"))
    assert [(c["chip_id"], c["chip_name"], c["temp_c"], c["power_w"]) for c in common] == [
        (0, None, 46, 93.4),
        (None, "mcu", 38, None),
    ]
    procs = parse_proc_mem(read("npu-smi-info-t-proc-mem_A3_fixture-excerpt.txt"))
    assert procs == [{"chip_id": 1, "pid": 3229095, "name": "", "memory_mb": 48208}]
    assert parse_version(read("npu-smi-v_official-doc-template.txt")) == "x.x.x"
    assert parse_version("npu-smi version: 24.1.rc2\n") == "24.1.rc2"
