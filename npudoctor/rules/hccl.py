"""HCCL and multi-node rules (kind K19 of cases/kinds.md; cases 47 and 48).

Facts read: the ``hccl`` section (npudoctor/probes/hccl.py) and, when present, the device
list of the ``devices`` section (``chips``; probes/devices.py) to know which physical device
ids this node has.  Every rule tolerates missing keys (an older snapshot, ``--only``).
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.parsers.ranktable import is_ip, server_addresses
from npudoctor.remedies import DockerFlags, Export
from npudoctor.rules import rule
from npudoctor.rules._hccl_job import job_shape
from npudoctor.rules._ranktable import layout_problems

_RT_FIX = (
    "Regenerate the rank table for this cluster (MindSpore models' `utils/hccl_tools/hccl_tools.py`, "
    "or let Ascend Operator/MindCluster write hccl.json) and point RANK_TABLE_FILE at it on every node"
)

RT_UNREADABLE = codes.get("HCCL001")
RT_NOT_PLAIN = codes.get("HCCL002")
RT_LAYOUT = codes.get("HCCL003")
RT_DUP_RANK = codes.get("HCCL004")
RT_GAP = codes.get("HCCL005")
RT_DEV_NOT_VISIBLE = codes.get("HCCL006")
RT_IP_MISMATCH = codes.get("HCCL007")
RT_SERVER_NOT_LOCAL = codes.get("HCCL008")
IF_IP_NOT_LOCAL = codes.get("HCCL009")
IFNAME_MISSING = codes.get("HCCL010")
TIMEOUT_INVALID = codes.get("HCCL011")
EXEC_ZERO = codes.get("HCCL012")
CONNECT_SHORT = codes.get("HCCL013")
HCCN_MISSING = codes.get("HCCL014")
HCCN_DEVICE_MISSING = codes.get("HCCL015")
MASTER_UNREACHABLE = codes.get("HCCL016")
MASTER_BAD = codes.get("HCCL017")
WHITELIST = codes.get("HCCL018")
HCCN_TOOL_DIFFERS = codes.get("HCCL019")
LINK_DOWN = codes.get("HCCL020")


# --------------------------------------------------------------------------- helpers
def _section(ctx: Any) -> Dict[str, Any]:
    return ctx.facts("hccl")


def _d(mapping: Any, key: str) -> Dict[str, Any]:
    """``mapping[key]`` when both are dicts, else an empty dict (odd facts never raise)."""
    value = mapping.get(key) if isinstance(mapping, dict) else None
    return value if isinstance(value, dict) else {}


def _l(mapping: Any, key: str) -> List[Any]:
    """``mapping[key]`` when it is a list, else an empty list."""
    value = mapping.get(key) if isinstance(mapping, dict) else None
    return value if isinstance(value, list) else []


def _job(ctx: Any) -> Dict[str, Dict[str, Any]]:
    """Multi-node / multi-process, inferred now from the facts (rules/_hccl_job.py)."""
    return job_shape(_section(ctx), ctx.facts("devices"))


def _multi_node(ctx: Any) -> Tuple[bool, List[str]]:
    m = _job(ctx)["multi_node"]
    return m["value"] is True, list(m["reasons"])


def _local_addresses(h: Dict[str, Any]) -> Optional[Set[str]]:
    """This node's addresses, or ``None`` when unknown (under --root, replayed without them)."""
    local = _d(h, "local")
    if not local.get("available"):
        return None
    out = set()
    for a in _l(local, "addresses"):
        if isinstance(a, dict) and a.get("address"):
            out.add(_norm_ip(str(a["address"])))
    return out


def _norm_ip(value: str) -> str:
    try:
        return str(ipaddress.ip_address(value.strip()))
    except ValueError:
        return value.strip()


#: Chip keys that carry the physical device id (parsers/npu_smi.py: ``phy_id`` on A3, else
#: ``npu_id``, which equals the physical id on one-chip-per-card 910-class boards).
_ID_KEYS = ("phy_id", "npu_id")


