"""Where the process runs (issue 15): a container, a pod or an image build step given no
NPU is one finding (CTR006) in that world's terms; root without CAP_DAC_OVERRIDE cannot
open 0660 nodes it does not own (DEV021, the npu-smi -8005 folded under it).

Each test builds the container of tests/builders/build_health_scenarios.py (real toolkit files, real
dist-info, real npu-smi captures replayed by an executable on PATH) with exactly one
problem, and runs ``npudoctor check --root`` in-process.  /proc/self/status files are real
captures (tests/fixtures/proc_status/README.md).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
from builders import build_health_scenarios as hs
from builders.build_cann_scenarios import fixture, write
from clirun import npudoctor

HERE = Path(__file__).resolve().parent
STATUS = HERE / "fixtures" / "proc_status"
CAPEFF_0 = "status_root_capeff-0_setpriv-bounding-set-all.txt"
FULL_CAPS = "status_root_full-caps.txt"

ENV = dict({"HOME": "/root"}, **hs.sourced_env())
NODES = [f"davinci{n}" for n in range(8)] + ["davinci_manager", "devmm_svm", "hisi_hdc"]


def _container(tmp: Path, **kw: bool) -> Path:
    (tmp / "root").mkdir(parents=True)
    hs.container_root(tmp / "root", **kw)
    return tmp


def _check(scenario: Path, extra_env: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    env = dict(ENV, PATH=f"{scenario}/bin:/usr/bin:/bin", **(extra_env or {}))
    result = npudoctor("check", "--root", str(scenario / "root"), "--json", env=env)
    assert result.returncode in (0, 1), result.stderr
    doc: Dict[str, Any] = json.loads(result.stdout)
    doc["returncode"] = result.returncode
    return doc


def _codes(doc: Dict[str, Any]) -> List[str]:
    return [f["code"] for f in doc["findings"]]


def _root_codes(doc: Dict[str, Any]) -> List[str]:
    """Codes of the findings that are not folded under another finding's cause."""
    return [f["code"] for f in doc["findings"] if not f["data"].get("because")]


def _because(doc: Dict[str, Any], code: str) -> Any:
    return next(f["data"].get("because") for f in doc["findings"] if f["code"] == code)


def _one(doc: Dict[str, Any], code: str) -> Dict[str, Any]:
    found = [f for f in doc["findings"] if f["code"] == code]
    assert len(found) == 1, _codes(doc)
    return found[0]


# --------------------------------------------------------------------- CTR006 per world


def test_build_stage_without_driver_is_one_error_in_build_words(tmp_path: Path) -> None:
    s = _container(tmp_path / "build", devices=False, driver=False)
    os.remove(s / "root/.dockerenv")  # BuildKit creates none (moby/buildkit#4503)
    write(s / "root", "etc/hostname", "buildkitsandbox\n")
    write(s / "root", "etc/hosts", "127.0.0.1\tlocalhost buildkitsandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n")
    doc = _check(s)
    assert doc["returncode"] == 1
    env = dict(ENV, PATH=f"{s}/bin:/usr/bin:/bin")
    facts = json.loads(npudoctor("collect", "--root", str(s / "root"), "--json", env=env).stdout)["facts"]
    assert facts["container"]["world"] == "build"
    assert facts["container"]["in_container"] is True
    f = _one(doc, "CTR006")
    assert f["severity"] == "error"
    assert "mounted from the host at run time" in f["title"]
    assert "do not import torch_npu while building" in f["title"]
    assert "torch_npu 2.1.0.post10 is installed: `import torch_npu` cannot load the driver here" in f["evidence"]
    assert "host name is 'buildkitsandbox' (BuildKit's RUN sandbox)" in f["evidence"]
    assert f["fix"][0].startswith("Do not import torch_npu")
    assert any("--runtime ascend -e ASCEND_VISIBLE_DEVICES=0" in line for line in f["fix"])
    # one root cause, one finding: the driver/npu-smi consequences are folded under it, never "install the driver"
    for code in ("DRV001", "DEV003", "CTR001", "CTR002", "CTR003"):
        assert code not in _root_codes(doc)
        assert code not in _codes(doc) or _because(doc, code) == "CTR006"
    assert "DRV001" in f["data"]["folded"] and _because(doc, "DRV001") == "CTR006"
    roots = [g for g in doc["findings"] if not g["data"].get("because")]
    assert not any("install the NPU driver" in line for g in roots for line in g["fix"])


