"""``npudoctor health`` on a vLLM-sized container: median <= 12x ``python -c pass`` with
320 installed distributions and 8 NPUs, flat as distributions grow (at 1,000 within 15 % of
the time at 100, and within 10 % of the time with only the scenario's own distributions).
Every run judges anew (health keeps nothing between runs by default).

The tree is tests/scenarios/health-910b3-8npu-healthy (8 x 910B3, CANN 8.0.0 sourced,
torch_npu 2.1.0.post10; its ``bin/npu-smi`` prints the real capture at once), copied to a
temporary directory four times, with real ``*.dist-info`` directories (METADATA with
requirements, WHEEL, INSTALLER, RECORD, top_level.txt) added to its site-packages until it
holds 100, 320 and 1,000 distributions (none added to the first copy).  Measured in one
run, interleaved so that machine load hits all alike: ``<python> -c pass`` (the floor:
interpreter start) and ``npudoctor health --root R`` on each tree -- the console script as
Docker's HEALTHCHECK runs it (a launcher like the one pip writes, with this checkout first
on ``sys.path``; ``-m`` adds runpy's start-up).  ``NPUDOCTOR_BENCH_BASELINE=/path/to/other/checkout`` adds that
checkout's health on the 320-distribution tree to the same rounds (before/after).  Also
reported: health's own clock and where its imports go (``-X importtime``).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from bench import median

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "tests" / "scenarios" / "health-910b3-8npu-healthy"
SITE = "usr/local/lib/python3.10/site-packages"
TARGET_RATIO = 12.0
#: Installed distributions of the measured trees (0: the scenario's own); the ratio is judged
#: at 320.
SIZES = (0, 100, 320, 1000)
MID = 320
#: Largest growth of the median from one tree to the largest: ``{smaller: fraction}``.
FLATNESS = {100: 0.15, 0: 0.10}


def scenario_env(scenario: Path) -> Dict[str, str]:
    try:
        import tomllib
    except ImportError:  # pragma: no cover
        import tomli as tomllib  # type: ignore[no-redef]
    spec = tomllib.loads((scenario / "scenario.toml").read_text(encoding="utf-8"))
    env = {"PATH": f"{scenario / 'bin'}:/usr/bin:/bin"}
    env.update({str(k): str(v) for k, v in spec.get("env", {}).items()})
    return env


def add_distributions(site: Path, total: int) -> int:
    """Add ``bench-dep-NNNN`` distributions to ``site`` until it holds ``total`` ``*.dist-info``
    directories; each requires two others (one behind an environment marker), like a real
    dependency tree.  Returns the number added."""
    have = sum(1 for p in site.iterdir() if p.name.endswith(".dist-info"))
    added = max(0, total - have)
    for i in range(added):
        name, version = f"bench-dep-{i:04d}", f"1.{i % 7}.{i % 13}"
        info = site / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        requires = [f"Requires-Dist: bench-dep-{(i * 7 + 1) % added:04d}>=1.0"]
        requires.append(f'Requires-Dist: bench-dep-{(i * 13 + 5) % added:04d}; python_version < "3.8"')
        (info / "METADATA").write_text(
            "Metadata-Version: 2.1\n"
            f"Name: {name}\nVersion: {version}\n"
            f"Summary: dependency {i} of a vLLM-sized environment (npudoctor benchmark)\n"
            "License: Apache-2.0\nRequires-Python: >=3.8\n"
            + "\n".join(requires)
            + "\n\n"
            + "A long description, as most distributions carry one.\n" * 20,
            encoding="utf-8",
        )
        (info / "WHEEL").write_text(
            "Wheel-Version: 1.0\nGenerator: bdist_wheel (0.42.0)\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        (info / "INSTALLER").write_text("pip\n")
        (info / "top_level.txt").write_text(f"{name.replace('-', '_')}\n")
        package = site / name.replace("-", "_")
        package.mkdir()
        (package / "__init__.py").write_text(f"__version__ = {version!r}\n")
        (info / "RECORD").write_text(
            f"{package.name}/__init__.py,,\n{info.name}/METADATA,,\n{info.name}/WHEEL,,\n{info.name}/RECORD,,\n"
        )
    return added


def make_tree(base: Path, total: int) -> Path:
    """A copy of the scenario under ``base`` with ``total`` distributions installed."""
    scenario = base / f"{SCENARIO.name}-{total}"
    shutil.copytree(SCENARIO, scenario, symlinks=True)
    add_distributions(scenario / "root" / SITE, total)
    return scenario


def interleaved(
    commands: Dict[str, Tuple[List[str], Dict[str, str], Optional[str]]],
    repeat: int,
    cpu: Optional[Dict[str, List[float]]] = None,
) -> Dict[str, List[float]]:
    """Wall seconds of each ``(argv, env, cwd)``, ``repeat`` rounds, one run of each per round.
    With ``cpu``, also the CPU seconds (user + system) of each run, its waited-for children
    included: steadier than wall time on a loaded machine."""
    times: Dict[str, List[float]] = {name: [] for name in commands}
    for name in commands:
        if cpu is not None:
            cpu[name] = []
    for _ in range(repeat):
        for name, (argv, env, cwd) in commands.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd, check=False)
            times[name].append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if cpu is not None:
                used = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
                cpu[name].append(used)
    return times


def importtime(argv: List[str], env: Dict[str, str], top: int = 6) -> List[str]:
    """The npudoctor modules (and heavy third-party ones) with the largest cumulative import time."""
    proc = subprocess.run(
        argv, env=dict(env, PYTHONPROFILEIMPORTTIME="1"), capture_output=True, text=True, cwd=str(REPO)
    )
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
    baseline = os.environ.get("NPUDOCTOR_BENCH_BASELINE")
    with tempfile.TemporaryDirectory() as tmp:
        trees = {total: make_tree(Path(tmp), total) for total in SIZES}
        runtime = Path(tmp) / "run"  # a private state directory: nothing may be written there
        runtime.mkdir(mode=0o700)
        envs = {total: dict(scenario_env(tree), XDG_RUNTIME_DIR=str(runtime)) for total, tree in trees.items()}
        mid = MID

        launcher = Path(tmp) / "npudoctor"  # what pip writes for the console script
        launcher.write_text(
            f"#!{py}\nimport sys\nsys.path.insert(0, {str(REPO)!r})\nfrom npudoctor.entry import run\nsys.exit(run())\n"
        )
        launcher.chmod(0o755)

        def health(total: int) -> List[str]:
            return [str(launcher), "health", "--root", str(trees[total] / "root"), "--timeout", "10"]

        first = subprocess.run(health(mid), env=envs[mid], capture_output=True, text=True, cwd=str(REPO))
        status = first.stdout.strip().splitlines()[:1]
        commands = {"pass": ([py, "-c", "pass"], envs[mid], None)}
        commands.update({f"health {t}": (health(t), envs[t], str(REPO)) for t in SIZES})
        if baseline:
            # that checkout's own code: -m from its directory (runpy included, see above), with a
            # state directory of its own (what it keeps is not this checkout's)
            other = Path(tmp) / "baseline-run"
            other.mkdir(mode=0o700)
            baseline_env = dict(envs[mid], XDG_RUNTIME_DIR=str(other))
            commands["baseline"] = ([py, "-m", "npudoctor"] + health(mid)[1:], baseline_env, baseline)
        cpu: Dict[str, List[float]] = {}
        times = interleaved(commands, repeat, cpu)
        doc = json.loads(
            subprocess.run(
                health(mid) + ["--json"], env=envs[mid], capture_output=True, text=True, cwd=str(REPO)
            ).stdout
        )
        imports = importtime(health(mid), envs[mid])
        kept = sorted(p.name for p in runtime.iterdir())
    floor = median(times["pass"])
    med = {t: median(times[f"health {t}"]) for t in SIZES}
    # the paired ratio: the median of each round's health / python -c pass (load hits both alike)
    ratio = median([h / p for h, p in zip(times[f"health {mid}"], times["pass"])])
    top = SIZES[-1]
    growth = {small: med[top] / med[small] - 1 for small in FLATNESS}
    lines = [
        f"interpreter: {py}; checkout: {REPO}; scenario: {SCENARIO.name} + bench-dep-* distributions; "
        f"{repeat} interleaved runs each",
        f"health output ({mid} distributions): {status[0] if status else '(none)'} (exit {first.returncode})",
        f"python -c pass            median {floor * 1000:7.1f} ms (CPU {median(cpu['pass']) * 1000:.1f} ms)",
    ]
    for t in SIZES:
        paired = median([h / p for h, p in zip(times[f"health {t}"], times["pass"])])
        cpu_ratio = median(cpu[f"health {t}"]) / median(cpu["pass"])
        lines.append(
            f"health, {t:>5} distributions median {med[t] * 1000:7.1f} ms  = {med[t] / floor:.1f}x python -c pass "
            f"(paired rounds {paired:.1f}x; CPU {median(cpu[f'health {t}']) * 1000:.1f} ms = {cpu_ratio:.1f}x)"
        )
    lines.append(
        f"at {mid} distributions, paired: {ratio:.1f}x (target <= {TARGET_RATIO:g}x: {'met' if ratio <= TARGET_RATIO else 'NOT met'}); "
        + "; ".join(
            f"{top} vs {small}: {growth[small] * 100:+.1f} % (target within {limit * 100:.0f} %: "
            f"{'met' if abs(growth[small]) <= limit else 'NOT met'})"
            for small, limit in FLATNESS.items()
        )
    )
    if baseline:
        before = median(times["baseline"])
        lines.append(
            f"baseline {baseline}: median {before * 1000:.1f} ms = {before / floor:.1f}x at {mid} distributions; "
            f"this checkout saves {(before - med[mid]) * 1000:.1f} ms"
        )
    lines += [
        f"health's own clock: {doc.get('duration_s')} s",
        "files kept between runs: " + (", ".join(kept) if kept else "none"),
        "largest imports of a health run (cumulative): " + "; ".join(imports),
    ]
    return lines
