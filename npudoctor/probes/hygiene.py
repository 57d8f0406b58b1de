"""Host hygiene: free space where CANN writes caches and logs, aarch64 conda libgomp.

Section ``hygiene`` (reads ``host`` and ``python``)::

    disk      [target, ...] one per place CANN writes to:
              {"purpose": str, "path": the directory CANN would use (of the diagnosed
               machine), "variable": "ASCEND_CACHE_PATH" | ... | None (None: a default
               location), "checked": nearest existing directory (path itself or an
               ancestor: CANN creates the rest), "exists": bool, "writable": bool | None
               (for the judged account, from the mode bits; None if unknown),
               "free_bytes": int | None, "total_bytes": int | None, "mount": str | None,
               "source": "df -P -k" | "statvfs" | None, "error": str | None}
              Targets: $HOME/ascend (CANN's default for logs ``~/ascend/log`` and the
              operator/kernel cache), /tmp, and the directories named by
              ASCEND_CACHE_PATH, ASCEND_WORK_PATH and ASCEND_PROCESS_LOG_PATH.
    libgomp   {"arch": "aarch64" | ..., "conda_prefix": str | None, "path":
               "<conda prefix>/lib/libgomp.so.1" | None, "exists": bool,
               "ld_preload": str, "preloaded": bool (a libgomp is in LD_PRELOAD)}

Free space comes from ``df -P -k <dir>`` run with a timeout (a hung network mount must not
hang the check); without commands (``--no-commands``) ``os.statvfs`` runs in a helper
thread with the same deadline.
"""

from __future__ import annotations

import os
import posixpath
import stat as stat_mod
import threading
from typing import Any, Dict, List, Optional

from npudoctor.context import ProbeContext
from npudoctor.host import Host
from npudoctor.parsers.df import parse_df

SECTION = "hygiene"
NEEDS = ("host", "python")
SLOW = True

DF_TIMEOUT = 5.0

_VARIABLES = (
    ("ASCEND_CACHE_PATH", "CANN compile/operator cache (ASCEND_CACHE_PATH)"),
    ("ASCEND_WORK_PATH", "CANN work directory (ASCEND_WORK_PATH)"),
    ("ASCEND_PROCESS_LOG_PATH", "CANN process logs (ASCEND_PROCESS_LOG_PATH)"),
)


def _nearest_existing(host: Host, path: str) -> Optional[str]:
    current = host.display(path)
    while True:
        if host.is_dir(current):
            return current
        parent = posixpath.dirname(current)
        if parent == current:
            return None
        current = parent


def writable(host: Host, path: str, identity: Dict[str, Any]) -> Optional[bool]:
    """Whether ``identity`` ({uid, gid, groups}) may create files in ``path``, from the
    mode bits (root may always); ``None`` when the directory cannot be stat'ed."""
    st = host.stat(path)
    if st is None:
        return None
    uid = identity.get("uid")
    if uid == 0:
        return True
    groups = set(identity.get("groups") or []) | {identity.get("gid")}
    mode = st.st_mode
    if uid == st.st_uid:
        ok = bool(mode & stat_mod.S_IWUSR and mode & stat_mod.S_IXUSR)
    elif st.st_gid in groups:
        ok = bool(mode & stat_mod.S_IWGRP and mode & stat_mod.S_IXGRP)
    else:
        ok = bool(mode & stat_mod.S_IWOTH and mode & stat_mod.S_IXOTH)
    return ok


def _statvfs(real: str, timeout: float) -> Dict[str, Any]:
    box: Dict[str, Any] = {}

    def work() -> None:
        try:
            st = os.statvfs(real)
            box["free_bytes"] = st.f_bavail * st.f_frsize
            box["total_bytes"] = st.f_blocks * st.f_frsize
        except OSError as exc:
            box["error"] = exc.strerror or str(exc)

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        return {"error": f"statvfs gave no answer within {timeout:.0f} s"}
    box["source"] = "statvfs"
    return box


def free_space(ctx: ProbeContext, checked: str) -> Dict[str, Any]:
    """``{"free_bytes", "total_bytes", "mount", "source", "error"}`` for a directory of
    the diagnosed machine."""
    host = ctx.host
    try:
        real = host.real(checked)
    except OSError as exc:
        return {"error": exc.strerror or "symlink loop"}
    timeout = ctx.options.remaining(DF_TIMEOUT)
    result = host.run(["df", "-P", "-k", real], timeout=timeout)
    if result.ok:
        rows = parse_df(result.stdout)
        if rows:
            row = rows[-1]
            return {
                "free_bytes": row["free_bytes"],
                "total_bytes": row["total_bytes"],
                "mount": row["mount"],
                "source": "df -P -k",
            }
        return {"error": f"df printed nothing usable for {checked}"}
    if result.timed_out:
        return {"error": f"df -P -k {checked}: no answer within {result.duration:.1f} s (hung mount?)"}
    if result.error in ("commands disabled", "command not found"):
        return _statvfs(real, timeout)
    stderr = (result.stderr or "").strip().splitlines()
    return {"error": f"df -P -k {checked}: exit {result.returncode}" + (f": {stderr[-1]}" if stderr else "")}


def _targets(host: Host) -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = []
    home = host.getenv("HOME") or "/root"
    out.append(
        {
            "purpose": "CANN logs and operator cache (default ~/ascend)",
            "path": posixpath.join(home, "ascend"),
            "variable": None,
        }
    )
    out.append({"purpose": "temporary files (/tmp)", "path": "/tmp", "variable": None})
    for var, purpose in _VARIABLES:
        value = host.getenv(var)
        if value:
            out.append(
                {
                    "purpose": purpose,
                    "path": value if value.startswith("/") else posixpath.join(home, value),
                    "variable": var,
                }
            )
    return out


def _libgomp(ctx: ProbeContext) -> Dict[str, Any]:
    py = ctx.facts.get("python") or {}
    host_facts = ctx.facts.get("host") or {}
    arch = py.get("machine") or host_facts.get("arch")
    prefix = py.get("conda_prefix")
    preload = ctx.host.getenv("LD_PRELOAD") or ""
    path = posixpath.join(prefix, "lib", "libgomp.so.1") if prefix else None
    return {
        "arch": arch,
        "conda_prefix": prefix,
        "path": path,
        "exists": bool(path and ctx.host.exists(path)),
        "ld_preload": preload,
        "preloaded": "libgomp" in preload,
    }


def probe(ctx: ProbeContext) -> Dict[str, Any]:
    host = ctx.host
    identity = (ctx.facts.get("host") or {}).get("identity") or {"uid": os.getuid(), "gid": os.getgid(), "groups": []}
    disk: List[Dict[str, Any]] = []
    cache: Dict[str, Dict[str, Any]] = {}
    for target in _targets(host):
        checked = _nearest_existing(host, target["path"])
        rec = dict(target)
        rec.update(
            {
                "checked": checked,
                "exists": host.is_dir(target["path"]),
                "writable": writable(host, checked, identity) if checked else None,
                "free_bytes": None,
                "total_bytes": None,
                "mount": None,
                "source": None,
                "error": None if checked else "no existing directory on the path",
            }
        )
        if checked:
            if checked not in cache:
                cache[checked] = free_space(ctx, checked)
            rec.update(cache[checked])
        disk.append(rec)
    return {"disk": disk, "libgomp": _libgomp(ctx)}
