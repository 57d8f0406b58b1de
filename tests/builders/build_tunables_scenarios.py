"""(Re)build the runtime-tunables and host-readiness scenarios ``tests/scenarios/tun-*``
(issue 33): one container of an 8 x 910B3 node as in tests/builders/build_health_scenarios.py (CANN
8.0.0 sourced, torch_npu 2.1.0.post10, the real `npu-smi info` capture), with one setting
wrong per scenario, and one healthy scenario with many correct non-default settings.

    python tests/builders/build_tunables_scenarios.py        # rewrites the tun-* folders

Host-readiness facts are files of the root: ``proc/self/mountinfo`` (the kernel's format;
Docker's /dev/shm is ``size=65536k``), ``proc/self/limits``, ``proc/self/status``,
``proc/sys/vm/overcommit_*``, one ``scaling_governor`` per cpufreq policy, the NUMA nodes'
``cpulist`` and the NPUs' PCI ``numa_node`` (the capture's bus ids; two NPUs per node),
``proc/sys/kernel/osrelease`` (the host's kernel release, where a scenario sets one).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Dict, List

HERE = Path(__file__).resolve().parents[1]  # tests/
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from builders.build_cann_scenarios import toml_value, write  # noqa: E402
from builders.build_health_scenarios import HEALTHY_CAPTURE, container_root, npu_smi_replay, sourced_env  # noqa: E402
from builders.scenario_top_level import expect_lines  # noqa: E402

OUT = HERE / "scenarios"

MOUNTINFO = (
    "612 540 0:52 / / rw,relatime master:290 - overlay overlay rw,lowerdir=/l,upperdir=/u,workdir=/w\n"
    "613 612 0:55 / /dev rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755\n"
    "619 613 0:60 / /dev/shm rw,nosuid,nodev,noexec,relatime - tmpfs shm rw,size={shm}\n"
)
LIMITS = (
    "Limit                     Soft Limit           Hard Limit           Units     \n"
    "Max open files            {nofile:<20} {nofile:<20} files     \n"
    "Max locked memory         {memlock:<20} {memlock:<20} bytes     \n"
)
STATUS = "Name:\tpython3\nCpus_allowed_list:\t{cpus}\nMems_allowed_list:\t0-3\n"

NO_TUNABLE = ["ENV008", "ENV009", "ENV010", "ENV011", "ENV012"]
NO_HOST = ["HOST006", "HOST007", "HOST008", "HOST009", "HOST010", "HOST011", "HOST012", "HOST013", "HOST014"]
#: The NUMA node of each NPU of the healthy capture (bus ids as npu-smi prints them); node 1
#: holds none, so a cpuset on node 1 is away from every NPU.
#: The kernel release of a real 910B3 host (vllm-ascend collect_env, Python platform:
#: Linux-5.10.0-60.139.0.166.oe2203.aarch64-aarch64-with-glibc2.35): openEuler 22.03.
KERNEL_510 = "5.10.0-60.139.0.166.oe2203.aarch64"
NPU_NODES = {"C1": 3, "C2": 3, "81": 2, "82": 2, "01": 0, "02": 0, "41": 0, "42": 0}


def host_files(
    root: Path,
    shm: str = "16777216k",
    memlock: str = "unlimited",
    nofile: str = "1048576",
    cpus: str = "0-191",
    overcommit: str = "0",
    governor: str = "performance",
    kernel: str = "",
) -> None:
    write(root, "proc/self/mountinfo", MOUNTINFO.format(shm=shm))
    write(root, "proc/self/limits", LIMITS.format(memlock=memlock, nofile=nofile))
    write(root, "proc/self/status", STATUS.format(cpus=cpus))
    write(root, "sys/devices/system/cpu/online", "0-191\n")
    write(root, "proc/sys/vm/overcommit_memory", overcommit + "\n")
    write(root, "proc/sys/vm/overcommit_ratio", "50\n")
    for node in range(4):
        write(root, f"sys/devices/system/node/node{node}/cpulist", f"{node * 48}-{node * 48 + 47}\n")
        write(root, f"sys/devices/system/cpu/cpufreq/policy{node * 48}/scaling_governor", governor + "\n")
    for bus, node in NPU_NODES.items():
        write(root, f"sys/bus/pci/devices/0000:{bus.lower()}:00.0/numa_node", f"{node}\n")
    if kernel:
        write(root, "proc/sys/kernel/osrelease", kernel + "\n")


def scenario(name: str, title: str, source: str, env: Dict[str, str], expect: Dict[str, object]) -> Path:
    """``OUT/name`` with its scenario.toml (``[scenario]``, ``[env]``, ``[expect]``)."""
    path = OUT / name
    if path.exists():
        shutil.rmtree(path)
    (path / "root").mkdir(parents=True)
    lines = ["[scenario]", f"title = {toml_value(title)}", f"source = {toml_value(source)}", "", "[env]"]
    lines += [f"{k} = {toml_value(v)}" for k, v in env.items()]
    lines += ["", "[expect]"] + expect_lines(name) + [f"{k} = {toml_value(v)}" for k, v in expect.items()]
    (path / "scenario.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    write(path / "root", "etc/hostname", "npu-train-0\n")
    return path


def build() -> List[str]:
    base = dict({"HOME": "/root"}, **sourced_env())
    built: List[str] = []

    def make(name: str, title: str, source: str, env: Dict[str, str], expect: Dict[str, object], **host: str) -> Path:
        s = scenario(name, title, source, dict(base, **env), expect)
        container_root(s / "root")
        host_files(s / "root", **host)
        npu_smi_replay(s, HEALTHY_CAPTURE)
        built.append(name)
        return s

    make(
        "tun-910b3-healthy-tuned",
        "healthy container with many correct non-default runtime settings: nothing to report about them",
        "Ascend/pytorch environment-variable reference (TASK_QUEUE_ENABLE, PYTORCH_NPU_ALLOC_CONF, ...); "
        "CANN environment-variable reference (HCCL_BUFFSIZE, HCCL_CONNECT_TIMEOUT)",
        {
            "TASK_QUEUE_ENABLE": "2",
            "PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True",
            "MULTI_STREAM_MEMORY_REUSE": "2",
            "STREAMS_PER_DEVICE": "32",
            "HCCL_BUFFSIZE": "400",
            "HCCL_CONNECT_TIMEOUT": "1800",
            "ACL_OP_COMPILER_CACHE_MODE": "enable",
            "INF_NAN_MODE_ENABLE": "1",
            "ASCEND_LAUNCH_BLOCKING": "0",
            "OMP_NUM_THREADS": "8",
            "LOCAL_WORLD_SIZE": "8",
            "CPU_AFFINITY_CONF": "2",
            "HCCL_EXEC_TIMEOUT": "1800",
            "HCCL_EVENT_TIMEOUT": "3600",
            "HCCL_RDMA_TC": "132",
            "HCCL_RDMA_SL": "4",
            "HCCL_RDMA_TIMEOUT": "18",
            "HCCL_ASYNC_ERROR_HANDLING": "1",
            "TE_PARALLEL_COMPILER": "16",
            "ASCEND_REMAIN_CACHE_SIZE_RATIO": "80",
            "ACLNN_CACHE_LIMIT": "100000",
            "ASCEND_MAX_OP_CACHE_SIZE": "-1",
        },
        {"exit": 0, "absent": NO_TUNABLE + NO_HOST},
        kernel=KERNEL_510,
    )
    make(
        "tun-task-queue-enable-true",
        "TASK_QUEUE_ENABLE=true: torch_npu reads it with strtol as 0 and switches the task queue off",
        "torch_npu OptionsManager::GetTaskQueueEnable (strtol); TASK_QUEUE_ENABLE.md",
        {"TASK_QUEUE_ENABLE": "true"},
        {"exit": 0, "codes": ["ENV009"], "absent": ["ENV008"]},
    )
    make(
        "tun-inf-nan-mode-0-on-a2",
        "INF_NAN_MODE_ENABLE=0 on Atlas A2 without INF_NAN_MODE_FORCE_DISABLE=1: refused at init",
        "INF_NAN_MODE_ENABLE.md (A2/A3 intercept saturation mode)",
        {"INF_NAN_MODE_ENABLE": "0"},
        {"exit": 1, "codes": ["ENV008"]},
    )
    make(
        "tun-alloc-conf-key-too-new",
        "PYTORCH_NPU_ALLOC_CONF names segment_size_mb, which torch_npu 2.1.0.post10 does not know",
        "PYTORCH_NPU_ALLOC_CONF.md (segment_size_mb: torch_npu 7.2.0.1); 'Unrecognized CachingAllocator option'",
        {"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True,segment_size_mb:64"},
        {"exit": 1, "codes": ["ENV008"]},
    )
    make(
        "tun-cuda-named-variables",
        "a script ported from CUDA keeps PYTORCH_CUDA_ALLOC_CONF and NCCL_SOCKET_IFNAME: nothing reads them",
        "modelscope/ms-swift#8141; gpustack/gpustack PR#3311",
        {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "NCCL_SOCKET_IFNAME": "eth0"},
        {"exit": 0, "codes": ["ENV011"]},
    )
    make(
        "tun-hccl-buffsize-in-bytes",
        "HCCL_BUFFSIZE given in bytes (copied from NCCL_BUFFSIZE): 4194304 MB twice per communicator",
        "CANN environment-variable reference, HCCL_BUFFSIZE (MB)",
        {"HCCL_BUFFSIZE": "4194304"},
        {"exit": 1, "codes": ["ENV008"]},
    )
    make(
        "tun-cpu-affinity-outside-cpuset",
        "CPU_AFFINITY_CONF=1 in a container limited to CPUs 0-47 of 192: the default ranges of NPUs 2-7 "
        "lie outside the cpuset, so torch_npu binds nothing",
        "CPU_AFFINITY_CONF.md (default ranges split all CPUs over the NPUs; Docker may change the mapping)",
        {"CPU_AFFINITY_CONF": "1"},
        {"exit": 0, "codes": ["ENV009"]},
        cpus="0-47",
    )
    make(
        "tun-hccl-connect-timeout-out-of-range",
        "HCCL_CONNECT_TIMEOUT=60 in a single-process run: below the documented range [120, 7200]",
        "CANN environment-variable reference, HCCL_CONNECT_TIMEOUT",
        {"HCCL_CONNECT_TIMEOUT": "60"},
        {"exit": 0, "codes": ["ENV009"], "absent": ["HCCL013"]},
    )
    make(
        "tun-hccl-event-timeout-below-exec",
        "HCCL_EVENT_TIMEOUT=600 with HCCL_EXEC_TIMEOUT=1800: the event wait gives up first",
        "HCCL_EVENT_TIMEOUT.md (must be greater than HCCL_EXEC_TIMEOUT)",
        {"HCCL_EVENT_TIMEOUT": "600", "HCCL_EXEC_TIMEOUT": "1800"},
        {"exit": 0, "codes": ["ENV009"]},
    )
    make(
        "tun-docker-default-shm-and-memlock",
        "container started without --shm-size and --ulimit memlock: 64 MB /dev/shm, 64 KiB memlock",
        "DeepSpeed env_report get_shm_size; vllm-project/vllm-ascend#8113; LMCache/LMCache-Ascend#5",
        {"OMP_NUM_THREADS": "4"},
        {"exit": 0, "codes": ["HOST006", "HOST007"]},
        shm="65536k",
        memlock="65536",
    )
    make(
        "tun-hccl-exec-timeout-aiv-cap",
        "HCCL_EXEC_TIMEOUT=1800 with HCCL_OP_EXPANSION_MODE=AIV on Atlas A2: AIV mode caps it at 1091 s",
        "hicann/hccl docs/zh/user_guide/hccl_env/HCCL_EXEC_TIMEOUT.md (AIV: [0, 1091], larger values act as 1091)",
        {"HCCL_EXEC_TIMEOUT": "1800", "HCCL_OP_EXPANSION_MODE": "AIV"},
        {"exit": 0, "codes": ["ENV009"], "absent": ["ENV008", "HCCL011"]},
    )
    make(
        "tun-hccl-rdma-sl-out-of-range",
        "HCCL_RDMA_SL=9: outside [0, 7], HCCL refuses it at communicator init (EI0001)",
        "hicann/hccl docs/zh/user_guide/hccl_env/HCCL_RDMA_SL.md; fault_diagnosis/env_config_error_EI0001.md",
        {"HCCL_RDMA_SL": "9"},
        {"exit": 1, "codes": ["ENV008"]},
    )
    make(
        "tun-host-overcommit-strict-powersave",
        "a host with vm.overcommit_memory=2 and the powersave cpufreq governor",
        "kernel Documentation/mm/overcommit-accounting.rst; aws-samples/aws-eda-slurm-cluster#38; "
        "CANN 8.5.0 installation guide, BIOS power policy",
        {},
        {"exit": 0, "codes": ["HOST011", "HOST012"]},
        overcommit="2",
        governor="powersave",
    )
    make(
        "tun-host-kernel-4.19",
        "a container on a host running kernel 4.19 (BC-Linux on openEuler 20.03): msprechecker expects 5.10",
        "msprechecker 0.4.0 presets/default.yaml sys.release (ge 5.10, severity low); "
        "the release of a real 910B2 host (llamafactory-cli env, Platform: Linux-4.19.90-2107.6.0.0192.8.oe1...)",
        {},
        {"exit": 0, "codes": ["HOST014"], "absent": ["HOST006", "HOST007", "HOST011", "HOST012", "HOST013"]},
        kernel="4.19.90-2107.6.0.0192.8.oe1.bclinux.aarch64",
    )
    make(
        "tun-cpuset-away-from-npus",
        "a container pinned to CPUs 48-71 (NUMA node 1) while every NPU of this host sits on node 0, 2 or 3",
        "Ascend/pytorch CPU_AFFINITY_CONF.md (binding avoids cross-NUMA access)",
        {},
        {"exit": 0, "codes": ["HOST013"]},
        cpus="48-71",
    )
    make(
        "tun-te-parallel-compiler-out-of-range",
        "TE_PARALLEL_COMPILER=64: above the 1 to 32 operator compile processes GE accepts",
        "hicann/ge docs/zh/user_guides/env_vars/TE_PARALLEL_COMPILER.md; "
        "python_adapter_manager.cc ParallelCompilerProcessesNumCheck (valid_range [1, 32])",
        {"TE_PARALLEL_COMPILER": "64"},
        {"exit": 0, "codes": ["ENV009"], "absent": ["ENV008"]},
    )
    make(
        "tun-remain-cache-ratio-out-of-range",
        "ASCEND_REMAIN_CACHE_SIZE_RATIO=150: not a percentage, CANN keeps the default 50 when it trims the cache",
        "hicann/ge docs/zh/user_guides/env_vars/ASCEND_REMAIN_CACHE_SIZE_RATIO.md; "
        "te_cache_space_manager.cc GetCacheRemainSizeRadio",
        {"ASCEND_REMAIN_CACHE_SIZE_RATIO": "150"},
        {"exit": 0, "codes": ["ENV009"], "absent": ["ENV008"]},
    )
    make(
        "tun-aclnn-cache-limit-capped",
        "ACLNN_CACHE_LIMIT=50000000: above the documented 10000000 entries, the aclnn cache is capped there",
        "CANN environment-variable reference ACLNN_CACHE_LIMIT (envref_07_0031); "
        "hicann/opbase op_cache.cpp GetCacheSizeLimit",
        {"ACLNN_CACHE_LIMIT": "50000000"},
        {"exit": 0, "codes": ["ENV009"], "absent": ["ENV008"]},
    )
    make(
        "tun-max-op-cache-size-zero",
        "ASCEND_MAX_OP_CACHE_SIZE=0 meant as 'no compile cache': CANN refuses 0 and keeps 500 MB",
        "hicann/ge docs/zh/user_guides/env_vars/ASCEND_MAX_OP_CACHE_SIZE.md; "
        "te_cache_space_manager.cc GetCacheSpaceMaxSizeCfg ('it should be -1 or [1, 2147483647)')",
        {"ASCEND_MAX_OP_CACHE_SIZE": "0"},
        {"exit": 0, "codes": ["ENV009"], "absent": ["ENV008"]},
    )
    make(
        "tun-npu-collect-path-left-set",
        "NPU_COLLECT_PATH left set after a fault was reproduced: exception dumps stay on",
        "CANN environment-variable reference NPU_COLLECT_PATH (canncommercial/900 envref_07_0163)",
        {"NPU_COLLECT_PATH": "/data/npu_collect"},
        {"exit": 0, "codes": ["ENV010"], "absent": ["ENV008", "ENV009"]},
    )
    return built


if __name__ == "__main__":
    for name in build():
        print("built", OUT / name)
