"""Parser of ``df -P -k`` output (POSIX format, 1024-byte blocks). Pure, never raises.

Format (POSIX.1 ``df -P``)::

    Filesystem     1024-blocks     Used Available Capacity Mounted on
    /dev/vda1         41152736 39019172         0     100% /

The file system name may contain spaces only in exotic setups; the last five fields are
taken from the right, so ``Mounted on`` keeps any spaces.
"""

from __future__ import annotations

from typing import Any, Dict, List

from npudoctor.parsers.numbers import to_int


def parse_df(text: str) -> List[Dict[str, Any]]:
    """Rows of ``df -P -k``: ``[{"filesystem", "total_bytes", "used_bytes",
    "free_bytes", "capacity" (percent int or None), "mount"}]``.  The header and
    lines that do not parse are skipped."""
    rows: List[Dict[str, Any]] = []
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) < 6 or parts[0] == "Filesystem":
            continue
        # Mount points may contain spaces: numbers are the fields 1..4 after the device.
        idx = None
        for i in range(1, len(parts) - 4):
            nums = parts[i : i + 3]
            if all(to_int(n) is not None and n.isdecimal() for n in nums) and parts[i + 3].endswith("%"):
                idx = i
                break
        if idx is None:
            continue
        cap = parts[idx + 3].rstrip("%")
        rows.append(
            {
                "filesystem": " ".join(parts[:idx]),
                "total_bytes": int(parts[idx]) * 1024,
                "used_bytes": int(parts[idx + 1]) * 1024,
                "free_bytes": int(parts[idx + 2]) * 1024,
                "capacity": to_int(cap) if cap.isdecimal() else None,
                "mount": " ".join(parts[idx + 4 :]),
            }
        )
    return rows
