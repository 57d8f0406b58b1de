"""Output files keep their kind: npudoctor never renames over a FIFO, a device
node or a symlink; ``-o -`` and ``-o /dev/stdout`` write to standard output."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path
from typing import List

import pytest
from clirun import npudoctor

from npudoctor.snapshot import atomic_write


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc/hostname").write_text("n1\n")
    return root


def _collect(tmp_path: Path, out: str):  # type: ignore[no-untyped-def]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    return npudoctor("collect", "--root", str(_root(tmp_path)), "--no-commands", "-o", out, env=env)


def test_a_fifo_is_written_in_place_and_stays_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: List[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    result = _collect(tmp_path, str(fifo))
    reader.join(60)
    assert result.returncode == 0, result.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert json.loads(got[0].decode())["schema_version"] == 1


def test_a_symlink_stays_a_symlink_and_its_target_is_written(tmp_path: Path) -> None:
    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert _collect(tmp_path, str(link)).returncode == 0
    assert os.path.islink(link) and os.readlink(link) == str(target)
    assert json.loads(target.read_text())["schema_version"] == 1


def test_a_symlink_to_a_fifo_keeps_both(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "link"
    link.symlink_to(fifo)
    got: List[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    atomic_write(str(link), "hello\n", named=True)
    reader.join(60)
    assert got == [b"hello\n"]
    assert os.path.islink(link) and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_directory_target_is_refused_not_replaced(tmp_path: Path) -> None:
    target = tmp_path / "dir"
    target.mkdir()
    result = _collect(tmp_path, str(target))
    assert result.returncode == 2
    assert "cannot write" in result.stderr
    assert target.is_dir() and list(target.iterdir()) == []


@pytest.mark.parametrize("name", ["-", "/dev/stdout"])
def test_dash_and_dev_stdout_write_to_standard_output(tmp_path: Path, name: str) -> None:
    result = _collect(tmp_path, name)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["schema_version"] == 1


def test_a_regular_file_is_still_replaced_atomically(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    out.write_text("old")
    os.chmod(out, 0o644)
    atomic_write(str(out), "new")
    assert out.read_text() == "new"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_file_npudoctor_picks_itself_replaces_a_planted_link_or_fifo(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    link = tmp_path / "cache.json"
    link.symlink_to(victim)
    atomic_write(str(link), "cache")
    assert victim.read_text() == "keep" and not os.path.islink(link) and link.read_text() == "cache"
    fifo = tmp_path / "cache2.json"
    os.mkfifo(fifo)
    atomic_write(str(fifo), "cache")  # at once: no reader is waited for
    assert fifo.read_text() == "cache"
