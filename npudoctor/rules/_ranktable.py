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

from npudoctor.facts.hccl import RankServer, RankTable
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
    if not table.ok:
        if table.read_error and table.error is None:  # the file could not be read at all
            return [_problem("unreadable", f"cannot read {table.path}: {table.read_error}")]
        return [_problem("unreadable", str(table.error or "cannot be read"), truncated=table.truncated)]
    problems = _format_problems(table)
    servers = table.servers  # (an entry that is not an object counts, with no devices)
    if not servers:
        problems.append(_problem("no-servers", "no server_list entries"))
        return problems
    declared = table.server_count
    if table.server_count_raw is not None and declared is None:
        problems.append(_problem("server-count", f"server_count {table.server_count_raw!r} is not a number"))
    elif declared is not None and declared != len(servers):
        problems.append(
            _problem(
                "server-count",
                f"server_count is {declared} but server_list has {len(servers)} entries",
                declared=declared,
                actual=len(servers),
            )
        )
    ranks: Dict[int, List[str]] = {}
    device_ips: Dict[str, List[str]] = {}
    server_ids: Dict[str, int] = {}
    for server in servers:
        if server.server_id:
            server_ids[server.server_id] = server_ids.get(server.server_id, 0) + 1
        problems.extend(_server_problems(server, ranks, device_ips))
    for sid, count in sorted(server_ids.items()):
        if count > 1:
            problems.append(_problem("duplicate-server", f"server_id {sid} appears {count} times", server=sid))
    problems.extend(_rank_problems(ranks))
    for ip, places in sorted(device_ips.items()):
        if len(places) > 1:
            problems.append(
                _problem(
                    "duplicate-device-ip", f"device_ip {ip} is used {len(places)} times: {', '.join(places)}", ip=ip
                )
            )
    return problems


def _problem(kind: str, message: str, **extra: Any) -> Dict[str, Any]:
    item = {"kind": kind, "message": message}
    item.update(extra)
    return item


def _format_problems(table: RankTable) -> List[Dict[str, Any]]:
    """What the file says of itself: not plain JSON, a format not checked, not completed."""
    problems: List[Dict[str, Any]] = []
    if not table.strict_json:
        tolerated = list(table.tolerated)
        problems.append(
            _problem(
                "not-strict-json",
                "the file is not plain JSON (" + ", ".join(tolerated or ["unknown"]) + "); HCCL rejects it",
            )
        )
    version = table.version
    if version is None:
        formats = " or ".join(f'"{v}"' for v in FORMAT_VERSIONS)
        problems.append(_problem("unknown-version", f'no "version" key (expected {formats})'))
    elif version not in CHECKED_VERSIONS:
        problems.append(
            _problem(
                "unknown-version",
                f'version "{version}" is not a format npudoctor checks in full ({", ".join(FORMAT_VERSIONS)})',
            )
        )
    status = table.status
    if status is not None and status != "completed":
        problems.append(
            _problem("not-completed", f'status is "{status}", not "completed" (the writer has not finished)')
        )
    return problems


def _server_problems(
    server: RankServer, ranks: Dict[int, List[str]], device_ips: Dict[str, List[str]]
) -> List[Dict[str, Any]]:
    """The problems of one server's devices; each rank id and device IP is recorded with
    its place in ``ranks`` and ``device_ips`` for the checks across servers."""
    problems: List[Dict[str, Any]] = []
    label = server.server_id or f"server_list[{server.index}]"
    if not server.devices:
        problems.append(_problem("no-devices", f"server {label} lists no devices", server=label))
    seen_ids: Dict[int, int] = {}
    for pos, dev in enumerate(server.devices):
        where = f"server {label} device[{pos}]"
        if dev.invalid:
            problems.append(_problem("bad-device-id", f"{where} is not an object", server=label))
            continue
        if dev.rank_id is None:
            problems.append(
                _problem("bad-rank-id", f"{where}: rank_id {dev.rank_id_raw!r} is not a number", server=label)
            )
        else:
            ranks.setdefault(dev.rank_id, []).append(where)
        if dev.device_id is None:
            problems.append(
                _problem("bad-device-id", f"{where}: device_id {dev.device_id_raw!r} is not a number", server=label)
            )
        else:
            seen_ids[dev.device_id] = seen_ids.get(dev.device_id, 0) + 1
        ip = dev.device_ip
        if ip is not None:
            if not is_ipv4(ip):
                problems.append(
                    _problem("bad-device-ip", f"{where}: device_ip {ip!r} is not an IPv4 address", server=label)
                )
            else:
                device_ips.setdefault(ip, []).append(where)
    for dev_id, count in sorted(seen_ids.items()):
        if count > 1:
            problems.append(
                _problem(
                    "duplicate-device-id",
                    f"server {label} lists device_id {dev_id} {count} times",
                    server=label,
                    device_id=dev_id,
                )
            )
    return problems


def _rank_problems(ranks: Dict[int, List[str]]) -> List[Dict[str, Any]]:
    """Rank ids used twice, and rank ids that are not 0..N-1."""
    problems: List[Dict[str, Any]] = []
    for rank, places in sorted(ranks.items()):
        if len(places) > 1:
            problems.append(
                _problem(
                    "duplicate-rank", f"rank_id {rank} is used {len(places)} times: {', '.join(places)}", rank=rank
                )
            )
    if ranks:
        expected = set(range(len(ranks)))
        present = set(ranks)
        if present != expected:
            top = max(present)
            # (a rank id in the billions is reported, not enumerated)
            missing = sorted(set(range(top + 1)) - present) if top < 1_000_000 else []
            problems.append(
                _problem(
                    "ranks-not-contiguous",
                    f"rank ids must be 0..{len(present) - 1} with no gap; found {id_ranges(sorted(present))}"
                    + (f" (missing {id_ranges(missing)})" if missing else ""),
                    missing=missing,
                )
            )
    return problems
