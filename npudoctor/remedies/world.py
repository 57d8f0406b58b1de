"""The fix that gives a process the NPU, a host mount or an environment variable in the
terms of the world it runs in (:attr:`ContainerFacts.runs_in`).  They take values and
judge nothing.

Worlds: ``"build"`` (a BuildKit ``RUN`` step), ``"pod"`` (Kubernetes), ``"container"``
(docker, podman, containerd), ``"host"``.  Fixes: ``docker run`` flags (the Ascend Docker
Runtime, ``--runtime ascend -e ASCEND_VISIBLE_DEVICES=N``, or the explicit list of the
standard vllm-ascend command,
tests/fixtures/docker-run_vllm-ascend_standard-device-mounts.sh.txt, and the official notes
on manual device passthrough), pod-spec fields (``runtimeClassName``, the device plugin's
``huawei.com/Ascend910`` resource: deploy/k8s/training-pod.yaml), and for a build stage
the words "mounted from the host at run time".  Never "install the driver" inside an image:
the driver belongs to the host (AUDIT §0, Ascend Docker Runtime docs: its prestart hook
mounts the devices and the host's driver libraries into the container).
"""

from __future__ import annotations

from typing import Iterable, List, Optional, Sequence, Union

from npudoctor.remedies.steps import DockerFlags, Export, PodSpecField, Remedy, SystemdSetting

#: The control nodes every NPU container needs besides its /dev/davinciN.
CONTROL_NODES = ("/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc")

#: What a container needs from the host besides the device nodes (the official notes on
#: manual device passthrough).
HOST_MOUNTS = ("/usr/local/Ascend/driver", "/usr/local/dcmi", "/usr/local/bin/npu-smi", "/etc/ascend_install.info")

#: The Ascend device plugin's resource for 910-class NPUs (deploy/k8s/training-pod.yaml).
POD_RESOURCE = "huawei.com/Ascend910"


def docker_flags(
    device_ids: Iterable[int],
    control: Iterable[str] = CONTROL_NODES,
    mounts: Iterable[str] = (),
    lead: str = "",
    pick_device: bool = False,
) -> DockerFlags:
    """The ``docker run`` flags remedy for these devices, control nodes and mounts
    (rendered in the order of the standard vllm-ascend command by
    :func:`npudoctor.remedies.render.docker_words`); ``pick_device`` when the NPU to add
    is not known (prose asks for a free one)."""
    return DockerFlags(
        devices=tuple(int(i) for i in device_ids),
        control=tuple(control),
        mounts=tuple(mounts),
        lead=lead,
        pick_device=pick_device,
    )


def passthrough_fix(where: str, ids: Sequence[int]) -> List[Union[Remedy, str]]:
    """How to give this container/pod/build the NPU, in the terms of its world ``where``
    (:attr:`ContainerFacts.runs_in`): NPU ids ``ids`` (0 when unknown), control nodes and
    the host's driver mounts."""
    ids = list(ids) or [0]
    visible = ",".join(str(i) for i in ids)
    if where == "pod":
        return [
            PodSpecField(
                "runtimeClassName",
                "ascend",
                note="a RuntimeClass whose handler is the Ascend Docker Runtime in containerd; "
                "not needed when that runtime is the node's default",
            ),
            PodSpecField(
                "containers[0].resources.limits",
                f"{{{POD_RESOURCE}: {len(ids)}}}",
                note="the Ascend device plugin allocates the NPUs and the runtime mounts them with the driver",
            ),
        ]
    docker = [
        DockerFlags(
            runtime="ascend",
            env=(("ASCEND_VISIBLE_DEVICES", visible),),
            lead="Recreate the container with the Ascend Docker Runtime, adding to `docker run`: ",
            note="it mounts the NPUs and the host's driver",
        ),
        DockerFlags(
            devices=tuple(ids),
            control=CONTROL_NODES,
            mounts=HOST_MOUNTS,
            read_only=True,
            lead="Or add them explicitly to `docker run`: ",
        ),
    ]
    if where == "build":
        return [
            "Do not import torch_npu (or run anything that opens the NPU) in a RUN step: "
            "move the smoke test to the container's start or to a `docker run` of the built image",
            *docker,
        ]
    return list(docker)


def _volume_name(path: str) -> str:
    """A pod volume name for a host path (a DNS label: lowercase, at most 63 characters)."""
    return ("host-" + "-".join(p for p in path.strip("/").replace("_", "-").replace(".", "-").split("/") if p))[
        :63
    ].lower()


def host_mounts_fix(where: str, paths: Sequence[str], lead: str) -> List[Union[Remedy, str]]:
    """The fix that mounts the host's ``paths`` into this container (world ``where``,
    :attr:`ContainerFacts.runs_in`): ``docker run -v`` flags (``lead`` first), or in a pod
    the ``hostPath`` volumes and ``volumeMounts`` that deploy/k8s/training-pod.yaml uses."""
    if where != "pod":
        return [DockerFlags(mounts=tuple(paths), lead=lead)]
    volumes = ", ".join(f"{{name: {_volume_name(p)}, hostPath: {{path: {p}}}}}" for p in paths)
    mounts = ", ".join(f"{{name: {_volume_name(p)}, mountPath: {p}, readOnly: true}}" for p in paths)
    return [
        PodSpecField("volumes", f"[{volumes}]"),
        PodSpecField("containers[0].volumeMounts", f"[{mounts}]"),
    ]


def env_fix(unit: Optional[str], var: str, value: str, note: str = "") -> Union[Export, SystemdSetting]:
    """Set ``var=value`` where the diagnosed process gets its environment: the service's
    ``Environment=`` (a drop-in) when systemd started it (``unit``,
    :attr:`ContainerFacts.systemd_unit`), else ``export`` in the shell."""
    if unit:
        return SystemdSetting(
            unit,
            "Environment",
            f"{var}={value}",
            note=f"then systemctl restart {unit}" + (f"; {note}" if note else ""),
        )
    return Export(var, value, note=note)
