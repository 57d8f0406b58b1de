"""The rank-table judgement behind HCCL001-HCCL005 (used by :mod:`npudoctor.rules.hccl`).

:func:`layout_problems` takes the ``hccl.rank_table`` facts record (the file read by
probes/hccl.py plus the structure :func:`npudoctor.parsers.ranktable.parse_ranktable`
extracted) and decides what is wrong with it, on every run: a replayed snapshot is judged
by the current rules, whatever an older npudoctor stored beside the facts (its
``problems`` list is ignored).  The record is the typed view
(:class:`npudoctor.facts.hccl.RankTable`), so values have their types; nothing here raises.

The rules of HCCL behind each check: rank ids are 0..N-1, each once (HCCL numbers ranks by
them); device ids are physical ids unique within a server; device IPs are the NIC
addresses of ``/etc/hccn.conf`` and unique across the cluster; ``server_count`` equals the
number of servers; HCCL reads the file as plain JSON; a writer sets ``status`` to
``completed`` when done.
"""

from __future__ import annotations

from typing import Any, Dict, List

from npudoctor.facts.hccl import RankTable
from npudoctor.parsers.ranktable import FORMAT_VERSIONS, id_ranges, is_ipv4

#: Rank-table format versions whose layout is checked in full.
CHECKED_VERSIONS = FORMAT_VERSIONS


def layout_problems(table: RankTable) -> List[Dict[str, Any]]:
    """Layout problems of a rank-table facts record (``ctx.view.hccl.rank_table``).

    Returns ``[{"kind", "message", ...}]`` in a stable order, ``kind`` one of
    ``unreadable``, ``not-strict-json``, ``unknown-version``, ``not-completed``,
    ``no-servers``, ``server-count``, ``no-devices``, ``bad-rank-id``,
    ``duplicate-rank``, ``ranks-not-contiguous``, ``bad-device-id``,
    ``duplicate-device-id``, ``bad-device-ip``, ``duplicate-device-ip``,
    ``duplicate-server``; extra keys name the subject (``server``, ``rank``, ``ip``,
    ``device_id``, ``declared``/``actual``, ``missing``, ``truncated``).  An empty list
    for a table without faults; never raises (the view typed every value).
    """
    problems: List[Dict[str, Any]] = []

    def add(kind: str, message: str, **extra: Any) -> None:
        item = {"kind": kind, "message": message}
        item.update(extra)
        problems.append(item)

    if not table.ok:
        if table.read_error and table.error is None:  # the file could not be read at all
            add("unreadable", f"cannot read {table.path}: {table.read_error}")
        else:
            add("unreadable", str(table.error or "cannot be read"), truncated=table.truncated)
        return problems
    if not table.strict_json:
        tolerated = list(table.tolerated)
        add(
            "not-strict-json",
            "the file is not plain JSON (" + ", ".join(tolerated or ["unknown"]) + "); HCCL rejects it",
        )
    version = table.version
    if version is None:
        formats = " or ".join(f'"{v}"' for v in FORMAT_VERSIONS)
        add("unknown-version", f'no "version" key (expected {formats})')
    elif version not in CHECKED_VERSIONS:
        add(
            "unknown-version",
            f'version "{version}" is not a format npudoctor checks in full ({", ".join(FORMAT_VERSIONS)})',
        )
    status = table.status
    if status is not None and status != "completed":
        add("not-completed", f'status is "{status}", not "completed" (the writer has not finished)')
    servers = table.servers  # (an entry that is not an object counts, with no devices)
    if not servers:
        add("no-servers", "no server_list entries")
        return problems
    declared = table.server_count
    if table.server_count_raw is not None and declared is None:
        add("server-count", f"server_count {table.server_count_raw!r} is not a number")
    elif declared is not None and declared != len(servers):
        add(
            "server-count",
            f"server_count is {declared} but server_list has {len(servers)} entries",
            declared=declared,
            actual=len(servers),
        )
    ranks: Dict[int, List[str]] = {}
    device_ips: Dict[str, List[str]] = {}
    server_ids: Dict[str, int] = {}
    for server in servers:
        sid = server.server_id
        label = sid or f"server_list[{server.index}]"
        if sid:
            server_ids[sid] = server_ids.get(sid, 0) + 1
        devices = server.devices
        if not devices:
            add("no-devices", f"server {label} lists no devices", server=label)
        seen_ids: Dict[int, int] = {}
        for pos, dev in enumerate(devices):
            where = f"server {label} device[{pos}]"
            if dev.invalid:
                add("bad-device-id", f"{where} is not an object", server=label)
                continue
            rank = dev.rank_id
            if rank is None:
                add("bad-rank-id", f"{where}: rank_id {dev.rank_id_raw!r} is not a number", server=label)
            else:
                ranks.setdefault(rank, []).append(where)
            dev_id = dev.device_id
            if dev_id is None:
                add("bad-device-id", f"{where}: device_id {dev.device_id_raw!r} is not a number", server=label)
            else:
                seen_ids[dev_id] = seen_ids.get(dev_id, 0) + 1
            ip = dev.device_ip
            if ip is not None:
                if not is_ipv4(ip):
                    add("bad-device-ip", f"{where}: device_ip {ip!r} is not an IPv4 address", server=label)
                else:
                    device_ips.setdefault(ip, []).append(where)
        for dev_id, count in sorted(seen_ids.items()):
            if count > 1:
                add(
                    "duplicate-device-id",
                    f"server {label} lists device_id {dev_id} {count} times",
                    server=label,
                    device_id=dev_id,
                )
    for sid, count in sorted(server_ids.items()):
        if count > 1:
            add("duplicate-server", f"server_id {sid} appears {count} times", server=sid)
    for rank, places in sorted(ranks.items()):
        if len(places) > 1:
            add("duplicate-rank", f"rank_id {rank} is used {len(places)} times: {', '.join(places)}", rank=rank)
    if ranks:
        expected = set(range(len(ranks)))
        present = set(ranks)
        if present != expected:
            top = max(present)
            # (a rank id in the billions is reported, not enumerated)
            missing = sorted(set(range(top + 1)) - present) if top < 1_000_000 else []
            add(
                "ranks-not-contiguous",
                f"rank ids must be 0..{len(present) - 1} with no gap; found {id_ranges(sorted(present))}"
                + (f" (missing {id_ranges(missing)})" if missing else ""),
                missing=missing,
            )
    for ip, places in sorted(device_ips.items()):
        if len(places) > 1:
            add("duplicate-device-ip", f"device_ip {ip} is used {len(places)} times: {', '.join(places)}", ip=ip)
    return problems
