"""``/etc/hccn.conf`` and ``hccn_tool`` outputs: the NPU NIC (RoCE) configuration of a node.

Sources (captures in ``tests/fixtures/``):

* ``hccn.conf_910B1_8nic_elided-by-author_anonymized.txt`` -- ``/etc/hccn.conf`` holds one
  ``<key>_<device id>=<value>`` line per setting: ``address_N``, ``netmask_N``, ``netdetect_N``,
  ``gateway_N``, ``send_arp_status_N`` (others exist: ``tls_enable_N``, ``arp_send_num_N``,
  ...).  ``N`` is the physical device id.  The rank table's ``device_ip`` of device ``N`` must be
  ``address_N`` (MindSpore rank-table doc).
* ``hccn_tool_ip_route_910B1_anonymized.txt`` -- ``hccn_tool -i N -ip -g`` prints
  ``ipaddr:<ip>`` and ``netmask:<mask>`` (no space after the colon); ``-route -g`` prints a
  ``Routing table:`` in ``route -n`` columns.
* ``hccn_tool_misc_status_hwstats_ping_910B1.txt`` -- ``-status -g`` (``Netdev status:`` then
  ethtool-like ``Key: value`` lines), ``-hw_stats -g`` (``[devid N] key: value``), ``-ping -g
  address IP`` (``N packets transmitted, M received, X% packet loss``).
* ``hccn_tool -i N -link -g`` prints ``link status: UP`` (or ``DOWN``) -- documented, not captured.

All functions are pure and never raise on odd text.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from npudoctor import lazyre

_CONF_LINE = lazyre.pattern(r"^\s*([A-Za-z][A-Za-z0-9_]*?)_((?<![0-9])[0-9]{1,18}(?![0-9]))\s*=\s*(.*?)\s*$")
_PLAIN_LINE = lazyre.pattern(r"^\s*([A-Za-z][A-Za-z0-9_.-]*)\s*=\s*(.*?)\s*$")


def parse_hccn_conf(text: str) -> Dict[str, Any]:
    """Parse ``/etc/hccn.conf``.

    Returns ``{"devices": {"0": {"address": "198.51.137.205", "netmask": ..., ...}, ...},
    "other": {key: value} (lines without a ``_N`` suffix), "elided": bool (a ``...`` line was
    present, as in pasted excerpts), "unparsed": [lines that are neither], "duplicates":
    [["address", "3"], ...] (a key given twice for one device; the last one wins, as when the
    file is sourced)}``.  Device ids are strings of the physical device id.
    """
    devices: Dict[str, Dict[str, str]] = {}
    other: Dict[str, str] = {}
    unparsed: List[str] = []
    duplicates: List[List[str]] = []
    elided = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line in ("...", "…", "......"):
            elided = True
            continue
        m = _CONF_LINE.match(line)
        if m:
            key, dev, value = m.group(1), str(int(m.group(2))), m.group(3)
            entry = devices.setdefault(dev, {})
            if key in entry:
                duplicates.append([key, dev])
            entry[key] = value
            continue
        m = _PLAIN_LINE.match(line)
        if m:
            other[m.group(1)] = m.group(2)
            continue
        unparsed.append(raw[:200])
    ordered = {k: devices[k] for k in sorted(devices, key=int)}
    return {"devices": ordered, "other": other, "elided": elided, "unparsed": unparsed[:50], "duplicates": duplicates}


def parse_ip(text: str) -> Dict[str, Optional[str]]:
    """``hccn_tool -i N -ip -g`` → ``{"ipaddr": "198.51.100.213", "netmask": "255.255.0.0"}``
    (``None`` for what is absent)."""
    out: Dict[str, Optional[str]] = {"ipaddr": None, "netmask": None}
    for line in text.splitlines():
        m = re.match(r"^\s*(ipaddr|netmask)\s*:\s*(\S+)\s*$", line, re.I)
        if m:
            out[m.group(1).lower()] = m.group(2)
    return out


def parse_link(text: str) -> Optional[str]:
    """``hccn_tool -i N -link -g`` → ``"UP"`` / ``"DOWN"`` / ``None``."""
    m = re.search(r"link\s+status\s*:\s*(\w+)", text, re.I)
    return m.group(1).upper() if m else None


def parse_route(text: str) -> List[Dict[str, str]]:
    """``hccn_tool -i N -route -g`` → rows ``{"destination", "gateway", "genmask", "flags",
    "metric", "ref", "use", "iface"}`` of the routing table."""
    rows: List[Dict[str, str]] = []
    header: Optional[List[str]] = None
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0].lower() == "destination":
            header = [p.lower() for p in parts]
            continue
        if header and len(parts) == len(header):
            rows.append(dict(zip(header, parts)))
    return rows


def parse_status(text: str) -> Dict[str, Any]:
    """``hccn_tool -i N -status -g`` → ``{"interface": "eth3", "speed_mbps": 200000,
    "link_detected": bool|None, "fields": {key: value}}`` (ethtool-style lines)."""
    fields: Dict[str, str] = {}
    iface = None
    m = re.search(r"Settings for\s+(\S+?):", text)
    if m:
        iface = m.group(1)
    for line in text.splitlines():
        if "Settings for" in line:
            continue
        m = re.match(r"^\s*([A-Za-z][A-Za-z -]*?)\s*:\s*(.*?)\s*$", line)
        if m:
            fields[m.group(1)] = m.group(2)
    speed = None
    m = re.match(r"((?<![0-9])[0-9]{1,18}(?![0-9]))\s*Mb/s", fields.get("Speed", ""))
    if m:
        speed = int(m.group(1))
    link = fields.get("Link detected")
    return {
        "interface": iface,
        "speed_mbps": speed,
        "link_detected": None if link is None else link.strip().lower() == "yes",
        "fields": fields,
    }


def parse_hw_stats(text: str) -> Dict[str, Any]:
    """``hccn_tool -i N -hw_stats -g`` → ``{"device": 3, "counters": {"pd_alloc": 1, ...}}``."""
    counters: Dict[str, int] = {}
    device = None
    for line in text.splitlines():
        m = re.match(
            r"^\s*\[devid\s+((?<![0-9])[0-9]{1,18}(?![0-9]))\]\s*([A-Za-z0-9_]+)\s*:\s*(-?(?<![0-9])[0-9]{1,18}(?![0-9]))\s*$",
            line,
        )
        if m:
            device = int(m.group(1))
            counters[m.group(2)] = int(m.group(3))
    return {"device": device, "counters": counters}


def parse_ping(text: str) -> Dict[str, Any]:
    """``hccn_tool -i N -ping -g address IP`` → ``{"device", "target", "transmitted",
    "received", "loss_percent", "times_ms": [...]}`` (``None`` where absent)."""
    out: Dict[str, Any] = {
        "device": None,
        "target": None,
        "transmitted": None,
        "received": None,
        "loss_percent": None,
        "times_ms": [],
    }
    # Numbers are bounded and must start a digit run: a 5,000-digit run costs one pass,
    # not a backtracking search from each of its digits.
    m = re.search(r"device\s+([0-9]{1,9})\s+PING\s+(\S+)", text)
    if m:
        out["device"], out["target"] = int(m.group(1)), m.group(2)
    m = re.search(
        r"(?<![0-9])([0-9]{1,18})\s+packets transmitted,\s*([0-9]{1,18})\s+received,\s*([0-9.]{1,24})%\s*packet loss",
        text,
    )
    if m:
        out["transmitted"], out["received"], out["loss_percent"] = int(m.group(1)), int(m.group(2)), float(m.group(3))
    out["times_ms"] = [float(t) for t in re.findall(r"time=([0-9.]{1,24})\s*ms", text)]
    return out


def split_transcript(text: str) -> List[Tuple[List[str], str]]:
    """Split a pasted shell transcript (``$ hccn_tool -i 3 -ip -g`` lines followed by their
    output) into ``[(argv, output), ...]``.  Prompts with extra spaces (``$  hccn_tool``) are
    accepted; text before the first prompt is dropped."""
    blocks: List[Tuple[List[str], str]] = []
    argv: Optional[List[str]] = None
    lines: List[str] = []
    for line in text.splitlines():
        m = re.match(r"^\s*[$#]\s+(\S.*)$", line)
        if m:
            if argv is not None:
                blocks.append((argv, "\n".join(lines).strip("\n") + "\n"))
            argv = m.group(1).split()
            lines = []
        elif argv is not None:
            lines.append(line)
    if argv is not None:
        blocks.append((argv, "\n".join(lines).strip("\n") + "\n"))
    return blocks