def visible_device_ids(ctx: Any) -> Tuple[Optional[Set[int]], str]:
    """Physical device ids present on this node and where that came from: the ``devices``
    section's chips (npu-smi) when it ran, else the /dev/davinciN nodes recorded by the hccl
    probe.  ``(None, reason)`` when neither tells."""
    devices = ctx.facts("devices")
    chips = devices.get("chips") if isinstance(devices, dict) else None
    if isinstance(chips, list) and chips:
        ids: Set[int] = set()
        for chip in chips:
            if not isinstance(chip, dict):
                continue
            for key in _ID_KEYS:
                value = chip.get(key)
                if isinstance(value, int) and not isinstance(value, bool):
                    ids.add(value)
                    break
                if isinstance(value, str) and value.strip().isdigit():
                    ids.add(int(value))
                    break
        if ids:
            return ids, "npu-smi (devices section)"
    nodes = _section(ctx).get("dev_nodes")
    if isinstance(nodes, list) and nodes:
        return {int(n) for n in nodes if isinstance(n, int)}, "/dev/davinciN nodes"
    return None, "no device list"


def _conf_addresses(h: Dict[str, Any]) -> Optional[Dict[str, str]]:
    conf = _d(h, "hccn_conf")
    if not conf.get("devices") and not conf.get("present"):
        return None
    devices = _d(conf, "devices")
    return {str(k): str(v.get("address")) for k, v in devices.items() if isinstance(v, dict) and v.get("address")}


def local_server(h: Dict[str, Any]) -> Tuple[Optional[Dict[str, Any]], str]:
    """This node's entry in the rank table and how it was recognised: by a local address
    (live), by device IPs equal to this node's hccn.conf, or as the only server."""
    table = _d(h, "rank_table")
    servers = [s for s in _l(table, "servers") if isinstance(s, dict) and not s.get("invalid")]
    if not servers:
        return None, "no servers"
    mine = _local_addresses(h)
    if mine is not None:
        for s in servers:
            if {_norm_ip(a) for a in server_addresses(s)} & mine:
                return s, "a local address"
    conf = _conf_addresses(h) or {}
    conf_ips = set(conf.values())
    if conf_ips:
        for s in servers:
            if {d.get("device_ip") for d in _l(s, "devices")} & conf_ips:
                return s, "device IPs of /etc/hccn.conf"
    if len(servers) == 1:
        return servers[0], "the only server"
    return None, "not recognised"


def _label(server: Dict[str, Any]) -> str:
    return str(server.get("server_id") or server.get("host_ip") or f"server_list[{server.get('index')}]")


def _rt_path(h: Dict[str, Any]) -> str:
    return str(_d(h, "rank_table").get("path") or "$RANK_TABLE_FILE")


# --------------------------------------------------------------------------- rules
_LAYOUT_KINDS = {
    "unknown-version": "warning",
    "not-completed": "warning",
    "no-servers": "error",
    "server-count": "error",
    "no-devices": "error",
    "bad-rank-id": "error",
    "bad-device-id": "error",
    "duplicate-device-id": "error",
    "bad-device-ip": "error",
    "duplicate-device-ip": "error",
    "duplicate-server": "error",
}


