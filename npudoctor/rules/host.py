"""Host hygiene rules (kinds K21, K22).

Codes ``HOST001``-``HOST049`` belong to this module (``HOST050``+ are the overview's,
``HOST099`` the internal-error code).  Facts read: ``hygiene.disk``,
``hygiene.libgomp`` (npudoctor/probes/hygiene.py), ``packages.installed`` and ``cann``
(to stay quiet on a machine without an NPU stack).
"""

from __future__ import annotations

from typing import Any, Iterable

from npudoctor.findings import Code, Finding
from npudoctor.rules import rule
from npudoctor.rules._pyfacts import cann_present, first, section

LIBGOMP_TLS = Code(
    "HOST001",
    "conda-libgomp-static-tls",
    area="host",
    severity="warning",
    title="aarch64 conda env: libgomp may fail with 'cannot allocate memory in static TLS block'",
    explain=(
        "On aarch64 the space for static thread-local storage is small. A conda/mamba env ships its "
        "own `lib/libgomp.so.1`, which the env's python finds first; when it is loaded late (by "
        "`torch_npu._C` after many other libraries) the loader fails with `libgomp.so.1: cannot "
        "allocate memory in static TLS block` at `import torch_npu` or `import torch`. Preloading it "
        "makes it take its TLS block first. Fix: `export LD_PRELOAD=<env>/lib/libgomp.so.1` (the path "
        "named in the error), or recreate the env installing torch and torch-npu with pip."
    ),
    kinds=("K21",),
)

DISK_LOW = Code(
    "HOST002",
    "cann-cache-disk-full",
    area="host",
    severity="error",
    title="Little free space where CANN writes its caches and logs",
    explain=(
        "CANN writes operator compile caches, kernel meta and logs under `~/ascend` (and /tmp) unless "
        "ASCEND_CACHE_PATH / ASCEND_WORK_PATH / ASCEND_PROCESS_LOG_PATH point elsewhere. On a full disk "
        "TBE initialisation fails with `[Errno 28] No space left on device` deep inside its logs, then "
        "`TbeInitialize failed` -- the first error shown rarely mentions the disk. npudoctor reports an "
        "error below 1 GiB free and a warning below 2 GiB. Fix: free space, or point the variables at a "
        "larger writable disk, e.g. `export ASCEND_CACHE_PATH=/data/ascend/cache "
        "ASCEND_PROCESS_LOG_PATH=/data/ascend/log`."
    ),
    kinds=("K22",),
)

NOT_WRITABLE = Code(
    "HOST003",
    "cann-cache-dir-not-writable",
    area="host",
    severity="error",
    title="The account cannot write where CANN puts its caches and logs",
    explain=(
        "CANN creates its cache and log directories on first use; when the account running the job "
        "cannot write there (a read-only home, a shared directory owned by another user, a container "
        "running as an arbitrary UID), initialisation fails with permission errors or the same "
        "`TbeInitialize failed`. Fix: point ASCEND_CACHE_PATH / ASCEND_WORK_PATH / "
        "ASCEND_PROCESS_LOG_PATH at a directory this account owns, or fix the owner/mode."
    ),
    kinds=("K22",),
)

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
