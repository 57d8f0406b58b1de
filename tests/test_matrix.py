"""The bundled matrix: provenance, schema check, and the queries rules use."""

import datetime
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from clirun import npudoctor

from npudoctor.knowledge.matrix import MatrixError, bundled_dir, load_from, load_matrix, validate

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _no_home_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NPUDOCTOR_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def m():
    return load_from(bundled_dir(), "bundled")


def test_bundled_matrix_cites_its_sources(m):
    prov = m.provenance
    assert prov["origin"] == "bundled" and prov["retrieved"] == "2026-12-06" and len(prov["sha256"]) == 64
    assert any("COMPATIBILITY.md" in s for s in prov["sources"])
    assert any("pypi.org/pypi/torch-npu/json" in s for s in prov["sources"])
    for table in ("torch_npu", "cann", "chip", "family", "python_dep", "torch_line", "install_pairing"):
        rows = m.data[table]
        assert rows, table
        for r in rows:
            assert r["source"].strip() and r["retrieved"] in ("2026-11-29", "2026-12-01", "2026-12-06"), (table, r)


def test_default_is_bundled_without_cache():
    assert load_matrix().provenance["origin"] == "bundled"


def test_official_rows_by_value(m):
    assert [r.torch_npu for r in m.rows_for_cann("8.0.0")] == ["2.4.0.post2", "2.3.1.post4", "2.1.0.post10"]
    row = m.find_torch_npu("2.1.0.post8")
    assert (row.torch, row.cann, row.branch, row.status) == ("2.1.0", ["8.0.RC3"], "v2.1.0-6.0.rc3", "historical")
    assert row.python == {"aarch64": ["3.8", "3.9", "3.10", "3.11"], "x86_64": ["3.8", "3.9", "3.10", "3.11"]}
    # PEP 440 normalisation both ways; local tags ignored
    assert m.find_torch_npu("2.1.0rc1").cann == ["7.0.RC1"]
    assert m.find_torch_npu("2.1.0.post10+cpu").torch_npu == "2.1.0.post10"
    assert m.find_torch_npu("2.5.1.dev20250218") is None
    assert m.find_torch_npu("not a version") is None
    # the PyPI-style name of a 3.0.0-era build: found, with its own row's pairing
    rc2 = m.find_torch_npu("1.11.0.rc2")
    assert (rc2.torch, rc2.cann, rc2.branch) == ("1.11.0", ["6.0.1", "6.0.0"], "v1.11.0-3.0.0")
    # the table typo is kept as published (REPORT.md §8.4)
    assert m.find_torch_npu("1.5.0.post3").torch == "1.8.1"
    # active rows of COMPATIBILITY.md: 26 (master 2026-08-21) + the five TorchNPU 26.1.1 packages
    assert sum(r.status == "active" for r in m.torch_npu_rows) == 31


def test_rows_for_torch_and_fits(m):
    assert [r.torch_npu for r in m.rows_for_torch("2.4.0+cpu")][:3] == ["2.4.0.post4", "2.4.0.post3", "2.4.0.post2"]
    fits = m.fits(torch="2.7.1", python="3.13", platform="x86_64", cann="9.0.0")
    # 2.7.1.post11 is the TorchNPU 26.2.0 package: its notes declare 26.2.X compatible with 9.0.X
    assert [r.torch_npu for r in fits] == ["2.7.1.post11", "2.7.1.post10", "2.7.1.post8", "2.7.1.post6", "2.7.1.post4"]
    assert m.fits(torch="2.6.0", python="3.12", platform="aarch64") == [m.find_torch_npu("2.6.0.post5")]
    # 2.10.0.post6 has no cp311 wheel... for x86_64 it has cp310/cp311 only
    assert m.find_torch_npu("2.10.0.post6").pythons("x86_64") == ["3.10", "3.11"]
    assert all(r.status != "prerelease" for r in m.fits())


