"""NUMA placement: the CPUs of each NUMA node and the NUMA node of each NPU's PCI function,
read from sysfs, live and under ``--root`` alike.

Section ``numa``::

    nodes   {"0": "0-47", ...}: ``cpulist`` of each /sys/devices/system/node/nodeN (at most
            MAX_NODES), {} when the kernel shows no NUMA nodes
    npus    [{"bus_id": "0000:c1:00.0", "numa_node": int | None (-1: the firmware gave none;
            None: unreadable), "source": "/sys/bus/pci/devices/<bus_id>/numa_node"}]: the
            chips npu-smi lists with a full PCI address (masked or NA addresses are skipped)
    errors  {path: reason} for the files that could not be read
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npudoctor.context import ProbeContext
from npudoctor.lazyre import pattern

if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional

SECTION = "numa"
NEEDS = ("devices",)

NODE_DIR = "/sys/devices/system/node"
#: Most NUMA nodes read.
MAX_NODES = 64
#: Most NPU functions looked up.
MAX_NPUS = 64
_BDF = pattern(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")


def _numa_node(text: Optional[str]) -> Optional[int]:
    value = (text or "").strip()
    if value == "-1":
        return -1
    return int(value) if value.isdigit() and len(value) <= 4 else None


def probe(ctx: ProbeContext) -> Dict[str, Any]:
    host = ctx.host
    errors: Dict[str, str] = {}
    nodes: Dict[str, str] = {}
    for path in host.glob(NODE_DIR, prefix="node")[:MAX_NODES]:
        number = path.rsplit("/node", 1)[-1]
        if not number.isdigit():
            continue
        read = host.read_text(path + "/cpulist", limit=4096)
        if read.text is None:
            errors[path + "/cpulist"] = read.error or "unreadable"
        else:
            nodes[number] = read.text.strip()
    npus: List[Dict[str, Any]] = []
    seen = set()
    for chip in (ctx.facts.get("devices") or {}).get("chips") or []:
        bus = str((chip or {}).get("bus_id") or "").strip().lower()
        if not _BDF.match(bus) or bus in seen or len(npus) >= MAX_NPUS:
            continue
        seen.add(bus)
        source = f"/sys/bus/pci/devices/{bus}/numa_node"
        read = host.read_text(source, limit=64)
        if read.text is None:
            errors[source] = read.error or "unreadable"
        npus.append({"bus_id": bus, "numa_node": _numa_node(read.text), "source": source})
    return {"nodes": nodes, "npus": npus, "errors": errors}
