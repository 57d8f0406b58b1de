"""Host readiness (issue 33): /dev/shm, memlock, open files, THP read from the files of a
root (the same reads as live), judged with the world the process runs in."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from builders.build_cann_scenarios import fixture, write

from npudoctor.context import Options
from npudoctor.engine import collect, evaluate
from npudoctor.host import Host
from npudoctor.probes import host_limits

#: /proc/self/mountinfo lines of a Docker container with its default 64 MB /dev/shm (the
#: shape of the kernel's show_mountinfo: the `/dev` tmpfs is a different mount).
DOCKER_MOUNTINFO = (
    "612 540 0:52 / / rw,relatime master:290 - overlay overlay rw,lowerdir=/l,upperdir=/u,workdir=/w\n"
    "613 612 0:55 / /dev rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755\n"
    "619 613 0:60 / /dev/shm rw,nosuid,nodev,noexec,relatime - tmpfs shm rw,size=65536k\n"
)
HOST_MOUNTINFO = "25 24 0:23 / /dev/shm rw,nosuid,nodev - tmpfs tmpfs rw,inode64\n"
LIMITS = (
    "Limit                     Soft Limit           Hard Limit           Units     \n"
    "Max open files            {nofile_soft:<20} {nofile_hard:<20} files     \n"
    "Max locked memory         {memlock_soft:<20} {memlock_hard:<20} bytes     \n"
)


def _root(
    tmp_path: Path,
    mountinfo: str,
    docker: bool = False,
    thp: str = "always [madvise] never",
    npu: bool = True,
    **limits: object,
) -> Path:
    root = tmp_path / "root"
    (root / "proc/self").mkdir(parents=True)
    (root / "proc/self/mountinfo").write_text(mountinfo)
    values = {"nofile_soft": 1048576, "nofile_hard": 1048576, "memlock_soft": "unlimited", "memlock_hard": "unlimited"}
    values.update(limits)
    (root / "proc/self/limits").write_text(LIMITS.format(**values))
    thp_dir = root / "sys/kernel/mm/transparent_hugepage"
    thp_dir.mkdir(parents=True)
    (thp_dir / "enabled").write_text(thp + "\n")
    (root / "proc/meminfo").write_text("MemTotal:       65843600 kB\nMemFree:        1000 kB\n")
    if docker:
        (root / ".dockerenv").write_text("")
    if npu:  # an NPU machine: the limits matter only where NPU work runs
        (root / "dev").mkdir()
        (root / "dev/davinci0").write_text("")
    return root


def _judge(root: Path):
    snap = collect(Host(root=str(root), environ={"PATH": "/usr/bin:/bin"}), Options())
    found = [f for f in evaluate(snap, None, Options()) if f.code in CODES]
    return snap, found


CODES = ("HOST006", "HOST007", "HOST008", "HOST009", "HOST011", "HOST012", "HOST013", "HOST014")
MEMINFO = (
    "MemTotal:       65843600 kB\nMemFree:        1000 kB\nCommitLimit:    32921800 kB\nCommitted_AS:   30000000 kB\n"
)


def _sysctl(root: Path, overcommit: int, ratio: int = 50) -> None:
    vm = root / "proc/sys/vm"
    vm.mkdir(parents=True)
    (vm / "overcommit_memory").write_text(f"{overcommit}\n")
    (vm / "overcommit_ratio").write_text(f"{ratio}\n")
    (root / "proc/meminfo").write_text(MEMINFO)


def _governors(root: Path, *names: str) -> None:
    for i, name in enumerate(names):
        policy = root / f"sys/devices/system/cpu/cpufreq/policy{i * 4}"
        policy.mkdir(parents=True)
        (policy / "scaling_governor").write_text(name + "\n")


def test_parsers():
    assert host_limits.parse_size("65536k") == 64 << 20
    assert host_limits.parse_size("16g") == 16 << 30
    assert host_limits.parse_size("50%") is None
    assert host_limits.parse_mountinfo_shm(DOCKER_MOUNTINFO) == ("tmpfs", "rw,size=65536k")
    assert host_limits.parse_thp("always madvise [never]") == "never"
    limits = host_limits.parse_limits(
        LIMITS.format(nofile_soft=1024, nofile_hard=4096, memlock_soft=65536, memlock_hard="unlimited")
    )
    assert limits == {"nofile_soft": 1024, "nofile_hard": 4096, "memlock_soft": 65536, "memlock_hard": -1}


def test_docker_default_shm_and_memlock(tmp_path):
    snap, found = _judge(_root(tmp_path, DOCKER_MOUNTINFO, docker=True, memlock_soft=65536, memlock_hard=65536))
    facts = snap.facts["host_limits"]
    assert facts["shm"]["size_bytes"] == 64 << 20 and facts["shm"]["source"] == "/proc/self/mountinfo"
    assert facts["mem_total_bytes"] == 65843600 * 1024
    shm = next(f for f in found if f.code == "HOST006")
    assert shm.severity == "warning" and shm.title.startswith("/dev/shm is 64 MiB")
    assert shm.evidence[0].startswith("/proc/self/mountinfo: /dev/shm")
    assert any("--shm-size=16g" in line for line in shm.fix)
    mem = next(f for f in found if f.code == "HOST007")
    assert mem.severity == "warning" and "64 KiB" in mem.title
    assert any("--ulimit memlock=-1" in line for line in mem.fix)
    assert mem.evidence[0].startswith("/proc/self/limits:")


def test_a_machine_without_an_npu_stack_hears_nothing_of_its_limits(tmp_path):
    """Docker's 64 MB /dev/shm and 64 KiB memlock on a machine with no NPU stack (HOST050):
    the limits are for NPU training, so nothing is said of them."""
    _snap, found = _judge(
        _root(tmp_path, DOCKER_MOUNTINFO, docker=True, npu=False, memlock_soft=65536, memlock_hard=65536)
    )
    assert found == []


def test_healthy_host_stays_quiet(tmp_path):
    # a host's /dev/shm without size= (half the RAM), unlimited memlock, raised nofile, THP madvise
    snap, found = _judge(_root(tmp_path, HOST_MOUNTINFO))
    assert snap.facts["host_limits"]["shm"]["size_bytes"] is None
    assert found == []


def test_large_container_shm_is_quiet(tmp_path):
    mountinfo = DOCKER_MOUNTINFO.replace("shm rw,size=65536k", "shm rw,size=16777216k")
    assert _judge(_root(tmp_path, mountinfo, docker=True))[1] == []


def test_low_nofile_and_thp_never(tmp_path):
    _, found = _judge(
        _root(tmp_path, HOST_MOUNTINFO, thp="always madvise [never]", nofile_soft=1024, nofile_hard=524288)
    )
    by = {f.code: f for f in found}
    assert sorted(by) == ["HOST008", "HOST009"]
    assert by["HOST008"].severity == "info" and by["HOST008"].fix == ["ulimit -n 65536"]
    assert by["HOST009"].evidence[0] == "/sys/kernel/mm/transparent_hugepage/enabled: [never]"


def test_missing_files_are_facts_not_errors(tmp_path):
    root = tmp_path / "empty"
    root.mkdir()
    snap, found = _judge(root)
    facts = snap.facts["host_limits"]
    assert facts["shm"] is None and facts["limits"] is None
    assert facts["errors"]["/proc/self/limits"] == "not found"
    assert found == []


def test_omp_threads_times_ranks_over_the_cpuset(tmp_path):
    root = _root(tmp_path, HOST_MOUNTINFO)
    (root / "proc/self/status").write_text("Name:\tpython\nCpus_allowed_list:\t0-7,16-23\nMems_allowed_list:\t0\n")
    cg = root / "sys/fs/cgroup"
    cg.mkdir(parents=True)
    (cg / "cpu.max").write_text("max 100000\n")
    env = {"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "10", "LOCAL_WORLD_SIZE": "8"}
    snap = collect(Host(root=str(root), environ=env), Options())
    assert snap.facts["host_limits"]["cpus"] == {
        "source": "/proc/self/status",
        "allowed_list": "0-7,16-23",
        "allowed_count": 16,
    }
    assert snap.facts["host_limits"]["cpu_quota"] == {"source": "/sys/fs/cgroup/cpu.max", "cores": None}
    (f,) = [f for f in evaluate(snap, None, Options()) if f.code == "HOST010"]
    assert f.title == "OMP_NUM_THREADS=10 x 8 rank(s) = 80 threads on 16 CPUs"
    assert f.severity == "info" and f.fix[0].startswith("export OMP_NUM_THREADS=2")
    # a cgroup quota of 4 CPUs is the tighter bound
    (cg / "cpu.max").write_text("400000 100000\n")
    env["OMP_NUM_THREADS"] = "1"
    env["LOCAL_WORLD_SIZE"] = "2"
    snap = collect(Host(root=str(root), environ=env), Options())
    assert [f.code for f in evaluate(snap, None, Options()) if f.code == "HOST010"] == []
    env["LOCAL_WORLD_SIZE"] = "8"
    snap = collect(Host(root=str(root), environ=env), Options())
    (f,) = [f for f in evaluate(snap, None, Options()) if f.code == "HOST010"]
    assert "/sys/fs/cgroup/cpu.max: a quota of 4 CPUs" in f.evidence and f.fix[0].startswith("export OMP_NUM_THREADS=1")


def test_cpu_list_parser():
    assert host_limits.count_cpu_list("0-3,8,10-11") == 7
    assert host_limits.count_cpu_list("3-1") is None
    assert host_limits.count_cpu_list("0-99999999") is None
    assert host_limits.parse_cpu_max("250000 100000") == 2.5


def test_strict_overcommit(tmp_path):
    root = _root(tmp_path, HOST_MOUNTINFO)
    _sysctl(root, 2)
    snap, found = _judge(root)
    assert snap.facts["host_limits"]["overcommit"] == {
        "source": "/proc/sys/vm/overcommit_memory",
        "mode": 2,
        "ratio": 50,
        "commit_limit_bytes": 32921800 * 1024,
        "committed_bytes": 30000000 * 1024,
    }
    (f,) = found
    assert f.code == "HOST011" and f.severity == "warning"
    assert f.evidence[:3] == [
        "/proc/sys/vm/overcommit_memory: 2 (strict accounting)",
        "/proc/sys/vm/overcommit_ratio: 50 (% of RAM counted, plus swap)",
        "/proc/meminfo: CommitLimit 31 GiB, Committed_AS 29 GiB",
    ]
    assert f.fix[0].startswith("sysctl -w vm.overcommit_memory=0")


def test_heuristic_and_always_overcommit_are_quiet(tmp_path):
    for mode in (0, 1):
        root = _root(tmp_path / str(mode), HOST_MOUNTINFO)
        _sysctl(root, mode)
        assert _judge(root)[1] == []


def test_cpu_governor(tmp_path):
    root = _root(tmp_path / "save", HOST_MOUNTINFO)
    _governors(root, "powersave", "powersave", "performance")
    snap, found = _judge(root)
    assert snap.facts["host_limits"]["governors"] == {
        "source": "/sys/devices/system/cpu/cpufreq/policy*/scaling_governor",
        "counts": {"powersave": 2, "performance": 1},
        "policies": 3,
    }
    (f,) = found
    assert f.code == "HOST012" and f.severity == "info"
    assert f.title == "CPU frequency governor: powersave on 2 of 3 cpufreq policies, not performance"
    assert f.fix[0].startswith("cpupower frequency-set -g performance")
    root = _root(tmp_path / "perf", HOST_MOUNTINFO)
    _governors(root, "performance", "performance")
    assert _judge(root)[1] == []
    # no cpufreq at all (a VM, a container without the host's sysfs): nothing to judge
    snap, found = _judge(_root(tmp_path / "none", HOST_MOUNTINFO))
    assert snap.facts["host_limits"]["governors"] is None and found == []


A2_TABLE = "npu-smi-info_910B3_24.1.rc1.b030_8npu_devices_only.txt"
#: The CPU affinity npu-smi gives the eight NPUs of a 910B3 host: 144-167, 96-119, 0-23, 48-71.
A2_TOPO = "topo_910B3_8npu_allHCCS_24.1.rc1.txt"
#: Where the eight NPUs of the A2 table hang: two per NUMA node of a four-node host.
A2_NUMA = {"c1": 3, "c2": 3, "81": 2, "82": 2, "01": 0, "02": 0, "41": 1, "42": 1}


def _numa_root(tmp_path: Path, allowed: str, docker: bool = False, topo: bool = False):
    """A four-node host with the A2 table's eight NPUs, and ``allowed`` as the process's
    cpuset; `npu-smi info` replays the capture from a directory outside the root."""
    root = _root(tmp_path, HOST_MOUNTINFO, docker=docker)
    (root / "proc/self/status").write_text(f"Name:\tpython\nCpus_allowed_list:\t{allowed}\n")
    for node in range(4):
        d = root / f"sys/devices/system/node/node{node}"
        d.mkdir(parents=True)
        (d / "cpulist").write_text(f"{node * 48}-{node * 48 + 47}\n")
    for bus, node in A2_NUMA.items():
        d = root / f"sys/bus/pci/devices/0000:{bus}:00.0"
        d.mkdir(parents=True)
        (d / "numa_node").write_text(f"{node}\n")
    bindir = tmp_path / "bin"
    write(bindir, "npu-smi-info.txt", fixture(A2_TABLE))
    write(bindir, "npu-smi-topo.txt", fixture(A2_TOPO) if topo else "")
    script = write(
        bindir,
        "npu-smi",
        '#!/bin/sh\nd="$(dirname "$0")"\n'
        'if [ "$*" = "info" ]; then cat "$d/npu-smi-info.txt"; exit 0; fi\n'
        'if [ "$*" = "info -t topo" ] && [ -s "$d/npu-smi-topo.txt" ]; then cat "$d/npu-smi-topo.txt"; exit 0; fi\n'
        "exit 1\n",
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    snap = collect(Host(root=str(root), environ={"PATH": f"{bindir}:/usr/bin:/bin"}), Options())
    return snap, [f for f in evaluate(snap, None, Options()) if f.code in CODES]


def test_cpuset_away_from_every_npu(tmp_path):
    # every node of this host has NPUs, so a cpuset inside any one node is near some of them
    snap, found = _numa_root(tmp_path / "near", "0-15")
    assert snap.facts["numa"]["nodes"]["3"] == "144-191"
    assert {n["bus_id"]: n["numa_node"] for n in snap.facts["numa"]["npus"]} == {
        f"0000:{bus}:00.0": node for bus, node in A2_NUMA.items()
    }
    assert found == []


def test_cpuset_on_a_node_without_npus(tmp_path):
    root_dir = tmp_path / "away"
    snap, _ = _numa_root(root_dir, "48-63", docker=True)
    # move node 1's two NPUs to node 0: node 1 now has CPUs but no NPU
    for bus in ("41", "42"):
        (root_dir / f"root/sys/bus/pci/devices/0000:{bus}:00.0/numa_node").write_text("0\n")
    env = {"PATH": f"{root_dir / 'bin'}:/usr/bin:/bin"}
    snap = collect(Host(root=str(root_dir / "root"), environ=env), Options())
    (f,) = [f for f in evaluate(snap, None, Options()) if f.code == "HOST013"]
    assert f.severity == "warning"
    assert f.title == "The CPUs this process may use (48-63) are on NUMA node 1; its NPUs are on node 0, 2, 3"
    assert f.evidence[0] == "/proc/self/status: Cpus_allowed_list 48-63"
    assert f.evidence[1] == (
        "/sys/bus/pci/devices/<bus id>/numa_node of the NPUs: node 0: 0000:01:00.0, 0000:02:00.0, "
        "0000:41:00.0, 0000:42:00.0; node 2: 0000:81:00.0, 0000:82:00.0; node 3: 0000:c1:00.0, 0000:c2:00.0"
    )
    assert "/sys/devices/system/node/node1/cpulist: 48-95" in f.evidence
    assert f.fix == ["Recreate the container with --cpuset-cpus=0-47,96-191 (the CPUs next to its NPUs)"]


def test_single_node_and_unknown_numa_stay_quiet(tmp_path):
    root_dir = tmp_path / "one"
    _numa_root(root_dir, "48-63")
    for node in (1, 2, 3):
        (root_dir / f"root/sys/devices/system/node/node{node}/cpulist").unlink()
        (root_dir / f"root/sys/devices/system/node/node{node}").rmdir()
    env = {"PATH": f"{root_dir / 'bin'}:/usr/bin:/bin"}
    snap = collect(Host(root=str(root_dir / "root"), environ=env), Options())
    assert [f for f in evaluate(snap, None, Options()) if f.code == "HOST013"] == []
    # numa_node -1 (no firmware data) everywhere: nothing to compare
    root_dir = tmp_path / "minus"
    _numa_root(root_dir, "48-63")
    for bus in A2_NUMA:
        (root_dir / f"root/sys/bus/pci/devices/0000:{bus}:00.0/numa_node").write_text("-1\n")
    snap = collect(Host(root=str(root_dir / "root"), environ={"PATH": f"{root_dir / 'bin'}:/usr/bin:/bin"}), Options())
    assert [f for f in evaluate(snap, None, Options()) if f.code == "HOST013"] == []


def test_health_reads_shm_and_memlock(tmp_path):
    """`health` judges the limits that change while a node runs: a container recreated with
    Docker's 64 MB /dev/shm and 64 KiB memlock; warnings, so the node stays healthy."""
    from scenario_runner import prepare
    from test_health import HEALTHY, health

    scenario = prepare(HEALTHY, tmp_path)
    root = scenario / "root"
    (root / "proc/self").mkdir(parents=True)
    (root / "proc/self/mountinfo").write_text(DOCKER_MOUNTINFO)
    (root / "proc/self/limits").write_text(
        LIMITS.format(nofile_soft=1048576, nofile_hard=1048576, memlock_soft=65536, memlock_hard=65536)
    )
    (root / "proc/sys/vm").mkdir(parents=True)
    (root / "proc/sys/vm/overcommit_memory").write_text("2\n")  # check's, not health's
    (root / ".dockerenv").write_text("")
    proc = health(scenario, "--json", "--timeout", "5")
    assert proc.returncode == 0, proc.stdout
    doc = json.loads(proc.stdout)
    assert doc["status"] == "healthy"
    found = {f["code"]: f for f in doc["findings"] if f["code"].startswith("HOST0")}
    assert sorted(found) == ["HOST006", "HOST007"]
    assert found["HOST006"]["severity"] == "warning" and found["HOST006"]["title"].startswith("/dev/shm is 64 MiB")


