"""HCCL probe and rules, live mode (this machine's real addresses via psutil) and replayed
snapshots; the --root cases are in tests/scenarios/hccl-* and k19-*."""

from __future__ import annotations

import json
import os
import socket
import stat
import time

import psutil
import pytest
from clirun import npudoctor

from npudoctor.context import Options
from npudoctor.engine import collect, evaluate
from npudoctor.facts import Facts
from npudoctor.host import Host
from npudoctor.rules._hccl_job import job_shape
from npudoctor.snapshot import Snapshot

LOOPBACK_IF = next(
    (n for n, addrs in psutil.net_if_addrs().items() if any(a.address == "127.0.0.1" for a in addrs)), None
)


def run(environ, options=None, root="/"):
    """Collect host+hccl against ``root`` with ``environ`` and evaluate every rule."""
    opts = options or Options()
    snap = collect(Host(root=root, environ=environ), opts, sections=["host", "hccl"])
    return snap, evaluate(snap, None, opts)


def codes(findings):
    return sorted({f.code for f in findings if f.code.startswith("HCCL")})


def base_env(tmp_path, **extra):
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)}
    env.update(extra)
    return env


def test_live_local_addresses_and_if_ip(tmp_path):
    snap, found = run(base_env(tmp_path, HCCL_IF_IP="203.0.113.77"))
    local = snap.facts["hccl"]["local"]
    assert local["available"] and local["source"] == "psutil.net_if_addrs()"
    assert "127.0.0.1" in {a["address"] for a in local["addresses"]}
    (f,) = [f for f in found if f.code == "HCCL009"]
    assert f.severity == "error" and "203.0.113.77" in f.title
    assert f.fix[0].startswith("export HCCL_IF_IP=")

    _, ok = run(base_env(tmp_path, HCCL_IF_IP="127.0.0.1"))
    assert "HCCL009" not in codes(ok)
    _, bad = run(base_env(tmp_path, HCCL_IF_IP="eth0"))
    assert [f.title for f in bad if f.code == "HCCL009"] == ["HCCL_IF_IP=eth0 is not an IP address"]


def test_addresses_read_only_when_a_variable_names_one(tmp_path):
    """Nothing is compared with this node's addresses unless RANK_TABLE_FILE, MASTER_ADDR,
    HCCL_IF_IP or HCCL_SOCKET_IFNAME is set: then they are not read (live: no psutil)."""
    snap, found = run(base_env(tmp_path, HCCL_CONNECT_TIMEOUT="600", MASTER_ADDR=" "))
    local = snap.facts["hccl"]["local"]
    assert local == {
        "available": False,
        "reason": "not read: none of RANK_TABLE_FILE, MASTER_ADDR, HCCL_IF_IP, HCCL_SOCKET_IFNAME is set",
        "interfaces": [],
        "addresses": [],
        "source": None,
    }
    assert codes(found) == []
    for name, value in (("MASTER_ADDR", "127.0.0.1"), ("RANK_TABLE_FILE", str(tmp_path / "none.json"))):
        snap, _ = run(base_env(tmp_path, **{name: value}))
        assert snap.facts["hccl"]["local"]["source"] == "psutil.net_if_addrs()", name


@pytest.mark.skipif(LOOPBACK_IF is None, reason="no loopback interface with 127.0.0.1")
def test_socket_ifname(tmp_path):
    _, found = run(base_env(tmp_path, HCCL_SOCKET_IFNAME="nosuchnic9"))
    (f,) = [f for f in found if f.code == "HCCL010"]
    assert "nosuchnic9" in f.title and LOOPBACK_IF in f.evidence[1]
    for ok in (LOOPBACK_IF, f"={LOOPBACK_IF}", LOOPBACK_IF[:1], f"{LOOPBACK_IF},nosuch"):
        _, found = run(base_env(tmp_path, HCCL_SOCKET_IFNAME=ok))
        assert "HCCL010" not in codes(found), ok
    _, found = run(base_env(tmp_path, HCCL_SOCKET_IFNAME=f"=x{LOOPBACK_IF}"))
    assert "HCCL010" in codes(found)


def test_under_root_addresses_unknown(tmp_path):
    (tmp_path / "root").mkdir()
    snap, found = run(
        base_env(tmp_path, HCCL_IF_IP="203.0.113.77", HCCL_SOCKET_IFNAME="nosuch"), root=str(tmp_path / "root")
    )
    local = snap.facts["hccl"]["local"]
    assert local["available"] is False and "--root" in local["reason"]
    assert codes(found) == []  # nothing claimed without the addresses


def _write_table(path, server_ids, n=2):
    sl = []
    for s, sid in enumerate(server_ids):
        sl.append(
            {
                "server_id": sid,
                "device": [
                    {"device_id": str(i), "device_ip": f"198.51.{100 + i}.{s + 1}", "rank_id": str(s * n + i)}
                    for i in range(n)
                ],
            }
        )
    path.write_text(
        json.dumps({"version": "1.0", "server_count": str(len(sl)), "server_list": sl, "status": "completed"})
    )


