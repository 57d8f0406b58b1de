"""Findings, and the :class:`Code` they are made from.

Codes are data: ``npudoctor/knowledge/data/codes/<area>.toml``, loaded by
:mod:`npudoctor.knowledge.codes`.  A rule module takes its codes from there::

    TORCH_PAIR = codes.get("PKG001")

and a rule makes findings from one with :meth:`Code.finding`.  Codes are ``AREA`` +
three digits (``PKG001``, ``DEV012``); names are kebab-case.  Both are stable: once
released, a code keeps its meaning forever (retire it, never reuse it).

:class:`Code` is a frozen dataclass (hashable; a malformed one is refused when made),
:class:`Finding` a mutable one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npudoctor import lazyre
from npudoctor.record import MutableRecord, Record, field

if TYPE_CHECKING:  # the remedies are imported by the rules that make findings, not by readers of codes
    from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

    from npudoctor.remedies import Remedy

SEVERITIES = ("error", "warning", "info")
_SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}

#: Areas, in the order the report shows them (the check order of the root-cause kinds).
AREAS = (
    "python",
    "packages",
    "cann",
    "environment",
    "libraries",
    "driver",
    "devices",
    "container",
    "hccl",
    "host",
    "matrix",
    "deep",
    "lint",
)

AREA_TITLES = {
    "python": "Python interpreter",
    "packages": "Python packages",
    "cann": "CANN toolkit, kernels and NNAL",
    "environment": "CANN environment (set_env.sh)",
    "libraries": "Shared libraries",
    "driver": "Driver and firmware",
    "devices": "NPU devices",
    "container": "Container",
    "hccl": "HCCL and multi-node",
    "host": "Host hygiene",
    "matrix": "Compatibility matrix",
    "deep": "Deep probe (import torch_npu)",
    "lint": "Code lint (CUDA-isms in user code)",
}

_CODE_RE = lazyre.pattern(r"^[A-Z]{2,5}[0-9]{3}$")
_NAME_RE = lazyre.pattern(r"^[a-z0-9]+(-[a-z0-9]+)*$")

_FIX_OF = lazyre.pattern(r"\(([A-Z]{2,5}[0-9]{3})'s fix\)")


def fix_of(code: str) -> str:
    """How a fix line points to the fix of the finding ``code`` instead of repeating its
    command (``(ENV005's fix)``): the report prints that finding's fix."""
    return f"({code}'s fix)"


def fix_referred(line: str) -> Optional[str]:
    """The code whose fix the fix ``line`` points to (:func:`fix_of`), or ``None``."""
    m = _FIX_OF.search(line)
    return m.group(1) if m else None


#: Snapshot sections that are not areas of their own (their findings use an area above).
EXTRA_SECTIONS = ("hygiene", "tunables", "host_limits", "numa")

_CONTROL = {c: "?" for c in range(32) if c not in (9, 10)}
_CONTROL.update({0x7F: "?", 0x1B: "?"})


def clean_text(text: object, one_line: bool = False) -> str:
    """``text`` without terminal control characters (garbled command output quoted in a
    finding must not move the cursor or retitle the terminal): ESC, NUL and other C0
    controls become ``?``; with ``one_line`` newlines and tabs become spaces too."""
    out = str(text).translate(_CONTROL)
    if one_line:
        out = " ".join(out.split())
    return out


class RegistryError(ValueError):
    """A code is malformed (a programming error, found by tests)."""


class Code(Record):
    """A stable finding code with its default severity and long explanation.

    ``kinds`` names the root-cause kinds (``K01``…, the ``[kinds]`` table of
    ``knowledge/signatures.toml``) it covers.
    ``symptom_of`` names codes whose problem causes this one: when a finding of one of
    them is reported (at least as severe), a finding of this code is a follow-on symptom
    folded under it (``data["because"]``, set by ``rules/order.py``).
    A malformed code or name, or an unknown area or severity, raises
    :class:`RegistryError`.  Codes are made by :mod:`npudoctor.knowledge.codes` from its
    data files (which also checks that codes and names are unique); get them there.
    """

    code: str
    name: str
    area: str
    severity: str
    title: str
    explain: str
    kinds: Sequence[str] = ()
    symptom_of: Sequence[str] = ()

    def __post_init__(self) -> None:
        if not _CODE_RE.match(self.code):
            raise RegistryError(f"malformed finding code {self.code!r}")
        if not _NAME_RE.match(self.name):
            raise RegistryError(f"malformed finding name {self.name!r} ({self.code})")
        if self.area not in AREAS:
            raise RegistryError(f"unknown area {self.area!r} ({self.code})")
        if self.severity not in SEVERITIES:
            raise RegistryError(f"unknown severity {self.severity!r} ({self.code})")

    def finding(
        self,
        title: Optional[str] = None,
        evidence: Iterable[str] = (),
        fix: Iterable[Union[Remedy, str]] = (),
        severity: Optional[str] = None,
        subject: Optional[str] = None,
        data: Optional[Dict[str, Any]] = None,
        after: Iterable[str] = (),
    ) -> Finding:
        """Make a finding of this code.

        ``title`` is the one-line statement for this occurrence (defaults to the
        code's title); ``evidence`` are facts with their source ("torch 2.1.0 from
        /usr/lib/python3.10/site-packages/torch-2.1.0.dist-info/METADATA");
        ``fix`` are the steps, in order: remedies (:mod:`npudoctor.remedies`), rendered
        here to the shell lines of ``Finding.fix``; a plain string is a step in prose;
        ``severity`` overrides the
        default; ``subject`` distinguishes several findings of one code (a chip, a
        library); ``after`` lists codes whose fixes must be applied first.
        """
        from npudoctor.remedies import Prose, shell_lines, to_dict

        sev = severity or self.severity
        if sev not in SEVERITIES:
            raise RegistryError(f"unknown severity {sev!r} for {self.code}")
        steps = [Prose(f) if isinstance(f, str) else f for f in fix]
        lines = [clean_text(line) for line in shell_lines(steps)]
        return Finding(
            code=self.code,
            name=self.name,
            severity=sev,
            area=self.area,
            title=clean_text(title or self.title, one_line=True),
            evidence=[clean_text(e) for e in evidence],
            fix=lines,
            subject=subject,
            data=dict(data or {}),
            after=list(after),
            remedies=[dict(to_dict(r), shell=line) for r, line in zip(steps, lines)],
        )


class Finding(MutableRecord):
    """One problem (or notable fact) found on the diagnosed machine.

    The JSON form (:meth:`to_dict`) is the public contract: ``code``, ``name``,
    ``severity`` (``error`` | ``warning`` | ``info``), ``area``, ``title``,
    ``evidence`` (list of strings), ``fix`` (list of strings: commands or steps in
    order), plus ``subject``, ``data``, ``after``, ``confirmed_by`` and ``remedies``
    (the same steps as structured dicts, :func:`npudoctor.remedies.to_dict`; a fix line
    added after the finding was made has no entry there).
    """

    code: str
    name: str
    severity: str
    area: str
    title: str
    evidence: List[str] = field(default_factory=list)
    fix: List[str] = field(default_factory=list)
    subject: Optional[str] = None
    data: Dict[str, Any] = field(default_factory=dict)
    after: List[str] = field(default_factory=list)
    confirmed_by: List[str] = field(default_factory=list)
    remedies: List[Dict[str, Any]] = field(default_factory=list)

    def add_fix(self, *steps: Union[Remedy, str]) -> None:
        """Append ``steps`` (remedies, or prose as a string) to a finding already made: their
        lines to ``fix`` and, while every earlier line has its remedy, their remedies too."""
        from npudoctor.remedies import Prose, shell_lines, to_dict

        items = [Prose(s) if isinstance(s, str) else s for s in steps]
        lines = [clean_text(line) for line in shell_lines(items)]
        aligned = len(self.remedies) == len(self.fix)
        self.fix.extend(lines)
        if aligned:
            self.remedies.extend(dict(to_dict(r), shell=line) for r, line in zip(items, lines))

    def sort_key(self) -> tuple[int, int, str, str]:
        area = AREAS.index(self.area) if self.area in AREAS else len(AREAS)
        return (area, _SEVERITY_RANK[self.severity], self.code, self.subject or "")

    def to_dict(self) -> Dict[str, Any]:
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity,
            "area": self.area,
            "title": self.title,
            "evidence": list(self.evidence),
            "fix": list(self.fix),
            "subject": self.subject,
            "data": self.data,
            "after": list(self.after),
            "confirmed_by": list(self.confirmed_by),
            "remedies": [dict(r) for r in self.remedies],
        }

    @classmethod
    def from_dict(cls, raw: Dict[str, Any]) -> Finding:
        return cls(
            code=str(raw["code"]),
            name=str(raw.get("name", "")),
            severity=str(raw["severity"]),
            area=str(raw.get("area", "")),
            title=str(raw.get("title", "")),
            evidence=[str(e) for e in raw.get("evidence", [])],
            fix=[str(f) for f in raw.get("fix", [])],
            subject=raw.get("subject"),
            data=dict(raw.get("data") or {}),
            after=[str(a) for a in raw.get("after", [])],
            confirmed_by=[str(c) for c in raw.get("confirmed_by", [])],
            remedies=[dict(r) for r in raw.get("remedies", []) if isinstance(r, dict)],
        )


def counts(findings: Iterable[Finding]) -> Dict[str, int]:
    """``{"error": n, "warning": n, "info": n}`` for a list of findings."""
    out = dict.fromkeys(SEVERITIES, 0)
    for f in findings:
        out[f.severity] += 1
    return out
