"""HCCL and multi-node rules (root-cause kind K19).

Facts read through the typed views: ``ctx.view.hccl`` (npudoctor/probes/hccl.py) and the
device list of ``ctx.view.devices`` (``chips``; probes/devices.py) to know which physical
device ids this node has.  A missing or malformed section reads as its defaults (an older
snapshot, ``--only``).
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Set, Tuple, Union

from npudoctor import lazyre
from npudoctor.facts.hccl import HcclFacts, HccnConf, RankServer
from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.parsers.numbers import to_int
from npudoctor.parsers.ranktable import is_ip
from npudoctor.remedies import Command, DockerFlags, Export, Pipeline, Prose, Remedy
from npudoctor.rules import rule
from npudoctor.rules._hccl_job import job_shape
from npudoctor.rules._ranktable import layout_problems

if TYPE_CHECKING:
    from npudoctor.context import RuleContext

READS = ("container", "devices", "hccl")
ONLY_WITH = ("hccl",)

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
def _job(ctx: RuleContext) -> Dict[str, Dict[str, Any]]:
    """Multi-node / multi-process, inferred now from the facts (rules/_hccl_job.py)."""
    return job_shape(ctx.view.hccl, ctx.view.devices)


def _multi_node(ctx: RuleContext) -> Tuple[bool, List[str]]:
    m = _job(ctx)["multi_node"]
    return m["value"] is True, list(m["reasons"])


def _local_addresses(h: HcclFacts) -> Optional[Set[str]]:
    """This node's addresses, or ``None`` when unknown (under --root, replayed without them)."""
    if not h.local.available:
        return None
    return {_norm_ip(a.address) for a in h.local.addresses if a.address}


def _norm_ip(value: str) -> str:
    try:
        return str(ipaddress.ip_address(value.strip()))
    except ValueError:
        return value.strip()


def visible_device_ids(ctx: RuleContext) -> Tuple[Optional[Set[int]], str]:
    """Physical device ids present on this node and where that came from: the ``devices``
    section's chips (npu-smi: ``phy_id`` on A3, else ``npu_id``, which equals the physical
    id on one-chip-per-card 910-class boards) when it ran, else the /dev/davinciN nodes
    recorded by the hccl probe.  ``(None, reason)`` when neither tells."""
    chips = ctx.view.devices.chips
    if chips:
        ids: Set[int] = set()
        for chip in chips:
            value = chip.phy_id if chip.phy_id is not None else chip.npu_id
            if value is not None:
                ids.add(value)
        if ids:
            return ids, "npu-smi (devices section)"
    nodes = ctx.view.hccl.dev_nodes
    if nodes:
        return set(nodes), "/dev/davinciN nodes"
    return None, "no device list"


def _conf_addresses(h: HcclFacts) -> Optional[Dict[str, str]]:
    conf = h.hccn_conf
    if conf is None or (not conf.devices and not conf.present):
        return None
    return {k: v["address"] for k, v in conf.devices.items() if v.get("address")}


def server_addresses(server: RankServer) -> List[str]:
    """The addresses a server entry names for its host: ``server_id`` (when it is an IP,
    format 1.0), ``host_ip`` and ``container_ip`` (1.2 and the A2 form of 1.0)."""
    out: List[str] = []
    for value in (server.server_id, server.host_ip, server.container_ip):
        if value is not None and is_ip(value) and value not in out:
            out.append(value)
    return out


def local_server(h: HcclFacts) -> Tuple[Optional[RankServer], str]:
    """This node's entry in the rank table and how it was recognised: by a local address
    (live), by device IPs equal to this node's hccn.conf, or as the only server."""
    servers = [s for s in h.rank_table.servers if not s.invalid] if h.rank_table is not None else []
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
            if {d.device_ip for d in s.devices} & conf_ips:
                return s, "device IPs of /etc/hccn.conf"
    if len(servers) == 1:
        return servers[0], "the only server"
    return None, "not recognised"


def _label(server: RankServer) -> str:
    return str(server.server_id or server.host_ip or f"server_list[{server.index}]")


