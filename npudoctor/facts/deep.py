"""Typed view of the ``deep`` section (the import probe of ``check --deep``; shape documented
in :mod:`npudoctor.probes.deep`) and of ``_errors`` (probes that raised)."""

from __future__ import annotations

from typing import Dict, Optional, Tuple

from npudoctor.facts._typed import JSON
from npudoctor.facts._view import View, field


class DeepStep(View):
    """One step of the child (import_torch, import_torch_npu, is_available, ...)."""

    name: str = ""
    status: Optional[str] = None
    '"ok" | "failed" | "skipped" | "running"'
    duration: Optional[float] = None
    """seconds"""
    error_type: Optional[str] = None
    error: Optional[str] = None
    traceback: Optional[str] = None
    value: JSON = None
    """what the step returned (step-specific JSON)"""
    reason: Optional[str] = None
    """why it was skipped"""


class DeepDevice(View):
    """A device the child saw."""

    index: Optional[int] = None
    name: Optional[str] = None
    tensor_op: Optional[str] = None
    """"ok" or the error"""
    synchronize: Optional[str] = None
    """"ok" or the error"""


class DeepSignature(View):
    """A known error signature found in the failure text or stderr."""

    id: Optional[str] = None
    title: Optional[str] = None
    severity: Optional[str] = None
    kinds: Tuple[str, ...] = ()
    captures: Dict[str, str] = field(default_factory=dict)


class DeepFacts(View):
    """torch and torch_npu really imported in a child process, with a deadline."""

    ran: Optional[bool] = None
    """False: not run (see reason); None: not recorded"""
    reason: Optional[str] = None
    """why it was not run (or could not start)"""
    torch_installed: Optional[bool] = None
    """False: not run, no torch to import"""
    interpreter: Optional[str] = None
    timeout: Optional[float] = None
    """the deadline (s)"""
    duration: Optional[float] = None
    """wall time (s)"""
    outcome: Optional[str] = None
    '"ok" | "failed" | "crashed" | "timed_out" | "exited" | "not_run" | "error"'
    returncode: Optional[int] = None
    signal: Optional[str] = None
    """"SIGSEGV" when killed by a signal"""
    hung_step: Optional[str] = None
    crashed_step: Optional[str] = None
    steps: Tuple[DeepStep, ...] = ()
    failed_step: Optional[str] = None
    error: Optional[str] = None
    stderr_head: Optional[str] = None
    stderr_tail: Optional[str] = None
    stderr_bytes: Optional[int] = None
    stdout_bytes: Optional[int] = None
    stdout_text: Optional[str] = None
    output_truncated: Optional[bool] = None
    torch_version: Optional[str] = None
    torch_npu_version: Optional[str] = None
    cann: Optional[str] = None
    """torch.version.cann"""
    is_available: Optional[bool] = None
    device_count: Optional[int] = None
    devices: Tuple[DeepDevice, ...] = ()
    signatures: Tuple[DeepSignature, ...] = ()


#: ``_errors``: section → the exception (and a short traceback) of a probe that raised.
ProbeErrors = Dict[str, str]
