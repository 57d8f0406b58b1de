"""`npu-smi info -t topo` captures: link matrix, islands and CPU affinity."""

from __future__ import annotations

from pathlib import Path

from npudoctor.parsers.topo import parse_cpus, parse_topo

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def read(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_all_hccs_with_tab_led_header():
    t = parse_topo(read("topo_910B3_8npu_allHCCS_24.1.rc1.txt"))
    assert t["npus"] == list(range(8))
    assert t["link_types"] == ["HCCS"] and t["all_fabric"] and t["islands"] == [list(range(8))]
    assert t["links"]["3"]["3"] == "X" and t["links"]["3"]["7"] == "HCCS"
    assert t["affinity"]["0"] == "144-167" and t["affinity"]["7"] == "48-71"
    assert t["affinity_cpus"]["4"] == list(range(0, 24))
    assert t["legend"]


def test_pcie_islands_with_noncontiguous_ids():
    t = parse_topo(read("topo_910B4-1_PCIe_PIX-PHB_noncontiguous-ids_fixture-no-legend.txt"))
    assert t["npus"] == [1, 3, 5, 7, 8, 9, 10, 11]
    assert t["links"]["1"]["3"] == "PIX" and t["links"]["1"]["8"] == "PHB" and t["links"]["11"]["10"] == "PIX"
    assert not t["all_fabric"] and t["islands"] == [[1, 3, 5, 7], [8, 9, 10, 11]]
    assert not t["legend"]


def test_ub_generation_with_cpu_lists_and_shrinking_columns():
    t = parse_topo(read("topo_A5-generation_official-doc_2card-UB_SIO-UB-legend.txt"))
    assert t["link_types"] == ["SYS", "UB"]
    assert t["islands"] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert t["links"]["5"]["4"] == "UB" and t["links"]["5"]["7"] == "SYS"
    assert t["affinity"]["4"] == "64-127,192-255"
    assert len(t["affinity_cpus"]["0"]) == 128


def test_cpu_lists():
    assert parse_cpus("0-3,8") == [0, 1, 2, 3, 8]
    assert parse_cpus("3-1") is None and parse_cpus("x") is None and parse_cpus("0-99999999") is None


def test_garbage_gives_empty_result():
    assert parse_topo("")["npus"] == [] and parse_topo("NPU0 X\n")["links"] == {"0": {"0": "X"}}
