"""The evidence grid's stack-side rows (tests/fixtures/grades/grid.toml: cann-driver,
driver-firmware, cann-kernels), each run as a scenario built from the grid's real version
files (tests/fixtures/grades/files/): the findings DRV002 / DRV003 / CANN006 / CANN008 carry
the grade and severity the row documents, with ``data = {"grade", "source"}``; rows whose
severity is "none" give no finding, and the verdict behind that silence has the row's grade.
Issue 13's measured examples also run through the in-process CLI (``check --root --json``)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest
from clirun import npudoctor

from npudoctor.context import Options, RuleContext
from npudoctor.engine import collect, evaluate
from npudoctor.host import Host
from npudoctor.knowledge.grades import severity
from npudoctor.knowledge.matrix import load_matrix
from npudoctor.knowledge.matrix.addons import kernels_verdict, nnal_verdict
from npudoctor.knowledge.matrix.hdk import driver_firmware
from npudoctor.rules.driver import driver_verdict

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
GRADES = HERE / "fixtures" / "grades"
GRID = tomllib.loads((GRADES / "grid.toml").read_text(encoding="utf-8"))
PAIRINGS = ("cann-driver", "driver-firmware", "cann-kernels")
ROWS = [r for r in GRID["row"] if r["pairing"] in PAIRINGS]
AS = "usr/local/Ascend"

#: the npu-smi chip name of the product a row describes (its title/note): the row's ``chip``
#: field is the product line; the floor of cd-16 is stated for the A2 inference chip 910B4.
NPU_SMI_NAME = {"cd-16": "910B4", "cd-17": "910B3", "cd-09": "Ascend950DT", "cd-10": "Ascend950PR"}
LINE_CHIP = {"910B": "910B3", "910_93": "Ascend910_9392", "310P": "310P3", "310B": "310B4", "950": "Ascend950PR"}


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _toolkit_dir(info: str) -> Tuple[str, str]:
    """``(toolkit directory, arch directory)`` from the install info's ``path=`` line."""
    path = re.search(r"^path=(.*)$", info, re.M).group(1).strip()  # type: ignore[union-attr]
    arch = re.search(r"^arch=(.*)$", info, re.M).group(1).strip()  # type: ignore[union-attr]
    if path.endswith("-linux"):
        return path.rsplit("/", 1)[0], path
    return path, f"{path}/{arch}-linux"


def build(row: Dict[str, Any], root: Path) -> Dict[str, str]:
    """Write the row's version files where the packages install them; return the environment."""
    files = {k: (GRADES / v).read_text(encoding="utf-8") for k, v in row.get("files", {}).items()}
    env = {"HOME": "/root", "PATH": "/usr/bin:/bin"}
    if "toolkit" in files:
        tk, arch_dir = _toolkit_dir(files["toolkit"])
        _write(root, f"{arch_dir.lstrip('/')}/ascend_toolkit_install.info", files["toolkit"])
        if "toolkit_component" in files:
            _write(root, f"{tk.lstrip('/')}/toolkit/version.info", files["toolkit_component"])
        if "kernels" in files:
            _write(root, f"{tk.lstrip('/')}/opp_kernel/version.info", files["kernels"])
        env["ASCEND_TOOLKIT_HOME"] = env["ASCEND_HOME_PATH"] = tk
    if "nnal" in files:
        _write(root, f"{AS}/nnal/atb/latest/version.info", files["nnal"])
    if "driver" in files:
        _write(root, f"{AS}/driver/version.info", files["driver"])
        _write(root, f"{AS}/driver/lib64/driver/.keep", "")
    if "firmware" in files:
        _write(root, f"{AS}/firmware/version.info", files["firmware"])
    if row["context"] == "container":
        _write(root, ".dockerenv", "")
    return env


def chip_name(row: Dict[str, Any]) -> Optional[str]:
    if row["id"] in NPU_SMI_NAME:
        return NPU_SMI_NAME[row["id"]]
    return LINE_CHIP.get(row.get("chip", "")) if row.get("chip") else None


def run(row: Dict[str, Any], root: Path) -> Tuple[Any, List[Any], RuleContext]:
    env = build(row, root)
    snap = collect(Host(str(root), environ=env, commands=False), Options())
    name = chip_name(row)
    if name:
        snap.facts.setdefault("devices", {})["chips"] = [{"name": name}]
    matrix = load_matrix()
    return snap, evaluate(snap, matrix, Options()), RuleContext(snapshot=snap, matrix=matrix, options=Options())


