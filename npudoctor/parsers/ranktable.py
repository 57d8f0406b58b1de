"""Rank tables (``RANK_TABLE_FILE``, "hccl.json"): parse formats 1.0 and 1.2 into plain
structure.  Judging the layout (duplicate ranks, gaps, bad device IPs, ...) is the rules'
job: :func:`npudoctor.rules._ranktable.layout_problems`, behind HCCL001-HCCL005.

Sources of the format (the captures are in ``tests/fixtures/``):

* **1.0** -- MindSpore distributed-training docs (``ranktable_v1.0_1server_8p_mindspore-doc.json``)
  and the MindCluster "hccl.json File Description" (A2 form with ``container_ip`` and
  ``hardware_type``)::

      {"version": "1.0", "server_count": "1", "status": "completed",
       "server_list": [{"server_id": "10.0.0.1", "host_nic_ip": "reserve",
                        "device": [{"device_id": "0", "device_ip": "192.1.27.6", "rank_id": "0"}, ...]}]}

* **1.2** -- the A3 SuperPoD form written by Ascend Operator (same doc): each device also has
  ``super_device_id``; each server has ``host_ip``, ``container_ip``, ``hardware_type``; and a
  top-level ``super_pod_list``.

All values are strings in the official examples (``"rank_id": "0"``); integers are accepted too.
Per the MindSpore doc, ``device_id`` is the physical device id and ``device_ip`` is the
``address_<device_id>`` value of that server's ``/etc/hccn.conf``.  ``server_id`` is the host IP in
1.0; in 1.2 it is an opaque, globally unique identifier and the host address is ``host_ip``.

HCCL reads the file as plain JSON: comments are not allowed.  :func:`parse_ranktable` still reads
JSON with ``//`` and ``/* */`` comments and ``...`` elision lines (as in the documentation
sample), and says so in ``tolerated`` so that a rule can flag it.

Everything here is pure: text in, plain data out; nothing raises on bad input.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from npudoctor.parsers import jsontext

if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple

#: Rank-table format versions whose layout is known: 1.0 (server_list) and 1.2 (server_list
#: with super_pod_list), as the HCCL documentation describes them.
FORMAT_VERSIONS = ("1.0", "1.2")


def _strip_comments(text: str) -> Tuple[str, List[str]]:
    """Remove ``//`` and ``/* */`` comments outside JSON strings, lines that hold only
    ``...`` (an author's elision), and trailing commas.  Returns ``(text, what_was_removed)``."""
    out: List[str] = []
    removed = set()
    i, n = 0, len(text)
    in_str = False
    while i < n:
        ch = text[i]
        if in_str:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if ch == '"':
                in_str = False
            i += 1
            continue
        if ch == '"':
            in_str = True
            out.append(ch)
            i += 1
            continue
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            removed.add("comments")
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            removed.add("comments")
            continue
        out.append(ch)
        i += 1
    cleaned = "".join(out)
    lines = []
    for line in cleaned.splitlines():
        if line.strip() in ("...", "…", "......"):
            removed.add("elisions")
            continue
        lines.append(line)
    cleaned = "\n".join(lines)
    # An elided item leaves "}, \n {" intact, but a removed tail may leave ",]" or ",}".
    fixed = re.sub(r",(\s*[\]}])", r"\1", cleaned)
    if fixed != cleaned:
        removed.add("trailing commas")
    return fixed, sorted(removed)


def _json_error(text: str, exc: json.JSONDecodeError) -> Tuple[str, bool]:
    """A message for a JSON error, and whether it looks like a truncated file (the parser
    ran out of input)."""
    truncated = jsontext.ends_early(exc, text)
    where = f"line {exc.lineno} column {exc.colno}"
    if truncated:
        return f"the JSON ends early at {where} (truncated file?): {exc.msg}", True
    return f"not valid JSON at {where}: {exc.msg}", False


def _as_int(value: Any) -> Optional[int]:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*(?<![0-9])[0-9]{1,18}(?![0-9])\s*", value):
        return int(value)
    return None


def _text(value: Any) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value).strip()
    return None


def is_ipv4(value: Optional[str]) -> bool:
    """True for a dotted-quad IPv4 address (``"192.1.27.6"``)."""
    if not value:
        return False
    import ipaddress  # here, not on every start: only a rank table's addresses need it

    try:
        return isinstance(ipaddress.ip_address(value), ipaddress.IPv4Address)
    except ValueError:
        return False


def is_ip(value: Optional[str]) -> bool:
    """True for an IPv4 or IPv6 address."""
    if not value:
        return False
    import ipaddress

    try:
        ipaddress.ip_address(value)
        return True
    except ValueError:
        return False


