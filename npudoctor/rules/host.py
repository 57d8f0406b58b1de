"""Host hygiene rules (kinds K21, K22).

Codes ``HOST001``-``HOST049`` belong to this module (``HOST050``+ are the overview's,
``HOST099`` the internal-error code).  Facts read: ``hygiene.disk``,
``hygiene.libgomp`` (npudoctor/probes/hygiene.py), ``packages.installed`` and ``cann``
(to stay quiet on a machine without an NPU stack).
"""

from __future__ import annotations

from typing import Any, Iterable

from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.rules import rule
from npudoctor.rules._pyfacts import cann_present, first, section

LIBGOMP_TLS = codes.get("HOST001")

DISK_LOW = codes.get("HOST002")

NOT_WRITABLE = codes.get("HOST003")

GIB = 1 << 30
ERROR_BELOW = 1 * GIB
WARN_BELOW = 2 * GIB


def _stack(ctx: Any) -> bool:
    return cann_present(ctx) or first(ctx, "torch-npu") is not None


def _gib(value: int) -> str:
    return f"{value / GIB:.2f} GiB"


@rule
def libgomp_static_tls(ctx: Any) -> Iterable[Finding]:
    """K21: aarch64 + conda env libgomp.so.1 + LD_PRELOAD without libgomp."""
    gomp = section(ctx, "hygiene").get("libgomp") or {}
    if not isinstance(gomp, dict) or gomp.get("arch") != "aarch64" or not gomp.get("exists") or gomp.get("preloaded"):
        return
    npu = first(ctx, "torch-npu")
    torch = first(ctx, "torch")
    if npu is None and torch is None:
        return
    what = f"torch_npu {npu.get('version')}" if npu else f"torch {torch.get('version')}"
    yield LIBGOMP_TLS.finding(
        title=f"aarch64 conda env with its own libgomp and {what}: preload libgomp to avoid static TLS exhaustion",
        evidence=[
            f"architecture: {gomp.get('arch')}",
            f"conda env: {gomp.get('conda_prefix')} (its lib/ comes first for the env's python)",
            f"{gomp.get('path')} exists",
            f"LD_PRELOAD: {gomp.get('ld_preload') or '(empty)'}",
        ],
        fix=[f"export LD_PRELOAD={gomp.get('path')}{':$LD_PRELOAD' if gomp.get('ld_preload') else ''}"],
        subject=str(gomp.get("path")),
    )


@rule
def cann_disk_space(ctx: Any) -> Iterable[Finding]:
    """K22: free space and writability of CANN's cache/log targets."""
    if not _stack(ctx):
        return
    disk = section(ctx, "hygiene").get("disk") or []
    seen_mounts = set()
    for rec in disk:
        if not isinstance(rec, dict):
            continue
        path = rec.get("path")
        var = rec.get("variable")
        if rec.get("writable") is False:
            fix_var = var or "ASCEND_CACHE_PATH"
            yield NOT_WRITABLE.finding(
                title=f"{path} ({rec.get('purpose')}) is not writable for this account",
                evidence=[f"nearest existing directory: {rec.get('checked')} (mode bits deny writing)"]
                + ([f"{var}={path}"] if var else []),
                fix=[f"mkdir -p $HOME/ascend-cache && export {fix_var}=$HOME/ascend-cache"],
                subject=str(path),
            )
        free = rec.get("free_bytes")
        if not isinstance(free, int) or free >= WARN_BELOW:
            continue
        key = (rec.get("mount"), rec.get("checked") if rec.get("mount") is None else None)
        if key in seen_mounts:
            continue
        seen_mounts.add(key)
        severity = "error" if free < ERROR_BELOW else "warning"
        total = rec.get("total_bytes")
        evidence = [
            f"{rec.get('checked')}: {_gib(free)} free"
            + (f" of {_gib(total)}" if isinstance(total, int) and total else "")
            + (f" on {rec.get('mount')}" if rec.get("mount") else "")
            + f" ({rec.get('source')})",
            f"used for: {rec.get('purpose')}" + (f" via {var}={path}" if var else f" ({path})"),
        ]
        yield DISK_LOW.finding(
            title=f"Only {_gib(free)} free for {rec.get('purpose')} at {path}",
            evidence=evidence,
            fix=[
                f"free space on {rec.get('mount') or rec.get('checked')} (e.g. old caches: rm -rf {path}/kernel_meta* ~/ascend/log/debug)",
                "or: export ASCEND_CACHE_PATH=/data/ascend/cache ASCEND_WORK_PATH=/data/ascend/work ASCEND_PROCESS_LOG_PATH=/data/ascend/log   # a larger writable disk",
            ],
            severity=severity,
            subject=str(path),
        )
