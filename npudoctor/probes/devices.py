"""Devices: ``npu-smi`` (chips, health, memory, processes, topology), the device nodes
and their permissions, and the visible-device variables.

Section ``devices``::

    npu_smi     {"path": str|None (found on PATH), "searched": [dirs] (the diagnosed
                 environment's PATH entries, in order; [] when PATH is unset or empty),
                 "available": bool (the table parsed),
                 "error": str|None (how the command failed, human), "cause": None |
                 "not-installed" | "hung" (no answer within facts.coverage.HANG_AFTER) | "cut-short" (stopped
                 by the time budget before HANG_AFTER: unknown, not a hang) | "dcmi" (a DCMI
                 return code, see "code") |
                 "permission" | "driver" (could not be started) | "disabled" | "unparsed",
                 "code": int|None (DCMI return code, -8005/-8020…: what it means is
                 judged by rules/devices.py; older snapshots say "busy"/"driver" here),
                 "message": str|None (the npu-smi error line), "version": tool version,
                 "driver_version": the header "Version:", "layout": "910"|"310"|None,
                 "truncated": bool, "commands": [{"argv", "returncode", "timed_out",
                 "error", "duration", "parsed"}], "raw": first 64 KiB of `npu-smi info`}
    chips       [one record per chip, see npudoctor.parsers.npu_smi.parse_info, plus
                 "soc_version" (measured: A3 boards only, else None) with "soc_source",
                 and, for unhealthy chips, "health_detail" {"status", "error_codes",
                 "information"} from `-t health`]
    processes   [{"npu_id", "chip_id", "pid", "name", "memory_mb", "container_pid"}]
    idle_npus   [npu ids that npu-smi says run no process]
    topology    parse_topo() result of `npu-smi info -t topo`, or None
    nodes_error why the device nodes could not be looked at (absent: they could): /dev
                 refused, or a --root tree that holds no /dev at all (a capture of a
                 host's files made without its device nodes: their absence is unknown)
    nodes       [{"path", "exists", "kind": "chip"|"control", "char_device", "uid", "gid",
                 "owner", "group", "mode": "0660", "accessible_by_identity": bool|None}]
    visibility  {"ASCEND_RT_VISIBLE_DEVICES": str|None, "ASCEND_VISIBLE_DEVICES": …,
                 "ASCEND_DEVICE_ID": …, "CUDA_VISIBLE_DEVICES": …,
                 "ASCEND_RUNTIME_OPTIONS": …,
                 "RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES": …, "NPU_VISIBLE_DEVICES": …,
                 "HIP_VISIBLE_DEVICES": …, "ROCR_VISIBLE_DEVICES": …}  (raw values, "" when
                 set but empty; rules validate them)
    ray         [names of the RAY_* variables set: this process was started by Ray]
    visible_count  chips npu-smi lists, else the number of /dev/davinciN nodes, else None
    identity    the judged account (copied from facts["host"]["identity"])

What a chip *is* (family, bf16, kernels folder, SoC name) is knowledge, not a fact: the
rules look it up in the matrix on every run (:func:`npudoctor.knowledge.chips.chip_identity`),
so this probe never loads the matrix, and the ``family``/``bf16``/``kernels_dir`` (and
matrix-sourced ``soc_version``) that older snapshots carry are ignored.  A3 chips (Name
``Ascend910`` with a Phy-ID column) get a measured soc_version from ``npu-smi info -t board
-i N -c C`` (Chip Name + "_" + NPU Name, the ATC ``--soc_version`` documentation).

npu-smi commands run one at a time through ``ctx.host.run`` with the overall deadline
(``ctx.options.remaining``); once one times out no further npu-smi command runs.
"""

from __future__ import annotations

import contextlib
import os
import stat as stat_mod
import time
from typing import TYPE_CHECKING

from npudoctor import lazyre
from npudoctor.context import ProbeContext
from npudoctor.facts.coverage import HANG_AFTER
from npudoctor.parsers.accounts import parse_group, parse_passwd
from npudoctor.parsers.npu_smi import (
    merge_mapping,
    parse_board,
    parse_error,
    parse_health,
    parse_info,
    parse_mapping,
)
from npudoctor.parsers.numbers import to_int
from npudoctor.parsers.topo import parse_topo

if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional

SECTION = "devices"
NEEDS = ("host",)
SLOW = True
QUICK = True

#: Control nodes every NPU process needs besides /dev/davinciN (Ascend docs, the
#: standard `docker run` of vllm-ascend: tests/fixtures/docker-run_vllm-ascend_standard-device-mounts.sh.txt).
CONTROL_NODES = ("/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc")

