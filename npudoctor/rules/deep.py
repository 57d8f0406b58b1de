"""Deep-probe findings (``DEEP…``) and their cross-reference with the static findings.

Reads ``facts["deep"]`` (npudoctor/probes/deep.py).  One finding per outcome: a failed
step, a crash (signal), a hang (deadline), an early exit, "NPU not available", or the
probe passing.  The post-processor :func:`cross_reference` then looks for static
findings that explain a deep failure -- the causes that ``npudoctor/knowledge/signatures.toml``
lists for the failure's signature, confirmed by the other findings (their codes)
-- and, when there are some, adds "deep probe: …" to their
``confirmed_by`` and turns the deep finding into an info line pointing at them, instead
of repeating the problem as a second error.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, TypedDict

from npudoctor.context import RuleContext
from npudoctor.facts.deep import DeepFacts, DeepStep
from npudoctor.findings import AREAS, Finding
from npudoctor.knowledge import codes
from npudoctor.knowledge.grades import Grade, Verdict, severity
from npudoctor.remedies import Command
from npudoctor.rules import postprocess, rule

READS = ("deep",)
#: :func:`cross_reference` attaches a deep failure to the static findings of every other
#: area (``confirmed_by``) and names them in the deep finding's title.
FOLDS = {area: (("deep",) if area != "deep" else tuple(a for a in AREAS if a != "deep")) for area in AREAS}
ONLY_WITH = ("deep",)

_STEP_TEXT = {
    "import_torch": "import torch",
    "import_torch_npu": "import torch_npu",
    "is_available": "torch.npu.is_available()",
    "device_count": "torch.npu.device_count()",
    "tensor_op": "a tensor operation on the NPU",
    "synchronize": "torch.npu.synchronize()",
}

IMPORT_TORCH = codes.get("DEEP001")
IMPORT_NPU = codes.get("DEEP002")
NOT_AVAILABLE = codes.get("DEEP003")
DEVICE_OP = codes.get("DEEP004")
CRASHED = codes.get("DEEP005")
HUNG = codes.get("DEEP006")
NOT_RUN = codes.get("DEEP007")
PASSED = codes.get("DEEP008")
EXITED = codes.get("DEEP009")

#: Deep findings that describe a failure (candidates for cross-referencing).
FAILURE_CODES = ("DEEP001", "DEEP002", "DEEP003", "DEEP004", "DEEP005", "DEEP006", "DEEP009")


def _first_line(text: Optional[str], limit: int = 300) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()[:limit]
    return ""


def _last_lines(text: str, n: int = 6) -> List[str]:
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    return [ln[:300] for ln in lines[-n:]]


def _root_error(step: DeepStep) -> str:
    """The deepest exception of a step's traceback (the ImportError under a RuntimeError)."""
    tb = step.traceback or ""
    lines = [ln for ln in tb.splitlines() if ln and not ln.startswith((" ", "Traceback", "During", "The above"))]
    return lines[0].strip()[:400] if lines else f"{step.error_type}: {_first_line(step.error)}"


class Signature(TypedDict):
    """A known signature found in the deep probe's failure text."""

    id: str
    title: str
    kinds: List[str]
    captures: Dict[str, str]


def _present(ctx: RuleContext) -> bool:
    """Whether the deep probe left a (non-empty) record."""
    return ctx.view.state("deep") != "absent" and ctx.view.deep != DeepFacts()


def deep_signatures(deep: DeepFacts) -> List[Signature]:
    """The known signatures (``npudoctor/knowledge/signatures.toml``) in the deep probe's
    failure text -- the first failed step's error and traceback -- and the stderr it kept
    (head and tail), as ``[{"id", "title", "kinds", "captures"}]`` in the knowledge base's
    order; entries graded ``noise`` are left out.  Judged on every run from the stored
    text, so a replayed snapshot is matched against the current knowledge base (the
    ``signatures`` older snapshots carry are ignored).  ``[]`` when the knowledge base
    cannot be loaded."""
    try:
        from npudoctor.knowledge.signatures import load_kb

        kb = load_kb()
    except Exception:  # the KB is packaged; a broken one must not cost the deep findings
        return []
    failed = next((s for s in deep.steps if s.status == "failed"), None)
    parts = [
        failed.error if failed else None,
        failed.traceback if failed else None,
        deep.stderr_head,
        deep.stderr_tail,
    ]
    text = "\n".join(str(p) for p in parts if p)
    out: List[Signature] = []
    for entry, caps in kb.classify(text):
        if entry.severity == "noise":
            continue
        out.append({"id": entry.id, "title": entry.title, "kinds": list(entry.kinds), "captures": caps})
    return out


