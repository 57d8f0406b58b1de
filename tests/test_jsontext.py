"""``jsontext.loads`` reads every text as ``json.loads`` does (msgspec's parser where it can,
the standard one for what only it accepts) and ``depth`` measures nesting outside strings
exactly, whatever the text: compared with the plain standard-library reading on generated
JSON values and on random text."""

from __future__ import annotations

import itertools
import json
import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npudoctor.parsers import jsontext

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**99), max_value=10**99)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)
_values = st.recursive(
    _scalars, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5), max_leaves=40
)


def _same(a: object, b: object) -> bool:
    """Equal, NaN included (NaN != NaN)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@settings(max_examples=400, deadline=None)
@given(_values, st.booleans())
def test_loads_reads_what_json_loads_reads(value, ascii_only):
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert _same(jsontext.loads(text, max_values=10**6, max_depth=100), json.loads(text))


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet='[]{}",:0123456789.-eE \\untrufalsNIiy\udcff', max_size=40))
def test_loads_of_any_text_parses_or_fails_as_json_loads_does(text):
    try:
        expected = json.loads(text)
    except ValueError:
        with pytest.raises(json.JSONDecodeError):
            jsontext.loads(text)
        return
    assert _same(jsontext.loads(text), expected)


def test_the_standard_parser_reads_what_msgspec_refuses():
    assert math.isnan(jsontext.loads('{"a": NaN}')["a"])
    assert jsontext.loads("[Infinity, -Infinity, 1e400]") == [math.inf, -math.inf, math.inf]
    assert jsontext.loads('"\\udcff"') == "\udcff"
    with pytest.raises(json.JSONDecodeError, match="Expecting"):
        jsontext.loads('{"a": }')  # json.loads's own message for malformed JSON


def test_a_long_integer_is_refused_with_its_length_even_beside_strings_of_digits():
    assert jsontext.loads('{"id": "' + "7" * 200 + '", "n": ' + "9" * 100 + "}")["n"] == int("9" * 100)
    with pytest.raises(json.JSONDecodeError, match="a number of 101 digits"):
        jsontext.loads('{"n": ' + "9" * 101 + "}")


def _depth_by_regexes(text: str) -> int:
    """The plain definition: escapes out, then strings, then everything but brackets."""
    brackets = re.sub(r"[^\[\]{}]+", "", re.sub(r'"[^"]*"', "", re.sub(r"\\.", "", text, flags=re.S)))
    return max(0, max(itertools.accumulate(1 if c in "[{" else -1 for c in brackets), default=0))


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet='[]{}"\\ab,:0é', max_size=60))
def test_depth_is_the_nesting_outside_strings(text):
    assert jsontext.depth(text) == _depth_by_regexes(text)


@pytest.mark.parametrize("levels", [1, 63, 64, 65, 5000])
def test_depth_of_deep_and_unbalanced_nesting(levels):
    for text in ("[" * levels + "]" * levels, '{"a":' * levels + "1" + "}" * levels, "[" * levels, "]" * levels):
        assert jsontext.depth(text) == _depth_by_regexes(text)


def test_check_from_and_compare_say_the_same_of_a_bad_snapshot(tmp_path):
    """A truncated, empty or refused snapshot is described in the same words by ``check
    --from`` (Snapshot.load) and ``compare``; a refusal names no position."""
    import pytest

    from npudoctor.cluster.compare import compare_inputs
    from npudoctor.snapshot import Snapshot, SnapshotError

    doc = '{\n  "schema_version": 1,\n  "facts": {\n    "host": {"arch": "aarch64"}\n  }\n}\n'
    cases = {
        "cut.json": (doc[:40], "the document ends early, at line 4 (truncated?)"),
        "empty.json": ("\n", "the file is empty"),
        "deep.json": ("[" * 100 + "]" * 100, "nested 100 levels deep (more than 64)"),
        "bad.json": ('{"a": 1,, "b": 2}', "line 1 column 9: Expecting property name enclosed in double quotes"),
    }
    for name, (text, why) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(SnapshotError) as caught:
            Snapshot.load(str(path))
        assert str(caught.value) == f"snapshot {path} is not valid JSON: {why}"
        report = compare_inputs([str(path)], workers=1)
        assert report["unreadable"] == [{"source": str(path), "error": f"not valid JSON: {why}"}]