def test_cann_fit(m):
    r = m.find_torch_npu("2.1.0.post10")
    assert m.cann_fit(r, "8.0.0") == "paired"
    assert m.cann_fit(r, "8.3.RC1") == "compatible"  # 6.0.0 line: 8.0.RC2 ... 8.3.RC1
    assert m.cann_fit(r, "7.0.0") == "incompatible"
    assert m.cann_fit(r, "8.0.T63") == "unknown"
    assert m.cann_fit(r, "garbage") == "unknown"
    assert m.cann_fit(m.find_torch_npu("2.7.1.post8"), "8.5.1") == "compatible"  # 26.1.X: 8.5.X
    # the TorchNPU 26.2.0 package for torch 2.14.0: paired with CANN 9.2.0 by the release notes;
    # 9.1.0 (what its wheel's README names) is inside the 26.2.X line's declared 8.5.X-9.2.X
    assert m.cann_fit(m.find_torch_npu("2.14.0"), "9.2.0") == "paired"
    assert m.cann_fit(m.find_torch_npu("2.14.0"), "9.1.0") == "compatible"
    assert m.cann_fit(m.find_torch_npu("2.7.1.post11"), "9.2.0") == "paired"
    # community re-release names of CANN <= 8.0
    assert [r.torch_npu for r in m.rows_for_cann("8.0.RC3.beta1")] == ["2.4.0", "2.3.1.post2", "2.1.0.post8"]


def test_driver_requirement_and_fit(m):
    """Graded by evidence (issue 13, AUDIT §1, §7): hdk_minimum holds documented floors only
    (none for 8.5.0: its notes list 25.0.X-25.5.X, a list, not a floor); tested install
    combinations are compatible, never floors; undocumented combinations are "unknown"."""
    req = m.driver_requirement("8.5.0")
    assert req.paired == ["25.5.0"] and "25.0.X" in req.compatible and req.minimum is None
    # a maintenance release inherits its line's statements (AUDIT §7(e))
    assert m.driver_requirement("8.3.RC2").cann == "8.3.RC1"
    assert m.driver_fit("8.1.RC1", "25.0.rc1.1") == "paired"  # a patch build of the paired HDK 25.0.RC1
    assert m.driver_fit("8.1.RC1", "24.1.rc2") == "compatible"  # tested install combination
    # 23.0.7 is two HDK releases before 24.1.rc2, the oldest documented: undocumented (AUDIT §7(d))
    assert m.driver_fit("8.1.RC1", "23.0.7") == "unknown"
    assert m.driver_fit("8.0.0", "24.1.rc1.b030") == "unknown"  # one release before 24.1.rc2 (tested)
    assert m.driver_fit("8.5.0", "25.5.2") == "compatible"  # 25.5.X in the 8.5.0 notes
    assert m.driver_fit("8.5.0", "25.1.rc1") == "unknown"  # between listed HDKs: no statement
    assert m.driver_fit("8.5.0", "23.0.7") == "too-old"  # > 4 HDK releases before 25.0.X
    assert m.driver_fit("8.5.0", "26.0.rc1") == "unknown"  # newer than listed: not stated
    assert m.driver_fit("9.1.0", "25.0.rc1") == "too-old"  # explicit N (9.1.0/9.1.1/9.2.0 grids)
    assert m.driver_fit("9.1.0", "24.1.rc2") == "too-old"  # older than the N column 25.0.X
    assert m.driver_fit("9.0.0", "25.0.rc1") == "compatible"  # grid Y (issue 13's measured example)
    assert m.driver_fit("7.0.0", "23.0.0") == "paired"  # AscendSpeed/ModelLink README (AUDIT W1)
    assert m.driver_fit("9.9.9", "25.0.0") == "unknown"
    assert m.driver_fit("8.5.0", "nonsense") == "unknown"