def _rt_path(h: HcclFacts) -> str:
    return str((h.rank_table.path if h.rank_table is not None else None) or "$RANK_TABLE_FILE")


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
def rank_table_layout(ctx: RuleContext) -> Iterable[Finding]:
    """HCCL001-HCCL005: the rank table as a file (readable, plain JSON, consistent)."""
    h = ctx.view.hccl
    table = h.rank_table
    if table is None:
        return
    path = _rt_path(h)
    problems = layout_problems(table)  # judged now, never taken from the snapshot
    check = Pipeline((("python3", "-m", "json.tool", path),), stdout="/dev/null", note="silent when it is valid JSON")
    for p in problems:
        kind, msg = p.get("kind"), str(p.get("message", ""))
        fix: List[Union[Remedy, str]]
        if kind == "unreadable":
            if table.read_error:
                title = f"RANK_TABLE_FILE={path} cannot be read: {table.read_error}"
                fix = [
                    Command(("ls", "-l", path)),
                    Export("RANK_TABLE_FILE", None, unknown="the absolute path of the rank table on this node"),
                ]
            elif table.truncated:
                title = f"The rank table {path} is truncated: {msg}"
                fix = [check, _RT_FIX]
            else:
                title = f"The rank table {path} is not valid JSON: {msg}"
                fix = [check, _RT_FIX]
            yield RT_UNREADABLE.finding(title=title, evidence=[f"RANK_TABLE_FILE={path}", msg], fix=fix)
        elif kind == "not-strict-json":
            yield RT_NOT_PLAIN.finding(
                title=f"The rank table {path} is not plain JSON ({', '.join(table.tolerated)})",
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
def rank_table_this_node(ctx: RuleContext) -> Iterable[Finding]:
    """HCCL006-HCCL008: this node's entry of the rank table against this node."""
    h = ctx.view.hccl
    table = h.rank_table
    if table is None or not table.ok:
        return
    path = _rt_path(h)
    mine = _local_addresses(h)
    server, how = local_server(h)
    if mine is not None and how != "a local address":
        named = sorted({a for s in table.servers if not s.invalid for a in server_addresses(s)})
        ours = sorted(a for a in mine if not _is_loopback(a))
        yield RT_SERVER_NOT_LOCAL.finding(
            title=f"No server of {path} has an address of this node",
            evidence=[
                f"addresses named by the rank table: {', '.join(named) or 'none (server_id is not an IP)'}",
                f"this node's addresses ({h.local.source}): {', '.join(ours) or 'none'}",
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
    devices = [d for d in server.devices if not d.invalid]
    device_ids = [d.device_id for d in devices if d.device_id is not None]
    visible, source = visible_device_ids(ctx)
    if visible is not None:
        missing = sorted(set(device_ids) - visible)
        if missing:
            yield RT_DEV_NOT_VISIBLE.finding(
                title=f"{path} gives this node (server {label}) device ids {_ids(missing)}, not visible here",
                evidence=[
                    f"server {label} (recognised by {how}) lists device ids {_ids(sorted(device_ids))}",
                    f"devices visible here ({source}): {_ids(sorted(visible)) or 'none'}",
                ],
                fix=[
                    f"Pass the devices into the container: {' '.join(f'--device /dev/davinci{i}' for i in missing)}",
                    f"or list only the visible devices ({_ids(sorted(visible))}) for this node in {path}",
                ],
            )
    conf = _conf_addresses(h)
    if conf is None:
        return
    for d in devices:
        dev_id, ip = d.device_id, d.device_ip
        if dev_id is None or not ip:
            continue
        want = conf.get(str(dev_id))
        if want is None:
            if h.hccn_conf is not None and h.hccn_conf.elided:
                continue
            yield RT_IP_MISMATCH.finding(
                title=f"{path}: device {dev_id} has device_ip {ip}, but /etc/hccn.conf has no address_{dev_id}",
                evidence=[
                    f"server {label} device {dev_id} device_ip={ip} ({path})",
                    f"/etc/hccn.conf addresses: {', '.join(f'address_{k}={v}' for k, v in conf.items()) or 'none'}",
                ],
                fix=[
                    Command(
                        ("hccn_tool", "-i", str(dev_id), "-ip", "-g"),
                        note=f"on the host: the NIC address of device {dev_id}",
                    ),
                    f"If {ip} is the intended address, set it on the host with hccn_tool's -ip -s for device "
                    f"{dev_id} (address {ip} and the netmask of that network); it writes /etc/hccn.conf",
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
                    Command(("hccn_tool", "-i", str(dev_id), "-ip", "-g"), note="confirm the live address on the host"),
                ],
                subject=str(dev_id),
            )


def _set_address(dev: object, address: str, conf: Optional[HccnConf], live_mask: Optional[str]) -> Remedy:
    """``hccn_tool -i DEV -ip -s address A netmask M`` with the netmask /etc/hccn.conf (else
    hccn_tool) gives for the device; prose when neither gives one."""
    mask = (conf.devices.get(str(dev), {}).get("netmask") if conf is not None else None) or live_mask
    if not mask:
        return Prose(
            f"Set address {address} on the NPU NIC of device {dev} with hccn_tool's -ip -s and the netmask of "
            "that network, or correct /etc/hccn.conf"
        )
    return Command(
        ("hccn_tool", "-i", str(dev), "-ip", "-s", "address", address, "netmask", mask),
        note="or correct /etc/hccn.conf",
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
def hccl_network_variables(ctx: RuleContext) -> Iterable[Finding]:
    """HCCL009-HCCL010: HCCL_IF_IP and HCCL_SOCKET_IFNAME against this node."""
    h = ctx.view.hccl
    variables = h.variables
    local = h.local
    mine = _local_addresses(h)
    ours = sorted(a for a in (mine or ()) if not _is_loopback(a) and ":" not in a)
    if_ip = variables.get("HCCL_IF_IP")
    if if_ip is not None and if_ip.strip():
        value = if_ip.strip()
        if not is_ip(value):
            yield IF_IP_NOT_LOCAL.finding(
                title=f"HCCL_IF_IP={value} is not an IP address",
                evidence=[f"HCCL_IF_IP={value} (environment)"],
                fix=[Export("HCCL_IF_IP", ours[0] if ours else None, unknown="this node's host IP")],
            )
        elif mine is not None and _norm_ip(value) not in mine:
            yield IF_IP_NOT_LOCAL.finding(
                title=f"HCCL_IF_IP={value} is not an address of this node",
                evidence=[
                    f"HCCL_IF_IP={value} (environment)",
                    f"this node's addresses ({local.source}): {', '.join(ours) or 'none'}",
                ],
                fix=[
                    Export(
                        "HCCL_IF_IP",
                        ours[0] if ours else None,
                        unknown="this node's host IP",
                        note=f"one of: {', '.join(ours) or 'none found'}",
                    )
                ],
            )
    ifname = variables.get("HCCL_SOCKET_IFNAME")
    interfaces = list(local.interfaces)
    if ifname is not None and ifname.strip() and local.available and interfaces:
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
                    Export(
                        "HCCL_SOCKET_IFNAME",
                        candidates[0] if candidates else None,
                        unknown="the interface HCCL should use",
                        note=f"interfaces here: {', '.join(candidates) or 'none'}",
                    )
                ],
            )


_INT = lazyre.pattern(r"^\s*[0-9]{1,18}\s*$")
#: HCCL_EXEC_TIMEOUT as HCCL reads it: at most two decimals (alg_env_config.cc
#: ParseExecTimeout); whether decimals are honoured on this chip and mode is ENV009's.
_EXEC = lazyre.pattern(r"^\s*[0-9]{1,18}(\.[0-9]{1,2})?\s*$")


@rule
def hccl_timeouts(ctx: RuleContext) -> Iterable[Finding]:
    """HCCL011-HCCL013: timeout variables (kind K19)."""
    variables = ctx.view.hccl.variables
    multi, reasons = _multi_node(ctx)
    for name, form in (("HCCL_CONNECT_TIMEOUT", _INT), ("HCCL_EXEC_TIMEOUT", _EXEC)):
        value = variables.get(name)
        if value is not None and not form.match(value):
            yield TIMEOUT_INVALID.finding(
                title=f"{name}={value!r} is not "
                + ("a whole number of seconds" if form is _INT else "a number of seconds with at most 2 decimals"),
                evidence=[f"{name}={value} (environment)"],
                fix=[
                    Export(name, "900" if name == "HCCL_CONNECT_TIMEOUT" else "1800", note="same value on every rank")
                ],
                subject=name,
            )
    exec_t = variables.get("HCCL_EXEC_TIMEOUT")
    if exec_t is not None and _INT.match(exec_t) and int(exec_t) == 0:
        yield EXEC_ZERO.finding(
            title="HCCL_EXEC_TIMEOUT=0: not a reliable 'no timeout'",
            evidence=["HCCL_EXEC_TIMEOUT=0 (environment)"],
            fix=[Export("HCCL_EXEC_TIMEOUT", "1800", note="or larger; the same value on every rank")],
        )
    conn = variables.get("HCCL_CONNECT_TIMEOUT")
    procs = _job(ctx)["multi_process"]
    if not multi:
        # Several ranks on one node: only a value lowered below HCCL's own 120 s default is a
        # risk worth naming (ranks that load a model first still start far apart).
        if procs.get("value") and conn is not None and _INT.match(conn) and int(conn) < 120:
            yield CONNECT_SHORT.finding(
                title=f"HCCL_CONNECT_TIMEOUT={conn} is below HCCL's default 120 s in a multi-process job; "
                "ranks that start far apart hit EI0006",
                evidence=[f"HCCL_CONNECT_TIMEOUT={conn}", "several ranks: " + "; ".join(procs.get("reasons") or [])],
                fix=[Export("HCCL_CONNECT_TIMEOUT", "900", note="the same value on every rank")],
            )
        return
    if conn is None or (_INT.match(conn) and int(conn) < 300):
        shown = (
            f"HCCL_CONNECT_TIMEOUT={conn}" if conn is not None else "HCCL_CONNECT_TIMEOUT unset (HCCL default 120 s)"
        )
        yield CONNECT_SHORT.finding(
            title=f"{shown} in a multi-node job; slow-starting ranks hit EI0006",
            evidence=[shown, "multi-node: " + "; ".join(reasons)],
            fix=[Export("HCCL_CONNECT_TIMEOUT", "900", note="the same value on every rank")],
        )


def _container_evidence(ctx: RuleContext, h: HcclFacts) -> str:
    """What shows this is a container, e.g. ``in a container (docker): /.dockerenv exists``.

    Source: ``facts["container"]["evidence"]`` and ``["runtime"]`` (probes/container.py);
    else ``facts["hccl"]["in_container"]["source"]`` (snapshots where the container probe did
    not run; older snapshots hold the bare words "container section" there, not shown)."""
    container = ctx.view.container
    runtime = container.runtime
    head = f"in a container ({runtime})" if runtime else "in a container"
    shown = list(container.evidence[:3])
    if not shown:
        source = h.in_container.source or ""
        if source and source != "container section":
            shown = [source]
    return f"{head}: {'; '.join(shown)}" if shown else head


@rule
def hccn_conf_present(ctx: RuleContext) -> Iterable[Finding]:
    """HCCL014-HCCL015: /etc/hccn.conf for multi-node jobs."""
    h = ctx.view.hccl
    conf = h.hccn_conf
    if conf is None:
        return
    multi, reasons = _multi_node(ctx)
    if not multi:
        return
    in_container = bool(h.in_container.value)
    if not conf.present:
        fix: List[Union[Remedy, str]]
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
                "Configure each NPU NIC on the host: hccn_tool's -ip -s with the device id, its address and netmask "
                "(it writes /etc/hccn.conf)",
            ]
        yield HCCN_MISSING.finding(
            title="/etc/hccn.conf is missing "
            + ("in this container " if in_container else "")
            + "for a multi-node job",
            evidence=["multi-node: " + "; ".join(reasons), f"/etc/hccn.conf: {conf.error or 'not found'}"]
            + ([_container_evidence(ctx, h)] if in_container else []),
            fix=fix,
            severity="error" if in_container else "warning",
        )
        return
    if conf.error:
        yield HCCN_MISSING.finding(
            title=f"/etc/hccn.conf cannot be read: {conf.error}",
            evidence=[f"/etc/hccn.conf: {conf.error}"],
            fix=[Command(("chmod", "644", "/etc/hccn.conf"), note="on the host, or mount it readable")],
        )
        return
    if conf.elided:
        return
    visible, source = visible_device_ids(ctx)
    have = {int(k) for k, v in conf.devices.items() if to_int(k) is not None and v.get("address")}
    if visible:
        missing = sorted(visible - have)
        if missing:
            yield HCCN_DEVICE_MISSING.finding(
                title=f"/etc/hccn.conf has no address for device(s) {_ids(missing)} of this node",
                evidence=[
                    f"devices here ({source}): {_ids(sorted(visible))}",
                    f"address_N in /etc/hccn.conf: {_ids(sorted(have)) or 'none'}",
                ],
                fix=[
                    f"On the host, give the NPU NIC of device {i} its address and netmask with hccn_tool's -ip -s "
                    "(it writes /etc/hccn.conf)"
                    for i in missing
                ],
            )


@rule
def master_and_whitelist(ctx: RuleContext) -> Iterable[Finding]:
    """HCCL016-HCCL018: MASTER_ADDR/MASTER_PORT and HCCL's whitelist."""
    h = ctx.view.hccl
    master = h.master
    port_raw = master.port_raw
    port = master.port
    if port_raw is not None and (port is None or not 0 < port < 65536):
        yield MASTER_BAD.finding(
            title=f"MASTER_PORT={port_raw} is not a TCP port (1-65535)",
            evidence=[f"MASTER_PORT={port_raw} (environment)"],
            fix=["export MASTER_PORT=29500   # any free port, the same on every rank"],
        )
    probe = master.probe
    if probe is not None and probe.reachable is False:
        addr = master.addr
        yield MASTER_UNREACHABLE.finding(
            title=f"MASTER_ADDR:MASTER_PORT {addr}:{port} did not accept a TCP connection ({probe.error})",
            evidence=[f"one TCP connect to {addr}:{port}: {probe.error} after {probe.seconds} s"],
            fix=[
                "Start rank 0 first (it listens on MASTER_PORT), then re-run: npudoctor check --probe-master",
                f"From this node: nc -vz {addr} {port}   # firewall or routing if it still fails",
            ],
        )
    wl = h.whitelist
    if h.variables.get("HCCL_WHITELIST_DISABLE", "").strip() == "0" and not wl.exists:
        where = wl.file
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
def hccn_tool_state(ctx: RuleContext) -> Iterable[Finding]:
    """HCCL019-HCCL020: hccn_tool's live view against /etc/hccn.conf."""
    h = ctx.view.hccl
    conf = _conf_addresses(h) or {}
    multi, _ = _multi_node(ctx)
    for dev, record in sorted(h.hccn_tool.devices.items()):
        ip = record.ip.ipaddr if record.ip is not None else None
        want = conf.get(str(dev))
        if ip and want and _norm_ip(ip) != _norm_ip(want):
            yield HCCN_TOOL_DIFFERS.finding(
                title=f"Device {dev}: hccn_tool reports {ip}, /etc/hccn.conf says address_{dev}={want}",
                evidence=[f"`hccn_tool -i {dev} -ip -g`: ipaddr:{ip}", f"/etc/hccn.conf: address_{dev}={want}"],
                fix=[_set_address(dev, want, h.hccn_conf, record.ip.netmask if record.ip is not None else None)],
                subject=str(dev),
            )
        if record.link == "DOWN":
            yield LINK_DOWN.finding(
                title=f"Device {dev}: NPU NIC link is DOWN",
                evidence=[f"`hccn_tool -i {dev} -link -g`: link status: DOWN"],
                fix=[
                    Command(
                        ("hccn_tool", "-i", str(dev), "-link", "-g"),
                        note="after checking cable, optics and switch port",
                    )
                ],
                severity="warning" if multi else "info",
                subject=str(dev),
            )
