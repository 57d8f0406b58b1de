"""compare reads each snapshot file in one pass for only what it compares
(:func:`npudoctor.cluster.compare.quick`), and what it reads so is what the lenient path
(the whole JSON parsed, read through the typed views) reads: on snapshots really collected
(``collect --root`` trees, ``check --json`` of scenarios replaying npu-smi), on those
snapshots with any compared field given a value of another type, and on hostile
snapshots among good ones."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from builders.stacktree import build_root, collect
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scenario_runner import prepare, run_check

from npudoctor.cluster.compare import compare, compare_inputs, entry, quick
from npudoctor.cluster.inputs import iter_converted
from npudoctor.parsers import jsontext

SCENARIOS = Path(__file__).resolve().parent / "scenarios"
#: Scenarios whose npu-smi replay fills ``devices.chips`` (and one with NNAL, kernels).
RICH = (
    "case33-310b4-board-torch-npu-2.1.0rc1",
    "case46-ray-worker-empty-rt-visible-devices",
    "case05-mindie-atb-models-1.0.RC2-torch-npu-2.1.0.post4",
)


class _Documents(list):  # type: ignore[type-arg]
    def __repr__(self) -> str:  # what hypothesis prints of a failing example
        return f"<{len(self)} snapshots>"


@pytest.fixture(scope="module")
def documents(tmp_path_factory) -> List[Dict[str, Any]]:
    base = tmp_path_factory.mktemp("quick")
    docs = _Documents()
    for name, kw in (("plain", {}), ("old", {"cann": "8.0.RC3", "torch_npu": "2.1.0.post4"})):
        root = build_root(base / name / "root", hostname=name, **kw)
        docs.append(collect(root, base / f"{name}.json", env={"HCCL_CONNECT_TIMEOUT": "900"}))
    for name in RICH:
        run = run_check(prepare(SCENARIOS / name, base))
        assert run.doc is not None, run.stderr[-800:]
        docs.append(run.doc)
    return docs


def _slow(data: bytes) -> Any:
    """What compare reads of one document's bytes without the one-pass reader."""
    from npudoctor.cluster.inputs import _documents

    ((_label, item),) = list(_documents("x", data))
    return entry("x", item)


def test_real_snapshots_are_read_in_one_pass_as_the_views_read_them(documents):
    chips = 0
    for doc in documents:
        for data in (json.dumps(doc).encode(), json.dumps(doc, indent=2, ensure_ascii=False).encode()):
            got = quick(data)
            assert got is not None
            assert got == _slow(data)
        chips += got.fingerprint["chips"] not in (None, "(none)")
    assert chips >= 2  # the npu-smi replays were read


#: Where a value of another type (or none) is put: every field compare reads, a section,
#: fields it does not read inside the views it decodes, and the document's own keys.
PATHS = [
    ("schema_version",),
    ("node",),
    ("created",),
    ("facts",),
    ("facts", "host"),
    ("facts", "host", "arch"),
    ("facts", "host", "os"),
    ("facts", "python", "version"),
    ("facts", "python", "implementation"),
    ("facts", "cann"),
    ("facts", "cann", "selected"),
    ("facts", "cann", "selected", "version"),
    ("facts", "cann", "selected", "kernels"),
    ("facts", "cann", "selected", "kernels", "socs"),
    ("facts", "cann", "selected", "kernels", "installed"),
    ("facts", "cann", "selected", "install_info"),
    ("facts", "cann", "nnal"),
    ("facts", "cann", "toolkits"),
    ("facts", "driver", "driver", "version"),
    ("facts", "driver", "firmware"),
    ("facts", "devices", "chips"),
    ("facts", "devices", "chips", 0, "name"),
    ("facts", "devices", "chips", 0, "temp_c"),
    ("facts", "devices", "visibility", "ASCEND_RT_VISIBLE_DEVICES"),
    ("facts", "devices", "npu_smi"),
    ("facts", "hccl", "variables"),
    ("facts", "hccl", "variables", "HCCL_CONNECT_TIMEOUT"),
    ("facts", "packages"),
    ("facts", "packages", "installed"),
    ("facts", "packages", "installed", "torch"),
    ("facts", "packages", "installed", "torch", 0, "version"),
    ("facts", "packages", "installed", "torch", 0, "requires_dist"),
    ("facts", "packages", "installed", "torch-npu"),
    ("facts", "packages", "installed", "Torch_NPU"),
    ("facts", "packages", "installed", "torch"),
    ("facts", "packages", "installed", "typing-extensions", 0, "version"),
]
_DELETE = object()
_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


