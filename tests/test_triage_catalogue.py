"""The framework, host and driver-tool lines of issue 28: each real line (copied from the public
report its signature cites) is named with its fix, and harmless notices stay calm."""

from __future__ import annotations

import pytest

from npudoctor.knowledge.signatures import load_kb
from npudoctor.triage import triage_text

#: (line from a public report, signature id, label, severity, words its fixes must hold)
LINES = [
    (
        "RuntimeError: NPU out of memory. Tried to allocate 5.03 GiB (NPU 3; 60.96 GiB total capacity; 49.47 GiB"
        " already allocated; 49.47 GiB current active; 1.32 GiB free; 57.55 GiB reserved in total by PyTorch)",
        "npu-out-of-memory",
        "msg:npu-out-of-memory",
        "error",
        ("batch size", "parallelism", "PYTORCH_NPU_ALLOC_CONF", "leftover processes"),
    ),
    (
        "ERROR 05-07 05:58:46 core.py:291] AssertionError: Torch not compiled with CUDA enabled",
        "torch-cuda-not-compiled",
        "msg:cuda-not-compiled",
        "error",
        ("torch.npu", "transfer_to_npu"),
    ),
    (
        "RuntimeError: Distributed package doesn't have NCCL built in",
        "nccl-not-built",
        "msg:nccl-not-built",
        "error",
        ("backend='hccl'",),
    ),
    (
        "RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False.",
        "cuda-checkpoint-on-npu",
        "msg:cuda-checkpoint",
        "error",
        ("map_location",),
    ),
    (
        "The installed version of bitsandbytes was compiled without GPU support. 8-bit optimizers and GPU"
        " quantization are unavailable.",
        "cuda-only-package-warning",
        "msg:cuda-only-package",
        "warning",
        ("NPU backend",),
    ),
    (
        "RuntimeError: Cannot re-initialize NPU in forked subprocess. To use NPU with multiprocessing, you must use"
        " the 'spawn' start method",
        "npu-forked-subprocess",
        "msg:npu-fork",
        "error",
        ("VLLM_WORKER_MULTIPROC_METHOD=spawn", "set_start_method('spawn')"),
    ),
    (
        "RuntimeError: DataLoader worker (pid 56811) is killed by signal: Bus error. It is possible that"
        " dataloader's workers are out of shared memory. Please try to raise your shared memory limit.",
        "dataloader-shared-memory",
        "msg:shm-exhausted",
        "error",
        ("--shm-size", "/dev/shm", "num_workers"),
    ),
    (
        "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).",
        "dataloader-shared-memory",
        "msg:shm-exhausted",
        "error",
        ("--shm-size",),
    ),
    (
        # PaddlePaddle's wording of the same failure (PaddlePaddle/PaddleSpeech#790)
        "ERROR: Unexpected BUS error encountered in DataLoader worker. This might be caused by insufficient shared"
        " memory (shm), please check whether use_shared_memory is set and storage space in /dev/shm is enough",
        "dataloader-shared-memory",
        "msg:shm-exhausted",
        "error",
        ("--shm-size", "/dev/shm"),
    ),
    (
        "RuntimeError: unable to write to file </torch_8289_606636967_0>: No space left on device (28)",
        "dataloader-shared-memory",
        "msg:shm-exhausted",
        "error",
        ("--shm-size", "/dev/shm"),
    ),
    (
        "OpenBLAS blas_thread_init: pthread_create failed for thread 50 of 64: Resource temporarily unavailable",
        "openblas-thread-limit",
        "msg:thread-limit",
        "warning",
        ("OMP_NUM_THREADS", "--pids-limit", "ulimit -u"),
    ),
    (
        "libgomp: Thread creation failed: Resource temporarily unavailable",
        "libgomp-thread-limit",
        "msg:thread-limit",
        "error",
        ("OMP_NUM_THREADS",),
    ),
    (
        "PermissionError: [Errno 13] Permission denied: '//kernel_meta'",
        "cann-work-dir-not-writable",
        "msg:work-dir-not-writable",
        "error",
        ("ASCEND_WORK_PATH", "ASCEND_CACHE_PATH"),
    ),
    (
        "[ERROR] HCCL(2717288,python3):2025-07-23-03:47:57.070.463 [hccl_socket.cc:100] [2717288][HcclSocket][Listen]"
        " socket type[1], listen on ip[<ip>] and specific port[16666] fail. Please check the port status and whether"
        " the port is been using by other process.",
        "hccl-port-in-use",
        "msg:hccl-port-in-use",
        "error",
        ("leftover processes",),
    ),
    (
        "[ERROR] HCCL(2717288,python3):2025-07-23-03:49:57.177.194 [hccl_socket_manager.cc:778] [2734049][Wait]"
        "[LinkEstablish]wait socket establish timeout, role[1] rank[12] timeout[120]",
        "hccl-link-timeout",
        "msg:hccl-link-timeout",
        "error",
        ("HCCL_CONNECT_TIMEOUT",),
    ),
    (
        "[RAW SERVER] /usr/local/python3.11.13/lib/python3.11/site-packages/torch_npu/utils/_path_manager.py:66:"
        " UserWarning: Permission mismatch: The owner of /usr/local/python3.11.13/lib/python3.11/site-packages/"
        "torch_npu/lib/libop_plugin_atb.so does not match.",
        "torch-npu-permission-mismatch",
        "msg:permission-mismatch",
        "warning",
        ("chown", "the account that runs it"),
    ),
    (
        "gpustack_runtime.detector.pydcmi.DCMIError_LibraryNotFound: Library Not Found",
        "dcmi-library-not-found",
        "msg:dcmi-library-not-found",
        "error",
        ("/usr/local/dcmi", "/usr/local/Ascend/driver"),
    ),
    (
        "[ERROR] HCCL(310612,python3):2025-08-17-13:03:25.747.057 [adapter_hccp.cc:2286] [434628]this package does"
        " not support hrtRaAiQpCreate for device, please change new package",
        "hccl-package-not-support",
        "msg:hccl-package-not-support",
        "error",
        ("upgrade the driver and firmware",),
    ),
    (
        "RuntimeError: Expected all tensors to be on the same device. Expected NPU tensor, please check whether the"
        " input tensor device is correct.",
        "cpu-tensor-on-npu-op",
        "msg:cpu-tensor-on-npu",
        "error",
        ("tensor.to('npu')", "register_buffer"),
    ),
    (
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cpu and npu:0!",
        "cpu-tensor-on-npu-op",
        "msg:cpu-tensor-on-npu",
        "error",
        ("tensor.to('npu')",),
    ),
    (
        "te 0.4.0 requires cloudpickle, which is not installed.",
        "cann-pip-requirement-missing",
        "msg:cann-pip-requirement",
        "error",
        ("-m pip install cloudpickle",),
    ),
    (
        "OpenBLAS blas_thread_init: pthread_create failed for thread 34 of 64: Operation not permitted",
        "thread-create-not-permitted",
        "msg:thread-limit",
        "error",
        ("20.10.10", "--security-opt seccomp=unconfined"),
    ),
    (
        "[2026-04-28 07:59:11.955139][WARN]     261     dcmi/dcmi.go:1466    get cur vDev's activity info failed, err:"
        " retCode: -8255",
        "vnpu-dcmi-code",
        "dcmi:-8255",
        "warning",
        ("npu-smi info -t info-vnpu", "ASCEND_RUNTIME_OPTIONS=VIRTUAL"),
    ),
    # npu-smi's own wording (printed by npu-smi set -t create-vnpu), and the device plugin's with a code
    ("create vnpu failed.", "vnpu-create-failed", "msg:vnpu-create-failed", "error", ("info-vnpu", "create-vnpu")),
    (
        "create vnpu failed. card_id = 0, device_id = 0, vdev_id = 4294967295, vfg_id = 4294967295,"
        " template_name = vir04. err is -8255",
        "vnpu-dcmi-code",
        "dcmi:-8255",
        "warning",
        ("npu-smi info -t info-vnpu",),
    ),
    (
        "EZ9999: [PID: 775] 2025-02-16-12:18:25.258.321 Cannot find bin of op Range, integral key"
        " 0/1/|int64/ND/int64/ND/int64/ND/int64/ND/.",
        "op-binary-not-found",
        "msg:op-no-binary",
        "error",
        ("kernels/ops package", "float16"),
    ),
    (
        "[ERROR] 2025-05-15-11:58:25 (PID:6688, Device:-1, RankID:-1) ERR99999 UNKNOWN applicaiton exception",
        "pta-code",
        "pta:ERR99999",
        "error",
        ("Python traceback above it",),
    ),
]


