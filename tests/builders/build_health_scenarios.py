"""(Re)build the container health-check scenarios ``tests/scenarios/health-*`` from the real
samples in tests/fixtures/ (copied from ../shared/samples, file names kept).

    python tests/builders/build_health_scenarios.py        # rewrites the health-* folders

Every scenario is one container of an 8-card Atlas 800T A2 (910B3) node, built like the
official CANN images run with the standard device mounts
(samples/docker-run_vllm-ascend_standard-device-mounts.sh.txt):

* ``/.dockerenv``; ``/dev/davinci0-7``, ``/dev/davinci_manager``, ``/dev/devmm_svm``,
  ``/dev/hisi_hdc`` (without the devices: a ``/dev`` that holds none of them); the host's
  driver (``/usr/local/Ascend/driver`` with the real ``version.info`` 24.1.rc2.2),
  ``/usr/local/dcmi``, ``/usr/local/bin/npu-smi`` and ``/etc/ascend_install.info`` mounted in;
* the classic CANN 8.0.0 toolkit (real ``ascend_toolkit_install.info``, real
  ``set_env.sh``, ascend910b kernels), Python 3.10 with torch 2.1.0 + torch_npu
  2.1.0.post10 and the Python packages CANN needs -- the matrix pairs torch_npu
  2.1.0.post10 with CANN 8.0.0, and CANN 8.0.0 needs Ascend HDK >= 24.1.RC2;
* ``bin/npu-smi`` (first on PATH) prints the real 8 x 910B3 capture
  ``npu-smi-info_910B3_23.0.7_8npu_noproc.txt``.  Its table header says 23.0.7 (the
  capture's machine); the driver version npudoctor judges comes from
  ``driver/version.info`` (24.1.rc2.2), which takes precedence over the header;
* ``[env]`` is the environment ``source .../ascend-toolkit/set_env.sh`` leaves (computed
  from the real script by :func:`npudoctor.cann_env.expected_environment`; PATH is the
  runner's).

Each scenario.toml carries, besides ``[expect]`` for ``npudoctor check``, one or more
``[[health]]`` tables for ``npudoctor health`` (read by tests/test_health.py)::

    [[health]]
    args  = ["--fail-on", "warning"]     # extra arguments (optional)
    exit  = 1                            # 0 healthy, 1 unhealthy
    match = ["^unhealthy: DEV010 "]      # regexes that stdout lines must match (each one some line)
"""

from __future__ import annotations

import shutil
import stat
import sys
from pathlib import Path
from typing import Dict, Iterable, List, Optional

HERE = Path(__file__).resolve().parents[1]  # tests/
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from builders.build_cann_scenarios import classic_toolkit, dist, fixture, mkdir, toml_value, write  # noqa: E402
from builders.scenario_top_level import expect_lines  # noqa: E402

OUT = HERE / "scenarios"
AS = "usr/local/Ascend"
SITE = "usr/local/lib/python3.10/site-packages"
TOOLKIT = "/usr/local/Ascend/ascend-toolkit/latest"

HEALTHY_CAPTURE = "npu-smi-info_910B3_23.0.7_8npu_noproc.txt"
#: The same capture with NPU 3's Health column edited from OK to Critical (no real capture
#: of a Critical 910B3 exists in the samples); the file name says so.
CRITICAL_CAPTURE = "EDITED_npu-smi-info_910B3_23.0.7_8npu_noproc_npu3-Critical.txt"
#: The same capture with NPU 5's Health column edited from OK to Alarm (the real Alarm
#: captures are of 310B4 and A3 machines, whose stacks differ).
ALARM_CAPTURE = "EDITED_npu-smi-info_910B3_23.0.7_8npu_noproc_npu5-Alarm.txt"

#: CANN's Python dependencies (Python 3.10 wheels current with CANN 8.0.0; protobuf 3.20.x
#: as the CANN 8.0.0 install guide pins it).
CANN_PY_DEPS = {
    "decorator": "5.1.1",
    "attrs": "23.2.0",
    "psutil": "5.9.8",
    "absl-py": "2.1.0",
    "cloudpickle": "3.0.0",
    "ml-dtypes": "0.2.0",
    "scipy": "1.11.4",
    "tornado": "6.4",
    "sympy": "1.12",
    "cffi": "1.16.0",
    "protobuf": "3.20.3",
    "PyYAML": "6.0.1",
    "requests": "2.31.0",
    "numpy": "1.26.4",
}
TAG = "cp310-cp310-manylinux_2_17_aarch64.manylinux2014_aarch64"


