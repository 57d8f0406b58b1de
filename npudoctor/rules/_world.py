"""What the diagnosed process's capabilities let it open (not a rule module: the leading
underscore keeps it out of rule discovery).  The fixes in the terms of the world it runs
in are remedies (:mod:`npudoctor.remedies.world`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npudoctor.facts.container import Capabilities, ContainerFacts
from npudoctor.facts.devices import DeviceNode, DevicesFacts
from npudoctor.parsers.numbers import to_int

if TYPE_CHECKING:
    from typing import List, Optional, Sequence

#: Capability bit numbers (linux/capability.h).
CAP_DAC_OVERRIDE = 1
CAP_DAC_READ_SEARCH = 2
CAP_SYS_ADMIN = 21


def mask(value: Optional[str]) -> Optional[int]:
    """A capability mask as ``/proc/PID/status`` prints it (hex) → int; None if unreadable."""
    try:
        return to_int(value or "", 16, max_digits=64)
    except ValueError:
        return None


def has_cap(value: Optional[str], bit: int) -> Optional[bool]:
    """Whether capability ``bit`` is in the hex mask ``value``; None when unknown."""
    m = mask(value)
    return None if m is None else bool(m & (1 << bit))


def judged_caps(container: ContainerFacts, devices: DevicesFacts) -> Optional[Capabilities]:
    """The capabilities of the judged process: the container probe's read of
    ``/proc/self/status`` when the judged account is that process's (same effective uid),
    else None (``--user`` judges another account, whose capabilities are not known)."""
    caps = container.capabilities
    if caps is None or caps.uid is None:
        return None
    ident = devices.identity
    if ident.uid is not None and ident.uid != caps.uid:
        return None
    return caps


def _class_access(uid: int, gid: Optional[int], groups: Sequence[int], node: DeviceNode) -> Optional[bool]:
    """Read+write by the owner/group/other classes of the node's mode, without privilege."""
    mode = to_int(node.mode or "", 8)
    if node.uid is None or node.gid is None or mode is None or mode < 0:
        return None
    if uid == node.uid:
        return mode & 0o600 == 0o600
    if node.gid == gid or node.gid in groups:
        return mode & 0o060 == 0o060
    return mode & 0o006 == 0o006


def denied_without_dac_override(container: ContainerFacts, devices: DevicesFacts) -> List[DeviceNode]:
    """Existing NPU nodes that a root process without CAP_DAC_OVERRIDE in its effective set
    cannot open read+write: the kernel then checks the mode bits for uid 0 like for any
    other uid (capabilities(7): CAP_DAC_OVERRIDE "bypass file read, write, and execute
    permission checks").  Empty when the process is not root, holds the capability, or its
    capabilities are unknown."""
    caps = judged_caps(container, devices)
    if caps is None or caps.uid != 0 or has_cap(caps.cap_eff, CAP_DAC_OVERRIDE) is not False:
        return []
    out = []
    for node in devices.nodes:
        if node.exists and _class_access(0, caps.gid, caps.groups, node) is False:
            out.append(node)
    return out
