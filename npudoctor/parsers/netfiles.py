"""This node's interfaces and addresses from the kernel's text files, for a root that is a
directory (``--root``): ``/proc/net/fib_trie`` (local IPv4 addresses: the ``/32 host
LOCAL`` leaves), ``/proc/net/route`` (which interface reaches each address's network),
``/proc/net/if_inet6`` (IPv6 addresses with their interface)."""

from __future__ import annotations

import ipaddress
import struct
from typing import Dict, List, Optional, Tuple


def fib_trie_local(text: str) -> List[str]:
    """The IPv4 addresses the ``Local`` table of a fib_trie text marks ``/32 host LOCAL``,
    in order, each once."""
    out: List[str] = []
    last: Optional[str] = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("|--") or stripped.startswith("+--"):
            word = stripped[3:].strip().split(" ")[0]
            last = word if "/" not in word else None
        elif "/32 host LOCAL" in stripped and last is not None and last not in out:
            out.append(last)
    return out


def _hex_ipv4(value: str) -> Optional[int]:
    """A /proc/net/route column (hex, host byte order of a little-endian machine) as an
    integer in network order, or ``None``."""
    try:
        raw = int(value, 16)
    except ValueError:
        return None
    return int.from_bytes(struct.pack("<I", raw & 0xFFFFFFFF), "big")


def routes(text: str) -> List[Tuple[str, int, int]]:
    """``(interface, destination, mask)`` of each /proc/net/route line."""
    out: List[Tuple[str, int, int]] = []
    for line in text.splitlines()[1:]:
        cols = line.split()
        if len(cols) < 8:
            continue
        dest, mask = _hex_ipv4(cols[1]), _hex_ipv4(cols[7])
        if dest is not None and mask is not None:
            out.append((cols[0], dest, mask))
    return out


def interface_of(address: str, table: List[Tuple[str, int, int]]) -> Optional[str]:
    """The interface of the most specific non-default route containing ``address``."""
    value = int(ipaddress.IPv4Address(address))
    best: Optional[Tuple[int, str]] = None
    for name, dest, mask in table:
        if mask and (value & mask) == (dest & mask) and (best is None or mask > best[0]):
            best = (mask, name)
    return best[1] if best else None


def if_inet6(text: str) -> List[Dict[str, str]]:
    """``{"interface", "family": "ipv6", "address"}`` per /proc/net/if_inet6 line."""
    out: List[Dict[str, str]] = []
    for line in text.splitlines():
        cols = line.split()
        if len(cols) < 6 or len(cols[0]) != 32:
            continue
        try:
            addr = ipaddress.IPv6Address(bytes.fromhex(cols[0]))
        except ValueError:
            continue
        out.append({"interface": cols[5], "family": "ipv6", "address": str(addr)})
    return out