def test_driver_requirement_lists_each_hdk_once_newest_first(m):
    """CANN 9.1.0's final release notes pair it with 26.0.RC1 and mark 25.2.X-26.2.RC1 Y
    (AUDIT W6/W7): the query gives each version once, paired first, then newest first."""
    req = m.driver_requirement("9.1.0")
    assert req.paired == ["26.0.RC1"]
    assert req.compatible == ["26.2.RC1", "26.1.1", "26.1.0", "25.7.RC1", "25.5.X", "25.3.X", "25.2.X"]
    assert req.versions == ["26.0.RC1"] + req.compatible
    assert m.driver_requirement("9.0.0").versions == [
        "26.0.RC1", "26.2.RC1", "26.1.1", "26.1.0", "25.7.RC1", "25.5.X", "25.5.2", "25.5.1", "25.3.X", "25.2.X", "25.0.X",
    ]  # fmt: skip
    assert m.driver_requirement("8.5.0").versions == ["25.5.0", "25.5.X", "25.3.X", "25.2.X", "25.0.X"]
    # the de-duplication does not change any answer of driver_fit
    assert m.driver_fit("9.1.0", "26.1.0") == "compatible"
    assert m.driver_fit("9.1.0", "25.5.3") == "compatible"
    assert m.driver_fit("9.0.0", "26.0.rc1") == "paired"


def test_support_is_the_lifecycle_not_the_table_status(m):
    """2.1.0.post10 is an active row of the mapping table, but its PyTorch line is EOL
    since 2025-12-30 (SUPPORT.md; the release-branch READMEs disagree)."""
    day = datetime.date(2026, 11, 29)
    row = m.find_torch_npu("2.1.0.post10")
    assert row.status == "active"
    sup = m.support(row, today=day)
    assert (sup["state"], sup["since"], sup["text"]) == ("eol", "2025-12-30", "EOL since 2025-12-30 (sources disagree)")
    assert m.support(m.find_torch_npu("2.4.0.post2"), today=day)["text"] == "EOL since 2026-06-15"
    assert m.support(m.find_torch_npu("2.6.0.post5"), today=day)["text"] == "maintenance, EOL from 2027-01-25"
    assert m.support(m.find_torch_npu("2.6.0.post5"), today=datetime.date(2027, 2, 1))["text"] == (
        "EOL since 2027-01-25"
    )
    assert m.support(m.find_torch_npu("2.8.0.post4"), today=day)["text"] == "EOL since 2026-10-15"
    assert m.support(m.find_torch_npu("2.10.0.post4"), today=day)["text"] == "maintenance since 2026-10-30"
    assert m.support(m.find_torch_npu("2.10.0.post4"), today=datetime.date(2026, 5, 1))["text"] == (
        "development since 2026-04-30, maintenance from 2026-10-30"
    )
    # by date, not by the stored word: SUPPORT.md called 2.13.0 'expected release 2026/10' and
    # 2.14.0 'planned'; both were released on 2026-10-15
    assert m.support(m.find_torch_npu("2.13.0"), today=day)["text"] == "development since 2026-10-15"
    assert m.support(m.find_torch_npu("2.14.0"), today=day)["text"] == "development since 2026-10-15"
    early = m.support(m.find_torch_npu("2.14.0"), today=datetime.date(2026, 9, 1))
    assert (early["state"], early["text"]) == ("planned", "planned, release 2026-10-15")