def _signature_lines(deep: DeepFacts) -> List[str]:
    out = []
    for sig in deep_signatures(deep):
        caps = ", ".join(f"{k}={v}" for k, v in sorted(sig["captures"].items()))
        out.append(f"known signature {sig['id']}: {sig['title']}" + (f" ({caps})" if caps else ""))
    return out


def _kb_fix(deep: DeepFacts) -> List[str]:
    try:
        from npudoctor.knowledge.signatures import fill, load_kb

        kb = load_kb()
    except Exception:
        return []
    for sig in deep_signatures(deep):
        entry = kb.by_id(sig["id"])
        if entry is not None and entry.fix:
            return [fill(f, sig["captures"]) for f in entry.fix]
    return []


def _common(deep: DeepFacts) -> List[str]:
    ev = [f"interpreter: {deep.interpreter}"]
    done = [
        f"{_STEP_TEXT.get(s.name, s.name)}: {s.status} ({s.duration or 0:.2f} s)"
        for s in deep.steps
        if s.status in ("ok", "failed")
    ]
    if done:
        ev.append("steps: " + "; ".join(done))
    if (deep.stderr_bytes or 0) > 1 << 20:
        ev.append(f"the child printed {deep.stderr_bytes} bytes to stderr (head and tail kept)")
    return ev


@rule
def deep_outcome(ctx: RuleContext) -> Iterable[Finding]:
    """One finding for the deep probe's outcome (nothing when it did not run at all)."""
    if not _present(ctx):
        return
    deep = ctx.view.deep
    outcome = deep.outcome
    steps = {s.name: s for s in deep.steps}
    data: Dict[str, Any] = {"signatures": [s["id"] for s in deep_signatures(deep)], "outcome": outcome}
    if outcome == "not_run" or deep.ran is False:
        yield NOT_RUN.finding(
            title=f"the deep probe was not run: {deep.reason}", evidence=[str(deep.reason)], data=data
        )
        return
    stderr_tail = _last_lines(deep.stderr_tail or deep.stderr_head or "")
    if outcome == "timed_out":
        step = deep.hung_step
        where = _STEP_TEXT.get(step, step) if step else "starting the interpreter"
        yield HUNG.finding(
            title=f"the deep probe hung in {where} and was killed after {deep.timeout} s",
            evidence=_common(deep) + [f"last stderr: {ln}" for ln in stderr_tail],
            fix=[
                Command(
                    ("npudoctor", "check", "--deep", "--deep-timeout", str(int(float(deep.timeout or 120) * 2))),
                    note="a busy box can take long",
                ),
                Command(("npu-smi", "info"), note="is the NPU held by another process?"),
            ],
            data=dict(data, step=step),
        )
        return
    if outcome == "crashed":
        step = deep.crashed_step
        where = _STEP_TEXT.get(step, step) if step else "starting up"
        yield CRASHED.finding(
            title=f"the deep probe crashed with {deep.signal} in {where}",
            evidence=_common(deep) + _signature_lines(deep) + [f"stderr: {ln}" for ln in stderr_tail],
            fix=_kb_fix(deep)
            or [
                Command(
                    (ctx.view.python.executable or "python3", "-X", "faulthandler", "-c", "import torch, torch_npu"),
                    note="shows the native stack of the crash",
                )
            ],
            data=dict(data, step=step, signal=deep.signal),
        )
        return
    if outcome == "exited":
        yield EXITED.finding(
            title=f"the deep probe's child exited with status {deep.returncode} before finishing",
            evidence=_common(deep) + [f"stderr: {ln}" for ln in stderr_tail],
            data=data,
        )
        return
    if outcome == "error":
        yield NOT_RUN.finding(
            title=f"the deep probe could not start: {deep.reason}", evidence=[str(deep.reason)], data=data
        )
        return
    failed = steps.get(deep.failed_step or "")
    if failed is not None:
        name = failed.name
        root = _root_error(failed)
        code = {"import_torch": IMPORT_TORCH, "import_torch_npu": IMPORT_NPU}.get(name)
        if code is None:
            code = NOT_AVAILABLE if name in ("is_available", "device_count") else DEVICE_OP
        yield code.finding(
            title=f"{_STEP_TEXT.get(name, name)} failed with {root}",
            evidence=[root] + _signature_lines(deep) + _common(deep),
            fix=_kb_fix(deep),
            data=dict(data, step=name, error=root),
        )
        return
    if deep.is_available is False or deep.device_count == 0:
        yield NOT_AVAILABLE.finding(
            title=(
                f"torch_npu {deep.torch_npu_version} imports but torch.npu.is_available() is "
                f"{deep.is_available} with {deep.device_count} device(s)"
            ),
            evidence=_common(deep) + [f"stderr: {ln}" for ln in stderr_tail],
            fix=["npudoctor check  (see the devices and container findings)"],
            data=dict(data, step="is_available"),
        )
        return
    devices = deep.devices
    names = ", ".join(sorted({str(d.name) for d in devices}))
    yield PASSED.finding(
        title=f"torch {deep.torch_version} + torch_npu {deep.torch_npu_version} computed on {len(devices)} NPU(s) ({names})",
        evidence=_common(deep) + ([f"torch.version.cann: {deep.cann}"] if deep.cann else []),
        data=data,
    )


