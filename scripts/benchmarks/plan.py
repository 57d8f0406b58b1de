"""``npudoctor plan --for site.json`` without a target and without ``--output`` (the plan
alone: no index is asked), paired with the same command of a base commit in the same run
(target: CPU time <= 0.2x the base's).

The base defaults to the commit before the planner's versions were parsed once (cached);
``NPUDOCTOR_BENCH_PLAN_BASE`` names another commit, ``NPUDOCTOR_BENCH_PLAN_BASE=`` (empty)
measures this checkout alone.  The base's ``npudoctor`` package is extracted with
``git archive`` into a temporary directory (no worktree is registered).  Both read the same
site snapshots (tests/fixtures/plan, real layouts), in rotated rounds (``bench.rounds``);
reported: the median wall and CPU time of each, and the median of the paired CPU ratios.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from bench import median, rounds

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "plan"
SITES = ("site_aarch64_py3.9_910B3_drv24.1.rc2.json", "site_x86_64_py3.12_910B4_drv25.5.1.json")
DEFAULT_BASE = "53d1c91"
TARGET = 0.2


def _extract(commit: str, into: Path) -> None:
    blob = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", commit, "npudoctor"],
        check=True,
        stdout=subprocess.PIPE,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        tar.extractall(into)  # noqa: S202 - our own repository's tree


def run(repeat: int) -> List[str]:
    base = os.environ.get("NPUDOCTOR_BENCH_PLAN_BASE", DEFAULT_BASE)
    env = dict(os.environ, COLUMNS="100", NO_COLOR="1")
    env.pop("PYTHONPATH", None)
    lines: List[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        base_dir: Optional[Path] = None
        if base:
            base_dir = Path(tmp) / "base"
            _extract(base, base_dir)
        commands: Dict[str, Tuple[Sequence[str], Optional[dict], Optional[str]]] = {}
        for site in SITES:
            argv = [sys.executable, "-m", "npudoctor", "plan", "--for", str(FIXTURES / site)]
            commands[f"this {site}"] = (argv, env, str(REPO))
            if base_dir is not None:
                commands[f"base {site}"] = (argv, env, str(base_dir))
        runs = rounds(commands, repeat)
    lines.append(f"{repeat} rotated rounds; base {base or '(none)'}")
    for name, measured in runs.items():
        wall = median([r.wall for r in measured])
        cpu = median([r.cpu for r in measured])
        lines.append(f"{name:58} wall {wall:6.2f} s  CPU {cpu:6.2f} s")
    if base:
        for site in SITES:
            ratios = [a.cpu / b.cpu for a, b in zip(runs[f"this {site}"], runs[f"base {site}"]) if b.cpu]
            ratio = median(ratios) if ratios else float("nan")
            verdict = "met" if ratio <= TARGET else "NOT met"
            lines.append(f"{site}: CPU {ratio:.2f}x the base (target <= {TARGET}x: {verdict})")
    return lines
