"""The Host seam: root-relative reads, symlinks inside the root, bad files, commands."""

from __future__ import annotations

import os
import time

from npudoctor.host import Host


def test_absolute_symlink_resolves_inside_root(tmp_path):
    root = tmp_path / "root"
    (root / "usr/local/Ascend/cann-8.5.0").mkdir(parents=True)
    (root / "usr/local/Ascend/cann-8.5.0/version.info").write_text("Version=8.5.0\n")
    os.symlink("/usr/local/Ascend/cann-8.5.0", root / "usr/local/Ascend/latest")
    host = Host(str(root), environ={})
    read = host.read_text("/usr/local/Ascend/latest/version.info")
    assert read.ok and read.text == "Version=8.5.0\n"
    assert read.path == "/usr/local/Ascend/latest/version.info"
    assert host.resolve("/usr/local/Ascend/latest") == "/usr/local/Ascend/cann-8.5.0"
    assert host.readlink("/usr/local/Ascend/latest") == "/usr/local/Ascend/cann-8.5.0"


def test_relative_symlink_and_dotdot_cannot_escape_root(tmp_path):
    root = tmp_path / "root"
    (root / "opt").mkdir(parents=True)
    (tmp_path / "secret").write_text("outside")
    os.symlink("../../../../secret", root / "opt/escape")
    host = Host(str(root), environ={})
    assert not host.read_text("/opt/escape").ok
    assert host.read_text("/../secret").error == "not found"


def test_symlink_loop_is_a_fact_not_an_exception(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    os.symlink("/b", root / "a")
    os.symlink("/a", root / "b")
    host = Host(str(root), environ={})
    read = host.read_text("/a/version.info")
    assert read.text is None and read.error == "symlink loop"
    assert host.exists("/a") is False and host.listdir("/a") == []


def test_non_utf8_and_oversized_and_unreadable(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "bad.info").write_bytes(b"Version=8.0.\xff\xfeRC1\n")
    (root / "big").write_bytes(b"x" * 5000)
    (root / "dir").mkdir()
    host = Host(str(root), environ={})
    bad = host.read_text("/bad.info")
    assert bad.ok and bad.lossy and bad.text.startswith("Version=8.0.") and "\ufffd" in bad.text
    big = host.read_text("/big", limit=1000)
    assert big.truncated and len(big.text) == 1000
    assert host.read_text("/dir").error == "is a directory"


def _script(path, body):
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def test_run_finds_commands_on_path_not_in_root(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _script(bin_dir / "npu-smi", 'echo "npu-smi 23.0.rc2"; echo warn >&2; exit 3\n')
    (tmp_path / "root").mkdir()
    host = Host(str(tmp_path / "root"), environ={"PATH": str(bin_dir)})
    res = host.run(["npu-smi", "-v"], timeout=5)
    assert res.returncode == 3 and res.stdout == "npu-smi 23.0.rc2\n" and res.stderr == "warn\n"
    assert not res.ok and "exit 3" in res.describe()
    missing = Host("/", environ={"PATH": str(bin_dir)}).run(["hccn_tool"], timeout=1)
    assert missing.error == "command not found" and missing.returncode is None
    off = Host("/", environ={"PATH": str(bin_dir)}, commands=False).run(["npu-smi"], timeout=1)
    assert off.error == "commands disabled"


def test_hung_command_that_ignores_sigterm_is_killed_within_deadline(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # The child and its grandchild ignore SIGTERM and sleep "forever".
    _script(bin_dir / "npu-smi", "trap '' TERM\n/bin/sleep 300 &\n/bin/sleep 300\n")
    host = Host("/", environ={"PATH": str(bin_dir)})
    start = time.monotonic()
    res = host.run(["npu-smi", "info"], timeout=0.5)
    elapsed = time.monotonic() - start
    assert res.timed_out and res.returncode is None
    assert elapsed < 3.0
    assert "no answer" in res.describe()


def test_end_all_kills_a_command_forked_before_it_was_counted():
    """SIGTERM may come while a command's Popen has not returned (the child already runs,
    RUNNING does not hold it yet): end_all still ends every child that leads a process group
    of its own, and leaves a child in npudoctor's own group alone."""
    import subprocess
    import sys

    script = (
        "import subprocess, sys\n"
        "from npudoctor import hostproc\n"
        "quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "own = subprocess.Popen(['sleep', '600'], start_new_session=True, **quiet)  # not in RUNNING\n"
        "kept = subprocess.Popen(['sleep', '600'], **quiet)  # npudoctor's own group: not a command\n"
        "hostproc.end_all()\n"
        "try:\n"
        "    code = own.wait(timeout=10)\n"
        "except subprocess.TimeoutExpired:\n"
        "    own.kill()\n"
        "    code = 'alive'\n"
        "print(code, kept.poll())\n"
        "kept.kill()\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["-9", "None"], out.stderr