#: ``nodes_error`` of a ``--root`` tree without /dev: nothing is known of its device nodes.
NO_DEV = "device nodes not judged: the tree holds no /dev"

VISIBILITY_VARS = (
    "ASCEND_RT_VISIBLE_DEVICES",
    "ASCEND_VISIBLE_DEVICES",
    "ASCEND_DEVICE_ID",
    "CUDA_VISIBLE_DEVICES",
    "ASCEND_RUNTIME_OPTIONS",
    "RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES",
    # look-alikes nothing on Ascend reads (rules/visibility.py says so)
    "NPU_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
)

#: Most RAY_* variable names recorded as signs that Ray launched this process (names only).
RAY_MARKERS_LIMIT = 20


def _ray_markers(ctx: ProbeContext) -> List[str]:
    """Names of the ``RAY_*`` variables set in the diagnosed environment, sorted.

    Ray's NPU accelerator manager (ray/_private/accelerators/npu.py) rewrites
    ASCEND_RT_VISIBLE_DEVICES for every worker it starts, to the NPU ids the task was given
    (an empty string when it was given none) unless
    RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES is set; its processes carry RAY_*
    variables.  Only names are kept (values may hold addresses)."""
    environ = getattr(ctx.host, "environ", None) or {}
    return sorted(name for name in environ if name.startswith("RAY_"))[:RAY_MARKERS_LIMIT]


RAW_LIMIT = 64 * 1024
_DAVINCI_RE = lazyre.pattern(r"^davinci([0-9]{1,18})$")


def _record(result: Any, parsed: bool) -> Dict[str, Any]:
    return {
        "argv": list(result.argv),
        "returncode": result.returncode,
        "timed_out": bool(result.timed_out),
        "error": result.error,
        "duration": round(result.duration, 3),
        "parsed": parsed,
        "cpu_s": result.cpu_s,
        "state": result.state,
        "cpu_pressure": result.cpu_pressure,
    }


class _Runner:
    """Runs npu-smi sub-commands one at a time; stops for good after a timeout."""

    def __init__(self, ctx: ProbeContext, exe: str) -> None:
        self.ctx = ctx
        self.exe = exe
        self.commands: List[Dict[str, Any]] = []
        self.hung = False
        #: The deadline the last command was given (seconds).
        self.allowed = 0.0

    def run(self, *args: str) -> Any:
        deadline = self.ctx.options.deadline
        if self.hung or (deadline is not None and time.monotonic() >= deadline and self.commands):
            self.hung = True  # the overall deadline of the npudoctor command has passed
            return None
        timeout = self.ctx.options.remaining(self.ctx.options.command_timeout)
        self.allowed = timeout
        result = self.ctx.host.run([self.exe, *args], timeout=timeout)
        if result.timed_out:
            self.hung = True
        return result


def start(ctx: ProbeContext) -> None:
    """Begin ``npu-smi info`` (:meth:`npudoctor.host.Host.start`), the probe's first and
    slowest command, while the probes before this one read files; :func:`probe` collects
    it.  Nothing starts with commands disabled or without ``npu-smi`` on ``PATH``."""
    host = ctx.host
    exe = host.which("npu-smi") if host.commands else None
    if exe is not None:
        host.start([exe, "info"])


def _not_executable(host: Any, name: str) -> Optional[str]:
    """The first ``name`` on the absolute ``PATH`` entries that exists but may not be run
    by this process (no execute permission), or ``None``."""
    for directory in host.env_paths("PATH"):
        candidate = os.path.join(directory, name)
        if os.path.isabs(directory) and os.path.isfile(candidate) and not os.access(candidate, os.X_OK):
            return candidate
    return None


