"""Nothing inside ``--root`` is executed: only absolute ``PATH`` entries are
searched, and never a directory or file inside the root -- not ``.``, not ``usr/bin`` with
the working directory in the root, not a PATH taken from the image's ``--env-file``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict

import pytest
from builders.shellscript import write_script
from clirun import npudoctor

from npudoctor.host import Host

TOOLS = ("npu-smi", "hccn_tool", "df")


def _root_with_markers(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc/hostname").write_text("n1\n")
    (root / "etc/hccn.conf").write_text("address_0=10.0.0.1\nnetmask_0=255.255.255.0\n")
    (root / "dev").mkdir()
    (root / "dev/davinci0").write_text("")
    for where in ("usr/bin", "usr/local/bin", "."):
        for tool in TOOLS:
            write_script(root / where, tool, f"touch {tmp_path}/ran-{tool}-$$\necho ok\n")
    return root


def _ran(tmp_path: Path) -> list:
    return sorted(p.name for p in tmp_path.glob("ran-*"))


@pytest.mark.parametrize(
    "path",
    ["usr/bin:usr/local/bin:/usr/bin:/bin", ".:/usr/bin:/bin", ":/usr/bin:/bin", "{root}/usr/bin:/usr/bin:/bin"],
)
def test_no_command_of_the_root_runs_whatever_path_says(tmp_path: Path, path: str) -> None:
    root = _root_with_markers(tmp_path)
    env: Dict[str, str] = {"PATH": path.format(root=root), "HOME": "/root"}
    for command in (["check"], ["devices"], ["collect", "-o", "-"]):
        npudoctor(*command, "--root", str(root), env=env, cwd=root)
    assert _ran(tmp_path) == []


def test_a_path_from_the_images_env_file_runs_nothing_of_the_root(tmp_path: Path) -> None:
    root = _root_with_markers(tmp_path)
    env_file = tmp_path / "image.env"
    env_file.write_text("PATH=usr/local/bin:usr/bin:.\n")
    npudoctor("check", "--root", str(root), "--env-file", str(env_file), env={"PATH": "/usr/bin:/bin"}, cwd=root)
    assert _ran(tmp_path) == []


def test_which_skips_relative_entries_and_the_root(tmp_path: Path) -> None:
    root = _root_with_markers(tmp_path)
    outside = write_script(tmp_path / "bin", "npu-smi", "echo ok\n")
    link = tmp_path / "links"
    link.mkdir()
    (link / "npu-smi").symlink_to(root / "usr/bin/npu-smi")
    path = f"usr/bin:.:{root}/usr/bin:{link}:{outside.parent}"
    assert Host(str(root), {"PATH": path}).which("npu-smi") == str(outside)
    assert Host(str(root), {"PATH": "usr/bin:."}).which("npu-smi") is None
    assert Host(str(root), {}).run([str(root / "usr/bin/npu-smi")]).error
    assert _ran(tmp_path) == []


def test_bytes_that_are_not_utf8_in_a_variable_are_written_and_read_back(tmp_path: Path) -> None:
    """A path in a variable that is not UTF-8 (Python holds its bytes as lone surrogates):
    ``collect -o`` writes the snapshot (UTF-8, the bytes as ``\\udcXX`` escapes) instead of
    failing, ``check --json`` writes a UTF-8 document, and ``check --from`` reads the
    snapshot back with the same value."""
    odd = str(tmp_path) + "/lib\udcff"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LD_LIBRARY_PATH": odd}
    snap = tmp_path / "snap.json"
    written = npudoctor("collect", "-o", str(snap), env=env)
    assert written.returncode == 0, written.stderr
    text = snap.read_bytes().decode("utf-8")  # strict: the file is UTF-8
    assert "lib\\udcff" in text
    shown = npudoctor("check", "--json", env=env, text=False)
    assert shown.stdout.decode("utf-8").count("lib\\udcff") >= 1
    replayed = npudoctor("check", "--from", str(snap), "--json", env={"PATH": "/usr/bin:/bin"})
    doc = json.loads(replayed.stdout)
    assert doc["facts"]["environment"]["current"]["LD_LIBRARY_PATH"] == odd
