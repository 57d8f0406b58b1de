"""``/proc/PID/status`` (proc(5)): the capability sets and the ids of a process.

Lines are ``Key:<TAB>value``; ``Uid:``/``Gid:`` hold the real, effective, saved and
filesystem ids, ``Groups:`` the supplementary groups (possibly empty), ``CapEff:`` and
friends a 64-bit hex mask.  Only these are read; everything else is ignored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional
#: Most supplementary groups kept (NGROUPS_MAX is 65536; a judged process holds a few).
MAX_GROUPS = 1024


def _ids(value: str) -> List[int]:
    """Decimal ids of a ``Uid:``/``Gid:``/``Groups:`` value (ASCII digits only, at most 10)."""
    out = []
    for word in value.split():
        if word.isascii() and word.isdigit() and len(word) <= 10:
            out.append(int(word))
    return out[:MAX_GROUPS]


def _mask(value: Optional[str]) -> Optional[str]:
    """A capability mask as read, when it is one (hex, at most 16 digits), else None."""
    text = (value or "").strip()
    if 0 < len(text) <= 16 and all(c in "0123456789abcdefABCDEF" for c in text):
        return text
    return None


def parse_proc_status(text: str) -> Optional[Dict[str, Any]]:
    """``{"cap_eff", "cap_prm", "cap_bnd" (hex as read), "uid", "gid" (effective ids),
    "groups": [int]}`` of a ``/proc/PID/status`` text; ``None`` when it holds no ``CapEff:``
    line (not a status file).  An id or mask that is not well formed is ``None``."""
    fields: Dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key not in fields:
            fields[key.strip()] = value.strip()
    if "CapEff" not in fields:
        return None
    uid, gid = _ids(fields.get("Uid", "")), _ids(fields.get("Gid", ""))
    return {
        "cap_eff": _mask(fields.get("CapEff")),
        "cap_prm": _mask(fields.get("CapPrm")),
        "cap_bnd": _mask(fields.get("CapBnd")),
        "uid": uid[1] if len(uid) > 1 else None,
        "gid": gid[1] if len(gid) > 1 else None,
        "groups": _ids(fields.get("Groups", "")),
    }
