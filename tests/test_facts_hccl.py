"""The ``hccl`` view on shapes the scenarios do not produce: ``hccn_tool`` answers (captured
``-ip -g`` output for the device of the one /dev/davinciN node, as when hccn.conf is missing),
the rank table 1.2 SuperPoD form with comments (MindCluster doc sample) and one real master connect (``--probe-master``, to a socket
of this test).  The section the probe writes must fit the view strictly and read back typed."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path
from typing import Mapping, Optional, Sequence

from strict_facts import undeclared

from npudoctor.context import Options, ProbeContext
from npudoctor.facts import Facts
from npudoctor.facts.hccl import HccnIp
from npudoctor.host import DEFAULT_TIMEOUT, CommandResult, Host
from npudoctor.parsers.hccn import split_transcript
from npudoctor.probes import hccl

FIXTURES = Path(__file__).resolve().parent / "fixtures"


class HccnToolHost(Host):
    """A host under ``root`` whose ``hccn_tool`` answers from a captured transcript; a call
    that was not captured fails (exit 1, as hccn_tool does for an unknown option)."""

    def __init__(self, root: Path, environ: Mapping[str, str]) -> None:
        super().__init__(root=str(root), environ=environ)
        text = (FIXTURES / "hccn_tool_ip_route_910B1_anonymized.txt").read_text(encoding="utf-8")
        self.answers = {tuple(argv[1:]): out for argv, out in split_transcript(text)}

    def which(self, name: str) -> Optional[str]:
        return "/captured/bin/hccn_tool" if name == "hccn_tool" else None

    def run(
        self, argv: Sequence[str], timeout: float = DEFAULT_TIMEOUT, env: Optional[Mapping[str, str]] = None
    ) -> CommandResult:
        out = self.answers.get(tuple(str(a) for a in argv[1:]))
        return CommandResult(argv=list(argv), returncode=0 if out is not None else 1, stdout=out or "")


def test_hccn_tool_rank_table_1_2_and_a_master_probe(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "dev").mkdir(parents=True)
    (root / "dev" / "davinci3").write_text("")
    shutil.copy(FIXTURES / "ranktable_v1.2_A3_superpod_mindcluster-doc_with-comments.jsonc.txt", root / "rt.json")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        environ = {
            "PATH": "/captured/bin",
            "RANK_TABLE_FILE": "/rt.json",
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
            "HCCL_WHITELIST_FILE": "/etc/hccl-whitelist.json",
        }
        ctx = ProbeContext(host=HccnToolHost(root, environ), options=Options(probe_master=True), facts={})
        section = hccl.probe(ctx)
    assert undeclared({"hccl": section}) == []
    facts = Facts({"hccl": section})
    view = facts.hccl
    assert facts.state("hccl") == "ok"
    assert view.variables["MASTER_PORT"] == str(port) and view.in_container.value is False
    assert view.dev_nodes == (3,) and view.hccn_conf.present is False and view.hccn_conf.devices == {}
    table = view.rank_table
    assert table is not None and table.ok and table.version == "1.2" and table.strict_json is False
    assert "comments" in table.tolerated and table.rank_count == sum(len(s.devices) for s in table.servers)
    assert table.super_pods and all(isinstance(pod.server_ids, tuple) for pod in table.super_pods)
    assert all(d.super_device_id is not None for s in table.servers for d in s.devices)
    tool = view.hccn_tool
    assert tool.path == "/captured/bin/hccn_tool" and tool.error is None
    three = tool.devices["3"]
    assert three.ip == HccnIp(ipaddr="198.51.100.213", netmask="255.255.0.0") and three.link is None
    assert three.commands == ("`hccn_tool -i 3 -ip -g`: exit 0", "`hccn_tool -i 3 -link -g`: exit 1")
    assert list(tool.devices) == ["3"]
    master = view.master
    assert (master.addr, master.port, master.port_raw) == ("127.0.0.1", port, str(port))
    assert master.probe is not None and master.probe.reachable is True and master.probe.error is None
    assert master.probe.timeout is not None and master.probe.seconds is not None
    assert view.whitelist.file == "/etc/hccl-whitelist.json" and view.whitelist.exists is False
    assert view.local.available is False and view.local.addresses == ()
