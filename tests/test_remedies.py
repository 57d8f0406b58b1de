"""The remedy renderers (npudoctor/remedies/) on real values: shell (the fix lines),
Dockerfile, pod spec, Markdown and the JSON dict; and the one list of package file names
(npudoctor/knowledge/packages.py) shared by rules and planner."""

from __future__ import annotations

import re

import pytest
import yaml

from npudoctor.knowledge.packages import driver_file, firmware_file, firmware_for_driver, kernels_file, set_env_script
from npudoctor.plan.files import cann_packages, driver_packages
from npudoctor.remedies import (
    Command,
    ComputedEnv,
    DockerFlags,
    Export,
    InstallPackage,
    Interpreter,
    Pipeline,
    PipInstall,
    PipUninstall,
    PodSpecField,
    Prose,
    Reboot,
    RunFile,
    SourceFile,
    SystemdSetting,
    command,
    dockerfile,
    markdown,
    podspec,
    shell,
    to_dict,
)
from npudoctor.remedies.install import BundledPackage, InstallScript, MissingPackage, install_script
from npudoctor.rules.packages import TORCH_PAIR

PY = Interpreter("/usr/local/python3.10.14/bin/python3.10")
CPU = "https://download.pytorch.org/whl/cpu"


@pytest.mark.parametrize(
    "step,line",
    [
        (
            InstallPackage("toolkit", "8.0.0", arch="aarch64"),
            "chmod +x Ascend-cann-toolkit_8.0.0_linux-aarch64.run && ./Ascend-cann-toolkit_8.0.0_linux-aarch64.run --install",
        ),
        (
            InstallPackage("toolkit", "8.2.RC1", arch=None),
            "chmod +x Ascend-cann-toolkit_8.2.RC1_linux-$(uname -m).run && "
            "./Ascend-cann-toolkit_8.2.RC1_linux-$(uname -m).run --install",
        ),
        (
            InstallPackage("kernels", "8.5.0", arch="x86_64", chip="910b", lead="  "),
            "  chmod +x Ascend-cann-910b-ops_8.5.0_linux-x86_64.run && ./Ascend-cann-910b-ops_8.5.0_linux-x86_64.run --install",
        ),
        (
            InstallPackage("kernels", "8.5.0.alpha001", arch="aarch64", chip="910b"),
            "chmod +x Ascend-cann-kernels-910b_8.5.0.alpha001_linux-aarch64.run && "
            "./Ascend-cann-kernels-910b_8.5.0.alpha001_linux-aarch64.run --install",
        ),
        (
            InstallPackage("nnal", "8.0.0", arch="aarch64"),
            "chmod +x Ascend-cann-nnal_8.0.0_linux-aarch64.run && ./Ascend-cann-nnal_8.0.0_linux-aarch64.run --install",
        ),
        (
            InstallPackage("driver", "25.5.0", arch="x86_64", chip="310p", lead="upgrade this machine's driver: "),
            "upgrade this machine's driver: chmod +x Ascend-hdk-310p-npu-driver_25.5.0_linux-x86-64.run && "
            "./Ascend-hdk-310p-npu-driver_25.5.0_linux-x86-64.run --full",
        ),
        (
            InstallPackage("firmware", "7.3.0.1.231", chip="910b"),
            "chmod +x Ascend-hdk-910b-npu-firmware_7.3.0.1.231.run && ./Ascend-hdk-910b-npu-firmware_7.3.0.1.231.run --full",
        ),
        # unknown values: prose beside (instead of) the command, never a placeholder in it
        (
            InstallPackage("kernels", "9.0.0", arch="aarch64", chip=None),
            "install the CANN ops package 9.0.0 for this machine's NPU chip type "
            "(unknown here: no NPU chip of a known type was seen; one of 910b, 910, 310p or A3); for 910b: "
            "chmod +x Ascend-cann-910b-ops_9.0.0_linux-aarch64.run && ./Ascend-cann-910b-ops_9.0.0_linux-aarch64.run --install",
        ),
        (
            InstallPackage(
                "toolkit", None, arch="aarch64", unknown="the CANN version paired with torch_npu 2.1.0.post99"
            ),
            "install the CANN toolkit of the CANN version paired with torch_npu 2.1.0.post99, run with --install",
        ),
        (
            InstallPackage(
                "firmware", None, chip="910b", unknown="Ascend HDK 25.5.0", lead="then ", note="then reboot"
            ),
            "then install the NPU firmware of Ascend HDK 25.5.0, run with --full; then reboot",
        ),
        (SourceFile("/usr/local/Ascend/cann/set_env.sh", lead="  "), "  source /usr/local/Ascend/cann/set_env.sh"),
        (
            SourceFile("/usr/local/Ascend/nnal/atb/set_env.sh", args="--cxx_abi=0", lead="or: "),
            "or: source /usr/local/Ascend/nnal/atb/set_env.sh --cxx_abi=0",
        ),
        (
            ComputedEnv("/usr/local/Ascend/ascend-toolkit/8.2.RC1"),
            'export ASCEND_TOOLKIT_HOME=/usr/local/Ascend/ascend-toolkit/8.2.RC1 && eval "$(npudoctor env)"'
            "  # no set_env.sh next to this toolkit: npudoctor computes what it would set",
        ),
        (ComputedEnv(), 'eval "$(npudoctor env)"  # npudoctor computes what set_env.sh would set'),
        (Export("ASCEND_RT_VISIBLE_DEVICES", "0,1"), "export ASCEND_RT_VISIBLE_DEVICES=0,1"),
        (Export("HCCL_WHITELIST_FILE", "/etc/hccl white.txt"), "export HCCL_WHITELIST_FILE='/etc/hccl white.txt'"),
        (
            Export("HCCL_WHITELIST_FILE", None, unknown="its path", lead="or write the whitelist to a file and "),
            "or write the whitelist to a file and export HCCL_WHITELIST_FILE set to its path",
        ),
        (
            PipInstall(PY, ("torch==2.1.0+cpu",), index_url=CPU),
            f"/usr/local/python3.10.14/bin/python3.10 -m pip install torch==2.1.0+cpu --index-url {CPU}",
        ),
        (
            PipInstall(PY, ("numpy<2",), note="CANN 8.0.0 needs NumPy 1.x"),
            "/usr/local/python3.10.14/bin/python3.10 -m pip install 'numpy<2'  # CANN 8.0.0 needs NumPy 1.x",
        ),
        (
            PipInstall(
                Interpreter("/opt/venv/bin/python"), ("torch==2.1.0",), options=("--force-reinstall", "--no-deps")
            ),
            "/opt/venv/bin/python -m pip install torch==2.1.0 --force-reinstall --no-deps",
        ),
        (
            PipUninstall(
                Interpreter("/usr/bin/python3.10", env=(("HOME", "/home/dev"),)),
                ("torch",),
                site="/home/dev/.local/lib/python3.10/site-packages",
                note="the user site's copy",
            ),
            "HOME=/home/dev /usr/bin/python3.10 -m pip uninstall -y torch  # the user site's copy",
        ),
        (
            PipUninstall(
                Interpreter("/usr/bin/python3.10", flags=("-s",), env=(("PYTHONPATH", "/opt/x"),)), ("numpy",)
            ),
            "PYTHONPATH=/opt/x /usr/bin/python3.10 -s -m pip uninstall -y numpy",
        ),
        (RunFile("Ascend-docker-runtime_6.0.0_linux-aarch64.run", args="--install"), None),
        (
            Command(("/usr/bin/python3.10", "-c", "import sys; print(sys.version)"), note="must print the version"),
            "/usr/bin/python3.10 -c 'import sys; print(sys.version)'  # must print the version",
        ),
        (
            Command(
                ("apt-get", "update"),
                then=(("add-apt-repository", "-y", "ppa:x/y z"), ("apt-get", "install", "-y", "libstdc++6")),
                lead="on Ubuntu: ",
                note="then check again",
            ),
            "on Ubuntu: apt-get update && add-apt-repository -y 'ppa:x/y z' && apt-get install -y libstdc++6"
            "  # then check again",
        ),
        (
            DockerFlags(devices=(0, 1), control=("/dev/davinci_manager",), mounts=("/usr/local/Ascend/driver",)),
            "--device /dev/davinci0 --device /dev/davinci1 --device /dev/davinci_manager "
            "-v /usr/local/Ascend/driver:/usr/local/Ascend/driver",
        ),
        (
            DockerFlags(control=("/dev/davinci_manager",), pick_device=True, lead="Or start it with: "),
            "Or start it with: --device /dev/davinci_manager  # and --device /dev/davinciN of a free NPU N "
            "(the host's npu-smi info shows which NPUs are in use)",
        ),
        (
            PodSpecField("securityContext.runAsUser", "1000"),
            "in the pod spec, set securityContext.runAsUser: 1000",
        ),
        (Reboot(), "reboot"),
        (
            Pipeline((("dmesg",), ("grep", "-i", "-E", "davinci|npu|hccs"), ("tail", "-50"))),
            "dmesg | grep -i -E 'davinci|npu|hccs' | tail -50",
        ),
        (
            Pipeline((("python3", "-m", "json.tool", "/etc/hccl tables/rt.json"),), stdout="/dev/null", note="silent"),
            "python3 -m json.tool '/etc/hccl tables/rt.json' > /dev/null  # silent",
        ),
        (Prose("Stop the jobs that hold the NPUs"), "Stop the jobs that hold the NPUs"),
    ],
)
def test_shell(step, line):
    if line is None:  # RunFile
        line = "chmod +x Ascend-docker-runtime_6.0.0_linux-aarch64.run && ./Ascend-docker-runtime_6.0.0_linux-aarch64.run --install"
    assert shell(step) == line
    assert not re.search(r"<[A-Za-z][^<>]*>", command(step) or "") and "…" not in shell(step)