def test_numpy_and_python_deps(m):
    assert m.numpy_spec("8.0.0", "3.10") == ">=1.19.2,<2"
    assert m.numpy_spec("8.5.0", "3.11") == ">=1.19.2,<2"
    assert m.numpy_spec("8.5.0", "3.13") == ">2.1"
    assert m.numpy_spec("9.1.0", "3.11") == ">=1.19.2"
    spec, source, exact = m.numpy_requirement("8.3.RC1", "3.11")
    # the newest documented release before it: 8.3.RC1.alpha002 ('numpy>=1.19.2,<=1.24.0', AUDIT §5.1)
    assert spec == ">=1.19.2,<2" and "CANN 8.3.RC1.alpha002" in source and exact is False
    assert m.numpy_spec("nonsense", "3.10") is None
    deps = m.cann_python_deps("8.0.0")
    for d in ("decorator", "attrs", "psutil", "absl-py", "cloudpickle", "ml-dtypes", "scipy", "tornado", "sympy"):
        assert d in deps
    assert "pathlib2" not in deps
    assert (m.import_name("absl-py"), m.import_name("pyyaml"), m.import_name("protobuf")) == (
        "absl",
        "yaml",
        "google.protobuf",
    )
    assert m.import_name("ml-dtypes") == "ml_dtypes"


def test_chips_and_families(m):
    c = m.chip("910B3")
    assert (c.soc_version, c.family, c.bf16, c.kernels_dir, c.kernels_package_chip) == (
        "Ascend910B3",
        "910B",
        True,
        "ascend910b",
        "910b",
    )
    assert m.chip("Ascend 910B4").name == "910B4"  # npu-smi -m spelling
    assert m.chip("910B4-1").family == "910B"
    a3 = m.chip("Ascend910")
    assert a3.family == "910_93" and a3.soc_version is None and a3.kernels_package_chip == "A3"
    assert m.chip("Ascend910_9391").soc_version == "Ascend910_9391"
    legacy = m.chip("910B")
    assert legacy.family == "910" and legacy.bf16 is False
    assert m.chip("310P3").kernels_dir == "ascend310p" and m.chip("310P3").bf16 is False
    assert m.chip("Ascend950DT").family == "950"
    assert m.chip("nonsense") is None
    assert m.family_supported("910B", "2.1.0") is True
    assert m.family_supported("910_93", "2.1.0.post6") is False
    assert m.family_supported("910_93", "2.1.0.post8") is True
    assert m.family_supported("910_93", "2.2.0.post2") is False
    assert m.family_supported("910_93", "2.5.1") is True
    assert m.family_supported("950", "2.9.0") is False
    assert m.family_supported("950", "2.10.0") is True
    assert m.family_supported("310", None) is None
    assert m.family_supported("nope", None) is None


def test_newest_for(m):
    assert m.newest_for("910B", "aarch64", "3.11").torch_npu == "2.14.0"  # TorchNPU 26.2.0, torch 2.14.0
    assert m.newest_for("910B", "x86_64", "3.8").torch_npu == "2.4.0.post4"
    # driver 24.1.rc2 is ruled out by CANN 9.1.X (grid N for 25.0.X and older) but not by 9.0.0
    # (undocumented, within about a year of 25.0.X): the newest pairing it leaves is CANN 9.0.0's
    assert m.newest_for("910B", "aarch64", "3.10", driver="24.1.rc2").torch_npu == "2.10.0"
    assert m.newest_for("910B", "aarch64", "3.10", driver="23.0.7").torch_npu == "2.8.0"  # CANN 8.3.RC1: one release
    assert m.newest_for("910_93", "aarch64", "3.8").torch_npu == "2.4.0.post4"
    assert m.newest_for("310", "aarch64", "3.10") is None


def test_age_days(m):
    assert m.age_days(datetime.date(2026, 12, 6)) == 0
    assert m.age_days(datetime.date(2027, 6, 6)) == 182


def _write(tmp_path, text, name="m.toml"):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return str(p)


GOOD_ROW = """
[meta]
name = "t"
retrieved = "2026-11-29"
source = "test"

[[torch_npu]]
torch_npu = "2.1.0.post10"
torch = "2.1.0"
cann = ["8.0.0"]
status = "active"
source = "COMPATIBILITY.md"
retrieved = "2026-11-29"
"""


def test_minimal_valid_file(tmp_path):
    m = load_matrix(_write(tmp_path, "schema_version = 1\n" + GOOD_ROW))
    assert m.provenance["origin"] == "file"
    assert m.find_torch_npu("2.1.0.post10").cann == ["8.0.0"]


