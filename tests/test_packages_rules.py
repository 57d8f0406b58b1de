"""Fix commands of the package rules (PKG001, PKG003, PKG006) and PY001, judged on their
exact text, and the PKG003 uninstall lines run for real with pip against real site dirs.

The scenarios are the ones in tests/scenarios/ (run through the documented contract); the
pip tests build a non-venv CPython prefix (PYTHONHOME over pyenv's 3.8 standard library,
with its own empty site-packages and pip linked in) and a venv, write dist-infos with
RECORD files, run `npudoctor check --python`, then run the fix lines in bash.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import npudoctor
from scenario_runner import REPO, prepare, run_check

from npudoctor.findings import Finding
from npudoctor.report.build import fix_list

SCENARIOS = REPO / "tests" / "scenarios"
PYENV38 = Path("/root/.pyenv/versions/3.8.18")


def _scenario(name: str, tmp_path: Path):
    run = run_check(prepare(SCENARIOS / name, tmp_path))
    assert run.doc is not None, run.stderr[-2000:]
    return run.doc


def _one(doc, code: str, subject: str = None):
    hits = [f for f in doc["findings"] if f["code"] == code and (subject is None or f.get("subject") == subject)]
    assert len(hits) == 1, [(f["code"], f.get("subject"), f["title"]) for f in doc["findings"]]
    return hits[0]


def _commands(finding):
    """Fix lines without their `  # comment`."""
    return [line.split("  #", 1)[0] for line in finding["fix"]]


# ------------------------------------------------------------------ scenarios
def test_two_torch_dist_infos_reinstall_the_torch_torch_npu_requires(tmp_path):
    doc = _scenario("k01-upgraded-env-two-torch-dist-infos", tmp_path)
    dup = _one(doc, "PKG003", "torch")
    env = "/home/ma-user/anaconda3/envs/PyTorch-2.1.0"
    py = f"{env}/bin/python"  # the conda env's interpreter (the tree leaves the binary out)
    assert _commands(dup) == [
        f"{py} -m pip uninstall -y torch",
        f"{py} -m pip uninstall -y torch",
        f"{py} -m pip install torch==2.2.0",
    ]
    assert "one of the 2 torch dist-infos in " + env + "/lib/python3.9/site-packages" in dup["fix"][0]
    assert "torch_npu 2.2.0 requires `torch==2.2.0` (Requires-Dist in its METADATA)" in dup["evidence"]
    assert "PKG001" not in {f["code"] for f in doc["findings"]}


def test_user_site_torch_is_removed_and_the_env_torch_kept(tmp_path):
    doc = _scenario("k01-user-site-torch-shadows-env", tmp_path)
    py = "/usr/local/python3.10.14/bin/python3.10"
    user_site = "/home/dev/.local/lib/python3.10/site-packages"
    dup = _one(doc, "PKG003", "torch")
    assert _commands(dup) == [
        f"HOME=/home/dev {py} -m pip uninstall -y torch",
        f"{py} -m pip show torch",
    ]
    assert f"torch 2.3.1 in {user_site}" in dup["fix"][0]
    assert "Version: 2.1.0, Location: /usr/local/python3.10.14/lib/python3.10/site-packages" in dup["fix"][1]
    pairing = _one(doc, "PKG001")
    assert pairing["fix"] == dup["fix"]  # PKG001 says the same: remove the shadowing copy
    # One cause, one fix: the mismatch is a symptom of the shadowing copy, folded under
    # PKG003, so the fix list does not uninstall torch twice (the second would remove 2.1.0).
    assert pairing["data"]["because"] == "PKG003"
    listed = [f.code for f in fix_list([Finding.from_dict(f) for f in doc["findings"]])]
    assert "PKG003" in listed and "PKG001" not in listed, listed
    assert any("torch 2.1.0 in /usr/local/python3.10.14" in e and "fits" in e for e in pairing["evidence"])
    # Nothing reinstalls the torch PKG001 says does not match.
    assert not any("2.3.1" in line.split("  #")[0] for f in doc["findings"] for line in f["fix"])


def test_vllm_installed_after_vllm_ascend_is_one_finding_whose_fix_keeps_every_npu_pin(tmp_path):
    # case 03: vllm 0.11.0 (Requires-Dist torch==2.8.0) installed after vllm-ascend 0.11.0rc3
    # (torch==2.7.1, torch-npu==2.7.1) moved torch to 2.8.0.  One root cause -- vllm-ascend's
    # pin -- so the torch/torch_npu mismatch folds under it, and no fix line keeps torch 2.8.0
    # with another torch_npu (that breaks vllm-ascend's torch-npu==2.7.1).
    doc = _scenario("k01-vllm-and-vllm-ascend-torch-conflict", tmp_path)
    py = "/usr/local/python3.11.13/bin/python3.11"
    pin = _one(doc, "PKG004")
    pairing = _one(doc, "PKG001")
    assert pin["subject"] == "vllm-ascend:torch"
    assert pin["title"] == "vllm_ascend 0.11.0rc3 requires torch==2.7.1, but torch 2.8.0 is installed"
    assert pin["fix"] == [
        "no torch release meets both pins: vllm 0.11.0 requires torch==2.8.0, vllm_ascend 0.11.0rc3 requires "
        "torch==2.7.1. Keep the vllm-ascend pin (it names the torch_npu vllm-ascend is built for, and vllm "
        "runs on the NPU through it); the vllm pin stays unmet, as the vllm-ascend install order (vllm first, "
        "then vllm-ascend) leaves it",
        f"{py} -m pip install torch==2.7.1  # vllm-ascend's pin; pip's message that vllm 0.11.0 requires "
        "torch==2.8.0 is expected",
    ]
    assert [r["kind"] for r in pin["remedies"]] == ["prose", "pip-install"]
    assert any(
        e.startswith("vllm 0.11.0 (") and e.endswith("requires `torch==2.8.0` (Requires-Dist)") for e in pin["evidence"]
    )
    assert pairing["data"]["because"] == "PKG004"
    assert pairing["fix"] == [f"{py} -m pip install torch==2.7.1"]
    assert any(
        "vllm_ascend 0.11.0rc3 pins this torch_npu (Requires-Dist `torch-npu==2.7.1`)" in e for e in pairing["evidence"]
    )
    assert not [line for f in doc["findings"] for line in f["fix"] if "torch-npu==" in line]
    listed = [f.code for f in fix_list([Finding.from_dict(f) for f in doc["findings"]])]
    assert "PKG004" in listed and "PKG001" not in listed, listed


def _torch_npu_moved_on(tmp_path, build: str):
    """The k01 scenario (vllm-ascend 0.11.0rc3 pinning torch and torch-npu 2.7.1 beside vllm
    0.11.0's torch 2.8.0) with torch_npu ``build`` for torch 2.8.0 installed instead of 2.7.1."""
    scenario = prepare(SCENARIOS / "k01-vllm-and-vllm-ascend-torch-conflict", tmp_path)
    site = scenario / "root/usr/local/python3.11.13/lib/python3.11/site-packages"
    info = site / f"torch_npu-{build}.dist-info"
    (site / "torch_npu-2.7.1.dist-info").rename(info)
    metadata = (info / "METADATA").read_text()
    (info / "METADATA").write_text(
        metadata.replace("Version: 2.7.1", f"Version: {build}").replace("torch==2.7.1", "torch==2.8.0")
    )
    return scenario


def test_every_unmet_pin_of_one_framework_is_one_finding_with_one_fix(tmp_path):
    # case 03 a step further: torch_npu 2.8.0 (the build for torch 2.8.0, Requires-Dist
    # torch==2.8.0) installed to match vllm's torch, so vllm-ascend 0.11.0rc3's pins on torch
    # and torch-npu are both unmet.  One cause, one finding: two findings each gave a fix that
    # undid the other's (one installed torch 2.7.1, the other reinstalled vllm, torch 2.8.0).
    doc = run_check(_torch_npu_moved_on(tmp_path, "2.8.0")).doc
    py = "/usr/local/python3.11.13/bin/python3.11"
    pin = _one(doc, "PKG004")
    assert pin["subject"] == "vllm-ascend:torch+torch-npu"
    assert pin["title"] == (
        "vllm_ascend 0.11.0rc3 requires torch==2.7.1 and torch-npu==2.7.1, but torch 2.8.0 and torch-npu 2.8.0 "
        "are installed"
    )
    # one pip command: pip resolves the two pins together (one at a time, each breaks the other)
    assert pin["fix"][1:] == [
        f"{py} -m pip install torch==2.7.1 torch-npu==2.7.1  # vllm-ascend's pins; pip's message that vllm "
        "0.11.0 requires torch==2.8.0 is expected"
    ]
    assert pin["fix"][0].startswith("no torch release meets both pins: vllm 0.11.0 requires torch==2.8.0")
    assert pin["evidence"][1:3] == ["Requires-Dist: torch==2.7.1", "Requires-Dist: torch-npu==2.7.1"]
    assert "PKG001" not in {f["code"] for f in doc["findings"]}  # torch 2.8.0 and torch_npu 2.8.0 are a pair


def test_the_cann_and_driver_to_install_are_those_of_the_build_the_framework_pins(tmp_path):
    # torch_npu 2.8.0.post2 is paired with CANN 8.5.0 (HDK 25.5.0), but vllm-ascend pins 2.7.1,
    # which its fix (PKG004) installs: the CANN (8.3.RC1) and the driver (25.3.rc1) to install
    # are those of 2.7.1, or the fixes in order would leave torch_npu and CANN unpaired
    doc = run_check(_torch_npu_moved_on(tmp_path, "2.8.0.post2")).doc
    cann = _one(doc, "CANN001")
    assert cann["title"] == (
        "torch_npu 2.8.0.post2 is installed but no CANN toolkit is "
        "(vllm_ascend 0.11.0rc3 needs torch_npu 2.7.1 with CANN 8.3.RC1)"
    )
    assert (cann["data"]["torch_npu"], cann["data"]["cann"]) == ("2.7.1", "8.3.RC1")
    assert any("Ascend-cann-toolkit_8.3.RC1_linux-aarch64.run" in line for line in cann["fix"])
    driver = _one(doc, "DRV001")
    assert any("npu-driver_25.3.rc1_linux-aarch64.run" in line for line in driver["fix"]), driver["fix"]
    assert not [line for f in doc["findings"] for line in f["fix"] if "8.5.0" in line or "25.5.0" in line]


def test_a_cann_mismatch_the_pinned_build_mends_folds_under_the_pin(tmp_path):
    # vllm-ascend 0.11.0rc2 pins torch-npu==2.7.1 on CANN 8.2.RC1, with the release candidate
    # 2.7.1rc1 installed instead: CANN003 judges 2.7.1rc1 on 8.2.RC1, but the build the pin
    # installs (PKG004's fix) fits 8.2.RC1, so the pin is the one cause
    scenario = prepare(SCENARIOS / "fw-vllm-ascend-0.11.0rc2-on-cann-8.2.RC1", tmp_path)
    site = scenario / "root/usr/local/lib/python3.10/site-packages"
    info = site / "torch_npu-2.7.1rc1.dist-info"
    (site / "torch_npu-2.7.1.dist-info").rename(info)
    (info / "METADATA").write_text((info / "METADATA").read_text().replace("Version: 2.7.1", "Version: 2.7.1rc1"))
    doc = run_check(scenario).doc
    pin = _one(doc, "PKG004")
    assert pin["title"] == "vllm_ascend 0.11.0rc2 requires torch-npu==2.7.1, but torch-npu 2.7.1rc1 is installed"
    cann = _one(doc, "CANN003")
    assert cann["data"]["because"] == "PKG004"
    assert cann["evidence"][-1] == (
        "vllm_ascend 0.11.0rc2 pins torch-npu==2.7.1 (Requires-Dist), which fits CANN 8.2.RC1: its fix (PKG004) "
        "installs it"
    )
    listed = [f.code for f in fix_list([Finding.from_dict(f) for f in doc["findings"]])]
    assert "PKG004" in listed and "CANN003" not in listed, listed


def test_a_torch_npu_no_framework_pins_keeps_the_option_of_its_build_for_the_torch(tmp_path):
    run = run_check(prepare(REPO / "examples" / "torch-npu-torch-mismatch", tmp_path))
    pairing = _one(run.doc, "PKG001")
    assert "because" not in pairing["data"]
    assert pairing["fix"][1] == (
        "or keep torch 2.3.1 and install the torch_npu built for it: "
        "/usr/local/bin/python3.10 -m pip install torch-npu==2.3.1.post4"
    )


def test_cann_deps_pin_numpy_to_the_paired_cann_and_are_a_note_without_cann(tmp_path):
    doc = _scenario("k01-x86-torch-npu-2.1.0.post10-needs-cpu-torch", tmp_path)
    deps = _one(doc, "PKG006")
    assert deps["severity"] == "info"
    argv = shlex.split(deps["fix"][0])
    assert argv[:4] == ["/root/venv-npu/bin/python3.10", "-m", "pip", "install"]
    assert argv[4] == "numpy>=1.19.2,<2"  # CANN 8.0.0 (paired with 2.1.0.post10) on Python 3.10
    assert {"decorator", "attrs", "sympy", "scipy"} <= set(argv[5:])
    assert "protobuf==3.20.*" in argv and "protobuf" not in argv  # CANN 8.0.0's protobuf line
    assert any(
        "CANN 8.0.0, the CANN the compatibility matrix pairs with torch_npu 2.1.0.post10" in e for e in deps["evidence"]
    )
    assert "CANN001" in {f["code"] for f in doc["findings"]}
    # the same interpreter in every fix of the report
    pairing = _one(doc, "PKG001")
    assert shlex.split(pairing["fix"][0])[0] == "/root/venv-npu/bin/python3.10"


def test_cann_deps_stay_an_error_with_a_toolkit(tmp_path):
    doc = _scenario("k06-cann-python-deps-missing", tmp_path)
    deps = _one(doc, "PKG006")
    assert deps["severity"] == "error"
    argv = shlex.split(deps["fix"][0])
    assert argv[:4] == ["/root/anaconda3/bin/python3.8", "-m", "pip", "install"]
    # the toolkit in use is 8.0.0: protobuf of its install guide's 3.20 line, quoted for the shell
    assert "protobuf==3.20.*" in argv and "protobuf" not in argv
    assert "'protobuf==3.20.*'" in deps["fix"][0]


def test_py001_recommends_the_newest_covered_python_with_runnable_commands(tmp_path):
    doc = _scenario("k08-python-3.12-torch-2.1-no-torch-npu-wheel", tmp_path)
    cov = _one(doc, "PY001")
    assert cov["title"] == "No torch_npu for torch 2.1.0 has a wheel for Python 3.12: use Python 3.11"
    assert any("wheels for Python 3.8, 3.9, 3.10, 3.11 " in e for e in cov["evidence"])
    assert [r["command"] for r in cov["remedies"]] == [
        "cd && python3.11 -m venv npu-venv && . npu-venv/bin/activate",
        "conda create -n npu python=3.11 -y && conda activate npu",
        "python -m pip install torch==2.1.0 torch-npu==2.1.0.post10",
    ]
    assert cov["fix"][1].startswith("or, with no python3.11 on this machine: conda create")


def test_py004_a_wheel_for_another_python_is_never_replaced_by_one_that_does_not_exist(tmp_path):
    """k08: torch_npu 2.1.0's cp310 wheel unpacked into Python 3.11.  The matrix lists 2.1.0
    for Python 3.8-3.10 only, so `pip install torch-npu==2.1.0 --force-reinstall` would find
    no wheel: the fix is a Python 3.10 environment, or the newest torch 2.1.0 build that
    has a cp311 wheel (with the CANN it is paired with)."""
    doc = _scenario("k08-torch-npu-cp310-wheel-in-python-3.11", tmp_path)
    tag = _one(doc, "PY004")
    assert "torch_npu 2.1.0 has wheels for Python 3.8, 3.9, 3.10 only (compatibility matrix)" in tag["evidence"]
    assert [r["command"] for r in tag["remedies"]] == [
        "cd && python3.10 -m venv npu-venv && . npu-venv/bin/activate",
        "conda create -n npu python=3.10 -y && conda activate npu",
        "python -m pip install torch==2.1.0 torch-npu==2.1.0",
        "/usr/local/python3.11.9/bin/python3.11 -m pip install torch-npu==2.1.0.post17",
    ]
    assert tag["fix"][-1].endswith("# paired with CANN 8.3.RC1")
    assert not any("--force-reinstall" in line for line in tag["fix"])


def test_py001_explain_has_no_version_table():
    proc = npudoctor("explain", "PY001")
    assert proc.returncode == 0, proc.stderr
    assert "3.8-3.10" not in proc.stdout and "compatibility matrix" in proc.stdout


# ------------------------------------------------------------ real pip runs
def _dist(site: Path, name: str, version: str, requires=()) -> None:
    """A dist-info with a package dir and a RECORD (what `pip uninstall` reads)."""
    pkg = name.replace("-", "_")
    info = site / f"{pkg}-{version}.dist-info"
    info.mkdir(parents=True)
    (site / pkg).mkdir(exist_ok=True)
    (site / pkg / "__init__.py").write_text(f"__version__ = {version!r}\n")
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    meta += [f"Requires-Dist: {r}" for r in requires]
    (info / "METADATA").write_text("\n".join(meta) + "\n")
    (info / "INSTALLER").write_text("pip\n")
    rows = [f"{pkg}/__init__.py,,", f"{info.name}/METADATA,,", f"{info.name}/INSTALLER,,", f"{info.name}/RECORD,,"]
    (info / "RECORD").write_text("\n".join(rows) + "\n")


def _private_prefix(tmp_path: Path) -> Path:
    """A CPython 3.8 prefix of our own (PYTHONHOME): pyenv's stdlib linked in, an empty
    site-packages holding only a link to pip."""
    if not (PYENV38 / "lib" / "python3.8" / "site-packages" / "pip").is_dir():
        pytest.skip("pyenv 3.8.18 with pip not installed")
    prefix = tmp_path / "prefix"
    lib = prefix / "lib" / "python3.8"
    (lib / "site-packages").mkdir(parents=True)
    for entry in (PYENV38 / "lib" / "python3.8").iterdir():
        if entry.name != "site-packages":
            (lib / entry.name).symlink_to(entry)
    for entry in (PYENV38 / "lib" / "python3.8" / "site-packages").glob("pip*"):
        (lib / "site-packages" / entry.name).symlink_to(entry)
    # `check --python` gets this wrapper (npudoctor itself must not see PYTHONHOME); the
    # probe reports sys.executable, the pyenv binary, and the fix lines run with PYTHONHOME.
    (prefix / "bin").mkdir()
    wrapper = prefix / "bin" / "python3.8"
    wrapper.write_text(f'#!/bin/sh\nPYTHONHOME={prefix} exec {PYENV38}/bin/python3.8 "$@"\n')
    wrapper.chmod(0o755)
    return prefix


def _check(python: str, env: dict, cwd: Path):
    # A process, as the rule for real venvs and wheels keeps it (docs/architecture.md, Tests).
    env = {k: v for k, v in env.items() if k != "PYTHONHOME"}
    prefix = Path(env.get("NPD_TEST_PREFIX", ""))
    if env.get("NPD_TEST_PREFIX"):
        python = str(prefix / "bin" / "python3.8")
    proc = subprocess.run(
        [sys.executable, "-m", "npudoctor", "check", "--json", "--python", python],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(cwd),
        timeout=180,
    )
    return json.loads(proc.stdout)


def _run_fix(lines, env: dict, cwd: Path):
    outs = []
    for line in lines:
        proc = subprocess.run(["bash", "-c", line], capture_output=True, text=True, env=env, cwd=str(cwd), timeout=120)
        assert proc.returncode == 0, (line, proc.stdout, proc.stderr)
        outs.append(proc.stdout)
    return outs


def _base_env(tmp_path: Path, home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON") and k != "VIRTUAL_ENV"}
    env.update(HOME=str(home), PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INDEX="1")
    return env


def test_user_site_fix_runs_with_pip_and_keeps_the_env_torch(tmp_path):
    prefix = _private_prefix(tmp_path)
    site = prefix / "lib" / "python3.8" / "site-packages"
    home = tmp_path / "home" / "dev"
    user_site = home / ".local" / "lib" / "python3.8" / "site-packages"
    _dist(site, "torch", "2.1.0")
    _dist(site, "torch_npu", "2.1.0.post10", ["torch ==2.1.0"])
    _dist(user_site, "torch", "2.3.1")
    env = dict(_base_env(tmp_path, home), PYTHONHOME=str(prefix), NPD_TEST_PREFIX=str(prefix))
    python = str(PYENV38 / "bin" / "python3.8")
    doc = _check(python, env, tmp_path)
    dup = _one(doc, "PKG003", "torch")
    assert _commands(dup) == [f"HOME={home} {python} -m pip uninstall -y torch", f"{python} -m pip show torch"]
    assert _one(doc, "PKG001")["fix"] == dup["fix"]
    # Run it as another HOME would: the HOME= prefix is what makes it reach the user site.
    outs = _run_fix(dup["fix"], dict(env, HOME=str(tmp_path)), tmp_path)
    assert not (user_site / "torch-2.3.1.dist-info").exists() and not (user_site / "torch").exists()
    assert (site / "torch-2.1.0.dist-info").is_dir() and (site / "torch" / "__init__.py").is_file()
    assert "Version: 2.1.0" in outs[1] and f"Location: {site}" in outs[1]
    seen = subprocess.run(
        [python, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True, env=env, timeout=60
    )
    assert seen.stdout.strip() == "2.1.0", seen.stderr
    assert "PKG003" not in {f["code"] for f in _check(python, env, tmp_path)["findings"]}


def test_env_copy_removed_with_dash_s_when_the_user_site_copy_is_the_good_one(tmp_path):
    prefix = _private_prefix(tmp_path)
    site = prefix / "lib" / "python3.8" / "site-packages"
    home = tmp_path / "home"
    user_site = home / ".local" / "lib" / "python3.8" / "site-packages"
    _dist(site, "torch", "2.3.1")
    _dist(site, "torch_npu", "2.1.0.post10", ["torch ==2.1.0"])
    _dist(user_site, "torch", "2.1.0")
    env = dict(_base_env(tmp_path, home), PYTHONHOME=str(prefix), NPD_TEST_PREFIX=str(prefix))
    python = str(PYENV38 / "bin" / "python3.8")
    dup = _one(_check(python, env, tmp_path), "PKG003", "torch")
    assert _commands(dup) == [f"{python} -s -m pip uninstall -y torch", f"{python} -m pip show torch"]
    _run_fix(dup["fix"], env, tmp_path)
    assert not (site / "torch-2.3.1.dist-info").exists()
    assert (user_site / "torch-2.1.0.dist-info").is_dir() and (user_site / "torch" / "__init__.py").is_file()


def test_two_dist_infos_in_one_dir_are_both_uninstalled(tmp_path):
    prefix = _private_prefix(tmp_path)
    site = prefix / "lib" / "python3.8" / "site-packages"
    _dist(site, "torch", "2.1.0")
    _dist(site, "torch", "2.2.0")
    _dist(site, "torch_npu", "2.2.0", ["torch ==2.2.0"])
    env = dict(_base_env(tmp_path, tmp_path / "nohome"), PYTHONHOME=str(prefix), NPD_TEST_PREFIX=str(prefix))
    python = str(PYENV38 / "bin" / "python3.8")
    dup = _one(_check(python, env, tmp_path), "PKG003", "torch")
    # x86_64 NPU hosts take torch from the CPU index (the torch_npu wheels there pin +cpu)
    index = " --index-url https://download.pytorch.org/whl/cpu" if os.uname().machine == "x86_64" else ""
    install = f"{python} -m pip install torch==2.2.0{index}"
    assert _commands(dup) == [f"{python} -m pip uninstall -y torch"] * 2 + [install]
    _run_fix(dup["fix"][:2], env, tmp_path)  # the install needs the network
    assert not list(site.glob("torch-*.dist-info")) and not (site / "torch").exists()


def test_venv_user_site_copy_is_removed_by_the_base_interpreter(tmp_path):
    if not (PYENV38 / "bin" / "python3.8").exists():
        pytest.skip("pyenv 3.8.18 not installed")
    venv = tmp_path / "venv"
    subprocess.run(
        [str(PYENV38 / "bin" / "python3.8"), "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
        check=True,
        timeout=120,
    )
    site = venv / "lib" / "python3.8" / "site-packages"
    home = tmp_path / "home"
    user_site = home / ".local" / "lib" / "python3.8" / "site-packages"
    _dist(site, "torch", "2.1.0")
    _dist(site, "torch_npu", "2.1.0.post10", ["torch ==2.1.0"])
    _dist(user_site, "torch", "2.3.1")
    env = _base_env(tmp_path, home)
    doc = _check(str(venv / "bin" / "python"), env, tmp_path)
    assert "PKG001" not in {f["code"] for f in doc["findings"]}  # the venv's torch comes first
    dup = _one(doc, "PKG003", "torch")
    base = str(PYENV38 / "bin" / "python3.8")
    assert _commands(dup) == [
        f"HOME={home} {base} -m pip uninstall -y torch",
        f"{venv / 'bin' / 'python'} -m pip show torch",
    ]
    _run_fix(dup["fix"][:1], env, tmp_path)  # the venv has no pip (--without-pip)
    assert not (user_site / "torch-2.3.1.dist-info").exists()
    assert (site / "torch-2.1.0.dist-info").is_dir()


MY_SCENARIOS = sorted(
    p.name
    for p in SCENARIOS.iterdir()
    if p.name.split("-")[0] in {"k01", "k02", "k06", "k07", "k08", "k20", "k21", "k22"}
)


@pytest.mark.parametrize("name", MY_SCENARIOS)
def test_every_pip_line_names_one_interpreter(name, tmp_path):
    """PKG001..PKG007, PY00x and the CANN rules name the same interpreter in their pip
    lines (the one helper, _pyfacts.python_exe); PY001's lines run in a new environment,
    and so does the plain `python` of a fix that creates one (PY004's other Python)."""
    doc = _scenario(name, tmp_path)
    used = set()
    for f in doc["findings"]:
        if f["code"] == "PY001":
            continue
        new_env = any("-m venv" in line or "conda create" in line for line in f["fix"])
        for line in f["fix"]:
            for part in line.split("  #", 1)[0].split("&&"):
                argv = [a for a in shlex.split(part.split(": ", 1)[-1]) if "=" not in a or a.startswith("-")]
                if new_env and argv[:1] == ["python"]:
                    continue
                if argv[1:3] == ["-m", "pip"] or argv[1:4] == ["-s", "-m", "pip"]:
                    used.add(argv[0])
    assert len(used) <= 1, used
    if used:
        assert used != {"python3"}, "the interpreter is known from the facts"


def test_debian_dist_packages_name_usr_bin_python(tmp_path):
    doc = _scenario("k02-torchvision-0.21-with-torch-2.5.1", tmp_path)
    assert _one(doc, "PKG005")["fix"] == ["/usr/bin/python3.10 -m pip install 'torchvision==0.20.*'"]


def test_malformed_python_and_package_facts_are_read_not_crashed_on():
    """The rules read the typed views: an ``environments`` entry that is not an object
    (it made python_env.interpreter_inspected raise before, reported as HOST099) and a
    package record that is not an object are left out, the rest is judged."""
    from npudoctor.context import Options
    from npudoctor.engine import evaluate
    from npudoctor.snapshot import Snapshot

    facts = {
        "python": {"source": "root", "error": "no Python environment found in the root"},
        "cann": {"toolkits": [{"path": "/usr/local/Ascend/ascend-toolkit/8.0.0", "version": "8.0.0"}]},
    }
    facts["python"]["environments"] = [{"prefix": "/opt/env"}, "junk"]
    findings = evaluate(Snapshot(facts=facts), None, Options())
    py003 = [f for f in findings if f.code == "PY003"]
    assert [f.evidence for f in py003] == [["no Python environment found in the root", "looked at: /opt/env"]]
    assert not [f for f in findings if f.code == "HOST099" and "python_env" in (f.subject or "")]

    facts = {
        "python": {"version": "3.10.12", "version_info": [3, 10, 12], "executable": "/usr/bin/python3"},
        "packages": {
            "installed": {
                "torch-npu": [
                    "junk",
                    {
                        "name": "torch_npu",
                        "version": "2.1.0.post10",
                        "requires_dist": ["torch==2.1.0"],
                        "dist_info": "/s/t",
                    },
                ],
                "torch": [{"name": "torch", "version": "2.2.0", "dist_info": "/s/torch"}],
            }
        },
    }
    findings = evaluate(Snapshot(facts=facts), None, Options())
    assert [f.title for f in findings if f.code == "PKG001"] == [
        "torch 2.2.0 does not match torch_npu 2.1.0.post10 (it requires torch==2.1.0)"
    ]
    assert not [f for f in findings if f.code == "HOST099"]


def test_a_project_whose_every_record_is_malformed_crashes_no_rule():
    """``packages.installed.torch`` holding only ``null`` (a hand-edited or damaged
    snapshot): the packages view drops the record, leaving the project with none; the
    CUDA-only judgement skips it instead of raising (HOST099 before)."""
    from npudoctor.context import Options
    from npudoctor.engine import evaluate
    from npudoctor.snapshot import Snapshot

    facts = {
        "python": {"version": "3.10.12", "version_info": [3, 10, 12], "executable": "/usr/bin/python3"},
        "packages": {
            "installed": {
                "torch": [None],
                "torch-npu": [{"name": "torch_npu", "version": "2.1.0.post10", "dist_info": "/s/t"}],
            }
        },
    }
    findings = evaluate(Snapshot(facts=facts), None, Options())
    assert [f.title for f in findings if f.code == "HOST099"] == []
    assert "PKG052" not in {f.code for f in findings}


def test_a_cuda_torch_that_torch_npu_pins_to_its_cpu_build_is_one_finding(tmp_path):
    """The CUDA build of torch beside torch_npu 2.1.0.post10 (x86_64, it requires
    torch==2.1.0+cpu): PKG001 installs the CPU build; PKG052, which names torch alone, folds
    under it instead of uninstalling and reinstalling torch as a second step."""
    doc = _scenario("k01-x86-torch-npu-2.1.0.post10-needs-cpu-torch", tmp_path)
    pairing = _one(doc, "PKG001")
    cuda = _one(doc, "PKG052")
    assert cuda["data"]["because"] == "PKG001" and cuda["data"]["distributions"] == ["torch"]
    assert [e for e in pairing["evidence"] if "Requires-Dist" in e] == [
        "documented incompatible (torch_npu 2.1.0.post10 requires `torch==2.1.0+cpu` (Requires-Dist in its METADATA))"
    ]
