"""``npudoctor compare`` over 10,000 snapshots (targets: under 5 s; CPU <= 1.3x the floor in
one process; 50,000 snapshots within 64 MiB), paired with the floor: a Python loop that only
reads and parses the same files with :func:`json.loads`.

The snapshots are made from one real collected snapshot (``collect --root`` of a small
stack tree built here) padded with 150 package records so each file is the size of a
snapshot of a real training environment (~120 KB); every tenth node has one drift (CANN,
driver, torch_npu post build or an HCCL variable).  Measured in rotated rounds
(``bench.rounds``): the floor, compare in one process (``workers=1``), compare with two
worker processes forced, and the console script (workers by idle cores) -- wall and CPU
time of each run, paired ratios to the floor -- then the peak RSS of 50,000 snapshots
streamed through compare in one process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import median

NODES = int(os.environ.get("NPUDOCTOR_BENCH_NODES", "10000"))
TARGET_S = 5.0

FLOOR = (
    "import json, os, sys\n"
    "d = sys.argv[1]\n"
    "for f in sorted(n for n in os.listdir(d) if n.endswith('.json')):\n"
    "    with open(os.path.join(d, f), 'rb') as fh:\n"
    "        json.loads(fh.read())\n"
)


def _root(base: Path) -> Path:
    root = base / "root"
    sp = root / "usr/local/lib/python3.10/site-packages"
    for name, ver in (("torch", "2.1.0"), ("torch_npu", "2.1.0.post3")):
        d = sp / f"{name}-{ver}.dist-info"
        d.mkdir(parents=True)
        (d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {ver}\n")
    tk = root / "usr/local/Ascend/ascend-toolkit/8.0.0/aarch64-linux"
    tk.mkdir(parents=True)
    (tk / "ascend_toolkit_install.info").write_text("version=8.0.0\narch=aarch64\n")
    (root / "usr/local/Ascend/ascend-toolkit/latest").symlink_to("8.0.0")
    (root / "usr/local/Ascend/driver").mkdir(parents=True)
    (root / "usr/local/Ascend/driver/version.info").write_text("Version=24.1.rc2\n")
    (root / "etc").mkdir()
    (root / "etc/hostname").write_text("bench\n")
    return root


def make_snapshots(directory: Path) -> int:
    """Write NODES snapshot files into ``directory``; returns the mean file size (bytes)."""
    root = _root(directory / "_tree")
    env = {"PATH": "/usr/bin:/bin", "HOME": "/root", "HCCL_CONNECT_TIMEOUT": "900"}
    out = subprocess.run(
        [sys.executable, "-m", "npudoctor", "collect", "--root", str(root), "-o", "-"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    base = json.loads(out)
    installed = base["facts"].setdefault("packages", {}).setdefault("installed", {})
    for i in range(150):
        name = f"pkg-{i}"
        installed[name] = [
            {
                "name": name,
                "version": f"1.{i}.0",
                "location": "/usr/local/lib/python3.10/site-packages",
                "dist_info": f"/usr/local/lib/python3.10/site-packages/{name}-1.{i}.0.dist-info",
                "requires_dist": [f"dep-{j}>=1.0" for j in range(8)],
                "wheel_tags": ["py3-none-any"],
                "installer": "pip",
                "user_site": False,
            }
        ]
    total = 0
    for n in range(NODES):
        snap = json.loads(json.dumps(base))
        snap["node"] = f"node-{n:04d}"
        if n % 10 == 3:
            kind = (n // 10) % 4
            if kind == 0:
                snap["facts"]["cann"]["selected"]["version"] = "8.0.RC3"
            elif kind == 1:
                snap["facts"]["driver"]["driver"]["version"] = "23.0.6"
            elif kind == 2:
                snap["facts"]["packages"]["installed"]["torch-npu"][0]["version"] = "2.1.0.post4"
            else:
                snap["facts"]["hccl"]["variables"]["HCCL_CONNECT_TIMEOUT"] = "120"
        text = json.dumps(snap, indent=2)
        total += len(text)
        (directory / f"node-{n:04d}.json").write_text(text)
    return total // NODES


#: One process, no workers: the CPU of compare itself against the floor.
ONE_PROCESS = (
    "import sys\n"
    "sys.path.insert(0, sys.argv[2])\n"
    "from npudoctor.cluster.compare import compare_inputs\n"
    "compare_inputs([sys.argv[1]], workers=int(sys.argv[3]))\n"
)

#: Peak memory of compare over MEMORY_NODES snapshots made in memory from one file (each
#: read from its own bytes by the one-pass reader compare uses for a file, every tenth with
#: another driver): the memory compare keeps, without writing 50,000 files.
MEMORY_NODES = int(os.environ.get("NPUDOCTOR_BENCH_MEMORY_NODES", "50000"))
MEMORY = (
    "import json, sys\n"
    "sys.path.insert(0, sys.argv[2])\n"
    "from npudoctor.cluster.compare import compare, quick\n"
    "doc = json.load(open(sys.argv[1], encoding='utf-8'))\n"
    "doc['node'] = 'NODE-LABEL'\n"
    "base = json.dumps(doc, indent=2).encode()\n"
    "doc['facts']['driver']['driver']['version'] = '23.0.6'\n"
    "drifted = json.dumps(doc, indent=2).encode()\n"
    "def items(n=int(sys.argv[3])):\n"
    "    for i in range(n):\n"
    "        data = (drifted if i % 10 == 3 else base).replace(b'NODE-LABEL', b'node-%05d' % i)\n"
    "        read = quick(data)\n"
    "        assert read is not None\n"
    "        yield 'node-%05d.json' % i, read\n"
    "report = compare(items())\n"
    "assert report['nodes'] == int(sys.argv[3]) and len(report['differing']) == int(sys.argv[3]) // 10\n"
)

REPO = Path(__file__).resolve().parents[2]


def run(repeat: int) -> list:
    from bench import launcher, measure, rounds

    with tempfile.TemporaryDirectory(prefix="npudoctor-bench-compare-") as tmp:
        directory = Path(tmp) / "snaps"
        directory.mkdir()
        size = make_snapshots(directory)
        env = dict(os.environ)
        npd = str(launcher(Path(tmp), REPO))
        commands = {
            "floor": ([sys.executable, "-c", FLOOR, str(directory)], env, None),
            "one process": ([sys.executable, "-c", ONE_PROCESS, str(directory), str(REPO), "1"], env, None),
            "two workers": ([sys.executable, "-c", ONE_PROCESS, str(directory), str(REPO), "2"], env, None),
            "compare": ([npd, "compare", str(directory), "--json"], env, None),
        }
        runs = rounds(commands, max(3, repeat // 3))
        check = subprocess.run([npd, "compare", str(directory), "--json"], capture_output=True, text=True)
        report = json.loads(check.stdout)
        memory = measure(
            [sys.executable, "-c", MEMORY, str(directory / "node-0000.json"), str(REPO), str(MEMORY_NODES)], env=env
        )
        floor, one, cli = runs["floor"], runs["one process"], runs["compare"]
        med = median([r.wall for r in cli])
        lines = [
            f"{NODES} snapshots of {size / 1024:.0f} KB each, {len(cli)} rounds (order rotated), load average "
            f"{os.getloadavg()[0]:.1f}",
            f"compare (console script, workers by idle cores): median {med:.2f} s wall, "
            f"{median([r.cpu for r in cli]):.2f} s CPU, peak RSS {max(r.maxrss_kib for r in cli) / 1024:.0f} MiB "
            f"(target < {TARGET_S:.1f} s: {'met' if med < TARGET_S else 'NOT MET'})",
            f"JSON-parse floor: median {median([r.wall for r in floor]):.2f} s wall, "
            f"{median([r.cpu for r in floor]):.2f} s CPU",
            f"one process: CPU {median([o.cpu / f.cpu for o, f in zip(one, floor)]):.2f}x the floor "
            f"(paired rounds, target <= 1.3x); wall {median([o.wall / f.wall for o, f in zip(one, floor)]):.2f}x",
            f"two worker processes (forced): CPU {median([w.cpu / f.cpu for w, f in zip(runs['two workers'], floor)]):.2f}x "
            f"the floor, wall {median([w.wall / f.wall for w, f in zip(runs['two workers'], floor)]):.2f}x",
            f"console script: CPU {median([c.cpu / f.cpu for c, f in zip(cli, floor)]):.2f}x the floor, "
            f"wall {median([c.wall / f.wall for c, f in zip(cli, floor)]):.2f}x",
            f"{MEMORY_NODES} snapshots streamed in one process: peak RSS {memory.maxrss_kib / 1024:.0f} MiB "
            f"(target <= 64 MiB), {memory.cpu:.1f} s CPU",
            f"found {len(report['differing'])} drifted nodes (expected {NODES // 10}), exit {check.returncode}",
        ]
        return lines
