"""Scale (issue 20): a site-packages with thousands of distributions is indexed by name once
and only the distributions rules judge by name have their METADATA read; a huge
LD_LIBRARY_PATH is searched once per directory.  (Timings are measured by hand with a
generated 100k tree, never asserted here.)"""

from __future__ import annotations

import json
from pathlib import Path

import clirun

from npudoctor.host import Host
from npudoctor.probes import packages
from npudoctor.tomlread import loads

REPO = Path(__file__).resolve().parent.parent
SITE = "/usr/lib/python3.11/site-packages"


def _dist(site: Path, name: str, version: str, requires: str = "") -> None:
    d = site / f"{name}-{version}.dist-info"
    d.mkdir()
    (d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{requires}")


def test_a_huge_site_packages_reads_metadata_only_for_what_rules_judge_by_name(tmp_path: Path) -> None:
    site = tmp_path / SITE.lstrip("/")
    site.mkdir(parents=True)
    for i in range(packages.FULL_READ_LIMIT):
        _dist(site, f"filler{i}", "1.0")
    _dist(site, "pins_torch", "0.1", "Requires-Dist: torch==9.9\n")
    _dist(site, "torch", "2.1.0", "Requires-Dist: filelock\n")
    (site / "numpy-1.26.4.dist-info").mkdir()  # a judged project whose METADATA is missing
    section = packages.scan(Host(root=str(tmp_path)), [SITE])
    assert section["count"] == packages.FULL_READ_LIMIT + 3
    assert section["indexed_only"] == packages.FULL_READ_LIMIT + 1
    torch = section["installed"]["torch"][0]
    assert torch["requires_dist"] == ["filelock"] and torch["metadata"] == f"{SITE}/torch-2.1.0.dist-info/METADATA"
    pins = section["installed"]["pins-torch"][0]
    assert (pins["version"], pins["requires_dist"], pins["metadata"]) == ("0.1", [], None)
    assert section["installed"]["numpy"][0]["metadata_error"] == f"{SITE}/numpy-1.26.4.dist-info/METADATA: not found"


def test_a_small_site_packages_is_read_in_full(tmp_path: Path) -> None:
    site = tmp_path / SITE.lstrip("/")
    site.mkdir(parents=True)
    _dist(site, "pins_torch", "0.1", "Requires-Dist: torch==9.9\n")
    section = packages.scan(Host(root=str(tmp_path)), [SITE])
    assert section["indexed_only"] == 0
    assert section["installed"]["pins-torch"][0]["requires_dist"] == ["torch==9.9"]


def test_a_repeated_ld_library_path_is_searched_once_per_directory(tmp_path: Path) -> None:
    scenario = REPO / "tests/scenarios/lib-driver-not-on-loader-path"
    env = {str(k): str(v) for k, v in loads((scenario / "scenario.toml").read_text())["env"].items()}
    entries = env["LD_LIBRARY_PATH"].split(":")
    env["LD_LIBRARY_PATH"] = ":".join(entries * 2500 + ["/usr/local/Ascend/ascend-toolkit/latest/lib64/"])
    env_file = tmp_path / "job.env"
    env_file.write_text("".join(f"{k}={v}\n" for k, v in env.items()))
    out = tmp_path / "node.json"
    proc = clirun.npudoctor(
        "collect",
        "--root",
        str(scenario / "root"),
        "--env-file",
        str(env_file),
        "--no-commands",
        "-o",
        str(out),
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    loader = json.loads(out.read_text())["facts"]["libraries"]["loader"]
    assert loader["ld_library_path"] == entries
    verdict = clirun.npudoctor("check", "--from", str(out), "--json", cwd=REPO)
    assert "LIB001" in {f["code"] for f in json.loads(verdict.stdout)["findings"]}


def test_a_huge_site_packages_reads_record_files_only_for_named_cuda_distributions(tmp_path: Path) -> None:
    """Over FULL_READ_LIMIT distributions the frameworks probe does not read every RECORD
    (100,000 of them cost seconds): a distribution the CUDA-only data names is still
    recognised from its files, an unnamed one's RECORD is left unread, and the facts say so."""
    from npudoctor.context import Options
    from npudoctor.engine import collect

    site = tmp_path / SITE.lstrip("/")
    site.mkdir(parents=True)
    for i in range(packages.FULL_READ_LIMIT):
        _dist(site, f"filler{i}", "1.0")
    _dist(site, "nvidia_cuda_runtime_cu12", "12.1.105")
    (site / "nvidia_cuda_runtime_cu12-12.1.105.dist-info" / "RECORD").write_text(
        "nvidia/cuda_runtime/lib/libcudart.so.12,,\n"
    )
    (site / "filler7-1.0.dist-info" / "RECORD").write_text("filler7/lib/libcudart.so.12,,\n")
    host = Host(root=str(tmp_path), environ={"PATH": "/usr/bin:/bin"})
    snap = collect(host, Options(python=None), sections=["host", "python", "packages", "frameworks"])
    frameworks = snap.facts["frameworks"]
    assert [c["name"] for c in frameworks["cuda"]] == ["nvidia_cuda_runtime_cu12"]
    assert any("distributions only indexed" in e for e in frameworks["errors"])


def test_an_environment_too_large_to_start_npu_smi_is_the_environments_finding(tmp_path: Path) -> None:
    """A 15,000-entry LD_LIBRARY_PATH (~200 KB) is over Linux's 128 KiB per environment string:
    execve of npu-smi fails with E2BIG for real.  The owner is the environment (ENV007), not
    the driver (DEV004)."""
    example = REPO / "examples" / "healthy-910b3"
    lines = [ln for ln in (example / "env").read_text().splitlines() if not ln.startswith("LD_LIBRARY_PATH=")]
    lines.append("LD_LIBRARY_PATH=" + ":".join(f"/opt/lib{i}" for i in range(15000)))
    env_file = tmp_path / "env"
    env_file.write_text("\n".join(lines) + "\n")
    result = clirun.npudoctor(
        "check", "--root", str(example / "root"), "--env-file", str(env_file), "--json",
        env={"PATH": f"{example / 'bin'}:/usr/bin:/bin", "HOME": "/root"},
    )  # fmt: skip
    doc = json.loads(result.stdout)
    codes = [f["code"] for f in doc["findings"]]
    assert "ENV007" in codes and "DEV004" not in codes
    f = next(f for f in doc["findings"] if f["code"] == "ENV007")
    assert f["subject"] == "LD_LIBRARY_PATH" and f["severity"] == "error"
    assert any(e.startswith("LD_LIBRARY_PATH: ") and "bytes" in e for e in f["evidence"])
    assert any("Argument list too long" in e for e in f["evidence"])
