"""CANN and driver/firmware version ordering (npudoctor.knowledge.versions).

The strings are the ones listed in ../shared/samples/INDEX.md §10 and REPORT.md §3.6."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npudoctor.knowledge.versions import (
    CannVersion,
    DriverVersion,
    InvalidVersion,
    UnorderableVersion,
    parse_cann,
    parse_driver,
    tokens,
    version_in,
)

CANN_ORDER = [
    "5.0.2",
    "5.1.RC1",
    "6.0.RC1",
    "6.0.1",
    "6.3.RC3",
    "6.3.RC3.1",
    "7.0.RC1",
    "7.0.0",
    "8.0.RC1",
    "8.0.RC2.alpha002",
    "8.0.RC2",
    "8.0.RC3.alpha003",
    "8.0.RC3",
    "8.0.0.beta1",
    "8.0.0",
    "8.1.RC1.alpha001",
    "8.1.RC1.alpha002",
    "8.1.RC1",
    "8.2.RC1",
    "8.2.RC2",
    "8.3.RC1",
    "8.3.RC2",
    "8.5.0.alpha001",
    "8.5.0-beta.1",
    "8.5.0",
    "8.5.1",
    "9.0.0-alpha.1",
    "9.0.0-beta.2",
    "9.0.0",
    "9.0.1",
    "9.1.0-beta.1",
    "9.1.0_beta.3",
    "9.1.0",
]

DRIVER_ORDER = [
    "6.0.rc1.2",
    "22.0.0",
    "22.0.2",
    "22.0.4.1",
    "23.0.rc2",
    "23.0.rc3",
    "23.0.0",
    "23.0.2.1",
    "23.0.5",
    "23.0.7",
    "24.1.rc1",
    "24.1.rc1.b030",
    "24.1.rc2",
    "24.1.rc2.2",
    "24.1.rc3",
    "24.1.rc3.7",
    "24.1.0",
    "24.1.0.1",
    "24.1.0.3",
    "24.1.1",
    "25.0.rc1.1",
    "25.1.rc2",
    "25.2.0",
    "25.2.1",
    "25.3.rc1",
    "25.3.rc1.2",
    "25.5.0",
    "25.5.1",
    "25.5.2",
    "26.0.RC1",
    "26.0.rc2",
    "26.1.0",
    "26.1.0.b083",
]


def test_cann_total_order_of_releases_and_prereleases():
    shuffled = CANN_ORDER[:]
    random.Random(4).shuffle(shuffled)
    assert [str(v) for v in sorted(CannVersion(s) for s in shuffled)] == CANN_ORDER


def test_cann_key_facts():
    assert CannVersion("8.0.RC3") < CannVersion("8.0.0")
    assert CannVersion("9.0.0-beta.2") < CannVersion("9.0.0")
    assert CannVersion("8.1.RC1.alpha002") < CannVersion("8.1.RC1")
    assert CannVersion("8.0.rc3") == CannVersion("8.0.RC3")
    assert CannVersion("CANN 8.0.RC3") == "8.0.RC3"
    assert CannVersion("8.0.RC3").base == "8.0"
    assert str(CannVersion("8.0.rc3")) == "8.0.rc3"  # original text kept
    assert CannVersion("9.0.0-beta.2").is_prerelease and not CannVersion("9.0.0").is_prerelease
    assert CannVersion("8.1.RC1.alpha002").release == "8.1.RC1"
    assert CannVersion("9.1.0_beta.3").release == "9.1.0"
    assert CannVersion("6.3.RC3.1").release == "6.3.RC3.1"


def test_cann_internal_builds_are_unorderable_within_their_line():
    t63 = CannVersion("8.0.T63")
    assert t63.is_internal and not t63.orderable
    assert t63.compare("8.0.0") is None
    assert t63.compare("8.0.RC1") is None
    with pytest.raises(UnorderableVersion):
        _ = t63 < CannVersion("8.0.0")
    with pytest.raises(UnorderableVersion):
        sorted([CannVersion("8.0.T13"), CannVersion("8.0.RC2")])
    # across lines the order is known
    assert t63 < CannVersion("8.1.RC1")
    assert CannVersion("7.0.0") < t63
    assert t63 == CannVersion("8.0.T63")
    # a bare "8.0" directory name has no place in the 8.0 line either
    assert CannVersion("8.0").compare("8.0.0") is None
    assert CannVersion("8.0") < CannVersion("8.1.RC1")


@pytest.mark.parametrize(
    "text",
    ["", "garbage", "8", "8.0.RC", "7.6.0.1.220", "8.2.0.0.201", "8.0.RC1.gamma", "V100R001C20SPC001B251", "8.x.0"],
)
def test_cann_invalid(text):
    with pytest.raises(InvalidVersion):
        CannVersion(text)
    assert parse_cann(text) is None


def test_parse_never_raises_on_non_strings():
    assert parse_cann(None) is None
    assert parse_cann(8.0) is None
    assert parse_driver(b"24.1.rc2") is None


def test_driver_total_order():
    shuffled = DRIVER_ORDER[:]
    random.Random(7).shuffle(shuffled)
    assert [str(v) for v in sorted(DriverVersion(s) for s in shuffled)] == DRIVER_ORDER


def test_driver_facts():
    assert DriverVersion("26.0.RC1") == DriverVersion("26.0.rc1")
    assert DriverVersion("24.1.rc1.b030").release == "24.1.rc1"
    assert DriverVersion("25.0.rc1.1").within("25.0.RC1")
    assert DriverVersion("24.1.rc2.2").within("24.1.rc2")
    assert not DriverVersion("24.1.rc2").within("24.1.rc2.2")
    assert not DriverVersion("24.1.0").within("24.1.rc1")
    fw = DriverVersion("7.7.0.1.231")
    assert fw < DriverVersion("7.7.0.10.220")
    assert DriverVersion("Ascend HDK 25.0.RC1") == "25.0.rc1"
    assert DriverVersion("24.1.T3").compare("24.1.0") is None
    for bad in ("", "x.y", "24", "24.1.rc2.b", "1.2.3.4.5.6.7"):
        assert parse_driver(bad) is None


def test_version_in_patterns():
    assert version_in("8.5.1", ["8.5.X"])
    assert version_in("8.5.0-beta.1", ["8.5.X"])
    assert not version_in("9.0.0", ["8.5.X"])
    assert version_in("25.5.2", ["25.5.X", "26.0.RC1"])
    assert version_in("26.0.rc1", ["25.5.X", "26.0.RC1"])
    assert version_in("CANN 8.0.RC3", ["8.0.rc3"])
    assert not version_in("8.5", ["8.5.X"])
    assert not version_in("", ["8.5.X"])
    assert not version_in(None, ["8.5.X"])  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789.-_RCTrctabelphxXvb ", max_size=24))
def test_fuzz_parsers_only_raise_invalid_version(text):
    for cls in (CannVersion, DriverVersion):
        try:
            v = cls(text)
        except InvalidVersion:
            continue
        assert str(v) == text.strip() or str(v)
        assert v.compare(v) in (0, None)
        c = v.compare("8.0.0")
        assert c in (-1, 0, 1, None)


def test_versions_are_parsed_once_per_string():
    """The planner judges the same matrix versions hundreds of thousands of times: each
    string is parsed once and the same (immutable) object handed back."""
    from npudoctor.knowledge.versions import pep440, pep440_public

    assert parse_cann("8.0.RC3") is parse_cann("8.0.RC3")
    assert parse_cann("8.0.RC3") == CannVersion("8.0.rc3")
    assert parse_cann("not a version") is None and parse_cann(None) is None
    assert pep440("2.1.0.post3") is pep440("2.1.0.post3")
    assert str(pep440("2.1.0.post3")) == "2.1.0.post3"
    assert pep440_public("2.1.0+cpu") is pep440_public("2.1.0+cpu") and str(pep440_public("2.1.0+cpu")) == "2.1.0"
    assert pep440_public("1.11.0.rc2 (beta)") is not None and str(pep440_public("1.11.0.rc2 (beta)")) == "1.11.0rc2"
    assert tokens("9.0.0-beta.2") == ["9", "0", "0", "beta", "2"]
    tokens("8.0.0").append("x")  # a caller's list is its own
    assert tokens("8.0.0") == ["8", "0", "0"]


def test_the_version_helpers_of_every_kind_live_here_and_never_raise():
    """PEP 440, Python X.Y, CANN and ELF symbol-version helpers, one name each, in this
    module; a version of absurd length is "not a version", never a ValueError."""
    from npudoctor.knowledge import versions as v

    huge = "2." + "9" * 5000
    assert v.pep440_release("2.1.0.post10+cpu") == (2, 1, 0)
    assert v.pep440_release("2.1.0+cpu") == (2, 1, 0) and v.pep440_release("garbage") is None
    assert v.pep440_release(None) is None and v.pep440_release(huge) is None
    assert v.pep440_local("2.1.0+cpu") == "cpu" and v.pep440_local("2.1.0") is None and v.pep440_local(huge) is None
    assert str(v.parse_pep440("2.1.0+cpu")) == "2.1.0+cpu" and v.parse_pep440(huge) is None
    assert v.canonical_version("2.1.0.rc1+cpu") == "2.1.0rc1" and v.canonical_version(" odd ") == "odd"
    assert v.canonical_version(huge) == huge
    assert v.pep440_prerelease("2.5.1rc1") and v.pep440_prerelease("2.6.0.dev20250101")
    assert not v.pep440_prerelease("2.5.1.post2") and not v.pep440_prerelease("garbage")
    assert sorted(["2.10.0", "x", "2.9.0"], key=v.pep440_key) == ["x", "2.9.0", "2.10.0"]
    assert v.release_prefix("2.4.0+cpu") == (2, 4) == v.release_prefix("2.4") and v.release_prefix("v2") is None
    assert sorted(["3.10", "3.9", "x"], key=v.python_key) == ["x", "3.9", "3.10"]
    assert v.python_sorted(["3.10", "3.9", "3.9", "3", "3.11 "]) == ["3.9", "3.10", "3.11"]
    assert v.pythons_within(["3.8", "3.9", "3.12"], ">=3.9,<3.12") == ["3.9"]
    assert v.pythons_within(["3.8"], ">=3.9") == ["3.8"] and v.pythons_within(["3.8"], "not a range") == ["3.8"]
    assert v.major_minor("8.2.RC1") == (8, 2) and v.major_minor("82") is None and v.major_minor(None) is None
    assert v.cann_less("8.0.RC3", "8.0.0") is True and v.cann_less("8.0.T63", "8.0.0") is None
    assert v.cann_less("8.0.0", None) is None
    assert v.same_cann("8.0.RC3.beta1", "8.0.RC3") and v.same_cann("8.2.RC1", "8.2.rc1")
    assert not v.same_cann("8.2.RC1", "8.3.RC1") and not v.same_cann("8.2.RC1.beta1", "8.2.RC1")
    assert v.cann_key("8.0.RC3") < v.cann_key("8.0.0") and v.cann_key("garbage") == (0, 0, 0)
    assert v.symbol_versions(["GLIBCXX_3.4.9", "GLIBCXX_3.4.30", "GLIBC_2.17", "GLIBCXX_3.4.9"], "GLIBCXX") == [
        "GLIBCXX_3.4.9",
        "GLIBCXX_3.4.30",
    ]
    assert v.symbol_version_key("GLIBC_PRIVATE") == (0,)


def test_the_helpers_moved_from_probes_parsers_and_lint():
    """The version helpers that lived in the python probe, the info-file and build-info
    parsers, the lint data and the tunables table, each under one name here."""
    from npudoctor.knowledge import versions as v

    assert v.python_release("3.11.4 (main, Jun  7 2023)") == [3, 11, 4]
    assert v.python_release(" 3.9") == [3, 9] and v.python_release("3") is None
    assert v.python_release("3.123456789012") is None and v.python_release("") is None
    assert v.pep440_normal(" 2.1.0.RC1 ") == "2.1.0rc1" and v.pep440_normal("2.1.0+CPU") == "2.1.0+cpu"
    assert v.pep440_normal(" Not-A-Version ") == "not-a-version"
    huge = "2." + "9" * 5000  # packaging refuses it with a plain ValueError: never a traceback
    assert v.pep440_normal(huge) == huge
    assert v.pep440_line(v.pep440("2.1.0.post10")) == (2, 1, 0) and v.pep440_line(v.pep440("2.1")) == (2, 1)
    assert v.range_bound_key("23.0.rc3") < v.range_bound_key("23.0.0") < v.range_bound_key("23.0.1")  # type: ignore[operator]
    assert v.range_bound_key("24.1.rc1.b030") == ((1, 24), (1, 1), (0, 1), (1, 30))
    assert v.range_bound_key("24.1.T3") is None and v.range_bound_key("9" * 21) is None
    assert sorted(["GLIBCXX_3.4.30", "GLIBCXX_3.4.9"], key=v.symbol_version_key) == ["GLIBCXX_3.4.9", "GLIBCXX_3.4.30"]
    assert max(["9.1.0", "11.1.0", "10.2.0"], key=v.symbol_version_key) == "11.1.0"  # GCC releases


def test_a_torch_npu_version_with_a_huge_number_is_unknown_to_the_tunables_table():
    from npudoctor.knowledge.tunables import since_ok

    assert since_ok("2." + "9" * 5000, ("2.1.0",)) is None
    assert since_ok("2.7.1", ("2.7.1.post1", "not a version")) is None


# The ranges of CANN's own version.info files (samples of 8.0.0, 8.2.RC1, 8.3.RC2 and 8.5.0
# installs in the shared captures): a bare line or comparisons joined by commas.
@pytest.mark.parametrize(
    "spec, line, holds",
    [
        ('">=7.6, <=8.2"', "7.6", True),
        ('">=7.6, <=8.2"', "8.2", True),
        ('">=7.6, <=8.2"', "8.3", False),
        ('">=7.6, <=8.2"', "7.5", False),
        (">=7.6, <=8.3", "8.3", True),
        ('"8.2"', "8.2", True),
        ('"8.2"', "8.2.0", True),
        ('"8.5"', "8.2", False),
        (">7.6", "7.6", False),
        ("<8.2", "8.10", False),
        ("!=8.1", "8.2", True),
        ("==8.2", "8.2", True),
        (">= 7.6 ,<= 8.2", "8.0", True),
    ],
)
def test_component_line_holds_reads_version_info_ranges(spec, line, holds):
    from packaging.specifiers import SpecifierSet

    from npudoctor.knowledge.versions import component_line_holds

    assert component_line_holds(spec, line) is holds
    text = spec.strip('"')
    oracle = SpecifierSet(f"=={text}" if text[0].isdecimal() else text)
    assert (line in oracle) is holds  # what PEP 440 ranges say of the same text


@pytest.mark.parametrize(
    "spec, line",
    [("", "8.2"), (">=7.6", None), (">=7.6", ""), ("~=7.6", "7.6"), (">=7.6, <=x", "7.6"),
     (">=7.6", "8.2.RC1"), (">=7.6,", "7.6"), (">=" + "9" * 5000, "7.6"), (">=7.6", "7" * 5000)],
)  # fmt: skip
def test_component_line_holds_is_unknown_for_other_text(spec, line):
    from npudoctor.knowledge.versions import component_line_holds

    assert component_line_holds(spec, line) is None
