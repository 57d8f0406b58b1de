"""Robust parsing at the boundary (issue 20): JSON and TOML by content, deep nesting and
long numbers as clear errors, wrong-typed facts as a "could not read section" finding."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import clirun
import pytest

from npudoctor.knowledge.matrix import load
from npudoctor.parsers import jsontext, ranktable

REPO = Path(__file__).resolve().parent.parent


def _bundled_as_json(path: Path) -> Path:
    docs = [(str(f), load._read_doc(str(f))[0]) for f in sorted((REPO / "matrix").glob("*.toml"))]
    path.write_text(json.dumps(load.merge_documents(docs)))
    return path


def test_matrix_verify_reads_json_by_content_whatever_the_name(tmp_path: Path) -> None:
    prev = _bundled_as_json(tmp_path / "matrix.json.prev")
    proc = clirun.npudoctor("matrix", "verify", str(prev), cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "not valid TOML" not in proc.stdout + proc.stderr


def test_matrix_verify_deep_nesting_is_a_clear_error(tmp_path: Path) -> None:
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 50_000 + "]" * 50_000)
    proc = clirun.npudoctor("matrix", "verify", str(deep), cwd=REPO)
    assert proc.returncode == 1
    assert f"matrix file {deep} is not valid TOML: nested too deeply" in proc.stdout + proc.stderr


@pytest.mark.parametrize(
    "broken", ['{"schema_version": ' + "9" * 5000 + "}", '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"]
)
def test_a_broken_cache_copy_does_not_cost_a_command(tmp_path: Path, broken: str) -> None:
    """A 5,000-digit number or deep nesting in the refreshed cache copy: check still runs
    (the bundled matrix is used, MTX004 says why)."""
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "matrix.json").write_text(broken)
    env = dict(os.environ, NPUDOCTOR_CACHE_DIR=str(cache))
    root = REPO / "tests/scenarios/k10-stale-other-cann/root"
    proc = clirun.npudoctor("check", "--root", str(root), "--no-commands", "--json", env=env)
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 1, proc.stderr
    codes = {f["code"] for f in json.loads(proc.stdout)["findings"]}
    assert {"ENV001", "MTX004"} <= codes


def test_jsontext_says_what_plain_json_turns_into_other_errors() -> None:
    with pytest.raises(json.JSONDecodeError, match="nested too deeply"):
        jsontext.loads("[" * 100_000 + "]" * 100_000)
    with pytest.raises(json.JSONDecodeError, match="a number of 5000 digits"):
        jsontext.loads("9" * 5000)
    assert jsontext.loads('{"port": 60000, "neg": -12}') == {"port": 60000, "neg": -12}


def test_rank_table_with_a_5000_digit_number_is_a_fact_not_a_crash() -> None:
    parsed = ranktable.parse_ranktable('{"version": "1.0", "server_count": ' + "9" * 5000 + "}")
    assert parsed["ok"] is False
    assert "a number of 5000 digits" in parsed["error"]


def test_wrong_typed_facts_are_one_could_not_read_finding(tmp_path: Path) -> None:
    snap = tmp_path / "wrong.json"
    snap.write_text(
        json.dumps(
            {
                "schema_version": 1,
                "facts": {
                    "packages": {"installed": {"torch": [{"version": 5}], "torch_npu": "x"}},
                    "python": {"site_packages": 7},
                    "cann": {"selected": "x", "toolkits": 3},
                },
            }
        )
    )
    proc = clirun.npudoctor("check", "--from", str(snap), "--json", cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    found = {f["code"]: f for f in json.loads(proc.stdout)["findings"]}
    assert "HOST050" not in found  # "no NPU stack" is not concluded from sections not read
    unreadable = found["HOST005"]
    assert unreadable["data"]["sections"] == ["python", "packages", "cann"]
    assert unreadable["title"].startswith("could not read sections python, packages, cann of the facts: 5 value(s)")
    assert "packages.installed.torch[0].version: expected str or null, got int" in unreadable["evidence"]
    for form in ("--markdown", "--text"):
        rendered = clirun.npudoctor("check", "--from", str(snap), form, cwd=REPO)
        assert rendered.returncode in (0, 2) and "Traceback" not in rendered.stderr


_PLAIN = {"PATH": "/usr/bin:/bin", "HOME": "/root"}


def _fake_python(tmp_path: Path, body: str) -> Path:
    exe = tmp_path / "python3"
    exe.write_text("#!/bin/sh\n" + body)
    exe.chmod(0o755)
    return exe


def _py003(proc: Any) -> dict:
    assert "Traceback" not in proc.stderr, proc.stderr
    found = {f["code"]: f for f in json.loads(proc.stdout)["findings"]}
    return found["PY003"]


def test_python_target_with_a_well_formed_marker_and_wrong_types_is_not_read(tmp_path: Path) -> None:
    from npudoctor.probes.pyprobe_script import MARK

    exe = _fake_python(tmp_path, f'echo \'{MARK}{{"version": 3, "site_packages": "/x", "prefix": "/usr"}}\'\n')
    proc = clirun.npudoctor("check", "--python", str(exe), "--json", cwd=REPO, env=_PLAIN)
    finding = _py003(proc)
    text = " ".join([finding["title"], *finding["evidence"]])
    assert f"{exe}: could not read the probe's reply: version: expected str or null, got int" in text
    assert json.loads(proc.stdout)["facts"]["python"].get("version") is None


def test_python_target_timeout_does_not_quote_the_probe_script(tmp_path: Path) -> None:
    exe = _fake_python(tmp_path, "exec sleep 30\n")
    proc = clirun.npudoctor("check", "--python", str(exe), "--json", "--deadline", "2", cwd=REPO, env=_PLAIN)
    error = json.loads(proc.stdout)["facts"]["python"]["error"]
    assert error.startswith(f"{exe}: no answer within ")
    assert error.endswith(" s (killed)")
    assert "import" not in error and len(error) < 200


def test_nul_byte_in_env_file_is_a_clear_usage_error(tmp_path: Path) -> None:
    env_file = tmp_path / "nul.env"
    env_file.write_bytes(b"A=1\nLD_LIBRARY_PATH=/usr/lo\x00cal/lib\n")
    root = REPO / "tests/scenarios/k10-stale-other-cann/root"
    for command in ("check", "devices"):
        proc = clirun.npudoctor(command, "--root", str(root), "--env-file", str(env_file), cwd=REPO)
        assert proc.returncode == 2
        assert f"--env-file {env_file}: line 2: a NUL byte (no environment variable can hold one)" in proc.stderr


def test_host_answers_nul_bytes_in_paths_and_commands(tmp_path: Path) -> None:
    from npudoctor.host import Host

    host = Host(root=str(tmp_path), environ={"PATH": "/usr/bin:/bin"})
    assert host.read_text("/etc/hcc\x00n.conf").error == "NUL byte in path"
    assert not host.exists("/usr/\x00") and not host.is_dir("/\x00") and host.stat("/a/b\x00", follow=False) is None
    assert host.listdir("/x\x00") == [] and host.readlink("/l\x00") is None
    assert host.run(["echo", "a\x00b"]).error == "NUL byte in an argument or the environment"
    assert Host(environ={"PATH": "/usr/bin:/bin", "X": "a\x00b"}).run(["true"]).error == (
        "NUL byte in an argument or the environment"
    )


def test_stale_temp_files_of_killed_writers_are_cleaned_on_the_next_write(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    dead = subprocess.Popen(["true"])
    dead.wait()  # its pid is gone: what it left behind is stale
    stale = out / f".npudoctor-{dead.pid}-abc123.tmp"
    stale.write_text("x" * 1000)
    old = out / ".npudoctor-k2j3h4.tmp"  # the name before pids were recorded
    old.write_text("{}")
    os.utime(old, (1, 1))
    alive = out / f".npudoctor-{os.getppid()}-zzz.tmp"  # a writer still running
    alive.write_text("{}")
    unrelated = out / "notes.tmp"
    unrelated.write_text("mine")
    root = REPO / "tests/scenarios/k10-stale-other-cann/root"
    proc = clirun.npudoctor("collect", "--root", str(root), "--no-commands", "-o", str(out / "node.json"), cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(["node.json", alive.name, "notes.tmp"])


def test_a_deeply_nested_project_config_is_ignored_with_a_clear_message(tmp_path: Path) -> None:
    (tmp_path / ".npudoctor.toml").write_text("ignore = " + "[" * 50_000 + "]" * 50_000)
    root = REPO / "tests/scenarios/k10-stale-other-cann/root"
    proc = clirun.npudoctor("check", "--root", str(root), "--no-commands", cwd=tmp_path)
    assert proc.returncode == 1
    assert f"config {tmp_path / '.npudoctor.toml'} ignored: not valid TOML: nested too deeply" in proc.stderr