@pytest.mark.parametrize(
    "change, expected",
    [
        (
            ('cann = ["8.0.0"]', 'cann = "8.0.0"'),
            "row 1 (torch_npu = 2.1.0.post10): field 'cann' must be a list of strings",
        ),
        (('cann = ["8.0.0"]', 'cann = ["eight"]'), "field 'cann' holds 'eight', not a CANN version"),
        (('status = "active"', 'status = "live"'), "field 'status' must be one of"),
        (('torch = "2.1.0"\n', ""), "row 1 (torch_npu = 2.1.0.post10): missing field 'torch'"),
        (('retrieved = "2026-11-29"\n', 'retrieved = "yesterday"\n'), "field 'retrieved' must be a date"),
        (('source = "COMPATIBILITY.md"', 'source = "COMPATIBILITY.md"\ncolour = "red"'), "unknown field 'colour'"),
    ],
)
def test_schema_errors_name_row_and_field(tmp_path, change, expected):
    text = "schema_version = 1\n" + GOOD_ROW.replace(*change)
    with pytest.raises(MatrixError) as err:
        load_matrix(_write(tmp_path, text))
    assert expected in str(err.value)
    assert "m.toml" in str(err.value)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("schema_version = 2\n" + GOOD_ROW, "schema_version is 2"),
        ("schema_version = 1\n[[torch_npu]\n", "not valid TOML"),
        ("", "schema_version is None"),
    ],
)
def test_unloadable_files(tmp_path, text, expected):
    with pytest.raises(MatrixError) as err:
        load_matrix(_write(tmp_path, text))
    assert expected in str(err.value)


