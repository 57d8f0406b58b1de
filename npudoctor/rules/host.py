"""Host hygiene rules (kinds K21, K22).

Codes ``HOST001``-``HOST049`` belong to this module (``HOST050``+ are the overview's,
``HOST099`` the internal-error code).  Facts read: ``hygiene.disk``,
``hygiene.libgomp`` (npudoctor/probes/hygiene.py), ``packages.installed`` and ``cann``
(to stay quiet on a machine without an NPU stack).
"""

from __future__ import annotations

from typing import Iterable, Optional, Set, Tuple

from npudoctor.engine import RuleContext
from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.remedies import Export, PrependPath
from npudoctor.rules import rule
from npudoctor.rules._pyfacts import cann_present

READS = ("cann", "hygiene", "packages")
ONLY_WITH = ("hygiene",)

LIBGOMP_TLS = codes.get("HOST001")

DISK_LOW = codes.get("HOST002")

NOT_WRITABLE = codes.get("HOST003")

GIB = 1 << 30
ERROR_BELOW = 1 * GIB
WARN_BELOW = 2 * GIB


def _stack(ctx: RuleContext) -> bool:
    return cann_present(ctx) or ctx.view.packages.torch_npu is not None


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
    for rec in ctx.view.hygiene.disk:
        path = rec.path
        var = rec.variable
        if rec.writable is False:
            fix_var = var or "ASCEND_CACHE_PATH"
            yield NOT_WRITABLE.finding(
                title=f"{path} ({rec.purpose}) is not writable for this account",
                evidence=[f"nearest existing directory: {rec.checked} (mode bits deny writing)"]
                + ([f"{var}={path}"] if var else []),
                fix=[f"mkdir -p $HOME/ascend-cache && export {fix_var}=$HOME/ascend-cache"],
                subject=str(path),
            )
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
                f"free space on {rec.mount or rec.checked} (e.g. old caches: rm -rf {path}/kernel_meta* ~/ascend/log/debug)",
                "or: export ASCEND_CACHE_PATH=/data/ascend/cache ASCEND_WORK_PATH=/data/ascend/work ASCEND_PROCESS_LOG_PATH=/data/ascend/log   # a larger writable disk",
            ],
            severity=severity,
            subject=str(path),
        )
