"""Installs without bytecode (target: from the second run on, every command <= 1.5x its figure
in an install with bytecode; the first run is reported beside it, without a target).

Two venvs get this checkout from the same wheels (``pip wheel`` of the repository, its
dependencies downloaded once): one by a plain ``pip install`` (pip compiles every module), one
by ``pip install --no-compile`` (no ``.pyc`` anywhere in its site-packages, npudoctor's and its
dependencies'), whose site-packages is then made read-only with ``chmod -R a-w``.  Root
writes through any mode, so when the benchmark runs as root every measured command (the
compiled venv's and ``python -c pass`` too, so that the pairs stay alike) runs under
``setpriv`` without ``CAP_DAC_OVERRIDE``/``CAP_DAC_READ_SEARCH``: a process that can
write only where the modes let it, like the non-root user of a read-only image.  (Not
``PYTHONDONTWRITEBYTECODE=1``: that is a user's explicit choice, which npudoctor keeps.)

Measured, each through the venv's own ``npudoctor`` console script (the one pip wrote):
``--version``, ``explain PKG007``, ``devices`` and ``health`` on
tests/scenarios/health-910b3-8npu-healthy (8 x 910B3; its ``npu-smi`` prints the real capture,
as in the ``cli`` benchmark).  Per round, in an order rotated by one each round:
``python -c pass``, each command in the compiled venv, in the read-only venv with a ``HOME``
used before ("warm": the second run on), and in the read-only venv with a new empty ``HOME``
("first run": nothing cached).  Ratios: the median of the rounds' paired wall ratios (read-only
over compiled), and the median CPU time over the compiled one's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Tuple

from bench import Run, measure, median

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "tests" / "scenarios" / "health-910b3-8npu-healthy"
TARGET = 1.5
#: Capabilities that let root write whatever the modes say; dropped for the measured runs.
_DAC = "-dac_override,-dac_read_search"


def _as_user() -> List[str]:
    """The prefix that makes a command honour file modes: nothing for a non-root user."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        raise SystemExit("bytecode benchmark: running as root needs setpriv (util-linux) to drop CAP_DAC_OVERRIDE")
    return ["setpriv", f"--bounding-set={_DAC}", f"--inh-caps={_DAC}"]


def _venv(base: Path, name: str, wheels: Path, compile_: bool) -> Path:
    """A venv with npudoctor installed from ``wheels``; ``compile_=False``: ``--no-compile``."""
    venv = base / name
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    flags = [] if compile_ else ["--no-compile"]
    python = str(venv / "bin" / "python")
    _pip(["--python", python, "install", "--no-index", "--find-links", str(wheels), *flags, "npudoctor"])
    return venv


def _pip(args: List[str]) -> None:
    """Run pip quietly; its output is shown only when it fails."""
    proc = subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"bytecode benchmark: pip {' '.join(args)} failed:\n{proc.stdout}{proc.stderr}")


def _site(venv: Path) -> Path:
    (site,) = venv.glob("lib/python*/site-packages")
    return site


def _pyc_files(top: Path) -> int:
    return sum(1 for _ in top.rglob("*.pyc"))


def _set_writable(top: Path, writable: bool) -> None:
    for path in [top, *top.rglob("*")]:
        if path.is_symlink():
            continue
        mode = path.stat().st_mode
        path.chmod(mode | 0o200 if writable else mode & ~0o222)


def run(repeat: int) -> List[str]:
    base = Path(tempfile.mkdtemp(prefix="npudoctor-bench-bytecode-"))
    try:
        return _run(base, repeat)
    finally:
        for site in base.glob("*/lib/python*/site-packages"):
            _set_writable(site, True)
        shutil.rmtree(base, ignore_errors=True)


