"""Triage throughput and peak memory on a large synthetic log.

The log is generated on the fly into a temporary file: 256 MiB by default, or the size in
MiB given by ``NPUDOCTOR_BENCH_TRIAGE_MB`` (e.g. 1024 for the 1 GB run).  Lines are typical
training output with an error line (a known signature or an unknown error) every 1,000
lines and a few overlong lines mixed in.  The triage runs in a child process (``npudoctor
triage --no-facts --json``) whose peak RSS is read from ``getrusage(RUSAGE_CHILDREN)``:
bounded memory is the point.  The same file is counted with the multi-pattern
``grep -c -E -i`` of issue 17 (when grep is installed); the ratio of the two is the figure
recorded in docs/performance.md (target: at most 10x).  The machine may be shared: each round
runs grep and triage back to back and the ratio reported is the median of the rounds' ratios.
The same log compressed with gzip is triaged once more, in a child that reports its own peak
RSS: a compressed log is read as a stream under the same bounds (issue 28).
``NPUDOCTOR_BENCH_BASELINE=DIR`` (a checkout of an earlier commit) adds that checkout's console
script to the 1 MiB rounds and its start-up work, interleaved with this one's.
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import List

#: The checkout this benchmark belongs to (measured, whatever npudoctor the interpreter has).
REPO = Path(__file__).resolve().parents[2]

_LINES = [
    b"[INFO] 2025-08-05 10:00:00 step 1200/90000 loss=1.2345 lr=2.0e-05 grad_norm=0.98 tokens/s=12345\n",
    b"INFO 08-05 10:00:01 [engine.py:448] Avg prompt throughput: 12.3 tokens/s, generation: 45.6 tokens/s\n",
    b"[W compiler_depend.ts:123] Warning: something harmless happened (function operator())\n",
]
_RARE = [
    b"RuntimeError: SetPrecisionMode: NPU function error: AclSetCompileopt(aclCompileOpt::ACL_PRECISION_MODE, precision_mode), error code is 500001\n",
    b"[ERROR] HCCL(1234,python):2025-01-01-00:00:00.000.000 [transport.cc:1] Communication_Error_Get_Socket(EI0006)\n",
    b"RuntimeError: worker %d died unexpectedly\n",
]


#: The multi-pattern grep triage is compared with (issue 17).
GREP = ["grep", "-c", "-E", "-i", "error|fail|E[EHIZ][0-9]{4}|ERR[0-9]{5}|50[0-9]{4}|not found|undefined symbol"]


def _generate(path: str, size: int) -> int:
    block = bytearray()
    for i, rare in enumerate(_RARE):
        for j in range(999):
            block += _LINES[j % len(_LINES)]
        block += rare.replace(b"%d", str(i).encode())
    written = 0
    with open(path, "wb") as fh:
        n = 0
        while written < size:
            fh.write(block)
            written += len(block)
            n += 1
            if n % 500 == 0:
                fh.write(b"x" * (3 << 20) + b"\n")
                written += 3 << 20
    return written


def _time(argv: List[str], stdout: int) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=stdout, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def _startup(rounds: int = 5) -> List[str]:
    """Start-up work of a triage, in a fresh interpreter, as CPU time (steady on a loaded
    machine): importing the triage modules (``npudoctor.findings``, which every command
    imports, is loaded first and not counted), then loading the signatures and compiling the
    gate (no log read).  Best and median of ``rounds`` interpreters, with this checkout first on
    ``sys.path``; with ``NPUDOCTOR_BENCH_BASELINE`` (another checkout) that one's too, the two
    alternating in each round."""
    code = (
        "import time; c=time.process_time; import npudoctor.findings; t0=c(); "
        "import npudoctor.triage; from npudoctor.triage.scan import Scanner; t1=c(); "
        "from npudoctor.knowledge.signatures import load_kb; Scanner(load_kb()); t2=c(); "
        "print(t1-t0, t2-t1)"
    )
    trees = {"this checkout": str(REPO)}
    baseline = os.environ.get("NPUDOCTOR_BENCH_BASELINE")
    if baseline:
        trees["baseline " + baseline] = baseline
    runs: dict = {name: [] for name in trees}
    for i in range(rounds):
        order = list(trees.items())
        for name, tree in order if i % 2 == 0 else order[::-1]:
            env = dict(os.environ, PYTHONPATH=tree)
            argv = [sys.executable, "-c", code]
            out = subprocess.run(argv, capture_output=True, text=True, check=True, env=env, cwd=tree).stdout
            imports, work = (float(x) for x in out.split())
            runs[name].append((imports + work, imports, work))
    lines = []
    for name, got in runs.items():
        total, imports, work = min(got)
        med = statistics.median(r[0] for r in got)
        lines.append(
            f"start-up work (CPU, best of {rounds}), {name}: {total * 1000:.1f} ms = importing the triage modules "
            f"{imports * 1000:.1f} ms + loading the signatures and compiling the gate {work * 1000:.1f} ms; "
            f"median {med * 1000:.1f} ms"
        )
    return lines


def _gzip_run(path: str) -> str:
    """Triage ``path`` compressed with gzip (level 1) in a child that prints its own peak RSS."""
    import gzip

    gz = path + ".gz"
    with open(path, "rb") as src, gzip.open(gz, "wb", compresslevel=1) as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    code = (
        "import resource,sys;from npudoctor.cli.commands.triage import run_triage;"
        "from npudoctor.session.request import MachineRequest;"
        f"run_triage([{gz!r}],MachineRequest(json=True),no_facts=True);"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,file=sys.stderr)"
    )
    try:
        start = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stderr
        wall = time.perf_counter() - start
        packed = os.path.getsize(gz)
    finally:
        os.unlink(gz)
    peak = int(out.strip().splitlines()[-1]) / 1024
    return f"the same log gzip-compressed ({packed / (1 << 20):.0f} MiB): triage {wall:.2f} s, peak RSS {peak:.1f} MiB"


def _small(repeat: int) -> List[str]:
    """The usual paste: a 1 MiB log triaged by the console script pip writes, against the
    multi-pattern grep and ``python -c pass`` in rotated rounds (``bench.rounds``); the
    ratio to grep and the CPU time beyond the interpreter's own start."""
    from bench import launcher, rounds

    baseline = os.environ.get("NPUDOCTOR_BENCH_BASELINE")
    with tempfile.TemporaryDirectory(prefix="npudoctor-bench-triage-") as tmp:
        path = os.path.join(tmp, "train.log")
        _generate(path, 1 << 20)
        npd = str(launcher(Path(tmp), REPO))
        commands = {
            "pass": ([sys.executable, "-c", "pass"], None, None),
            "grep": (GREP + [path], None, None),
            "triage": ([npd, "triage", path, "--no-facts", "--json"], None, None),
        }
        if baseline:  # the same console script over the other checkout, in the same rounds
            os.mkdir(os.path.join(tmp, "baseline"))
            base = str(launcher(Path(tmp) / "baseline", Path(baseline)))
            commands["baseline"] = ([base, "triage", path, "--no-facts", "--json"], None, None)
        if shutil.which("grep") is None:
            del commands["grep"]
        runs = rounds(commands, max(5, repeat))
    tri, floor = runs["triage"], runs["pass"]
    lines = [
        f"1 MiB log, {len(tri)} rounds (order rotated), console script: triage median "
        f"{statistics.median(r.wall for r in tri) * 1000:.0f} ms wall, "
        f"{statistics.median(r.cpu for r in tri) * 1000:.0f} ms CPU; python -c pass "
        f"{statistics.median(r.cpu for r in floor) * 1000:.0f} ms CPU",
    ]
    if "baseline" in runs:
        base = runs["baseline"]
        lines.append(
            f"baseline {baseline}, same rounds: triage median {statistics.median(r.wall for r in base) * 1000:.0f} ms"
            f" wall, {statistics.median(r.cpu for r in base) * 1000:.0f} ms CPU (min {min(r.cpu for r in base) * 1000:.0f};"
            f" this checkout's min {min(r.cpu for r in tri) * 1000:.0f})"
        )
    if "grep" in runs:
        grep = runs["grep"]
        lines.append(
            f"1 MiB triage/grep, median of paired rounds: {statistics.median(t.wall / g.wall for t, g in zip(tri, grep)):.1f}x"
            f" wall (target <= 10x); grep {statistics.median(r.wall for r in grep) * 1000:.0f} ms"
        )
    return lines


