"""Memory of snapshot inputs and JSON outputs (issue 32, found by
scripts/benchmarks/hostile_memory.py): what is held is bounded by what the bounds let in,
whatever shape the input takes -- one long string, characters past U+FFFF, a large
``--json`` document, an endless pipe on standard input."""

from __future__ import annotations

import io
import json
import tracemalloc
from pathlib import Path
from typing import Any, Callable, List

import pytest
from clirun import npudoctor

from npudoctor.cli import run
from npudoctor.parsers import jsontext
from npudoctor.redact import SECRET, conceal, conceal_text
from npudoctor.report.jsonout import PIECE, write_json
from npudoctor.session.request import Environment
from npudoctor.snapshot import SNAPSHOT_LIMIT, SNAPSHOT_MEMORY, Snapshot, SnapshotError

MIB = 1 << 20


def _peak(call: Callable[[], Any]) -> int:
    """The most memory ``call`` had allocated at once (tracemalloc: Python's allocators,
    the regex engine's stacks included)."""
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_depth_of_one_long_string_keeps_no_mark_per_character() -> None:
    # a repeated alternation kept about 120 bytes per character of a string literal: a
    # 64 MB snapshot of one string took 7.8 GB before it was even parsed
    text = '{"x": "' + "a" * (2 * MIB) + '\\"[", "y": [[{}]]}'
    assert jsontext.depth(text) == 4
    assert _peak(lambda: jsontext.depth(text)) < 16 * MIB


def test_depth_skips_escapes_as_the_parser_does() -> None:
    for text in ['"\\\\"', '["\\\\", ["\\\\\\"["]]', '{"a": "[[[[{{{{ \\" ]]]", "b": [[1]]}', "7", "[]"]:
        parsed = json.loads(text)
        expected = 0 if not isinstance(parsed, (list, dict)) else 1 + max([0] + [_depth(v) for v in _items(parsed)])
        assert jsontext.depth(text) == expected, text


def _items(value: Any) -> List[Any]:
    return list(value.values()) if isinstance(value, dict) else list(value) if isinstance(value, list) else []


def _depth(value: Any) -> int:
    if not isinstance(value, (list, dict)):
        return 0
    return 1 + max([0] + [_depth(v) for v in _items(value)])


def test_text_memory_is_the_width_of_the_widest_character_times_the_characters() -> None:
    assert jsontext.text_memory(b"abc") == 3
    assert jsontext.text_memory("é".encode() * 3) == 3  # U+00E9: one byte each
    assert jsontext.text_memory("abc€".encode()) == 8  # U+20AC: two bytes each, four chars
    assert jsontext.text_memory("ab😀".encode()) == 12  # U+1F600: four bytes each
    assert jsontext.text_memory(b"\x80" * 5) == 10  # five U+FFFD replacements
    # a character cut at a piece boundary counts once
    data = ("a" * (MIB - 1) + "😀" + "b").encode()
    assert jsontext.text_memory(data) == 4 * (MIB + 1)


def _wide(path: Path, ascii_chars: int) -> Path:
    path.write_text('{"schema_version": 1, "facts": {"x": "' + "a" * ascii_chars + '😀"}}', encoding="utf-8")
    return path


def test_a_snapshot_whose_text_would_widen_past_the_bound_is_refused_before_decoding(tmp_path: Path) -> None:
    # 20 MB of ASCII and one character past U+FFFF: 80 MB as text, as much again parsed
    wide = _wide(tmp_path / "wide.json", 20 * MIB)
    assert wide.stat().st_size < SNAPSHOT_LIMIT
    with pytest.raises(SnapshotError, match="would take 80 MB in memory as text") as caught:
        Snapshot.load(str(wide))
    assert "more than 64 MB" in str(caught.value)

    def refused() -> None:
        with pytest.raises(SnapshotError):
            Snapshot.load(str(wide))

    peak = _peak(refused)
    assert peak < 24 * MIB  # the bytes read and one piece decoded, never the text
    compared = npudoctor("compare", str(wide), str(wide))
    assert "would take 80 MB in memory as text" in compared.stdout
    piped = npudoctor("compare", "-", input=wide.read_bytes())
    assert "stdin: would take 80 MB in memory as text" in piped.stdout
    checked = npudoctor("check", "--from", str(wide))
    assert checked.returncode == 2 and "would take 80 MB in memory as text" in checked.stderr


