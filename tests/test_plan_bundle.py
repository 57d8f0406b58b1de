"""Bundles made with real pip from a local package index (tests/builders/index_builder.py) served
on 127.0.0.1, installed offline into a fresh venv, proven installable for aarch64, and
verified (tampering, missing wheels, wrong site)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from builders.index_builder import build_index, default_dists, pypi_json_path, serve
from clirun import npudoctor

FIX = Path(__file__).resolve().parent / "fixtures" / "plan"
PYPI = FIX / "pypi-torch-npu.json"
X86_PY311 = FIX / "site_x86_64_py3.11_910B4_drv25.2.0.json"
A64_PY310 = FIX / "site_aarch64_py3.10_910B3_drv25.5.1.json"
X86_PY312 = FIX / "site_x86_64_py3.12_910B4_drv25.5.1.json"
PY311 = shutil.which("python3.11") or "/root/.pyenv/versions/3.11.7/bin/python3.11"

pytestmark = pytest.mark.slow


def pip_env() -> dict:
    """This process's environment without the pip configuration of the machine (so
    only the local index is used)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    return env


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    root = tmp_path_factory.mktemp("index")
    pypi, cpu = default_dists(pypi_json_path())
    build_index(root, {"pypi": pypi, "torch-cpu": cpu})
    with serve(root) as url:
        yield {"pypi": f"{url}/pypi/simple", "cpu": f"{url}/torch-cpu/simple", "root": root}


def run_plan(site: Path, out: Path, index, *args: str, cwd=None, **env: str):
    """``npudoctor plan --for SITE … --output OUT ARGS`` in-process, pip in :func:`pip_env`
    (plus ``env``)."""
    return npudoctor(
        "plan", "--for", str(site), "--pypi-json", str(PYPI), "--index-url", index["pypi"],
        "--torch-index-url", index["cpu"], "--output", str(out), *args,
        env=dict(pip_env(), **env), cwd=cwd,
    )  # fmt: skip


def verify(directory: Path, *args: str):
    return npudoctor("plan", "verify", str(directory), *args)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


FAKE_RUN = """#!/bin/sh
# This script was generated using Makeself 2.4.0 (a stand-in for an Ascend .run package)
label="{name}"
echo "$label $*" >> "$NPUDOCTOR_TEST_LOG"
exit 0
"""


@pytest.fixture(scope="module")
def x86_bundle(index, tmp_path_factory):
    """torch_npu 2.6.0 for an x86_64 / CPython 3.11 site, with the CANN .run files copied
    in from --cann-dir."""
    base = tmp_path_factory.mktemp("x86")
    dry = npudoctor("plan", "--for", str(X86_PY311), "--torch-npu", "2.6.0", "--json", "--pypi-json", str(PYPI))
    assert dry.returncode == 0, dry.stderr
    plan = json.loads(dry.stdout)["plan"]
    cann_dir = base / "downloads"
    cann_dir.mkdir()
    for pkg in plan["packages"]:
        (cann_dir / pkg["filename"]).write_text(FAKE_RUN.format(name=pkg["kind"]))
    out = base / "bundle"
    proc = run_plan(X86_PY311, out, index, "--torch-npu", "2.6.0", "--cann-dir", str(cann_dir))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {"out": out, "plan": plan, "stdout": proc.stdout, "stderr": proc.stderr}