def edited_captures() -> None:
    """Write the two edited copies of the healthy capture into tests/fixtures/ (only the
    Health column of one NPU changes; the table widths stay exact)."""
    text = fixture(HEALTHY_CAPTURE).decode()
    for name, npu, state in ((CRITICAL_CAPTURE, 3, "Critical"), (ALARM_CAPTURE, 5, "Alarm")):
        lines = text.splitlines(keepends=True)
        for i, line in enumerate(lines):
            if line.startswith(f"| {npu}     910B3"):
                assert "| OK            |" in line, line
                lines[i] = line.replace("| OK            |", f"| {state:<14}|", 1)
                break
        else:  # pragma: no cover - the capture is fixed
            raise SystemExit(f"NPU {npu} row not found in {HEALTHY_CAPTURE}")
        (HERE / "fixtures" / name).write_text("".join(lines))


def npu_smi_replay(scenario: Path, capture: str) -> None:
    """``bin/npu-smi``: `info` prints the capture; other sub-commands were not captured."""
    write(scenario, f"bin/{capture}", fixture(capture))
    _script(
        scenario,
        "#!/bin/sh\n"
        f"# replays a captured `npu-smi info` (tests/fixtures/{capture})\n"
        f'if [ "$*" = "info" ]; then cat "$(dirname "$0")/{capture}"; exit 0; fi\n'
        'echo "npu-smi $*: not captured in this scenario" >&2\nexit 1\n',
    )


