"""``plan verify`` (issues 16 and 20): every artefact the plan needs, SHA256SUMS against the
manifest, extra files, bad manifests a clear exit 1.

The bundle is made once with real pip from local PEP 503 trees given as ``file://`` URLs
(PyPI and the PyTorch CPU index: tests/builders/index_builder.py), with stand-in ``.run`` packages
from --cann-dir; each test edits a copy."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from builders.index_builder import build_index, default_dists, pypi_json_path
from clirun import npudoctor

from npudoctor.plan.files import HDK_PAGE, driver_packages

FIX = Path(__file__).resolve().parent / "fixtures" / "plan"
PYPI = FIX / "pypi-torch-npu.json"
X86_PY311 = FIX / "site_x86_64_py3.11_910B4_drv25.2.0.json"
FAKE_RUN = "#!/bin/sh\n# This script was generated using Makeself 2.4.0 (a stand-in)\nlabel={name}\nexit 0\n"

pytestmark = pytest.mark.slow


def pip_env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    return env


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("verify")
    pypi, cpu = default_dists(pypi_json_path())
    build_index(base / "index", {"pypi": pypi, "torch-cpu": cpu})
    plan = npudoctor("plan", "--for", str(X86_PY311), "--torch-npu", "2.6.0", "--json", "--pypi-json", str(PYPI))
    assert plan.returncode == 0, plan.stderr
    cann_dir = base / "downloads"
    cann_dir.mkdir()
    for pkg in json.loads(plan.stdout)["plan"]["packages"]:
        (cann_dir / pkg["filename"]).write_text(FAKE_RUN.format(name=pkg["kind"]))
    out = base / "bundle"
    proc = npudoctor(
        "plan", "--for", str(X86_PY311), "--pypi-json", str(PYPI),
        "--torch-npu", "2.6.0", "--index-url", (base / "index" / "pypi" / "simple").as_uri(),
        "--torch-index-url", (base / "index" / "torch-cpu" / "simple").as_uri(), "--cann-dir", str(cann_dir),
        "--output", str(out), env=pip_env(),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


@pytest.fixture
def copy(bundle, tmp_path) -> Path:
    dest = tmp_path / "bundle"
    shutil.copytree(bundle, dest)
    return dest


def verify(directory: Path, *args: str):
    return npudoctor("plan", "verify", str(directory), "--json", *args)


def problems(proc) -> dict:
    return {(p["kind"], p["path"]): p for p in json.loads(proc.stdout)["problems"]}


def test_a_complete_bundle_from_file_indexes_verifies(bundle):
    wheels = {p.name for p in (bundle / "wheels").iterdir()}
    assert "torch-2.6.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl" in wheels
    assert not any(w.startswith(("nvidia", "triton")) for w in wheels)
    proc = npudoctor("plan", "verify", str(bundle), "--for", str(X86_PY311))
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.rstrip().endswith("OK: complete, intact and fits the site")


def test_sha256sums_must_agree_with_the_manifest(copy):
    sums = (copy / "SHA256SUMS").read_text().splitlines()
    changed = sums[0].split()[1]
    dropped = sums[1].split()[1]
    lines = ["0" * 64 + "  " + changed] + sums[2:] + ["f" * 64 + "  wheels/extra-1.0-py3-none-any.whl", "garbage"]
    (copy / "SHA256SUMS").write_text("\n".join(lines) + "\n")
    proc = verify(copy)
    assert proc.returncode == 1
    found = problems(proc)
    assert "install.sh would refuse the bundle" in found[("sums", changed)]["message"]
    assert found[("sums", dropped)]["message"] == f"{dropped} is not in SHA256SUMS: install.sh would not check it"
    assert "the manifest does not" in found[("sums", "wheels/extra-1.0-py3-none-any.whl")]["message"]
    assert "line" in found[("sums", "SHA256SUMS")]["message"]
    # the files themselves are intact: nothing else is wrong
    assert {k for k, _ in found} == {"sums"}
    # and install.sh agrees: it refuses before installing anything
    run = subprocess.run(["bash", str(copy / "install.sh"), "--skip-cann"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 1 and "damaged" in run.stderr


def test_missing_sha256sums_is_an_error(copy):
    (copy / "SHA256SUMS").unlink()
    os.mkfifo(copy / "SHA256SUMS")  # and a FIFO in its place is not waited on
    start = time.monotonic()
    proc = verify(copy)
    assert time.monotonic() - start < 20
    assert proc.returncode == 1
    assert "SHA256SUMS cannot be read (not a regular file: a FIFO)" in problems(proc)[("sums", "SHA256SUMS")]["message"]


def test_extra_files_anywhere_are_reported(copy):
    (copy / "wheels" / "evil-1.0-py3-none-any.whl").write_bytes(b"PK")
    (copy / "notes").mkdir()
    (copy / "notes" / "todo.txt").write_text("x")
    os.symlink("/etc", copy / "etc-link")
    proc = verify(copy)
    assert proc.returncode == 1, proc.stdout  # a wheel nobody listed is one pip may install
    found = problems(proc)
    assert found[("unlisted", "wheels/evil-1.0-py3-none-any.whl")]["severity"] == "error"
    for rel in ("notes/todo.txt", "etc-link"):
        assert found[("unlisted", rel)]["severity"] == "warning"


def test_missing_run_packages_are_named_with_where_to_get_them(copy):
    manifest = json.loads((copy / "manifest.json").read_text())
    toolkit = next(p for p in manifest["plan"]["packages"] if p["kind"] == "toolkit")
    # the toolkit was never bundled (not in the files, not on disk) ...
    manifest["files"] = [f for f in manifest["files"] if f["path"] != f"cann/{toolkit['filename']}"]
    # ... and the plan also needs a driver upgrade (what plan writes with --allow-driver-upgrade)
    driver = [p.to_dict() for p in driver_packages("25.5.1", "x86_64", "910b")]
    manifest["plan"]["packages"] = driver + manifest["plan"]["packages"]
    (copy / "manifest.json").write_text(json.dumps(manifest))
    (copy / "cann" / toolkit["filename"]).unlink()
    sums = [line for line in (copy / "SHA256SUMS").read_text().splitlines() if toolkit["filename"] not in line]
    (copy / "SHA256SUMS").write_text("\n".join(sums) + "\n")
    proc = verify(copy)
    assert proc.returncode == 1, proc.stdout
    found = problems(proc)
    assert {k for k, _ in found} == {"pending"}
    msg = found[("pending", f"cann/{toolkit['filename']}")]["message"]
    assert f"public download: {toolkit['url']}" in msg and "install.sh stops on it" in msg
    drv = found[("pending", f"cann/{driver[0]['filename']}")]["message"]
    assert f"log in at {HDK_PAGE} and download {driver[0]['filename']}" in drv
    assert driver[0]["filename"] == "Ascend-hdk-910b-npu-driver_25.5.1_linux-x86-64.run"
    human = npudoctor("plan", "verify", str(copy))
    assert "FAILED" in human.stdout and toolkit["filename"] in human.stdout


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("[]", "manifest.json: not a JSON object but a list"),
        ('{"files": {"a": 1}}', "manifest.json: 'files' is an object, not a list"),
        ('{"files": [1]}', "manifest.json: files[0] is a number, not an object"),
        ('{"files": [{"path": "a", "sha256": "0"}]}', "manifest.json: files[0].sha256 (a) is not a sha256 hex digest"),
        ('{"files": [{"path": "a", "sha256": "' + "0" * 64 + '", "size": "1"}]}', "files[0].size (a) is a string"),
        ('{"files": [], "plan": []}', "manifest.json: 'plan' is a list, not an object"),
        ('{"files": [], "pending": [7]}', "manifest.json: pending[0] is not a package entry with a file name"),
        ('{"files": [], "plan": {"packages": "x"}}', "'plan.packages' is a string, not a list"),
        ("[" * 100000 + "]" * 100000, "manifest.json is nested 100000 levels deep (at most 32)"),
        ('{"files": [' + '{"a": ' * 40 + "1" + "}" * 40 + "]}", "nested 42 levels deep"),
        ("{not json", "manifest.json is not valid JSON"),
    ],
)
def test_bad_manifests_are_a_clear_exit_1(tmp_path, content, reason):
    (tmp_path / "manifest.json").write_text(content)
    for args in ((), ("--json",)):
        proc = npudoctor("plan", "verify", str(tmp_path), *args)
        assert proc.returncode == 1, (proc.stdout, proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr
        assert reason in proc.stdout


def test_manifest_paths_stay_in_the_bundle(copy):
    manifest = json.loads((copy / "manifest.json").read_text())
    os.symlink("/etc/shadow", copy / "shadow")
    digest = hashlib.sha256(b"").hexdigest()
    manifest["files"] += [
        {"path": "shadow", "sha256": digest, "size": 0},
        {"path": "/etc/shadow", "sha256": digest, "size": 0},
        {"path": "wheels/../../x", "sha256": digest, "size": 0},
    ]
    (copy / "manifest.json").write_text(json.dumps(manifest))
    proc = verify(copy)
    assert proc.returncode == 1
    found = problems(proc)
    assert found[("manifest", "shadow")]["message"] == "shadow: a symlink out of the bundle; not read"
    assert "an absolute path" in found[("manifest", "/etc/shadow")]["message"]
    assert "'..'" in found[("manifest", "wheels/../../x")]["message"]
    assert not any("bytes" in p["message"] for p in found.values())  # no size of anything outside revealed
