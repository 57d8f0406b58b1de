"""Rank-table parser (npudoctor.parsers.ranktable) and the rules' layout judgement
(npudoctor.rules._ranktable): the captured samples plus broken variants."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from npudoctor.facts._typed import load
from npudoctor.facts.hccl import RankTable
from npudoctor.parsers.ranktable import parse_ranktable, server_addresses
from npudoctor.rules._ranktable import layout_problems as _layout_problems


def layout_problems(table):
    """The judgement of a parsed rank table, read through its typed view as the rules do."""
    return _layout_problems(load(RankTable, table)[0])


V10 = "ranktable_v1.0_1server_8p_mindspore-doc.json"
V12 = "ranktable_v1.2_A3_superpod_mindcluster-doc_with-comments.jsonc.txt"


def kinds(table):
    return sorted(p["kind"] for p in layout_problems(table))


def test_v10_sample(fixture_text):
    t = parse_ranktable(fixture_text(V10))
    assert t["ok"] and t["strict_json"] and t["tolerated"] == []
    assert t["version"] == "1.0" and t["status"] == "completed" and t["server_count"] == 1
    (server,) = t["servers"]
    assert server["server_id"] == "10.155.111.140" and server["host_nic_ip"] == "reserve"
    assert [d["device_id"] for d in server["devices"]] == list(range(8))
    assert [d["rank_id"] for d in server["devices"]] == list(range(8))
    assert server["devices"][4]["device_ip"] == "192.1.27.7"
    assert server_addresses(server) == ["10.155.111.140"]
    assert layout_problems(t) == []


def test_v12_sample_with_comments(fixture_text):
    t = parse_ranktable(fixture_text(V12))
    assert t["ok"] and not t["strict_json"]
    assert t["tolerated"] == ["comments", "elisions"]
    assert t["version"] == "1.2"
    (server,) = t["servers"]
    assert server["server_id"] == "xx-xx-xx-xx" and server["hardware_type"] == "800I-A3-64G"
    assert server["container_ip"] == "192.168.149.xx"
    assert [(d["device_id"], d["rank_id"], d["super_device_id"]) for d in server["devices"]] == [
        (0, 0, "37748736"),
        (7, 7, "38600711"),
    ]
    assert t["super_pods"] == [{"super_pod_id": "0", "server_ids": ["xx-xx-xx-xx"]}]
    assert server_addresses(server) == []  # placeholders are not addresses
    problems = layout_problems(t)
    assert [p["kind"] for p in problems] == [
        "not-strict-json",
        "bad-device-ip",
        "bad-device-ip",
        "ranks-not-contiguous",
    ]
    assert problems[-1]["missing"] == [1, 2, 3, 4, 5, 6]


def _table(servers=2, n=4):
    sl = []
    for s in range(servers):
        sl.append(
            {
                "server_id": f"192.0.2.{s + 1}",
                "device": [
                    {"device_id": str(i), "device_ip": f"198.51.{100 + i}.{s + 1}", "rank_id": str(s * n + i)}
                    for i in range(n)
                ],
            }
        )
    return {"version": "1.0", "server_count": str(servers), "server_list": sl, "status": "completed"}


def test_broken_variants():
    good = _table()
    assert kinds(parse_ranktable(json.dumps(good))) == []

    dup = _table()
    dup["server_list"][1]["device"][0]["rank_id"] = "3"
    assert kinds(parse_ranktable(json.dumps(dup))) == ["duplicate-rank", "ranks-not-contiguous"]

    count = _table()
    count["server_count"] = "3"
    problems = layout_problems(parse_ranktable(json.dumps(count)))
    assert [(p["kind"], p["declared"], p["actual"]) for p in problems] == [("server-count", 3, 2)]

    ip = _table()
    ip["server_list"][1]["device"][2]["device_ip"] = ip["server_list"][0]["device"][2]["device_ip"]
    assert kinds(parse_ranktable(json.dumps(ip))) == ["duplicate-device-ip"]

    dev = _table()
    dev["server_list"][0]["device"][1]["device_id"] = "0"
    dev["server_list"][0]["device"][2]["device_id"] = "two"
    assert kinds(parse_ranktable(json.dumps(dev))) == ["bad-device-id", "duplicate-device-id"]

    pending = _table()
    pending["status"] = "initializing"
    pending["version"] = "2.0"
    assert kinds(parse_ranktable(json.dumps(pending))) == ["not-completed", "unknown-version"]


def test_integers_accepted():
    t = _table(1, 2)
    for d in t["server_list"][0]["device"]:
        d["rank_id"] = int(d["rank_id"])
        d["device_id"] = int(d["device_id"])
    t["server_count"] = 1
    parsed = parse_ranktable(json.dumps(t))
    assert [d["rank_id"] for d in parsed["servers"][0]["devices"]] == [0, 1]
    assert layout_problems(parsed) == []


def test_truncated_and_invalid():
    text = json.dumps(_table(), indent=2)
    cut = parse_ranktable(text[: len(text) // 3])
    assert not cut["ok"] and cut["truncated"]
    assert "truncated" in cut["error"]
    assert layout_problems(cut)[0]["kind"] == "unreadable"

    bad = parse_ranktable('{"version": "1.0", "server_list": [}] }')
    assert not bad["ok"] and not bad["truncated"]
    assert bad["error"].startswith("not valid JSON at line 1")

    empty = parse_ranktable("  \n")
    assert not empty["ok"] and empty["error"] == "the file is empty"

    arr = parse_ranktable("[1, 2]")
    assert not arr["ok"] and "list" in arr["error"]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_fuzz_text(text):
    t = parse_ranktable(text)
    layout_problems(t)


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda c: (
            st.lists(c, max_size=4)
            | st.dictionaries(
                st.sampled_from(
                    [
                        "version",
                        "server_list",
                        "device",
                        "rank_id",
                        "device_id",
                        "device_ip",
                        "server_id",
                        "server_count",
                        "super_pod_list",
                        "status",
                        "server_list",
                    ]
                ),
                c,
                max_size=5,
            )
        ),
        max_leaves=30,
    )
)
def test_fuzz_structure(value):
    layout_problems(parse_ranktable(json.dumps(value)))
