"""Typed view of the ``deep`` section (the import probe of ``check --deep``; shape documented
in :mod:`npudoctor.probes.deep`) and of ``_errors`` (probes that raised)."""

from __future__ import annotations

from typing import Dict, Optional, Tuple

from npudoctor.facts._typed import JSON
from npudoctor.facts._view import View, doc, field


class DeepStep(View):
    """One step of the child (import_torch, import_torch_npu, is_available, ...)."""

    name: str = ""
    status: Optional[str] = field(default=None, metadata=doc('"ok" | "failed" | "skipped" | "running"'))
    duration: Optional[float] = field(default=None, metadata=doc("seconds"))
    error_type: Optional[str] = None
    error: Optional[str] = None
    traceback: Optional[str] = None
    value: JSON = field(default=None, metadata=doc("what the step returned (step-specific JSON)"))
    reason: Optional[str] = field(default=None, metadata=doc("why it was skipped"))


class DeepDevice(View):
    """A device the child saw."""

    index: Optional[int] = None
    name: Optional[str] = None
    tensor_op: Optional[str] = field(default=None, metadata=doc('"ok" or the error'))
    synchronize: Optional[str] = field(default=None, metadata=doc('"ok" or the error'))


class DeepSignature(View):
    """A known error signature found in the failure text or stderr."""

    id: Optional[str] = None
    title: Optional[str] = None
    severity: Optional[str] = None
    kinds: Tuple[str, ...] = ()
    captures: Dict[str, str] = field(default_factory=dict)


class DeepFacts(View):
    """torch and torch_npu really imported in a child process, with a deadline."""

    ran: Optional[bool] = field(default=None, metadata=doc("False: not run (see reason); None: not recorded"))
    reason: Optional[str] = field(default=None, metadata=doc("why it was not run (or could not start)"))
    torch_installed: Optional[bool] = field(default=None, metadata=doc("False: not run, no torch to import"))
    interpreter: Optional[str] = None
    timeout: Optional[float] = field(default=None, metadata=doc("the deadline (s)"))
    duration: Optional[float] = field(default=None, metadata=doc("wall time (s)"))
    outcome: Optional[str] = field(
        default=None, metadata=doc('"ok" | "failed" | "crashed" | "timed_out" | "exited" | "not_run" | "error"')
    )
    returncode: Optional[int] = None
    signal: Optional[str] = field(default=None, metadata=doc('"SIGSEGV" when killed by a signal'))
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
    cann: Optional[str] = field(default=None, metadata=doc("torch.version.cann"))
    is_available: Optional[bool] = None
    device_count: Optional[int] = None
    devices: Tuple[DeepDevice, ...] = ()
    signatures: Tuple[DeepSignature, ...] = ()


#: ``_errors``: section → the exception (and a short traceback) of a probe that raised.
ProbeErrors = Dict[str, str]