def run(repeat: int) -> List[str]:
    """Paired runs: each round times grep and triage back to back on the same file, so both
    see the same load; the figure is the median of the per-round ratios.  The 1 MiB case
    first; ``NPUDOCTOR_BENCH_TRIAGE_MB=0`` measures only it."""
    small = _small(repeat)
    size = int(os.environ.get("NPUDOCTOR_BENCH_TRIAGE_MB", "256")) << 20
    if not size:
        return small + _startup(max(5, repeat * 3))
    fd, path = tempfile.mkstemp(prefix="npudoctor-bench-", suffix=".log")
    os.close(fd)
    try:
        written = _generate(path, size)
        rounds = max(1, min(repeat, 7))
        triage = [sys.executable, "-m", "npudoctor", "triage", path, "--no-facts", "--json"]
        have_grep = shutil.which("grep") is not None
        times, greps, ratios = [], [], []
        for _ in range(rounds):
            # grep's stdout is a pipe, not /dev/null: GNU grep stops at the first match on /dev/null
            g = _time(GREP + [path], subprocess.PIPE) if have_grep else 0.0
            t = _time(triage, subprocess.DEVNULL)
            times.append(t)
            if have_grep:
                greps.append(g)
                ratios.append(t / g)
        peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        med = statistics.median(times)
        lines = [
            f"log size: {written / (1 << 20):.0f} MiB (set NPUDOCTOR_BENCH_TRIAGE_MB=1024 for 1 GiB)",
            f"triage wall time (median of {rounds}): {med:.2f} s ({written / (1 << 20) / med:.0f} MiB/s)",
        ]
        if have_grep:
            lines += [
                f"multi-pattern grep -c -E -i (median of {rounds}): {statistics.median(greps):.2f} s",
                f"triage/grep, median of {rounds} paired rounds: {statistics.median(ratios):.1f}x "
                f"(rounds: {', '.join(f'{r:.1f}' for r in ratios)})",
            ]
        else:
            lines.append("grep not installed: no comparison")
        lines += [f"peak RSS of the child processes: {peak_mib:.1f} MiB", _gzip_run(path)] + _startup()
        if hasattr(os, "getloadavg"):
            lines.append(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        return small + lines
    finally:
        os.unlink(path)