def test_container_without_npu_gives_the_docker_flags(tmp_path: Path) -> None:
    s = _container(tmp_path / "c", devices=False, driver=False)
    doc = _check(s)
    f = _one(doc, "CTR006")
    assert f["severity"] == "error"
    assert f["title"].startswith("this container was started without the NPU")
    assert f["fix"] == [
        "Recreate the container with the Ascend Docker Runtime, adding to `docker run`: --runtime ascend "
        "-e ASCEND_VISIBLE_DEVICES=0  # it mounts the NPUs and the host's driver",
        "Or add them explicitly to `docker run`: --device /dev/davinci0 --device /dev/davinci_manager "
        "--device /dev/devmm_svm --device /dev/hisi_hdc -v /usr/local/Ascend/driver:/usr/local/Ascend/driver:ro "
        "-v /usr/local/dcmi:/usr/local/dcmi:ro -v /usr/local/bin/npu-smi:/usr/local/bin/npu-smi:ro "
        "-v /etc/ascend_install.info:/etc/ascend_install.info:ro",
    ]
    assert set(f["data"]["folded"]) >= {"DRV001", "CTR001", "CTR002", "CTR003"}
    assert [c for c in _root_codes(doc) if c.startswith(("CTR", "DRV0", "DEV"))] == ["CTR006"]
    assert all(_because(doc, c) == "CTR006" for c in f["data"]["folded"])
    # no second recreate recipe: the mount findings point to CTR006's explicit flags (issue 19)
    for code in ("CTR002", "CTR003"):
        assert _one(doc, code)["fix"] == [
            "Mounted by the explicit `docker run` flags of CTR006 (its second option), with the NPU itself"
        ]
    assert not any("Recreate the container with: -v" in line for g in doc["findings"] for line in g["fix"])


def test_pod_without_ascend_runtime_is_said_in_pod_spec_terms(tmp_path: Path) -> None:
    s = _container(tmp_path / "pod", devices=False, driver=False)
    os.remove(s / "root/.dockerenv")
    write(s / "root", "proc/self/cgroup", "0::/kubepods.slice/kubepods-besteffort.slice/cri-containerd-3f2a.scope\n")
    doc = _check(s, {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "ASCEND_VISIBLE_DEVICES": "2"})
    f = _one(doc, "CTR006")
    assert "this pod was started without the NPU" in f["title"]
    assert f["fix"][0].startswith("in the pod spec, set runtimeClassName: ascend")
    assert f["fix"][1].startswith("in the pod spec, set containers[0].resources.limits: {huawei.com/Ascend910: 1}")
    assert not any("docker run" in line for line in f["fix"])
    assert any(
        "ASCEND_VISIBLE_DEVICES=2 is set, but only the Ascend Docker Runtime reads it" in e for e in f["evidence"]
    )


def test_container_tree_without_dev_is_not_judged_without_npu(tmp_path: Path) -> None:
    """A container's files captured without its /dev (every running container has one): its
    device nodes are unknown, so neither CTR006 nor CTR001 says they are missing; the
    driver that is not there is still CTR002."""
    s = _container(tmp_path / "c", devices=False, driver=False)
    (s / "root/dev/.keep").unlink()
    (s / "root/dev").rmdir()
    doc = _check(s)
    assert doc["facts"]["devices"]["nodes_error"] == "device nodes not judged: the tree holds no /dev"
    assert not {"CTR006", "CTR001", "DEV020"} & set(_codes(doc))
    assert "CTR002" in _root_codes(doc)
    assert doc["not_checked"]["devices"] == (
        "npu-smi: command not found on PATH; device nodes not judged: the tree holds no /dev"
    )