def test_systemd_setting_is_a_drop_in():
    step = SystemdSetting("kubelet", "Environment", "ASCEND_RT_VISIBLE_DEVICES=0")
    assert shell(step) == (
        "mkdir -p /etc/systemd/system/kubelet.service.d && printf '[%s]\\n%s\\n' Service "
        "Environment=ASCEND_RT_VISIBLE_DEVICES=0 > /etc/systemd/system/kubelet.service.d/npudoctor.conf && "
        "systemctl daemon-reload"
    )


def test_dockerfile():
    steps = [
        InstallPackage("toolkit", "8.0.0", arch="aarch64"),
        SourceFile("/usr/local/Ascend/ascend-toolkit/set_env.sh"),
        Export("ASCEND_RT_VISIBLE_DEVICES", "0"),
        PipInstall(Interpreter("python3"), ("torch==2.1.0", "torch-npu==2.1.0.post10")),
        DockerFlags(devices=(0,), control=()),
        Reboot(),
        Prose("then run npudoctor check"),
    ]
    lines = dockerfile(steps)
    assert lines[0] == (
        "RUN chmod +x Ascend-cann-toolkit_8.0.0_linux-aarch64.run && ./Ascend-cann-toolkit_8.0.0_linux-aarch64.run --install"
    )
    assert lines[1].startswith("# /usr/local/Ascend/ascend-toolkit/set_env.sh does not persist across RUN steps")
    assert lines[2] == 'ENV ASCEND_RT_VISIBLE_DEVICES="0"'
    assert lines[3] == "RUN python3 -m pip install torch==2.1.0 torch-npu==2.1.0.post10"
    assert lines[4] == "# docker run flags for this image: --device /dev/davinci0"
    assert lines[5].startswith("# reboot the host")
    assert lines[6] == "# then run npudoctor check"