def _run(base: Path, repeat: int) -> List[str]:
    from benchmarks.health import scenario_env  # scripts/benchmarks/health.py

    wheels = base / "wheels"
    _pip(["wheel", "-w", str(wheels), str(REPO)])
    compiled = _venv(base, "compiled", wheels, True)
    bare = _venv(base, "no-compile", wheels, False)
    site = _site(bare)
    assert _pyc_files(site) == 0, "pip install --no-compile left .pyc files"
    _set_writable(site, False)

    scenario = base / SCENARIO.name
    shutil.copytree(SCENARIO, scenario, symlinks=True)
    root = str(scenario / "root")
    env = scenario_env(scenario)
    env["COLUMNS"] = "100"
    runtime = base / "run"
    runtime.mkdir(mode=0o700)
    env["XDG_RUNTIME_DIR"] = str(runtime)
    words: Dict[str, List[str]] = {
        "--version": ["--version"],
        "explain PKG007": ["explain", "PKG007"],
        "devices": ["devices", "--root", root],
        "health": ["health", "--root", root, "--timeout", "10"],
    }
    user = _as_user()
    homes = {"compiled": base / "home-compiled", "warm": base / "home-warm"}
    for home in homes.values():
        home.mkdir()
    cold_homes = base / "homes-first-run"
    cold_homes.mkdir()

    def argv(venv: Path, name: str) -> List[str]:
        return user + [str(venv / "bin" / "npudoctor"), *words[name]]

    commands: Dict[str, Tuple[List[str], str]] = {"pass": (user + [str(compiled / "bin/python"), "-c", "pass"], "")}
    for name in words:
        commands[f"compiled {name}"] = (argv(compiled, name), str(homes["compiled"]))
        commands[f"warm {name}"] = (argv(bare, name), str(homes["warm"]))
        commands[f"first {name}"] = (argv(bare, name), "")  # a new HOME per run
    # the warm HOME's first run, and a check that each command works in both venvs
    statuses: Dict[str, str] = {}
    for name in words:
        for kind, venv in (("compiled", compiled), ("warm", bare)):
            proc = subprocess.run(
                argv(venv, name), env=dict(env, HOME=str(homes[kind])), capture_output=True, text=True, cwd=str(base)
            )
            statuses[f"{kind} {name}"] = f"exit {proc.returncode}"
    kept = _pyc_files(homes["warm"])

    names = list(commands)
    runs: Dict[str, List[Run]] = {n: [] for n in names}
    for r in range(repeat):
        shift = r % len(names)
        for n in names[shift:] + names[:shift]:
            cmd, home = commands[n]
            if not home:
                fresh = Path(tempfile.mkdtemp(dir=cold_homes))
                fresh.chmod(0o755)
                home = str(fresh)
            runs[n].append(measure(cmd, env=dict(env, HOME=home), cwd=str(base)))

    def wall(n: str) -> List[float]:
        return [x.wall for x in runs[n]]

    def cpu(n: str) -> float:
        return median([x.cpu for x in runs[n]])

    floor = median(wall("pass"))
    lines = [
        f"interpreter {sys.executable} ({sys.version.split()[0]}); {repeat} rounds, order rotated; "
        f"as {'root without CAP_DAC_OVERRIDE (setpriv)' if user else 'this user'}; read-only site-packages "
        f"of the --no-compile venv: chmod -R a-w; .pyc kept in the warm HOME: {kept}",
        f"python -c pass median {floor * 1e3:.1f} ms (CPU {cpu('pass') * 1e3:.1f} ms)",
        "exit statuses: " + ", ".join(f"{k} {v}" for k, v in statuses.items()),
    ]
    for name in words:
        base_wall = wall(f"compiled {name}")
        lines.append(
            f"{name:15} compiled {median(base_wall) * 1e3:6.1f} ms ({median(base_wall) / floor:4.1f}x pass, "
            f"CPU {cpu(f'compiled {name}') * 1e3:.1f} ms)"
        )
        for kind in ("warm", "first"):
            n = f"{kind} {name}"
            ratio = median([a / b for a, b in zip(wall(n), base_wall)])
            cpu_ratio = cpu(n) / cpu(f"compiled {name}")
            verdict = f" (target <= {TARGET}x: {'met' if ratio <= TARGET else 'NOT met'})" if kind == "warm" else ""
            label = "second run on" if kind == "warm" else "first run"
            lines.append(
                f"{'':15} no .pyc, {label:13} {median(wall(n)) * 1e3:6.1f} ms = {ratio:4.2f}x compiled{verdict}; "
                f"CPU {cpu_ratio:4.2f}x"
            )
    return lines
