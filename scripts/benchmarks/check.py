"""``npudoctor check --python <full real torch_npu install>`` against ``python -c "import
torch"`` (target: median ratio <= 0.15 in every mode but --deep with the file facts
cached -- warm, and the cache an image bakes; the first run with nothing cached is reported
beside it with its own verdict).

The install is the venv of tests/builders/realwheel.py (real torch 2.13.0 CPU + torch_npu 2.13.0,
with ``libtorch_npu.so`` and its symbol checks), reused when it was already built
(``$TMPDIR/npudoctor-realwheel-<hash>/.complete``); it is never built here (a
multi-hundred-MB download does not belong in a benchmark) -- without it, only the
``--root`` scenario is measured and no ratio is given.

Modes: plain, ``--json``, ``--markdown``, each measured

* cold: check's first run in a new ``HOME`` (a temporary directory: the default cache
  directory under it is empty, as in every new container), through the console script;
* warm: the next run in that ``HOME``, its caches of parsed file facts (ELF facts, RECORD
  facts, package-directory walks; keyed by path, size and mtime) filled -- no verdict is
  reused;
* baked: the first run in a new ``HOME`` with ``NPUDOCTOR_CACHE_DIR`` naming a cache one
  ``check`` filled before the rounds, as the Dockerfile bakes it into an image (its
  entries hold after an image copy: no inode, whole-second mtimes).

``NPUDOCTOR_BENCH_BASELINE=DIR`` (a checkout of an earlier commit) adds that checkout's
console script in the same rounds, every mode and state (its own baked cache), so that a
change is measured paired under the same load.

``import torch`` runs with ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` (torch >= 2.5 would import
the installed torch_npu, which cannot load without CANN here).  ``check --root`` of
tests/scenarios/health-910b3-8npu-healthy (a whole container) is reported too, with its replay
``npu-smi`` instant and sleeping 0.3 s as a real one takes.  All runs are interleaved, the order
rotated each round; figures are medians of wall-clock and of CPU time.
"""

from __future__ import annotations

import compileall
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional

from bench import median

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "tests" / "scenarios" / "health-910b3-8npu-healthy"
TARGET_RATIO = 0.15
MODES = (("plain", []), ("--json", ["--json"]), ("--markdown", ["--markdown"]))


def torch_python() -> Optional[Path]:
    """The realwheel venv's interpreter when that venv is complete, else ``None``."""
    sys.path.insert(0, str(REPO / "tests"))
    try:
        from builders import realwheel
    except Exception:
        return None
    finally:
        sys.path.pop(0)
    venv = realwheel.cache_dir()
    python = venv / "bin" / "python"
    return python if (venv / ".complete").is_file() and python.exists() else None


#: Seconds a real ``npu-smi info`` takes (hundreds of milliseconds on a node): the delayed
#: replay sleeps this long before printing the capture.
NPU_SMI_DELAY = 0.3


def _delayed_scenario(scenario: Path) -> Path:
    """A copy of ``scenario`` whose ``bin/npu-smi`` sleeps :data:`NPU_SMI_DELAY` first."""
    slow = scenario.parent / (scenario.name + "-slow-npu-smi")
    shutil.copytree(scenario, slow, symlinks=True)
    smi = slow / "bin" / "npu-smi"
    text = smi.read_text()
    smi.write_text(text.replace("\n", f"\nsleep {NPU_SMI_DELAY}\n", 1))
    return slow


