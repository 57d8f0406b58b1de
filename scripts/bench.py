#!/usr/bin/env python3
"""The one benchmark entry point: ``python scripts/bench.py [NAME ...] [--repeat N]``.

Each sub-benchmark is a module ``scripts/benchmarks/<name>.py`` with
``run(repeat: int) -> list[str]`` returning the lines to print (figures with units).
Without names, every sub-benchmark runs.  Timing belongs here, never in tests.
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
BENCH_DIR = HERE / "benchmarks"


def wall_times(argv: Sequence[str], repeat: int, env=None, cwd=None) -> List[float]:
    """Wall-clock seconds of ``repeat`` runs of ``argv`` (output discarded)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd, check=False)
        times.append(time.perf_counter() - start)
    return times


class Run(NamedTuple):
    """One measured run: wall seconds, CPU seconds (user + system of the process and the
    children it waited for) and its peak resident set (KiB)."""

    wall: float
    cpu: float
    maxrss_kib: int


def measure(argv: Sequence[str], env=None, cwd=None) -> Run:
    """Run ``argv`` once (output discarded) and measure it through ``wait4``: the rusage of
    that child alone, so that runs measured one after another never mix."""
    start = time.perf_counter()
    proc = subprocess.Popen(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    _pid, _status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = 0  # reaped above
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss)


def rounds(
    commands: Dict[str, Tuple[Sequence[str], Optional[dict], Optional[str]]], repeat: int
) -> Dict[str, List[Run]]:
    """``repeat`` rounds of one run of each ``name: (argv, env, cwd)``, the order rotated by
    one each round (so that no command always runs after the same one, into the same cache
    state or load); the runs of each command in round order."""
    names = list(commands)
    out: Dict[str, List[Run]] = {name: [] for name in names}
    for r in range(repeat):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            argv, env, cwd = commands[name]
            out[name].append(measure(argv, env=env, cwd=cwd))
    return out


def launcher(directory: Path, repo: Path, python: str = sys.executable) -> Path:
    """The console script pip writes for ``npudoctor`` (its launcher body), with ``repo``
    first on ``sys.path``; a file in ``directory``."""
    path = directory / "npudoctor"
    path.write_text(
        f"#!{python}\nimport re\nimport sys\nsys.path.insert(0, {str(repo)!r})\n"
        "from npudoctor.entry import run\n"
        "if __name__ == '__main__':\n"
        "    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
        "    sys.exit(run())\n"
    )
    path.chmod(0o755)
    return path


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH_DIR / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main(argv=None) -> int:
    available = sorted(p.stem for p in BENCH_DIR.glob("*.py") if not p.stem.startswith("_"))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"sub-benchmarks (default: all of {', '.join(available)})")
    parser.add_argument("--repeat", type=int, default=15, help="runs per measured command (default 15)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE))
    # Users run an install with bytecode (pip compiles it; the image compiles the standard
    # library too): compile this checkout first, even where PYTHONDONTWRITEBYTECODE is set,
    # or every measured start-up would include compiling npudoctor.
    compileall.compile_dir(str(HERE.parent / "npudoctor"), quiet=1)
    for name in args.names or available:
        if name not in available:
            parser.error(f"unknown benchmark {name!r}")
        print(f"== {name}")
        for line in _load(name).run(args.repeat):
            print(f"   {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
