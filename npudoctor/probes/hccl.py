"""HCCL and multi-node facts: HCCL variables, ``/etc/hccn.conf``, the rank table, this node's
addresses, ``hccn_tool`` answers and (when asked) one TCP connect to ``MASTER_ADDR``.

Section ``hccl``::

    variables     {NAME: value} of the HCCL_* variables set, the launcher variables
                  (RANK_TABLE_FILE, RANK_ID, RANK_SIZE, WORLD_SIZE, RANK, LOCAL_RANK,
                  LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, NNODES, ...) and the
                  visibility variables (ASCEND_RT_VISIBLE_DEVICES, ASCEND_VISIBLE_DEVICES,
                  ASCEND_DEVICE_ID, CUDA_VISIBLE_DEVICES); only those that are set
    in_container  {"value": bool, "source": str}: from the ``container`` section when it ran
                  ("source": its evidence, e.g. "/.dockerenv exists"), else /.dockerenv,
                  /run/.containerenv, KUBERNETES_SERVICE_HOST, /proc/1/cgroup ("source" says
                  which marker was seen)
    dev_nodes     [int]: N of the /dev/davinciN nodes present (physical device ids visible)
    hccn_conf     {"path": "/etc/hccn.conf", "present": bool, "error": str|None,
                   "devices": {"0": {"address", "netmask", ...}}, "other", "elided",
                   "unparsed", "duplicates"}  (parsers.hccn.parse_hccn_conf)
    rank_table    None (RANK_TABLE_FILE unset) or {"path", "variable", "read_error"} when
                   the file cannot be read, else also "lossy" and the keys of
                   parsers.ranktable.parse_ranktable() (structure only: the layout is
                   judged by rules/_ranktable.py on every run; the "problems" list that
                   older snapshots carry here is ignored)
    local         {"available": bool, "reason": str|None, "interfaces": [name],
                   "addresses": [{"interface", "family": "ipv4"|"ipv6", "address"}],
                   "source": "psutil.net_if_addrs()"}; under --root read from the root's
                   files (probes/netfiles.py: /sys/class/net, /proc/net/fib_trie with
                   /proc/net/route, /proc/net/if_inet6), available False when it has none.
                   Read only when one of :data:`ADDRESS_VARS` is set (else available
                   False, the reason says so): nothing else is compared with them
    hccn_tool     {"path": str|None, "error": str|None, "devices": {"3": {"ip": {"ipaddr",
                   "netmask"}, "link": "UP"|"DOWN"|None, "commands": [str]}}}: run only
                   when hccn_tool is on PATH, for the devices of hccn.conf (at most 16),
                   each call with a timeout; the first call that hangs stops the rest
    whitelist     {"file": HCCL_WHITELIST_FILE or None, "exists": bool|None}: the whitelist
                  HCCL reads when HCCL_WHITELIST_DISABLE=0
    master        {"addr", "port", "probe": None | {"reachable": bool, "error": str|None,
                   "seconds": float, "timeout": float}}: the probe runs only with
                   ``check --probe-master``: ONE bounded TCP connect, never a scan

Whether this is a multi-node or multi-process job is inferred by the rules from these
facts (rules/_hccl_job.py); the ``multi_node``/``multi_process`` that older snapshots
carry here are ignored.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any, Dict, List, Mapping, Optional

from npudoctor.context import ProbeContext
from npudoctor.host import Host
from npudoctor.parsers.hccn import parse_hccn_conf, parse_ip, parse_link
from npudoctor.parsers.netfiles import fib_trie_local, if_inet6, interface_of, routes
from npudoctor.parsers.numbers import to_int
from npudoctor.parsers.ranktable import parse_ranktable

SECTION = "hccl"
NEEDS = ("host", "container")
SLOW = True
QUICK = False

HCCN_CONF = "/etc/hccn.conf"
#: Largest rank table read (a 1,000-server table is well below this).
RANKTABLE_LIMIT = 16 << 20
#: Most devices hccn_tool is asked about.
MAX_HCCN_DEVICES = 16
#: Deadline of the master connect (seconds).
MASTER_TIMEOUT = 3.0

LAUNCH_VARS = (
    "RANK_TABLE_FILE",
    "RANK_ID",
    "RANK_SIZE",
    "DEVICE_ID",
    "WORLD_SIZE",
    "RANK",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "NODE_RANK",
    "GROUP_RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
    "NNODES",
    "NODE_COUNT",
    "PET_NNODES",
    "SERVER_COUNT",
    "SLURM_NNODES",
    "SLURM_JOB_NUM_NODES",
    "SLURM_NODEID",
)
#: What the rules compare with this node's own addresses: the servers of the rank table,
#: the launcher's MASTER_ADDR, HCCL_IF_IP and HCCL_SOCKET_IFNAME (rules/hccl.py,
#: rules/_hccl_job.py).  When none is set the addresses are not read: nothing would use
#: them, and reading them on a live machine imports psutil.
ADDRESS_VARS = ("RANK_TABLE_FILE", "MASTER_ADDR", "HCCL_IF_IP", "HCCL_SOCKET_IFNAME")
VISIBILITY_VARS = ("ASCEND_RT_VISIBLE_DEVICES", "ASCEND_VISIBLE_DEVICES", "ASCEND_DEVICE_ID", "CUDA_VISIBLE_DEVICES")


def _int(value: Optional[str]) -> Optional[int]:
    if value is None:
        return None
    value = value.strip()
    return to_int(value) if re.fullmatch(r"[0-9]+", value) else None


def _variables(ctx: ProbeContext) -> Dict[str, str]:
    env = ctx.host.environ
    names = sorted(n for n in env if n.startswith("HCCL_"))
    names += [n for n in LAUNCH_VARS + VISIBILITY_VARS if n in env]
    return {n: env[n] for n in names}


def _in_container(ctx: ProbeContext) -> Dict[str, Any]:
    section = ctx.facts.get("container")
    if isinstance(section, dict) and isinstance(section.get("in_container"), bool):
        shown = "; ".join(str(e) for e in (section.get("evidence") or [])[:3])
        return {"value": section["in_container"], "source": shown or "no container marker"}
    host = ctx.host
    for marker in ("/.dockerenv", "/run/.containerenv"):
        if host.exists(marker):
            return {"value": True, "source": f"{marker} exists"}
    if host.getenv("KUBERNETES_SERVICE_HOST"):
        return {"value": True, "source": "KUBERNETES_SERVICE_HOST is set"}
    cgroup = host.read_text("/proc/1/cgroup", limit=65536).text or ""
    found = re.search(r"docker|kubepods|containerd|libpod", cgroup)
    if found:
        return {"value": True, "source": f"/proc/1/cgroup names {found.group(0)}"}
    return {"value": False, "source": "no container marker"}


def _dev_nodes(ctx: ProbeContext) -> List[int]:
    ids = []
    for path in ctx.host.glob("/dev", prefix="davinci"):
        tail = path.rsplit("davinci", 1)[-1]
        num = to_int(tail) if tail.isdecimal() else None
        if num is not None:
            ids.append(num)
    return sorted(ids)


def local_from_files(host: Host) -> Dict[str, Any]:
    """This node's interfaces and addresses from the root's files (``--root``)."""
    interfaces = sorted(host.listdir("/sys/class/net"))
    fib = host.read_text("/proc/net/fib_trie").text
    route = host.read_text("/proc/net/route").text
    inet6 = host.read_text("/proc/net/if_inet6").text
    if not interfaces and fib is None and inet6 is None:
        return {
            "available": False,
            "reason": "under --root the root has none of /sys/class/net, /proc/net/fib_trie, /proc/net/if_inet6",
            "interfaces": [],
            "addresses": [],
            "source": None,
        }
    table = routes(route or "")
    addresses: List[Dict[str, str]] = []
    for addr in fib_trie_local(fib or ""):
        name = "lo" if addr.startswith("127.") else interface_of(addr, table)
        addresses.append({"interface": name or "", "family": "ipv4", "address": addr})
    addresses.extend(if_inet6(inet6 or ""))
    used = [
        p
        for p, text in (
            ("/sys/class/net", interfaces),
            ("/proc/net/fib_trie", fib),
            ("/proc/net/route", route),
            ("/proc/net/if_inet6", inet6),
        )
        if text
    ]
    return {
        "available": True,
        "reason": None,
        "interfaces": interfaces,
        "addresses": addresses,
        "source": ", ".join(used),
    }


def addresses_needed(environ: Mapping[str, str]) -> bool:
    """Whether a variable of ``environ`` names something to compare with this node's
    addresses (:data:`ADDRESS_VARS`)."""
    return any((environ.get(name) or "").strip() for name in ADDRESS_VARS)


def _local(ctx: ProbeContext) -> Dict[str, Any]:
    if not addresses_needed(ctx.host.environ):
        return {
            "available": False,
            "reason": "not read: none of " + ", ".join(ADDRESS_VARS) + " is set",
            "interfaces": [],
            "addresses": [],
            "source": None,
        }
    if not ctx.host.live:
        return local_from_files(ctx.host)
    import socket  # with psutil, only where the addresses are read

    try:
        import psutil

        table = psutil.net_if_addrs()
    except Exception as exc:  # psutil missing or /proc unreadable
        return {
            "available": False,
            "reason": f"psutil failed: {exc}",
            "interfaces": [],
            "addresses": [],
            "source": None,
        }
    addresses = []
    for name, addrs in sorted(table.items()):
        for a in addrs:
            if a.family == socket.AF_INET:
                fam = "ipv4"
            elif a.family == socket.AF_INET6:
                fam = "ipv6"
            else:
                continue
            addresses.append({"interface": name, "family": fam, "address": str(a.address).split("%", 1)[0]})
    return {
        "available": True,
        "reason": None,
        "interfaces": sorted(table),
        "addresses": addresses,
        "source": "psutil.net_if_addrs()",
    }


def _hccn_conf(ctx: ProbeContext) -> Dict[str, Any]:
    read = ctx.host.read_text(HCCN_CONF, limit=1 << 20)
    out: Dict[str, Any] = {"path": HCCN_CONF, "present": ctx.host.exists(HCCN_CONF), "error": read.error}
    if read.ok:
        out.update(parse_hccn_conf(read.text or ""))
        out["lossy"] = read.lossy
    return out


def _rank_table(ctx: ProbeContext) -> Optional[Dict[str, Any]]:
    path = ctx.host.getenv("RANK_TABLE_FILE")
    if not path:
        return None
    path = path.strip()
    if not path.startswith("/"):
        base = ctx.options.cwd or (ctx.facts.get("host", {}) or {}).get("cwd") or "/"
        path = base.rstrip("/") + "/" + path
    read = ctx.host.read_text(path, limit=RANKTABLE_LIMIT)
    out: Dict[str, Any] = {"path": read.path, "variable": "RANK_TABLE_FILE", "read_error": read.error}
    if not read.ok:
        return out
    text = read.text or ""
    if read.truncated:
        out["read_error"] = f"larger than {RANKTABLE_LIMIT} bytes"
    table = parse_ranktable(text)
    out.update(table)
    out["lossy"] = read.lossy
    return out


def _hccn_tool(ctx: ProbeContext, conf: Dict[str, Any]) -> Dict[str, Any]:
    path = ctx.host.which("hccn_tool")
    out: Dict[str, Any] = {"path": path, "error": None, "devices": {}}
    if path is None:
        out["error"] = "hccn_tool not on PATH"
        return out
    if not ctx.host.commands:
        out["error"] = "commands disabled"
        return out
    ids = list((conf.get("devices") or {}).keys())[:MAX_HCCN_DEVICES]
    if not ids:
        ids = [str(i) for i in _dev_nodes(ctx)][:MAX_HCCN_DEVICES]
    timeout = ctx.options.command_timeout
    for dev in ids:
        record: Dict[str, Any] = {"ip": None, "link": None, "commands": []}
        out["devices"][dev] = record
        for op in ("-ip", "-link"):
            res = ctx.host.run(["hccn_tool", "-i", dev, op, "-g"], timeout=ctx.options.remaining(timeout))
            record["commands"].append(res.describe())
            if res.timed_out or res.error:
                out["error"] = res.describe()
                return out
            if res.returncode == 0:
                if op == "-ip":
                    record["ip"] = parse_ip(res.stdout)
                else:
                    record["link"] = parse_link(res.stdout)
    return out


def connect_once(addr: str, port: int, timeout: float) -> Dict[str, Any]:
    """One TCP connect to ``addr:port`` with a hard deadline of ``timeout`` seconds (name
    resolution included: it runs in a daemon thread that is abandoned on timeout).  Returns
    ``{"reachable": bool, "error": str|None, "seconds": float, "timeout": float}``."""
    import socket  # only with --probe-master

    result: Dict[str, Any] = {"reachable": False, "error": None}
    start = time.monotonic()

    def attempt() -> None:
        try:
            sock = socket.create_connection((addr, port), timeout=timeout)
        except OSError as exc:
            result["error"] = exc.strerror or str(exc) or type(exc).__name__
            return
        sock.close()
        result["reachable"] = True

    worker = threading.Thread(target=attempt, name="npudoctor-master-probe", daemon=True)
    worker.start()
    worker.join(timeout + 0.2)
    alive = worker.is_alive()
    if alive or (not result["reachable"] and result["error"] in ("timed out", None)):
        result["reachable"] = False
        result["error"] = f"no answer within {timeout:.1f} s"
    result["seconds"] = round(time.monotonic() - start, 3)
    result["timeout"] = timeout
    return dict(result)


def _master(ctx: ProbeContext) -> Dict[str, Any]:
    addr = (ctx.host.getenv("MASTER_ADDR") or "").strip() or None
    port_raw = (ctx.host.getenv("MASTER_PORT") or "").strip() or None
    port = _int(port_raw)
    out: Dict[str, Any] = {"addr": addr, "port": port, "port_raw": port_raw, "probe": None}
    if ctx.options.probe_master and addr and port is not None and 0 < port < 65536:
        out["probe"] = connect_once(addr, port, ctx.options.remaining(MASTER_TIMEOUT))
    elif ctx.options.probe_master:
        out["probe_skipped"] = "MASTER_ADDR and a valid MASTER_PORT are needed"
    return out


def _whitelist(ctx: ProbeContext) -> Dict[str, Any]:
    path = (ctx.host.getenv("HCCL_WHITELIST_FILE") or "").strip() or None
    return {"file": path, "exists": ctx.host.is_file(path) if path else None}


def probe(ctx: ProbeContext) -> Dict[str, Any]:
    """Gather the ``hccl`` section (see the module docstring).  Never raises for bad input."""
    variables = _variables(ctx)
    local = _local(ctx)
    conf = _hccn_conf(ctx)
    table = _rank_table(ctx)
    facts: Dict[str, Any] = {
        "variables": variables,
        "in_container": _in_container(ctx),
        "dev_nodes": _dev_nodes(ctx),
        "hccn_conf": conf,
        "rank_table": table,
        "local": local,
        "hccn_tool": _hccn_tool(ctx, conf),
        "master": _master(ctx),
        "whitelist": _whitelist(ctx),
    }
    return facts
