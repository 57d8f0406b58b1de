"""Hostile files (issue 20): a FIFO, socket or device where a file is expected never hangs
npudoctor.  Every run is a real process bounded by a timeout, so a regression fails here
instead of hanging CI."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import List

import pytest

from npudoctor.host import Host, open_regular, read_capped

REPO = Path(__file__).resolve().parent.parent
SCENARIO = REPO / "tests" / "scenarios" / "k10-stale-other-cann"
SITE = "usr/local/python3.11.13/lib/python3.11/site-packages"
#: A run that does not end within this many seconds is a hang.
LIMIT = 30.0

#: Where a FIFO replaces (or adds) a file the probes read, relative to the root.
PLACEMENTS = [
    "etc/passwd",
    "etc/group",
    "etc/hccn.conf",
    "etc/os-release",
    "etc/ld.so.cache",
    "etc/ld.so.conf",
    "usr/local/Ascend/driver/version.info",
    "usr/local/Ascend/cann-8.5.0/x86_64-linux/ascend_toolkit_install.info",
    "usr/local/Ascend/cann-8.5.0/lib64/libascendcl.so",
    "usr/local/Ascend/cann-8.5.0/set_env.sh",
    f"{SITE}/torch_npu-2.1.0.post10.dist-info/METADATA",
    f"{SITE}/torch_npu-2.1.0.post10.dist-info/direct_url.json",
    f"{SITE}/torch-2.1.0.dist-info/WHEEL",
    f"{SITE}/distutils-precedence.pth",
    f"{SITE}/torch_npu/_C.cpython-311-x86_64-linux-gnu.so",
    f"{SITE}/torch_npu/lib/libtorch_npu.so",
    f"{SITE}/torch/lib/libc10.so",
]


def _env(extra: dict = {}) -> dict:  # noqa: B006 -- read only
    env = {"PATH": "/usr/bin:/bin", "HOME": "/root", "PYTHONPATH": str(REPO)}
    for line in (SCENARIO / "scenario.toml").read_text().splitlines():
        if line.startswith(("ASCEND_", "LD_LIBRARY_PATH")):
            key, _eq, value = line.partition(" = ")
            env[key] = json.loads(value)
    env.update(extra)
    return env


def _run(args: List[str], cwd: Path, env: dict = None, limit: float = LIMIT) -> subprocess.CompletedProcess:  # type: ignore[assignment]
    start = time.monotonic()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "npudoctor", *args],
            capture_output=True,
            text=True,
            timeout=limit,
            cwd=str(cwd),
            env=env or _env(),
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"`npudoctor {' '.join(args)}` did not finish within {limit:.0f} s (a hang)")
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    proc.elapsed = time.monotonic() - start  # type: ignore[attr-defined]
    return proc


def _fifo(root: Path, rel: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_symlink():
        path.unlink()
    os.mkfifo(path)
    return path


@pytest.fixture
def root(tmp_path: Path) -> Path:
    dst = tmp_path / "root"
    shutil.copytree(SCENARIO / "root", dst, symlinks=True)
    return dst


# ------------------------------------------------------------------ the helper
def test_open_regular_refuses_fifo_socket_device_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file: a FIFO"):
        open_regular(str(fifo))
    sock_path = tmp_path / "sock"
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(sock_path))
        with pytest.raises(OSError):  # ENXIO on open, or refused as "a socket"
            open_regular(str(sock_path))
    finally:
        sock.close()
    with pytest.raises(OSError, match="a character device"):
        open_regular("/dev/zero")
    with open_regular("/dev/zero", devices=True) as fh:  # asked for: allowed
        assert fh.read(4) == b"\0\0\0\0"
    regular = tmp_path / "f"
    regular.write_bytes(b"x" * 10)
    assert read_capped(str(regular), 4) == (b"xxxx", True)
    assert read_capped(str(regular), 40) == (b"x" * 10, False)


def test_open_regular_reads_a_named_pipe_without_writer_as_empty(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert read_capped(str(fifo), 100, pipes=True) == (b"", False)


def test_host_read_of_a_fifo_is_a_fact_not_a_hang(tmp_path: Path) -> None:
    _fifo(tmp_path, "etc/hccn.conf")
    read = Host(str(tmp_path)).read_text("/etc/hccn.conf")
    assert read.text is None
    assert read.error == "not a regular file: a FIFO"


def test_host_read_of_kmsg_does_not_block() -> None:
    if not os.path.exists("/proc/kmsg"):
        pytest.skip("no /proc/kmsg")
    start = time.monotonic()
    read = Host("/").read_text("/proc/kmsg")
    assert time.monotonic() - start < 2
    assert read.text in (None, "") or read.text is not None


# ------------------------------------------------------------------ the commands
@pytest.mark.parametrize("rel", PLACEMENTS)
def test_e2e_check_with_a_fifo_in_the_root_finishes(root: Path, rel: str) -> None:
    _fifo(root, rel)
    proc = _run(["check", "--root", str(root), "--json"], cwd=root.parent)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    json.loads(proc.stdout)


def test_e2e_collect_and_devices_with_fifos_everywhere_finish(root: Path, tmp_path: Path) -> None:
    for rel in PLACEMENTS:
        _fifo(root, rel)
    out = tmp_path / "snap.json"
    proc = _run(["collect", "--root", str(root), "-o", str(out)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = out.read_text()
    assert "not a regular file: a FIFO" in text
    proc = _run(["devices", "--root", str(root)], cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    proc = _run(["check", "--from", str(out), "--json"], cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]


def test_e2e_compare_skips_a_fifo_json_in_a_directory(tmp_path: Path) -> None:
    snaps = tmp_path / "snaps"
    snaps.mkdir()
    os.mkfifo(snaps / "node9.json")
    proc = _run(["compare", str(snaps)], cwd=tmp_path)
    assert "not a regular file: a FIFO" in proc.stdout + proc.stderr


def test_e2e_env_file_and_project_config_fifos_finish(root: Path, tmp_path: Path) -> None:
    env_fifo = tmp_path / "env.fifo"
    os.mkfifo(env_fifo)
    proc = _run(["check", "--root", str(root), "--env-file", str(env_fifo), "--json"], cwd=tmp_path)
    assert proc.returncode in (0, 1, 2), proc.stderr[-2000:]
    os.mkfifo(tmp_path / ".npudoctor.toml")
    proc = _run(["check", "--root", str(root), "--json"], cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    assert "not a regular file: a FIFO" in proc.stderr + proc.stdout


def test_e2e_check_from_a_fifo_finishes(tmp_path: Path) -> None:
    fifo = tmp_path / "snap.json"
    os.mkfifo(fifo)
    proc = _run(["check", "--from", str(fifo)], cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "not valid JSON" in proc.stderr or "snapshot" in proc.stderr


def test_e2e_health_cache_fifo_is_ignored_within_budget(tmp_path: Path) -> None:
    from npudoctor.runtime import health

    env = _env({"XDG_RUNTIME_DIR": str(tmp_path), "TMPDIR": str(tmp_path)})
    # the first run writes the cache (a budget that holds on a loaded machine: a run cut
    # short writes none); then a FIFO takes its place
    _run(["health", "--root", str(SCENARIO / "root"), "--cache", "60", "--timeout", "10"], cwd=tmp_path, env=env)
    caches = sorted(tmp_path.rglob("npudoctor-health-*.json"))
    assert caches, sorted(str(p) for p in tmp_path.rglob("*"))
    for cache in caches:
        cache.unlink()
        os.mkfifo(cache)
    proc = _run(["health", "--root", str(SCENARIO / "root"), "--cache", "60"], cwd=tmp_path, env=env, limit=15)
    assert proc.returncode in (0, 1), proc.stderr
    assert proc.elapsed < 10  # type: ignore[attr-defined]
    assert health.__name__  # the module under test


def test_e2e_plan_verify_refuses_a_wheel_symlinked_out_of_the_bundle(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    (bundle / "wheels").mkdir(parents=True)
    name = "wheels/torch-2.1.0-cp311-cp311-manylinux_2_17_x86_64.whl"
    os.symlink("/proc/kmsg", bundle / name)
    fifo_name = "wheels/numpy-1.26.4-cp311-cp311-manylinux_2_17_x86_64.whl"
    os.mkfifo(bundle / fifo_name)
    manifest = {
        "files": [
            {"path": name, "size": 1, "sha256": "0" * 64, "kind": "wheel"},
            {"path": fifo_name, "size": 1, "sha256": "0" * 64, "kind": "wheel"},
            {"path": "/etc/shadow", "size": 1, "sha256": "0" * 64, "kind": "wheel"},
            {"path": "../../etc/passwd", "size": 1, "sha256": "0" * 64, "kind": "wheel"},
        ]
    }
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    os.mkfifo(bundle / "requirements.txt")
    proc = _run(["plan", "verify", str(bundle), "--json"], cwd=tmp_path, limit=20)
    assert proc.returncode == 1, proc.stderr
    problems = {p["path"]: p["message"] for p in json.loads(proc.stdout)["problems"]}
    assert "symlink out of the bundle" in problems[name]
    assert "a FIFO" in problems[fifo_name]
    assert "absolute path" in problems["/etc/shadow"]
    assert "'..'" in problems["../../etc/passwd"]