def test_non_utf8_and_missing(tmp_path):
    p = tmp_path / "bin.toml"
    p.write_bytes(b"schema_version = 1\n\xff\xfe\x00")
    with pytest.raises(MatrixError, match="not UTF-8"):
        load_matrix(str(p))
    with pytest.raises(MatrixError, match="does not exist"):
        load_matrix(str(tmp_path / "nope.toml"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(MatrixError, match="holds no .toml"):
        load_matrix(str(tmp_path / "empty"))


def test_cli_show_cann_800_lists_the_three_official_packages(tmp_path):
    env = dict(os.environ, NPUDOCTOR_CACHE_DIR=str(tmp_path / "cache"))
    out = npudoctor("matrix", "show", "--cann", "8.0.0", env=env)
    assert out.returncode == 0, out.stderr
    lines = [line.split()[0] for line in out.stdout.splitlines()[1:] if line.strip()]
    assert lines == ["2.4.0.post2", "2.3.1.post4", "2.1.0.post10"]
    # "table" is whether the mapping table lists the row; "support" is the line's lifecycle
    header, *rows = [line.split("  ") for line in out.stdout.splitlines() if line.strip()]
    header = [c.strip() for c in header if c.strip()]
    assert header == ["torch_npu", "torch", "CANN", "branch", "table", "support", "Python (PyPI wheels)"]
    last = [c.strip() for c in rows[2] if c.strip()]
    assert last[:6] == [
        "2.1.0.post10",
        "2.1.0",
        "8.0.0, 8.0.0.beta1, 8.0.RC3.20",  # AUDIT §4 W14: hiascend Pytorch/600 releasenote_0001
        "v2.1.0-6.0.0",
        "active",
        "EOL since 2025-12-30 (sources disagree)",
    ]
    miss = npudoctor("matrix", "show", "--torch-npu", "9.9.9", env=env)
    assert miss.returncode == 1


def test_cli_show_says_why_no_row_matches_and_refuses_what_is_no_cann_version(tmp_path):
    env = dict(os.environ, NPUDOCTOR_CACHE_DIR=str(tmp_path / "cache"))
    none = npudoctor("matrix", "show", "--torch", "2.12.0", "--cann", "8.2.RC1", env=env)
    assert none.returncode == 1
    assert none.stderr.strip().splitlines()[-1] == (
        "no torch_npu build in the matrix matches --torch 2.12.0 --cann 8.2.RC1;"
        " add --compatible for the rows declared compatible with it"
    )
    bad = npudoctor("matrix", "show", "--cann", "banana", env=env)
    assert bad.returncode == 2
    assert "--cann banana: not a CANN version" in bad.stderr


def test_cli_show_platform_alone_keeps_the_builds_with_a_wheel_for_it(tmp_path):
    env = dict(os.environ, NPUDOCTOR_CACHE_DIR=str(tmp_path / "cache"))
    everything = npudoctor("matrix", "show", "--json", env=env)
    arm = npudoctor("matrix", "show", "--platform", "aarch64", "--json", env=env)
    rows = json.loads(everything.stdout)["rows"]
    kept = [r["torch_npu"] for r in json.loads(arm.stdout)["rows"]]
    assert kept == [r["torch_npu"] for r in rows if r["python"].get("aarch64")]
    assert 0 < len(kept) < len(rows)


def test_cli_show_a_row_without_one_paired_cann_shows_its_declared_set(tmp_path):
    env = dict(os.environ, NPUDOCTOR_CACHE_DIR=str(tmp_path / "cache"), COLUMNS="300")
    out = npudoctor("matrix", "show", "--torch-npu", "2.12.0.post2", env=env)
    assert out.returncode == 0, out.stderr
    row = [c.strip() for c in out.stdout.splitlines()[1].split("  ") if c.strip()]
    assert row[:3] == ["2.12.0.post2", "2.12.0", "compatible: 8.5.X to 9.2.X"]


def test_cli_verify(tmp_path):
    env = dict(os.environ, NPUDOCTOR_CACHE_DIR=str(tmp_path / "cache"))
    run = lambda *a: npudoctor("matrix", "verify", *a, env=env)  # noqa: E731
    ok = run(bundled_dir())
    assert ok.returncode == 0 and "valid" in ok.stdout and "101 torch_npu" in ok.stdout
    bad = _write(tmp_path, "schema_version = 1\n" + GOOD_ROW.replace('status = "active"', 'status = "live"'))
    res = run(bad)
    assert res.returncode == 1 and "field 'status'" in res.stdout
    assert run(str(tmp_path / "missing.toml")).returncode == 2


def test_cli_verify_without_file_checks_the_matrix_in_use(tmp_path):
    """No FILE: the bundled matrix when no refreshed copy exists, else the cache copy,
    saying which (and whether the cache copy is the one in use)."""
    cache = tmp_path / "cache"
    env = dict(os.environ, NPUDOCTOR_CACHE_DIR=str(cache))
    run = lambda: npudoctor("matrix", "verify", env=env)  # noqa: E731
    res = run()
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[:2] == [
        f"verifying the bundled matrix, in use (no refreshed copy at {cache}/matrix.json): {bundled_dir()}",
        f"valid: {bundled_dir()}",
    ]
    cache.mkdir()
    (cache / "matrix.json").write_text('{"schema_version": 1, "torch_npu": [', encoding="utf-8")
    res = run()
    assert res.returncode == 1
    first, second = res.stdout.splitlines()[:2]
    assert first == (
        "verifying the refreshed cache copy, NOT in use (it does not load); the bundled matrix is used: "
        f"{cache}/matrix.json"
    )
    assert second.startswith(f"invalid: matrix file {cache}/matrix.json is not valid JSON")
    # a valid refreshed copy (as `matrix refresh` writes it: the merged document as JSON)
    import json

    data = load_from(bundled_dir(), "bundled").data
    (cache / "matrix.json").write_text(json.dumps(data), encoding="utf-8")
    res = run()
    assert res.returncode == 0, res.stdout + res.stderr
    assert (
        res.stdout.splitlines()[:3]
        == [
            f"verifying the refreshed cache copy, in use: {cache}/matrix.json",
            f"valid: {cache}/matrix.json",
            "rows: 101 torch_npu, 54 cann, 37 chip, 7 family, 16 python_dep",  # + Ascend910_9361 (AUDIT §4 W18), AUDIT §5 CANN rows
        ]
    )


@pytest.mark.slow
def test_wheel_ships_the_matrix(tmp_path):
    """pyproject force-includes matrix/ as npudoctor/_matrix; the installed package finds it."""
    src = tmp_path / "src"
    shutil.copytree(
        REPO,
        src,
        symlinks=True,  # examples/ roots hold symlinks that only resolve inside their root
        ignore=shutil.ignore_patterns(".git", "tests", "__pycache__", "*.egg-info", ".ruff_cache"),
    )
    res = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(src)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if res.returncode != 0 and "hatchling" in res.stderr and "No matching distribution" in res.stderr:
        pytest.skip("the build backend (hatchling) cannot be fetched here")
    assert res.returncode == 0, res.stderr
    wheel = next(tmp_path.glob("npudoctor-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    for f in ("torch_npu.toml", "cann.toml", "chips.toml"):
        assert f"npudoctor/_matrix/{f}" in names
    assert "npudoctor/knowledge/data/codes/packages.toml" in names  # finding codes are data too
    target = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(target)
    code = (
        "import npudoctor.knowledge.matrix as m; print(m.bundled_dir()); "
        "print(m.load_from(m.bundled_dir(), 'bundled').provenance['retrieved']); "
        "from npudoctor.knowledge import codes; print(codes.get('PKG001').name)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(target)),
        cwd=tmp_path,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    retrieved = load_from(str(REPO / "matrix"), "file").provenance["retrieved"]  # the checkout's own data
    assert retrieved >= "2026-12-06"
    assert out.stdout.splitlines() == [str(target / "npudoctor" / "_matrix"), retrieved, "torch-npu-torch-mismatch"]


def test_hdk_statement_fields_are_validated():
    """The issue-13 fields of cann.toml: Y/N grids with their source, per-product pairings,
    inner lines, ops lists, ordered HDK releases, floors (knowledge/matrix/schema.py)."""
    row = {"version": "9.2.0", "source": "notes", "retrieved": "2026-12-01"}
    doc = {
        "schema_version": 1,
        "cann": [
            dict(row, hdk_grid={"25.0.X": "N", "26.2.RC1": "Y"}, hdk_grid_source="9.2.0 notes"),
            dict(row, hdk_grid={"25.0.X": "maybe", "soon": "Y"}),
            dict(row, hdk_products=[{"family": "950", "hdk": ["25.7.RC1"]}], inner_line="C22"),
            dict(row, ops_toolkit=["9.1.X", "nine"]),
        ],
        "hdk_release": [
            {
                "families": ["910B"],
                "releases": ["25.2.0", "25.0.RC1"],
                "per_year": 0,
                "source": "s",
                "retrieved": "2026-12-01",
            }
        ],
        "hdk_floor": [{"chips": ["910B4"], "hdk": "x", "product": "A2", "source": "s", "retrieved": "2026-12-01"}],
        "inner_line": [{"line": "V100R001C22", "cann": ["8.2.RC1"], "source": "s", "retrieved": "2026-12-01"}],
    }
    problems = validate(doc, "cann.toml", partial=True)
    text = "\n".join(problems)
    assert "[[cann]] row 1 " not in text and "[[inner_line]]" not in text
    for needle in (
        "[[cann]] row 2 (version = 9.2.0): field 'hdk_grid' cell '25.0.X' must be \"Y\" or \"N\", got 'maybe'",
        "field 'hdk_grid' column 'soon' is not an HDK version or X.Y.X pattern",
        "field 'hdk_grid' needs 'hdk_grid_source'",
        "field 'hdk_products' entry 1 must be {family = ..., hdk = [...], product = ...}",
        "field 'hdk_products' needs 'hdk_products_source'",
        "field 'inner_line' is not an inner version line like V100R001C22: 'C22'",
        "field 'ops_toolkit' holds 'nine'",
        "field 'ops_toolkit' needs 'ops_source'",
        "field 'releases' must be in release order, oldest first",
        "field 'per_year' must be at least 1",
        "[[hdk_floor]] row 1 (hdk = x): field 'hdk' is not an HDK version: 'x'",
    ):
        assert needle in text, (needle, problems)


def test_inner_lines_and_compatible_version_groups():
    """compatible_version holds single lines and range groups: toolkit 8.0.RC1 lists
    [V100R001C15,V100R001C18] (tests/fixtures/grades/files/toolkit/8.0.RC1)."""
    from npudoctor.knowledge.matrix.hdk import accepts, inner_line

    assert inner_line("V100R001C22SPC001B231") == "V100R001C22" and inner_line("7.6.0.1.220") is None
    listed = ["V100R001C15,V100R001C18", "V100R001C30", "V100R003C11"]
    assert accepts(listed, "V100R001C17") is True and accepts(listed, "V100R001C30") is True
    assert accepts(listed, "V100R001C19") is False and accepts(listed, "V100R003C10") is False
    assert accepts([], "V100R001C17") is None and accepts(listed, None) is None


def test_driver_verdict_per_product_line(m):
    """CANN 9.1.0's HDK differs per product (MindCluster 26.1.0 patch note, AUDIT W8): the
    950-family HDKs are paired on a 950 host and nowhere else; a documented floor applies to
    its chips only (Atlas A2 inference, 910B4: HDK >= 24.1.RC1)."""
    on_950 = m.driver_verdict("9.1.0", "25.1.rc1", family="950").verdict
    assert on_950.grade.value == "paired" and "Atlas 950 SuperPoD" in on_950.source
    on_910b = m.driver_verdict("9.1.0", "25.1.rc1", family="910B")
    assert on_910b.verdict.grade.value == "undocumented" and on_910b.severity() == "info"  # one release before 25.2.X
    a2 = m.driver_verdict("8.0.0", "23.0.7", family="910B", chip="910B4").verdict
    assert a2.grade.value == "documented-incompatible" and "24.1.RC1" in a2.window
    training = m.driver_verdict("8.0.0", "23.0.7", family="910B", chip="910B3")
    assert training.verdict.grade.value == "undocumented" and training.severity() == "warning"


def test_a_maintenance_release_inherits_its_line_as_same_release_line(m):
    """8.5.1 has no HDK statement of its own: 8.5.0's pairing (25.5.0) is 'same release line'
    for it (info), 8.5.0's release-note list still declares 25.0.X-25.5.X (AUDIT §7(e))."""
    v = m.driver_verdict("8.5.1", "25.5.0")
    assert (v.verdict.grade.value, v.severity()) == ("same-release-line", "info")
    assert "CANN 8.5.1 is on its release line" in v.verdict.source
    assert m.driver_verdict("8.5.1", "25.3.rc1").verdict.grade.value == "declared-compatible"
    assert m.driver_verdict("8.5.0", "25.5.0").verdict.grade.value == "paired"


def test_declared_cann_lines_are_a_range_only_when_no_known_line_is_left_out():
    from npudoctor.cli.commands.matrix import _declared_lines

    known = {(8, 3), (8, 5), (9, 0), (9, 1), (9, 2)}
    assert _declared_lines(["8.5.X", "9.0.X", "9.1.X", "9.2.X"], known) == "8.5.X to 9.2.X"
    assert _declared_lines(["8.5.X", "9.1.X", "9.2.X"], known) == "8.5.X, 9.1.X, 9.2.X"
    assert _declared_lines(["8.5.X", "9.0.X"], known) == "8.5.X, 9.0.X"