def test_cpuset_outside_the_npus_cpu_affinity(tmp_path):
    """npu-smi's CPU Affinity column speaks first: a cpuset of CPUs 24-47 is next to no NPU
    of the real 910B3 capture, although sysfs puts every node near some NPU."""
    snap, found = _numa_root(tmp_path / "away", "24-47", docker=True, topo=True)
    assert snap.facts["devices"]["topology"]["affinity"]["0"] == "144-167"
    (f,) = [f for f in found if f.code == "HOST013"]
    assert f.title == (
        "The CPUs this process may use (24-47) are outside the CPU affinity of every NPU (npu-smi info -t topo)"
    )
    assert f.evidence[1].startswith("npu-smi info -t topo, CPU Affinity: NPU0 144-167; NPU1 144-167; NPU2 96-119")
    assert f.fix == ["Recreate the container with --cpuset-cpus=0-23,48-71,96-119,144-167 (the CPUs next to its NPUs)"]
    _snap, found = _numa_root(tmp_path / "near", "0-15", docker=True, topo=True)
    assert [f for f in found if f.code == "HOST013"] == []


#: Releases as `uname -r` prints them on real hosts, with what msprechecker's Version reads.
RELEASES = {
    "4.19.90-24.4.v2101.ky10.aarch64": (4, 19, 90),  # Kylin V10
    "5.10.0-60.18.0.50.oe2203.aarch64": (5, 10, 0),  # openEuler 22.03
    "5.15.0-91-generic": (5, 15, 0),  # Ubuntu 22.04
    "3.10.0-1160.el7.x86_64": (3, 10, 0),  # CentOS 7
    "5.4.0-150-generic": (5, 4, 0),  # Ubuntu 20.04
    "4.19.90-2107.6.0.0192.8.oe1.bclinux.aarch64": (4, 19, 90),  # BC-Linux (openEuler 20.03)
    "6.8": (6, 8, 0),
}


