"""Triage throughput and peak memory on a large synthetic log.

The log is generated on the fly into a temporary file: 256 MiB by default, or the size in
MiB given by ``NPUDOCTOR_BENCH_TRIAGE_MB`` (e.g. 1024 for the 1 GB run).  Lines are typical
training output with an error line (a known signature or an unknown error) every 1,000
lines and a few overlong lines mixed in.  The triage runs in a child process (``npudoctor
triage --no-facts --json``) whose peak RSS is read from ``getrusage(RUSAGE_CHILDREN)``:
bounded memory is the point.  The same file is counted with the multi-pattern
``grep -c -E -i`` of issue 17 (when grep is installed); the ratio of the two is the figure
recorded in docs/performance.md (target: at most 10x).
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from typing import List

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


def run(repeat: int) -> List[str]:
    size = int(os.environ.get("NPUDOCTOR_BENCH_TRIAGE_MB", "256")) << 20
    fd, path = tempfile.mkstemp(prefix="npudoctor-bench-", suffix=".log")
    os.close(fd)
    try:
        written = _generate(path, size)
        runs = max(1, min(repeat, 3))
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "npudoctor", "triage", path, "--no-facts", "--json"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )
            times.append(time.perf_counter() - start)
        peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        best = min(times)
        grep_best = None
        if shutil.which("grep"):
            grep_times = []
            for _ in range(runs):
                start = time.perf_counter()
                subprocess.run(
                    GREP + [path], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False
                )  # not DEVNULL: GNU grep then stops at the first match
                grep_times.append(time.perf_counter() - start)
            grep_best = min(grep_times)
        vs_grep = (
            [f"multi-pattern grep -c -E -i (best of {runs}): {grep_best:.2f} s; triage/grep = {best / grep_best:.1f}x"]
            if grep_best
            else ["grep not installed: no comparison"]
        )
        return vs_grep + [
            f"log size: {written / (1 << 20):.0f} MiB (set NPUDOCTOR_BENCH_TRIAGE_MB=1024 for 1 GiB)",
            f"triage wall time (best of {runs}): {best:.2f} s",
            f"throughput: {written / (1 << 20) / best:.1f} MiB/s",
            f"peak RSS of the triage process: {peak_mib:.1f} MiB",
        ]
    finally:
        os.unlink(path)