def test_podspec_is_yaml():
    text = podspec(
        [
            PodSpecField("securityContext.runAsUser", "1000"),
            PodSpecField("securityContext.runAsGroup", "1000"),
            Export("ASCEND_RT_VISIBLE_DEVICES", "0,1"),
            Reboot(),
        ]
    )
    doc = yaml.safe_load(text)
    assert doc["securityContext"] == {"runAsUser": "1000", "runAsGroup": "1000"}
    assert doc["containers"][0]["env"] == [{"name": "ASCEND_RT_VISIBLE_DEVICES", "value": "0,1"}]
    assert text.startswith("# reboot\n")


def test_markdown():
    text = markdown(
        [
            PipInstall(PY, ("torch-npu==2.1.0.post4",), lead="option A (keep CANN 8.0.RC1): ", note="one pip line"),
            InstallPackage("kernels", "9.0.0", arch="aarch64"),
            Prose("then reboot"),
        ]
    )
    assert text.splitlines() == [
        "- option A (keep CANN 8.0.RC1): `/usr/local/python3.10.14/bin/python3.10 -m pip install "
        "torch-npu==2.1.0.post4` (one pip line)",
        "- install the CANN ops package 9.0.0 for this machine's NPU chip type (unknown here: no NPU chip of a known type was seen; "
        "one of 910b, 910, 310p or A3); for 910b: "
        "chmod +x Ascend-cann-910b-ops_9.0.0_linux-aarch64.run && ./Ascend-cann-910b-ops_9.0.0_linux-aarch64.run --install",
        "- then reboot",
    ]