#: A package record list (what a spelling of a compared project may hold).
_records = st.lists(st.fixed_dictionaries({"version": st.none() | st.text(max_size=5)}), max_size=2)


def _put(doc: Any, path: Tuple[Any, ...], value: Any) -> bool:
    """Set (or delete) ``path`` in ``doc``; ``False`` when a parent is missing."""
    node = doc
    for key in path[:-1]:
        if isinstance(key, int):
            if not isinstance(node, list) or len(node) <= key:
                return False
        elif not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    last = path[-1]
    if isinstance(last, int) and not (isinstance(node, list) and len(node) > last):
        return False
    if isinstance(last, str) and not isinstance(node, dict):
        return False
    if value is _DELETE:
        if isinstance(node, dict):
            node.pop(last, None)
        else:
            del node[last]
    else:
        node[last] = value
    return True


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.integers(min_value=0, max_value=len(RICH) + 1),
    st.lists(st.tuples(st.sampled_from(PATHS), _json_values | _records | st.just(_DELETE)), min_size=1, max_size=3),
)
def test_a_value_of_another_type_reads_as_the_views_read_it(documents, which, changes):
    doc = json.loads(json.dumps(documents[which]))
    for path, value in changes:
        _put(doc, path, value)
    data = json.dumps(doc).encode()
    got = quick(data)
    # declined (then read the lenient way) or the same reading
    assert got is None or got == _slow(data)


def test_a_project_under_another_spelling_is_read_as_the_views_read_it(documents):
    doc = json.loads(json.dumps(documents[0]))
    installed = doc["facts"]["packages"]["installed"]
    del installed["torch-npu"]
    installed["Torch__NPU"] = [{"name": "torch_npu", "version": "2.1.0.post9"}]
    installed["torch.npu"] = [{"name": "torch_npu", "version": "2.1.0.post1"}]
    data = json.dumps(doc).encode()
    got = quick(data)
    assert got is not None and got.fingerprint["torch_npu"] == "2.1.0.post9"
    assert got == _slow(data)


def _write(directory: Path, name: str, data: bytes) -> str:
    path = directory / name
    path.write_bytes(data)
    return str(path)