def test_kernel_release_is_read_as_msprechecker_reads_it():
    from npudoctor.knowledge.versions import kernel_release

    assert {text: kernel_release(text) for text in RELEASES} == RELEASES
    for text in ("", "   ", "linux", "5", "5-rc1", "12345.1.0"):
        assert kernel_release(text) is None, text


def test_the_kernel_minimum_is_data_with_its_source():
    from npudoctor.knowledge.host_readiness import kernel_floor

    floor = kernel_floor()
    assert floor.minimum == "5.10" and floor.severity == "low" and floor.retrieved == "2026-12-06"
    assert floor.cited == "msprechecker 0.4.0 presets/default.yaml sys.release"
    assert "pypi.org/project/msprechecker/0.4.0" in floor.source and "Version('5.10')" in floor.source
    assert [floor.older(text) for text in RELEASES] == [True, False, False, True, True, True, False]
    assert floor.older("garbage") is None


def _kernel_root(tmp_path: Path, release: str, **kw: object) -> Path:
    root = _root(tmp_path, HOST_MOUNTINFO, **kw)  # type: ignore[arg-type]
    (root / "proc/sys/kernel").mkdir(parents=True)
    (root / "proc/sys/kernel/osrelease").write_text(release + "\n")
    return root


def test_an_old_host_kernel_is_a_note(tmp_path):
    snap, found = _judge(_kernel_root(tmp_path / "ky10", "4.19.90-24.4.v2101.ky10.aarch64"))
    assert snap.facts["host_limits"]["kernel"] == {
        "source": "/proc/sys/kernel/osrelease",
        "release": "4.19.90-24.4.v2101.ky10.aarch64",
    }
    (f,) = found
    assert f.code == "HOST014" and f.severity == "info"
    assert f.title == (
        "The host kernel 4.19.90-24.4.v2101.ky10.aarch64 is older than 5.10, "
        "the release msprechecker expects for faster CPU dispatch"
    )
    assert f.evidence[0] == "/proc/sys/kernel/osrelease: 4.19.90-24.4.v2101.ky10.aarch64"
    assert f.evidence[1].startswith("msprechecker 0.4.0 presets/default.yaml sys.release: at least 5.10, severity low")
    assert f.fix == ["Upgrade this host's kernel to 5.10 or later (the operating system's kernel package, then reboot)"]
    # inside a container the kernel is the host's: the fix says so
    _snap, found = _judge(_kernel_root(tmp_path / "el7", "3.10.0-1160.el7.x86_64", docker=True))
    (f,) = found
    assert f.title.startswith("The host kernel 3.10.0-1160.el7.x86_64 is older than 5.10")
    assert f.fix[0].startswith("Upgrade the kernel of the host this container runs on to 5.10 or later")


def test_new_unknown_or_unreadable_kernels_are_quiet(tmp_path):
    for i, release in enumerate(("5.10.0-60.18.0.50.oe2203.aarch64", "5.15.0-91-generic", "not a release", "")):
        snap, found = _judge(_kernel_root(tmp_path / str(i), release))
        assert found == [], release
    assert snap.facts["host_limits"]["kernel"] is None  # an empty file is no release
    # no osrelease in the root (an image's filesystem): nothing judged
    snap, found = _judge(_root(tmp_path / "none", HOST_MOUNTINFO))
    assert snap.facts["host_limits"]["kernel"] is None and found == []
    # an old kernel on a machine without an NPU stack: nothing said
    assert _judge(_kernel_root(tmp_path / "cpu", "4.19.90-24.4.v2101.ky10.aarch64", npu=False))[1] == []
