"""Host facts: architecture, OS, glibc, host name and the account being judged.

Section ``host``::

    arch       "aarch64" | "x86_64" | None   (live: platform.machine(); --root: the ELF
               header of /bin/sh or another system binary inside the root)
    arch_source  where arch came from
    os         {"id", "version_id", "pretty_name", "source"} from /etc/os-release
    glibc      "2.31" | None (live: confstr; --root: the libc-X.Y.so name, if any)
    hostname   str (live: os.uname()'s nodename, gethostname's answer; --root: /etc/hostname)
    cwd        working directory of the diagnosed process (live, or --root: None)
    identity   {"uid", "gid", "groups", "name", "has_passwd_entry", "source"}
               the account whose access is judged (--user, else $USER in the root,
               else this process)
"""

from __future__ import annotations

import contextlib
import os
import struct
from typing import TYPE_CHECKING

from npudoctor.context import ProbeContext
from npudoctor.host import Host
from npudoctor.parsers.accounts import parse_group, parse_passwd
from npudoctor.parsers.numbers import to_int

if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple

SECTION = "host"
NEEDS = ()
QUICK = True

#: ELF e_machine values → the names `uname -m` prints.
_E_MACHINE = {0x3E: "x86_64", 0xB7: "aarch64", 0x03: "i686", 0x28: "arm", 0xF3: "riscv64"}
_ELF_CANDIDATES = ("/bin/sh", "/usr/bin/sh", "/bin/bash", "/usr/bin/env", "/bin/ls", "/usr/bin/ls")


def elf_machine(data: bytes) -> Optional[str]:
    """Architecture name from the first 20 bytes of an ELF file, or ``None``."""
    if len(data) < 20 or data[:4] != b"\x7fELF":
        return None
    endian = "<" if data[5] == 1 else ">"
    (machine,) = struct.unpack(endian + "H", data[18:20])
    return _E_MACHINE.get(machine)


def _arch(host: Host) -> Tuple[Optional[str], str]:
    if host.live:
        return os.uname().machine or None, "platform.machine()"
    for path in _ELF_CANDIDATES:
        data, _err, _trunc = host.read_bytes(path, limit=64)
        arch = elf_machine(data or b"")
        if arch:
            return arch, f"ELF header of {path}"
    return None, "unknown (no system binary in the root)"


def parse_os_release(text: str) -> Dict[str, str]:
    """``KEY=value`` lines of ``/etc/os-release`` (quotes removed, keys lower-case)."""
    out: Dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        out[key.strip().lower()] = value.strip().strip("\"'")
    return out


def _glibc(host: Host) -> Optional[str]:
    if host.live:
        try:
            text = os.confstr("CS_GNU_LIBC_VERSION") or ""
        except (ValueError, OSError, AttributeError):
            text = ""
        parts = text.split()
        return parts[1] if len(parts) == 2 and parts[0] == "glibc" else None
    for libdir in (
        "/lib",
        "/lib64",
        "/usr/lib",
        "/lib/aarch64-linux-gnu",
        "/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib64",
    ):
        for path in host.glob(libdir, prefix="libc-", suffix=".so"):
            return os.path.basename(path)[len("libc-") : -len(".so")]
    return None


def user_problem(host: Host, user: str) -> Optional[str]:
    """Why ``--user`` cannot be judged, or ``None`` when it can.

    A numeric uid is always accepted (containers run arbitrary uids without a passwd
    entry, which is itself worth judging); a name must exist in ``/etc/passwd`` of the
    diagnosed root.
    """
    if user.isdecimal():
        return None
    names = {e["name"] for e in parse_passwd(host.read_text("/etc/passwd").text or "")}
    if user in names:
        return None
    return (
        f"--user {user}: no such account in {host.display('/etc/passwd')} of the diagnosed system "
        "(give a numeric uid to judge an account without a passwd entry)"
    )