def test_a_snapshot_as_wide_as_the_bound_is_read(tmp_path: Path) -> None:
    ok = _wide(tmp_path / "ok.json", SNAPSHOT_MEMORY // 4 - 100)
    assert Snapshot.load(str(ok)).facts["x"].endswith("a😀")


class _Recording(io.StringIO):
    """Standard output that remembers its longest single write."""

    longest = 0

    def write(self, text: str) -> int:
        self.longest = max(self.longest, len(text))
        return super().write(text)


def test_write_json_writes_the_text_of_json_dumps_in_pieces_of_whole_lines() -> None:
    doc = {"facts": {"x": [{"k": f"value {i}", "n": i, "u": "ü😀"} for i in range(60_000)]}, "e": [], "d": {}}
    out = _Recording()
    write_json(out, doc)
    assert out.getvalue() == json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    assert out.longest < PIECE + 200


def test_write_json_writes_a_small_document_at_once_as_json_dumps_would() -> None:
    doc = {
        "facts": {"chips": [{"npu_id": i, "name": "910B3", "power_w": 93.5 + i, "hbm": None} for i in range(8)]},
        "text": 'ctl \x00\x1b[2J \b\f\n\r\t "q" \\ ü 😀 \u2028 </x>',
        "empty": [{}, [], ""],
        "big": 2**70,
        "flags": [True, False, None],
        1: "an int key",
    }
    out = _Recording()
    write_json(out, doc)
    assert out.getvalue() == json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    assert out.longest == len(out.getvalue())  # one write
    odd = {"x": "lone \ud800 surrogate", "n": 1e-05}  # msgspec refuses the first: json writes both
    out = _Recording()
    write_json(out, odd)
    # the surrogate (an undecodable byte of a path, as Python holds it) as its escape
    assert out.getvalue() == json.dumps(odd, indent=2, ensure_ascii=False).replace("\ud800", "\\ud800") + "\n"
    assert json.loads(out.getvalue().encode("utf-8")) == odd
    # the one helper every JSON writer of user bytes uses (health --json, snapshots)
    text = json.dumps({"p": "/opt/x\udcff", "q": "ü"}, ensure_ascii=False)
    assert jsontext.utf8(text) == '{"p": "/opt/x\\udcff", "q": "ü"}'
    assert jsontext.utf8("ü") == "ü"


def test_check_json_from_a_large_snapshot_is_written_in_pieces(tmp_path: Path) -> None:
    # json.dumps kept every token of the document, then the whole text was concealed and
    # escaped at once: several copies of a near-cap document (733 MB for a 62 MB snapshot)
    facts = {"x": [{"k": f"value {i}", "secret_token": "hf_" + "A" * 30} for i in range(40_000)]}
    path = tmp_path / "snap.json"
    path.write_text(json.dumps({"schema_version": 1, "node": "n1", "facts": facts}))
    out, err = _Recording(), io.StringIO()
    environment = Environment(stdout=out, stderr=err, environ={"PATH": "/usr/bin:/bin"}, width=80)
    code = run(["check", "--from", str(path), "--json"], environment)
    assert code in (0, 1), err.getvalue()
    assert out.getvalue().count('"value 39999"') == 1
    assert "hf_AAAA" not in out.getvalue()  # still concealed, piece by piece
    assert len(out.getvalue()) > 3 * PIECE
    assert out.longest < PIECE + 200


def test_compare_reads_no_more_of_standard_input_than_the_cap(tmp_path: Path) -> None:
    data = io.BytesIO(b"{" + b" " * (SNAPSHOT_LIMIT + 8 * MIB) + b"}")
    out, err = io.StringIO(), io.StringIO()
    environment = Environment(stdout=out, stderr=err, environ={"PATH": "/usr/bin:/bin"}, width=80, stdin=data)
    run(["compare", "-"], environment)
    assert "over 64 MB" in out.getvalue() + err.getvalue()
    assert data.tell() == SNAPSHOT_LIMIT + 1


def test_concealing_a_long_value_keeps_no_mark_per_character() -> None:
    # every output line goes through conceal_text: the "NAME": "value" pattern repeated an
    # alternation per character of the value (a 64 MB string in check --json took 13 GB)
    long = "a" * (2 * MIB)
    line = f'  "x": "{long}",\n  "token": "hf_{"B" * 30}", "y": \'{long}\' --z={long}\n'
    assert _peak(lambda: conceal_text(line)) < 24 * MIB
    out = conceal_text(line)
    assert "hf_BBB" not in out and out.count(long) == 3


def test_conceal_copies_only_what_it_changes() -> None:
    # check --json concealed a copy of every container of the facts while the snapshot
    # held the originals: two copies of a document at the value bound (506 MB)
    rows = [{"k": f"{i:x}", "path": f"/opt/{i}"} for i in range(100_000)]
    doc = {"facts": {"rows": rows, "env": {"PATH": "/usr/bin", "HF_TOKEN": "hf_" + "C" * 30}}}
    out = conceal(doc)
    assert out["facts"]["env"]["HF_TOKEN"] == SECRET and doc["facts"]["env"]["HF_TOKEN"].startswith("hf_")
    assert out["facts"]["rows"] is rows  # nothing in it changed: not copied
    assert conceal(rows) is rows
    assert _peak(lambda: conceal(rows)) < MIB


def _notebook(code: str) -> str:
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": code}
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def test_lint_does_not_parse_more_code_than_its_bound(tmp_path: Path) -> None:
    # under the 4 MiB file cap, one dense expression took 490 MB to parse (a directory of
    # such files 543 MB): the code parsed is bounded, not only the bytes read
    from npudoctor.lint.run import MAX_CODE_CHARS, MAX_FILE_BYTES

    dense = "x = [" + "torch.cuda.device_count(), " * (MAX_CODE_CHARS // 27 + 100) + "]\n"
    assert MAX_CODE_CHARS < len(dense) < MAX_FILE_BYTES
    (tmp_path / "dense.py").write_text(dense)
    (tmp_path / "dense.ipynb").write_text(_notebook(dense))
    (tmp_path / "ok.py").write_text("import torch\nx = torch.zeros(1).cuda()\n")
    res = npudoctor("lint", "--json", tmp_path)
    found = {(Path(f["path"]).name, f["code"]): f["message"] for f in json.loads(res.stdout)["findings"]}
    for name in ("dense.py", "dense.ipynb"):
        assert found[(name, "LNT016")].endswith("more than 2 MiB of Python code: not parsed"), found
    assert any(name == "ok.py" for name, _code in found)  # the rest is linted
