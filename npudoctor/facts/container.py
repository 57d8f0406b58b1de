"""Typed views of the ``container`` section (shape documented in
``npudoctor/probes/container.py``): the world the diagnosed process runs in, its
capabilities and the driver pieces mounted into it."""

from __future__ import annotations

from typing import Optional, Tuple

from npudoctor.facts._view import View


class Mount(View):
    """A driver piece a container needs."""

    path: str = ""
    exists: Optional[bool] = None
    """None: not recorded, or cannot be told"""
    what: Optional[str] = None
    required: bool = False
    unreadable: Optional[str] = None
    """why presence cannot be told (permission denied, symlink loop)"""


class DeviceCgroup(View):
    path: Optional[str] = None
    entries: Tuple[str, ...] = ()
    allow_all: Optional[bool] = None


class Launcher(View):
    """What started the diagnosed environment (systemd, Slurm, Ray) and the variable that says so."""

    name: str = ""
    '"systemd" | "slurm" | "ray"'
    evidence: Optional[str] = None
    unit: Optional[str] = None
    """systemd: the service its cgroup names"""


class Capabilities(View):
    """The capability sets and effective ids of ``/proc/self/status`` (as read: hex masks)."""

    source: Optional[str] = None
    cap_eff: Optional[str] = None
    """CapEff, hex as read ("0000000000000000")"""
    cap_prm: Optional[str] = None
    cap_bnd: Optional[str] = None
    uid: Optional[int] = None
    """effective uid (second field of Uid:)"""
    gid: Optional[int] = None
    groups: Tuple[int, ...] = ()


class ContainerFacts(View):
    """Are we inside a container, which runtime, and are the driver files mounted."""

    world: Optional[str] = None
    """"build" | "pod" | "container" | "host" (None: snapshots from before it was recorded)"""
    launched_by: Tuple[Launcher, ...] = ()
    build_markers: Tuple[str, ...] = ()
    """why this looks like an image build step"""
    capabilities: Optional[Capabilities] = None

    in_container: bool = False
    runtime: Optional[str] = None
    kubernetes: bool = False
    evidence: Tuple[str, ...] = ()
    driver_dir: Optional[bool] = None
    mounts: Tuple[Mount, ...] = ()
    npu_smi_paths: Tuple[str, ...] = ()
    device_cgroup: Optional[DeviceCgroup] = None
    privileged: Optional[bool] = None

    @property
    def runs_in(self) -> str:
        """``"build"``, ``"pod"``, ``"container"`` or ``"host"``: ``world``, else (snapshots
        from before the probe recorded it) what ``kubernetes`` / ``in_container`` say."""
        if self.world:
            return self.world
        if self.kubernetes:
            return "pod"
        return "container" if self.in_container else "host"

    @property
    def systemd_unit(self) -> Optional[str]:
        """The systemd service that started the diagnosed process, when it is known."""
        for launcher in self.launched_by:
            if launcher.name == "systemd" and launcher.unit:
                return launcher.unit
        return None