@rule
def rank_table_layout(ctx: Any) -> Iterable[Finding]:
    """HCCL001-HCCL005: the rank table as a file (readable, plain JSON, consistent)."""
    h = _section(ctx)
    table = h.get("rank_table")
    if not isinstance(table, dict):
        return
    path = _rt_path(h)
    problems = layout_problems(table)  # judged now, never taken from the snapshot
    check = f"python3 -m json.tool {path} > /dev/null"
    for p in problems:
        kind, msg = p.get("kind"), str(p.get("message", ""))
        if kind == "unreadable":
            if table.get("read_error"):
                title = f"RANK_TABLE_FILE={path} cannot be read: {table['read_error']}"
                fix = [f"ls -l {path}", "export RANK_TABLE_FILE=<absolute path of the rank table on this node>"]
            elif table.get("truncated"):
                title = f"The rank table {path} is truncated: {msg}"
                fix = [check, _RT_FIX]
            else:
                title = f"The rank table {path} is not valid JSON: {msg}"
                fix = [check, _RT_FIX]
            yield RT_UNREADABLE.finding(title=title, evidence=[f"RANK_TABLE_FILE={path}", msg], fix=fix)
        elif kind == "not-strict-json":
            yield RT_NOT_PLAIN.finding(
                title=f"The rank table {path} is not plain JSON ({', '.join(table.get('tolerated') or [])})",
                evidence=[msg],
                fix=[
                    f"Remove the comments and '...' lines from {path} and fill in the real values",
                    check,
                ],
            )
        elif kind == "duplicate-rank":
            yield RT_DUP_RANK.finding(
                title=f"rank_id {p.get('rank')} appears more than once in {path}",
                evidence=[msg],
                fix=[f"Give every device entry of {path} its own rank_id, 0..N-1", _RT_FIX],
                subject=str(p.get("rank")),
            )
        elif kind == "ranks-not-contiguous":
            yield RT_GAP.finding(
                title=f"The rank ids of {path} have gaps",
                evidence=[msg],
                fix=[f"Renumber the rank_id values of {path} as 0..N-1 (or restore the missing entries)", _RT_FIX],
            )
        elif kind in _LAYOUT_KINDS:
            yield RT_LAYOUT.finding(
                title=f"Rank table {path}: {msg}",
                evidence=[msg],
                fix=[f"Correct {path}: {msg}", _RT_FIX],
                severity=_LAYOUT_KINDS[kind],
                subject=f"{kind}:{p.get('server', '')}{p.get('ip', '')}{p.get('device_id', '')}",
            )


