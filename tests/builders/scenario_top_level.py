"""The ``top_level`` expectation of each scenario the builders write (tests/build_*_scenarios.py):
the number of top-level findings ``check`` reports for it, folded symptoms not counted, and
how many symptoms are folded under their cause (a comment in its scenario.toml).  The
scenarios written by hand state it in their scenario.toml directly.  A change of either
number is a change of what the report shows: review it, then edit the number here and
rebuild (tests/test_scenario_builders.py checks that the trees match)."""

from __future__ import annotations

from typing import Dict, List, Tuple

#: scenario name -> (top-level findings, findings folded under their cause)
TOP_LEVEL: Dict[str, Tuple[int, int]] = {
    "case02-vllm-ascend-0.7.1rc1-torch-npu-2.5.1rc1": (6, 1),
    "case05-mindie-atb-models-1.0.RC2-torch-npu-2.1.0.post4": (3, 0),
    "case11-torch-npu-2.7.1-on-cann-9.0.0-beta.2": (3, 1),
    "case13-vllm-ascend-0.7.3-on-cann-8.0.0": (4, 0),
    "case14-vllm-ascend-0.7.3rc1-cann-7.0-custom-prefix": (8, 1),
    "case17-conda-vllm-ascend-numpy-2-cann-8.2.RC1": (4, 1),
    "case22-torch-npu-not-on-configured-mirror-aarch64": (3, 0),
    "case23-toolkit-sourced-never-kernels-missing": (3, 0),
    "case25-training-launcher-without-cann-pythonpath": (3, 0),
    "case27-atb-cxx-abi-1-with-old-abi-torch": (4, 1),
    "fw-cuda-flash-attn-transformer-engine-beside-torch-npu": (2, 0),
    "fw-lmdeploy-0.9.2-beside-torch-npu-2.5.1.post1": (2, 0),
    "fw-torch-2.6.0-python-3.12-no-torch-npu": (2, 0),
    "fw-vllm-ascend-0.11.0rc2-on-cann-8.2.RC1": (2, 0),
    "fw-vllm-ascend-310p-build-on-910b3": (2, 0),
    "fw-vllm-ascend-910b-build-on-910b3": (1, 0),
    "health-910b3-8npu-healthy": (2, 0),
    "health-chip-alarm": (3, 0),
    "health-chip-critical": (3, 0),
    "health-devices-not-passed": (3, 1),
    "health-driver-not-mounted": (2, 3),
    "health-env-not-sourced": (3, 0),
    "health-npu-smi-garbled": (3, 0),
    "health-npu-smi-hung": (3, 0),
    "k04-nnal-8.2.RC1-on-toolkit-8.0.0": (5, 1),
    "k05-cann-too-old-custom-prefix": (5, 1),
    "k05-paired-cann-8.2.RC1-torch-npu-2.7.1": (3, 1),
    "k05-torch-npu-2.10-on-cann-8.0.0": (4, 1),
    "k11-atb-home-abi-dir-missing": (5, 1),
    "k11-nnal-missing-vllm-ascend": (6, 1),
    "k12-kernels-8.2.RC1-over-toolkit-8.0.0": (4, 1),
    "k12-kernels-for-910b-on-310p3": (6, 0),
    "k12-kernels-missing-910b3": (3, 0),
    "k14-container-cann-8.5-host-driver-24.1": (5, 0),
    "k14-firmware-25.0-with-driver-25.3": (2, 0),
    "multi-cann-8.5-next-to-classic-8.2": (3, 1),
    "multi-cann-older-selected": (4, 1),
    "no-cann-plain-machine": (1, 0),
    "no-cann-torch-npu-installed": (3, 1),
    "tun-910b3-healthy-tuned": (2, 0),
    "tun-aclnn-cache-limit-capped": (3, 0),
    "tun-alloc-conf-key-too-new": (3, 0),
    "tun-cpu-affinity-outside-cpuset": (3, 0),
    "tun-cpuset-away-from-npus": (3, 0),
    "tun-cuda-named-variables": (4, 0),
    "tun-docker-default-shm-and-memlock": (4, 0),
    "tun-hccl-buffsize-in-bytes": (3, 0),
    "tun-hccl-connect-timeout-out-of-range": (3, 0),
    "tun-hccl-event-timeout-below-exec": (3, 0),
    "tun-hccl-exec-timeout-aiv-cap": (3, 0),
    "tun-hccl-rdma-sl-out-of-range": (3, 0),
    "tun-host-kernel-4.19": (3, 0),
    "tun-host-overcommit-strict-powersave": (4, 0),
    "tun-inf-nan-mode-0-on-a2": (3, 0),
    "tun-max-op-cache-size-zero": (3, 0),
    "tun-npu-collect-path-left-set": (3, 0),
    "tun-remain-cache-ratio-out-of-range": (3, 0),
    "tun-task-queue-enable-true": (3, 0),
    "tun-te-parallel-compiler-out-of-range": (3, 0),
}


def expect_lines(name: str) -> List[str]:
    """The ``top_level`` line of scenario ``name``'s ``[expect]`` table."""
    top, folded = TOP_LEVEL[name]
    return [f"top_level = {top}" + (f"  # {folded} more folded under their cause" if folded else "")]
