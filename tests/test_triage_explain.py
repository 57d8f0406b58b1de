"""Every label triage prints can be explained (issue 17): ``npudoctor triage`` runs over the
whole corpus of real log lines (tests/fixtures/triage_corpus/lines.toml), text and JSON, and
``npudoctor explain`` is asked about every signature id, label and error code either view printed
and every root-cause kind the JSON carries.  None may be unknown; the text view prints no
internal kind ids (issue 28)."""

import json
import re
from pathlib import Path

import pytest
from clirun import npudoctor

try:
    import tomllib  # type: ignore[import-not-found]
except ImportError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]

LINES = Path(__file__).resolve().parent / "fixtures" / "triage_corpus" / "lines.toml"

#: what a group's header carries: ``[signature-id label, line N]``
HEADER = re.compile(r"  \[([a-z0-9]+(?:-[a-z0-9]+)*)(?: ([a-z]+:[-\w]+))?, (?:\S+:)?lines? ")
KIND = re.compile(r"\bK(?:0[1-9]|1\d|2[0-2])\b")
#: error codes in the shapes the code families print (CANN E-codes, torch_npu ERR codes,
#: six-digit ACL/aclnn return codes) in a header line
CODE = re.compile(r"\b(?:E[A-Z0-9]\d{4}|ERR\d{5}|[1-5]\d{5})\b")


@pytest.fixture(scope="module")
def corpus_log(tmp_path_factory):
    items = tomllib.loads(LINES.read_text(encoding="utf-8"))["line"]
    path = tmp_path_factory.mktemp("corpus") / "corpus.log"
    path.write_text("\n".join(item["text"] for item in items) + "\n", encoding="utf-8")
    return path


def _printed_by_text(text):
    names = set()
    for line in text.splitlines():
        head = HEADER.search(line)
        if head:
            names.update(n for n in head.groups() if n)
            names.update(CODE.findall(line[: head.start()]))
        assert not KIND.search(line), f"an internal kind id in the text view: {line}"
    return names


def _printed_by_json(doc):
    """(ids, labels and kinds; the bare codes of ``code`` fields and tied findings)"""
    names, codes = set(), set()
    for g in doc["known"]:
        names.update(x for x in (g["id"], g.get("label")) if x)
        names.update(g.get("kinds", []))
        names.update(c["kind"] for c in g.get("causes", []) if c.get("kind"))
        if g.get("code"):
            codes.add(g["code"])
    codes.update(t["code"] for t in doc.get("tied", []))
    return names, codes


def test_every_printed_label_is_explained(corpus_log):
    text = npudoctor("triage", str(corpus_log), "--no-facts")
    doc = json.loads(npudoctor("triage", str(corpus_log), "--no-facts", "--json").stdout)
    from_text = _printed_by_text(text.stdout)
    from_json, codes = _printed_by_json(doc)
    # the text view prints the ids and labels the JSON carries (kinds are JSON-only)
    assert {n for n in from_json if not KIND.fullmatch(n)} <= from_text
    printed = from_text | from_json | codes
    assert len(doc["known"]) >= 40
    assert {"acl-code", "acl:507011", "cann:EZ9999", "pta:ERR02005", "K07", "507033", "EZ9999"} <= printed
    unknown = {}
    for name in sorted(printed):
        r = npudoctor("explain", name)
        if r.returncode != 0 or not r.stdout.strip():
            unknown[name] = (r.stderr or r.stdout).strip()
    assert unknown == {}


def test_explain_names_the_signature_of_a_label():
    r = npudoctor("explain", "acl:507011", "--json")
    assert r.returncode == 0
    page = json.loads(r.stdout)
    assert page["entry"] == "acl-code"
    assert page["name"] == "acl:507011" and page["title"] == "Model execution failed (ACL_ERROR_RT_MODEL_EXECUTE)"