def test_container_with_devices_but_no_driver_keeps_the_mount_findings(tmp_path: Path) -> None:
    """Devices passed, driver not mounted: not CTR006 (the existing CTR002 says which mounts)."""
    s = _container(tmp_path / "c", driver=False)
    doc = _check(s)
    assert "CTR006" not in _codes(doc)
    f = _one(doc, "CTR002")
    # one cause, one finding: DRV001's "the host's NPU driver is not mounted" is the same fact, folded under it
    assert "DRV001" not in _root_codes(doc)
    assert f["data"]["folded"] == ["DRV001"] and _because(doc, "DRV001") == "CTR002"
    text = npudoctor("check", "--root", str(s / "root"), env=dict(ENV, PATH=f"{s}/bin:/usr/bin:/bin")).stdout
    assert "because of this (CTR002), also:" in text
    # one root cause for the user, one `docker run` line: CTR002 carries the mounts of CTR003/CTR004 too
    assert f["data"]["mounts_of"] == ["CTR002", "CTR003", "CTR004"]
    assert text.count("Recreate the container with:") == 1
    flags = [line.strip() for line in text.splitlines() if line.strip().startswith("-v ")]
    assert flags == [
        "-v /usr/local/Ascend/driver/lib64/:/usr/local/Ascend/driver/lib64/ "
        "-v /usr/local/Ascend/driver/version.info:/usr/local/Ascend/driver/version.info "
        "-v /usr/local/bin/npu-smi:/usr/local/bin/npu-smi -v /usr/local/dcmi:/usr/local/dcmi "
        "-v /etc/ascend_install.info:/etc/ascend_install.info"
    ]
    assert _one(doc, "CTR003")["fix"] == [
        "Mounted by the `docker run` flags of CTR002: one recreated container mounts all of them"
    ]


def test_plain_host_machine_is_world_host(tmp_path: Path) -> None:
    s = _container(tmp_path / "h")
    os.remove(s / "root/.dockerenv")
    write(s / "root", "proc/self/cgroup", "0::/system.slice/slurmd.service\n")
    env = dict(ENV, PATH=f"{s}/bin:/usr/bin:/bin", INVOCATION_ID="0f3c2d", SLURM_JOB_ID="4242")
    doc = json.loads(npudoctor("collect", "--root", str(s / "root"), "--json", env=env).stdout)
    container = doc["facts"]["container"]
    assert container["world"] == "host"
    assert container["launched_by"] == [
        {"name": "systemd", "evidence": "INVOCATION_ID is set", "unit": "slurmd.service"},
        {"name": "slurm", "evidence": "SLURM_JOB_ID is set"},
    ]


# --------------------------------------------------------------------- capabilities


def _owned_nodes(s: Path, status: str) -> None:
    for node in NODES:
        os.chown(s / "root/dev" / node, 1000, 1000)
        os.chmod(s / "root/dev" / node, 0o660)
    write(s / "root", "proc/self/status", (STATUS / status).read_bytes())
    write(s, "bin/npu-smi-error.txt", fixture("error_npu-smi_dcmi-8005_in-container_g_conLogLevel.txt"))
    hs._script(s, '#!/bin/sh\ncat "$(dirname "$0")/npu-smi-error.txt"\nexit 255\n')