def parse_ranktable(text: str) -> Dict[str, Any]:
    """Parse a rank table.

    Returns a dict::

        ok            bool: a rank table could be read (the layout may still be faulty)
        error         str | None: why it could not be read (invalid JSON, not an object)
        truncated     bool: the JSON ends early
        strict_json   bool: the text is plain JSON (HCCL's requirement)
        tolerated     ["comments", "elisions", "trailing commas"] removed to read it
        version       "1.0" | "1.2" | other string | None
        status        "completed" | ... | None
        server_count  int | None (declared), server_count_raw: the raw value
        servers       [{"index", "server_id", "host_ip", "container_ip", "host_nic_ip",
                        "hardware_type", "devices": [{"device_id": int|None, "device_id_raw",
                        "device_ip", "rank_id": int|None, "rank_id_raw", "super_device_id"}]}]
        super_pods    [{"super_pod_id", "server_ids": [...]}]
        rank_count    total number of device entries

    Never raises.
    """
    result: Dict[str, Any] = {
        "ok": False,
        "error": None,
        "truncated": False,
        "strict_json": False,
        "tolerated": [],
        "version": None,
        "status": None,
        "server_count": None,
        "server_count_raw": None,
        "servers": [],
        "super_pods": [],
        "rank_count": 0,
    }
    read, raw = _read_json(text, result)
    if not read:
        return result
    if not isinstance(raw, dict):
        result["error"] = f"the top level is a JSON {type(raw).__name__}, not an object"
        return result
    result["ok"] = True
    result["version"] = _text(raw.get("version"))
    result["status"] = _text(raw.get("status"))
    result["server_count_raw"] = raw.get("server_count")
    result["server_count"] = _as_int(raw.get("server_count"))
    servers = raw.get("server_list")
    if isinstance(servers, list):
        result["servers"].extend(_server(index, server) for index, server in enumerate(servers))
    else:
        result["server_list_missing"] = True
    pods = raw.get("super_pod_list")
    for pod in pods if isinstance(pods, list) else []:
        if isinstance(pod, dict):
            members = pod.get("server_list")
            ids = (
                [_text(s.get("server_id")) for s in members if isinstance(s, dict)] if isinstance(members, list) else []
            )
            result["super_pods"].append({"super_pod_id": _text(pod.get("super_pod_id")), "server_ids": ids})
    result["rank_count"] = sum(len(s["devices"]) for s in result["servers"])
    return result


def _read_json(text: str, result: Dict[str, Any]) -> Tuple[bool, Any]:
    """``(True, value)`` of the JSON text, read strictly or once comments, elisions and
    trailing commas are removed (``result``'s ``strict_json`` and ``tolerated`` say which);
    ``(False, None)`` with ``result``'s ``error`` and ``truncated`` set when it cannot be read."""
    if not text.strip():
        result["error"] = "the file is empty"
        result["truncated"] = True
        return False, None
    try:
        raw = jsontext.loads(text)
        result["strict_json"] = True
    except json.JSONDecodeError as exc:
        cleaned, removed = _strip_comments(text)
        try:
            raw = jsontext.loads(cleaned) if removed else None
        except json.JSONDecodeError:
            raw = None
        if raw is None:
            message, truncated = _json_error(text, exc)
            if removed:
                # Report the position in the comment-free text: the original error is
                # usually just the first comment.
                try:
                    jsontext.loads(cleaned)
                except json.JSONDecodeError as exc2:
                    message, truncated = _json_error(cleaned, exc2)
                    message += " (after removing " + ", ".join(removed) + ")"
            result["error"] = message
            result["truncated"] = truncated
            return False, None
        result["tolerated"] = removed
    except RecursionError:
        result["error"] = "not valid JSON: nested too deeply"
        return False, None
    return True, raw


def _server(index: int, server: Any) -> Dict[str, Any]:
    """The record of one ``server_list`` entry and its devices."""
    if not isinstance(server, dict):
        return {"index": index, "invalid": True, "devices": []}
    raw_devices = server.get("device")
    return {
        "index": index,
        "server_id": _text(server.get("server_id")),
        "host_ip": _text(server.get("host_ip")),
        "container_ip": _text(server.get("container_ip")),
        "host_nic_ip": _text(server.get("host_nic_ip")),
        "hardware_type": _text(server.get("hardware_type")),
        "devices": [_device(dev) for dev in (raw_devices if isinstance(raw_devices, list) else [])],
        "has_device_list": isinstance(raw_devices, list),
    }


def _device(dev: Any) -> Dict[str, Any]:
    """The record of one ``device`` entry of a server."""
    if not isinstance(dev, dict):
        return {"invalid": True}
    return {
        "device_id": _as_int(dev.get("device_id")),
        "device_id_raw": _text(dev.get("device_id")),
        "device_ip": _text(dev.get("device_ip")),
        "rank_id": _as_int(dev.get("rank_id")),
        "rank_id_raw": _text(dev.get("rank_id")),
        "super_device_id": _text(dev.get("super_device_id")),
    }


def server_addresses(server: Dict[str, Any]) -> List[str]:
    """The addresses a server entry names for its host: ``server_id`` (when it is an IP,
    format 1.0), ``host_ip`` and ``container_ip`` (1.2 and the A2 form of 1.0)."""
    out: List[str] = []
    for key in ("server_id", "host_ip", "container_ip"):
        value = server.get(key)
        if value is not None and is_ip(value) and value not in out:
            out.append(value)
    return out


def id_ranges(values: List[int], sep: str = ",") -> str:
    """Sorted integer ids as ranges: ``[0, 1, 2, 5, 7, 8]`` → ``"0-2,5,7-8"`` (``sep``
    joins the parts; ``"none"`` for no ids).  Also used for NPU ids in device findings."""
    parts: List[str] = []
    start: Optional[int] = None
    prev = 0
    for v in values:
        if start is None:
            start = prev = v
        elif v == prev + 1:
            prev = v
        else:
            parts.append(f"{start}-{prev}" if start != prev else str(start))
            start = prev = v
    if start is not None:
        parts.append(f"{start}-{prev}" if start != prev else str(start))
    return sep.join(parts) or "none"