@rule
def rank_table_this_node(ctx: Any) -> Iterable[Finding]:
    """HCCL006-HCCL008: this node's entry of the rank table against this node."""
    h = _section(ctx)
    table = h.get("rank_table")
    if not isinstance(table, dict) or not table.get("ok"):
        return
    path = _rt_path(h)
    mine = _local_addresses(h)
    server, how = local_server(h)
    if mine is not None and how != "a local address":
        named = sorted({a for s in _l(table, "servers") if isinstance(s, dict) for a in server_addresses(s)})
        ours = sorted(a for a in mine if not _is_loopback(a))
        yield RT_SERVER_NOT_LOCAL.finding(
            title=f"No server of {path} has an address of this node",
            evidence=[
                f"addresses named by the rank table: {', '.join(named) or 'none (server_id is not an IP)'}",
                f"this node's addresses ({(h.get('local') or {}).get('source')}): {', '.join(ours) or 'none'}",
            ],
            fix=[
                f"Set server_id (format 1.0) or host_ip/container_ip (1.2) of this node's entry in {path} "
                f"to one of: {', '.join(ours[:4]) or 'this node’s host IP'}",
                "Check RANK_TABLE_FILE points at the table of this cluster",
            ],
        )
    if server is None:
        return
    label = _label(server)
    devices = [d for d in _l(server, "devices") if isinstance(d, dict) and not d.get("invalid")]
    visible, source = visible_device_ids(ctx)
    if visible is not None:
        missing = sorted({d["device_id"] for d in devices if isinstance(d.get("device_id"), int)} - visible)
        if missing:
            yield RT_DEV_NOT_VISIBLE.finding(
                title=f"{path} gives this node (server {label}) device ids {_ids(missing)}, not visible here",
                evidence=[
                    f"server {label} (recognised by {how}) lists device ids "
                    f"{_ids(sorted(d['device_id'] for d in devices if isinstance(d.get('device_id'), int)))}",
                    f"devices visible here ({source}): {_ids(sorted(visible)) or 'none'}",
                ],
                fix=[
                    f"Pass the devices into the container: {' '.join(f'--device /dev/davinci{i}' for i in missing)}",
                    f"or list only the visible devices ({_ids(sorted(visible))}) for this node in {path}",
                ],
            )
    conf = _conf_addresses(h)
    conf_meta = _d(h, "hccn_conf")
    if conf is None:
        return
    for d in devices:
        dev_id, ip = d.get("device_id"), d.get("device_ip")
        if not isinstance(dev_id, int) or not ip:
            continue
        want = conf.get(str(dev_id))
        if want is None:
            if conf_meta.get("elided"):
                continue
            yield RT_IP_MISMATCH.finding(
                title=f"{path}: device {dev_id} has device_ip {ip}, but /etc/hccn.conf has no address_{dev_id}",
                evidence=[
                    f"server {label} device {dev_id} device_ip={ip} ({path})",
                    f"/etc/hccn.conf addresses: {', '.join(f'address_{k}={v}' for k, v in conf.items()) or 'none'}",
                ],
                fix=[
                    f"hccn_tool -i {dev_id} -ip -g   # on the host: the NIC address of device {dev_id}",
                    f"hccn_tool -i {dev_id} -ip -s address {ip} netmask <netmask>   # if {ip} is the intended address",
                ],
                subject=str(dev_id),
            )
        elif _norm_ip(want) != _norm_ip(ip):
            yield RT_IP_MISMATCH.finding(
                title=f"{path}: device {dev_id} has device_ip {ip}, /etc/hccn.conf says address_{dev_id}={want}",
                evidence=[
                    f"server {label} device {dev_id} device_ip={ip} ({path})",
                    f"address_{dev_id}={want} (/etc/hccn.conf)",
                ],
                fix=[
                    f'Set "device_ip": "{want}" for device_id {dev_id} of server {label} in {path}',
                    f"hccn_tool -i {dev_id} -ip -g   # confirm the live address on the host",
                ],
                subject=str(dev_id),
            )


def _ids(values: Iterable[int]) -> str:
    return ",".join(str(v) for v in values)


def _is_loopback(addr: str) -> bool:
    try:
        return ipaddress.ip_address(addr).is_loopback or ipaddress.ip_address(addr).is_link_local
    except ValueError:
        return False


def _ifname_matches(spec: str, interfaces: List[str]) -> Tuple[bool, List[str]]:
    """Whether an HCCL_SOCKET_IFNAME value selects at least one of ``interfaces`` and which.
    Syntax (CANN env-var reference): comma-separated prefixes; a leading ``=`` makes the list
    exact names; a leading ``^`` makes it an exclusion list."""
    spec = spec.strip()
    exclude = spec.startswith("^")
    if exclude:
        spec = spec[1:]
    exact = spec.startswith("=")
    if exact:
        spec = spec[1:]
    names = [n.strip() for n in spec.split(",") if n.strip()]

    def hit(iface: str) -> bool:
        return any(iface == n if exact else iface.startswith(n) for n in names)

    if exclude:
        chosen = [i for i in interfaces if not hit(i) and i != "lo"]
    else:
        chosen = [i for i in interfaces if hit(i)]
    return bool(chosen), chosen