def test_server_not_local_live(tmp_path):
    table = tmp_path / "hccl.json"
    _write_table(table, ["203.0.113.5", "203.0.113.6"])
    snap, found = run(base_env(tmp_path, RANK_TABLE_FILE=str(table), HCCL_CONNECT_TIMEOUT="900"))
    assert job_shape(Facts(snap.facts).hccl)["multi_node"] == {
        "value": True,
        "reasons": ["the rank table lists 2 servers"],
    }
    (f,) = [f for f in found if f.code == "HCCL008"]
    assert "203.0.113.5, 203.0.113.6" in f.evidence[0]

    _write_table(table, ["127.0.0.1", "203.0.113.6"])
    _, found = run(base_env(tmp_path, RANK_TABLE_FILE=str(table), HCCL_CONNECT_TIMEOUT="900"))
    assert "HCCL008" not in codes(found)


def test_relative_rank_table_and_missing(tmp_path):
    _, found = run(base_env(tmp_path, RANK_TABLE_FILE=str(tmp_path / "nope.json")))
    (f,) = [f for f in found if f.code == "HCCL001"]
    assert "not found" in f.title


def test_master_probe_one_connect(tmp_path):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        env = base_env(tmp_path, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        snap, found = run(env, Options(probe_master=True))
        assert snap.facts["hccl"]["master"]["probe"]["reachable"] is True
        assert "HCCL016" not in codes(found)
        snap, _ = run(env)  # not asked: no connect at all
        assert snap.facts["hccl"]["master"]["probe"] is None
    finally:
        server.close()
    start = time.monotonic()
    snap, found = run(env, Options(probe_master=True))
    assert time.monotonic() - start < 5
    (f,) = [f for f in found if f.code == "HCCL016"]
    assert f"127.0.0.1:{port}" in f.title
    _, found = run(base_env(tmp_path, MASTER_ADDR="127.0.0.1", MASTER_PORT="70000"), Options(probe_master=True))
    assert "HCCL017" in codes(found)


def _tool(tmp_path, body):
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    tool = bindir / "hccn_tool"
    tool.write_text("#!/bin/sh\n" + body)
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)


def test_hccn_tool_differs_and_link_down(tmp_path, fixture_text):
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "hccn.conf").write_text(fixture_text("hccn.conf_910B1_8nic_elided-by-author_anonymized.txt"))
    ip_out = fixture_text("hccn_tool_ip_route_910B1_anonymized.txt").split("\n\n")[0].split("\n", 1)[1]
    _tool(tmp_path, f'case "$3" in -ip) printf "%s\\n" "{ip_out.strip()}";; -link) echo "link status: DOWN";; esac\n')
    snap, found = run(base_env(tmp_path, NNODES="2", HCCL_CONNECT_TIMEOUT="900"), root=str(root))
    tool = snap.facts["hccl"]["hccn_tool"]
    assert sorted(tool["devices"]) == ["0", "7"]
    assert tool["devices"]["0"]["ip"] == {"ipaddr": "198.51.100.213", "netmask": "255.255.0.0"}
    diff = [f for f in found if f.code == "HCCL019"]
    assert [f.subject for f in diff] == ["0", "7"]
    assert "address_0=198.51.137.205" in diff[0].title
    # the netmask of /etc/hccn.conf completes the command (no <M> placeholder)
    assert [r["command"] for r in diff[0].remedies] == [
        "hccn_tool -i 0 -ip -s address 198.51.137.205 netmask 255.255.0.0"
    ]
    down = [f for f in found if f.code == "HCCL020"]
    assert [f.severity for f in down] == ["warning", "warning"]
    assert [r["command"] for r in down[0].remedies] == ["hccn_tool -i 0 -link -g"]


def test_hung_hccn_tool_is_bounded(tmp_path):
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "hccn.conf").write_text("".join(f"address_{i}=10.0.0.{i}\n" for i in range(8)))
    _tool(tmp_path, "trap '' TERM\nsleep 60\n")
    start = time.monotonic()
    snap, _ = run(base_env(tmp_path), Options(command_timeout=0.5), root=str(root))
    assert time.monotonic() - start < 5
    tool = snap.facts["hccl"]["hccn_tool"]
    assert "no answer" in tool["error"] and list(tool["devices"]) == ["0"]


