"""Peak memory of npudoctor on the hostile inputs of the test suite: target <= 500 MB per run.

Each input is built as large as the bound that should protect against it -- files past each
read cap, snapshots just under the size, value and nesting bounds of ``compare`` and
``check --from`` (and past them), a multi-gigabyte decompression bomb for ``triage``, a
notebook just under ``lint``'s per-file cap, a ``plan verify`` manifest just under its cap
with an unlisted and a sparse 20 GiB wheel, an ``--env-file`` past its cap, a doubling
``set_env.sh``, a fanned-out ``ld.so.conf``, a 1,500-deep directory, symlink loops, and an
``npu-smi`` that floods or never answers -- and the real command (``python -m npudoctor
...``) runs on it in a child, measured through ``os.wait4`` (``ru_maxrss``: the peak resident
set of that child, or of the largest of the children it waited for).  One row per input:
command, input, size, exit status, peak RSS, wall time; a row is flagged when it passes
500 MB, shows a traceback, exits outside the command's documented statuses or runs past
:data:`HANG_S` (then it is killed).

The inputs reuse the trees of the tests: ``tests/scenarios/k10-stale-other-cann`` (as
``tests/test_hostile_files.py`` and ``tests/test_hostile_commands.py`` do) and
``builders.shellscript.write_script`` for the stand-in ``npu-smi``.

Run: ``python scripts/bench.py hostile_memory`` or ``python scripts/benchmarks/hostile_memory.py
[NAME-SUBSTRING ...]`` (only the inputs whose name holds one of them); ``NPUDOCTOR_BENCH_BASELINE=
/path/to/other/checkout`` measures that checkout instead (before/after).  Needs about 3 GB of
free disk for the inputs (a temporary directory, removed at the end).  A benchmark, not a test:
its figures go in docs/performance.md.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))


from builders.shellscript import write_script  # noqa: E402

from npudoctor.host import OUTPUT_LIMIT  # noqa: E402
from npudoctor.hostio import DEFAULT_READ_LIMIT  # noqa: E402
from npudoctor.lint.run import MAX_FILE_BYTES  # noqa: E402
from npudoctor.parsers.ldcache import LD_CONF_MAX_FILES  # noqa: E402
from npudoctor.snapshot import SNAPSHOT_DEPTH, SNAPSHOT_LIMIT, SNAPSHOT_VALUES  # noqa: E402

SCENARIO = REPO / "tests" / "scenarios" / "k10-stale-other-cann"
SITE = "usr/local/python3.11.13/lib/python3.11/site-packages"
CANN = "usr/local/Ascend/cann-8.5.0"
TARGET_MB = 500
#: A run still going after this many seconds is killed and flagged as a hang.
HANG_S = 300.0
MIB = 1 << 20

#: Exit statuses each command documents (README, DESIGN.md): anything else is a defect.
#: 3 is "npudoctor failed" -- documented, but always a defect on these inputs.
DOCUMENTED: Dict[str, Tuple[int, ...]] = {
    "check": (0, 1, 2),
    "collect": (0, 1, 2),
    "devices": (0, 1, 2),
    "env": (0, 1, 2),
    "health": (0, 1),
    "npd": (0, 1, 2),
    "compare": (0, 1, 2),
    "triage": (0, 1, 2),
    "lint": (0, 1, 2),
    "plan": (0, 1, 2),
    "exec": (0, 1, 2),
}


@dataclass(frozen=True)
class Case:
    """One hostile input: a name, what it is, and a builder that makes it under a work
    directory and returns ``(argv after 'python -m npudoctor', PATH prefix, bytes built)``."""

    name: str
    what: str
    build: Callable[[Path], Tuple[List[str], Optional[Path], int]]
    #: whether the environment is the scenario's, with CANN's set_env.sh already sourced;
    #: ``False`` runs with a bare PATH, so that the set_env.sh files are evaluated
    sourced: bool = True


@dataclass(frozen=True)
class Result:
    rc: Optional[int]
    maxrss_kib: int
    wall: float
    traceback: bool
    hung: bool
    #: the first line of standard output (health's verdict)
    first: str


# ------------------------------------------------------------------ builders
def _root(work: Path) -> Path:
    root = work / "root"
    shutil.copytree(SCENARIO / "root", root, symlinks=True)
    return root


def _garbled(path: Path, size: int, rng: random.Random) -> None:
    """``size`` bytes of garbage (random bytes with a few newlines) at ``path``, replacing a
    file or symlink there."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or path.exists():
        path.unlink()
    block = bytes(rng.getrandbits(8) for _ in range(1 << 16))
    with open(path, "wb") as fh:
        for _ in range(size >> 16):
            fh.write(block)


