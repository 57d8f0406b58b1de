"""Parsers of ``/etc/passwd`` and ``/etc/group`` (colon-separated, one entry a line)."""

from __future__ import annotations

from typing import Any, Dict, List


def parse_passwd(text: str) -> List[Dict[str, Any]]:
    """Entries of a passwd file: ``[{"name", "uid", "gid", "home", "shell"}]``.

    Malformed lines (too few fields, non-numeric ids) and comments are skipped.
    """
    out: List[Dict[str, Any]] = []
    for line in text.splitlines():
        fields = line.strip().split(":")
        if len(fields) < 4 or line.lstrip().startswith("#"):
            continue
        try:
            uid, gid = int(fields[2]), int(fields[3])
        except ValueError:
            continue
        out.append(
            {
                "name": fields[0],
                "uid": uid,
                "gid": gid,
                "home": fields[5] if len(fields) > 5 else "",
                "shell": fields[6] if len(fields) > 6 else "",
            }
        )
    return out


def parse_group(text: str) -> List[Dict[str, Any]]:
    """Entries of a group file: ``[{"name", "gid", "members": [names]}]``."""
    out: List[Dict[str, Any]] = []
    for line in text.splitlines():
        fields = line.strip().split(":")
        if len(fields) < 3 or line.lstrip().startswith("#"):
            continue
        try:
            gid = int(fields[2])
        except ValueError:
            continue
        members = [m for m in (fields[3].split(",") if len(fields) > 3 else []) if m]
        out.append({"name": fields[0], "gid": gid, "members": members})
    return out