@rule
def hccl_network_variables(ctx: Any) -> Iterable[Finding]:
    """HCCL009-HCCL010: HCCL_IF_IP and HCCL_SOCKET_IFNAME against this node."""
    h = _section(ctx)
    variables = _d(h, "variables")
    local = _d(h, "local")
    mine = _local_addresses(h)
    ours = sorted(a for a in (mine or ()) if not _is_loopback(a) and ":" not in a)
    if_ip = variables.get("HCCL_IF_IP")
    if isinstance(if_ip, str) and if_ip.strip():
        value = if_ip.strip()
        if not is_ip(value):
            yield IF_IP_NOT_LOCAL.finding(
                title=f"HCCL_IF_IP={value} is not an IP address",
                evidence=[f"HCCL_IF_IP={value} (environment)"],
                fix=[f"export HCCL_IF_IP={ours[0] if ours else '<this node’s host IP>'}"],
            )
        elif mine is not None and _norm_ip(value) not in mine:
            yield IF_IP_NOT_LOCAL.finding(
                title=f"HCCL_IF_IP={value} is not an address of this node",
                evidence=[
                    f"HCCL_IF_IP={value} (environment)",
                    f"this node's addresses ({local.get('source')}): {', '.join(ours) or 'none'}",
                ],
                fix=[
                    f"export HCCL_IF_IP={ours[0] if ours else '<this node’s host IP>'}   # one of: {', '.join(ours) or 'none found'}"
                ],
            )
    ifname = variables.get("HCCL_SOCKET_IFNAME")
    interfaces = list(_l(local, "interfaces"))
    if isinstance(ifname, str) and ifname.strip() and local.get("available") and interfaces:
        ok, _chosen = _ifname_matches(ifname, interfaces)
        if not ok:
            candidates = [i for i in interfaces if i != "lo"]
            yield IFNAME_MISSING.finding(
                title=f"HCCL_SOCKET_IFNAME={ifname.strip()} matches no interface of this node",
                evidence=[
                    f"HCCL_SOCKET_IFNAME={ifname.strip()} (environment)",
                    f"interfaces here: {', '.join(interfaces)}",
                ],
                fix=[
                    f"export HCCL_SOCKET_IFNAME={candidates[0] if candidates else '<interface>'}   # interfaces here: {', '.join(candidates) or 'none'}"
                ],
            )


_INT = re.compile(r"^\s*\d+\s*$")


@rule
def hccl_timeouts(ctx: Any) -> Iterable[Finding]:
    """HCCL011-HCCL013: timeout variables (cases 48, K19)."""
    h = _section(ctx)
    variables = _d(h, "variables")
    multi, reasons = _multi_node(ctx)
    for name in ("HCCL_CONNECT_TIMEOUT", "HCCL_EXEC_TIMEOUT"):
        value = variables.get(name)
        if isinstance(value, str) and not _INT.match(value):
            yield TIMEOUT_INVALID.finding(
                title=f"{name}={value!r} is not a whole number of seconds",
                evidence=[f"{name}={value} (environment)"],
                fix=[
                    f"export {name}={'900' if name == 'HCCL_CONNECT_TIMEOUT' else '1800'}   # same value on every rank"
                ],
                subject=name,
            )
    exec_t = variables.get("HCCL_EXEC_TIMEOUT")
    if isinstance(exec_t, str) and _INT.match(exec_t) and int(exec_t) == 0:
        yield EXEC_ZERO.finding(
            title="HCCL_EXEC_TIMEOUT=0: not a reliable 'no timeout'",
            evidence=["HCCL_EXEC_TIMEOUT=0 (environment)"],
            fix=["export HCCL_EXEC_TIMEOUT=1800   # or larger; the same value on every rank"],
        )
    conn = variables.get("HCCL_CONNECT_TIMEOUT")
    procs = _job(ctx)["multi_process"]
    if not multi:
        # Several ranks on one node: only a value lowered below HCCL's own 120 s default is a
        # risk worth naming (ranks that load a model first still start far apart).
        if procs.get("value") and isinstance(conn, str) and _INT.match(conn) and int(conn) < 120:
            yield CONNECT_SHORT.finding(
                title=f"HCCL_CONNECT_TIMEOUT={conn} is below HCCL's default 120 s in a multi-process job; "
                "ranks that start far apart hit EI0006",
                evidence=[f"HCCL_CONNECT_TIMEOUT={conn}", "several ranks: " + "; ".join(procs.get("reasons") or [])],
                fix=["export HCCL_CONNECT_TIMEOUT=900   # the same value on every rank"],
            )
        return
    if conn is None or (_INT.match(conn) and int(conn) < 300):
        shown = (
            f"HCCL_CONNECT_TIMEOUT={conn}" if conn is not None else "HCCL_CONNECT_TIMEOUT unset (HCCL default 120 s)"
        )
        yield CONNECT_SHORT.finding(
            title=f"{shown} in a multi-node job; slow-starting ranks hit EI0006",
            evidence=[shown, "multi-node: " + "; ".join(reasons)],
            fix=["export HCCL_CONNECT_TIMEOUT=900   # the same value on every rank"],
        )


