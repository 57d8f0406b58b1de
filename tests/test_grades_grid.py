"""The evidence grid of issue 13 (``tests/fixtures/grades/grid.toml``) is well-formed.

This validates the data only: every row names a known pairing, grade and severity that agree with
each other, an AUDIT section, a primary source and references; the version files it is built from
exist, parse as the packages write them (``key=value``, or NNAL's indented ``key : value``) and
carry the versions the row claims. It does not run npudoctor: the verdict work will turn the rows
into scenarios. ``test_checker_rejects_broken_rows`` shows that the checks can fail.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any, Dict, List

import pytest

try:  # Python >= 3.11
    import tomllib
except ImportError:  # pragma: no cover - Python < 3.11
    tomllib = pytest.importorskip("tomli")

GRADES_DIR = Path(__file__).resolve().parent / "fixtures" / "grades"
GRID = GRADES_DIR / "grid.toml"

PAIRINGS = {
    # pairing -> the two sides that must be in ``versions`` (a tuple = one of them)
    "torch-torch_npu": ("torch", "torch_npu"),
    "torch_npu-cann": ("torch_npu", "cann"),
    "cann-kernels": ("cann", ("kernels", "nnal")),
    "cann-driver": ("cann", "driver"),
    "driver-firmware": ("driver", "firmware"),
    "python-wheels": ("python", "torch_npu"),
    "numpy-cann": ("numpy", "cann"),
}
GRADES = {"paired", "declared-compatible", "same-release-line", "undocumented", "documented-incompatible"}
SEVERITIES = {"none", "info", "warning", "error"}
VERSION_KEYS = {"torch", "torch_npu", "cann", "kernels", "nnal", "driver", "firmware", "python", "numpy"}
CHIPS = {"910", "910B", "910_93", "310P", "310B", "950"}
CONTEXTS = {"host", "container"}
MIN_ROWS = 25
ID_PREFIX = {
    "torch-torch_npu": "tt",
    "torch_npu-cann": "tc",
    "cann-kernels": "ck",
    "cann-driver": "cd",
    "driver-firmware": "df",
    "python-wheels": "pw",
    "numpy-cann": "nc",
}

# File roles: which file format, which key holds the version and which ``versions`` key it must equal.
ROLES = {
    "toolkit": ("kv", "version", "cann"),
    "toolkit_component": ("kv", "version_dir", "cann"),
    "kernels": ("kv", "version_dir", "kernels"),
    "nnal": ("colon", "Ascend-cann-atb", "nnal"),
    "driver": ("kv", "Version", "driver"),
    "firmware": ("kv", "Version", "firmware"),
}
EXTRA_KEYS = {
    "toolkit": ("package_name", "arch", "path"),
    "toolkit_component": ("Version",),
    "kernels": ("Version",),
    "nnal": ("Ascend-cann-atb Version",),
    "driver": ("ascendhal_version",),
    "firmware": ("firmware_version",),
}

# The measured examples of issue 13 and the explicit N cells of AUDIT §1.1 must be in the grid.
REQUIRED = [
    ({"torch_npu": "2.9.0", "cann": "8.5.1"}, {"declared-compatible"}),
    ({"cann": "8.2.RC2"}, {"same-release-line"}),
    ({"cann": "8.0.RC2.alpha003"}, {"same-release-line"}),
    ({"cann": "7.0.0", "driver": "23.0.0"}, {"paired", "declared-compatible"}),
    ({"cann": "8.2.RC1", "driver": "25.3.rc1"}, {"declared-compatible"}),
    ({"cann": "9.0.0", "driver": "25.0.rc1.1"}, {"declared-compatible"}),
    ({"cann": "9.1.0", "driver": "25.0.rc1.1"}, {"documented-incompatible"}),
    ({"cann": "9.2.0", "driver": "25.0.rc1.1"}, {"documented-incompatible"}),
    ({"cann": "9.2.0", "driver": "25.2.0"}, {"documented-incompatible"}),
]

_KV_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_.\-]*)=(.*)$")
_COLON_LINE = re.compile(r"^ {4}([A-Za-z][A-Za-z0-9 _\-]*?) : (.*)$")
_INNER = re.compile(r"^V\d{3}R\d{3}C\d+")
_BRACKETS = re.compile(r"^(\[[^\[\]]+\])(,\[[^\[\]]+\])*$")


def load_grid() -> Dict[str, Any]:
    with GRID.open("rb") as fh:
        return tomllib.load(fh)


def parse_version_file(path: Path, fmt: str) -> Dict[str, str]:
    """Parse a version file the way the packages write it; raise ValueError on a stray line."""
    out: Dict[str, str] = {}
    text = path.read_text(encoding="utf-8")
    if not text.endswith("\n"):
        raise ValueError(f"{path}: no trailing newline")
    for number, line in enumerate(text.split("\n")[:-1], 1):
        if fmt == "kv":
            if line.startswith("# "):  # version.cfg header
                continue
            match = _KV_LINE.match(line)
        else:
            match = _COLON_LINE.match(line)
        if not match:
            raise ValueError(f"{path}:{number}: not a {fmt} line: {line!r}")
        key, value = match.group(1), match.group(2)
        if key in out:
            raise ValueError(f"{path}:{number}: duplicate key {key}")
        out[key] = value
    return out


def _side_ok(versions: Dict[str, Any], side: Any) -> bool:
    names = side if isinstance(side, tuple) else (side,)
    return any(versions.get(name) for name in names)


def _severity_problem(row: Dict[str, Any]) -> str:
    grade, severity = row.get("grade"), row.get("severity")
    if grade in ("paired", "declared-compatible"):
        if severity == "none" or (severity == "info" and row.get("context") == "container"):
            return ""
        return "paired/declared-compatible must be 'none' (or 'info' in a container)"
    if grade == "same-release-line":
        if severity == "info" or (severity == "warning" and row.get("unofficial") is True):
            return ""
        return "same-release-line must be 'info' ('warning' only for an unofficial build)"
    if grade == "undocumented":
        return "" if severity in ("info", "warning") else "undocumented must be 'info' or 'warning'"
    if grade == "documented-incompatible":
        if severity != "error":
            return "documented-incompatible must be 'error'"
        if not str(row.get("window", "")).strip():
            return "documented-incompatible must name the window that would work"
    return ""


def row_problems(row: Dict[str, Any], base: Path = GRADES_DIR) -> List[str]:
    rid = row.get("id", "<no id>")
    problems: List[str] = []

    def bad(message: str) -> None:
        problems.append(f"{rid}: {message}")

    pairing = row.get("pairing")
    if pairing not in PAIRINGS:
        bad(f"unknown pairing {pairing!r}")
    elif not re.fullmatch(rf"{ID_PREFIX[pairing]}-\d\d", str(rid)):
        bad(f"id must be '{ID_PREFIX[pairing]}-NN'")
    if row.get("grade") not in GRADES:
        bad(f"unknown grade {row.get('grade')!r}")
    if row.get("severity") not in SEVERITIES:
        bad(f"unknown severity {row.get('severity')!r}")
    if row.get("context") not in CONTEXTS:
        bad(f"context must be one of {sorted(CONTEXTS)}")
    if "chip" in row and row["chip"] not in CHIPS:
        bad(f"unknown chip {row['chip']!r}")
    if not str(row.get("title", "")).strip():
        bad("no title")

    versions = row.get("versions")
    if not isinstance(versions, dict) or not versions:
        bad("no versions")
        versions = {}
    for key, value in versions.items():
        if key not in VERSION_KEYS:
            bad(f"unknown version key {key!r}")
        if not isinstance(value, str) or not value.strip():
            bad(f"empty version for {key}")
    if pairing in PAIRINGS:
        for side in PAIRINGS[pairing]:
            if not _side_ok(versions, side):
                bad(f"versions lack {side} for pairing {pairing}")

    if "§" not in str(row.get("audit", "")):
        bad("no AUDIT section ('audit' must cite a §)")
    if len(str(row.get("source", "")).strip()) < 20:
        bad("no source")
    refs = row.get("refs")
    if not isinstance(refs, list) or not refs or not all(isinstance(r, str) and r.strip() for r in refs):
        bad("no refs (URL or path of the source)")
    message = _severity_problem(row)
    if message:
        bad(message)

    files = row.get("files", {})
    if not isinstance(files, dict):
        bad("files must be a table of role = path")
        files = {}
    needed = {
        "torch_npu-cann": ["toolkit"],
        "numpy-cann": ["toolkit"],
        "cann-driver": ["toolkit", "driver"],
        "driver-firmware": ["driver", "firmware"],
        "cann-kernels": ["toolkit"] + [r for r in ("kernels", "nnal") if versions.get(r)],
    }.get(pairing, [])
    for role in needed:
        if role not in files:
            bad(f"no {role} file")
    for role, rel in files.items():
        if role not in ROLES:
            bad(f"unknown file role {role!r}")
            continue
        path = base / rel
        if not path.is_file():
            bad(f"missing file {rel}")
            continue
        fmt, version_key, versions_key = ROLES[role]
        try:
            values = parse_version_file(path, fmt)
        except (ValueError, UnicodeDecodeError) as exc:
            bad(str(exc))
            continue
        for key in (version_key,) + EXTRA_KEYS[role]:
            if not values.get(key, "").strip():
                bad(f"{rel}: no {key}")
        if versions.get(versions_key) and values.get(version_key) != versions[versions_key]:
            bad(
                f"{rel}: {version_key}={values.get(version_key)!r} but versions.{versions_key}={versions[versions_key]!r}"
            )
        for key in ("innerversion", "Innerversion"):
            if key in values and not _INNER.match(values[key]):
                bad(f"{rel}: malformed {key}")
        for key in ("compatible_version", "compatible_version_fw", "compatible_version_drv"):
            if key in values and not _BRACKETS.match(values[key]):
                bad(f"{rel}: malformed {key}")
    return problems


def grid_problems(grid: Dict[str, Any], base: Path = GRADES_DIR) -> List[str]:
    problems: List[str] = []
    meta = grid.get("meta", {})
    if set(meta.get("pairings", [])) != set(PAIRINGS):
        problems.append("meta.pairings differ from the seven pairings of issue 13")
    if set(meta.get("grades", [])) != GRADES:
        problems.append("meta.grades differ from the known grades")
    if set(meta.get("severities", [])) != SEVERITIES:
        problems.append("meta.severities differ from the known severities")
    rows = grid.get("row", [])
    if len(rows) < MIN_ROWS:
        problems.append(f"only {len(rows)} rows (need >= {MIN_ROWS})")
    ids = [row.get("id") for row in rows]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        problems.append(f"duplicate ids {duplicates}")
    for row in rows:
        problems.extend(row_problems(row, base))
    covered = {row.get("pairing") for row in rows}
    for pairing in PAIRINGS:
        if pairing not in covered:
            problems.append(f"pairing {pairing} not covered")
    for grade in GRADES:
        if not any(row.get("grade") == grade for row in rows):
            problems.append(f"grade {grade} has no example")
    for wanted, grades in REQUIRED:
        hits = [r for r in rows if all(r.get("versions", {}).get(k) == v for k, v in wanted.items())]
        if not any(r.get("grade") in grades for r in hits):
            problems.append(f"required combination {wanted} with grade in {sorted(grades)} missing")
    return problems


def test_grid_is_valid():
    assert grid_problems(load_grid()) == []


def test_every_version_file_is_used_and_documented():
    grid = load_grid()
    used = {(GRADES_DIR / rel).resolve() for row in grid["row"] for rel in row.get("files", {}).values()}
    on_disk = {p.resolve() for p in (GRADES_DIR / "files").rglob("*") if p.is_file() and p.name != "README.md"}
    assert sorted(map(str, on_disk - used)) == []
    readme = (GRADES_DIR / "files" / "README.md").read_text(encoding="utf-8")
    for path in on_disk:
        release_dir = path.relative_to(GRADES_DIR / "files").parts[:2]
        assert "/".join(release_dir) in readme or release_dir[1] in readme, path


def test_docs_page_shows_every_grade():
    page = Path(__file__).resolve().parent.parent / "docs" / "grades.md"
    text = page.read_text(encoding="utf-8")
    for grade in GRADES:
        assert grade in text, grade


@pytest.mark.parametrize(
    "breakage",
    [
        lambda row: row.pop("source"),
        lambda row: row.pop("refs"),
        lambda row: row.update(audit="see AUDIT"),
        lambda row: row.update(grade="works"),
        lambda row: row.update(severity="error"),
        lambda row: row.update(pairing="cann-npu"),
        lambda row: row["files"].update(toolkit="files/toolkit/0.0.0/ascend_toolkit_install.info"),
        lambda row: row["versions"].update(cann="8.5.9"),
    ],
)
def test_checker_rejects_broken_rows(breakage):
    grid = load_grid()
    broken = copy.deepcopy(grid)
    row = next(r for r in broken["row"] if r["id"] == "tc-02")
    breakage(row)
    assert grid_problems(broken), "a broken row must be reported"


def test_checker_rejects_a_small_grid():
    grid = load_grid()
    grid["row"] = grid["row"][:10]
    assert any("rows" in p for p in grid_problems(grid))


def test_parser_rejects_stray_lines(tmp_path):
    path = tmp_path / "version.info"
    path.write_text("Version=25.3.rc1\nnot a key value line\n", encoding="utf-8")
    with pytest.raises(ValueError):
        parse_version_file(path, "kv")