def test_odd_and_hostile_snapshots_among_good_ones(documents, tmp_path):
    good = documents[0]  # a collected tree: every section known
    d = tmp_path / "snaps"
    d.mkdir()
    for n in range(6):
        _write(d, f"good-{n}.json", json.dumps(dict(good, node=f"good-{n}")).encode())
    # a compared field of another type: unknown ("?": the toolkit is there, its version unread)
    odd = json.loads(json.dumps(good))
    odd["node"] = "odd-type"
    odd["facts"]["cann"]["selected"]["version"] = 800
    assert quick(json.dumps(odd).encode()) is None
    _write(d, "odd-type.json", json.dumps(odd).encode())
    # a field compare does not read, of another type, inside a section it reads: no effect
    unread = json.loads(json.dumps(good))
    unread["node"] = "odd-unread"
    unread["facts"]["host"]["glibc"] = ["2", 31]
    _write(d, "odd-unread.json", json.dumps(unread).encode())
    # a section that is not an object: every field of it unknown
    section = json.loads(json.dumps(good))
    section["node"] = "odd-section"
    section["facts"]["driver"] = "24.1.rc2"
    _write(d, "odd-section.json", json.dumps(section).encode())
    # bytes that are not UTF-8 in a string compare does not read
    garbled = json.dumps(dict(good, node="garbled", created="2026-12-06T10:00:00Z")).encode()
    garbled = garbled.replace(b'"created": "2026', b'"npudoctor_version": "\xff\xfe", "created": "2026', 1)
    _write(d, "garbled.json", garbled)
    # hostile: nested past the bound, an integer of 5,000 digits, a value count past the bound
    text = json.dumps(dict(good, node="deep"))
    _write(d, "deep.json", (text[:-1] + ', "x": ' + "[" * 70 + "]" * 70 + "}").encode())
    text = json.dumps(dict(good, node="long-int"))
    _write(d, "long-int.json", (text[:-1] + ', "x": ' + "7" * 5000 + "}").encode())
    _write(d, "many.json", b'{"schema_version": 1, "facts": {"x": [' + b",".join([b"0"] * 2_000_001) + b"]}}")
    _write(d, "v2.json", json.dumps(dict(good, node="v2", schema_version=2)).encode())

    report = compare_inputs([str(d)], workers=1)
    assert report == compare(iter_converted([str(d)], entry, workers=1))  # the lenient reading
    assert report["nodes"] == 10
    unreadable = {Path(u["source"]).name: u["error"] for u in report["unreadable"]}
    at = ""  # a refusal is about the whole text: no position
    assert unreadable == {
        "deep.json": f"not valid JSON: nested 71 levels deep (more than 64){at}",
        "long-int.json": f"not valid JSON: a number of 5000 digits (more than 100){at}",
        "many.json": f"not valid JSON: more than 2000000 values (up to 2000004){at}",
        "v2.json": "unsupported schema_version 2",
    }
    differing = {d["node"]: d["differences"] for d in report["differing"]}
    majority = report["majority"]
    assert differing == {
        "odd-type": [{"field": "cann.toolkit", "value": "?", "majority": majority["cann.toolkit"]}],
        "odd-section": [{"field": "driver", "value": "(none)", "majority": "24.1.rc2"}],
    }
    assert majority["cann.toolkit"] == "8.0.0" and majority["firmware"] == "(none)"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["7", "x", "0" * 30, "9" * 50, " ", '"', "1" * 24]), max_size=30))
def test_long_digit_runs_are_found_as_a_plain_search_finds_them(pieces):
    data = "".join(pieces).encode()
    assert jsontext._long_digits(data) == bool(re.search(rb"[0-9]{101}", data))


def test_a_short_text_is_not_counted_but_a_long_one_still_is():
    assert jsontext.loads("[1,2]", max_values=5) == [1, 2]
    with pytest.raises(ValueError, match=r"more than 2 values \(up to 3\)"):
        jsontext.loads("[1,2,3]", max_values=2)
    assert jsontext.plain(b'{"a": [1, 2]}', max_values=10, max_depth=2)
    assert not jsontext.plain(b'{"a": [[1]]}', max_values=10, max_depth=2)
    assert not jsontext.plain(b'{"a": ' + b"1" * 101 + b"}")


def test_json_lines_are_read_line_by_line_in_one_pass_or_the_lenient_way(documents, tmp_path):
    good = documents[0]
    odd = json.loads(json.dumps(good))
    odd["facts"]["hccl"]["variables"] = {"HCCL_CONNECT_TIMEOUT": 900}  # a number, not a string
    lines = [
        json.dumps(dict(good, node="line-1")),
        json.dumps(dict(odd, node="line-2")),
        '{"schema_version": 1, "facts": ',
        json.dumps(dict(good, node="line-4")),
    ]
    assert quick(lines[0].encode()) is not None and quick(lines[1].encode()) is None
    path = tmp_path / "fleet.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = compare_inputs([str(path)], workers=1)
    assert report == compare(iter_converted([str(path)], entry, workers=1))
    assert report["nodes"] == 3
    assert [u["source"] for u in report["unreadable"]] == [f"{path}:3"]
    # the variable of another type is left out (unset) on that node: the majority's 900 differs
    assert report["differing"] == [
        {
            "node": "line-2",
            "source": f"{path}:2",
            "differences": [{"field": "env.HCCL_CONNECT_TIMEOUT", "value": "(none)", "majority": "900"}],
        }
    ]
