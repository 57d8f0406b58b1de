"""HCCL_IF_IP / HCCL_SOCKET_IFNAME judged under --root from the root's network files (issue
33): /sys/class/net, /proc/net/fib_trie with /proc/net/route, /proc/net/if_inet6."""

from __future__ import annotations

from pathlib import Path

from npudoctor.context import Options
from npudoctor.engine import collect, evaluate
from npudoctor.host import Host
from npudoctor.parsers import netfiles

#: The kernel's /proc/net/fib_trie and /proc/net/route of a container with eth0 192.0.2.2/24
#: (captured on the build machine, addresses from the documentation range).
FIB_TRIE = """Main:
  +-- 0.0.0.0/0 3 0 5
     |-- 0.0.0.0
        /0 universe UNICAST
     +-- 127.0.0.0/8 2 0 2
        +-- 127.0.0.0/31 1 0 0
           |-- 127.0.0.0
              /8 host LOCAL
           |-- 127.0.0.1
              /32 host LOCAL
        |-- 127.255.255.255
           /32 link BROADCAST
     +-- 192.0.2.0/24 2 0 2
        +-- 192.0.2.0/30 2 0 2
           |-- 192.0.2.0
              /24 link UNICAST
           |-- 192.0.2.2
              /32 host LOCAL
        |-- 192.0.2.255
           /32 link BROADCAST
"""
ROUTE = (
    "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
    "eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
    "eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
)
IF_INET6 = "00000000000000000000000000000001 01 80 10 80       lo\n"


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    for name in ("eth0", "lo"):
        (root / "sys/class/net" / name).mkdir(parents=True)
    (root / "proc/net").mkdir(parents=True)
    (root / "proc/net/fib_trie").write_text(FIB_TRIE)
    (root / "proc/net/route").write_text(ROUTE)
    (root / "proc/net/if_inet6").write_text(IF_INET6)
    return root


def _run(root: Path, **env):
    environ = {"PATH": "/usr/bin:/bin", **env}
    snap = collect(Host(root=str(root), environ=environ), Options(), sections=["host", "hccl"])
    return snap, [f for f in evaluate(snap, None, Options()) if f.code in ("HCCL009", "HCCL010")]


def test_parsers():
    assert netfiles.fib_trie_local(FIB_TRIE) == ["127.0.0.1", "192.0.2.2"]
    table = netfiles.routes(ROUTE)
    assert netfiles.interface_of("192.0.2.2", table) == "eth0"
    assert netfiles.if_inet6(IF_INET6) == [{"interface": "lo", "family": "ipv6", "address": "::1"}]


def test_addresses_read_under_root(tmp_path):
    snap, found = _run(_root(tmp_path), HCCL_IF_IP="192.0.2.2", HCCL_SOCKET_IFNAME="eth0")
    local = snap.facts["hccl"]["local"]
    assert local["available"] is True and local["interfaces"] == ["eth0", "lo"]
    assert {"interface": "eth0", "family": "ipv4", "address": "192.0.2.2"} in local["addresses"]
    assert local["source"].startswith("/sys/class/net, /proc/net/fib_trie")
    assert found == []


def test_wrong_address_and_interface_under_root(tmp_path):
    _, found = _run(_root(tmp_path), HCCL_IF_IP="203.0.113.77", HCCL_SOCKET_IFNAME="eth9")
    codes = sorted(f.code for f in found)
    assert codes == ["HCCL009", "HCCL010"]
    assert any("203.0.113.77" in f.title for f in found if f.code == "HCCL009")


def test_root_without_network_files_stays_unknown(tmp_path):
    root = tmp_path / "bare"
    root.mkdir()
    snap, found = _run(root, HCCL_IF_IP="203.0.113.77")
    assert snap.facts["hccl"]["local"]["available"] is False
    assert found == []