def _container_evidence(ctx: Any, h: Dict[str, Any]) -> str:
    """What shows this is a container, e.g. ``in a container (docker): /.dockerenv exists``.

    Source: ``facts["container"]["evidence"]`` and ``["runtime"]`` (probes/container.py);
    else ``facts["hccl"]["in_container"]["source"]`` (snapshots where the container probe did
    not run; older snapshots hold the bare words "container section" there, not shown)."""
    container = ctx.facts("container")
    runtime = container.get("runtime")
    head = f"in a container ({runtime})" if runtime else "in a container"
    shown = [str(e) for e in (container.get("evidence") or [])[:3]]
    if not shown:
        source = str(_d(h, "in_container").get("source") or "")
        if source and source != "container section":
            shown = [source]
    return f"{head}: {'; '.join(shown)}" if shown else head


@rule
def hccn_conf_present(ctx: Any) -> Iterable[Finding]:
    """HCCL014-HCCL015: /etc/hccn.conf for multi-node jobs (case 47)."""
    h = _section(ctx)
    conf = h.get("hccn_conf")
    if not isinstance(conf, dict):
        return
    multi, reasons = _multi_node(ctx)
    if not multi:
        return
    in_container = bool(_d(h, "in_container").get("value"))
    if not conf.get("present"):
        if in_container:
            fix = [
                DockerFlags(
                    mounts=("/etc/hccn.conf",),
                    read_only=True,
                    lead="Recreate the container with the host's file mounted, adding to docker run: ",
                ),
                "Kubernetes: a hostPath volume for /etc/hccn.conf (type File) mounted read-only at /etc/hccn.conf",
            ]
        else:
            fix = [
                "Configure each NPU NIC on the host: hccn_tool -i <N> -ip -s address <A> netmask <M> (writes /etc/hccn.conf)",
            ]
        yield HCCN_MISSING.finding(
            title="/etc/hccn.conf is missing "
            + ("in this container " if in_container else "")
            + "for a multi-node job",
            evidence=["multi-node: " + "; ".join(reasons), f"/etc/hccn.conf: {conf.get('error') or 'not found'}"]
            + ([_container_evidence(ctx, h)] if in_container else []),
            fix=fix,
            severity="error" if in_container else "warning",
        )
        return
    if conf.get("error"):
        yield HCCN_MISSING.finding(
            title=f"/etc/hccn.conf cannot be read: {conf.get('error')}",
            evidence=[f"/etc/hccn.conf: {conf.get('error')}"],
            fix=["chmod 644 /etc/hccn.conf   # on the host, or mount it readable"],
        )
        return
    if conf.get("elided"):
        return
    visible, source = visible_device_ids(ctx)
    have = {int(k) for k, v in _d(conf, "devices").items() if isinstance(v, dict) and v.get("address")}
    if visible:
        missing = sorted(visible - have)
        if missing:
            yield HCCN_DEVICE_MISSING.finding(
                title=f"/etc/hccn.conf has no address for device(s) {_ids(missing)} of this node",
                evidence=[
                    f"devices here ({source}): {_ids(sorted(visible))}",
                    f"address_N in /etc/hccn.conf: {_ids(sorted(have)) or 'none'}",
                ],
                fix=[f"hccn_tool -i {i} -ip -s address <A> netmask <M>   # on the host" for i in missing],
            )