def _pid_identity(host: Host, pid: int, passwd: List[Dict[str, Any]], groups: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The effective uid, gid and supplementary groups of process ``pid`` from its
    ``/proc/PID/status`` (proc(5)), names from the root's passwd/group; the identity of
    this process (``source`` says so) when the file cannot be read."""
    from npudoctor.parsers.procstatus import parse_proc_status

    read = host.read_text(f"/proc/{pid}/status", limit=64 * 1024)
    parsed = parse_proc_status(read.text or "") if read.ok else None
    if parsed is None or parsed["uid"] is None or parsed["gid"] is None:
        found = resolve_identity(host, None)
        found["source"] = f"process (/proc/{pid}/status unreadable: {read.error or 'no ids'})"
        return found
    uid, gid = int(parsed["uid"]), int(parsed["gid"])
    member = sorted(set(parsed["groups"]) | {gid})
    entry = next((e for e in passwd if e["uid"] == uid), None)
    return {
        "uid": uid,
        "gid": gid,
        "groups": member,
        "group_names": {str(g["gid"]): g["name"] for g in groups if g["gid"] in member},
        "name": entry["name"] if entry else None,
        "has_passwd_entry": entry is not None,
        "source": f"--pid {pid} (/proc/{pid}/status)",
    }


def resolve_identity(host: Host, user: Optional[str], pid: Optional[int] = None) -> Dict[str, Any]:
    """The account to judge: ``user`` (a name or numeric uid) if given, else the
    effective ids of process ``pid`` (``--pid``: ``/proc/PID/status``), else ``$USER``
    of the diagnosed environment under ``--root``, else this process's account.

    Names and groups are looked up in ``/etc/passwd`` and ``/etc/group`` of the root.
    """
    passwd = parse_passwd(host.read_text("/etc/passwd").text or "")
    groups = parse_group(host.read_text("/etc/group").text or "")
    if pid and not user:
        return _pid_identity(host, pid, passwd, groups)
    entry = None
    source = "process"
    uid: Optional[int] = None
    gid: Optional[int] = None
    wanted = user or (None if host.live else host.getenv("USER"))
    if wanted:
        source = "--user" if user else "$USER"
        if wanted.isdecimal() and to_int(wanted) is not None:
            uid = to_int(wanted)
            entry = next((e for e in passwd if e["uid"] == uid), None)
        else:
            entry = next((e for e in passwd if e["name"] == wanted), None)
            if entry is not None:
                uid = entry["uid"]
    if uid is None:
        uid, gid = os.getuid(), os.getgid()
        entry = next((e for e in passwd if e["uid"] == uid), None)
        source = "process" if not wanted else source + " (unknown account; using this process)"
    if gid is None:
        gid = entry["gid"] if entry else (os.getgid() if source == "process" else uid)
    name = entry["name"] if entry else None
    member: List[int] = sorted({g["gid"] for g in groups if name and name in g["members"]} | {gid})
    if host.live and source == "process":
        with contextlib.suppress(OSError):
            member = sorted(set(os.getgroups()) | {gid})
    return {
        "uid": uid,
        "gid": gid,
        "groups": member,
        "group_names": {str(g["gid"]): g["name"] for g in groups if g["gid"] in member},
        "name": name,
        "has_passwd_entry": entry is not None,
        "source": source,
    }


def probe(ctx: ProbeContext) -> Dict[str, Any]:
    host = ctx.host
    arch, arch_source = _arch(host)
    release = host.read_text("/etc/os-release")
    if not release.ok:
        release = host.read_text("/usr/lib/os-release")
    os_info: Dict[str, Any] = {"source": release.path if release.ok else None}
    if release.ok:
        parsed = parse_os_release(release.text or "")
        os_info.update({k: parsed.get(k) for k in ("id", "version_id", "pretty_name")})
    if host.live:
        hostname = os.uname().nodename  # what gethostname(2) answers: glibc reads it from uname
    else:
        first = (host.read_text("/etc/hostname").text or "").strip().splitlines()[0:1]
        hostname = first[0] if first else ""
    return {
        "arch": arch,
        "arch_source": arch_source,
        "os": os_info,
        "glibc": _glibc(host),
        "hostname": hostname,
        "cwd": ctx.options.cwd or (os.getcwd() if host.live else None),
        "identity": resolve_identity(host, ctx.options.user, ctx.options.pid),
    }