@pytest.mark.skipif(os.geteuid() != 0, reason="chown of the device nodes needs root")
def test_root_with_capeff_0_cannot_open_0660_nodes_not_busy(tmp_path: Path) -> None:
    s = _container(tmp_path / "caps")
    _owned_nodes(s, CAPEFF_0)
    doc = _check(s)
    assert doc["returncode"] == 1
    f = _one(doc, "DEV021")
    assert f["title"] == (
        "root without CAP_DAC_OVERRIDE cannot open 11 NPU device node(s) (owner HwHiAiUser:HwHiAiUser, mode 0660)"
    )
    assert f["data"]["capabilities"] == {"CapEff": "0000000000000000", "CapBnd": "0000000000000000"}
    assert f["fix"][0] == "Recreate the container with: --cap-add DAC_OVERRIDE  # or leave out --cap-drop ALL"
    assert "--group-add 1000" in f["fix"][1]
    assert any("CapBnd lacks it too" in e for e in f["evidence"])
    # the -8005 is this denial, not a busy device: DEV002 folded
    assert "DEV002" not in _codes(doc)
    assert any("is this denial, not a busy device" in e for e in f["evidence"])


@pytest.mark.skipif(os.geteuid() != 0, reason="chown of the device nodes needs root")
def test_root_with_dac_override_stays_busy(tmp_path: Path) -> None:
    """The same nodes and -8005 with root's default capabilities: the busy finding stays."""
    s = _container(tmp_path / "caps")
    _owned_nodes(s, FULL_CAPS)
    doc = _check(s)
    assert "DEV021" not in _codes(doc)
    assert "DEV002" in _codes(doc)


@pytest.mark.skipif(os.geteuid() != 0, reason="chown of the device nodes needs root")
def test_triage_of_8005_names_the_permission_cause(tmp_path: Path) -> None:
    s = _container(tmp_path / "caps")
    _owned_nodes(s, CAPEFF_0)
    env = dict(ENV, PATH=f"{s}/bin:/usr/bin:/bin")
    log = HERE / "fixtures" / "error_npu-smi_dcmi-8005_in-container_g_conLogLevel.txt"
    out = npudoctor("triage", str(log), "--root", str(s / "root"), env=env).stdout
    assert "→ the device nodes are not open to this process (root without CAP_DAC_OVERRIDE" in out
    assert "another container or process holds the device" not in out.split("→", 1)[1].split("\n")[0]


# --------------------------------------------------------------------- visibility variables


def _eight(tmp: Path) -> Path:
    s = _container(tmp)
    hs.npu_smi_replay(s, hs.HEALTHY_CAPTURE)
    return s


def _vis(doc: Dict[str, Any]) -> List[Dict[str, Any]]:
    return [f for f in doc["findings"] if f["code"] in ("DEV030", "DEV031", "DEV032", "DEV034")]


def test_empty_ascend_visible_devices_is_flagged_and_had_no_effect(tmp_path: Path) -> None:
    doc = _check(_eight(tmp_path / "v"), {"ASCEND_VISIBLE_DEVICES": ""})
    (f,) = _vis(doc)
    assert (f["code"], f["severity"]) == ("DEV031", "warning")
    assert f["title"] == "ASCEND_VISIBLE_DEVICES is set but empty: it selects no NPU"
    assert (
        "8 NPU node(s) are mapped here anyway (--device, --privileged or the device plugin), so it had no effect"
        in (f["evidence"])
    )


def test_malformed_ascend_visible_devices(tmp_path: Path) -> None:
    doc = _check(_eight(tmp_path / "v"), {"ASCEND_VISIBLE_DEVICES": "0;1"})
    (f,) = _vis(doc)
    assert f["code"] == "DEV031" and f["data"]["malformed"] == ["0;1"]
    assert "is neither an NPU id, a range nor a device name" in f["title"]


@pytest.mark.parametrize(
    "value",
    [
        "0-7",
        "0,1,2,3,4,5,6,7",
        "Ascend910-0,Ascend910-1,Ascend910-2,Ascend910-3,Ascend910-4,Ascend910-5,Ascend910-6,Ascend910-7",
    ],
)
def test_ascend_visible_devices_naming_exactly_the_mapped_nodes_is_silent(tmp_path: Path, value: str) -> None:
    doc = _check(_eight(tmp_path / "v"), {"ASCEND_VISIBLE_DEVICES": value})
    assert [f for f in doc["findings"] if "ASCEND_VISIBLE_DEVICES" in f["title"]] == []
    assert _vis(doc) == []


