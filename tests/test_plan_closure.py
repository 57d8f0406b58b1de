"""Wheels resolved for the SITE (issue 16): markers evaluated for the site's CPython and
architecture, torch's CPU build from the PyTorch CPU index, never a CUDA wheel; the wheel
list with sizes and total before anything is downloaded.

The PyTorch CPU index is unreachable from our machines: it is a local PEP 503 index
(tests/builders/index_builder.py, real wheels) served on 127.0.0.1, next to a local "PyPI" that also
holds the CUDA stand-ins a wrong resolution would bundle."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from builders.index_builder import build_index, default_dists, pypi_json_path, serve
from clirun import npudoctor

from npudoctor.plan.closure import (
    ResolveError,
    Sources,
    Target,
    cuda_reason,
    human_size,
    marker_environment,
    resolve_wheels,
)

FIX = Path(__file__).resolve().parent / "fixtures" / "plan"
PYPI = FIX / "pypi-torch-npu.json"
A64_PY310 = FIX / "site_aarch64_py3.10_910B3_drv25.5.1.json"
X86_PY311 = FIX / "site_x86_64_py3.11_910B4_drv25.2.0.json"
PIP = [sys.executable, "-m", "pip"]

pytestmark = pytest.mark.slow


def pip_env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    return env


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    root = tmp_path_factory.mktemp("index")
    pypi, cpu = default_dists(pypi_json_path())
    built = build_index(root, {"pypi": pypi, "torch-cpu": cpu})
    with serve(root) as url:
        yield {"pypi": f"{url}/pypi/simple", "cpu": f"{url}/torch-cpu/simple", "files": built.files}


def plan(site: Path, index, *args: str, out: Path = None, **env: str):
    """``npudoctor plan --for SITE … ARGS`` in-process, pip in :func:`pip_env` (plus ``env``)."""
    argv = ["plan", "--for", str(site), "--pypi-json", str(PYPI),
            "--index-url", index["pypi"], "--torch-index-url", index["cpu"], *args]  # fmt: skip
    if out is not None:
        argv += ["--output", str(out)]
    return npudoctor(*argv, env=dict(pip_env(), **env))


# --------------------------------------------------------------------------- markers
def test_marker_environment_is_the_sites_not_this_machines():
    from packaging.requirements import Requirement

    env = marker_environment(Target("3.10", "aarch64", "2.28", "3.10.14"))
    assert env["platform_machine"] == "aarch64" and env["python_version"] == "3.10"
    assert env["python_full_version"] == "3.10.14" and env["sys_platform"] == "linux"
    # torch 2.10.0's own marker: false for the aarch64 site, true for an x86_64 one
    marker = Requirement('nvidia-cublas-cu12==12.8.4.1; platform_system == "Linux" and platform_machine == "x86_64"')
    assert marker.marker.evaluate(env) is False
    assert marker.marker.evaluate(marker_environment(Target("3.10", "x86_64"))) is True
    # a full version of another Python line is not believed
    assert marker_environment(Target("3.11", "x86_64", None, "3.10.14"))["python_full_version"] == "3.11.0"


def test_cuda_distributions_are_recognised_by_name_and_build_tag():
    assert "NVIDIA CUDA" in cuda_reason("nvidia_cublas_cu12")
    assert "NVIDIA CUDA" in cuda_reason("cuda-python")
    assert "triton-ascend" in cuda_reason("triton")
    assert "+cu121" in cuda_reason("torch", "2.5.1+cu121")
    for name, version in (("triton-ascend", "3.2.0"), ("torch", "2.6.0+cpu"), ("torch-npu", "2.6.0"), ("numpy", "")):
        assert cuda_reason(name, version) is None


def test_human_size():
    assert [human_size(n) for n in (None, 999, 1234, 2_500_000, 3_200_000_000)] == [
        "?",
        "999 B",
        "1.2 kB",
        "2.5 MB",
        "3.2 GB",
    ]


# --------------------------------------------------------------------------- API
def test_x86_markers_of_torch_2_10_are_not_followed_for_an_aarch64_site(index):
    """torch 2.10.0's aarch64 wheel names nvidia-cublas-cu12 and triton with
    ``platform_machine == "x86_64"``; resolved on this x86_64 machine for aarch64, pip's own
    resolver follows them; ours does not."""
    target = Target("3.10", "aarch64", "2.28")
    sources = Sources(index_url=index["pypi"])
    wheels = resolve_wheels(["torch==2.10.0", "torch_npu==2.10.0.post4"], target, sources, PIP, pip_env())
    names = [w.name for w in wheels]
    assert names == ["torch", "torch-npu", "filelock", "typing-extensions"]
    assert wheels[0].filename == "torch-2.10.0-cp310-cp310-manylinux_2_28_aarch64.whl"
    assert wheels[2].required_by == ["torch"] and wheels[1].required_by == ["plan"]
    assert all(w.sha256 and len(w.sha256) == 64 for w in wheels)
    # what pip alone does on this machine (the bug of issue 16): the CUDA wheels come along
    if os.uname().machine == "x86_64":
        plats = ["--platform", "manylinux_2_28_aarch64", "--platform", "manylinux2014_aarch64"]
        proc = subprocess.run(
            [*PIP, "install", "--dry-run", "--ignore-installed", "--only-binary=:all:", "--python-version", "3.10",
             "--implementation", "cp", "--abi", "cp310", *plats, "--target", "/nonexistent", "--index-url",
             index["pypi"], "torch==2.10.0"],
            capture_output=True, text=True, env=pip_env(), timeout=300,
        )  # fmt: skip
        assert "nvidia-cublas-cu12" in proc.stdout, proc.stdout + proc.stderr


def test_a_cuda_torch_is_refused_with_the_chain_and_the_fix(index):
    """PyPI's aarch64 torch 2.11.0 is a CUDA build: without the CPU index it needs
    nvidia-* on the site; refused before pip is asked about the CUDA wheel."""
    target = Target("3.10", "aarch64", "2.28")
    with pytest.raises(ResolveError) as err:
        resolve_wheels(["torch==2.11.0"], target, Sources(index_url=index["pypi"]), PIP, pip_env())
    text = str(err.value)
    assert text.startswith("refusing nvidia-cublas-cu12: nvidia-cublas-cu12 is an NVIDIA CUDA distribution")
    assert "torch 2.11.0 → nvidia-cublas-cu12" in text and "--torch-index-url" in text
    # the same requirement with the CPU index for torch: its +cpu build, nothing from NVIDIA
    sources = Sources(index_url=index["pypi"], torch_index_url=index["cpu"])
    wheels = resolve_wheels(["torch==2.11.0"], target, sources, PIP, pip_env())
    assert wheels[0].filename == "torch-2.11.0+cpu-cp310-cp310-manylinux_2_28_aarch64.whl"
    assert "/torch-cpu/" in wheels[0].url
    assert not any(w.name.startswith("nvidia") for w in wheels)


def test_a_cuda_name_is_refused_without_asking_pip(tmp_path):
    """Asked for directly (or as a dependency), a CUDA distribution never reaches pip: the
    pip command here would fail loudly if it were run."""
    for req in ("triton==3.5.0", "nvidia-cudnn-cu12", "cuda-python"):
        with pytest.raises(ResolveError, match=r"^refusing "):
            resolve_wheels([req], Target("3.11", "x86_64"), Sources(), ["/bin/false"], {})
    # a requirement whose marker is false on the site is not even considered
    marker = 'nvidia-cudnn-cu12; platform_machine == "x86_64"'
    assert resolve_wheels([marker], Target("3.11", "aarch64"), Sources(), ["/bin/false"], {}) == []


def test_a_wheel_missing_from_the_torch_index_names_it(index):
    target = Target("3.8", "aarch64", "2.28")
    sources = Sources(index_url=index["pypi"], torch_index_url=index["cpu"])
    with pytest.raises(ResolveError) as err:
        resolve_wheels(["torch==2.11.0"], target, sources, PIP, pip_env())
    assert "no wheel of torch==2.11.0 in the torch index " + index["cpu"] in str(err.value)
    assert any("No matching distribution found for torch==2.11.0" in line for line in err.value.details)


# --------------------------------------------------------------------------- CLI
def test_dry_run_lists_wheels_with_sizes_and_total_and_downloads_nothing(index, tmp_path):
    proc = plan(A64_PY310, index, "--torch-npu", "2.11.0", "--dry-run", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    files = {p.name: p for d in index["files"].values() for p in d.iterdir()}
    wheels = {w["filename"]: w for w in doc["wheels"]}
    assert "torch-2.11.0+cpu-cp310-cp310-manylinux_2_28_aarch64.whl" in wheels  # from the CPU index
    assert "torch_npu-2.11.0-cp310-cp310-manylinux_2_28_aarch64.whl" in wheels
    assert not any(n.startswith(("nvidia", "triton")) for n in wheels)
    for name, w in wheels.items():
        assert w["size"] == files[name].stat().st_size
    assert doc["wheels_total_bytes"] == sum(w["size"] for w in wheels.values())
    text = plan(A64_PY310, index, "--torch-npu", "2.11.0", "--dry-run")
    assert text.returncode == 0, text.stderr
    total = human_size(doc["wheels_total_bytes"])
    assert f"wheels for CPython 3.10 on aarch64 ({len(wheels)}, {total} in total):" in text.stdout
    line = next(
        x for x in text.stdout.splitlines() if x.endswith("torch-2.11.0+cpu-cp310-cp310-manylinux_2_28_aarch64.whl")
    )
    assert line.split()[:4] == ["torch", "2.11.0+cpu", *human_size(files[line.split()[-1]].stat().st_size).split()]
    assert "(--dry-run: nothing downloaded)" in text.stdout
    assert list(tmp_path.iterdir()) == []
    # below its width the list stacks: the file name on its own line, never cut
    narrow = plan(A64_PY310, index, "--torch-npu", "2.11.0", "--dry-run", COLUMNS="60").stdout.splitlines()
    at = narrow.index("      torch-2.11.0+cpu-cp310-cp310-manylinux_2_28_aarch64.whl")
    assert narrow[at - 1].split()[:2] == ["torch", "2.11.0+cpu"] and len(narrow[at - 1]) <= 60
    assert all(len(x) <= 60 for x in narrow if len(x.split()) > 1)


def test_protobuf_resolves_to_the_line_the_cann_needs_not_the_newest(index):
    """The index holds protobuf 3.20.3 and a newer line (PROTOBUF_NEWEST): CANN 8.x needs
    3.20.x, so the resolved wheel is 3.20.3, the bare newest never."""
    from builders.index_builder import PROTOBUF_NEWEST

    proc = plan(X86_PY311, index, "--torch-npu", "2.6.0", "--dry-run", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["plan"]["cann"].startswith("8.") and "protobuf==3.20.*" in doc["plan"]["requirements"]
    protobuf = [w for w in doc["wheels"] if w["name"] == "protobuf"]
    assert [w["version"] for w in protobuf] == ["3.20.3"] and PROTOBUF_NEWEST != "3.20.3"


def test_aarch64_torch_2_10_bundle_has_no_cuda_wheel_and_is_listed_before_download(index, tmp_path):
    out = tmp_path / "bundle"
    proc = plan(A64_PY310, index, "--torch-npu", "2.10.0.post4", out=out)
    # the wheels are all there; the CANN .run packages were not given: it cannot install
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "npudoctor: the bundle cannot install: 3 package(s) missing (Ascend-cann-toolkit_" in proc.stderr
    wheels = sorted(p.name for p in (out / "wheels").iterdir())
    assert "torch-2.10.0-cp310-cp310-manylinux_2_28_aarch64.whl" in wheels
    assert not any(w.startswith(("nvidia", "triton")) or "x86_64" in w for w in wheels)
    listing = proc.stdout.index("wheels for CPython 3.10 on aarch64 (")
    assert listing < proc.stdout.index("bundle written to")
    # not a terminal: no progress bar on stderr
    assert "━" not in proc.stderr and "wheels" not in proc.stderr


def test_x86_torch_2_12_comes_from_the_cpu_index(index, tmp_path):
    proc = plan(X86_PY311, index, "--torch-npu", "2.12.0", "--dry-run", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    torch = next(w for w in doc["wheels"] if w["name"] == "torch")
    assert torch["version"] == "2.12.0+cpu" and "/torch-cpu/" in torch["url"]
    assert doc["plan"]["torch_requirement"] == "torch==2.12.0"


def test_progress_bar_when_stderr_is_a_terminal(index, tmp_path):
    """stderr on a pseudo-terminal: rich draws a spinner for each phase and the download bar
    there.  (A process: rich finds the terminal on the real stderr.)"""
    import pty

    master, slave = pty.openpty()
    argv = [sys.executable, "-m", "npudoctor", "plan", "--for", str(A64_PY310), "--pypi-json", str(PYPI),
            "--index-url", index["pypi"], "--torch-index-url", index["cpu"], "--torch-npu", "2.10.0.post4",
            "--output", str(tmp_path / "b")]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=slave, env=dict(pip_env(), TERM="xterm"))
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    stdout, _ = proc.communicate(timeout=600)
    os.close(master)
    assert proc.returncode == 1, stdout  # no CANN .run packages given: the bundle cannot install
    shown = b"".join(chunks).decode("utf-8", "replace")
    assert "wheels" in shown and "━" in shown
    # every phase before the downloads says what it does, from the start, in order
    order = [
        shown.index("planning: reading the compatibility matrix and the site snapshot"),
        shown.index("planning: judging torch_npu builds against the site"),
        shown.index("wheels: asking pip for CPython 3.10 on aarch64"),
        shown.index("wheels: reading the sizes of "),
        shown.index("━"),
    ]
    assert order == sorted(order)


def test_torch_for_an_ascend_site_is_a_cpu_build():
    from npudoctor.plan.model import TORCH_CPU_INDEX, torch_requirement

    assert torch_requirement("2.10.0", "2.10.0.post4", "aarch64") == ("torch==2.10.0", None)  # PyPI: CPU-only
    assert torch_requirement("2.11.0", "2.11.0", "aarch64") == ("torch==2.11.0", TORCH_CPU_INDEX)
    assert torch_requirement("2.6.0", "2.6.0", "x86_64") == ("torch==2.6.0+cpu", TORCH_CPU_INDEX)
    assert torch_requirement("2.12.0", "2.12.0", "x86_64") == ("torch==2.12.0", TORCH_CPU_INDEX)


def test_download_refuses_a_cuda_wheel_handed_to_it(tmp_path):
    """make_bundle accepts already-resolved wheels: a CUDA one is refused before any fetch."""
    from types import SimpleNamespace

    from npudoctor.plan.bundle import BundleError, BundleOptions, download_wheels
    from npudoctor.plan.closure import Wheel

    src = tmp_path / "nvidia_cublas_cu12-12.8.4.1-py3-none-manylinux_2_28_aarch64.whl"
    src.write_bytes(b"PK")
    wheel = Wheel("nvidia-cublas-cu12", "12.8.4.1", src.name, src.as_uri(), None, [])
    out = tmp_path / "out"
    with pytest.raises(BundleError, match="refusing to download nvidia_cublas_cu12-12.8.4.1"):
        download_wheels(SimpleNamespace(torch_index=None), BundleOptions(output=str(out)), [wheel], print)
    assert list((out / "wheels").iterdir()) == []


def test_a_hostile_report_url_cannot_name_a_path_outside_wheels(tmp_path):
    """An index whose file URL decodes to ``../`` is refused: the wheel would land outside
    ``wheels/``.  The "pip" here is a real executable writing the report pip would write."""
    fake = tmp_path / "pip"
    report = {
        "install": [
            {
                "metadata": {"name": "evil", "version": "1.0", "requires_dist": []},
                "download_info": {"url": "http://127.0.0.1:9/files/..%2F..%2Fevil-1.0-py3-none-any.whl"},
            }
        ]
    }
    fake.write_text(
        f'#!/bin/sh\nwhile [ "$1" != "--report" ]; do shift; done\ncat > "$2" <<\'EOF\'\n{json.dumps(report)}\nEOF\n'
    )
    fake.chmod(0o755)
    with pytest.raises(ResolveError, match=r"unusable wheel file '\.\./\.\./evil-1\.0-py3-none-any\.whl'"):
        resolve_wheels(["evil"], Target("3.11", "x86_64"), Sources(), [str(fake)], {})


def test_conflicts_backtrack_to_an_older_parent_and_requires_python_is_held(tmp_path):
    """The newest ``mlkit`` needs numpy>=2 while the plan says numpy<2: an older mlkit is
    taken (pip's own resolver would backtrack the same way).  The newest ``graphs`` needs
    Python >= 3.11, which pip does not hold against --python-version for a link without
    that metadata: the site's 3.10 gets the older release."""
    from builders.index_builder import Dist, build_index

    cp = "cp310-cp310-manylinux_2_17_x86_64.manylinux2014_x86_64"
    dists = [
        Dist("numpy", "1.26.4", cp),
        Dist("numpy", "2.1.2", cp),
        Dist("mlkit", "0.5.0", requires=["numpy>=2.0.0"]),
        Dist("mlkit", "0.4.0", requires=["numpy>=1.21"]),
        Dist("graphs", "3.6", requires_python=">=3.11"),
        Dist("graphs", "3.4", requires_python=">=3.10"),
    ]
    built = build_index(tmp_path, {"idx": dists})
    sources = Sources(index_url=built.simple("idx").as_uri())
    wheels = resolve_wheels(["numpy<2", "mlkit", "graphs"], Target("3.10", "x86_64"), sources, PIP, pip_env())
    assert {w.name: w.version for w in wheels} == {"numpy": "1.26.4", "mlkit": "0.4.0", "graphs": "3.4"}
    # a conflict with the plan's own requirement is not backtracked: it is reported
    with pytest.raises(ResolveError, match=r"no wheel of numpy<2,>=2"):
        resolve_wheels(["numpy<2", "numpy>=2"], Target("3.10", "x86_64"), sources, PIP, pip_env())
