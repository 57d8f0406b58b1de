#!/usr/bin/env python3
"""The one benchmark entry point: ``python scripts/bench.py [NAME ...] [--repeat N]``.

Each sub-benchmark is a module ``scripts/benchmarks/<name>.py`` with
``run(repeat: int) -> list[str]`` returning the lines to print (figures with units).
Without names, every sub-benchmark runs.  Timing belongs here, never in tests.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import List, Sequence

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
    for name in args.names or available:
        if name not in available:
            parser.error(f"unknown benchmark {name!r}")
        print(f"== {name}")
        for line in _load(name).run(args.repeat):
            print(f"   {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
