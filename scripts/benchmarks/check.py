"""``npudoctor check --python <full real torch_npu install>`` against ``python -c "import
torch"`` (issue 18's target: median ratio <= 0.15 in every mode but --deep).

The install is the venv of tests/realwheel.py (real torch 2.13.0 CPU + torch_npu 2.13.0,
with ``libtorch_npu.so`` and its symbol checks), reused when it was already built
(``$TMPDIR/npudoctor-realwheel-<hash>/.complete``); it is never built here (a
multi-hundred-MB download does not belong in a benchmark) -- without it, only the
``--root`` scenario is measured and no ratio is given.

Modes: plain, ``--json``, ``--markdown``, each measured

* warm: npudoctor's caches of parsed file facts (ELF facts, RECORD facts, package-directory
  walks; keyed by path, size and mtime) filled by an earlier run -- no verdict is reused;
* cold: the cache directory emptied before the run (``NPUDOCTOR_CACHE_DIR`` points into a
  temporary directory, so the user's cache is never touched).

``import torch`` runs with ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` (torch >= 2.5 would import
the installed torch_npu, which cannot load without CANN here).  ``check --root`` of
tests/scenarios/health-910b3-8npu-healthy (a whole container) is reported too.  All runs
are interleaved in one session; figures are medians of wall-clock time.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
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
        import realwheel
    except Exception:
        return None
    finally:
        sys.path.pop(0)
    venv = realwheel.cache_dir()
    python = venv / "bin" / "python"
    return python if (venv / ".complete").is_file() and python.exists() else None


def _time(argv: List[str], env: Dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=str(REPO), check=False)
    return time.perf_counter() - start


def run(repeat: int) -> List[str]:
    from benchmarks.health import scenario_env  # scripts/benchmarks/health.py

    tpy = torch_python()
    times: Dict[str, List[float]] = {}
    lines: List[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        scenario = Path(tmp) / SCENARIO.name
        shutil.copytree(SCENARIO, scenario, symlinks=True)
        root_env = dict(scenario_env(scenario), NPUDOCTOR_CACHE_DIR=str(cache), PYTHONPATH=str(REPO))
        root_argv = [sys.executable, "-m", "npudoctor", "check", "--root", str(scenario / "root")]
        live_env = {"PATH": "/usr/bin:/bin", "HOME": tmp, "NPUDOCTOR_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO)}
        torch_error = None
        if tpy is not None:
            torch_env = dict(live_env, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
            torch_argv = [str(tpy), "-c", "import torch"]
            warm = subprocess.run(torch_argv, env=torch_env, capture_output=True, text=True, check=False)
            if warm.returncode != 0:
                torch_error = (warm.stderr.strip().splitlines() or ["?"])[-1]
        live = tpy is not None and torch_error is None
        _time(root_argv, root_env)  # bytecode and caches in place before the first timed run
        for _ in range(repeat):
            times.setdefault("root", []).append(_time(root_argv, root_env))
            if not live:
                continue
            times.setdefault("torch", []).append(_time(torch_argv, torch_env))
            for mode, extra in MODES:
                argv = [sys.executable, "-m", "npudoctor", "check", "--python", str(tpy), *extra]
                shutil.rmtree(cache, ignore_errors=True)
                times.setdefault(f"{mode} cold", []).append(_time(argv, live_env))
                times.setdefault(f"{mode} warm", []).append(_time(argv, live_env))
    lines.append(f"{repeat} interleaved runs each; medians of wall-clock time")
    lines.append(f"check --root {SCENARIO.name}  {median(times['root']) * 1000:7.1f} ms")
    if not live:
        why = torch_error or "the tests/realwheel.py venv is not built here"
        lines.append(f"import torch: {why}; check --python not measured")
        return lines
    med_torch = median(times["torch"])
    lines.append(f'python -c "import torch"  {med_torch * 1000:7.1f} ms  ({tpy}, TORCH_DEVICE_BACKEND_AUTOLOAD=0)')
    met = True
    for mode, _extra in MODES:
        for state in ("warm", "cold"):
            med = median(times[f"{mode} {state}"])
            ratio = med / med_torch
            if state == "warm":
                met = met and ratio <= TARGET_RATIO
            lines.append(f"check --python {mode:<10} {state}  {med * 1000:7.1f} ms  = {ratio:.3f}x import torch")
    verdict = "met" if met else "NOT met"
    lines.append(f"target: warm (no verdict reused) <= {TARGET_RATIO:g}x in every mode: {verdict}")
    return lines
