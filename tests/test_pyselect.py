"""``--python`` takes an interpreter, a venv or conda environment directory, or a conda
environment's name; without it, npudoctor installed in a venv of its own (pipx) judges the
active environment, or says plainly which interpreter it judged (issue 19).  Real venvs
(``python -m venv --without-pip``) and a real conda-style tree with a real interpreter."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from clirun import npudoctor  # noqa: E402

from npudoctor.session import pyselect  # noqa: E402

BASE_PYTHON = getattr(sys, "_base_executable", None) or sys.executable


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pyselect") / "project-venv"
    subprocess.run([BASE_PYTHON, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120)
    return path


@pytest.fixture
def conda(tmp_path: Path, venv: Path) -> Path:
    """A conda installation layout: <install>/bin/conda, <install>/envs/torch-npu (a real
    interpreter: the venv's), recorded in ~/.conda/environments.txt of a home."""
    install = tmp_path / "miniconda3"
    env = install / "envs" / "torch-npu"
    (env / "bin").mkdir(parents=True)
    (env / "conda-meta").mkdir()
    (env / "bin" / "python").symlink_to(venv / "bin" / "python")
    (install / "bin").mkdir()
    (install / "bin" / "conda").write_text("#!/bin/sh\n")
    home = tmp_path / "home"
    (home / ".conda").mkdir(parents=True)
    (home / ".conda" / "environments.txt").write_text(f"{install}\n{env}\n")
    return tmp_path


def _doc(*args: str, env: dict) -> dict:
    result = npudoctor("check", "--json", "--no-commands", *args, env=env)
    assert result.returncode in (0, 1), result.stderr
    return dict(json.loads(result.stdout))


def test_python_accepts_a_venv_directory(venv: Path):
    doc = _doc("--python", str(venv), env={"PATH": "/usr/bin:/bin"})
    assert doc["target"]["python"] == str(venv / "bin" / "python")


def test_python_accepts_a_conda_env_name_from_environments_txt(conda: Path):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(conda / "home")}
    doc = _doc("--python", "torch-npu", env=env)
    assert doc["target"]["python"] == str(conda / "miniconda3" / "envs" / "torch-npu" / "bin" / "python")


def test_conda_env_name_from_conda_exe_without_environments_txt(conda: Path):
    os.remove(conda / "home" / ".conda" / "environments.txt")
    env = {"HOME": str(conda / "home"), "CONDA_EXE": str(conda / "miniconda3" / "bin" / "conda")}
    assert pyselect.resolve("torch-npu", environ=env) == str(conda / "miniconda3" / "envs" / "torch-npu" / "bin/python")
    assert pyselect.conda_env("base", env) == str(conda / "miniconda3")


