"""The pipeline: Host → probes → Snapshot → rules (with the matrix) → findings.

Probe modules live in :mod:`npudoctor.probes` and rule modules in
:mod:`npudoctor.rules`; both are discovered by listing the package (no central list to
edit).  A probe module defines::

    SECTION = "cann"          # key in snapshot.facts
    ORDER = 30                # probes run in ascending ORDER; later ones may read
                              # earlier sections through ctx.facts
    QUICK = True              # also runs for `npudoctor health` (optional, default False)
    def probe(ctx: ProbeContext) -> dict: ...

A rule module registers functions with :func:`npudoctor.rules.rule`; each takes a
:class:`RuleContext` and yields :class:`~npudoctor.findings.Finding` objects.

Neither probes nor rules may raise on bad input; if one does anyway, the crash is
recorded (``facts["_errors"]``) and reported as a finding, never as a traceback.
"""

from __future__ import annotations

import importlib
import pkgutil
import socket
import time
import traceback
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Sequence, Set

from npudoctor.findings import Finding
from npudoctor.host import Host
from npudoctor.snapshot import Snapshot, now_iso

if TYPE_CHECKING:  # the matrix package is imported by whoever loads a matrix, not by the engine
    from npudoctor.knowledge.matrix import Matrix


@dataclass
class Options:
    """What the user asked for, as probes and rules see it.

    ``python``: path of the interpreter to inspect (``--python``), ``None`` for the
    current one (live) or the one found in the root (``--root``).  ``user``: account
    whose device access is judged (``--user NAME|UID``).  ``deep``: run the import
    probe (``--deep``) with ``deep_timeout`` seconds.  ``quick``: the health-check
    subset.  ``command_timeout``: deadline of one command (seconds).  ``deadline``:
    ``time.monotonic()`` value after which probes should give up (``None``: none).
    ``only``/``skip``: areas/sections to run or leave out.  ``cwd``: working directory
    of the diagnosed process (shadowing checks).  ``require_devices``: the number of
    chips `health --require N` expects.
    """

    python: Optional[str] = None
    user: Optional[str] = None
    deep: bool = False
    deep_timeout: float = 120.0
    quick: bool = False
    command_timeout: float = 5.0
    deadline: Optional[float] = None
    only: Set[str] = field(default_factory=set)
    skip: Set[str] = field(default_factory=set)
    cwd: Optional[str] = None
    probe_master: bool = False
    matrix_path: Optional[str] = None
    require_devices: Optional[int] = None
    progress: Optional[Callable[[str], None]] = None

    def remaining(self, default: float) -> float:
        """Seconds a command may still take: ``default``, capped by the deadline."""
        if self.deadline is None:
            return default
        return max(0.05, min(default, self.deadline - time.monotonic()))


@dataclass
class ProbeContext:
    """What a probe gets: the host, the options and the sections probed so far."""

    host: Host
    options: Options
    facts: Dict[str, Any]


@dataclass
class RuleContext:
    """What a rule gets: the snapshot, the matrix (``None`` if it failed to load) and
    the options.  ``facts(name)`` returns one section (empty dict when absent)."""

    snapshot: Snapshot
    matrix: Optional[Matrix]
    options: Options

    def facts(self, name: str) -> Dict[str, Any]:
        return self.snapshot.section(name)


def _modules(package: str) -> List[ModuleType]:
    pkg = importlib.import_module(package)
    names = sorted(m.name for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_"))
    return [importlib.import_module(f"{package}.{name}") for name in names]


def probe_modules() -> List[ModuleType]:
    """Probe modules sorted by ``ORDER`` (those without ``probe`` are skipped)."""
    mods = [m for m in _modules("npudoctor.probes") if hasattr(m, "probe") and hasattr(m, "SECTION")]
    return sorted(mods, key=lambda m: (getattr(m, "ORDER", 100), m.SECTION))


def load_rules() -> None:
    """Import every rule module so that its codes and rules are registered."""
    _modules("npudoctor.rules")


def collect(host: Host, options: Options, sections: Optional[Sequence[str]] = None) -> Snapshot:
    """Run the probes against ``host`` and return the snapshot.

    ``sections`` limits the run to these sections (plus nothing else); otherwise
    ``options.quick`` selects probes with ``QUICK = True`` and ``options.only``/``skip``
    filter by section name.  The deep probe runs only with ``options.deep``.
    """
    facts: Dict[str, Any] = {}
    errors: Dict[str, str] = {}
    for mod in probe_modules():
        section = mod.SECTION
        if sections is not None and section not in sections:
            continue
        if sections is None:
            if options.quick and not getattr(mod, "QUICK", False):
                continue
            if getattr(mod, "DEEP", False) and not options.deep:
                continue
            if options.only and section not in options.only and section != "host":
                continue
            if section in options.skip:
                continue
        if options.progress:
            options.progress(section)
        ctx = ProbeContext(host=host, options=options, facts=facts)
        try:
            result = mod.probe(ctx)
        except Exception as exc:  # a probe bug must not cost the user the report
            errors[section] = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=4)}"
            result = {}
        facts[section] = result if isinstance(result, dict) else {}
    if errors:
        facts["_errors"] = errors
    target = {
        "mode": "live" if host.live else "root",
        "root": host.root,
        "python": options.python,
        "user": options.user,
    }
    hostname = str(facts.get("host", {}).get("hostname") or "") if isinstance(facts.get("host"), dict) else ""
    if not hostname and host.live:
        hostname = socket.gethostname()
    return Snapshot(facts=facts, target=target, node=hostname, created=now_iso())


def evaluate(
    snapshot: Snapshot,
    matrix: Optional[Matrix],
    options: Options,
    ignore: Iterable[str] = (),
) -> List[Finding]:
    """Run every registered rule; return findings sorted by area, severity and code.

    Codes (or names) in ``ignore`` are dropped.  A rule that raises becomes a finding
    of code ``HOST099`` naming the rule, never a traceback.
    """
    from npudoctor.rules import POSTPROCESSORS, RULES, internal_error

    load_rules()
    ctx = RuleContext(snapshot=snapshot, matrix=matrix, options=options)
    findings: List[Finding] = []
    for name, func in RULES:
        try:
            produced = list(func(ctx) or ())
        except Exception as exc:
            produced = [internal_error(f"rule {name}", exc)]
        findings.extend(produced)
    for section, error in sorted(snapshot.section("_errors").items()):
        findings.append(internal_error(f"probe {section}", error))
    for name, post in POSTPROCESSORS:
        try:
            findings = list(post(ctx, findings))
        except Exception as exc:
            findings.append(internal_error(f"post-processor {name}", exc))
    dropped = {i.strip().upper() for i in ignore if i.strip()}
    kept = [f for f in findings if f.code.upper() not in dropped and f.name.upper() not in dropped]
    if options.only:
        kept = [f for f in kept if f.area in options.only]
    if options.skip:
        kept = [f for f in kept if f.area not in options.skip]
    return sorted(kept, key=Finding.sort_key)
