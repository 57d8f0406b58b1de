"""Parsers of distribution metadata (METADATA/WHEEL/RECORD/requires.txt) and df output,
over real files taken from the torch_npu 2.13.0 wheel and a Debian egg-info, plus fuzzing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.specifiers import SpecifierSet

from npudoctor.parsers import metadata as metadata_mod
from npudoctor.parsers.df import parse_df
from npudoctor.parsers.metadata import (
    canonical_name,
    marker_environment,
    parse_headers,
    parse_metadata,
    parse_record,
    parse_requirement,
    parse_requires_txt,
    parse_wheel,
    requirement_name,
    requirements_on,
    satisfies,
    split_dist_dir,
)


def test_real_torch_npu_metadata(fixture_text):
    meta = parse_metadata(fixture_text("torch_npu-2.13.0.dist-info_METADATA.txt"))
    assert meta["name"] == "torch_npu"
    assert meta["version"] == "2.13.0"
    assert meta["requires_dist"] == ["torch==2.13.0.*", "numpy", "pyyaml"]
    assert meta["summary"] == "NPU bridge for PyTorch"
    assert meta["valid"] is True


def test_real_torch_npu_wheel_and_record(fixture_text):
    wheel = parse_wheel(fixture_text("torch_npu-2.13.0.dist-info_WHEEL.txt"))
    assert wheel["tags"] == ["cp311-cp311-manylinux_2_28_x86_64"]
    assert wheel["root_is_purelib"] is False
    rows = parse_record(fixture_text("torch_npu-2.13.0.dist-info_RECORD_head.txt"))
    assert rows and all(r["path"] for r in rows)
    assert all(r["hash"] is None or r["hash"].startswith("sha256=") for r in rows)
    assert any(isinstance(r["size"], int) and r["size"] > 0 for r in rows)


def test_headers_stop_at_body_and_join_continuations():
    text = (
        "Name: x\nVersion: 1\nDescription: first\n        second\nRequires-Dist: a\n\nRequires-Dist: body-not-header\n"
    )
    headers = parse_headers(text)
    assert ("Description", "first\nsecond") in headers
    assert [v for k, v in headers if k == "Requires-Dist"] == ["a"]


def test_metadata_garbage_is_invalid_not_an_error():
    meta = parse_metadata("\x00\x01 garbage without headers\n\n")
    assert meta["valid"] is False and meta["name"] is None and meta["requires_dist"] == []


def test_requires_txt_sections_become_markers(fixture_text):
    reqs = parse_requires_txt(fixture_text("oauthlib-3.2.2.egg-info_requires.txt"))
    assert 'cryptography>=3.0.0; extra == "rsa"' in reqs
    assert 'pyjwt<3,>=2.0.0; extra == "signedtoken"' in reqs
    marker = parse_requires_txt(
        'base\n[:python_version < "3.8"]\nimportlib-metadata\n[ext:sys_platform == "linux"]\nfoo\n'
    )
    assert marker == [
        "base",
        'importlib-metadata; python_version < "3.8"',
        'foo; (sys_platform == "linux") and extra == "ext"',
    ]
    for text in marker:
        assert parse_requirement(text) is not None


def test_split_dist_dir():
    assert split_dist_dir("torch_npu-2.1.0.post10.dist-info") == ("torch_npu", "2.1.0.post10")
    assert split_dist_dir("torch-2.1.0+cpu.dist-info") == ("torch", "2.1.0+cpu")
    assert split_dist_dir("PyYAML-5.4.1-py3.10.egg-info") == ("PyYAML", "5.4.1")
    assert split_dist_dir("foo.egg-info") == ("foo", None)
    assert split_dist_dir("torch") == (None, None)


def test_old_style_requirement_with_local_tag():
    req = parse_requirement("torch (==2.1.0+cpu)")
    assert req is not None and req.name == "torch"
    assert satisfies("2.1.0+cpu", req.specifier) is True
    assert satisfies("2.1.0", req.specifier) is False  # the PyPI CUDA build does not satisfy +cpu
    assert satisfies("2.1.0+cpu", SpecifierSet("==2.1.0")) is True  # local tag ignored when unpinned
    assert satisfies("2.13.0+cpu", SpecifierSet("==2.13.0.*")) is True
    assert satisfies("not a version", SpecifierSet("==1")) is None


def test_requirements_on_evaluates_markers():
    env = marker_environment({"version": "3.10.12", "version_info": [3, 10, 12], "machine": "aarch64"})
    reqs = [
        'numpy>=2; python_version >= "3.9"',
        'numpy<2; python_version < "3.9"',
        'triton==2.1.0; platform_machine == "x86_64"',
        'pytest; extra == "test"',
        "Torch_NPU==2.1.0",
    ]
    assert [str(r.specifier) for r in requirements_on(reqs, "numpy", env)] == [">=2"]
    assert requirements_on(reqs, "triton", env) == []
    assert requirements_on(reqs, "pytest", env) == []
    assert len(requirements_on(reqs, "torch-npu", env)) == 1
    assert canonical_name("Torch_NPU") == "torch-npu"


def test_canonical_names_fold_runs_of_separators_as_pep_503_says():
    from packaging.utils import canonicalize_name

    names = ["Torch_NPU", "zope.interface", "a__b", "a._-b", " spaced ", "--x--", "A.B_C-D", "torch-npu", "vLLM_Ascend"]
    assert [canonical_name(n) for n in names] == [canonicalize_name(n.strip()) for n in names]
    assert canonical_name("a._-b") == "a-b" and canonical_name("--x--") == "-x-"


def test_df_posix_output():
    rows = parse_df(
        "Filesystem     1024-blocks     Used Available Capacity Mounted on\n"
        "/dev/mapper/ctyunos-root 52403200 52403180 0 100% /\n"
        "server:/export 100 50 50 50% /mnt/with space\n"
        "garbled line\n"
    )
    assert rows[0]["free_bytes"] == 0 and rows[0]["capacity"] == 100 and rows[0]["mount"] == "/"
    assert rows[1]["mount"] == "/mnt/with space" and rows[1]["total_bytes"] == 100 * 1024


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_parsers_never_raise(text):
    parse_metadata(text)
    parse_wheel(text)
    parse_record(text)
    for req in parse_requires_txt(text):
        parse_requirement(req)
    split_dist_dir(text + ".dist-info")
    parse_df(text)


_REQ_ALPHABET = "aBt._-[]()<>=!~;@ \t'\"1,*"


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet=_REQ_ALPHABET, max_size=16) | st.text(max_size=16))
def test_requirement_name_is_the_parsed_name(text):
    """requirements_on skips, unparsed, the strings whose leading name is another
    project's: that name must be the one packaging parses whenever it parses."""
    req = parse_requirement(text)
    name = requirement_name(text)
    if req is not None and name is not None:
        assert canonical_name(req.name) == name


