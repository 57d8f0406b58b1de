"""Device facts shared by the device, visibility, chip and container rules (not a rule
module: the leading underscore keeps it out of rule discovery).  Everything is read from
the typed views each helper is given (devices, host, environment); the parsing of
device-id lists lives here too (the ``docker run`` flags remedy: :mod:`npudoctor.remedies.world`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from npudoctor.facts.devices import DevicesFacts, NpuSmi
from npudoctor.facts.system import HostFacts, Identity
from npudoctor.rules.overview import npu_stack_present

if TYPE_CHECKING:
    from typing import List, Optional, Tuple

    from npudoctor.facts import Facts


def stack_present(facts: Facts) -> bool:
    """True when there is something NPU-related here: chips, device nodes or an npu-smi
    on PATH in the devices view, or :func:`npudoctor.rules.overview.npu_stack_present`."""
    dev = facts.devices
    own = bool(dev.chips) or bool(dev.nodes) or bool(dev.npu_smi.path)
    return own or bool(npu_stack_present(facts))


def judged_identity(devices: DevicesFacts, host: HostFacts) -> Optional[Identity]:
    """The account whose device access is judged: the devices view's identity, else the
    host's; ``None`` when neither snapshot section recorded one."""
    for ident in (devices.identity, host.identity):
        if ident != Identity():
            return ident
    return None


def parse_id_list(raw: str) -> Tuple[List[int], List[str]]:
    """``"0-2,4"`` → ([0,1,2,4], []) for ASCEND_VISIBLE_DEVICES syntax (single, list,
    ranges; MindCluster docs; the device plugin's names ``Ascend910-4`` → 4); bad parts are
    returned in the second list."""
    ids: List[int] = []
    bad: List[str] = []
    for part in raw.split(","):
        part = part.strip()
        named = re.match(r"^Ascend[0-9A-Za-z]*-((?<![0-9])[0-9]{1,18})$", part)
        if named:
            ids.append(int(named.group(1)))
            continue
        m = re.match(r"^([0-9]{1,18})(?:-([0-9]{1,18}))?$", part)
        if not m:
            if part:
                bad.append(part)
            continue
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi < lo or hi - lo > 4096:
            bad.append(part)
            continue
        ids.extend(range(lo, hi + 1))
    return ids, bad


#: Longest PATH shown whole in evidence (characters); longer ones keep their first entries.
PATH_TEXT_LIMIT = 200


def shorten_path_list(entries: List[str], limit: int = PATH_TEXT_LIMIT) -> str:
    """``entries`` joined with ``:``; when longer than ``limit`` characters, the first
    entries that fit followed by ``… (+N more)`` (N: the entries left out).  At least one
    entry is always shown.  Example: ``/a:/b … (+12 more)``."""
    whole = ":".join(entries)
    if len(whole) <= limit:
        return whole
    shown: List[str] = []
    for entry in entries:
        if shown and len(":".join(shown + [entry])) > limit:
            break
        shown.append(entry)
    return ":".join(shown) + f" … (+{len(entries) - len(shown)} more)"


def searched_path_text(smi: NpuSmi, facts: Facts) -> str:
    """The evidence line naming the PATH that was searched for npu-smi.

    Source: ``devices.npu_smi.searched`` (the diagnosed environment's PATH entries);
    snapshots from before that key fall back to the PATH of ``environment.current``
    (the only case that reads the environment section of ``facts``: ``devices`` does not
    collect it).  Returns e.g. ``PATH searched: /usr/bin:/bin``."""
    entries = list(smi.searched) if smi.searched is not None else None
    if entries is None:
        current = facts.environment.current.get("PATH")
        if current is None:
            return "PATH searched: not recorded in this snapshot"
        entries = [p for p in current.split(":") if p]
    if not entries:
        return "PATH searched: PATH is empty or unset"
    return "PATH searched: " + shorten_path_list(entries)