@pytest.mark.parametrize("line, entry_id, label, severity, words", LINES, ids=[x[1] for x in LINES])
def test_framework_host_and_driver_tool_lines_are_named_with_their_fix(line, entry_id, label, severity, words):
    doc = triage_text(line + "\n")
    (group,) = doc["known"]
    assert (group["id"], group["label"], group["severity"]) == (entry_id, label, severity)
    fixes = " ".join(group["fix"])
    for word in words:
        assert word in fixes, (word, group["fix"])
    assert group["sources"] and all(s.startswith("https://") for s in group["sources"])


def test_captures_of_the_line_are_kept():
    doc = triage_text("wait socket establish timeout, role[1] rank[12] timeout[120]\n")
    assert doc["known"][0]["captures"] == {"rank": "12", "timeout": "120"}
    oom = triage_text("RuntimeError: NPU out of memory. Tried to allocate 268.00 MiB\n")
    assert oom["known"][0]["captures"] == {"size": "268.00 MiB"}


BENIGN = [
    "[W compiler_depend.ts:51] Warning: CAUTION: The operator 'torchvision::nms' is not currently supported on the"
    " NPU backend and will fall back to run on the CPU. This may have performance implications. (function"
    " npu_cpu_fallback)",
    "/root/miniconda3/envs/fast_chat/lib/python3.8/site-packages/torch_npu/dynamo/__init__.py:18: UserWarning:"
    " Register eager implementation for the 'npu' backend of dynamo, as torch_npu was not compiled with torchair.",
    "/usr/local/lib/python3.10/dist-packages/torch_npu/contrib/transfer_to_npu.py:247: RuntimeWarning: torch.jit.script"
    " and torch.jit.script_method will be disabled by transfer_to_npu, which currently does not support them, if you"
    " need to enable them, please do not use transfer_to_npu.",
    "[W OptionsManager.cpp:64] Warning: The environment variable ACL_DUMP_DATA has been deprecated, please use"
    " torch_npu.npu.init_dump() instead (function operator())",
    "(APIServer pid=1) INFO 09-08 02:54:59 [api_server.py:1880] Starting vLLM API server 0 on http://0.0.0.0:8000",
    "OpenBLAS blas_thread_init: RLIMIT_NPROC 4096 current, 513046 max",
    "[2023-09-13 10:20:36,763] torch.distributed.run: [WARNING] Setting OMP_NUM_THREADS environment variable for each"
    " process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal"
    " performance in your application as needed. ",
    "op-compile-tool 0.1.0 requires getopt, which is not installed.",
    "op-compile-tool 0.1.0 requires multiprocessing, which is not installed.",
]


