"""What the planner reads from a site snapshot when facts are missing: the architecture
of a snapshot collected with --root (no system binaries, so no host.arch), and a site
whose chip and driver are unknown.  Through the CLI on real collected snapshots."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import Result, npudoctor
from scenario_runner import environment, prepare

from npudoctor.facts import Facts
from npudoctor.knowledge.matrix import load_matrix
from npudoctor.plan.resolve import hdk_versions
from npudoctor.plan.site import site_arch

TESTS = Path(__file__).resolve().parent
PYPI = TESTS / "fixtures" / "plan" / "pypi-torch-npu.json"
A64_PY39 = TESTS / "fixtures" / "plan" / "site_aarch64_py3.9_910B3_drv24.1.rc2.json"


def plan(site: Path, *args: str) -> Result:
    return npudoctor("plan", "--for", str(site), "--pypi-json", str(PYPI), *args)


@pytest.fixture(scope="module")
def k10_snapshot(tmp_path_factory) -> Path:
    """`npudoctor collect --root <k10 scenario>/root -o k10.json` with the scenario's PATH."""
    import tomllib

    work = tmp_path_factory.mktemp("k10")
    scenario = prepare(TESTS / "scenarios" / "k10-set-env-not-sourced", work)
    spec = tomllib.loads((scenario / "scenario.toml").read_text())
    out = work / "k10.json"
    proc = npudoctor("collect", "--root", str(scenario / "root"), "-o", str(out), env=environment(scenario, spec))
    assert proc.returncode == 0, proc.stderr
    return out


def test_root_snapshot_arch_comes_from_the_wheel_tags(k10_snapshot):
    facts = json.loads(k10_snapshot.read_text())["facts"]
    assert facts["host"]["arch"] is None and facts["python"]["machine"] == "x86_64"
    proc = plan(k10_snapshot)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("site: unknown node — x86_64 (from python.machine), glibc ?, Python 3.11.13, CANN 8.0.0")
    assert (
        "  - architecture x86_64: from python.machine (WHEEL platform tags of installed packages); "
        "the snapshot has no host.arch" in lines
    )
    doc = json.loads(plan(k10_snapshot, "--json").stdout)
    assert doc["plan"]["arch"] == "x86_64"
    assert doc["site"]["arch_source"] == "python.machine (WHEEL platform tags of installed packages)"
    assert "host.arch" not in doc["site"]["missing"]


def test_arch_fallbacks_in_order():
    assert site_arch(Facts({"host": {"arch": "arm64"}, "python": {"machine": "x86_64"}})) == ("aarch64", "host.arch")
    assert site_arch(Facts({"host": {"arch": None}, "python": {"machine": "aarch64"}})) == ("aarch64", "python.machine")
    cann = {"selected": {"arch": "aarch64"}, "toolkits": [{"arch": "x86_64"}]}
    assert site_arch(Facts({"host": {}, "python": {"machine": None}, "cann": cann})) == (
        "aarch64",
        "cann.selected.arch (the CANN toolkit in use)",
    )
    toolkits = {"selected": None, "toolkits": [{"arch": "x86_64"}, {"arch": "amd64"}, {"arch": None}]}
    assert site_arch(Facts({"cann": toolkits})) == ("x86_64", "cann.toolkits[].arch (the installed CANN toolkits)")
    assert site_arch(Facts({"cann": {"toolkits": [{"arch": "x86_64"}, {"arch": "aarch64"}]}})) == (None, None)
    assert site_arch(Facts({})) == (None, None)


def test_snapshot_without_any_arch_is_refused(k10_snapshot, tmp_path):
    doc = json.loads(k10_snapshot.read_text())
    doc["facts"]["python"]["machine"] = None
    doc["facts"]["cann"]["selected"]["arch"] = None
    for tk in doc["facts"]["cann"]["toolkits"]:
        tk["arch"] = None
    site = tmp_path / "noarch.json"
    site.write_text(json.dumps(doc))
    proc = plan(site)
    assert proc.returncode == 2
    assert "the snapshot tells no CPU architecture (no host.arch, python.machine, cann.selected.arch" in proc.stderr
    # the CANN toolkit alone is enough
    doc["facts"]["cann"]["selected"]["arch"] = "x86_64"
    site.write_text(json.dumps(doc))
    proc = plan(site)
    assert proc.returncode == 0, proc.stderr
    assert "architecture x86_64: from cann.selected.arch (the CANN toolkit in use); the snapshot has no host.arch" in (
        proc.stdout
    )


def test_plan_says_what_it_is_based_on(tmp_path):
    doc = json.loads(A64_PY39.read_text())
    out = json.loads(plan(A64_PY39, "--json", "--newest").stdout)["plan"]
    assert out["reasons"][0] == (
        f"torch_npu {out['torch_npu']}: the newest build with a cp39 wheel for aarch64 "
        "that supports this site's 910B3 and whose CANN its driver 24.1.rc2 accepts"
    )
    doc["facts"].pop("driver", None)
    doc["facts"]["devices"] = {}
    site = tmp_path / "nochip.json"
    site.write_text(json.dumps(doc))
    proc = plan(site, "--json", "--newest")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)["plan"]
    assert out["reasons"][0] == (
        f"torch_npu {out['torch_npu']}: the newest build with a cp39 wheel for aarch64 (no chip or driver known "
        "for this site: chip support not checked and the driver requirement is listed, not checked)"
    )
    assert "chip and driver accept" not in proc.stdout
    req = load_matrix().driver_requirement(out["cann"])
    need = hdk_versions(req.paired, req.compatible)
    warning = next(w for w in out["warnings"] if "needs Ascend HDK" in w)
    assert warning == (
        f"the snapshot has no driver version; CANN {out['cann']} needs Ascend HDK {', '.join(need)} — check with npu-smi"
    )
    assert len(need) == len({n.lower() for n in need})


def test_hdk_versions_dedup_and_order():
    assert hdk_versions(["26.1.0"], ["25.5.X", "26.0.RC1", "25.7.RC1", "26.1.0"]) == [
        "26.1.0",
        "26.0.RC1",
        "25.7.RC1",
        "25.5.X",
    ]
    assert hdk_versions([], ["24.1.rc2", "24.1.RC2", "weird"]) == ["24.1.rc2", "weird"]


def test_chip_family_comes_from_the_current_matrix_not_the_snapshot():
    from npudoctor.knowledge.matrix import load_matrix
    from npudoctor.plan.site import site_from_snapshot
    from npudoctor.snapshot import Snapshot

    chips = [{"name": "910B3", "family": "stale-family", "soc_version": "Ascend910B3", "soc_source": "matrix"}] * 2
    snap = Snapshot(facts={"devices": {"chips": chips}})
    site = site_from_snapshot(snap)
    assert (site.chip.name, site.chip.count, site.chip.family, site.chip.soc_version) == ("910B3", 2, None, None)
    site = site_from_snapshot(snap, matrix=load_matrix())
    assert (site.chip.family, site.chip.soc_version) == ("910B", "Ascend910B3")
