"""The shape of the job behind the HCCL rules: multi-node? several ranks?

:func:`job_shape` infers it from the ``hccl`` facts (launch variables, the parsed rank
table, this node's addresses, the ``/dev/davinciN`` nodes) and the ``devices`` section's
``visible_count``, on every run: the ``multi_node``/``multi_process`` verdicts an older
npudoctor stored in the ``hccl`` section are ignored.  It reads the typed views
(:mod:`npudoctor.facts.hccl`, :mod:`npudoctor.facts.devices`); nothing here raises.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any, Dict, List, Optional

from npudoctor.facts.devices import DevicesFacts
from npudoctor.facts.hccl import HcclFacts

#: Launcher variables that give the number of nodes.
NODE_COUNT_VARS = ("NNODES", "NODE_COUNT", "PET_NNODES", "SERVER_COUNT", "SLURM_NNODES", "SLURM_JOB_NUM_NODES")


def _int(value: Optional[str]) -> Optional[int]:
    """A launcher variable's whole number (``" 4 "`` → 4), or ``None``."""
    if value is None:
        return None
    value = value.strip()
    return int(value) if re.fullmatch(r"[0-9]+", value) else None


def _is_loopback(addr: str) -> bool:
    if addr.lower() in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(addr).is_loopback
    except ValueError:
        return False


def job_shape(hccl: HcclFacts, devices: Optional[DevicesFacts] = None) -> Dict[str, Dict[str, Any]]:
    """``{"multi_node": {"value": True|False|None, "reasons": [str]}, "multi_process":
    {"value": True|None, "reasons": [str]}}`` for the ``hccl`` and ``devices`` facts
    views (``devices`` ``None``: not known).

    Multi-node: a rank table with several servers, a node-count variable > 1, WORLD_SIZE >
    LOCAL_WORLD_SIZE, more ranks (WORLD_SIZE/RANK_SIZE) than this node's NPUs (the larger of
    the ``/dev/davinciN`` nodes and npu-smi's chips: one rank drives one NPU),
    HCCL_INTRA_ROCE_ENABLE=1, or a MASTER_ADDR that is none of this node's addresses; False
    when only single-node signs are seen (one server, a node count of 1); None when nothing
    tells.  Multi-process: several ranks named anywhere (or multi-node)."""
    variables = hccl.variables
    table = hccl.rank_table
    local = hccl.local
    visible = devices.visible_count if devices is not None else None
    local_devices = max(len(hccl.dev_nodes), visible or 0)
    node_reasons: List[str] = []
    single_reasons: List[str] = []
    proc_reasons: List[str] = []
    if table is not None and table.ok:
        servers = len(table.servers)
        if servers > 1:
            node_reasons.append(f"the rank table lists {servers} servers")
        elif servers == 1:
            single_reasons.append("the rank table lists one server")
        ranks = table.rank_count
        if ranks > 1:
            proc_reasons.append(f"the rank table lists {ranks} ranks")
    for name in NODE_COUNT_VARS:
        n = _int(variables.get(name))
        if n is not None and n > 1:
            node_reasons.append(f"{name}={n}")
        elif n == 1:
            single_reasons.append(f"{name}=1")
    world, local_world = _int(variables.get("WORLD_SIZE")), _int(variables.get("LOCAL_WORLD_SIZE"))
    if world is not None and local_world is not None and world > local_world:
        node_reasons.append(f"WORLD_SIZE={world} > LOCAL_WORLD_SIZE={local_world}")
    for name in ("WORLD_SIZE", "RANK_SIZE"):
        n = _int(variables.get(name))
        if n is not None and n > 1:
            proc_reasons.append(f"{name}={n}")
            if (
                local_devices
                and n > local_devices
                and not any(r.startswith(("WORLD_SIZE", "RANK_SIZE")) for r in node_reasons)
            ):
                node_reasons.append(f"{name}={n} ranks but this node has {local_devices} NPU(s)")
    if variables.get("HCCL_INTRA_ROCE_ENABLE", "").strip() == "1":
        node_reasons.append("HCCL_INTRA_ROCE_ENABLE=1 (RoCE between devices needs device IPs)")
    addr = (variables.get("MASTER_ADDR") or "").strip()
    if addr and local.available and not _is_loopback(addr):
        mine = {a.address for a in local.addresses}
        try:
            ipaddress.ip_address(addr)
            if addr not in mine:
                node_reasons.append(f"MASTER_ADDR={addr} is another machine")
        except ValueError:
            pass
    value: Optional[bool] = True if node_reasons else (False if single_reasons else None)
    return {
        "multi_node": {"value": value, "reasons": node_reasons or single_reasons},
        "multi_process": {"value": True if proc_reasons or node_reasons else None, "reasons": proc_reasons},
    }