def test_benign_lines_make_no_error_claim():
    doc = triage_text("\n".join(BENIGN) + "\n")
    assert doc["summary"]["known_errors"] == 0 and doc["summary"]["known_warnings"] == 0
    assert all(g["severity"] == "noise" for g in doc["known"])
    assert {g["id"] for g in doc["known"]} == {
        "npu-cpu-fallback-notice",
        "torchair-not-compiled-notice",
        "transfer-to-npu-notice",
        "cann-pip-stdlib-requirement",
    }
    assert doc["first_error"] is None and doc["verdict"] is None


def test_every_new_label_is_explained():
    kb = load_kb()
    for _line, entry_id, label, _severity, _words in LINES:
        page = kb.explain(label)
        # a code (dcmi:-8255, pta:ERR99999) is explained by its entry in the code tables
        expected = "error code" if label.startswith(("dcmi:", "pta:")) else "signature"
        assert page is not None and page["what"] == expected, label
        assert kb.explain(entry_id) is not None


#: Lines that look like a family's but whose own words rule its cause out: they must not be named
#: with it (two NPUs, no CPU tensor; a thread limit, not a refused system call; a requirement
#: that is not the toolkit's).
LOOK_ALIKES = [
    (
        "('Expected all tensors to be on the same device, but found at least two devices, npu:7 and npu:0! (when"
        " checking argument for argument src in method wrapper__npu_dtype_cast_)',)",
        "cpu-tensor-on-npu-op",
    ),
    (
        "OpenBLAS blas_thread_init: pthread_create failed for thread 50 of 64: Resource temporarily unavailable",
        "thread-create-not-permitted",
    ),
    ("conda-repo-cli 1.0.75 requires requests_mock, which is not installed.", "cann-pip-requirement-missing"),
    (
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!",
        "cpu-tensor-on-npu-op",
    ),
]


@pytest.mark.parametrize("line, entry_id", LOOK_ALIKES, ids=[x[1] for x in LOOK_ALIKES])
def test_look_alikes_are_not_given_the_familys_cause(line, entry_id):
    doc = triage_text(line + "\n")
    assert entry_id not in {g["id"] for g in doc["known"]}
