"""hccn.conf and hccn_tool parsers against the captures in tests/fixtures/."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from npudoctor.parsers.hccn import (
    parse_hccn_conf,
    parse_hw_stats,
    parse_ip,
    parse_link,
    parse_ping,
    parse_route,
    parse_status,
    split_transcript,
)

CONF = "hccn.conf_910B1_8nic_elided-by-author_anonymized.txt"
IP_ROUTE = "hccn_tool_ip_route_910B1_anonymized.txt"
MISC = "hccn_tool_misc_status_hwstats_ping_910B1.txt"


def test_hccn_conf(fixture_text):
    conf = parse_hccn_conf(fixture_text(CONF))
    assert list(conf["devices"]) == ["0", "7"]
    assert conf["devices"]["0"] == {
        "address": "198.51.137.205",
        "netmask": "255.255.0.0",
        "netdetect": "198.51.0.1",
        "gateway": "198.51.0.1",
        "send_arp_status": "1",
    }
    assert conf["devices"]["7"]["address"] == "198.51.170.143"
    assert conf["elided"] is True
    assert conf["unparsed"] == [] and conf["other"] == {} and conf["duplicates"] == []


def test_hccn_conf_odd_lines():
    conf = parse_hccn_conf("# c\naddress_10 = 10.0.0.1\naddress_10=10.0.0.2\ntls_enable_2=0\nbitmap=1\ngarbage line\n")
    assert conf["devices"] == {"2": {"tls_enable": "0"}, "10": {"address": "10.0.0.2"}}
    assert conf["duplicates"] == [["address", "10"]]
    assert conf["other"] == {"bitmap": "1"}
    assert conf["unparsed"] == ["garbage line"]


def test_ip_and_route_transcript(fixture_text):
    blocks = split_transcript(fixture_text(IP_ROUTE))
    assert [b[0] for b in blocks] == [["hccn_tool", "-i", "3", "-ip", "-g"], ["hccn_tool", "-i", "3", "-route", "-g"]]
    assert parse_ip(blocks[0][1]) == {"ipaddr": "198.51.100.213", "netmask": "255.255.0.0"}
    routes = parse_route(blocks[1][1])
    assert len(routes) == 5
    assert routes[0] == {
        "destination": "default",
        "gateway": "198.51.0.1",
        "genmask": "0.0.0.0",
        "flags": "UG",
        "metric": "0",
        "ref": "0",
        "use": "0",
        "iface": "eth3",
    }
    assert [r["iface"] for r in routes] == ["eth3", "eth3", "lo", "end3v0", "end3v0"]


def test_status_hwstats_ping(fixture_text):
    blocks = {" ".join(argv[3:4]): out for argv, out in split_transcript(fixture_text(MISC))}
    status = parse_status(blocks["-status"])
    assert status["interface"] == "eth3" and status["speed_mbps"] == 200000
    assert status["fields"]["Supports auto-negotiation"] == "No"
    assert status["link_detected"] is None
    hw = parse_hw_stats(blocks["-hw_stats"])
    assert hw["device"] == 3 and len(hw["counters"]) == 14
    assert hw["counters"]["qp_active"] == 1 and hw["counters"]["mr_alloc"] == 0
    ping = parse_ping(blocks["-ping"])
    assert ping == {
        "device": 3,
        "target": "198.51.137.205",
        "transmitted": 3,
        "received": 3,
        "loss_percent": 0.0,
        "times_ms": [1.418, 0.034, 0.04],
    }


def test_link():
    assert parse_link("link status: UP\n") == "UP"
    assert parse_link("link status:down") == "DOWN"
    assert parse_link("") is None


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_fuzz(text):
    parse_hccn_conf(text)
    parse_ip(text)
    parse_link(text)
    parse_route(text)
    parse_status(text)
    parse_hw_stats(text)
    parse_ping(text)
    split_transcript(text)