def test_device_plugin_names_with_all_nodes_mapped_had_no_effect(tmp_path: Path) -> None:
    doc = _check(_eight(tmp_path / "v"), {"ASCEND_VISIBLE_DEVICES": "Ascend910-4,Ascend910-5"})
    (f,) = _vis(doc)
    assert f["code"] == "DEV031"
    assert any(e.startswith("it had no effect: every node it names is here") for e in f["evidence"])
    assert "Or set, for the process: export ASCEND_RT_VISIBLE_DEVICES=4,5" in f["fix"]


def test_look_alike_variable_without_rt_visible_is_a_warning(tmp_path: Path) -> None:
    doc = _check(_eight(tmp_path / "v"), {"NPU_VISIBLE_DEVICES": "0,1"})
    (f,) = _vis(doc)
    assert (f["code"], f["severity"]) == ("DEV034", "warning")
    assert f["title"] == "NPU_VISIBLE_DEVICES=0,1 has no effect on Ascend NPUs: all visible NPUs are used"
    assert f["fix"] == [
        "export ASCEND_RT_VISIBLE_DEVICES=0,1  # the variable CANN reads (0-based, ascending)",
        "unset NPU_VISIBLE_DEVICES",
    ]


def test_look_alikes_next_to_rt_visible_are_a_note(tmp_path: Path) -> None:
    doc = _check(
        _eight(tmp_path / "v"),
        {"HIP_VISIBLE_DEVICES": "2", "ROCR_VISIBLE_DEVICES": "3", "ASCEND_RT_VISIBLE_DEVICES": "0"},
    )
    (f,) = _vis(doc)
    assert (f["code"], f["severity"]) == ("DEV034", "info")
    assert f["fix"] == ["unset HIP_VISIBLE_DEVICES ROCR_VISIBLE_DEVICES"]
    assert "ASCEND_RT_VISIBLE_DEVICES=0 decides which NPUs this process uses" in f["evidence"]


def test_empty_ascend_visible_devices_without_nodes_is_part_of_ctr006(tmp_path: Path) -> None:
    s = _container(tmp_path / "c", devices=False, driver=False)
    doc = _check(s, {"ASCEND_VISIBLE_DEVICES": ""})
    assert _vis(doc) == []
    f = _one(doc, "CTR006")
    assert any(e.startswith("ASCEND_VISIBLE_DEVICES is set but empty") for e in f["evidence"])


# --------------------------------------------------------------------- pod-spec terms


def test_pod_without_driver_mounts_gets_host_path_volumes(tmp_path: Path) -> None:
    s = _container(tmp_path / "pod", driver=False)
    os.remove(s / "root/.dockerenv")
    hs.npu_smi_replay(s, hs.HEALTHY_CAPTURE)
    doc = _check(s, {"KUBERNETES_SERVICE_HOST": "10.96.0.1"})
    f = _one(doc, "CTR002")
    # one volumes/volumeMounts pair for every mount the pod lacks: the driver (CTR002), dcmi
    # (CTR003) and ascend_install.info (CTR004) -- one pod spec edit, not three (issue 19)
    assert f["fix"] == [
        "in the pod spec, set volumes: [{name: host-usr-local-ascend-driver-lib64, hostPath: {path: "
        "/usr/local/Ascend/driver/lib64/}}, {name: host-usr-local-ascend-driver-version-info, hostPath: {path: "
        "/usr/local/Ascend/driver/version.info}}, {name: host-usr-local-dcmi, hostPath: {path: /usr/local/dcmi}}, "
        "{name: host-etc-ascend-install-info, hostPath: {path: /etc/ascend_install.info}}]",
        "in the pod spec, set containers[0].volumeMounts: [{name: host-usr-local-ascend-driver-lib64, mountPath: "
        "/usr/local/Ascend/driver/lib64/, readOnly: true}, {name: host-usr-local-ascend-driver-version-info, "
        "mountPath: /usr/local/Ascend/driver/version.info, readOnly: true}, {name: host-usr-local-dcmi, "
        "mountPath: /usr/local/dcmi, readOnly: true}, {name: host-etc-ascend-install-info, "
        "mountPath: /etc/ascend_install.info, readOnly: true}]",
    ]
    assert f["data"]["mounts_of"] == ["CTR002", "CTR003", "CTR004"]
    for code in ("CTR003", "CTR004"):
        assert _one(doc, code)["fix"] == [
            "Mounted by the pod spec's volumes of CTR002: one pod spec edit mounts all of them"
        ]
        assert _because(doc, code) == "CTR002"
    assert not any("-v " in line for g in doc["findings"] for line in g["fix"])