def test_x86_bundle_contents_manifest_and_pins(x86_bundle):
    out = x86_bundle["out"]
    wheels = sorted(p.name for p in (out / "wheels").iterdir())
    assert "torch_npu-2.6.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl" in wheels
    assert "torch-2.6.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl" in wheels  # from the CPU index
    assert "numpy-1.26.4-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl" in wheels  # numpy<2
    assert any(w.startswith("filelock-") for w in wheels)  # torch's own dependency came along
    manifest = json.loads((out / "manifest.json").read_text())
    listed = {f["path"]: f for f in manifest["files"]}
    for name in wheels:
        entry = listed[f"wheels/{name}"]
        assert entry["sha256"] == sha(out / "wheels" / name) and entry["size"] == (out / "wheels" / name).stat().st_size
        assert entry["why"]
    assert "+cpu" in listed["wheels/torch-2.6.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"]["why"]
    assert listed[f"wheels/{[w for w in wheels if w.startswith('filelock-')][0]}"]["why"] == "dependency of torch"
    for pkg in x86_bundle["plan"]["packages"]:
        assert listed[f"cann/{pkg['filename']}"]["kind"] == pkg["kind"]
    assert manifest["pending"] == []
    reqs = (out / "requirements.txt").read_text().splitlines()
    pins = [r for r in reqs if not r.startswith("#")]
    assert len(pins) == len(wheels) and all("==" in r and "--hash=sha256:" in r for r in pins)
    # CANN's protobuf line (3.20.x), not the newest protobuf the index also holds
    assert [r.split()[0] for r in pins if r.startswith("protobuf==")] == ["protobuf==3.20.3"]
    assert (
        "torch==2.6.0+cpu --hash=sha256:"
        + sha(out / "wheels" / "torch-2.6.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")
        in reqs
    )
    # nothing half-written left behind
    leftovers = [p for p in out.rglob("*") if p.name.endswith(".part") or p.name.startswith(".")]
    assert leftovers == []
    assert os.access(out / "install.sh", os.X_OK)
    assert "bundle written to" in x86_bundle["stdout"]
    # the site snapshot travels with the bundle; next: and INSTALL.md name real paths
    assert (out / "site.json").read_bytes() == X86_PY311.read_bytes()
    assert listed["site.json"]["sha256"] == sha(out / "site.json")
    assert x86_bundle["stdout"].endswith(
        f"next: copy {out} to the site; there, from that directory:\n"
        f"$ cd {out} && npudoctor plan verify . --for site.json && sudo bash install.sh\n"
    )
    install_md = (out / "INSTALL.md").read_text()
    assert "/path/to" not in install_md and "DIR" not in install_md
    assert "bash install.sh --skip-driver --python /usr/local/bin/python3.11\n" in install_md
    assert "/usr/local/bin/python3.11 -m pip install --no-index" in install_md