def _npu_smi(ctx: ProbeContext, out: Dict[str, Any]) -> None:
    host = ctx.host
    smi: Dict[str, Any] = out["npu_smi"]
    exe = host.which("npu-smi")
    smi["path"] = exe
    smi["searched"] = host.env_paths("PATH")
    if not host.commands:
        smi.update(error="commands disabled (--no-commands)", cause="disabled")
        return
    if exe is None:
        blocked = _not_executable(host, "npu-smi")
        if blocked is not None:  # there, but this user may not run it: not "not installed"
            smi.update(path=blocked, error=f"{blocked} is not executable by this user", cause="permission")
            return
        smi.update(error="npu-smi: command not found on PATH", cause="not-installed")
        return
    runner = _Runner(ctx, exe)
    res = runner.run("info")
    text = (res.stdout or "") + ("\n" + res.stderr if res.stderr else "")
    killed = res.timed_out or res.overflow or bool(res.signal)  # what it printed is partial: never judged
    info = parse_info("" if killed else (res.stdout or ""))
    runner.commands.append(_record(res, bool(info["chips"])))
    smi["raw"] = (res.stdout or "")[:RAW_LIMIT]
    # hung: given the whole threshold and no answer; stopped earlier (a shorter budget): cut short
    if res.timed_out and max(res.duration, runner.allowed) < HANG_AFTER:
        smi.update(
            error=f"`npu-smi info` was stopped by the time budget after {res.duration:.1f} s, before it answered "
            f"(a hang is {HANG_AFTER:g} s without an answer)",
            cause="cut-short",
        )
    elif res.timed_out:
        smi.update(error=f"`npu-smi info` did not answer within {res.duration:.1f} s (killed)", cause="hung")
    elif res.signal:
        # a crash is a fact: the table it printed before dying is not believed
        lines = len((res.stdout or "").splitlines())
        smi.update(
            error=f"npu-smi was killed by {res.signal} after printing {lines} line{'s' if lines != 1 else ''}",
            cause="crashed",
            signal=res.signal,
        )
        info = parse_info("")
    elif res.error:
        smi.update(
            error=f"`npu-smi info`: {res.error}", cause="not-installed" if "not found" in res.error else "driver"
        )
    for key in ("version", "driver_version", "layout", "truncated"):
        smi[key] = info.get(key)
    if info["chips"]:
        smi["available"] = True
        out["chips"] = info["chips"]
        out["processes"] = info["processes"]
        out["idle_npus"] = info["idle_npus"]
    elif not res.timed_out and not res.error and not res.signal:
        err = parse_error(text)
        if err is not None:
            smi.update(error=err["message"], cause=err["cause"], code=err["code"], message=err["message"])
        else:
            first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
            smi.update(
                error=f"`npu-smi info` exit {res.returncode}, no device table" + (f": {first[:200]}" if first else ""),
                cause="unparsed",
            )
    if smi.get("available"):
        _details(ctx, runner, out)
    smi["commands"] = runner.commands


def _details(ctx: ProbeContext, runner: _Runner, out: Dict[str, Any]) -> None:
    """The npu-smi calls after ``info``: ``-t health`` of chips that are not OK, and --
    except in the health check's quick mode, where each npu-smi call (hundreds of
    milliseconds on a real box) counts against a 1 s budget -- ``-m`` (logic/phy ids),
    ``-t topo`` and, on A3, ``-t board`` (soc_version)."""
    chips: List[Dict[str, Any]] = out["chips"]
    quick = bool(getattr(ctx.options, "quick", False))
    res = None if quick else runner.run("info", "-m")
    if res is not None:
        mapping = parse_mapping(res.stdout or "") if res.ok else []
        runner.commands.append(_record(res, bool(mapping)))
        merge_mapping(chips, mapping)
    res = None if quick else runner.run("info", "-t", "topo")
    if res is not None:
        topo = parse_topo(res.stdout or "") if res.ok else None
        runner.commands.append(_record(res, bool(topo and topo["npus"])))
        out["topology"] = topo if topo and topo["npus"] else None
    for chip in chips:
        if str(chip.get("health", "")).upper() in ("OK", "") or chip.get("chip_id") is None:
            continue
        res = runner.run("info", "-t", "health", "-i", str(chip["npu_id"]), "-c", str(chip["chip_id"]))
        if res is None:
            break
        detail = parse_health(res.stdout or "") if res.ok else None
        runner.commands.append(_record(res, bool(detail and detail["status"])))
        if detail and detail["status"]:
            chip["health_detail"] = detail
    a3 = [c for c in chips if c.get("phy_id") is not None and c.get("chip_id") is not None]
    if a3 and not quick:
        res = runner.run("info", "-t", "board", "-i", str(a3[0]["npu_id"]), "-c", str(a3[0]["chip_id"]))
        if res is not None:
            board = parse_board(res.stdout or "") if res.ok else None
            runner.commands.append(_record(res, bool(board and board["soc_version"])))
            soc = board["soc_version"] if board else None
            if soc:
                for chip in a3:
                    if chip.get("name") == a3[0].get("name"):
                        chip["soc_version"] = soc
                        chip["soc_source"] = "npu-smi info -t board (Chip Name + NPU Name)"


def _accounts(ctx: ProbeContext) -> Any:
    passwd = {e["uid"]: e["name"] for e in parse_passwd(ctx.host.read_text("/etc/passwd").text or "")}
    groups = {g["gid"]: g["name"] for g in parse_group(ctx.host.read_text("/etc/group").text or "")}
    return passwd, groups