def _script(scenario: Path, body: str) -> None:
    path = write(scenario, "bin/npu-smi", body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def sourced_env() -> Dict[str, str]:
    """What `source /usr/local/Ascend/ascend-toolkit/set_env.sh` sets, from the real
    script (evaluated statically on a scratch tree holding only the script)."""
    import tempfile

    from npudoctor.cann_env import expected_environment
    from npudoctor.host import Host

    with tempfile.TemporaryDirectory() as tmp:
        write(Path(tmp), f"{AS}/ascend-toolkit/set_env.sh", fixture("set_env_toolkit_8.0.0.sh.txt"))
        (Path(tmp) / AS / "ascend-toolkit/latest").mkdir(parents=True)
        host = Host(root=tmp, environ={})
        exp = expected_environment(host, TOOLKIT, environ={}, arch="aarch64")
    assert exp["method"] == "set_env.sh", exp
    return {k: v.rstrip(":") for k, v in exp["variables"].items() if k != "PATH"}


def container_root(root: Path, *, devices: bool = True, driver: bool = True) -> None:
    """The container filesystem described in the module docstring."""
    write(root, ".dockerenv", "")
    write(root, "etc/passwd", "root:x:0:0:root:/root:/bin/bash\nHwHiAiUser:x:1000:1000::/home/HwHiAiUser:/bin/bash\n")
    write(root, "etc/group", "root:x:0:\nHwHiAiUser:x:1000:\n")
    if devices:
        for n in range(8):
            write(root, f"dev/davinci{n}", "")
        for node in ("davinci_manager", "devmm_svm", "hisi_hdc"):
            write(root, f"dev/{node}", "")
    else:
        mkdir(root, "dev")  # every container has a /dev: here one without the NPU nodes
    if driver:
        write(root, f"{AS}/driver/version.info", fixture("driver_version.info_24.1.rc2.2.txt"))
        write(root, f"{AS}/driver/lib64/driver/libascend_hal.so", "")
        write(root, f"{AS}/driver/lib64/common/.keep", "")
        write(root, "usr/local/dcmi/libdcmi.so", "")
        write(root, "usr/local/bin/npu-smi", "")
        write(root, "etc/ascend_install.info", fixture("etc_ascend_install.info_driver+firmware_full.txt"))
    classic_toolkit(
        root,
        "8.0.0",
        "ascend_toolkit_install_8.0.0_aarch64.info",
        version_cfg="version.cfg_toolkit_8.0.0_no-opp_kernel.txt",
        kernels=["ascend910b"],
    )
    dist(root, "torch", "2.1.0", tag=TAG)
    dist(root, "torch_npu", "2.1.0.post10", requires=["torch==2.1.0", "pyyaml", "setuptools"], tag=TAG)
    for name, version in CANN_PY_DEPS.items():
        dist(root, name, version, tag=TAG)


def scenario(
    name: str,
    title: str,
    source: str,
    env: Dict[str, str],
    expect: Dict[str, object],
    health: Iterable[Dict[str, object]],
    findings: Iterable[Dict[str, object]] = (),
) -> Path:
    path = OUT / name
    if path.exists():
        shutil.rmtree(path)
    (path / "root").mkdir(parents=True)
    lines = ["[scenario]", f"title = {toml_value(title)}", f"source = {toml_value(source)}", "", "[env]"]
    lines += [f"{k} = {toml_value(v)}" for k, v in env.items()]
    lines += ["", "[expect]"] + expect_lines(name) + [f"{k} = {toml_value(v)}" for k, v in expect.items()]
    for f in findings:
        lines += ["", "[[expect.finding]]"] + [f"{k} = {toml_value(v)}" for k, v in f.items()]
    for h in health:
        lines += ["", "[[health]]"] + [f"{k} = {toml_value(v)}" for k, v in h.items()]
    (path / "scenario.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    write(path / "root", "etc/hostname", "npu-train-0\n")
    return path


def build() -> List[str]:
    edited_captures()
    env = dict({"HOME": "/root"}, **sourced_env())
    built: List[str] = []

    def make(
        name: str,
        title: str,
        source: str,
        expect: Dict[str, object],
        health: List[Dict[str, object]],
        capture: Optional[str] = HEALTHY_CAPTURE,
        scenario_env: Optional[Dict[str, str]] = None,
        findings: Iterable[Dict[str, object]] = (),
        **root_kw: bool,
    ) -> Path:
        s = scenario(name, title, source, scenario_env or env, expect, health, findings)
        container_root(s / "root", **root_kw)
        if capture:
            npu_smi_replay(s, capture)
        built.append(name)
        return s

    make(
        "health-910b3-8npu-healthy",
        "healthy container on an 8 x 910B3 node: devices, driver mounts, CANN 8.0.0 sourced, torch_npu 2.1.0.post10",
        "npu-smi capture: vllm-project/vllm-ascend#198; set_env.sh, install.info, driver version.info: samples",
        {"exit": 0, "absent": ["CTR001", "CTR002", "CTR003", "DEV001", "DEV004", "DEV010", "DEV020", "ENV001"]},
        [
            {"exit": 0, "match": ["^healthy: 8 NPU chip\\(s\\), CANN 8\\.0\\.0, torch_npu 2\\.1\\.0\\.post10$"]},
            {"args": ["--fail-on", "warning"], "exit": 0},
            {"args": ["--require", "8"], "exit": 0},
            {
                "args": ["--require", "16"],
                "exit": 1,
                "match": ["^unhealthy: DEV090 8 NPU chip\\(s\\) visible, 16 required$"],
            },
        ],
    )
    make(
        "health-devices-not-passed",
        "container started without the --device flags: no /dev/davinci*, npu-smi cannot open the DCMI layer",
        "gpustack/gpustack#1432 (case 39); npu-smi error: error_npu-smi_dcmi-8005_in-container_g_conLogLevel.txt",
        {"exit": 1, "codes": ["CTR001", "DEV002"]},
        [{"exit": 1, "match": ["^unhealthy: CTR001 "]}],
        capture=None,
        devices=False,
    )
    s = OUT / "health-devices-not-passed"
    write(s, "bin/npu-smi-error.txt", fixture("error_npu-smi_dcmi-8005_in-container_g_conLogLevel.txt"))
    _script(
        s,
        "#!/bin/sh\n# replays the captured DCMI -8005 failure of npu-smi in a container without devices\n"
        'cat "$(dirname "$0")/npu-smi-error.txt"\nexit 255\n',
    )
    make(
        "health-driver-not-mounted",
        "container with the devices but without the host's driver, dcmi, npu-smi and ascend_install.info mounts",
        "vllm-project/vllm-ascend#262 / PaddleOCR-NPU#7 (driver not mounted)",
        {"exit": 1, "codes": ["CTR002"]},
        [{"exit": 1, "match": ["^unhealthy: CTR002 "]}],
        capture=None,
        driver=False,
    )
    make(
        "health-chip-critical",
        "NPU 3 of 8 reports Health Critical (capture edited: see the fixture name)",
        "npu-smi-info_910B3_23.0.7_8npu_noproc.txt with NPU 3's Health column set to Critical",
        {"exit": 1, "codes": ["DEV010"]},
        [{"exit": 1, "match": ["^unhealthy: DEV010 NPU 3 health is Critical$"]}],
        capture=CRITICAL_CAPTURE,
    )
    make(
        "health-chip-alarm",
        "NPU 5 of 8 reports Health Alarm (capture edited: see the fixture name)",
        "npu-smi-info_910B3_23.0.7_8npu_noproc.txt with NPU 5's Health column set to Alarm",
        {"exit": 0, "codes": ["DEV010"]},
        [
            {"exit": 0, "match": ["^healthy: 8 NPU chip\\(s\\)"]},
            {"args": ["--fail-on", "warning"], "exit": 1, "match": ["^unhealthy: DEV010 NPU 5 health is Alarm$"]},
        ],
        capture=ALARM_CAPTURE,
    )
    s = make(
        "health-npu-smi-hung",
        "npu-smi never answers and ignores SIGTERM (wedged driver); the health check must not hang",
        "tried as a new user would: a wedged driver makes npu-smi hang (K15)",
        {"exit": 1, "codes": ["DEV001"]},
        # the default budget (0.9 s) stops npu-smi long before the hang threshold (5 s): the
        # devices area is unknown, never a hang; a budget whose command share (0.6) passes
        # the threshold sees the hang
        [
            {"exit": 0, "match": ["^healthy: .*not checked: devices: `npu-smi info` was stopped by the time budget"]},
            {"args": ["--timeout", "10"], "exit": 1, "match": ["^unhealthy: DEV001 `npu-smi info` did not answer"]},
        ],
        capture=None,
    )
    _script(
        s,
        "#!/bin/sh\n# a wedged driver: npu-smi never answers and ignores SIGTERM\n"
        '[ -n "$NPUDOCTOR_TEST_PIDFILE" ] && echo $$ > "$NPUDOCTOR_TEST_PIDFILE"\n'
        "trap '' TERM INT HUP\nwhile :; do sleep 1; done\n",
    )
    s = make(
        "health-npu-smi-garbled",
        "npu-smi answers exit 0 with bytes that are no device table (a broken binary or wrapper)",
        "tried as a new user would: garbled tool output must be a finding, never a traceback",
        {"codes": ["DEV004"]},
        [
            {"args": ["--fail-on", "warning"], "exit": 1, "match": ["^unhealthy: DEV004 npu-smi failed: "]},
            # issue 5: a garbled npu-smi makes the container unhealthy (DEV004 is an error)
            {
                "exit": 1,
                "match": ["^unhealthy: DEV004 npu-smi failed: "],
            },
        ],
        capture=None,
    )
    write(s, "bin/npu-smi-garbled.bin", bytes(range(256)) * 4 + b"\n+---+\n| NPU \xff\xfe |\n")
    _script(s, '#!/bin/sh\n# prints garbage and claims success\ncat "$(dirname "$0")/npu-smi-garbled.bin"\nexit 0\n')
    make(
        "health-env-not-sourced",
        "healthy container whose environment never sourced set_env.sh (no ENV in the image, no entrypoint)",
        "cases.md K10: `ImportError: libhccl.so` when set_env.sh is not sourced",
        {"exit": 1, "codes": ["ENV001"]},
        [{"exit": 1, "match": ["^unhealthy: ENV001 "]}],
        scenario_env={"HOME": "/root"},
    )
    return built


if __name__ == "__main__":
    for name in build():
        print("built", OUT / name)
