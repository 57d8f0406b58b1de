"""A bounded fuzz suite (issue 20): hypothesis over the text parsers of the judged machine's
files -- version and info files, METADATA, set_env.sh, hccn.conf and hccn_tool output, rank
tables, df, env files -- seeded with the real captures of ``tests/fixtures``, mutated with what
hostile machines hold: numbers past Python's 4,300-digit ``int`` limit, Unicode digits
(``²``, ``٣``, ``２``), NUL bytes, deep nesting; and the version ordering of
:mod:`npudoctor.knowledge.versions`.  No parser raises; every version it returns is ASCII.
Snapshot replay: a real collected snapshot with facts of the wrong types through ``check
--from``.  Each test runs a few dozen examples (replay: 8) with a deadline, so the whole file
stays around 20 s."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, List

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npudoctor.knowledge import versions
from npudoctor.parsers import df, envfile, hccn, info_files, metadata, ranktable, set_env

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _captures(*globs: str) -> List[str]:
    out = []
    for pattern in globs:
        out += [p.read_text(encoding="utf-8", errors="replace") for p in sorted(FIXTURES.glob(pattern)) if p.is_file()]
    return out or [""]


INFO = _captures("ascend_toolkit_install_*", "*version.info*", "*_version.info*", "etc_ascend_install.info*")
HCCN = _captures("hccn*")
#: What hostile files put where a number or version belongs.
HOSTILE = st.sampled_from(
    [
        "9" * 5000,
        "1." + "9" * 4400,
        "²",
        "8.0.RC²",
        "٣.٠",
        "２.1.0",
        "\x00",
        "1e999999",
        "-" + "9" * 4301,
        "[" * 3000,
        "{" * 3000,
        "\udcff",
    ]
)

PARSERS: List[Callable[[str], Any]] = [
    info_files.parse_key_values,
    info_files.parse_version_cfg,
    info_files.parse_colon_info,
    info_files.toolkit_install_info,
    info_files.component_version_info,
    info_files.driver_version_info,
    info_files.firmware_version_info,
    info_files.nnal_version_info,
    info_files.mindie_version_info,
    info_files.ascend_install_info,
    metadata.parse_metadata,
    metadata.parse_wheel,
    metadata.parse_record,
    metadata.parse_requires_txt,
    hccn.parse_hccn_conf,
    hccn.parse_ip,
    hccn.parse_route,
    hccn.parse_status,
    hccn.parse_hw_stats,
    hccn.parse_ping,
    hccn.split_transcript,
    ranktable.parse_ranktable,
    df.parse_df,
    envfile.parse_env_file,
    lambda text: set_env.evaluate(text, "/usr/local/Ascend/ascend-toolkit/set_env.sh"),
]

FAST = settings(max_examples=40, deadline=2000, suppress_health_check=[HealthCheck.too_slow])


def _ascii_versions(value: Any) -> None:
    """Every public version read (``version``, ``version_dir``) is ASCII: no Unicode digit
    got through as a version."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("version", "version_dir") and isinstance(item, str):
                assert item.isascii(), (key, item[:40])
            _ascii_versions(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _ascii_versions(item)


def _run_all(text: str) -> None:
    for parse in PARSERS:
        parse(text)
    for parse in (info_files.toolkit_install_info, info_files.component_version_info, info_files.driver_version_info):
        _ascii_versions(parse(text))


@FAST
@given(capture=st.sampled_from(INFO + HCCN), where=st.integers(0, 10_000), bad=HOSTILE)
def test_hostile_values_spliced_into_real_files(capture: str, where: int, bad: str) -> None:
    cut = where % (len(capture) + 1)
    _run_all(capture[:cut] + bad + capture[cut:])


@FAST
@given(capture=st.sampled_from(INFO), bad=HOSTILE)
def test_hostile_value_after_every_equals_sign(capture: str, bad: str) -> None:
    _run_all(capture.replace("=", "=" + bad))


@FAST
@given(text=st.text(alphabet=st.sampled_from(list("=:.\n 0123456789rRcCbB-_[]{}\"'²٣２\x00#$()")), max_size=400))
def test_version_file_alphabet(text: str) -> None:
    _run_all(text)


@FAST
@given(
    core=st.lists(
        st.one_of(st.integers(0, 10**6).map(str), HOSTILE, st.sampled_from(["RC1", "rc2", "beta", "T63", "B010"])),
        min_size=1,
        max_size=6,
    )
)
def test_versions_never_raise_and_stay_ascii(core: List[str]) -> None:
    text = ".".join(core)
    for parse in (versions.parse_cann, versions.parse_driver):
        parsed = parse(text)
        if parsed is not None:
            assert str(parsed).isascii()
            assert parsed.compare(parsed) == 0
    assert versions.parse_cann("8.0." + "9" * 5000) is None
    assert versions.parse_driver("2" + "4" * 5000 + ".1.rc1") is None


def test_unicode_digits_are_not_versions() -> None:
    for text in ("8.²", "８.0.0", "8.0.RC٣", "24.1.rc²"):
        assert versions.parse_cann(text) is None
        assert versions.parse_driver(text) is None
    assert str(versions.parse_cann("8.0.RC3")) == "8.0.RC3"


NPU_SMI = _captures("npu-smi*", "topo_*", "error_npu-smi_*")


def test_every_number_past_the_int_digit_limit() -> None:
    """Each real capture with every digit run replaced by 5,000 digits (past Python's
    4,300-digit ``int`` limit), and by Unicode digits, through the parsers of its kind: no
    parser raises."""
    import re

    from npudoctor.parsers import npu_smi, topo

    smi = [getattr(npu_smi, n) for n in dir(npu_smi) if n.startswith("parse_")] + [topo.parse_topo]
    info = [p for p in PARSERS if getattr(p, "__module__", "").endswith(("info_files", "metadata", "df", "envfile"))]
    net = [hccn.parse_hccn_conf, hccn.parse_ip, hccn.parse_route, hccn.parse_status, hccn.parse_hw_stats]
    net += [hccn.parse_ping, hccn.parse_link, ranktable.parse_ranktable]
    kinds = [(INFO + _captures("*METADATA*", "*RECORD*", "df*"), info), (HCCN, net), (NPU_SMI, smi)]
    for captures, parsers in kinds:
        for capture in captures:
            for replacement in ("9" * 5000, "²", "٣"):
                text = re.sub(r"[0-9]+", replacement, capture)
                for parse in parsers:
                    try:
                        parse(text)
                    except Exception as exc:  # pragma: no cover - the failure message
                        raise AssertionError(f"{parse.__name__} raised {type(exc).__name__}: {exc}") from None


# ------------------------------------------------------------------ snapshot replay
_JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**30), 10**30),
    st.floats(allow_nan=False),
    st.text(max_size=20),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)


