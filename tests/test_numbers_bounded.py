"""Numbers read from the judged machine (issue 20): ``int()`` of digits taken from files,
command output or snapshots never meets more than 4,300 digits (Python 3.11+ raises) and never
accepts Unicode digits (``int("٣") == 3``; ``"²".isdigit()`` is true but ``int("²")`` raises).
Every place fixed is replayed here with the hostile values and a good one; hypothesis checks
the helpers and parsers never raise on any text."""

from __future__ import annotations

from typing import Any, Callable, List, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npudoctor.facts.devices import DeviceNode
from npudoctor.knowledge.versions import major_minor, python_release, python_sorted, symbol_version_key
from npudoctor.parsers.accounts import parse_group, parse_passwd
from npudoctor.parsers.df import parse_df
from npudoctor.parsers.numbers import numbers_in, to_int
from npudoctor.parsers.procstatus import _ids
from npudoctor.parsers.release_notes import html_tables
from npudoctor.probes import _ldso
from npudoctor.rules import _world
from npudoctor.rules._devfacts import parse_id_list
from npudoctor.rules.python_env import _glibc_tuple
from npudoctor.rules.visibility import _check_rt

LONG = "9" * 5000  # over Python's 4,300-digit int() limit
ARABIC = "٣"  # U+0663 ARABIC-INDIC DIGIT THREE: int() reads it as 3
SUPER = "²"  # U+00B2: isdigit() is true, int() raises


@pytest.mark.parametrize(
    "text,base,want",
    [
        ("12", 10, 12),
        (" 7 ", 10, 7),
        ("-3", 10, -3),
        ("1" * 18, 10, int("1" * 18)),
        ("1" * 19, 10, None),
        (LONG, 10, None),
        (ARABIC, 10, None),
        (SUPER, 10, None),
        ("1٣", 10, None),
        ("0x1f", 16, None),
        ("3fffffffff", 16, 0x3FFFFFFFFF),
        ("0660", 8, 0o660),
        ("0999", 8, None),
        ("", 10, None),
        (None, 10, None),
        (12, 10, None),
    ],
)
def test_to_int_takes_bounded_ascii_digits_only(text: Any, base: int, want: Any) -> None:
    assert to_int(text, base) == want


def test_numbers_in_skips_long_runs_and_unicode_digits() -> None:
    assert numbers_in("8.0.RC2.b010") == (8, 0, 2, 10)
    assert numbers_in(LONG + ".2") == (2,)
    assert numbers_in(f"{ARABIC}.{ARABIC}") == ()


def _node(path: str = "/dev/davinci0", mode: str = "0660") -> DeviceNode:
    return DeviceNode(path=path, exists=True, uid=0, gid=0, mode=mode)