def _sparse(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or path.exists():
        path.unlink()
    with open(path, "wb") as fh:
        fh.truncate(size)


#: Where :func:`build_deep_and_loops` makes its 1,500-deep chains (under ``root``).
DEEP = (f"{SITE}/deep", f"{CANN}/lib64/deep")


def _remove_deep(top: Path) -> None:
    """Remove a chain of ``d`` directories under ``top`` bottom-up without recursion
    (``shutil.rmtree`` recurses once per level)."""
    if not top.is_dir():
        return
    cwd = os.getcwd()
    try:
        os.chdir(top)
        depth = 0
        while os.path.isdir("d"):
            os.chdir("d")
            depth += 1
        for _ in range(depth):
            os.chdir("..")
            os.rmdir("d")
    finally:
        os.chdir(cwd)


def _tree_bytes(top: Path) -> int:
    """Bytes on disk under ``top``, walked with a stack (os.walk recurses once per level)."""
    total, stack = 0, [str(top)]
    while stack:
        with contextlib.suppress(OSError), os.scandir(stack.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                else:
                    total += entry.stat(follow_symlinks=False).st_blocks * 512
    return total


#: Files the probes read, each replaced by garbage past every read cap (the placements of
#: tests/test_hostile_files.py).
GARBLED = [
    "etc/passwd",
    "etc/group",
    "etc/hccn.conf",
    "etc/os-release",
    "etc/ld.so.cache",
    "etc/ld.so.conf",
    "usr/local/Ascend/driver/version.info",
    f"{CANN}/x86_64-linux/ascend_toolkit_install.info",
    f"{CANN}/set_env.sh",
    f"{SITE}/torch_npu-2.1.0.post10.dist-info/METADATA",
    f"{SITE}/torch_npu-2.1.0.post10.dist-info/RECORD",
    f"{SITE}/torch-2.1.0.dist-info/WHEEL",
    f"{SITE}/distutils-precedence.pth",
]
#: Shared libraries replaced by garbage ELF-sized files (the ELF reader's input).
GARBLED_LIBS = [
    f"{CANN}/lib64/libascendcl.so",
    f"{SITE}/torch_npu/_C.cpython-311-x86_64-linux-gnu.so",
    f"{SITE}/torch_npu/lib/libtorch_npu.so",
    f"{SITE}/torch/lib/libc10.so",
]


def build_garbled(work: Path) -> Tuple[List[str], Optional[Path], int]:
    root = _root(work)
    rng = random.Random(32)
    size = 16 * DEFAULT_READ_LIMIT  # 16 times the Host's default read cap
    for rel in GARBLED:
        _garbled(root / rel, size, rng)
    for rel in GARBLED_LIBS:
        _garbled(root / rel, 4 * size, rng)
    return ["check", "--root", str(root), "--json"], None, _tree_bytes(root)


def build_garbled_collect(work: Path) -> Tuple[List[str], Optional[Path], int]:
    argv, bin_dir, size = build_garbled(work)
    return ["collect", "--root", argv[2], "-o", str(work / "snapshot.json")], bin_dir, size


def build_deep_and_loops(work: Path) -> Tuple[List[str], Optional[Path], int]:
    """A 1,500-deep directory in site-packages and in the CANN tree, symlink loops (a
    self-loop, a two-link cycle, a link to its own parent) where libraries and info files
    are looked for."""
    root = _root(work)
    for rel in DEEP:
        top = root / rel
        os.makedirs(top)
        cwd = os.getcwd()
        os.chdir(top)
        try:
            for _ in range(1500):
                os.mkdir("d")
                os.chdir("d")
        finally:
            os.chdir(cwd)
    for rel in ("usr/local/Ascend/driver/version.info", f"{CANN}/lib64/libloop.so", "etc/os-release"):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() or path.is_symlink():
            path.unlink()
        path.symlink_to(path.name)  # ELOOP
    (root / CANN / "lib64" / "a.so").symlink_to("b.so")
    (root / CANN / "lib64" / "b.so").symlink_to("a.so")
    (root / SITE / "up").symlink_to("..")
    (root / CANN / "lib64" / "up").symlink_to("..")
    return ["check", "--root", str(root), "--json"], None, _tree_bytes(root)


def _doubling_set_env(root: Path) -> int:
    """A set_env.sh doubling one value 40 times, then copying a 128 KiB value (just under
    the per-value bound) into 1,000 variables and onto the library path (past the bound on
    the total built)."""
    text = (
        "export A=x\n"
        + "export A=$A$A\n" * 40
        + "export B=x\n"
        + "export B=$B$B\n" * 17
        + "".join(f"export C{i}=$B\nexport LD_LIBRARY_PATH=$C{i}:$LD_LIBRARY_PATH\n" for i in range(1000))
    )
    path = root / CANN / "set_env.sh"
    if path.is_symlink() or path.exists():
        path.unlink()
    path.write_text(text)
    for rel in ("usr/local/Ascend/ascend-toolkit/set_env.sh", "usr/local/Ascend/nnal/atb/set_env.sh"):
        other = root / rel
        other.parent.mkdir(parents=True, exist_ok=True)
        if other.is_symlink() or other.exists():
            other.unlink()
        other.write_text(text)
    return len(text)


def _doubling(command: List[str]) -> Callable[[Path], Tuple[List[str], Optional[Path], int]]:
    def build(work: Path) -> Tuple[List[str], Optional[Path], int]:
        root = _root(work)
        size = _doubling_set_env(root)
        argv = [command[0], "--root", str(root), *command[1:]]
        if command[0] == "exec":
            argv = ["exec", "--root", str(root), "--", "/bin/true"]
        return argv, None, size

    return build


def build_ld_fanout(work: Path) -> Tuple[List[str], Optional[Path], int]:
    """An ld.so.conf whose includes fan out (every file includes the whole directory) past
    the file bound, plus a 4 MiB conf of directory lines."""
    root = _root(work)
    conf_d = root / "etc" / "ld.so.conf.d"
    conf_d.mkdir(parents=True, exist_ok=True)
    for i in range(2 * LD_CONF_MAX_FILES):
        (conf_d / f"f{i:04d}.conf").write_text("include /etc/ld.so.conf.d/*.conf\n/usr/lib/x\n")
    lines = "".join(f"/opt/lib{i}\n" for i in range(400_000))
    (root / "etc" / "ld.so.conf").write_text("include /etc/ld.so.conf.d/*.conf\n" + lines)
    return ["check", "--root", str(root), "--json"], None, _tree_bytes(root)


def _smi(kind: str, command: List[str]) -> Callable[[Path], Tuple[List[str], Optional[Path], int]]:
    body = {
        "flood": "exec yes '| 0     910B3     | OK     | 95.1   45   0    / 0   |'\n",
        "hung": "exec sleep 600\n",
        "one-line": "exec tr '\\0' 'x' < /dev/zero\n",  # one endless line, no newline
    }[kind]

    def build(work: Path) -> Tuple[List[str], Optional[Path], int]:
        bin_dir = work / "bin"
        write_script(bin_dir, "npu-smi", body)
        root = _root(work)
        argv = [command[0], "--root", str(root), *command[1:]]
        return argv, bin_dir, 0 if kind == "hung" else OUTPUT_LIMIT

    return build


def build_python_flood(work: Path) -> Tuple[List[str], Optional[Path], int]:
    target = write_script(work / "py", "python3", "exec yes 'x'\n")
    return ["check", "--python", str(target), "--json"], None, OUTPUT_LIMIT


def _near_cap_snapshot(path: Path, fill: float = 0.97) -> int:
    """A snapshot file just under both bounds: about ``fill`` of :data:`SNAPSHOT_LIMIT`
    bytes and of :data:`SNAPSHOT_VALUES` values -- small objects holding strings, the
    costliest shape for the parser per byte that the bounds let through."""
    values = int(SNAPSHOT_VALUES * fill)
    per_item = 3  # the object, its member, its string value
    items = values // per_item
    budget = int(SNAPSHOT_LIMIT * fill) - 200
    width = max(1, budget // items - len('{"k":""},'))
    filler = "v" * width
    with open(path, "w", encoding="utf-8") as fh:
        fh.write('{"schema_version": 1, "node": "n1", "created": "2026-12-06T00:00:00Z", "facts": {"x": [')
        fh.write(",".join([f'{{"k":"{filler}"}}'] * items))
        fh.write("]}}")
    return path.stat().st_size


def build_compare_near_cap(work: Path) -> Tuple[List[str], Optional[Path], int]:
    files = []
    for i in range(4):
        path = work / f"s{i}.json"
        _near_cap_snapshot(path)
        files.append(str(path))
    return ["compare", *files], None, sum(os.path.getsize(f) for f in files)


def build_compare_dir_near_cap(work: Path) -> Tuple[List[str], Optional[Path], int]:
    """A directory of snapshots near the caps, enough to spread over worker processes."""
    snaps = work / "snaps"
    snaps.mkdir()
    first = snaps / "s0000.json"
    _near_cap_snapshot(first)
    for i in range(1, 8):
        os.link(first, snaps / f"s{i:04d}.json")  # hard links: compare reads them as one
    return ["compare", str(snaps)], None, 8 * first.stat().st_size


def build_from_near_cap(work: Path) -> Tuple[List[str], Optional[Path], int]:
    path = work / "snap.json"
    size = _near_cap_snapshot(path)
    return ["check", "--from", str(path), "--json"], None, size


def build_compare_past_caps(work: Path) -> Tuple[List[str], Optional[Path], int]:
    big = work / "big.json"
    _sparse(big, 5 * SNAPSHOT_LIMIT)  # 320 MB: refused from its size
    many = work / "many.json"
    many.write_text('{"schema_version": 1, "facts": {"x": [' + ",".join(["{}"] * (SNAPSHOT_VALUES + 10)) + "]}}")
    deep = work / "deep.json"
    deep.write_text('{"schema_version": 1, "facts": {"x": ' + "[" * 100_000 + "]" * 100_000 + "}}")
    lines = work / "lines.jsonl"
    with open(lines, "w", encoding="utf-8") as fh:
        for _ in range(SNAPSHOT_VALUES // 3 + 1000):
            fh.write('{"schema_version": 1}\n')
    paths = [big, many, deep, lines]
    return ["compare", *map(str, paths)], None, sum(p.stat().st_size for p in paths)


def build_from_past_caps(work: Path) -> Tuple[List[str], Optional[Path], int]:
    many = work / "many.json"
    many.write_text('{"schema_version": 1, "facts": {"x": [' + ",".join(["{}"] * (SNAPSHOT_VALUES + 10)) + "]}}")
    return ["check", "--from", str(many)], None, many.stat().st_size


def _long_string(path: Path, wide: bool) -> int:
    """A snapshot of one string as long as the size cap lets it be; ``wide``: one of its
    characters is past U+FFFF (four bytes for every character once decoded)."""
    tail = "\U0001f600" if wide else ""
    head = '{"schema_version": 1, "node": "n1", "facts": {"x": "'
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(head + "a" * (SNAPSHOT_LIMIT - 1024) + tail + '"}}')
    return path.stat().st_size


def _tiny_objects(path: Path) -> int:
    """A snapshot of one-member objects holding distinct short strings, just under the
    value bound: the most parsed objects per byte the bounds let through."""
    items = (SNAPSHOT_VALUES - 100) // 2  # each object counts its "{" and a ","
    with open(path, "w", encoding="utf-8") as fh:
        fh.write('{"schema_version": 1, "node": "n1", "facts": {"x": [')
        fh.write(",".join(f'{{"k":"{i:x}"}}' for i in range(items)))
        fh.write("]}}")
    return path.stat().st_size


def _snapshot_case(
    command: List[str], make: Callable[[Path], int]
) -> Callable[[Path], Tuple[List[str], Optional[Path], int]]:
    def build(work: Path) -> Tuple[List[str], Optional[Path], int]:
        path = work / "snap.json"
        size = make(path)
        if command[0] == "compare":
            return ["compare", str(path), *command[1:]], None, size
        return ["check", "--from", str(path), *command[1:]], None, size

    return build


def build_from_deep(work: Path) -> Tuple[List[str], Optional[Path], int]:
    deep = work / "deep.json"
    deep.write_text(
        '{"schema_version": 1, "facts": {"x": ' + "[" * (SNAPSHOT_DEPTH * 1000) + "]" * (SNAPSHOT_DEPTH * 1000) + "}}"
    )
    return ["check", "--from", str(deep)], None, deep.stat().st_size


def _error_lines(n_mib: int) -> bytes:
    line = b"[ERROR] RUNTIME(1234,python):2026-12-06-10:00:00.000.000 [engine.cc:12] EE9999: Inner Error!\n"
    other = b"step 1200 loss 0.1234 lr 1e-4 throughput 1234.5 samples/s\n" * 20
    block = (line + other) * ((1 << 20) // (len(line) + len(other)) + 1)
    return block[: 1 << 20] * n_mib


def build_triage_huge(work: Path) -> Tuple[List[str], Optional[Path], int]:
    log = work / "train.log"
    chunk = _error_lines(16)
    with open(log, "wb") as fh:
        for _ in range(32):  # 512 MiB
            fh.write(chunk)
    return ["triage", str(log)], None, log.stat().st_size


def build_triage_long_line(work: Path) -> Tuple[List[str], Optional[Path], int]:
    log = work / "oneline.log"
    with open(log, "wb") as fh:
        for _ in range(256):  # 256 MiB without a newline
            fh.write(b"Error " * ((1 << 20) // 6) + b"xxxx")
    return ["triage", str(log)], None, log.stat().st_size


def build_triage_bomb(work: Path) -> Tuple[List[str], Optional[Path], int]:
    """A gzip decompression bomb: 4 GiB of log text in a few megabytes, and an xz of it."""
    bomb = work / "bomb.log.gz"
    block = _error_lines(16)
    with gzip.open(bomb, "wb", compresslevel=9) as fh:
        for _ in range(256):  # 4 GiB
            fh.write(block)
    return ["triage", str(bomb)], None, bomb.stat().st_size


def build_triage_dir(work: Path) -> Tuple[List[str], Optional[Path], int]:
    """A log directory of 20,000 small plogs with distinct unknown errors, and garbled ones."""
    logs = work / "logs"
    logs.mkdir()
    rng = random.Random(7)
    for i in range(20_000):
        (logs / f"plog-{i}.log").write_text(
            f"[ERROR] ASCENDCL({i},python):2026-12-06 [x.cc:{i}] EZ{rng.randrange(10_000):04d}: unknown failure {i}\n"
            + "".join(f"RuntimeError: failed step {i} {j}\n" for j in range(30))
        )
    for i in range(20):
        (logs / f"garbled-{i}.log").write_bytes(bytes(rng.getrandbits(8) for _ in range(1 << 16)))
    return ["triage", str(logs)], None, _tree_bytes(logs)


def _notebook(cells: int, cell_text: str) -> str:
    return json.dumps(
        {
            "cells": [
                {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": cell_text}
                for _ in range(cells)
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )


def build_lint_notebooks(work: Path) -> Tuple[List[str], Optional[Path], int]:
    """Notebooks just under lint's per-file cap (many small cells; one cell holding one huge
    expression), one over it, and a deeply nested expression."""
    proj = work / "proj"
    proj.mkdir()
    cell = "import torch\nimport torch_npu\nx = torch.randn(4).cuda()\ntorch.cuda.synchronize()\n"
    n = (MAX_FILE_BYTES - 4096) // (len(json.dumps(cell)) + 100)
    (proj / "many_cells.ipynb").write_text(_notebook(n, cell))
    expr = "x = [" + "torch.cuda.device_count(), " * ((MAX_FILE_BYTES - 8192) // 30) + "]\n"
    (proj / "one_cell.ipynb").write_text(_notebook(1, expr))
    (proj / "over.ipynb").write_text(_notebook(2 * n, cell))
    (proj / "nested.py").write_text("x = " + "(" * 100_000 + "1" + ")" * 100_000 + "\n")
    (proj / "long.py").write_text("y = 1 + " + "1 + " * ((MAX_FILE_BYTES - 100) // 4) + "1\n")
    return ["lint", str(proj)], None, _tree_bytes(proj)


def build_lint_many_files(work: Path) -> Tuple[List[str], Optional[Path], int]:
    proj = work / "many"
    proj.mkdir()
    body = "import torch\nx = torch.zeros(1).cuda()\n"
    for i in range(200):
        sub = proj / f"p{i}"
        sub.mkdir()
        for j in range(200):
            (sub / f"m{j}.py").write_text(body)
    return ["lint", str(proj)], None, _tree_bytes(proj)


def build_plan_verify(work: Path) -> Tuple[List[str], Optional[Path], int]:
    """A bundle whose manifest sits just under its 16 MiB cap with entries that are missing,
    mis-sized, NUL-named or outside the bundle, a sparse 20 GiB wheel that a size check
    refuses, and unlisted files in wheels/."""
    bundle = work / "bundle"
    wheels = bundle / "wheels"
    wheels.mkdir(parents=True)
    digest = "0" * 64
    big = "wheels/torch-2.1.0-cp311-cp311-manylinux_2_17_x86_64.whl"
    _sparse(bundle / big, 20 << 30)
    files: List[Dict[str, object]] = [{"path": big, "sha256": digest, "size": 10}]
    files += [
        {"path": "wheels/a\u0000b.whl", "sha256": digest, "size": 1},
        {"path": "../../etc/passwd", "sha256": digest, "size": 1},
    ]
    entry = len(json.dumps({"path": "wheels/missing-000000-py3-none-any.whl", "sha256": digest, "size": 1})) + 2
    for i in range(((16 << 20) - 4096) // entry):
        files.append({"path": f"wheels/missing-{i:06d}-py3-none-any.whl", "sha256": digest, "size": 1})
    (bundle / "manifest.json").write_text(json.dumps({"files": files}))
    for i in range(2000):
        (wheels / f"stray{i}-1.0-py3-none-any.whl").write_bytes(b"PK")
    return ["plan", "verify", str(bundle), "--json"], None, _tree_bytes(bundle)


def build_env_file(work: Path) -> Tuple[List[str], Optional[Path], int]:
    """An --env-file past its 1 MiB cap of doubling assignments and one huge value."""
    env = work / "image.env"
    lines = "A=x\n" + "A=$A$A\n" * 40 + "B=" + "y" * (4 << 20) + "\n"
    env.write_text(lines)
    root = _root(work)
    return ["check", "--root", str(root), "--env-file", str(env), "--json"], None, env.stat().st_size


CASES: List[Case] = [
    Case("garbled-check", "16 MiB of garbage in 13 read files, 64 MiB in 4 libraries", build_garbled),
    Case("garbled-collect", "the same tree, collect -o", build_garbled_collect),
    Case("deep-loops-check", "1,500-deep dirs, symlink loops", build_deep_and_loops),
    Case("ld-fanout-check", "ld.so.conf: 512 fanning includes, 400k lines", build_ld_fanout),
    Case(
        "set-env-check", "set_env.sh: A=$A$A x 40, 1,000 128 KiB values", _doubling(["check", "--json"]), sourced=False
    ),
    Case(
        "set-env-health",
        "set_env.sh doubling, health --timeout 10",
        _doubling(["health", "--timeout", "10"]),
        sourced=False,
    ),
    Case("set-env-env", "set_env.sh doubling", _doubling(["env"]), sourced=False),
    Case("set-env-npd", "set_env.sh doubling", _doubling(["npd", "--json"]), sourced=False),
    Case("set-env-exec", "set_env.sh doubling, exec -- /bin/true", _doubling(["exec"]), sourced=False),
    Case("env-file-check", "--env-file: 4 MiB, doubling + one huge value", build_env_file),
    Case("flood-check", "npu-smi floods (yes)", _smi("flood", ["check", "--json"])),
    Case("flood-devices", "npu-smi floods (yes)", _smi("flood", ["devices", "--json"])),
    Case("flood-health", "npu-smi floods, --timeout 10", _smi("flood", ["health", "--timeout", "10"])),
    Case("oneline-check", "npu-smi: one endless line", _smi("one-line", ["check", "--json"])),
    Case("hung-check", "npu-smi never answers", _smi("hung", ["check", "--json"])),
    Case("hung-health", "npu-smi never answers, --timeout 3", _smi("hung", ["health", "--timeout", "3"])),
    Case("python-flood", "--python target floods", build_python_flood),
    Case("compare-near-cap", "4 snapshots at 97% of 64 MB / 2M values", build_compare_near_cap),
    Case("compare-dir", "dir of 8 near-cap snapshots (hard links)", build_compare_dir_near_cap),
    Case("compare-past-caps", "320 MB sparse, 2M+ values, 100k deep, 667k lines", build_compare_past_caps),
    Case("from-near-cap", "check --from a near-cap snapshot", build_from_near_cap),
    Case("from-long-string", "one 64 MB string", _snapshot_case(["check", "--json"], lambda p: _long_string(p, False))),
    Case("compare-long-string", "one 64 MB string", _snapshot_case(["compare"], lambda p: _long_string(p, False))),
    Case(
        "from-wide-string",
        "64 MB string, one U+1F600",
        _snapshot_case(["check", "--json"], lambda p: _long_string(p, True)),
    ),
    Case(
        "compare-wide-string", "64 MB string, one U+1F600", _snapshot_case(["compare"], lambda p: _long_string(p, True))
    ),
    Case("from-tiny-objects", "1M one-member objects", _snapshot_case(["check", "--json"], _tiny_objects)),
    Case("compare-tiny-objects", "1M one-member objects", _snapshot_case(["compare", "--json"], _tiny_objects)),
    Case("from-past-values", "check --from 2M+ tiny objects", build_from_past_caps),
    Case("from-deep", "check --from 64,000-deep nesting", build_from_deep),
    Case("triage-huge", "512 MiB log, an error every 21 lines", build_triage_huge),
    Case("triage-long-line", "256 MiB without a newline", build_triage_long_line),
    Case("triage-bomb", "gzip bomb: 4 GiB of log", build_triage_bomb),
    Case("triage-dir", "20,000 plogs of unknown errors + garbage", build_triage_dir),
    Case("lint-notebooks", "notebooks at the 4 MiB cap, 100k-deep expr", build_lint_notebooks),
    Case("lint-many-files", "40,000 small files", build_lint_many_files),
    Case("plan-verify", "16 MiB manifest, 20 GiB sparse wheel, strays", build_plan_verify),
]


# ------------------------------------------------------------------ measuring
def _env(bin_dir: Optional[Path], checkout: str, sourced: bool = True) -> Dict[str, str]:
    env = {"HOME": "/root", "PYTHONPATH": checkout, "LANG": "C.UTF-8"}
    for line in (SCENARIO / "scenario.toml").read_text().splitlines() if sourced else ():
        if line.startswith(("ASCEND_", "LD_LIBRARY_PATH")):
            key, _eq, value = line.partition(" = ")
            env[key] = json.loads(value)
    env["PATH"] = (f"{bin_dir}:" if bin_dir else "") + "/usr/bin:/bin"
    return env


#: The process that starts each measured run and reports its ``wait4``: a fresh, small
#: interpreter.  On Linux a child's ``ru_maxrss`` starts from its parent's peak (the memory
#: map it forked from counts until ``exec``), so a run started straight from this process,
#: which holds the inputs it built, would report at least this process's own peak.
STARTER = """
import json, os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_pid, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as fh:
    json.dump([os.waitstatus_to_exitcode(status), usage.ru_maxrss], fh)
"""


def measure(argv: Sequence[str], env: Dict[str, str], cwd: Path, err_path: Path) -> Result:
    """Run ``argv`` (through :data:`STARTER`) in its own session, stdout to ``stdout`` beside
    ``err_path``, stderr to ``err_path``; its exit status and peak RSS from ``wait4``; killed (as a group) after
    :data:`HANG_S`."""
    report = err_path.with_name("wait4.json")
    start = time.perf_counter()
    with open(err_path, "wb") as err, open(err_path.with_name("stdout"), "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", STARTER, str(report), *argv],
            stdout=out,
            stderr=err,
            env=env,
            cwd=str(cwd),
            start_new_session=True,
        )
    hung = threading.Event()

    def kill() -> None:
        hung.set()
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)

    timer = threading.Timer(HANG_S, kill)
    timer.start()
    try:
        proc.wait()
    finally:
        timer.cancel()
    wall = time.perf_counter() - start
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)  # whatever the run left behind in its group
    rc, maxrss = None, 0
    with contextlib.suppress(OSError, ValueError):
        rc, maxrss = json.loads(report.read_text())
    with open(err_path, "rb") as fh:
        fh.seek(max(0, os.path.getsize(err_path) - (256 << 10)))
        tail = fh.read()
    with open(err_path.with_name("stdout"), "rb") as fh:
        first = fh.read(4096).decode("utf-8", "replace").partition("\n")[0][:40]
    return Result(rc, maxrss, wall, b"Traceback (most recent call last)" in tail, hung.is_set(), first)


def _size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.1f} {unit}"
    return f"{n} B"


def measure_all(selected: Sequence[str] = ()) -> Iterator[str]:
    checkout = os.environ.get("NPUDOCTOR_BENCH_BASELINE") or str(REPO)
    yield "| command | input | size | exit | peak RSS | wall | |"
    yield "|---|---|---:|---:|---:|---:|---|"
    worst = (0, "")
    flagged = 0
    for case in CASES:
        if selected and not any(s in case.name for s in selected):
            continue
        with tempfile.TemporaryDirectory(prefix=f"npudoctor-hostile-{case.name}-") as tmp:
            work = Path(tmp)
            args, bin_dir, size = case.build(work)
            argv = [sys.executable, "-m", "npudoctor", *args]
            result = measure(argv, _env(bin_dir, checkout, case.sourced), work, work / "stderr")
            for top in DEEP:
                _remove_deep(work / "root" / top)
        mb = result.maxrss_kib * 1024 / 1e6
        command = args[0] if args[0] != "plan" else "plan verify"
        problems = []
        if mb > TARGET_MB:
            problems.append(f"over {TARGET_MB} MB")
        if result.traceback:
            problems.append("traceback")
        if result.hung:
            problems.append(f"killed after {HANG_S:.0f} s")
        elif result.rc not in DOCUMENTED.get(args[0], (0, 1, 2)):
            problems.append(f"exit {result.rc} undocumented")
        flagged += bool(problems)
        if args[0] == "health":  # its verdict, to read beside the exit status
            problems.append(f"said {result.first!r}")
        worst = max(worst, (result.maxrss_kib, case.name))
        yield (
            f"| {command} | {case.name}: {case.what} | {_size(size)} | {result.rc} | "
            f"{mb:.0f} MB | {result.wall:.1f} s | {'; '.join(problems) or 'ok'} |"
        )
    yield (
        f"worst peak RSS {worst[0] * 1024 / 1e6:.0f} MB ({worst[1]}); target <= {TARGET_MB} MB: "
        f"{'met' if worst[0] * 1024 / 1e6 <= TARGET_MB else 'NOT met'}; {flagged} run(s) flagged"
    )


def run(repeat: int) -> List[str]:
    """``scripts/bench.py``'s entry: one run per input (peak memory does not need repeats)."""
    del repeat
    return list(measure_all())


def main() -> int:
    for line in measure_all(sys.argv[1:]):
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