def test_to_dict_and_finding_json():
    step = PipUninstall(
        Interpreter("/usr/bin/python3.10", flags=("-s",)), ("torch",), site="/usr/lib/python3/dist-packages"
    )
    assert to_dict(step) == {
        "kind": "pip-uninstall",
        "shell": "/usr/bin/python3.10 -s -m pip uninstall -y torch",
        "command": "/usr/bin/python3.10 -s -m pip uninstall -y torch",
        "python": {"executable": "/usr/bin/python3.10", "flags": ["-s"], "env": []},
        "names": ["torch"],
        "site": "/usr/lib/python3/dist-packages",
        "lead": "",
        "note": "",
    }
    f = TORCH_PAIR.finding(fix=[step, "or keep torch"])
    assert f.fix == ["/usr/bin/python3.10 -s -m pip uninstall -y torch", "or keep torch"]
    assert [r["kind"] for r in f.to_dict()["remedies"]] == ["pip-uninstall", "prose"]
    assert f.from_dict(f.to_dict()).remedies == f.remedies


def test_install_script_lines():
    script = InstallScript(
        python="3.10",
        arch="aarch64",
        torch_npu="2.1.0.post10",
        torch_requirement="torch==2.1.0",
        cann="8.0.0",
        packages=(
            BundledPackage("toolkit", "cann/Ascend-cann-toolkit_8.0.0_linux-aarch64.run", "--install --quiet"),
            MissingPackage("kernels", "Ascend-cann-kernels-910b_8.0.0_linux-aarch64.run", "https://example/x"),
        ),
        toolkit_env=("/usr/local/Ascend/ascend-toolkit/set_env.sh",),
        nnal_env=("/usr/local/Ascend/nnal/atb/set_env.sh",),
    )
    text = install_script(script, "2026-12-01T12:00:00Z")
    assert "run_pkg CANN toolkit cann/Ascend-cann-toolkit_8.0.0_linux-aarch64.run --install --quiet" in text
    assert 'source_first "/usr/local/Ascend/ascend-toolkit/set_env.sh"' in text
    assert "absent_pkg CANN kernels Ascend-cann-kernels-910b_8.0.0_linux-aarch64.run https://example/x" in text
    assert text.startswith(
        "#!/usr/bin/env bash\n# Offline installer generated by npudoctor plan (2026-12-01T12:00:00Z)."
    )


def test_one_list_of_package_names_for_rules_and_planner():
    """The planner's PackageFile names are the knowledge list's, for every kind."""
    for cann in ("7.0.RC1", "8.0.RC2", "8.0.0", "8.3.RC2", "8.5.0.alpha001", "8.5.0", "9.0.0-beta.2"):
        for chip in ("910b", "A3", "310p"):
            planned = {p.kind: p.filename for p in cann_packages(cann, "aarch64", chip)}
            made = kernels_file(cann, chip, "aarch64")
            assert planned[made.kind] == made.filename
            step = InstallPackage("kernels", cann, arch="aarch64", chip=chip)
            assert made.filename in shell(step)
    drv = {p.kind: p.filename for p in driver_packages("24.1.rc2", "x86_64", "910b")}
    assert (
        drv["driver"]
        == driver_file("24.1.rc2", "910b", "x86_64").filename
        == ("Ascend-hdk-910b-npu-driver_24.1.rc2_linux-x86-64.run")
    )
    assert drv["firmware"] == firmware_file(firmware_for_driver("24.1.rc2") or "", "910b").filename
    assert set_env_script("8.5.0") == "/usr/local/Ascend/cann/set_env.sh"
    assert set_env_script("8.3.RC1") == "/usr/local/Ascend/ascend-toolkit/set_env.sh"


def test_docker_flags_for_the_host_limits_a_container_is_started_with() -> None:
    step = DockerFlags(
        shm_size="16g", ulimits=("memlock=-1", "nofile=65536:65536"), lead="recreate the container with: "
    )
    assert shell(step) == "recreate the container with: --shm-size=16g --ulimit memlock=-1 --ulimit nofile=65536:65536"
    assert dockerfile([step]) == [
        "# docker run flags for this image: recreate the container with: "
        "--shm-size=16g --ulimit memlock=-1 --ulimit nofile=65536:65536"
    ]
    assert to_dict(step)["shm_size"] == "16g" and to_dict(step)["ulimits"] == ["memlock=-1", "nofile=65536:65536"]
