"""``npudoctor check --root <full scenario>`` against ``python -c "import torch"`` (target:
median ratio <= 0.2, i.e. diagnosing the stack costs a fifth of merely importing torch).

The scenario is tests/scenarios/health-910b3-8npu-healthy (a whole container: CANN 8.0.0
toolkit with kernels and set_env.sh, driver, 8 x 910B3 npu-smi capture, torch 2.1.0 +
torch_npu 2.1.0.post10 and CANN's Python dependencies).  ``import torch`` runs in the
venv of tests/realwheel.py (real torch 2.13.0 CPU wheel), reused when it was already
built (``$TMPDIR/npudoctor-realwheel-<hash>/.complete``); it is never built here (a
multi-hundred-MB download does not belong in a benchmark) -- without it, only the check
time is reported and the ratio is skipped.  Runs are interleaved in one session.
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
TARGET_RATIO = 0.2


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


def run(repeat: int) -> List[str]:
    from benchmarks.health import scenario_env  # scripts/benchmarks/health.py

    tpy = torch_python()
    with tempfile.TemporaryDirectory() as tmp:
        scenario = Path(tmp) / SCENARIO.name
        shutil.copytree(SCENARIO, scenario, symlinks=True)
        env = scenario_env(scenario)
        commands: Dict[str, List[str]] = {
            "check": [sys.executable, "-m", "npudoctor", "check", "--root", str(scenario / "root")]
        }
        envs = {"check": env}
        torch_error = None
        if tpy is not None:
            commands["torch"] = [str(tpy), "-c", "import torch"]
            # torch >= 2.5 auto-imports installed device backends; the venv's torch_npu
            # cannot load without CANN here, so the baseline is torch alone.
            envs["torch"] = dict(env, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
            warm = subprocess.run(commands["torch"], env=envs["torch"], capture_output=True, text=True, check=False)
            if warm.returncode != 0:
                torch_error = (warm.stderr.strip().splitlines() or ["?"])[-1]
                del commands["torch"]
        times: Dict[str, List[float]] = {name: [] for name in commands}
        for _ in range(repeat):
            for name, argv in commands.items():
                start = time.perf_counter()
                subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=envs[name], check=False)
                times[name].append(time.perf_counter() - start)
    med_check = median(times["check"])
    lines = [
        f"scenario: {SCENARIO.name}; {repeat} interleaved runs each",
        f"npudoctor check --root  median {med_check * 1000:7.1f} ms",
    ]
    if tpy is None or torch_error:
        why = torch_error or "the tests/realwheel.py venv is not built here"
        lines.append(f"import torch: {why}; ratio not measured")
        return lines
    med_torch = median(times["torch"])
    ratio = med_check / med_torch
    verdict = "met" if ratio <= TARGET_RATIO else "NOT met"
    lines += [
        f'python -c "import torch"  median {med_torch * 1000:7.1f} ms  ({tpy}, TORCH_DEVICE_BACKEND_AUTOLOAD=0)',
        f"ratio check / import torch = {ratio:.2f} (target <= {TARGET_RATIO:g}: {verdict})",
    ]
    return lines