def _paths(value: Any, prefix: tuple = ()) -> List[tuple]:
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, prefix + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value[:3]):
            out += _paths(item, prefix + (i,))
    return out


_SNAPSHOT: List[dict] = []


def _real_snapshot(tmp: Path) -> dict:
    """A snapshot collected from a real scenario tree (once per session)."""
    if not _SNAPSHOT:
        import json

        import clirun

        repo = Path(__file__).resolve().parent.parent
        out = tmp / "node.json"
        root = repo / "tests/scenarios/k10-stale-other-cann/root"
        proc = clirun.npudoctor("collect", "--root", str(root), "--no-commands", "-o", str(out), cwd=repo)
        assert proc.returncode == 0, proc.stderr
        _SNAPSHOT.append(json.loads(out.read_text()))
    return _SNAPSHOT[0]


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_snapshot_replay_with_wrong_typed_facts(tmp_path: Path, data: Any) -> None:
    """A real snapshot with a few facts replaced by values of other types, replayed by
    ``check --from`` (JSON, Markdown): no traceback, no rule crash (HOST099)."""
    import copy
    import json

    import clirun

    snap = copy.deepcopy(_real_snapshot(tmp_path))
    paths = _paths(snap["facts"])
    for path in data.draw(st.lists(st.sampled_from(paths), min_size=1, max_size=4)):
        target = snap["facts"]
        try:
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = data.draw(_JUNK)
        except (KeyError, IndexError, TypeError):
            continue
    src = tmp_path / "mutated.json"
    src.write_text(json.dumps(snap))
    for form in ("--json", "--markdown"):
        proc = clirun.npudoctor("check", "--from", str(src), form)
        assert proc.returncode in (0, 1, 2), proc.stderr
        assert "Traceback" not in proc.stderr
        if form == "--json" and proc.returncode != 2:
            codes = {f["code"] for f in json.loads(proc.stdout)["findings"]}
            assert "HOST099" not in codes, [f for f in json.loads(proc.stdout)["findings"] if f["code"] == "HOST099"]
