"""Finding codes are data (npudoctor/knowledge/data/codes/*.toml) with one loader that
rejects malformed entries with a message naming the file and the code."""

from __future__ import annotations

import ast
import pathlib
import re
import subprocess
import sys

import pytest

from npudoctor.findings import AREAS, SEVERITIES, Code
from npudoctor.knowledge import codes
from npudoctor.knowledge.codes import CodesError, load_all, parse_codes

ROOT = pathlib.Path(__file__).resolve().parent.parent

GOOD = """
[PKG001]
name = "torch-npu-torch-mismatch"
area = "packages"
severity = "error"
title = "torch and torch_npu are not a matched set"
kinds = ["K01"]
explain = \"\"\"
Why it matters. \\
Continued.\"\"\"
"""


def test_every_shipped_code_loads_and_is_well_formed():
    found = load_all()
    assert len(found) >= 102
    assert list(found) == sorted(found)
    names = [c.name for c in found.values()]
    assert len(names) == len(set(names))
    for code, c in found.items():
        assert c.code == code
        assert c.area in AREAS and c.severity in SEVERITIES
        assert codes.area_of(code) == c.area
        assert c.title.strip() and c.explain.strip()
    assert found["HOST099"].name == "npudoctor-internal-error"
    assert found["PKG001"].kinds == ("K01",)


#: The project's working documents (its audit and research notes, section marks): a user of
#: `npudoctor explain` has none of them, so an explanation cites the official page instead.
INTERNAL_DOCUMENT = re.compile(r"\bREPORT\b|REPORT\.md|\bAUDIT\b|\bINDEX\b|§")


def test_explanations_cite_no_document_the_user_lacks():
    cited = [f"{code}: {m.group(0)}" for code, c in load_all().items() for m in INTERNAL_DOCUMENT.finditer(c.explain)]
    assert cited == []
    pkg007 = load_all()["PKG007"].explain
    assert "https://www.hiascend.com/document/detail/en/canncommercial/850/softwareinst/instg/instg_0045.html" in pkg007


def test_parse_codes_builds_codes_from_text():
    got = parse_codes(GOOD, "packages", source="packages.toml")
    assert got == {
        "PKG001": Code(
            "PKG001",
            "torch-npu-torch-mismatch",
            area="packages",
            severity="error",
            title="torch and torch_npu are not a matched set",
            explain="Why it matters. Continued.",
            kinds=("K01",),
        )
    }


@pytest.mark.parametrize(
    "edit, area, message",
    [
        (("[PKG001]", "[PKG01]"), "packages", "malformed finding code"),
        (("[PKG001]", "[pkg001]"), "packages", "malformed finding code"),
        (("[PKG001]", "[CANN001]"), "packages", "belongs to area 'cann'"),
        (("torch-npu-torch-mismatch", "Torch_NPU"), "packages", "malformed finding name"),
        (('area = "packages"', 'area = "cann"'), "packages", "differs from the file's area"),
        (('severity = "error"', 'severity = "fatal"'), "packages", "unknown severity 'fatal'"),
        (('kinds = ["K01"]', 'kinds = ["kind1"]'), "packages", "field 'kinds'"),
        (('title = "torch and torch_npu are not a matched set"', ""), "packages", "missing field(s) title"),
        (('title = "torch', 'titel = "torch'), "packages", "unknown field(s) titel"),
        (('title = "torch and torch_npu are not a matched set"', "title = 3"), "packages", "field 'title'"),
        (("", ""), "gpu", "unknown area 'gpu'"),
    ],
)
def test_malformed_entries_are_rejected_with_file_and_code(edit, area, message):
    text = GOOD.replace(*edit) if edit[0] else GOOD
    with pytest.raises(CodesError) as err:
        parse_codes(text, area, source="x/packages.toml")
    assert message in str(err.value)
    assert "x/packages.toml" in str(err.value)


def test_a_code_declared_twice_in_one_file_is_rejected():
    with pytest.raises(CodesError, match="not valid TOML"):
        parse_codes(GOOD + GOOD, "packages", source="packages.toml")


def test_a_name_used_twice_is_rejected_within_and_across_files(tmp_path):
    twice = GOOD + GOOD.replace("PKG001", "PKG002")
    with pytest.raises(CodesError, match="is also used by PKG001"):
        parse_codes(twice, "packages")
    (tmp_path / "packages.toml").write_text(GOOD, encoding="utf-8")
    other = GOOD.replace("PKG001", "CANN001").replace('area = "packages"', 'area = "cann"')
    (tmp_path / "cann.toml").write_text(other, encoding="utf-8")
    with pytest.raises(CodesError, match="is also used by"):
        load_all(str(tmp_path))


def test_a_file_named_after_no_area_is_rejected(tmp_path):
    (tmp_path / "gpu.toml").write_text("", encoding="utf-8")
    with pytest.raises(CodesError, match="unknown area 'gpu'"):
        load_all(str(tmp_path))


def test_get_and_lookup():
    assert codes.get("PKG001").name == "torch-npu-torch-mismatch"
    assert codes.lookup(" torch-npu-torch-mismatch ") is codes.registry()["PKG001"]
    assert codes.lookup("pkg001") == codes.get("PKG001")
    assert codes.lookup("NOPE999") is None
    with pytest.raises(CodesError, match="not declared"):
        codes.get("PKG999")
    with pytest.raises(CodesError, match="no finding code"):
        codes.get("torch-npu-torch-mismatch")


def test_get_parses_only_the_file_of_its_area():
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from npudoctor.knowledge import codes; codes.get('PKG001'); print(sorted(codes._AREAS_LOADED))",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.stdout.strip() == "['packages']", out.stderr


def _rule_modules():
    return sorted((ROOT / "npudoctor").rglob("*.py"))


def test_codes_are_declared_only_as_data():
    """Rule modules take their codes from the data (``codes.get("PKG001")``); a ``Code(...)``
    built in Python would be missing from `npudoctor explain` and from the uniqueness check."""
    offenders = []
    for path in _rule_modules():
        if path.name == "codes.py" and path.parent.name == "knowledge":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "Code":
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def test_every_code_a_rule_module_names_is_declared_and_every_declared_code_is_used():
    """``codes.get("X")`` calls name declared codes, and every declared code is got by some module."""
    used = set()
    for path in _rule_modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "codes"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                used.add(node.args[0].value)
    declared = set(codes.registry())
    assert used - declared == set()
    assert declared - used == set()
