"""Host hygiene rules (kinds K21, K22).

Codes ``HOST001``-``HOST049`` belong to this module (``HOST050``+ are the overview's,
``HOST099`` the internal-error code).  Facts read: ``hygiene.disk``,
``hygiene.libgomp`` (npudoctor/probes/hygiene.py), ``packages.installed`` and ``cann``
(to stay quiet on a machine without an NPU stack).
"""

from __future__ import annotations

import posixpath
from typing import Dict, Iterable, List, Optional, Set, Tuple

from npudoctor.context import RuleContext
from npudoctor.facts.hygiene import DiskTarget
from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.remedies import Command, Export, PrependPath, Prose, Remedy
from npudoctor.rules import rule

READS = ("cann", "hygiene", "packages")
ONLY_WITH = ("hygiene",)

LIBGOMP_TLS = codes.get("HOST001")

DISK_LOW = codes.get("HOST002")

NOT_WRITABLE = codes.get("HOST003")

GIB = 1 << 30
ERROR_BELOW = 1 * GIB
WARN_BELOW = 2 * GIB


#: The variable that moves each default place CANN (or any program) writes to, and the
#: folder made for it in a writable directory.  CANN's environment-variable reference
#: (hiascend.com canncommercial 900 maintenref/envvar envref_07_0120, retrieved
#: 2026-12-06): logs go to ASCEND_PROCESS_LOG_PATH, else ASCEND_WORK_PATH, else the
#: default $HOME/ascend/log; envref_07_0006: ASCEND_CACHE_PATH holds the shared compile
#: cache.  Temporary files: TMPDIR (POSIX; Python's tempfile reads it).
_MOVED_BY = {
    "~/ascend": ("ASCEND_PROCESS_LOG_PATH", "ascend-log"),
    "/tmp": ("TMPDIR", "tmp"),
    "ASCEND_CACHE_PATH": ("ASCEND_CACHE_PATH", "ascend-cache"),
    "ASCEND_WORK_PATH": ("ASCEND_WORK_PATH", "ascend-work"),
    "ASCEND_PROCESS_LOG_PATH": ("ASCEND_PROCESS_LOG_PATH", "ascend-log"),
}


def _moved_by(rec: DiskTarget) -> Tuple[str, str]:
    """``(variable, folder name)`` that moves what ``rec`` holds (:data:`_MOVED_BY`)."""
    if rec.variable:
        return _MOVED_BY.get(rec.variable, (rec.variable, "ascend"))
    return _MOVED_BY["/tmp" if rec.path == "/tmp" else "~/ascend"]


def _not_writable(disk: List[DiskTarget]) -> Iterable[Finding]:
    """HOST003: one finding per directory the account cannot write (several places CANN
    writes to under it are one cause), its fix the commands that move each place to a
    directory the facts show writable: the home when it is, else /tmp."""
    denied: Dict[str, List[DiskTarget]] = {}
    for rec in disk:
        if rec.writable is False and rec.path:
            denied.setdefault(str(rec.checked or rec.path), []).append(rec)
    homes = [r for r in disk if not r.variable and r.path != "/tmp" and r.path]
    writable = [posixpath.dirname(str(r.path)) for r in homes if r.writable]
    writable += [str(r.path) for r in disk if r.path == "/tmp" and r.writable]
    for checked, recs in denied.items():
        fix: List[Remedy] = []
        for rec in recs:
            var, folder = _moved_by(rec)
            base = next((w for w in writable if not w.startswith(checked.rstrip("/") + "/") and w != checked), None)
            if base is None:
                fix.append(Prose(f"point {var} at a directory this account can write (neither its home nor /tmp is)"))
                continue
            target = posixpath.join(base, folder)
            if not any(isinstance(f, Export) and f.var == var for f in fix):
                fix += [Command(("mkdir", "-p", target)), Export(var, target)]
        first = recs[0]
        places = ", ".join(f"{r.path} ({r.purpose})" for r in recs)
        yield NOT_WRITABLE.finding(
            title=f"{places} {'is' if len(recs) == 1 else 'are'} not writable for this account",
            evidence=[f"nearest existing directory: {checked} (mode bits deny writing)"]
            + [f"{r.variable}={r.path}" for r in recs if r.variable],
            fix=fix,
            subject=str(first.path),
        )


def _stack(ctx: RuleContext) -> bool:
    return ctx.view.cann.present or ctx.view.packages.torch_npu is not None


def _gib(value: int) -> str:
    return f"{value / GIB:.2f} GiB"


@rule
def libgomp_static_tls(ctx: RuleContext) -> Iterable[Finding]:
    """K21: aarch64 + conda env libgomp.so.1 + LD_PRELOAD without libgomp."""
    gomp = ctx.view.hygiene.libgomp
    if gomp is None or gomp.arch != "aarch64" or not gomp.exists or gomp.preloaded:
        return
    npu = ctx.view.packages.torch_npu
    torch = ctx.view.packages.first("torch")
    if npu is not None:
        what = f"torch_npu {npu.version}"
    elif torch is not None:
        what = f"torch {torch.version}"
    else:
        return
    yield LIBGOMP_TLS.finding(
        title=f"aarch64 conda env with its own libgomp and {what}: preload libgomp to avoid static TLS exhaustion",
        evidence=[
            f"architecture: {gomp.arch}",
            f"conda env: {gomp.conda_prefix} (its lib/ comes first for the env's python)",
            f"{gomp.path} exists",
            f"LD_PRELOAD: {gomp.ld_preload or '(empty)'}",
        ],
        fix=[PrependPath("LD_PRELOAD", (str(gomp.path),)) if gomp.ld_preload else Export("LD_PRELOAD", str(gomp.path))],
        subject=str(gomp.path),
    )


@rule
def cann_disk_space(ctx: RuleContext) -> Iterable[Finding]:
    """K22: free space and writability of CANN's cache/log targets."""
    if not _stack(ctx):
        return
    seen_mounts: Set[Tuple[Optional[str], Optional[str]]] = set()
    disk = list(ctx.view.hygiene.disk)
    yield from _not_writable(disk)
    for rec in disk:
        path = rec.path
        var = rec.variable
        free = rec.free_bytes
        if free is None or free >= WARN_BELOW:
            continue
        key = (rec.mount, rec.checked if rec.mount is None else None)
        if key in seen_mounts:
            continue
        seen_mounts.add(key)
        severity = "error" if free < ERROR_BELOW else "warning"
        total = rec.total_bytes
        evidence = [
            f"{rec.checked}: {_gib(free)} free"
            + (f" of {_gib(total)}" if total else "")
            + (f" on {rec.mount}" if rec.mount else "")
            + f" ({rec.source})",
            f"used for: {rec.purpose}" + (f" via {var}={path}" if var else f" ({path})"),
        ]
        yield DISK_LOW.finding(
            title=f"Only {_gib(free)} free for {rec.purpose} at {path}",
            evidence=evidence,
            fix=[
                f"Free space on {rec.mount or rec.checked}, e.g. by removing old caches ({path}/kernel_meta* "
                "and ~/ascend/log/debug)",
                Command(
                    (
                        "export",
                        "ASCEND_CACHE_PATH=/data/ascend/cache",
                        "ASCEND_WORK_PATH=/data/ascend/work",
                        "ASCEND_PROCESS_LOG_PATH=/data/ascend/log",
                    ),
                    lead="or put CANN's cache, work and log directories on a larger writable disk (/data in this example): ",
                ),
            ],
            severity=severity,
            subject=str(path),
        )
