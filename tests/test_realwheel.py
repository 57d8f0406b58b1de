"""Real wheels: torch 2.13.0 (CPU build) + torch_npu 2.13.0 from PyPI in a Python 3.11 venv
(tests/builders/realwheel.py builds and caches it), inspected with `npudoctor check --python`."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from builders.realwheel import realwheel_venv  # noqa: F401  (session fixture)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def report(realwheel_venv, tmp_path_factory):  # noqa: F811
    cwd = tmp_path_factory.mktemp("realwheel-cwd")
    # A process, as the rule for real venvs and wheels keeps it (docs/architecture.md, Tests).
    proc = subprocess.run(
        [sys.executable, "-m", "npudoctor", "check", "--python", str(realwheel_venv.python), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=str(cwd),
    )
    assert proc.stdout, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_real_wheels_are_read_from_metadata(report, realwheel_venv):  # noqa: F811
    _rc, doc = report
    installed = doc["facts"]["packages"]["installed"]
    torch = installed["torch"]
    npu = installed["torch-npu"]
    assert len(torch) == 1 and len(npu) == 1
    assert torch[0]["version"] == "2.13.0+cpu"
    assert torch[0]["wheel_tags"] == ["cp311-cp311-manylinux_2_28_x86_64"]
    assert npu[0]["version"] == "2.13.0"
    assert "torch==2.13.0.*" in npu[0]["requires_dist"]
    assert npu[0]["location"] == str(realwheel_venv.site_packages)
    assert npu[0]["installer"] == "pip"
    python = doc["facts"]["python"]
    assert python["source"] == "--python" and python["version"].startswith("3.11.")
    assert python["is_venv"] is True and python["prefix"] == str(realwheel_venv.path)
    shadow = python["shadowing"]["torch_npu"]
    assert shadow["shadowed"] is False and shadow["has_extension"] is True


def test_no_pairing_error(report):
    _rc, doc = report
    found = {f["code"] for f in doc["findings"]}
    for code in ("PKG001", "PKG002", "PKG003", "PKG004", "PKG005", "PY001", "PY002", "PY003", "PY004"):
        assert code not in found, [f for f in doc["findings"] if f["code"] == code]
    assert not any("mismatch" in f["name"] and f["area"] == "packages" for f in doc["findings"])


def test_fixture_keeps_pip_indexes_when_the_cpu_index_is_unreachable(tmp_path):
    """The CPU index is added only when it answers; an unreachable one (here a file URL
    that does not exist, no network needed) leaves pip's own indexes."""
    import sys as _sys

    from builders.realwheel import CPU_INDEX, REQUIREMENTS, cpu_index_reachable, install_argv

    assert cpu_index_reachable(_sys.executable, index=(tmp_path / "no-index").as_uri(), timeout=5) is False
    assert install_argv("py", cpu_index=False) == [
        "py",
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        *REQUIREMENTS,
    ]
    assert install_argv("py", cpu_index=True)[5:7] == ["--extra-index-url", CPU_INDEX]
