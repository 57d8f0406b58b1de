"""The python and packages probes against real interpreters and real venvs.

The probe script runs in every pyenv Python on this machine (3.7 … 3.13; each is skipped
where absent), through the CLI exactly as a user runs `npudoctor check --python PATH`.
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

from npudoctor.probes.python import parse_script_output, script_source

PYENV = Path("/root/.pyenv/versions")
REPO = Path(__file__).resolve().parent.parent
VERSIONS = ["3.7.16", "3.8.18", "3.9.18", "3.10.13", "3.12.1", "3.13.0"]


def check(*args: str, cwd: Path = None, env: dict = None, timeout: float = 120):
    # A process, as the rule for real venvs and wheels keeps it (docs/architecture.md, Tests).
    proc = subprocess.run(
        [sys.executable, "-m", "npudoctor", "check", "--json", *args],
        capture_output=True,
        text=True,
        cwd=str(cwd) if cwd else None,
        env=env,
        timeout=timeout,
    )
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        pytest.fail(f"no JSON (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return proc.returncode, doc


def codes(doc):
    return {f["code"] for f in doc["findings"]}


def make_venv(base_python: str, where: Path) -> Path:
    subprocess.run([base_python, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    return where / "bin" / "python"


def site_of(python: Path) -> Path:
    out = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(out.stdout.strip())


def write_dist(site: Path, name: str, version: str, requires=(), tag: str = None) -> Path:
    d = site / f"{name}-{version}.dist-info"
    d.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    (d / "METADATA").write_text("\n".join(lines) + "\n\nbody\n")
    (d / "INSTALLER").write_text("pip\n")
    if tag:
        (d / "WHEEL").write_text(f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: {tag}\n")
    return d


@pytest.mark.parametrize("version", VERSIONS)
def test_probe_script_in_each_python(version, tmp_path):
    python = PYENV / version / "bin" / "python"
    if not python.exists():
        pytest.skip(f"pyenv {version} not installed")
    _rc, doc = check("--python", str(python), cwd=tmp_path)
    facts = doc["facts"]["python"]
    assert facts["source"] == "--python"
    assert facts["version"] == version
    assert facts["version_info"] == [int(x) for x in version.split(".")]
    assert facts["implementation"] == "cpython"
    assert facts["executable"] == str(python)
    assert facts["prefix"] == str(PYENV / version)
    assert facts["is_venv"] is False
    assert facts["glibc"] and facts["glibc"][0].isdigit()
    assert any(p.endswith("site-packages") for p in facts["site_packages"])
    assert facts["cwd"] == str(tmp_path)
    packages = doc["facts"]["packages"]
    assert "pip" in packages["installed"], "pip's dist-info is in every pyenv site-packages"
    rec = packages["installed"]["pip"][0]
    assert rec["location"].startswith(str(PYENV / version))
    assert rec["wheel_tags"] == ["py3-none-any"] or rec["kind"] == "egg-info" or rec["wheel_tags"] == []


#: Run inside an interpreter: the probe script's answers beside the standard library's.
_ALIKE = """
import json, platform, sys
path = sys.argv[1]
ns = {"__name__": "pyprobe"}
exec(compile(open(path).read(), path, "exec"), ns)
facts = ns["collect"]()
odd = {"q": "a\\"b\\\\c\\n\\x00\\u00e9\\u2028\\ud800\\U0001f600", "n": [0, -7, 2 ** 70, True, None, []], "e": {}, "t": ("x",)}
print(json.dumps([
    ns["dumps"](facts) == json.dumps(facts),
    ns["dumps"](odd) == json.dumps(odd),
    ns["dumps"]({"f": 1.5, 3: "x"}) == json.dumps({"f": 1.5, 3: "x"}),
    facts["version"] == platform.python_version(),
    facts["machine"] == platform.machine(),
]))
"""


@pytest.mark.parametrize("version", ["2.7.18", "3.6.15"] + VERSIONS + ["3.11.7"])
def test_probe_script_answers_as_json_and_platform_would(version):
    """The script writes its line without importing ``json`` and reads the version and
    machine without ``platform``: the same text and values as theirs, in each interpreter
    (floats and non-string keys go through ``json.dumps`` itself)."""
    python = PYENV / version / "bin" / "python"
    if not python.exists():
        pytest.skip(f"pyenv {version} not installed")
    path = str(REPO / "npudoctor" / "probes" / "pyprobe_script.py")
    out = subprocess.run([str(python), "-c", _ALIKE, path], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [True] * 5


def test_probe_script_that_cannot_write_its_facts_says_why(tmp_path):
    """Python 2 cannot write a ``sys.path`` entry that is not UTF-8 as JSON: the script
    answers with that reason instead of printing nothing."""
    python = PYENV / "2.7.18" / "bin" / "python"
    if not python.exists():
        pytest.skip("pyenv 2.7.18 not installed")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(tmp_path) + "/x\udcff"}
    _rc, doc = check("--python", str(python), cwd=tmp_path, env=env)
    assert doc["facts"]["python"]["error"] == (
        f"{python} (exit 0): probe script failed: the facts could not be written as JSON: UnicodeDecodeError"
    )


def test_probe_script_imports_neither_json_nor_platform(tmp_path):
    """What ``check --python`` waits for: the script's own imports stay small."""
    script = (REPO / "npudoctor" / "probes" / "pyprobe_script.py").read_text()
    probe = script + "\nprint(sorted({'json', 'platform', 're', 'enum'} & set(sys.modules)))\n"
    out = subprocess.run([sys.executable, "-S", "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines()[-1] == "[]"
    assert out.stdout.startswith("NPUDOCTOR-PYPROBE-JSON:{")


def test_script_output_parsing():
    facts, err = parse_script_output('noise from a .pth file\nNPUDOCTOR-PYPROBE-JSON:{"version": "3.9.1"}\n')
    assert err is None and facts == {"version": "3.9.1"}
    assert parse_script_output("NPUDOCTOR-PYPROBE-JSON:{not json")[0] is None
    assert "no probe result" in parse_script_output("Python 2 says hello")[1]
    assert "failed" in parse_script_output('NPUDOCTOR-PYPROBE-JSON:{"error": "boom"}')[1]
    assert "def collect" in script_source()


def test_the_reply_marker_is_the_scripts():
    """python.py reads replies with its own copy of the marker (no import of the script
    module on the --python path): it is the one the script prints."""
    from npudoctor.probes import pyprobe_script, python

    assert python.MARK == pyprobe_script.MARK
    assert f'MARK = "{python.MARK}"' in script_source()


def test_venv_pairing_error_names_the_interpreter(tmp_path):
    python = make_venv(
        str(PYENV / "3.8.18" / "bin" / "python") if (PYENV / "3.8.18").exists() else sys.executable, tmp_path / "venv"
    )
    site = site_of(python)
    machine = os.uname().machine
    tag = f"cp38-cp38-manylinux_2_17_{machine}.manylinux2014_{machine}" if "3.8" in str(site) else None
    write_dist(site, "torch", "2.1.0", ["filelock"], tag=tag)
    write_dist(site, "torch_npu", "2.1.0.post10", ["torch (==2.1.0+cpu)"], tag=tag)
    rc, doc = check("--python", str(python), cwd=tmp_path)
    assert rc == 1
    pairing = [f for f in doc["findings"] if f["code"] == "PKG001"]
    assert len(pairing) == 1, doc["findings"]
    assert "torch==2.1.0+cpu" in pairing[0]["title"]
    assert shlex.split(pairing[0]["fix"][0])[:5] == [str(python), "-m", "pip", "install", "torch==2.1.0+cpu"]
    assert "--index-url https://download.pytorch.org/whl/cpu" in pairing[0]["fix"][0]
    assert doc["facts"]["python"]["is_venv"] is True
    assert doc["facts"]["packages"]["installed"]["torch-npu"][0]["requires_dist"] == ["torch (==2.1.0+cpu)"]


def test_user_site_duplicate_is_reported(tmp_path):
    base = PYENV / "3.10.13" / "bin" / "python"
    if not base.exists():
        pytest.skip("pyenv 3.10.13 not installed")
    home = tmp_path / "home"
    user_site = home / ".local" / "lib" / "python3.10" / "site-packages"
    write_dist(user_site, "numpy", "2.1.0")
    env = dict(os.environ, HOME=str(home))
    env.pop("PYTHONNOUSERSITE", None)
    _rc, doc = check("--python", str(base), env=env, cwd=tmp_path)
    numpy = doc["facts"]["packages"]["installed"].get("numpy") or []
    assert numpy and numpy[0]["user_site"] is True and numpy[0]["version"] == "2.1.0"
    if len(numpy) > 1:  # pyenv 3.10 also has numpy installed: a real user-site duplicate
        dup = [f for f in doc["findings"] if f["code"] == "PKG003" and f["subject"] == "numpy"]
        assert dup and "user site" in "\n".join(dup[0]["evidence"])


def test_shadowing_source_tree_in_cwd(tmp_path):
    python = make_venv(sys.executable, tmp_path / "venv")
    site = site_of(python)
    write_dist(site, "torch", "2.4.0", ["filelock"])
    write_dist(site, "torch_npu", "2.4.0.post2", ["torch==2.4.0"])
    (site / "torch_npu").mkdir()
    (site / "torch_npu" / "__init__.py").write_text("")
    (site / "torch_npu" / "_C.cpython-311-x86_64-linux-gnu.so").write_text("")
    checkout = tmp_path / "pytorch"
    (checkout / "torch_npu").mkdir(parents=True)
    (checkout / "torch_npu" / "__init__.py").write_text("from torch_npu import _C\n")
    _rc, doc = check("--python", str(python), cwd=checkout)
    shadow = doc["facts"]["python"]["shadowing"]["torch_npu"]
    assert shadow["shadowed"] is True and shadow["origin"] == str(checkout / "torch_npu")
    assert shadow["installed"] == str(site / "torch_npu")
    assert "PY002" in codes(doc)
    _rc, doc = check("--python", str(python), cwd=tmp_path)
    assert doc["facts"]["python"]["shadowing"]["torch_npu"]["shadowed"] is False
    assert "PY002" not in codes(doc)


def test_broken_interpreter_is_a_finding(tmp_path):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'Python 2.6 says hi'\nexit 3\n")
    fake.chmod(0o755)
    rc, doc = check("--python", str(fake))
    assert rc == 1
    found = [f for f in doc["findings"] if f["code"] == "PY003"]
    assert found and "no probe result" in found[0]["evidence"][0]
    assert doc["facts"]["packages"]["installed"] == {}


def test_live_plain_machine_stays_calm(tmp_path):
    """This interpreter has no torch_npu and there is no CANN: nothing of ours fires."""
    rc, doc = check(cwd=tmp_path)
    facts = doc["facts"]["python"]
    assert facts["source"] == "live"
    assert facts["version_info"] == list(sys.version_info[:3])
    assert facts["executable"] == sys.executable
    assert doc["facts"]["packages"]["count"] > 10
    ours = [f for f in doc["findings"] if f["code"][:2] in ("PY", "PK") or f["code"][:5] in ("HOST0",)]
    assert all(f["severity"] == "info" for f in ours), ours
    if "torch-npu" not in doc["facts"]["packages"]["installed"]:
        assert rc == 0, doc["findings"]


def _root_check(root: Path, env: dict):
    proc = npudoctor("check", "--json", "--root", str(root), env=dict(env, PATH="/usr/bin:/bin"))
    return json.loads(proc.stdout)


def test_root_sys_path_follows_site_py_order(tmp_path):
    """Under --root the import order is site.py's (as a real CPython 3.8 venv with
    --system-site-packages prints sys.path: the venv's own site-packages, then the user
    site, then the system site dirs; no venv: the user site first), and
    PYTHONNOUSERSITE drops the user site."""
    root = tmp_path / "root"
    base = root / "usr" / "local" / "python3.10.14"
    base_site = base / "lib" / "python3.10" / "site-packages"
    write_dist(base_site, "numpy", "1.26.4")
    venv = root / "home" / "dev" / "venv"
    venv_site = venv / "lib" / "python3.10" / "site-packages"
    write_dist(venv_site, "numpy", "1.24.4")
    (venv / "pyvenv.cfg").write_text(
        "home = /usr/local/python3.10.14/bin\ninclude-system-site-packages = true\nversion = 3.10.14\n"
    )
    user_site = root / "home" / "dev" / ".local" / "lib" / "python3.10" / "site-packages"
    write_dist(user_site, "numpy", "2.1.0")
    env = {"HOME": "/home/dev", "VIRTUAL_ENV": "/home/dev/venv"}
    py = _root_check(root, env)["facts"]["python"]
    order = [
        "/home/dev/venv/lib/python3.10/site-packages",
        "/home/dev/.local/lib/python3.10/site-packages",
        "/usr/local/python3.10.14/lib/python3.10/site-packages",
    ]
    assert [p for p in py["sys_path"] if p in order] == order
    assert py["base_executable"] == "/usr/local/python3.10.14/bin/python3.10"
    doc = _root_check(root, {"HOME": "/home/dev"})  # no venv: /usr/local/python3.10.14 itself
    py = doc["facts"]["python"]
    assert [p for p in py["sys_path"] if p in order] == order[1:]
    assert doc["facts"]["packages"]["installed"]["numpy"][0]["version"] == "2.1.0"
    py = _root_check(root, {"HOME": "/home/dev", "PYTHONNOUSERSITE": "1"})["facts"]["python"]
    assert py["user_site_enabled"] is False and order[1] not in py["sys_path"]


def _wheel(site: Path, dist: str, tag: str) -> None:
    info = site / f"{dist}.dist-info"
    info.mkdir(parents=True)
    (info / "WHEEL").write_text(
        f"Wheel-Version: 1.0\nGenerator: bdist_wheel (0.41.2)\nRoot-Is-Purelib: false\nTag: {tag}\n"
    )


def test_the_architecture_is_read_from_torch_before_hundreds_of_pure_wheels(tmp_path):
    """Under --root the architecture comes from the wheels' platform tags: torch's (a
    binary wheel) is read first, however many pure-Python wheels sort before it."""
    from npudoctor.host import Host
    from npudoctor.probes.python import arch_from_wheels

    site = tmp_path / "usr/lib/python3.10/site-packages"
    for i in range(250):
        _wheel(site, f"aaa_pure_{i:03d}-1.0", "py3-none-any")
    _wheel(site, "torch-2.1.0", "cp310-cp310-manylinux_2_17_aarch64.manylinux2014_aarch64")
    host = Host(root=str(tmp_path))
    assert arch_from_wheels(host, ["/usr/lib/python3.10/site-packages"]) == "aarch64"
    assert arch_from_wheels(host, ["/usr/lib/python3.10/site-packages"], limit=1) == "aarch64"