def _finding_text(f: Finding) -> str:
    return "\n".join([f.title, *f.evidence, f.subject or ""])


def explaining_findings(deep: DeepFacts, statics: List[Finding]) -> List[Finding]:
    """Static findings that explain the deep probe's failure.

    For each known signature of the failure, the causes signatures.toml lists are taken in
    order: the first one that ``statics`` confirm (a finding of its ``confirmed_by`` codes)
    and none refutes names the findings that explain it.  A finding naming a captured
    library (``libhccl.so``) also does.
    """
    from npudoctor.knowledge.signatures import load_kb

    try:
        kb = load_kb()
    except Exception:
        return []
    explained: List[Finding] = []
    for sig in deep_signatures(deep):
        entry = kb.by_id(sig["id"])
        if entry is None or entry.severity == "noise":
            continue
        caps = dict(sig["captures"])
        lib = caps.get("lib")
        best = next((c for c in entry.causes if c.confirming(statics) and not c.refuting(statics)), None)
        if best is not None:
            top_codes = {f.code for f in best.confirming(statics)}
            explained.extend(
                f
                for f in statics
                if f.code in top_codes and not (lib and f.area == "libraries" and lib not in _finding_text(f))
            )
        if lib:
            explained.extend(f for f in statics if lib in _finding_text(f) and f.severity in ("error", "warning"))
    out: List[Finding] = []
    for f in explained:
        if all(f is not g for g in out):
            out.append(f)
    return out


def _proven_broken(finding: Finding, failure: str) -> None:
    """A compatibility finding graded from the documents (``data["grade"]``) that the deep
    probe's failure confirms becomes "proven broken": the import failed here, so the
    combination is an error whatever the documents said (the severity policy, AUDIT §7)."""
    grade = finding.data.get("grade")
    if not isinstance(grade, str) or grade == Grade.BROKEN.value:
        return
    finding.data["grade_was"] = grade
    finding.data["grade"] = Grade.BROKEN.value
    finding.data["source"] = f"the deep probe: {failure}"
    finding.evidence.append(f"{Grade.BROKEN.words} (the deep probe: {failure})")
    finding.severity = severity(Verdict(Grade.BROKEN, failure)) or "error"


@postprocess
def cross_reference(ctx: RuleContext, findings: List[Finding]) -> List[Finding]:
    """Attach a deep failure to the static findings that explain it (see module doc)."""
    if not _present(ctx):
        return findings
    deep = ctx.view.deep
    statics = [f for f in findings if f.area != "deep" and f.severity in ("error", "warning")]
    out: List[Finding] = []
    for f in findings:
        if f.code not in FAILURE_CODES or not statics:
            out.append(f)
            continue
        explaining = explaining_findings(deep, statics)
        if not explaining:
            out.append(f)
            continue
        what = f.title
        for s in explaining:
            note = f"deep probe: {what}"
            if note not in s.confirmed_by:
                s.confirmed_by.append(note)
            _proven_broken(s, what)
        codes = ", ".join(dict.fromkeys(s.code for s in explaining))
        out.append(
            Finding(
                code=f.code,
                name=f.name,
                severity="info",
                area=f.area,
                title=f"{what} (explained by {codes})",
                evidence=f.evidence,
                fix=[],
                subject=f.subject,
                data=dict(
                    f.data, explained_by=list(dict.fromkeys(s.code for s in explaining)), severity_was=f.severity
                ),
                after=list(dict.fromkeys(s.code for s in explaining)),
            )
        )
    return out


assert all(codes.get(c) for c in FAILURE_CODES)