def code_of(row: Dict[str, Any]) -> str:
    if row["pairing"] == "cann-driver":
        return "DRV002"
    if row["pairing"] == "driver-firmware":
        return "DRV003"
    return "CANN006" if "kernels" in row["versions"] else "CANN008"


def silent_grade(row: Dict[str, Any], ctx: RuleContext) -> str:
    """The grade of the verdict behind a row that gives no finding, read from the same views."""
    view = ctx.view
    tk = view.cann.selected
    if row["pairing"] == "cann-driver":
        judged = driver_verdict(ctx, tk.version, view.driver.driver.version)
        return judged.verdict.grade.value
    if row["pairing"] == "driver-firmware":
        drv, fw = view.driver.driver, view.driver.firmware
        v = driver_firmware(
            drv.version,
            drv.package_version,
            fw.version,
            fw.package_version,
            [(r[0], r[1]) for r in drv.compatible_version_fw],
            [(r[0], r[1]) for r in fw.compatible_version_drv],
        )
        assert v is not None and severity(v) is None
        return v.grade.value
    if "kernels" in row["versions"]:
        k = tk.kernels
        return kernels_verdict(
            ctx.matrix, tk.version, k.version, k.inner_version, dict(tk.requires), dict(k.requires)
        ).grade.value
    return nnal_verdict(tk.version, view.cann.nnal.version).grade.value


def test_the_grid_covers_the_stack_pairings():
    ids = {r["id"] for r in ROWS}
    assert len(ROWS) >= 30 and {"cd-01", "cd-02", "cd-03"} <= ids  # the measured examples
    assert {r["pairing"] for r in ROWS} == set(PAIRINGS)


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_grid_row(row, tmp_path):
    _snap, found, ctx = run(row, tmp_path)
    code = code_of(row)
    mine = [f for f in found if f.code == code]
    if row["severity"] == "none":
        assert mine == [], [f.title for f in mine]
        assert silent_grade(row, ctx) == row["grade"], row["source"]
        return
    assert len(mine) == 1, [f.title for f in found]
    f = mine[0]
    assert f.severity == row["severity"], (f.title, row["source"])
    assert f.data["grade"] == row["grade"], (f.data, row["source"])
    said = [line for line in [f.title, *f.evidence] if f.data["source"] in line]
    assert f.data["source"] and said == [f.title], said  # the verdict is the title's, said once
    if row["grade"] == "documented-incompatible":
        # names the window: its own line, or the matrix line when that names every HDK of it
        named = [e for e in f.evidence if e.startswith("documented to work: ") or "; works with " in e]
        assert named, f.evidence


MEASURED = {r["id"]: r for r in ROWS if r.get("measured")}


@pytest.mark.parametrize(
    "rid,words",
    [
        ("cd-01", "Ascend HDK 23.0.0 is paired with CANN 7.0.0"),  # AscendSpeed/ModelLink README
        ("cd-02", "declared compatible by the driver's own version.info"),  # compatible_version lists C22
        ("cd-03", "Y for Ascend HDK 25.0.X"),  # the 9.1.0/9.1.1/9.2.0 release-note grids
    ],
)
def test_measured_examples_through_the_cli(rid, words, tmp_path):
    """Issue 13's measured examples: no DRV002 on the host (exit 0 as far as the driver goes);
    inside a container the same pairs are reported as info with grade and source."""
    row = MEASURED[rid]
    env = build(row, tmp_path)
    res = npudoctor("check", "--root", str(tmp_path), "--json", env=env)
    doc = json.loads(res.stdout)
    assert not [f for f in doc["findings"] if f["code"] == "DRV002"], res.stdout
    _write(tmp_path, ".dockerenv", "")
    doc = json.loads(npudoctor("check", "--root", str(tmp_path), "--json", env=env).stdout)
    (drv,) = [f for f in doc["findings"] if f["code"] == "DRV002"]
    assert drv["severity"] == "info" and drv["data"]["grade"] == row["grade"]
    assert words in drv["data"]["source"] and words in drv["title"]