def test_requirements_on_skips_only_other_projects():
    reqs = [
        "torch==2.13.0.*",
        "Torch_NPU (==2.1.0)",
        " torch-npu>=2.1 ; python_version >= '3.8'",
        "numpy",
        "torch (npu)",  # old style, parsed as "torchnpu"
        "not a requirement ((",
        "pyyaml",
    ]
    assert requirement_name("Torch_NPU (==2.1.0)") == "torch-npu"
    assert requirement_name("torch (npu)") is None  # parsing decides
    assert [str(r.specifier) for r in requirements_on(reqs, "torch-npu")] == ["==2.1.0", ">=2.1"]
    assert [r.name for r in requirements_on(reqs, "torchnpu")] == ["torchnpu"]
    assert [str(r.specifier) for r in requirements_on(reqs, "torch")] == ["==2.13.0.*"]


_OPS = st.sampled_from(["==", "!=", "<=", ">=", "<", ">", "~=", "==="])
_VERSIONS = st.sampled_from(
    ["1", "2.13.0", "2.13.0.*", "1.0rc1", "1!2.0", "1.0+cpu", "1.0.post1", "1.0.dev0", "1.*", "v1", "1..0", "*", "1.0+"]
)
_SIMPLE = st.builds(
    lambda name, specs: name + ",".join(op + v for op, v in specs),
    st.sampled_from(["torch", "Torch_NPU", "a", "x.y", "a-b", "numpy"]),
    st.lists(st.tuples(_OPS, _VERSIONS), max_size=3),
)


@settings(max_examples=1500, deadline=None)
@given(_SIMPLE | st.text(alphabet="aT1._-*+!=<>~,", min_size=1, max_size=14))
def test_a_name_and_specifiers_parse_as_packaging_parses_them(text):
    """parse_requirement makes a name-and-specifiers requirement without packaging's PEP 508
    parser: the same name, specifier, (no) marker and extras as packaging's Requirement,
    and None exactly when packaging rejects the string."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.specifiers import InvalidSpecifier

    try:
        want = Requirement(text)
    except (InvalidRequirement, InvalidSpecifier):  # packaging 26.2 (Python 3.8's newest) raises the latter
        want = None
    got = parse_requirement(text)
    if want is None:
        assert got is None
        return
    assert got is not None
    assert (got.name, got.specifier, str(got.specifier), got.marker, set(got.extras)) == (
        want.name,
        want.specifier,
        str(want.specifier),
        want.marker,
        set(want.extras),
    )


@pytest.mark.parametrize("text", ["torch===1,~=1", "torch[x]~=1", 'torch ~=1 ; python_version > "3"'])
def test_a_requirement_with_an_invalid_specifier_is_none(text):
    """``~=1`` (compatible release needs two parts) is refused by every packaging release,
    some of which raise ``InvalidSpecifier`` from ``Requirement``: never an exception here."""
    assert parse_requirement(text) is None


def test_real_simple_requirements_skip_packagings_parser():
    from npudoctor.parsers.metadata import SimpleRequirement

    req = parse_requirement("torch==2.13.0.*")
    assert isinstance(req, SimpleRequirement) and req.name == "torch" and req.specifier.contains("2.13.0")
    assert not req.specifier.contains("2.12.0") and str(req) == "torch==2.13.0.*"
    assert isinstance(parse_requirement("pyyaml"), SimpleRequirement)
    marked = parse_requirement("nvidia-nccl-cu12==2.21.5; platform_system == 'Linux'")
    assert marked is not None and not isinstance(marked, SimpleRequirement) and marked.marker is not None


@settings(max_examples=3000, deadline=None)
@given(
    st.text(alphabet="ab_-.019py", max_size=14),
    st.sampled_from([".dist-info", ".egg-info", ".dist-info", "", ".egg-info/"]),
)
def test_split_dist_dir_answers_as_its_general_pattern(stem, suffix):
    """The name-version fast path agrees with the pattern for every directory name."""
    import re

    dirname = stem + suffix
    general = re.compile(metadata_mod._DIST_DIR_RE.pattern).match(dirname)
    if not dirname.endswith((".dist-info", ".egg-info")):
        expected = (None, None)
    elif general:
        expected = (general.group("name"), general.group("version"))
    else:
        expected = (dirname.rsplit(".", 1)[0] or None, None)
    assert metadata_mod.split_dist_dir(dirname) == expected
