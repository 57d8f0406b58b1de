"""`npudoctor compare`: one drift at a time (CANN, driver, torch_npu post build, an HCCL
variable) over snapshots really collected from --root trees; inputs; exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders.stacktree import build_root, collect
from builders.stacktree import npudoctor_inprocess as npudoctor

from npudoctor.cluster.compare import compare, compare_inputs, fingerprint
from npudoctor.cluster.inputs import iter_inputs
from npudoctor.snapshot import pseudonym

BASE_ENV = {"HCCL_CONNECT_TIMEOUT": "900", "ASCEND_RT_VISIBLE_DEVICES": "0,1,2,3"}


@pytest.fixture(scope="module")
def snaps(tmp_path_factory):
    """Snapshots: the base stack twice, and one node per kind of drift."""
    base = tmp_path_factory.mktemp("compare")
    out = {}

    def make(name, env=None, **kw):
        root = build_root(base / name / "root", hostname=name, **kw)
        out[name] = collect(root, base / f"{name}.json", env=dict(BASE_ENV, **(env or {})))

    make("base-a")
    make("base-b")
    make("cann", cann="8.0.RC3")
    make("driver", driver="23.0.6")
    make("driver-2", driver="23.0.6")
    make("driver-3", driver="23.0.6")
    make("post", torch_npu="2.1.0.post4")
    make("hccl", env={"HCCL_CONNECT_TIMEOUT": "120"})
    make("vis", env={"ASCEND_RT_VISIBLE_DEVICES": "0,1"})
    # host name base-a again, with another CANN: a second machine or a stale snapshot
    root = build_root(base / "base-a-old" / "root", hostname="base-a", cann="8.0.RC3")
    out["base-a-old"] = collect(root, base / "base-a-old.json", env=BASE_ENV)
    return out


@pytest.mark.parametrize(
    "changed, field, value, majority",
    [
        ("cann", "cann.toolkit", "8.0.RC3", "8.0.0"),
        ("driver", "driver", "23.0.6", "24.1.rc2"),
        ("post", "torch_npu", "2.1.0.post4", "2.1.0.post3"),
        ("hccl", "env.HCCL_CONNECT_TIMEOUT", "120", "900"),
        ("vis", "env.ASCEND_RT_VISIBLE_DEVICES", "0,1", "0,1,2,3"),
    ],
)
def test_one_drift_at_a_time(snaps, changed, field, value, majority):
    items = [("a.json", snaps["base-a"]), ("b.json", snaps["base-b"]), ("c.json", snaps[changed])]
    report = compare(items)
    assert report["nodes"] == 3 and report["drift"] is True
    assert report["majority"][field] == majority
    assert report["split"] == [] and report["unreadable"] == []
    (diff,) = report["differing"]
    # Snapshots are redacted by default: the node label is the host name's pseudonym.
    assert diff["node"] == pseudonym(changed) and diff["source"] == "c.json"
    assert diff["differences"] == [{"field": field, "value": value, "majority": majority}]
    assert report["majority_nodes"] == 2


def test_no_drift(snaps):
    report = compare([("a", snaps["base-a"]), ("b", snaps["base-b"])])
    assert report["drift"] is False and report["differing"] == [] and report["majority_nodes"] == 2
    fp = fingerprint(snaps["base-a"]["facts"])
    assert fp["torch"] == "2.1.0" and fp["cann.toolkit"] == "8.0.0" and fp["driver"] == "24.1.rc2"
    assert fp["python"] == "3.10"


def test_split_and_unknown(snaps):
    report = compare([("a", snaps["base-a"]), ("c", snaps["cann"])])
    assert report["drift"] is True and report["differing"] == []
    assert report["split"] == [
        {"field": "cann.toolkit", "values": {"8.0.0": [pseudonym("base-a")], "8.0.RC3": [pseudonym("cann")]}}
    ]
    partial = json.loads(json.dumps(snaps["base-b"]))
    del partial["facts"]["driver"]
    report = compare([("a", snaps["base-a"]), ("b", partial), ("a2", snaps["base-a"])])
    assert report["differing"] == [] and report["split"] == []
    assert report["unknown"] == [{"node": pseudonym("base-b"), "fields": ["driver", "firmware"]}]
    # the same snapshot given twice counts once
    assert report["nodes"] == 2 and report["repeated"] == [{"source": "a2", "same_as": "a"}]
    assert report["duplicates"] == []


def test_the_summary_line_accounts_for_every_node(snaps):
    """Each node is counted once in the first line: matching, differing, not telling a
    field, or agreeing with the majority wherever one exists (a split field has none)."""
    from npudoctor.report.compare import render

    two = compare([("a", snaps["base-a"]), ("c", snaps["cann"])])
    assert render(two).splitlines()[0] == (
        "Compared 2 node(s): 0 match the majority, 0 differ, 2 agree wherever there is a majority, "
        "1 field(s) split, 0 unreadable."
    )
    partial = json.loads(json.dumps(snaps["base-b"]))
    del partial["facts"]["driver"]
    told = compare([("a", snaps["base-a"]), ("b", partial)])
    assert render(told).splitlines()[0] == (
        "Compared 2 node(s): 1 match the majority, 0 differ, 1 do not tell every field, 0 field(s) split, 0 unreadable."
    )


def test_cli_files_directory_and_stdin(snaps, tmp_path):
    d = tmp_path / "snaps"
    d.mkdir()
    for name in ("base-a", "base-b", "driver"):
        (d / f"{name}.json").write_text(json.dumps(snaps[name], indent=2))
    (d / "notes.txt").write_text("ignored")
    proc = npudoctor("compare", str(d))
    assert proc.returncode == 1, proc.stderr
    assert pseudonym("driver") in proc.stdout and "driver: 23.0.6  (majority: 24.1.rc2)" in proc.stdout

    proc = npudoctor("compare", str(d / "base-a.json"), str(d / "base-b.json"), "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["drift"] is False
    assert "No drift" in npudoctor("compare", str(d / "base-a.json"), str(d / "base-b.json")).stdout

    lines = "\n".join(json.dumps(snaps[n]) for n in ("base-a", "post", "base-b")) + "\n"
    proc = npudoctor("compare", "--json", input=lines)
    report = json.loads(proc.stdout)
    assert proc.returncode == 1 and [x["node"] for x in report["differing"]] == [pseudonym("post")]
    assert report["differing"][0]["source"] == "stdin:2"

    jsonl = tmp_path / "all.jsonl"
    jsonl.write_text(lines)
    assert json.loads(npudoctor("compare", str(jsonl), "--json").stdout)["nodes"] == 3


def test_nodes_that_differ_alike_are_said_once(snaps):
    from npudoctor.report.compare import render

    # two more nodes of the base stack (its snapshots under other node labels): the majority
    names = ["base-a", "base-b", "cann", "driver", "driver-2", "driver-3"]
    items = [(f"{name}.json", snaps[name]) for name in names]
    items += [(f"{name}-copy.json", dict(snaps[name], node=f"{name}-copy")) for name in ("base-a", "base-b")]
    lines = render(compare(items)).splitlines()
    start = lines.index("Nodes that differ from the majority:")
    drivers = ", ".join(f"{pseudonym(n)}  ({n}.json)" for n in ("driver", "driver-2", "driver-3"))
    assert lines[start + 1 :] == [
        f"  3 nodes: {drivers}",
        "      driver: 23.0.6  (majority: 24.1.rc2)",
        f"  {pseudonym('cann')}  (cann.json)",
        "      cann.toolkit: 8.0.RC3  (majority: 8.0.0)",
    ]
    # --limit counts nodes: a group is listed whole, the first one always
    short = render(compare(items), limit=3).splitlines()
    assert short[start + 1 :] == [
        f"  3 nodes: {drivers}",
        "      driver: 23.0.6  (majority: 24.1.rc2)",
        "  ... and 1 more (use --json for all)",
    ]
    assert render(compare(items), limit=1).splitlines()[start + 1 :] == short[start + 1 :]


def test_cli_bad_input(snaps, tmp_path):
    proc = npudoctor("compare", str(tmp_path / "missing.json"))
    assert proc.returncode == 2 and "no such file" in proc.stderr
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": 1, "facts": ')
    good = tmp_path / "good.json"
    good.write_text(json.dumps(snaps["base-a"]))
    proc = npudoctor("compare", str(good), str(bad), "--json")
    report = json.loads(proc.stdout)
    assert proc.returncode == 1 and report["unreadable"][0]["source"] == str(bad)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert npudoctor("compare", str(empty)).returncode == 2
    assert npudoctor("compare", input="").returncode == 2


def test_a_truncated_pretty_printed_snapshot_is_one_error(snaps, tmp_path):
    """A pretty-printed snapshot cut short is one document that ends early, not JSON Lines
    (its first line ``{`` is no document): one error for the file, here and on stdin; a
    whole pretty-printed snapshot on stdin is read as one."""
    pretty = json.dumps(snaps["base-a"], indent=2)
    cut = tmp_path / "cut.json"
    cut.write_text(pretty[: len(pretty) // 2])
    lines = len(pretty[: len(pretty) // 2].splitlines())  # the cut may fall just after a newline
    good = tmp_path / "good.json"
    good.write_text(json.dumps(snaps["base-b"]))
    report = json.loads(npudoctor("compare", str(good), str(cut), "--json").stdout)
    assert report["unreadable"] == [
        {"source": str(cut), "error": f"not valid JSON: the document ends early, at line {lines} (truncated?)"}
    ]
    piped = json.loads(npudoctor("compare", "--json", input=cut.read_text()).stdout)
    assert [u["source"] for u in piped["unreadable"]] == ["stdin"]
    whole = json.loads(npudoctor("compare", "--json", input=pretty).stdout)
    assert whole["nodes"] == 1 and whole["unreadable"] == []
    # JSON Lines whose last line is cut: the lines before it still count
    jsonl = tmp_path / "cut.jsonl"
    jsonl.write_text(json.dumps(snaps["base-a"]) + "\n" + json.dumps(snaps["post"])[:100] + "\n")
    report = json.loads(npudoctor("compare", str(jsonl), "--json").stdout)
    assert report["nodes"] == 1 and [u["source"] for u in report["unreadable"]] == [f"{jsonl}:2"]


def _write(path, snap, created=None):
    snap = json.loads(json.dumps(snap))
    if created:
        snap["created"] = created
    path.write_text(json.dumps(snap), encoding="utf-8")
    return str(path)


def test_same_file_twice_is_one_node(snaps, tmp_path):
    """`compare k10.json k10.json`, or a file also inside a directory given, or a copy."""
    d = tmp_path / "snaps"
    d.mkdir()
    a = _write(d / "a.json", snaps["base-a"])
    b = _write(d / "b.json", snaps["base-b"])
    proc = npudoctor("compare", a, a, "--json")
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report["nodes"] == 1 and report["majority_nodes"] == 1
    assert report["repeated"] == [{"source": a, "same_as": a}]

    copy = _write(tmp_path / "copy-of-a.json", snaps["base-a"])
    report = json.loads(npudoctor("compare", str(d), a, copy, "--json").stdout)
    assert report["nodes"] == 2 and report["majority_nodes"] == 2 and report["drift"] is False
    assert report["repeated"] == [{"source": a, "same_as": a}, {"source": copy, "same_as": a}]
    text = npudoctor("compare", a, a, b).stdout
    assert text.startswith("Compared 2 node(s): 2 match the majority")
    assert f"Given more than once (the same snapshot), counted once: {a}\n" in text


def test_same_node_label_with_the_same_stack_counts_once(snaps, tmp_path):
    """Two collections of one machine (different times, nothing changed)."""
    old = _write(tmp_path / "a-monday.json", snaps["base-a"], created="2025-01-06T08:00:00Z")
    new = _write(tmp_path / "a-friday.json", snaps["base-a"], created="2025-01-10T08:00:00Z")
    b = _write(tmp_path / "b.json", snaps["base-b"])
    proc = npudoctor("compare", new, old, b, "--json")
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report["drift"] is False
    assert report["nodes"] == 2 and report["majority_nodes"] == 2 and report["repeated"] == []
    assert report["duplicates"] == [
        {"node": pseudonym("base-a"), "sources": [new, old], "used": new, "identical": True, "differences": []}
    ]
    text = npudoctor("compare", new, old, b).stdout
    assert f"Node {pseudonym('base-a')} appears in 2 snapshots ({new}, {old}): the same stack, counted once." in text


def test_same_node_label_with_different_stacks_is_drift(snaps, tmp_path):
    """One host name, two stacks: the newest stands for the node, and the operator is told."""
    stale = _write(tmp_path / "a-stale.json", snaps["base-a-old"], created="2025-01-06T08:00:00Z")
    fresh = _write(tmp_path / "a-fresh.json", snaps["base-a"], created="2025-01-10T08:00:00Z")
    b = _write(tmp_path / "b.json", snaps["base-b"])
    proc = npudoctor("compare", fresh, stale, b, "--json")
    report = json.loads(proc.stdout)
    assert proc.returncode == 1 and report["drift"] is True
    # counted once, as the fresh snapshot: it agrees with base-b, so nothing else differs
    assert report["nodes"] == 2 and report["differing"] == [] and report["split"] == []
    assert report["majority"]["cann.toolkit"] == "8.0.0" and report["majority_nodes"] == 2
    (dup,) = report["duplicates"]
    assert dup["node"] == pseudonym("base-a") and dup["used"] == fresh and dup["identical"] is False
    assert dup["differences"] == [{"field": "cann.toolkit", "values": {fresh: "8.0.0", stale: "8.0.RC3"}}]
    text = npudoctor("compare", stale, fresh, b).stdout
    assert (
        f"Node {pseudonym('base-a')} appears in 2 snapshots that differ ({stale}, {fresh}): "
        f"counted once, as {fresh} (the newest)."
    ) in text
    assert f"      cann.toolkit: {stale}: 8.0.RC3, {fresh}: 8.0.0\n" in text


def test_unlabeled_snapshots_are_told_apart_by_file(snaps, tmp_path):
    """No node label: two files are two nodes, even with one base name."""
    one, two = tmp_path / "x", tmp_path / "y"
    one.mkdir()
    two.mkdir()
    a = json.loads(json.dumps(snaps["base-a"]))
    a["node"] = ""
    b = json.loads(json.dumps(snaps["base-b"]))
    b["node"] = ""
    pa, pb = _write(one / "snap.json", a), _write(two / "snap.json", b)
    report = compare(iter_inputs([pa, pb]))
    assert report["nodes"] == 2 and report["duplicates"] == [] and report["repeated"] == []
    assert report["majority_nodes"] == 2 and report["unknown"] == []
    report = compare(iter_inputs([pa, str(tmp_path / "x")]))
    assert report["nodes"] == 1 and report["repeated"] == [{"source": str(one / "snap.json"), "same_as": pa}]


def test_iter_inputs_directory_order(tmp_path, snaps):
    for name in ("b", "a"):
        (tmp_path / f"{name}.json").write_text(json.dumps(snaps["base-a"]))
    assert [s for s, _ in iter_inputs([str(tmp_path)])] == [str(tmp_path / "a.json"), str(tmp_path / "b.json")]


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_SECTIONS = ["host", "python", "packages", "cann", "driver", "devices", "hccl"]
_KEYS = [
    "installed",
    "torch",
    "torch-npu",
    "version",
    "selected",
    "kernels",
    "nnal",
    "driver",
    "firmware",
    "chips",
    "family",
    "name",
    "variables",
    "visibility",
    "HCCL_X",
    "socs",
    "installed",
    "arch",
    "implementation",
]


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(_SECTIONS),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=5),
            lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(_KEYS), c, max_size=4),
            max_leaves=25,
        ),
    )
)
def test_fingerprint_never_crashes(facts):
    fp = fingerprint(facts)
    assert all(v is None or isinstance(v, str) for v in fp.values())
    compare([("x", {"schema_version": 1, "facts": facts}), ("y", {"schema_version": 1, "facts": {}})])


def test_worker_processes_give_the_report_of_one_process(snaps, tmp_path):
    """Many files are read and fingerprinted in worker processes (issue 18); the report is
    the same as reading them here, in the same order, with the same repeats, copies,
    duplicates and unreadable inputs."""
    d = tmp_path / "snaps"
    d.mkdir()
    paths = []
    for n in range(40):
        snap = json.loads(json.dumps(snaps["cann" if n % 7 == 3 else "base-a"]))
        snap["node"] = f"node-{n:02d}"
        paths.append(_write(d / f"node-{n:02d}.json", snap))
    copy = _write(d / "zz-copy-of-00.json", json.loads(Path(paths[0]).read_text()))
    (d / "broken.json").write_text('{"schema_version": 1, "facts": ', encoding="utf-8")
    lines = d / "more.jsonl"
    lines.write_text(
        "\n".join(json.dumps(dict(json.loads(Path(p).read_text()), node=f"line-{i}")) for i, p in enumerate(paths[:3]))
        + "\n",
        encoding="utf-8",
    )
    given = [str(d), paths[5]]
    alone = compare(iter_inputs(given))
    pooled = compare_inputs(given, workers=2)
    assert pooled == alone
    assert compare_inputs(given, workers=1) == alone
    assert pooled["nodes"] == 43 and len(pooled["differing"]) == 6
    assert {"source": copy, "same_as": paths[0]} in pooled["repeated"]
    assert {"source": paths[5], "same_as": paths[5]} in pooled["repeated"]
    assert [u["source"] for u in pooled["unreadable"]] == [str(d / "broken.json")]


class _Print(dict):
    """A fingerprint that can be watched (a plain dict takes no weak references)."""


def test_compare_streams_keeping_one_fingerprint_per_distinct_stack(snaps):
    """Snapshots are reduced as they arrive: of 1,000 nodes on two stacks compare keeps two
    fingerprints, not one per node (fleet memory grows by a small tuple per snapshot), and
    the report is the one of the fingerprints as given."""
    import weakref

    from npudoctor.cluster.compare import Read

    base = fingerprint(snaps["base-a"]["facts"])
    refs = []
    held = []

    def reads():
        for n in range(1000):
            fp = _Print(base, driver="23.0.6") if n % 10 == 3 else _Print(base)
            refs.append(weakref.ref(fp))
            yield f"node-{n:04d}.json", Read(n, f"node-{n:04d}", "2026-12-06T06:00:00Z", fp)
        held.append(sum(ref() is not None for ref in refs))

    report = compare(reads())
    # the two kept, and the last one given (still in the hands of the loop reading it)
    assert held == [3]
    assert report["nodes"] == 1000 and report["majority"]["driver"] == base["driver"]
    assert len(report["differing"]) == 100 and report["differing"][0]["node"] == "node-0003"
    assert report["differing"][0]["differences"] == [{"field": "driver", "value": "23.0.6", "majority": base["driver"]}]


@pytest.mark.parametrize(
    "count, cpus, load, workers",
    [
        (100, 8, 0.0, 1),  # few files: read here
        (10_000, 2, 0.1, 2),  # both cores idle
        (10_000, 2, 1.2, 1),  # one core busy: the other is this process's
        (10_000, 2, 7.4, 1),  # a loaded machine: workers would only add their own cost
        (10_000, 16, 3.0, 8),  # at most MAX_WORKERS
        (10_000, 4, 1.6, 2),
    ],
)
def test_workers_only_on_idle_cores(count, cpus, load, workers):
    from npudoctor.cluster.inputs import workers_for

    assert workers_for(count, cpus=cpus, load=load) == workers


def test_node_labels_from_other_machines_cannot_recolour_or_forge_lines(snaps, tmp_path):
    """A snapshot's node label comes from another machine: its colour codes and line breaks
    are printed as text (\\uXXXX), so it can neither recolour the terminal nor add a line."""
    evil = json.loads(json.dumps(snaps["base-a-old"]))
    evil["node"] = "\x1b[31mEVIL\x1b[0m\nNo drift: every node has the same stack."
    a = _write(tmp_path / "a.json", evil)
    b = _write(tmp_path / "b.json", snaps["base-b"])
    c = _write(tmp_path / "c.json", snaps["base-a"])
    text = npudoctor("compare", a, b, c).stdout
    assert "\x1b" not in text
    (line,) = [line for line in text.splitlines() if "EVIL" in line]
    assert line == ("  \\u001b[31mEVIL\\u001b[0m\\u000aNo drift: every node has the same stack.  (" + a + ")")
    assert "\nNo drift" not in text


def test_a_node_with_a_critical_chip_differs_from_the_fleet(tmp_path):
    """Three nodes of one stack, one whose npu-smi calls a chip Critical (the capture of
    tests/scenarios/health-chip-critical): compare names that node, not "no drift"."""
    scenarios = Path(__file__).resolve().parent / "scenarios"
    paths = []
    for label, name in (
        ("a", "health-910b3-8npu-healthy"),
        ("b", "health-910b3-8npu-healthy"),
        ("c", "health-chip-critical"),
    ):
        root = scenarios / name
        out = tmp_path / f"{label}.json"
        env = {"PATH": f"{root / 'bin'}:/usr/bin:/bin", "HOME": "/root"}
        assert npudoctor("collect", "--root", str(root / "root"), "-o", str(out), env=env).returncode == 0
        doc = json.loads(out.read_text())
        doc["node"] = f"node-{label}"
        out.write_text(json.dumps(doc))
        paths.append(str(out))
    proc = npudoctor("compare", *paths, "--json")
    report = json.loads(proc.stdout)
    assert proc.returncode == 1 and report["majority"]["chips.health"] == "8 OK"
    (node,) = report["differing"]
    assert node["node"] == "node-c"
    assert node["differences"] == [{"field": "chips.health", "value": "1 Critical, 7 OK", "majority": "8 OK"}]