@rule
def master_and_whitelist(ctx: Any) -> Iterable[Finding]:
    """HCCL016-HCCL018: MASTER_ADDR/MASTER_PORT and HCCL's whitelist."""
    h = _section(ctx)
    master = _d(h, "master")
    port_raw = master.get("port_raw")
    port = master.get("port")
    if port_raw is not None and (port is None or not 0 < int(port) < 65536):
        yield MASTER_BAD.finding(
            title=f"MASTER_PORT={port_raw} is not a TCP port (1-65535)",
            evidence=[f"MASTER_PORT={port_raw} (environment)"],
            fix=["export MASTER_PORT=29500   # any free port, the same on every rank"],
        )
    probe = master.get("probe")
    if isinstance(probe, dict) and probe.get("reachable") is False:
        addr = master.get("addr")
        yield MASTER_UNREACHABLE.finding(
            title=f"MASTER_ADDR:MASTER_PORT {addr}:{port} did not accept a TCP connection ({probe.get('error')})",
            evidence=[f"one TCP connect to {addr}:{port}: {probe.get('error')} after {probe.get('seconds')} s"],
            fix=[
                "Start rank 0 first (it listens on MASTER_PORT), then re-run: npudoctor check --probe-master",
                f"From this node: nc -vz {addr} {port}   # firewall or routing if it still fails",
            ],
        )
    variables = _d(h, "variables")
    wl = _d(h, "whitelist")
    if str(variables.get("HCCL_WHITELIST_DISABLE", "")).strip() == "0" and not wl.get("exists"):
        where = wl.get("file")
        yield WHITELIST.finding(
            title="HCCL_WHITELIST_DISABLE=0 but "
            + (f"HCCL_WHITELIST_FILE={where} does not exist" if where else "HCCL_WHITELIST_FILE is not set"),
            evidence=["HCCL_WHITELIST_DISABLE=0 (environment)", f"HCCL_WHITELIST_FILE={where or '(unset)'}"],
            fix=[
                Export("HCCL_WHITELIST_DISABLE", "1"),
                Export(
                    "HCCL_WHITELIST_FILE",
                    None,
                    unknown="its path",
                    lead="or write the whitelist (the peers' host IPs) to a file and ",
                ),
            ],
        )


@rule
def hccn_tool_state(ctx: Any) -> Iterable[Finding]:
    """HCCL019-HCCL020: hccn_tool's live view against /etc/hccn.conf."""
    h = _section(ctx)
    tool = _d(h, "hccn_tool")
    conf = _conf_addresses(h) or {}
    multi, _ = _multi_node(ctx)
    for dev, record in sorted(_d(tool, "devices").items()):
        if not isinstance(record, dict):
            continue
        ip = _d(record, "ip").get("ipaddr") if isinstance(record.get("ip"), dict) else None
        want = conf.get(str(dev))
        if ip and want and _norm_ip(ip) != _norm_ip(want):
            yield HCCN_TOOL_DIFFERS.finding(
                title=f"Device {dev}: hccn_tool reports {ip}, /etc/hccn.conf says address_{dev}={want}",
                evidence=[f"`hccn_tool -i {dev} -ip -g`: ipaddr:{ip}", f"/etc/hccn.conf: address_{dev}={want}"],
                fix=[f"hccn_tool -i {dev} -ip -s address {want} netmask <M>   # or correct /etc/hccn.conf"],
                subject=str(dev),
            )
        if record.get("link") == "DOWN":
            yield LINK_DOWN.finding(
                title=f"Device {dev}: NPU NIC link is DOWN",
                evidence=[f"`hccn_tool -i {dev} -link -g`: link status: DOWN"],
                fix=[f"hccn_tool -i {dev} -link -g   # after checking cable, optics and switch port"],
                severity="warning" if multi else "info",
                subject=str(dev),
            )
