"""Start-up of the commands that go through Typer (targets: ``--version``, ``--help``,
``explain CODE`` and ``devices`` <= 12x ``python -c pass``; Typer itself costs about 8x),
``devices`` with its ``npu-smi`` replaced by a script printing a real capture.

Interleaved rounds on one machine: each round runs ``python -c pass`` and each command once,
so that machine load hits them alike; reported as the median of the per-round ratios.
The ``devices`` command runs against tests/scenarios/health-910b3-8npu-healthy (8 x 910B3).
Also reported, without a target here: ``devices --json`` (no table) and ``check`` on the
same root (its target, 0.15x ``import torch``, is measured by the ``check`` benchmark).

With ``NPUDOCTOR_BENCH_BASELINE=DIR`` (a checkout of an earlier commit) the same rounds also
run ``--version``, ``devices --help`` and ``devices`` as ``python -m npudoctor`` from this
checkout and from DIR, paired.

Each command runs as users run it: the ``npudoctor`` console script (a launcher like the one
pip writes, with this checkout first on ``sys.path``), as the health benchmark does;
``devices (-m)`` is the same run as ``python -m npudoctor devices`` (runpy adds a little)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Dict, List

from bench import median

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "tests" / "scenarios" / "health-910b3-8npu-healthy"
TARGETS = {"--version": 12.0, "--help": 12.0, "explain PKG007": 12.0, "devices": 12.0}


def run(repeat: int) -> List[str]:
    from benchmarks.health import interleaved, make_tree, scenario_env  # scripts/benchmarks/health.py

    baseline = os.environ.get("NPUDOCTOR_BENCH_BASELINE")
    with tempfile.TemporaryDirectory() as tmp:
        scenario = Path(tmp) / SCENARIO.name
        shutil.copytree(SCENARIO, scenario, symlinks=True)
        big = make_tree(Path(tmp), 320)
        env = scenario_env(scenario)
        env["COLUMNS"] = "100"
        launcher = Path(tmp) / "npudoctor"  # what pip writes for the console script
        launcher.write_text(
            f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(REPO)!r})\n"
            "from npudoctor.entry import run\nsys.exit(run())\n"
        )
        launcher.chmod(0o755)
        npd = [str(launcher)]
        commands: Dict[str, List[str]] = {
            "pass": [sys.executable, "-c", "pass"],
            "import typer": [sys.executable, "-c", "import typer"],  # the floor of every Typer command
            "--version": npd + ["--version"],
            "--help": npd + ["--help"],
            "devices --help": npd + ["devices", "--help"],
            "explain PKG007": npd + ["explain", "PKG007"],
            "devices": npd + ["devices", "--root", str(scenario / "root")],
            "devices (-m)": [sys.executable, "-m", "npudoctor", "devices", "--root", str(scenario / "root")],
            "devices --json": npd + ["devices", "--json", "--root", str(scenario / "root")],
            "devices 320": npd + ["devices", "--root", str(big / "root")],
            "check": npd + ["check", "--root", str(scenario / "root")],
        }
        # run from this checkout (-m puts the working directory first on sys.path)
        runs = {name: (argv, env, str(REPO)) for name, argv in commands.items()}
        if baseline:  # that checkout's own code: -m from its directory, paired with this one's -m
            dash_m = [sys.executable, "-m", "npudoctor"]  # compare with "devices (-m)"
            for words in (["--version"], ["devices", "--help"]):
                name = " ".join(words) + " (-m)"
                runs[name] = (dash_m + words, env, str(REPO))
                runs[f"baseline {name}"] = (dash_m + words, env, baseline)
            runs["baseline devices (-m)"] = (dash_m + commands["devices"][1:], env, baseline)
            runs["baseline devices 320 (-m)"] = (dash_m + commands["devices 320"][1:], env, baseline)
        cpu: Dict[str, List[float]] = {}
        times = interleaved(runs, repeat, cpu)
    lines = [
        f"python -c pass median {median(times['pass']) * 1e3:.1f} ms (CPU {median(cpu['pass']) * 1e3:.1f} ms); "
        f"{repeat} interleaved rounds; ratios: median of the rounds' wall ratios, then of CPU time"
    ]
    for name in runs:
        if name == "pass":
            continue
        ratio = median([t / p for t, p in zip(times[name], times["pass"])])
        target = TARGETS.get(name)
        verdict = f" (target <= {target:.0f}x: {'met' if ratio <= target else 'NOT met'})" if target else ""
        cpu_ratio = median(cpu[name]) / median(cpu["pass"])
        lines.append(
            f"{name:20} median {median(times[name]) * 1e3:6.1f} ms = {ratio:4.1f}x python -c pass{verdict}; "
            f"CPU {cpu_ratio:4.1f}x"
        )
    return lines