def test_x86_bundle_installs_offline_into_a_fresh_venv(x86_bundle, tmp_path):
    """The issue's "done when": install.sh with the CANN steps skipped, real pip, real venv,
    no index reachable (--no-index)."""
    venv = tmp_path / "venv"
    subprocess.run([PY311, "-m", "venv", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    proc = subprocess.run(
        ["bash", str(x86_bundle["out"] / "install.sh"), "--skip-cann", "--no-check", "--python", str(py)],
        capture_output=True, text=True, timeout=300, env=pip_env(),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "skipping" not in proc.stdout or "toolkit" not in proc.stdout  # CANN block not entered
    check = subprocess.run(
        [str(py), "-c", "import torch_npu, torch, numpy, yaml, decorator; print(torch_npu.__version__, torch.__version__, numpy.__version__)"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert check.stdout.split() == ["2.6.0", "2.6.0+cpu", "1.26.4"], check.stderr


def test_install_sh_runs_cann_packages_in_order_and_refuses_wrong_python(x86_bundle, tmp_path):
    log = tmp_path / "run.log"
    venv = tmp_path / "venv"
    subprocess.run([PY311, "-m", "venv", str(venv)], check=True, timeout=120)
    env = dict(pip_env(), NPUDOCTOR_TEST_LOG=str(log), HOME=str(tmp_path))
    proc = subprocess.run(
        ["bash", str(x86_bundle["out"] / "install.sh"), "--no-check", "--python", str(venv / "bin" / "python")],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ran = [line.split()[0] for line in log.read_text().splitlines()]
    assert ran == [p["kind"] for p in x86_bundle["plan"]["packages"]]
    assert ran[0] == "toolkit" and ran[-1] == "nnal"
    assert "toolkit --install" in log.read_text()
    wrong = shutil.which("python3.10") or "/root/.pyenv/versions/3.10.13/bin/python3.10"
    proc = subprocess.run(
        ["bash", str(x86_bundle["out"] / "install.sh"), "--skip-cann", "--python", wrong],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert proc.returncode == 1 and "is not CPython 3.11" in proc.stderr


def test_verify_passes_then_catches_tampering_and_missing_wheels(x86_bundle, tmp_path):
    copy = tmp_path / "bundle"
    shutil.copytree(x86_bundle["out"], copy)
    ok = verify(copy, "--for", str(X86_PY311))
    assert ok.returncode == 0, ok.stdout
    assert "OK: complete, intact and fits the site" in ok.stdout
    # one changed byte
    target = copy / "wheels" / "numpy-1.26.4-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
    data = bytearray(target.read_bytes())
    data[100] ^= 0x01
    target.write_bytes(bytes(data))
    # one missing wheel
    (copy / "wheels" / "torch-2.6.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl").unlink()
    bad = verify(copy, "--json")
    assert bad.returncode == 1
    problems = json.loads(bad.stdout)["problems"]
    by_kind = {(p["kind"], p["path"]) for p in problems}
    assert ("changed", f"wheels/{target.name}") in by_kind
    assert ("missing", "wheels/torch-2.6.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl") in by_kind
    human = verify(copy)
    assert target.name in human.stdout and "torch-2.6.0+cpu-cp311" in human.stdout and "FAILED" in human.stdout
    # install.sh refuses the tampered bundle before touching anything
    proc = subprocess.run(["bash", str(copy / "install.sh"), "--skip-cann"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "damaged" in proc.stderr


def test_verify_against_another_site_names_the_wheels_that_do_not_fit(x86_bundle):
    proc = verify(x86_bundle["out"], "--for", str(A64_PY310), "--json")
    assert proc.returncode == 1
    problems = json.loads(proc.stdout)["problems"]
    # one root cause (the bundle's target), reported once with the wheels it explains
    assert [p["kind"] for p in problems] == ["python"]
    binary = [n for n in os.listdir(x86_bundle["out"] / "wheels") if not n.endswith("-none-any.whl")]
    assert problems[0]["message"].startswith(
        "the bundle is for CPython 3.11 (the site's Python is 3.10) on x86_64 (the site is aarch64): "
        f"{len(binary)} of its {len(os.listdir(x86_bundle['out'] / 'wheels'))} wheels do not fit the site ("
    )


def test_verify_for_a_site_with_another_python_says_it_once(x86_bundle, tmp_path):
    """A CPython 3.11 bundle checked against a CPython 3.10 site of the same architecture:
    one problem naming the Python mismatch and counting the wheels it explains, not one
    per wheel."""
    doc = json.loads(X86_PY311.read_text())
    doc["facts"]["python"].update(version="3.10.12", version_info=[3, 10, 12])
    site = tmp_path / "py310.json"
    site.write_text(json.dumps(doc))
    proc = verify(x86_bundle["out"], "--for", str(site))
    assert proc.returncode == 1
    errors = [x for x in proc.stdout.splitlines() if x.startswith("  ERROR")]
    binary = [n for n in os.listdir(x86_bundle["out"] / "wheels") if "-cp311-" in n]
    assert len(errors) == 1 and len(binary) > 1
    assert errors[0].split(None, 2)[2] == (
        f"the bundle is for CPython 3.11 (the site's Python is 3.10): {len(binary)} of its "
        f"{len(os.listdir(x86_bundle['out'] / 'wheels'))} wheels do not fit the site ("
        + ", ".join(sorted(binary)[:3])
        + (f" and {len(binary) - 3} more" if len(binary) > 3 else "")
        + "); install CPython 3.11 there and give it to install.sh --python, "
        "or plan again with --python 3.10"
    )


def test_rerun_is_resumable_and_replaces_a_corrupted_wheel(x86_bundle, index, tmp_path):
    copy = tmp_path / "bundle"
    shutil.copytree(x86_bundle["out"], copy)
    before = {p.name: sha(p) for p in (copy / "wheels").iterdir()}
    victim = copy / "wheels" / "scipy-1.10.1-py3-none-any.whl"
    victim.write_bytes(victim.read_bytes()[:200])  # a half-written download
    proc = run_plan(X86_PY311, copy, index, "--torch-npu", "2.6.0", "--json")
    assert proc.returncode == 0, proc.stderr
    bundle = json.loads(proc.stdout)["bundle"]
    assert bundle["downloaded"] == ["scipy-1.10.1-py3-none-any.whl"]
    assert set(bundle["kept"]) >= set(before) - {victim.name}
    assert {p.name: sha(p) for p in (copy / "wheels").iterdir()} == before
    assert verify(copy).returncode == 0


def test_aarch64_py310_bundle_is_installable_for_the_target(index, tmp_path):
    """Made on x86_64 for an aarch64 / CPython 3.10 / 910B3 site; proven with pip's own
    resolver for that platform, offline."""
    out = tmp_path / "bundle"
    proc = run_plan(A64_PY310, out, index, "--torch-npu", "2.7.1.post8")
    # no --cann-dir: the wheels are written, but the bundle cannot install; exit 1 naming each
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "npudoctor: the bundle cannot install: 3 package(s) missing (" in proc.stderr
    assert "next:" not in proc.stdout
    wheels = sorted(p.name for p in (out / "wheels").iterdir())
    assert "torch_npu-2.7.1.post8-cp310-cp310-manylinux_2_28_aarch64.whl" in wheels
    assert "torch-2.7.1-cp310-cp310-manylinux_2_28_aarch64.whl" in wheels  # plain torch on aarch64
    assert not any("x86_64" in w for w in wheels)
    plats = []
    for tag in ("manylinux_2_28_aarch64", "manylinux_2_17_aarch64", "manylinux2014_aarch64"):
        plats += ["--platform", tag]
    dry = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "--find-links", str(out / "wheels"),
         *plats, "--python-version", "3.10", "--implementation", "cp", "--abi", "cp310", "--only-binary=:all:",
         "--target", str(tmp_path / "target"), "--require-hashes", "-r", str(out / "requirements.txt")],
        capture_output=True, text=True, timeout=300, env=pip_env(),
    )  # fmt: skip
    assert dry.returncode == 0, dry.stdout + dry.stderr
    would = dry.stdout.split("Would install", 1)[1].split()
    numpy_spec = json.loads((out / "manifest.json").read_text())["plan"]["numpy"]
    expect_numpy = "numpy-1.26.4" if "<2" in numpy_spec else "numpy-2.1.2"  # the index's newest fitting one
    assert "torch_npu-2.7.1.post8" in would and "torch-2.7.1" in would and expect_numpy in would
    manifest = json.loads((out / "manifest.json").read_text())
    pending = {p["kind"]: p["filename"] for p in manifest["pending"]}
    cann = manifest["plan"]["cann"]
    assert pending["toolkit"] == f"Ascend-cann-toolkit_{cann}_linux-aarch64.run"
    install_sh = (out / "install.sh").read_text()
    assert "absent_pkg CANN toolkit" in install_sh
    # the wheels are complete and fit, but install.sh would stop on the missing CANN packages:
    # verify fails and names each with its public URL (issue 16; it used to say "OK")
    checked = verify(out, "--for", str(A64_PY310), "--json")
    assert checked.returncode == 1, checked.stdout
    errors = [p for p in json.loads(checked.stdout)["problems"] if p["severity"] == "error"]
    assert {p["kind"] for p in errors} == {"pending"}
    assert sorted(p["path"] for p in errors) == sorted(f"cann/{name}" for name in pending.values())
    toolkit = next(p for p in errors if p["path"] == f"cann/{pending['toolkit']}")
    assert (
        "public download: https://ascend-repo.obs.cn-east-2.myhuaweicloud.com/CANN/CANN%20"
        f"{cann}/{pending['toolkit']}" in toolkit["message"]
    )


def test_wheel_missing_from_the_index_fails_clearly(index, tmp_path):
    """The recorded PyPI listing has a cp312 x86_64 wheel of 2.7.1.post8; the local index
    left it out on purpose: pip's failure is reported, exit 1, nothing half-written."""
    out = tmp_path / "bundle"
    proc = run_plan(X86_PY312, out, index, "--torch-npu", "2.7.1.post8")
    assert proc.returncode == 1
    assert "pip could not download the wheels for Python 3.12 on x86_64" in proc.stderr
    assert "torch_npu==2.7.1.post8" in proc.stderr or "torch-npu" in proc.stderr.lower()
    assert not (out / "manifest.json").exists()
    assert not (out / ".staging").exists()


def test_pip_runs_in_the_environment_npudoctor_was_given(index, tmp_path):
    """pip runs in npudoctor's own environment (the one the command was handed, in-process
    too), not in the test process's: a PIP_NO_INDEX=1 there turns the index off."""
    out = tmp_path / "bundle"
    proc = run_plan(X86_PY311, out, index, "--torch-npu", "2.6.0", PIP_NO_INDEX="1")
    assert proc.returncode == 1
    assert "pip could not download the wheels for Python 3.11 on x86_64" in proc.stderr, proc.stderr
    assert not (out / "manifest.json").exists()


def test_bad_run_file_in_cann_dir_is_rejected(index, tmp_path, x86_bundle):
    cann_dir = tmp_path / "dl"
    cann_dir.mkdir()
    first = x86_bundle["plan"]["packages"][0]["filename"]
    (cann_dir / first).write_text("<html><body>403 Forbidden</body></html>")
    proc = run_plan(X86_PY311, tmp_path / "b", index, "--torch-npu", "2.6.0", "--cann-dir", str(cann_dir))
    assert proc.returncode == 1
    assert first in proc.stderr and "not a self-extracting .run archive" in proc.stderr


def test_install_sh_is_valid_bash(x86_bundle):
    proc = subprocess.run(["bash", "-n", str(x86_bundle["out"] / "install.sh")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    mode = (x86_bundle["out"] / "install.sh").stat().st_mode
    assert mode & stat.S_IXUSR


def test_a_site_without_a_chip_has_no_complete_bundle_until_its_kernels_are_given(index, tmp_path):
    """The kernels/ops package is chip-specific: with no chip in the snapshot the bundle lacks
    it, says so (exit 1, the file and how to supply it, no `next:` line), and plan verify
    agrees; the site chip's package put into --cann-dir completes it."""
    doc = json.loads(X86_PY311.read_text())
    doc["facts"]["devices"] = {}
    site = tmp_path / "nochip.json"
    site.write_text(json.dumps(doc))
    dry = npudoctor("plan", "--for", str(site), "--torch-npu", "2.6.0", "--json", "--pypi-json", str(PYPI))
    assert dry.returncode == 0, dry.stderr
    plan = json.loads(dry.stdout)["plan"]
    cann = plan["cann"]
    unknown = f"Ascend-cann-kernels-<chip>_{cann}_linux-x86_64.run"
    assert [p["filename"] for p in plan["packages"]] == [
        f"Ascend-cann-toolkit_{cann}_linux-x86_64.run",
        unknown,
        f"Ascend-cann-nnal_{cann}_linux-x86_64.run",
    ]
    assert any(w.startswith(f"the snapshot names no NPU chip: {unknown} is chip-specific") for w in plan["warnings"])
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    for pkg in plan["packages"]:
        if "<chip>" not in pkg["filename"]:
            (downloads / pkg["filename"]).write_text(FAKE_RUN.format(name=pkg["kind"]))
    out = tmp_path / "bundle"
    proc = run_plan(site, out, index, "--torch-npu", "2.6.0", "--cann-dir", str(downloads))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "next:" not in proc.stdout and "sudo bash install.sh" not in proc.stdout
    missing = next(x for x in proc.stdout.splitlines() if x.startswith("  missing: "))
    assert missing.startswith(f"  missing: {unknown} (kernels) ")
    assert "put the kernels package of the site's chip" in missing and "npu-smi" in missing
    head = f"npudoctor: the bundle cannot install: 1 package(s) missing ({unknown}); the site's NPU chip is unknown"
    assert head in proc.stderr
    checked = verify(out, "--for", str(site), "--json")
    assert checked.returncode == 1
    problems = json.loads(checked.stdout)["problems"]
    assert [(p["kind"], p["path"]) for p in problems] == [("pending", f"cann/{unknown}")]
    assert "the site snapshot names no NPU chip" in problems[0]["message"]
    # the site chip's package given: the bundle is complete, install.sh and verify name that file
    given = f"Ascend-cann-kernels-910b_{cann}_linux-x86_64.run"
    (downloads / given).write_text(FAKE_RUN.format(name="kernels"))
    proc = run_plan(site, out, index, "--torch-npu", "2.6.0", "--cann-dir", str(downloads))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"$ cd {out} && npudoctor plan verify . --for site.json && sudo bash install.sh" in proc.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert [p["filename"] for p in manifest["plan"]["packages"]][1] == given
    assert f"cann/{given}" in (out / "install.sh").read_text()
    ok = verify(out, "--for", str(site))
    assert ok.returncode == 0, ok.stdout


def test_a_bundle_for_another_python_than_the_sites_prints_a_next_step_that_works(index, tmp_path):
    """--python 3.11 for a CPython 3.10 site: a warning, and a next step that installs into a
    3.11 interpreter and verifies without the site's (3.10) tags; INSTALL.md gives each
    alternative its own block, with the line saying when to use it."""
    doc = json.loads(X86_PY311.read_text())
    doc["facts"]["python"].update(version="3.10.12", version_info=[3, 10, 12])
    site = tmp_path / "py310.json"
    site.write_text(json.dumps(doc))
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    dry = npudoctor(
        "plan", "--for", str(site), "--torch-npu", "2.6.0", "--python", "3.11", "--json", "--pypi-json", str(PYPI)
    )
    for pkg in json.loads(dry.stdout)["plan"]["packages"]:
        (downloads / pkg["filename"]).write_text(FAKE_RUN.format(name=pkg["kind"]))
    out = tmp_path / "bundle"
    proc = run_plan(site, out, index, "--torch-npu", "2.6.0", "--python", "3.11", "--cann-dir", str(downloads))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "the site's interpreter is Python 3.10; these wheels need a Python 3.11 interpreter there" in proc.stdout
    assert proc.stdout.endswith(
        "next: the wheels are for CPython 3.11, the site's interpreter is 3.10: install CPython 3.11 there first "
        f"(as python3.11 on PATH); then copy {out} to the site and, from that directory:\n"
        f"$ cd {out} && npudoctor plan verify . && sudo bash install.sh --python python3.11\n"
    )
    assert verify(out).returncode == 0
    md = (out / "INSTALL.md").read_text()
    blocks = md.split("```bash\n")[1:]
    commands = [b.split("```")[0].strip() for b in blocks]
    assert commands == [
        "npudoctor plan verify .",
        "sudo bash install.sh --python python3.11",
        "bash install.sh --skip-driver --python python3.11",
        "bash install.sh --skip-cann --python python3.11",
        "python3.11 -m pip install --no-index --find-links wheels --require-hashes -r requirements.txt",
    ]
    assert "Everything (driver and firmware need root):\n\n```bash\nsudo bash install.sh" in md
    assert "The Python packages only (CANN and the driver are already installed):\n\n```bash\n" in md
