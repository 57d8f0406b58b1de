"""``npudoctor lint``: what it reads -- Python sources in the encoding they declare, files
classified by name and content -- and where its outputs say a finding is, on real files
written here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

from tests.clirun import npudoctor

GBK = '# -*- coding: gbk -*-\n# 训练脚本\nx = "你好"; m = model.cuda()\n'


def _json(*args: Any) -> Dict[str, Any]:
    res = npudoctor("lint", "--json", *args)
    assert res.stderr == ""
    doc: Dict[str, Any] = json.loads(res.stdout)
    doc["returncode"] = res.returncode
    return doc


def _findings(doc: Dict[str, Any]) -> List[Dict[str, Any]]:
    return list(doc["findings"])


# -- encodings (PEP 263) ---------------------------------------------------------------------


def test_a_gbk_source_with_its_coding_declaration_is_linted(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_bytes(GBK.encode("gbk"))
    doc = _json(tmp_path / "train.py")
    (f,) = _findings(doc)
    assert (f["code"], f["line"], f["column"]) == ("LNT001", 3, 15)
    assert f["source"] == 'x = "你好"; m = model.cuda()'
    assert doc["returncode"] == 1


def test_a_latin1_source_with_its_coding_declaration_is_linted(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_bytes("# coding: latin-1\ns = 'café'; m.cuda()\n".encode("latin-1"))
    (f,) = _findings(_json(tmp_path / "a.py"))
    assert (f["code"], f["line"], f["column"], f["source"]) == ("LNT001", 2, 13, "s = 'café'; m.cuda()")


def test_columns_count_characters_on_a_line_with_non_ascii_text(tmp_path: Path) -> None:
    (tmp_path / "u.py").write_text('x = "你好"; m = model.cuda()\n', encoding="utf-8")
    (f,) = _findings(_json(tmp_path / "u.py"))
    assert f["column"] == 15


def test_an_unknown_or_wrong_encoding_is_a_counted_warning_that_strict_fails_on(tmp_path: Path) -> None:
    (tmp_path / "bogus.py").write_bytes(b"# -*- coding: bogus -*-\nm.cuda()\n")
    (tmp_path / "bad.py").write_bytes(b"# -*- coding: gbk -*-\nm.cuda()  # \xff\xff\n")
    (tmp_path / "plain.py").write_bytes("# 训练\nm.cuda()\n".encode("gbk"))
    doc = _json(tmp_path)
    got = {Path(f["path"]).name: (f["code"], f["severity"], f["message"]) for f in _findings(doc)}
    assert got == {
        "bad.py": ("LNT016", "warning", "not linted: not gbk as declared (line 2, byte 34)"),
        "bogus.py": ("LNT016", "warning", "not linted: declares the encoding 'bogus', which Python does not know"),
        "plain.py": ("LNT016", "warning", "not linted: not UTF-8 (line 1 or 2) and declares no encoding"),
    }
    assert all("coding:" in f["fix"] for f in _findings(doc))
    assert doc["returncode"] == 0  # warnings: the documented contract
    assert npudoctor("lint", "--strict", tmp_path).returncode == 1
    text = npudoctor("lint", tmp_path).stdout
    assert text.splitlines()[-1] == "0 error(s), 3 warning(s), 0 note(s) in 3 files; 3 not linted (LNT016)."


def test_fix_writes_a_gbk_file_back_in_gbk_and_keeps_a_byte_order_mark(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_bytes(GBK.encode("gbk"))
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbfm = m.cuda()\n")
    diff = npudoctor("lint", "--diff", tmp_path).stdout
    assert '+x = "你好"; m = model.npu()\n' in diff
    npudoctor("lint", "--fix", tmp_path)
    assert (tmp_path / "train.py").read_bytes() == GBK.replace(".cuda()", ".npu()").encode("gbk")
    assert (tmp_path / "bom.py").read_bytes() == b"\xef\xbb\xbfm = m.npu()\n"
