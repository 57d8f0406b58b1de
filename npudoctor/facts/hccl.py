"""Typed view of the ``hccl`` section (shape documented in :mod:`npudoctor.probes.hccl`;
``/etc/hccn.conf`` from :func:`npudoctor.parsers.hccn.parse_hccn_conf`, the rank table from
:func:`npudoctor.parsers.ranktable.parse_ranktable`)."""

from __future__ import annotations

from typing import Dict, Optional, Tuple

from npudoctor.facts._typed import JSON
from npudoctor.facts._view import View, field


class InContainer(View):
    """Whether this runs in a container, and the marker that says so."""

    value: Optional[bool] = None
    source: Optional[str] = None


class HccnConf(View):
    """``/etc/hccn.conf``: the NPU NICs' settings (device ids are physical ids)."""

    path: Optional[str] = None
    present: bool = False
    error: Optional[str] = None
    devices: Dict[str, Dict[str, str]] = field(default_factory=dict)
    """device id → {"address", "netmask", "gateway", ...}"""
    other: Dict[str, str] = field(default_factory=dict)
    """lines without a _N suffix"""
    elided: bool = False
    unparsed: Tuple[str, ...] = ()
    duplicates: Tuple[Tuple[str, ...], ...] = ()
    """[key, device id] given twice"""
    lossy: Optional[bool] = None


class RankDevice(View):
    """One device entry of a rank table server."""

    invalid: bool = False
    """the entry is not an object"""
    device_id: Optional[int] = None
    device_id_raw: Optional[str] = None
    device_ip: Optional[str] = None
    rank_id: Optional[int] = None
    rank_id_raw: Optional[str] = None
    super_device_id: Optional[str] = None


class RankServer(View):
    """One ``server_list`` entry of a rank table."""

    index: Optional[int] = None
    invalid: bool = False
    """the entry is not an object"""
    server_id: Optional[str] = None
    host_ip: Optional[str] = None
    container_ip: Optional[str] = None
    host_nic_ip: Optional[str] = None
    hardware_type: Optional[str] = None
    devices: Tuple[RankDevice, ...] = ()
    has_device_list: Optional[bool] = None


class SuperPod(View):
    """A ``super_pod_list`` entry (rank table 1.2)."""

    super_pod_id: Optional[str] = None
    server_ids: Tuple[Optional[str], ...] = ()


class RankTable(View):
    """The file RANK_TABLE_FILE names: its structure (the layout is judged by the rules)."""

    path: Optional[str] = None
    variable: Optional[str] = None
    read_error: Optional[str] = None
    lossy: Optional[bool] = None
    ok: bool = False
    """a rank table could be read"""
    error: Optional[str] = None
    """why it could not be parsed"""
    truncated: bool = False
    strict_json: bool = False
    tolerated: Tuple[str, ...] = ()
    '"comments" | "elisions" | "trailing commas"'
    version: Optional[str] = None
    status: Optional[str] = None
    server_count: Optional[int] = None
    server_count_raw: JSON = None
    """the declared value as written"""
    servers: Tuple[RankServer, ...] = ()
    server_list_missing: bool = False
    super_pods: Tuple[SuperPod, ...] = ()
    rank_count: int = 0


class LocalAddress(View):
    """An address of this node."""

    interface: Optional[str] = None
    family: Optional[str] = None
    '"ipv4" | "ipv6"'
    address: Optional[str] = None


class Local(View):
    """This node's network addresses, read only when a variable names an address or
    interface to compare with them (``probes/hccl.py``'s ``ADDRESS_VARS``)."""

    available: bool = False
    reason: Optional[str] = None
    """Why they are not available: not read (no such variable), or not readable"""
    interfaces: Tuple[str, ...] = ()
    addresses: Tuple[LocalAddress, ...] = ()
    source: Optional[str] = None


class HccnIp(View):
    """``hccn_tool -i N -ip -g``."""

    ipaddr: Optional[str] = None
    netmask: Optional[str] = None


class HccnToolDevice(View):
    """What ``hccn_tool`` said about one device."""

    ip: Optional[HccnIp] = None
    link: Optional[str] = None
    """"UP" | "DOWN" | None"""
    commands: Tuple[str, ...] = ()
    """how each call ended"""


class HccnTool(View):
    """``hccn_tool`` answers for the devices of hccn.conf."""

    path: Optional[str] = None
    error: Optional[str] = None
    devices: Dict[str, HccnToolDevice] = field(default_factory=dict)


class MasterProbe(View):
    """One bounded TCP connect to MASTER_ADDR:MASTER_PORT (``--probe-master``)."""

    reachable: Optional[bool] = None
    """None: the probe record does not say"""
    error: Optional[str] = None
    seconds: Optional[float] = None
    timeout: Optional[float] = None


class Master(View):
    """MASTER_ADDR / MASTER_PORT and the connect probe."""

    addr: Optional[str] = None
    port: Optional[int] = None
    port_raw: Optional[str] = None
    probe: Optional[MasterProbe] = None
    probe_skipped: Optional[str] = None


class Whitelist(View):
    """HCCL_WHITELIST_FILE and whether it exists."""

    file: Optional[str] = None
    exists: Optional[bool] = None


class HcclFacts(View):
    """HCCL variables, hccn.conf, the rank table, this node's addresses, hccn_tool, the master."""

    variables: Dict[str, str] = field(default_factory=dict)
    """HCCL_*, launcher and visibility variables that are set"""
    in_container: InContainer = field(default_factory=InContainer)
    dev_nodes: Tuple[int, ...] = ()
    """N of the /dev/davinciN nodes present"""
    hccn_conf: Optional[HccnConf] = None
    """None: not recorded (an older snapshot)"""
    rank_table: Optional[RankTable] = None
    """None when RANK_TABLE_FILE is unset"""
    local: Local = field(default_factory=Local)
    hccn_tool: HccnTool = field(default_factory=HccnTool)
    master: Master = field(default_factory=Master)
    whitelist: Whitelist = field(default_factory=Whitelist)
