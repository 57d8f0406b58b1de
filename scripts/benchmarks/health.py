"""``npudoctor health`` on a healthy container (issue 5: median <= 8x ``python -c pass``).

The scenario is tests/scenarios/health-910b3-8npu-healthy (8 x 910B3, CANN 8.0.0
sourced, torch_npu 2.1.0.post10), copied to a temporary directory; its ``bin/npu-smi``
answers at once by printing the real capture.  Measured in one run, interleaved so that
machine load hits all three alike: ``<python> -c pass`` (the floor: interpreter start),
``<python> -m npudoctor health --root R`` and ``<python> -m npudoctor check --root R``,
``<python>`` being ``sys.executable`` (the real interpreter, not a pyenv shim).  Also
reported: where a health run spends its time (the quick probes, the matrix and the
judging, from ``health --json``'s own clock and ``-X importtime``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

from bench import median

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "tests" / "scenarios" / "health-910b3-8npu-healthy"
TARGET_RATIO = 8.0


def scenario_env(scenario: Path) -> Dict[str, str]:
    try:
        import tomllib
    except ImportError:  # pragma: no cover
        import tomli as tomllib  # type: ignore[no-redef]
    spec = tomllib.loads((scenario / "scenario.toml").read_text(encoding="utf-8"))
    env = {"PATH": f"{scenario / 'bin'}:/usr/bin:/bin"}
    env.update({str(k): str(v) for k, v in spec.get("env", {}).items()})
    return env


def interleaved(commands: Dict[str, List[str]], repeat: int, env: Dict[str, str]) -> Dict[str, List[float]]:
    """Wall seconds of each command, ``repeat`` rounds, one run of each per round."""
    times: Dict[str, List[float]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, argv in commands.items():
            start = time.perf_counter()
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
            times[name].append(time.perf_counter() - start)
    return times


def importtime(argv: List[str], env: Dict[str, str], top: int = 6) -> List[str]:
    """The npudoctor modules (and heavy third-party ones) with the largest cumulative import time."""
    proc = subprocess.run(argv, env=dict(env, PYTHONPROFILEIMPORTTIME="1"), capture_output=True, text=True)
    rows = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _self_us, cum_us, raw = line[len("import time:") :].split("|")
        name = raw.strip()
        if (name.startswith("npudoctor.") and name.count(".") <= 2) or name in ("tomllib", "packaging.specifiers"):
            rows.append((int(cum_us), name))
    rows.sort(reverse=True)
    return [f"{name} {us / 1000:.0f} ms" for us, name in rows[:top]]


def run(repeat: int) -> List[str]:
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        scenario = Path(tmp) / SCENARIO.name
        shutil.copytree(SCENARIO, scenario, symlinks=True)
        root = str(scenario / "root")
        env = scenario_env(scenario)
        health = [py, "-m", "npudoctor", "health", "--root", root, "--timeout", "10"]
        check = [py, "-m", "npudoctor", "check", "--root", root]
        first = subprocess.run(health, env=env, capture_output=True, text=True)
        status = first.stdout.strip().splitlines()[:1]
        times = interleaved({"pass": [py, "-c", "pass"], "health": health, "check": check}, repeat, env)
        doc = json.loads(subprocess.run(health + ["--json"], env=env, capture_output=True, text=True).stdout)
        imports = importtime(health, env)
    floor, med_h, med_c = median(times["pass"]), median(times["health"]), median(times["check"])
    ratio = med_h / floor
    verdict = "met" if ratio <= TARGET_RATIO else "NOT met"
    return [
        f"interpreter: {py}; scenario: {SCENARIO.name}; {repeat} interleaved runs each",
        f"health output: {status[0] if status else '(none)'} (exit {first.returncode})",
        f"python -c pass   median {floor * 1000:7.1f} ms",
        f"npudoctor health median {med_h * 1000:7.1f} ms  = {ratio:.1f}x python -c pass "
        f"(target <= {TARGET_RATIO:g}x: {verdict})",
        f"npudoctor check  median {med_c * 1000:7.1f} ms  = {med_c / floor:.1f}x python -c pass; "
        f"health = {med_h / med_c:.2f}x check",
        f"health's own clock (probes + matrix + rules, imports inside the budget): {doc.get('duration_s')} s",
        "largest imports on the health path (cumulative): " + "; ".join(imports),
    ]