def run(repeat: int) -> List[str]:
    """Rotated rounds (``bench.rounds``) of ``import torch`` and check as users run it: the
    console script pip writes; cold = the first run in a new ``HOME`` (no file-facts cache,
    the default cache directory under it), warm = the next run in that ``HOME``; check
    ``--root`` of the 8 x 910B3 scenario with its replay ``npu-smi`` instant and delayed."""
    from bench import Run, launcher, measure
    from benchmarks.health import scenario_env  # scripts/benchmarks/health.py

    tpy = torch_python()
    lines: List[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        npd = str(launcher(base, REPO))
        checkouts = {"": npd}  # suffix of the task names -> console script
        baseline = os.environ.get("NPUDOCTOR_BENCH_BASELINE")
        if baseline:
            compileall.compile_dir(str(Path(baseline) / "npudoctor"), quiet=1)
            (base / "baseline").mkdir()
            checkouts[" [baseline]"] = str(launcher(base / "baseline", Path(baseline)))
        scenario = base / SCENARIO.name
        shutil.copytree(SCENARIO, scenario, symlinks=True)
        slow = _delayed_scenario(scenario)
        home = base / "home"
        home.mkdir()
        commands: Dict[str, tuple] = {
            "pass": ([sys.executable, "-c", "pass"], {"PATH": "/usr/bin:/bin", "HOME": str(home)}, None),
            "root": (
                [npd, "check", "--root", str(scenario / "root")],
                dict(scenario_env(scenario), HOME=str(home)),
                None,
            ),
            "root, npu-smi 0.3 s": (
                [npd, "check", "--root", str(slow / "root")],
                dict(scenario_env(slow), HOME=str(home)),
                None,
            ),
        }
        torch_error = None
        live_env = {"PATH": "/usr/bin:/bin"}
        if tpy is not None:
            torch_env = dict(live_env, HOME=str(home), TORCH_DEVICE_BACKEND_AUTOLOAD="0")
            torch_argv = [str(tpy), "-c", "import torch"]
            warm = subprocess.run(torch_argv, env=torch_env, capture_output=True, text=True, check=False)
            if warm.returncode != 0:
                torch_error = (warm.stderr.strip().splitlines() or ["?"])[-1]
            else:
                commands["torch"] = (torch_argv, torch_env, None)
        live = "torch" in commands
        baked: Dict[str, Path] = {}  # per checkout: what the Dockerfile's build-time check leaves in the image
        for i, (suffix, script) in enumerate(checkouts.items() if live else ()):
            baked[suffix] = base / f"baked-cache-{i}"
            bake_env = dict(live_env, HOME=str(base / f"home-bake-{i}"), NPUDOCTOR_CACHE_DIR=str(baked[suffix]))
            subprocess.run([script, "check", "--python", str(tpy)], env=bake_env, capture_output=True, check=False)
        for argv, env, cwd in commands.values():  # caches and page cache in place
            measure(argv, env=env, cwd=cwd)
        runs: Dict[str, List[Run]] = {name: [] for name in commands}
        cold: Dict[str, List[Run]] = {}
        warm_runs: Dict[str, List[Run]] = {}
        baked_runs: Dict[str, List[Run]] = {}
        checks = {mode + suffix: (mode, suffix) for suffix in checkouts for mode, _extra in MODES} if live else {}
        tasks = list(commands) + list(checks)
        for r in range(repeat):  # one run of each per round, the order rotated by one each round
            for task in tasks[r % len(tasks) :] + tasks[: r % len(tasks)]:
                if task in commands:
                    argv, env, cwd = commands[task]
                    runs[task].append(measure(argv, env=env, cwd=cwd))
                    continue
                # check's first run in a new HOME (no file-facts cache), then the next one
                mode, suffix = checks[task]
                fresh = base / "home-fresh"
                fresh.mkdir()
                env = dict(live_env, HOME=str(fresh))
                argv = [checkouts[suffix], "check", "--python", str(tpy), *dict(MODES)[mode]]
                cold.setdefault(task, []).append(measure(argv, env=env))
                warm_runs.setdefault(task, []).append(measure(argv, env=env))
                shutil.rmtree(fresh, ignore_errors=True)
                fresh.mkdir()
                env = dict(live_env, HOME=str(fresh), NPUDOCTOR_CACHE_DIR=str(baked[suffix]))
                baked_runs.setdefault(task, []).append(measure(argv, env=env))
                shutil.rmtree(fresh, ignore_errors=True)

    def fig(name: str, rs: List[Run]) -> str:
        return f"{name:<28} {median([r.wall for r in rs]) * 1000:7.1f} ms wall, {median([r.cpu for r in rs]) * 1000:6.1f} ms CPU"

    lines.append(f"{repeat} rounds, order rotated; console script; medians")
    lines.append(fig("python -c pass", runs["pass"]))
    lines.append(fig(f"check --root {SCENARIO.name}", runs["root"]))
    lines.append(fig("same, npu-smi takes 0.3 s", runs["root, npu-smi 0.3 s"]))
    if not live:
        why = torch_error or "the tests/builders/realwheel.py venv is not built here"
        lines.append(f"import torch: {why}; check --python not measured")
        return lines
    torch = runs["torch"]
    lines.append(fig('python -c "import torch"', torch) + f"  ({tpy}, TORCH_DEVICE_BACKEND_AUTOLOAD=0)")
    met = {"cached": True, "cold": True}  # the target's state, and the first run beside it
    t_wall, t_cpu = median([r.wall for r in torch]), median([r.cpu for r in torch])
    for task, (mode, suffix) in checks.items():
        states = (
            ("cold (new HOME)", "cold", cold[task]),
            ("warm", "cached", warm_runs[task]),
            ("baked image cache", "cached", baked_runs[task]),
        )
        for state, kind, got in states:
            ratio = median([r.wall for r in got]) / t_wall
            cpu_ratio = median([r.cpu for r in got]) / t_cpu
            met[kind] = met[kind] and (ratio <= TARGET_RATIO or bool(suffix))
            lines.append(
                fig(f"check --python {mode} {state}{suffix}", got)
                + f" = {ratio:.3f}x import torch (CPU {cpu_ratio:.3f}x)"
            )
    verdict = {kind: "met" if ok else "NOT met" for kind, ok in met.items()}
    lines.append(
        f"target: file facts cached (warm, baked) <= {TARGET_RATIO:g}x import torch in every mode: {verdict['cached']}"
    )
    lines.append(f"first run, nothing cached (cold) <= {TARGET_RATIO:g}x in every mode: {verdict['cold']}")
    return lines