def test_replayed_snapshot_uses_device_chips():
    """The devices section (npu-smi) wins over /dev nodes; missing keys never break rules."""
    table = {
        "ok": True,
        "path": "/etc/hccl.json",
        "servers": [
            {
                "index": 0,
                "server_id": "10.0.0.1",
                "devices": [{"device_id": 0, "device_ip": "10.1.0.1"}, {"device_id": 5, "device_ip": "10.1.0.2"}],
            }
        ],
        "problems": [],
    }
    facts = {
        "hccl": {"rank_table": table, "dev_nodes": [0, 5], "hccn_conf": {"present": False}},
        "devices": {"chips": [{"phy_id": 0}, {"phy_id": 1}]},
    }
    found = evaluate(Snapshot(facts=facts), None, Options())
    (f,) = [f for f in found if f.code == "HCCL006"]
    assert "device ids 5" in f.title and "npu-smi" in f.evidence[1]
    # Sections absent or odd: no crash, no HCCL finding.
    for odd in ({}, {"hccl": {"rank_table": "x", "variables": None}}, {"hccl": {"master": {"probe": {}}}}):
        found = evaluate(Snapshot(facts=odd), None, Options())
        assert codes(found) == [] and not [f for f in found if f.code == "HOST099"]


def test_hccn_missing_says_what_shows_a_container(tmp_path):
    """HCCL014 names the container markers; an old snapshot's bare "container section" is never shown."""
    hccl = {
        "rank_table": {"ok": True, "servers": [{"index": 0}, {"index": 1}]},  # multi-node (the rules infer it)
        "in_container": {"value": True, "source": "container section"},
        "hccn_conf": {"path": "/etc/hccn.conf", "present": False},
    }
    container = {"in_container": True, "runtime": "containerd", "evidence": ["KUBERNETES_SERVICE_HOST is set"]}
    found = evaluate(Snapshot(facts={"hccl": hccl, "container": container}), None, Options())
    (f,) = [f for f in found if f.code == "HCCL014"]
    assert f.evidence == [
        "multi-node: the rank table lists 2 servers",
        "/etc/hccn.conf: not found",
        "in a container (containerd): KUBERNETES_SERVICE_HOST is set",
    ]
    (old,) = [f for f in evaluate(Snapshot(facts={"hccl": hccl}), None, Options()) if f.code == "HCCL014"]
    assert old.evidence[-1] == "in a container"
    # Without the container probe, the hccl probe's own marker is the evidence.
    (tmp_path / ".dockerenv").write_text("")
    snap = collect(Host(root=str(tmp_path), environ=base_env(tmp_path)), Options(), sections=["host", "hccl"])
    assert snap.facts["hccl"]["in_container"] == {"value": True, "source": "/.dockerenv exists"}


def test_cli_check_json(tmp_path):
    """Through the CLI: the hccl section is in check --json and RANK_TABLE_FILE faults are named."""

    table = tmp_path / "hccl.json"
    table.write_text('{"version": "1.0", "server_list": [')
    env = dict(os.environ, RANK_TABLE_FILE="/hccl.json")  # a path of the diagnosed root
    proc = npudoctor("check", "--root", str(tmp_path), "--json", env=env)
    doc = json.loads(proc.stdout)
    assert doc["facts"]["hccl"]["rank_table"]["truncated"] is True
    assert any(f["code"] == "HCCL001" and f["severity"] == "error" for f in doc["findings"])
    assert proc.returncode == 1


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_KEYS = [
    "variables",
    "rank_table",
    "hccn_conf",
    "local",
    "multi_node",
    "master",
    "hccn_tool",
    "whitelist",
    "in_container",
    "dev_nodes",
    "servers",
    "devices",
    "device_id",
    "device_ip",
    "value",
    "addresses",
    "address",
    "available",
    "probe",
    "reachable",
    "ok",
    "problems",
    "kind",
    "HCCL_IF_IP",
    "HCCL_EXEC_TIMEOUT",
    "port_raw",
    "port",
    "interfaces",
    "present",
    "ip",
    "ipaddr",
    "link",
]


@settings(max_examples=300, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers(-3, 70000) | st.sampled_from(["0", "1", "10.0.0.1", "DOWN", "x"]),
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(_KEYS), c, max_size=5),
        max_leaves=30,
    )
)
def test_rules_never_crash_on_odd_facts(hccl):
    found = evaluate(Snapshot(facts={"hccl": hccl}), None, Options())
    assert not [f for f in found if f.code == "HOST099" and "hccl" in (f.subject or "")]


def test_master_port_that_is_not_a_number_is_reported_not_a_crash():
    # Found by test_rules_never_crash_on_odd_facts: a master "port" of "10.0.0.1" made
    # master_and_whitelist raise ValueError; the view reads it as no port (a problem).
    master = {"addr": "10.0.0.2", "port": "10.0.0.1", "port_raw": "10.0.0.1"}
    found = evaluate(Snapshot(facts={"hccl": {"master": master}}), None, Options())
    assert not [f for f in found if f.code == "HOST099"]
    (bad,) = [f for f in found if f.code == "HCCL017"]
    assert bad.title == "MASTER_PORT=10.0.0.1 is not a TCP port (1-65535)"
