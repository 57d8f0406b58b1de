"""deploy/ansible/npudoctor.yml run for real by ansible-core (from PyPI) against three
inventory hosts on this machine (local connection), each with its own --root tree; one host
is drifted (another CANN toolkit and HCCL_CONNECT_TIMEOUT)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from builders.stacktree import build_root, need

from npudoctor.snapshot import pseudonym

REPO = Path(__file__).resolve().parent.parent
PLAYBOOK = REPO / "deploy" / "ansible" / "npudoctor.yml"
HOSTS = ("npu-node-01", "npu-node-02", "npu-node-03")
DRIFTED = "npu-node-02"


def _run(tmp_path, hosts, extra_vars):
    inventory = {
        "all": {
            "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
            "hosts": hosts,
        }
    }
    inv = tmp_path / "inventory.yml"
    inv.write_text(yaml.safe_dump(inventory))
    env = dict(
        os.environ,
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-local"),
        ANSIBLE_REMOTE_TEMP=str(tmp_path / "ansible-remote"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_RETRY_FILES_ENABLED="0",
        ANSIBLE_STDOUT_CALLBACK="default",
        LC_ALL="C.UTF-8",
        LANG="C.UTF-8",
    )
    cmd = [sys.executable, "-m", "npudoctor"]
    args = [
        need("ansible-playbook"),
        "-i",
        str(inv),
        str(PLAYBOOK),
        "-e",
        json.dumps(
            dict(
                {
                    "npudoctor_cmd": cmd,
                    "npudoctor_compare_cmd": cmd,
                    "npudoctor_local_dir": str(tmp_path / "snapshots"),
                    "npudoctor_remote_dir": str(tmp_path),
                },
                **extra_vars,
            )
        ),
    ]
    return subprocess.run(args, capture_output=True, text=True, timeout=300, env=env, cwd=str(tmp_path))


def _hosts(tmp_path, drift=True):
    hosts = {}
    for name in HOSTS:
        drifted = drift and name == DRIFTED
        root = build_root(tmp_path / "trees" / name, hostname=name, cann="8.0.RC3" if drifted else "8.0.0")
        hosts[name] = {
            "npudoctor_collect_args": ["--root", str(root)],
            "npudoctor_environment": {"HCCL_CONNECT_TIMEOUT": "300" if drifted else "900"},
        }
    return hosts


@pytest.mark.slow
def test_playbook_names_the_drifted_host(tmp_path):
    proc = _run(tmp_path, _hosts(tmp_path), {})
    out = proc.stdout
    # the play fails on drift, after printing the report
    assert proc.returncode == 2, out + proc.stderr
    assert "npudoctor compare found drift between hosts: npu-node-02 (cann.toolkit, env.HCCL_CONNECT_TIMEOUT)" in out
    assert "Compared 3 node(s): 2 match the majority, 1 differ" in out
    # the drifted host is named by its fetched file (inventory name) and its node label
    line = next(ln for ln in out.splitlines() if f"{DRIFTED}.json" in ln)
    assert pseudonym(DRIFTED) in line
    assert "cann.toolkit: 8.0.RC3  (majority: 8.0.0)" in out
    assert "env.HCCL_CONNECT_TIMEOUT: 300  (majority: 900)" in out
    for other in HOSTS:
        if other != DRIFTED:
            assert f"{other}.json)" not in out
    # one snapshot per host fetched to the controller, removed from the hosts
    fetched = sorted(p.name for p in (tmp_path / "snapshots").iterdir())
    assert fetched == [f"{h}.json" for h in HOSTS]
    assert not list(tmp_path.glob("npudoctor-snapshot-*.json"))
    snap = json.loads((tmp_path / "snapshots" / f"{DRIFTED}.json").read_text())
    assert snap["redacted"] is True and snap["node"] == pseudonym(DRIFTED)


@pytest.mark.slow
def test_playbook_passes_without_drift(tmp_path):
    python = "/usr/local/bin/python3.10"  # the workloads' interpreter, passed as --python (issue 15)
    hosts = _hosts(tmp_path, drift=False)
    for name in HOSTS:  # the interpreter is there on every node (under --root it is read, never run)
        exe = tmp_path / "trees" / name / python.lstrip("/")
        exe.parent.mkdir(parents=True, exist_ok=True)
        exe.write_bytes(b"\x7fELF")
    proc = _run(tmp_path, hosts, {"npudoctor_redact": False, "npudoctor_python": python})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "No drift: every node has the same stack." in proc.stdout
    snap = json.loads((tmp_path / "snapshots" / "npu-node-01.json").read_text())
    assert snap["redacted"] is False and snap["node"] == "npu-node-01"
    assert snap["target"]["python"] == python
