"""Parsers of ``/etc/passwd`` and ``/etc/group`` (colon-separated, one entry a line)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from npudoctor.parsers.numbers import to_int

if TYPE_CHECKING:
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
        uid, gid = to_int(fields[2]), to_int(fields[3])
        if uid is None or gid is None:
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
        gid = to_int(fields[2])
        if gid is None:
            continue
        members = [m for m in (fields[3].split(",") if len(fields) > 3 else []) if m]
        out.append({"name": fields[0], "gid": gid, "members": members})
    return out