def test_unknown_python_says_where_it_looked(tmp_path: Path):
    result = npudoctor("check", "--python", "nope", env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert result.returncode == 2
    assert "--python nope: no such file, directory or conda environment (looked in ~/.conda/environments.txt)" in (
        result.stderr
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    result = npudoctor("check", "--python", str(empty), env={"PATH": "/usr/bin:/bin"})
    assert result.returncode == 2 and "a directory without bin/python" in result.stderr


def test_from_its_own_venv_npudoctor_judges_the_active_virtualenv(venv: Path):
    """pipx: npudoctor's sys.prefix is its own venv; VIRTUAL_ENV names the user's."""
    doc = _doc(env={"PATH": "/usr/bin:/bin", "VIRTUAL_ENV": str(venv)})
    assert doc["target"]["python"] == str(venv / "bin" / "python")
    assert doc["target"]["python_choice"].startswith(f"judged the active virtualenv {venv} (VIRTUAL_ENV)")


def test_from_its_own_venv_without_an_active_env_it_says_which_python_it_judged():
    choice = pyselect.default_choice(
        {}, prefix="/opt/pipx/venvs/npudoctor", executable="/opt/pipx/venvs/npudoctor/bin/python"
    )
    if not pyselect.own_venv("/opt/pipx/venvs/npudoctor"):
        pytest.skip("base prefix equals the given prefix")
    assert choice[0] is None
    assert choice[1] == (
        "judged npudoctor's own Python /opt/pipx/venvs/npudoctor/bin/python (its own venv: no active virtualenv "
        "or conda environment); to judge yours: --python PATH|ENV_DIR|CONDA_ENV"
    )


def test_text_report_names_the_judged_interpreter(venv: Path):
    result = npudoctor("check", "--no-commands", env={"PATH": "/usr/bin:/bin", "VIRTUAL_ENV": str(venv)})
    assert f"Python: judged the active virtualenv {venv} (VIRTUAL_ENV)" in result.stdout


@pytest.fixture
def venv_with_torch_npu(tmp_path: Path) -> Path:
    """A real venv whose site-packages holds torch_npu 2.1.0.post10's dist-info (as pip
    writes it: METADATA, INSTALLER, RECORD), so the judged interpreter shows in the verdict."""
    path = tmp_path / "user-venv"
    subprocess.run([BASE_PYTHON, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120)
    site = next(path.glob("lib/python3*/site-packages"))
    dist = site / "torch_npu-2.1.0.post10.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: torch_npu\nVersion: 2.1.0.post10\n")
    (dist / "INSTALLER").write_text("pip\n")
    (dist / "RECORD").write_text("torch_npu-2.1.0.post10.dist-info/METADATA,,\n")
    return path


def _live(*args: str, venv: Path) -> subprocess.CompletedProcess:
    """npudoctor run from its own venv (this test interpreter's), as pipx runs it, with the
    user's venv active (VIRTUAL_ENV) and no --python."""
    repo = Path(__file__).resolve().parent.parent
    env = {"PATH": "/usr/bin:/bin", "VIRTUAL_ENV": str(venv), "PYTHONPATH": str(repo), "HOME": str(venv.parent)}
    return subprocess.run(
        [sys.executable, "-m", "npudoctor", *args], env=env, capture_output=True, text=True, timeout=120
    )


def test_health_judges_the_active_virtualenv_and_says_so_in_json(venv_with_torch_npu: Path):
    if not pyselect.own_venv():
        pytest.skip("the test interpreter is not in a venv of its own")
    proc = _live("health", "--json", "--timeout", "60", venv=venv_with_torch_npu)
    doc = json.loads(proc.stdout)
    assert doc["python_choice"].startswith(f"judged the active virtualenv {venv_with_torch_npu} (VIRTUAL_ENV)")
    assert "torch_npu 2.1.0.post10" in doc["summary"]  # the user's venv's packages, not npudoctor's
    assert "PKG002 torch_npu 2.1.0.post10 is installed but torch is not" in doc["problems"]


def test_exec_judges_the_active_virtualenv_and_says_which(venv_with_torch_npu: Path):
    if not pyselect.own_venv():
        pytest.skip("the test interpreter is not in a venv of its own")
    proc = _live("exec", "--timeout", "60", "--", "true", venv=venv_with_torch_npu)
    lines = proc.stderr.splitlines()
    assert f"npudoctor: judged the active virtualenv {venv_with_torch_npu} (VIRTUAL_ENV), not npudoctor's own " in (
        "\n".join(lines)
    )
    # torch_npu without torch in the judged venv: the finding is about the user's venv
    assert "npudoctor: error PKG002 torch_npu 2.1.0.post10 is installed but torch is not" in lines
    quiet = _live("exec", "--quiet", "--timeout", "60", "--", "true", venv=venv_with_torch_npu)
    assert "judged the active virtualenv" not in quiet.stderr


def test_python_that_is_not_an_interpreter_is_a_usage_error_and_is_not_run(tmp_path: Path):
    marker = tmp_path / "ran"
    script = tmp_path / "setup.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    script.chmod(0o755)
    readme = tmp_path / "README.md"
    readme.write_text("# A project\n\nSome prose.\n")
    env = {"PATH": "/usr/bin:/bin"}
    for value, said in [
        ("/bin/ls", "--python /bin/ls: an ELF executable without Python's entry point (Py_BytesMain)"),
        (str(readme), f"--python {readme}: a text file starting '# A project'"),
        (str(script), f"--python {script}: a script for /bin/sh"),
    ]:
        result = npudoctor("check", "--python", value, env=env)
        assert result.returncode == 2, result.stdout
        assert said + ", not a Python interpreter (it was not run)" in result.stderr
        assert result.stdout == ""
    assert not marker.exists()


def test_an_interpreter_is_known_by_its_entry_point_or_its_name(tmp_path: Path):
    copy = tmp_path / "interp"  # a real CPython executable under another name
    shutil.copy(os.path.realpath(sys.executable), copy)
    assert pyselect.not_an_interpreter(str(copy)) is None
    shim = tmp_path / "python3.10"  # a pyenv-like shim script
    shim.write_text('#!/bin/sh\nexec pyenv exec "$0" "$@"\n')
    assert pyselect.not_an_interpreter(str(shim)) is None
    assert pyselect.resolve(str(shim)) == str(shim)
    empty = tmp_path / "tool"
    empty.write_bytes(b"")
    assert pyselect.not_an_interpreter(str(empty)) == "an empty file"
