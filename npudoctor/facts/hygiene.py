"""Typed views of the ``hygiene`` section (shape documented in
``npudoctor/probes/hygiene.py``): free space where CANN writes, and aarch64 conda's libgomp."""

from __future__ import annotations

from typing import Optional, Tuple

from npudoctor.facts._view import View


class DiskTarget(View):
    """Free space where CANN writes caches and logs."""

    purpose: Optional[str] = None
    path: Optional[str] = None
    variable: Optional[str] = None
    checked: Optional[str] = None
    exists: Optional[bool] = None
    writable: Optional[bool] = None
    free_bytes: Optional[int] = None
    total_bytes: Optional[int] = None
    mount: Optional[str] = None
    source: Optional[str] = None
    error: Optional[str] = None


class Libgomp(View):
    """aarch64 conda libgomp (static TLS) facts."""

    arch: Optional[str] = None
    conda_prefix: Optional[str] = None
    path: Optional[str] = None
    exists: bool = False
    ld_preload: str = ""
    preloaded: bool = False


class HygieneFacts(View):
    disk: Tuple[DiskTarget, ...] = ()
    libgomp: Optional[Libgomp] = None
