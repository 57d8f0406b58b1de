"""The ``devices`` view on shapes the scenarios do not produce, from real captured npu-smi
outputs (tests/fixtures): A3 chips with Phy-ID, ``info -m`` logic ids and ``-t board``,
processes, ``-t health`` details and topologies (fabric and PCIe, non-contiguous ids).  The
devices probe runs against a host whose npu-smi answers with the captures; the section it
writes must fit the view strictly and read back as typed values."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Mapping, Optional, Sequence, Tuple

import jsonschema
from strict_facts import undeclared

from npudoctor.context import Options, ProbeContext
from npudoctor.facts import Facts, facts_schema
from npudoctor.facts.devices import HealthDetail, NpuProcess
from npudoctor.host import DEFAULT_TIMEOUT, CommandResult, Host
from npudoctor.probes import devices

FIXTURES = Path(__file__).resolve().parent / "fixtures"
NPU_SMI = "/captured/bin/npu-smi"

#: The A3 ``-t board -i N -c C`` fields that name the SoC (Chip Name + "_" + NPU Name,
#: REPORT.md §4.2).  No A3 board output has been captured yet: this is the documented form,
#: while the 910-class board capture below (Chip Name masked as "xxx") is real.
A3_BOARD_DOCUMENTED = (
    "        Chip Type                      : Ascend\n"
    "        Chip Name                      : Ascend910\n"
    "        NPU Name                       : 9391\n"
)


def _read(name: str) -> str:
    return (FIXTURES / name).read_bytes().decode("utf-8", errors="replace")


class CapturedHost(Host):
    """A host under an empty root whose ``npu-smi`` prints captured outputs (keyed by the
    arguments after ``npu-smi``); any other call fails like an unknown sub-command."""

    def __init__(self, root: Path, outputs: Mapping[Tuple[str, ...], str]) -> None:
        super().__init__(root=str(root), environ={"PATH": "/captured/bin", "ASCEND_RT_VISIBLE_DEVICES": "0,1"})
        self.outputs = dict(outputs)
        self.calls: list = []

    def which(self, name: str) -> Optional[str]:
        return NPU_SMI if name == "npu-smi" else None

    def run(
        self, argv: Sequence[str], timeout: float = DEFAULT_TIMEOUT, env: Optional[Mapping[str, str]] = None
    ) -> CommandResult:
        key = tuple(str(a) for a in argv[1:])
        self.calls.append(key)
        text = self.outputs.get(key)
        if text is None:
            return CommandResult(argv=list(argv), returncode=1, stderr="unknown option", duration=0.01)
        return CommandResult(argv=list(argv), returncode=0, stdout=text, duration=0.01)


def _devices(tmp_path: Path, outputs: Dict[Tuple[str, ...], str]) -> Facts:
    host = CapturedHost(tmp_path, outputs)
    identity = {"uid": 0, "gid": 0, "groups": [0], "name": "root"}
    ctx = ProbeContext(host=host, options=Options(), facts={"host": {"identity": identity}})
    section = devices.probe(ctx)
    assert undeclared({"devices": section}) == []
    jsonschema.validate({"devices": section}, facts_schema(["devices"]))
    return Facts({"devices": section})


def test_a3_chips_processes_mapping_board_and_fabric_topology(tmp_path: Path) -> None:
    facts = _devices(
        tmp_path,
        {
            ("info",): _read("npu-smi-info_A3_Ascend910_25.2.0_2npu4chip_process-on-chip1_nputop-fixture.txt"),
            ("info", "-m"): _read("npu-smi-info-m_A3_Ascend910_PhyID-column_fixture-excerpt.txt"),
            ("info", "-t", "topo"): _read("topo_A5-generation_official-doc_2card-UB_SIO-UB-legend.txt"),
            ("info", "-t", "board", "-i", "0", "-c", "0"): A3_BOARD_DOCUMENTED,
        },
    )
    view = facts.devices
    assert facts.state("devices") == "ok"
    assert view.npu_smi.available is True and view.npu_smi.version == "25.2.0" and view.npu_smi.layout == "910"
    assert [c.argv[1:] for c in view.npu_smi.commands] == [
        ("info",),
        ("info", "-m"),
        ("info", "-t", "topo"),
        ("info", "-t", "board", "-i", "0", "-c", "0"),
    ]
    assert all(c.parsed and c.returncode == 0 and c.duration == 0.01 for c in view.npu_smi.commands)
    assert [(c.npu_id, c.chip_id, c.phy_id, c.logic_id) for c in view.chips] == [
        (0, 0, 0, 0),
        (0, 1, 1, 1),
        (1, 0, 2, 2),
        (1, 1, 3, None),  # the -m excerpt has no row for NPU 1 chip 1
    ]
    first, second = view.chips[0], view.chips[1]
    assert (first.power_w, second.power_w, first.temp_c, first.hbm_used_mb, first.hbm_total_mb) == (
        162.8,
        None,
        37.0,
        3133,
        65536,
    )
    assert {c.soc_version for c in view.chips} == {"Ascend910_9391"}
    assert first.soc_source == "npu-smi info -t board (Chip Name + NPU Name)"
    assert view.processes == (
        NpuProcess(npu_id=1, chip_id=1, pid=990711, name="python", memory_mb=7746, container_pid=None),
    )
    assert view.idle_npus == (0,)
    topo = view.topology
    assert topo is not None and topo.legend is True and topo.npus == tuple(range(8))
    assert topo.link_types == ("SYS", "UB") and topo.all_fabric is False
    assert topo.islands == ((0, 1), (2, 3), (4, 5), (6, 7))
    assert topo.affinity_cpus["4"] == tuple(range(64, 128)) + tuple(range(192, 256))
    assert view.visibility.ascend_rt_visible_devices == "0,1" and view.visibility.cuda_visible_devices is None
    assert view.visible_count == 4 and view.identity.uid == 0


def test_a_masked_board_leaves_the_soc_unmeasured(tmp_path: Path) -> None:
    facts = _devices(
        tmp_path,
        {
            ("info",): _read("npu-smi-info_A3_Ascend910_910_93_24.1.rc3.7_8npu16chip_noproc.txt"),
            ("info", "-t", "board", "-i", "0", "-c", "0"): _read(
                "npu-smi-info-t-board-i0-c0_chip_910-class_doc_serials-redacted.txt"
            ),
        },
    )
    view = facts.devices
    assert len(view.chips) == 16 and all(c.phy_id is not None for c in view.chips)
    assert {c.soc_version for c in view.chips} == {None}
    board = view.npu_smi.commands[-1]
    assert board.argv[1:4] == ("info", "-t", "board") and board.parsed is False
    assert view.topology is None and view.processes == ()


def test_unhealthy_chips_carry_their_health_detail(tmp_path: Path) -> None:
    alarm = _read("npu-smi-info-t-health_310B4_23.0.0_Alarm_80E3A203.txt")
    facts = _devices(
        tmp_path,
        {
            ("info",): _read("npu-smi-info_A3_Ascend910_Alarm-mixed_rows-excerpt_vllm-ascend-9395.txt"),
            ("info", "-t", "health", "-i", "0", "-c", "0"): alarm,
            ("info", "-t", "health", "-i", "0", "-c", "1"): alarm,
        },
    )
    chips = facts.devices.chips
    assert [c.health for c in chips] == ["Alarm", "Alarm", "OK", "OK"]
    detail = chips[0].health_detail
    assert isinstance(detail, HealthDetail) and detail.status == "Alarm" and detail.error_codes == ("80E3A203",)
    assert detail.information is not None and detail.information.startswith("node type=LPM")
    assert chips[2].health_detail is None


def test_pcie_topology_with_non_contiguous_ids(tmp_path: Path) -> None:
    facts = _devices(
        tmp_path,
        {
            ("info",): _read("npu-smi-info_910B3_23.0.7_8npu_noproc.txt"),
            ("info", "-t", "topo"): _read("topo_910B4-1_PCIe_PIX-PHB_noncontiguous-ids_fixture-no-legend.txt"),
        },
    )
    topo = facts.devices.topology
    assert topo is not None
    assert topo.npus == (1, 3, 5, 7, 8, 9, 10, 11) and topo.legend is False
    assert topo.links["1"]["3"] == "PIX" and topo.links["1"]["8"] == "PHB"
    assert topo.link_types == ("PHB", "PIX") and topo.all_fabric is False
    assert topo.islands == ((1, 3, 5, 7), (8, 9, 10, 11))
    assert topo.affinity["11"] == "0-23" and topo.affinity_cpus["11"] == tuple(range(24))
    assert facts.devices.idle_npus == tuple(range(8))