#: (what, call, good input -> result, hostile inputs -> result each)
CASES: List[Tuple[str, Callable[[Any], Any], Tuple[Any, Any], List[Tuple[Any, Any]]]] = [
    ("CANN major.minor", major_minor, ("8.2.RC1", (8, 2)), [(LONG + ".1", None), ("8." + LONG, None), ("٨.٢", None)]),
    (
        "/dev/davinciN",
        lambda p: _node(p).number,
        ("/dev/davinci3", 3),
        [("/dev/davinci" + LONG, None), ("/dev/davinci" + ARABIC, None)],
    ),
    (
        "visible-device id lists",
        parse_id_list,
        ("0-2,4,Ascend910-7", ([0, 1, 2, 4, 7], [])),
        [
            (LONG, ([], [LONG])),
            (ARABIC, ([], [ARABIC])),
            ("0-" + LONG, ([], ["0-" + LONG])),
            ("Ascend910-" + LONG, ([], ["Ascend910-" + LONG])),
        ],
    ),
    (
        "Python versions of the matrix",
        python_sorted,
        (["3.10", "3.9"], ["3.9", "3.10"]),
        [(["3." + LONG, "3.9"], ["3.9"]), ([f"3.{ARABIC}"], [])],
    ),
    ("glibc version", _glibc_tuple, ("2.31", (2, 31)), [("2." + LONG, None), ("٢.٣١", None)]),
    (
        "symbol version and GCC sort key",
        symbol_version_key,
        ("11.2.0", (11, 2, 0)),
        [("11." + LONG, (11, 0)), (f"1{ARABIC}", (0,)), (f"GLIBCXX_3.4.{LONG}", (3, 4, 0))],
    ),
    ("capability mask", _world.mask, ("3f", 63), [(ARABIC, None), ("f" * 65, None)]),
    (
        "device node mode",
        lambda mode: _world._class_access(0, 0, [], _node(mode=mode)),
        ("0660", True),
        [("0999", None), (SUPER, None), (LONG, None), ("٠٦٦٠", None)],
    ),
    ("interpreter version", python_release, ("3.10.12", [3, 10, 12]), [("3." + LONG, None), ("٣.١٠", None)]),
    ("cgroup id lists", _ids, ("0 5", [0, 5]), [(f"0 {ARABIC} {SUPER} {LONG} 5", [0, 5])]),
    (
        "highest symbol version",
        _ldso.highest,
        (["GLIBC_2.17", "GLIBC_2.29"], ["GLIBC_2.29"]),
        [([f"GLIBC_2.{LONG}", "GLIBC_2.17"], ["GLIBC_2.17"]), ([f"GLIBC_{SUPER}"], [])],
    ),
    (
        "passwd uids",
        lambda text: [e["name"] for e in parse_passwd(text)],
        ("root:x:0:0::/root:/bin/sh\n", ["root"]),
        [(f"a:x:{ARABIC}:0::/:/bin/sh\nb:x:{LONG}:0::/:/bin/sh\nroot:x:0:0::/root:/bin/sh\n", ["root"])],
    ),
    (
        "group gids",
        lambda text: [e["name"] for e in parse_group(text)],
        ("video:x:44:\n", ["video"]),
        [(f"a:x:{ARABIC}:\nb:x:{LONG}:\nvideo:x:44:\n", ["video"])],
    ),
    (
        "df rows",
        lambda text: [r["mount"] for r in parse_df(text)],
        ("Filesystem 1K-blocks Used Available Use% Mounted on\n/dev/sda1 100 50 50 50% /\n", ["/"]),
        [
            (
                f"Filesystem 1K-blocks Used Available Use% Mounted on\n/dev/sda1 1{ARABIC} 50 50 50% /\n/dev/sdb {LONG} 1 1 1% /x\n",
                [],
            )
        ],
    ),
    (
        "release-note table colspan",
        lambda text: [t.header_rows for t in html_tables(text)][:1],
        ('<table><tr><th colspan="2">a</th></tr><tr><td>1</td><td>2</td></tr></table>', [[["a", "a"]]]),
        [(f'<table><tr><th colspan="{LONG}">a</th></tr><tr><td>1</td></tr></table>', [[["a"]]])],
    ),
]


@pytest.mark.parametrize("what,call,good,hostile", CASES, ids=[c[0] for c in CASES])
def test_every_fixed_place_reads_bounded_ascii_numbers(
    what: str, call: Callable[[Any], Any], good: Any, hostile: Any
) -> None:
    assert call(good[0]) == good[1], what
    for value, want in hostile:
        assert call(value) == want, (what, value[:40] if isinstance(value, str) else value)


def test_visible_device_lists_never_take_unicode_or_overlong_ids() -> None:
    finding, effective = _check_rt(f"0,1,{ARABIC}", 8, list(range(8)))
    assert effective == [0, 1] and finding is not None
    finding, effective = _check_rt(f"0,{LONG}", 8, list(range(8)))
    assert effective == [0] and finding is not None


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_to_int_never_raises_and_accepts_only_ascii(text: str) -> None:
    got = to_int(text)
    if got is not None:
        core = text.strip().lstrip("-")
        assert core.isascii() and core.isdigit() and len(core) <= 18


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("0123456789.-,٣² Ascend"), max_size=60))
def test_parsers_of_numbers_never_raise(text: str) -> None:
    major_minor(text)
    parse_id_list(text)
    python_release(text)
    _glibc_tuple(text)
    symbol_version_key(text)
    _ids(text)
    numbers_in(text)


def test_visible_device_syntax_counts_unicode_digits_as_malformed() -> None:
    from npudoctor.rules.visibility_vars import malformed_parts

    assert malformed_parts("0-2,Ascend910-3") == []
    assert malformed_parts(f"0,{ARABIC},Ascend910-{ARABIC}") == [ARABIC, f"Ascend910-{ARABIC}"]


def test_libstdcxx_symbol_versions_read_bounded_numbers() -> None:
    from npudoctor.knowledge.toolchain import gcc_for

    assert gcc_for("GLIBCXX_3.4.29") == "11.1.0"
    assert gcc_for("GLIBCXX_3.4." + LONG) is None
    assert gcc_for("CXXABI_1.3." + LONG) is None
    assert gcc_for(f"GLIBCXX_3.4.2{ARABIC}") is None