def test_pod_without_devices_asks_for_the_runtime_class_and_resource(tmp_path: Path) -> None:
    s = _container(tmp_path / "pod", devices=False)
    os.remove(s / "root/.dockerenv")
    doc = _check(s, {"KUBERNETES_SERVICE_HOST": "10.96.0.1"})
    f = _one(doc, "CTR001")
    assert [line.split(" (")[0] for line in f["fix"]] == [
        "in the pod spec, set runtimeClassName: ascend",
        "in the pod spec, set containers[0].resources.limits: {huawei.com/Ascend910: 1}",
    ]


def test_look_alike_under_systemd_is_fixed_in_the_unit(tmp_path: Path) -> None:
    """A service started by systemd gets its variables from the unit: the fix is a drop-in
    with Environment=, named after the service of its cgroup."""
    s = _eight(tmp_path / "svc")
    os.remove(s / "root/.dockerenv")
    write(s / "root", "proc/self/cgroup", "0::/system.slice/vllm-serve.service\n")
    doc = _check(s, {"NPU_VISIBLE_DEVICES": "0,1", "INVOCATION_ID": "7c1e0b6a2f7d4e0c9d3b8a1f5e6c2d4b"})
    (f,) = _vis(doc)
    assert f["fix"] == [
        "mkdir -p /etc/systemd/system/vllm-serve.service.d && printf '[%s]\\n%s\\n' Service "
        "Environment=ASCEND_RT_VISIBLE_DEVICES=0,1 > /etc/systemd/system/vllm-serve.service.d/npudoctor.conf && "
        "systemctl daemon-reload  # then systemctl restart vllm-serve.service; the variable CANN reads (0-based, ascending)",
        "Remove NPU_VISIBLE_DEVICES from the Environment= of vllm-serve.service",
    ]


def test_build_stage_seen_from_its_cgroup_alone(tmp_path: Path) -> None:
    """Docker's BuildKit puts RUN steps under docker/buildkit (cryptnono/cryptnono#93)."""
    s = _container(tmp_path / "b", devices=False, driver=False)
    os.remove(s / "root/.dockerenv")
    write(s / "root", "proc/self/cgroup", "0::/docker/buildkit/x5h7oizyhrunip3o2urd7of1d\n")
    doc = _check(s)
    f = _one(doc, "CTR006")
    assert f["data"]["world"] == "build"
    assert (
        "/proc/self/cgroup: 0::/docker/buildkit/x5h7oizyhrunip3o2urd7of1d (a BuildKit build container's cgroup)"
        in (f["evidence"])
    )


# --------------------------------------------------------------------- --pid: the workload's capabilities