def can_access(identity: Dict[str, Any], uid: int, gid: int, mode: int) -> Optional[bool]:
    """Whether ``identity`` ({"uid", "gid", "groups"}) may read and write a node owned
    by ``uid:gid`` with permission bits ``mode`` (POSIX owner/group/other classes; root
    always may).  None when the identity is unknown."""
    try:
        me = int(identity["uid"])
    except (KeyError, TypeError, ValueError):
        return None
    if me == 0:
        return True
    groups = {n for n in (to_int(str(g)) for g in identity.get("groups") or []) if n is not None}
    gid_of_identity: Any = identity.get("gid")  # JSON: an int, a numeric string or absent
    with contextlib.suppress(TypeError, ValueError):
        groups.add(int(gid_of_identity))
    if me == uid:
        return mode & 0o600 == 0o600
    if gid in groups:
        return mode & 0o060 == 0o060
    return mode & 0o006 == 0o006


def _nodes(ctx: ProbeContext, identity: Dict[str, Any], want_control: bool) -> List[Dict[str, Any]]:
    """Device nodes with owner/mode.  Missing control nodes are listed (exists False)
    only when some NPU node exists or npu-smi saw chips (``want_control``): on a plain
    machine the list stays empty."""
    host = ctx.host
    chip_nodes = sorted(
        (p for p in host.glob("/dev", prefix="davinci") if _DAVINCI_RE.match(p.rsplit("/", 1)[-1])),
        key=lambda p: int(_DAVINCI_RE.match(p.rsplit("/", 1)[-1]).group(1)),  # type: ignore[union-attr]
    )
    passwd, groups = _accounts(ctx)
    out: List[Dict[str, Any]] = []
    control = [p for p in CONTROL_NODES if host.exists(p)]
    if chip_nodes or control or want_control:
        control = list(CONTROL_NODES)
    for path, kind in [(p, "chip") for p in chip_nodes] + [(p, "control") for p in control]:
        st = host.stat(path)
        rec: Dict[str, Any] = {"path": path, "kind": kind, "exists": st is not None}
        if st is not None:
            rec.update(
                char_device=stat_mod.S_ISCHR(st.st_mode),
                uid=st.st_uid,
                gid=st.st_gid,
                owner=passwd.get(st.st_uid),
                group=groups.get(st.st_gid),
                mode=f"{stat_mod.S_IMODE(st.st_mode):04o}",
                accessible_by_identity=can_access(identity, st.st_uid, st.st_gid, stat_mod.S_IMODE(st.st_mode)),
            )
            if rec["char_device"]:
                rec["rdev"] = [int(st.st_rdev >> 8) & 0xFFF, int(st.st_rdev & 0xFF)]
        out.append(rec)
    return out


def probe(ctx: ProbeContext) -> Dict[str, Any]:
    host_facts = ctx.facts.get("host") if isinstance(ctx.facts.get("host"), dict) else {}
    identity = dict((host_facts or {}).get("identity") or {})
    out: Dict[str, Any] = {
        "npu_smi": {
            "path": None,
            "searched": [],
            "available": False,
            "error": None,
            "cause": None,
            "code": None,
            "message": None,
            "version": None,
            "driver_version": None,
            "layout": None,
            "truncated": False,
            "commands": [],
        },
        "chips": [],
        "processes": [],
        "idle_npus": [],
        "topology": None,
        "nodes": [],
        "visibility": {name: ctx.host.getenv(name) for name in VISIBILITY_VARS},
        "ray": _ray_markers(ctx),
        "visible_count": None,
        "identity": identity,
    }
    _npu_smi(ctx, out)
    for chip in out["chips"]:
        chip.setdefault("soc_version", None)
    denied = len(ctx.host.denied)
    # every live system and every container has a /dev: a tree without one was captured
    # without its device nodes, and says nothing about them
    has_dev = ctx.host.live or ctx.host.is_dir("/dev")
    out["nodes"] = _nodes(ctx, identity, bool(out["chips"])) if has_dev else []
    if len(ctx.host.denied) > denied:  # refused is not absent: no node is judged missing
        out["nodes_error"] = "cannot look at /dev: permission denied (" + ", ".join(sorted(ctx.host.denied)) + ")"
    elif not has_dev:
        out["nodes_error"] = NO_DEV
    chip_nodes = [n for n in out["nodes"] if n["kind"] == "chip" and n["exists"]]
    if out["chips"]:
        out["visible_count"] = len(out["chips"])
    elif chip_nodes:
        out["visible_count"] = len(chip_nodes)
    return out