def test_proc_status_captures_parse_to_their_real_values() -> None:
    from npudoctor.parsers.procstatus import parse_proc_status

    dropped = parse_proc_status((STATUS / CAPEFF_0).read_text())
    assert dropped == {
        "cap_eff": "0000000000000000",
        "cap_prm": "0000000000000000",
        "cap_bnd": "0000000000000000",
        "uid": 0,
        "gid": 0,
        "groups": [],
    }
    full = parse_proc_status((STATUS / FULL_CAPS).read_text())
    assert full is not None and full["cap_eff"] == "000001fffeffffff" and full["uid"] == 0
    assert parse_proc_status("Name:\tcat\nUid:\t0\t0\t0\t0\n") is None  # no CapEff: not a status file


def _health(scenario: Path, *args: str) -> Dict[str, Any]:
    import subprocess
    import sys

    env = dict(ENV, PATH=f"{scenario}/bin:/usr/bin:/bin", PYTHONPATH=str(HERE.parent))
    # A process: health counts its budget from the start of its process and leaves with os._exit.
    argv = [sys.executable, "-m", "npudoctor", "health", "--root", str(scenario / "root"), "--json", "--timeout", "20"]
    proc = subprocess.run([*argv, *args], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
    doc: Dict[str, Any] = json.loads(proc.stdout)
    return doc


@pytest.mark.skipif(os.geteuid() != 0, reason="chown of the device nodes needs root")
def test_pid_judges_device_access_with_the_workloads_capabilities(tmp_path: Path) -> None:
    """`health --pid N` reads /proc/N/status (through the Host, under --root the root's
    procfs) for CapEff/CapBnd and the ids: the agent has root's default capabilities, the
    workload was started with every capability dropped, so the workload cannot open the
    0660 nodes of uid 1000 (DEV021), which the agent itself could."""
    s = _container(tmp_path / "caps")
    _owned_nodes(s, FULL_CAPS)  # this process (the agent): CAP_DAC_OVERRIDE held
    write(s / "root", "proc/4242/status", (STATUS / CAPEFF_0).read_bytes())
    environ = dict(ENV, PATH="/usr/local/bin:/usr/bin:/bin")
    write(s / "root", "proc/4242/environ", b"".join(f"{k}={v}\0".encode() for k, v in environ.items()))
    agent = _health(s)
    assert "DEV021" not in [f["code"] for f in agent["findings"]]
    workload = _health(s, "--pid", "4242")
    assert workload["status"] == "unhealthy" and workload["environment"]["judged"] == "pid"
    f = next(f for f in workload["findings"] if f["code"] == "DEV021")
    assert f["title"] == (
        "root without CAP_DAC_OVERRIDE cannot open 11 NPU device node(s) (owner HwHiAiUser:HwHiAiUser, mode 0660)"
    )
    assert f["data"]["capabilities"] == {"CapEff": "0000000000000000", "CapBnd": "0000000000000000"}
    assert "DEV021 " + f["title"] in workload["problems"]


def test_container_with_driver_but_no_devices_gives_pasteable_runtime_steps(tmp_path: Path) -> None:
    """CTR001 (driver mounted, no /dev/davinciN): the Ascend Docker Runtime alternative is
    two command remedies -- the host-side check and the run flags -- not a command quoted
    inside prose (issue 19)."""
    s = _container(tmp_path / "c", devices=False)
    doc = _check(s, {"ASCEND_VISIBLE_DEVICES": "2"})
    assert "CTR006" not in _codes(doc)
    f = _one(doc, "CTR001")
    kinds = [r["kind"] for r in f["remedies"]]
    assert kinds == ["docker-flags", "pipeline", "docker-flags"]
    assert f["remedies"][1]["command"] == "docker info | grep -i runtime"
    assert f["remedies"][2]["command"] == "--runtime ascend -e ASCEND_VISIBLE_DEVICES=2"
    text = npudoctor("check", "--root", str(s / "root"), env=dict(ENV, PATH=f"{s}/bin:/usr/bin:/bin")).stdout
    assert "$ docker info | grep -i runtime  # must list ascend" in text
