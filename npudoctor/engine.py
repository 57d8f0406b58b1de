"""The pipeline: Host → probes → Snapshot → rules (with the matrix) → findings.

Probe modules live in :mod:`npudoctor.probes` and rule modules in
:mod:`npudoctor.rules`; their declarations are read from the generated
:mod:`npudoctor._registry` (``scripts/gen_registry.py``), so that a run imports only the
probes it runs and the rule modules its sections need (:func:`rule_modules`).  While the
registry does not list exactly the modules on disk, every module is imported and asked, as
the packages are listed.  A probe module defines::

    SECTION = "environment"   # the record it writes: its key in snapshot.facts
    NEEDS = ("host", "cann")  # the sections it reads through ctx.facts (default: none)
    QUICK = True              # also runs for `npudoctor health` (optional, default False)
    SLOW = True               # may wait on an external command (optional, default False)
    def probe(ctx: ProbeContext) -> dict: ...
    def start(ctx: ProbeContext) -> None: ...  # SLOW only, optional: see :func:`collect`

The run order is derived from ``NEEDS`` (:func:`probe_order`): a probe runs after every
section it needs; among probes that are ready at the same time, quick file readers go
before ``SLOW`` ones (a hung ``npu-smi`` must not starve them of the deadline), ``DEEP``
probes go last, and the section name breaks the remaining ties.  A probe sees only the
sections it declared (:class:`FactsView`), so an undeclared read finds nothing, whatever
the order; ``tests/test_probe_order.py`` checks each declaration against what the probe
reads on real scenario trees.

A rule module registers functions with :func:`npudoctor.rules.rule`; each takes a
:class:`RuleContext` and yields :class:`~npudoctor.findings.Finding` objects.  It declares
``READS`` (the sections it reads) and, optionally, ``ONLY_WITH`` (the sections without which
it says nothing).

Neither probes nor rules may raise on bad input; if one does anyway, the crash is
recorded (``facts["_errors"]``) and reported as a finding, never as a traceback.
"""

from __future__ import annotations

import importlib
import os
import time
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING

from npudoctor.facts import Facts
from npudoctor.findings import Finding
from npudoctor.host import Host
from npudoctor.snapshot import Snapshot, now_iso

if TYPE_CHECKING:  # the matrix package is imported by whoever loads a matrix, not by the engine
    from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

    from npudoctor.knowledge.matrix import Matrix

    _Sections = Dict[str, Any]
else:
    _Sections = dict


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
    chips `health --require N` expects.  ``pid``: the workload process judged (``--pid``):
    its ``/proc/PID/status`` gives the capabilities and ids device access is judged for.
    ``collected``: a dict :func:`collect` also puts each finished section in, as soon as its
    probe returns (a caller whose budget runs out judges what was finished).
    ``index_packages``: the ``packages`` probe reads the metadata of the distributions rules
    judge by name only and indexes the rest by directory name, as a quick run does
    (``devices``: its time must not grow with the distributions installed, issue 18).
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
    pid: Optional[int] = None
    collected: Optional[Dict[str, Any]] = None
    index_packages: bool = False

    def remaining(self, default: float) -> float:
        """Seconds a command may still take: ``default``, capped by the deadline."""
        if self.deadline is None:
            return default
        return max(0.05, min(default, self.deadline - time.monotonic()))


@dataclass
class ProbeContext:
    """What a probe gets: the host, the options and the sections it declared in
    ``NEEDS`` (a :class:`FactsView` during :func:`collect`; tests may pass a plain dict)."""

    host: Host
    options: Options
    facts: Dict[str, Any]


class FactsView(_Sections):
    """The sections a probe may read: a dict holding only its declared ``NEEDS`` (those
    that ran), which records every key asked of it in ``asked`` (tests compare them with
    the declaration).  Iterating it or reading an undeclared section finds nothing."""

    def __init__(self, facts: Dict[str, Any], needs: Sequence[str]) -> None:
        super().__init__((name, facts[name]) for name in needs if name in facts)
        self.asked: Set[str] = set()

    def get(self, key: str, default: Any = None) -> Any:
        self.asked.add(key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> Any:
        self.asked.add(key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self.asked.add(key)
        return super().__contains__(key)


@dataclass
class RuleContext:
    """What a rule gets: the snapshot, the matrix (``None`` if it failed to load) and
    the options.  ``view`` is the typed, read-only view of the facts
    (:class:`npudoctor.facts.Facts`, built once per context): the only way rules read facts."""

    snapshot: Snapshot
    matrix: Optional[Matrix]
    options: Options
    _view: Optional[Facts] = field(default=None, repr=False, compare=False)

    @property
    def view(self) -> Facts:
        if self._view is None:
            self._view = Facts(self.snapshot.facts)
        return self._view


def module_names(package: str) -> List[str]:
    """The public modules of ``package`` (``"npudoctor.rules"``), sorted: every ``*.py``
    in its directories whose name does not start with ``_`` (importing the package, not
    them; pkgutil, which would say the same, costs ~8 ms to import)."""
    pkg = importlib.import_module(package)
    names = {
        name[:-3]
        for directory in pkg.__path__
        for name in os.listdir(directory)
        if name.endswith(".py") and not name.startswith("_")
    }
    return [f"{package}.{name}" for name in sorted(names)]


def _modules(package: str) -> List[ModuleType]:
    return [importlib.import_module(name) for name in module_names(package)]


#: Whether :func:`evaluate` imports only the rule modules the snapshot's sections need
#: (:func:`rule_modules`); the contract test sets it to ``False`` to compare with every
#: module imported.
PRUNE_RULES = True


def registry() -> Optional[ModuleType]:
    """:mod:`npudoctor._registry` (the probes' and rule modules' declarations, generated by
    ``scripts/gen_registry.py``), or ``None`` when it does not list exactly the probe and
    rule modules on disk (a module added or removed without regenerating it: then every
    module is imported and asked, as before the registry)."""
    global _REGISTRY
    if _REGISTRY is None:
        try:
            from npudoctor import _registry
        except (ImportError, OSError):  # not generated yet (a checkout being set up), unreadable
            _REGISTRY = (None,)
            return None
        on_disk = module_names("npudoctor.probes") + module_names("npudoctor.rules")
        _REGISTRY = (_registry if list(_registry.SCANNED) == on_disk else None,)
    return _REGISTRY[0]


_REGISTRY: Optional[Tuple[Optional[ModuleType]]] = None


class ProbeOrderError(ValueError):
    """The probes' declarations cannot be ordered: a probe needs a section no probe
    writes, two probes write one section, or the needs form a cycle (the message names
    the probes and sections)."""


@dataclass(frozen=True)
class ProbeSpec:
    """One probe module's declarations: ``section`` (the record it writes), ``needs``
    (the sections it reads), the ``quick``/``deep``/``slow`` flags and ``probe``."""

    section: str
    needs: Tuple[str, ...]
    quick: bool
    deep: bool
    slow: bool
    probe: Callable[[ProbeContext], Any]
    module: str

    @classmethod
    def declared(
        cls, module: str, section: str, needs: Sequence[str], quick: bool, deep: bool, slow: bool
    ) -> ProbeSpec:
        """The spec of probe module ``module`` from its declarations as the registry
        records them; the module is imported when its probe first runs."""
        return cls(section, tuple(needs), quick, deep, slow, _LazyProbe(module), module)

    @classmethod
    def of(cls, mod: ModuleType) -> ProbeSpec:
        """The declarations of a probe module; :class:`ProbeOrderError` when ``NEEDS``
        is not a tuple or list of section names."""
        needs = getattr(mod, "NEEDS", ())
        if not isinstance(needs, (tuple, list)) or not all(isinstance(n, str) for n in needs):
            raise ProbeOrderError(f"{mod.__name__}.NEEDS must be a tuple of section names, not {needs!r}")
        return cls(
            section=str(mod.SECTION),
            needs=tuple(needs),
            quick=bool(getattr(mod, "QUICK", False)),
            deep=bool(getattr(mod, "DEEP", False)),
            slow=bool(getattr(mod, "SLOW", False)),
            probe=mod.probe,
            module=mod.__name__,
        )


def probe_order(specs: Iterable[ProbeSpec]) -> List[ProbeSpec]:
    """``specs`` in run order: every probe after the sections it needs (Kahn's
    algorithm); among probes ready together, non-``slow`` before ``slow``, ``deep``
    last, then by section name, so the order is stable.  Raises
    :class:`ProbeOrderError` for an unknown needed section, a section written twice, a
    probe that needs itself, or a cycle."""
    by_section: Dict[str, ProbeSpec] = {}
    for spec in specs:
        if spec.section in by_section:
            raise ProbeOrderError(
                f"section {spec.section!r} is written by both {by_section[spec.section].module} and {spec.module}"
            )
        by_section[spec.section] = spec
    for spec in by_section.values():
        for need in spec.needs:
            if need == spec.section:
                raise ProbeOrderError(f"{spec.module} needs its own section {need!r}")
            if need not in by_section:
                raise ProbeOrderError(
                    f"{spec.module} needs section {need!r}, which no probe writes "
                    f"(known: {', '.join(sorted(by_section))})"
                )
    waiting = {name: set(spec.needs) for name, spec in by_section.items()}
    order: List[ProbeSpec] = []
    while waiting:
        ready = [by_section[name] for name, needs in waiting.items() if not needs]
        if not ready:
            raise ProbeOrderError("the probes' NEEDS form a cycle: " + _cycle(waiting) + " (each needs the next)")
        first = min(ready, key=lambda s: (s.deep, s.slow, s.section))
        order.append(first)
        del waiting[first.section]
        for needs in waiting.values():
            needs.discard(first.section)
    return order


def _cycle(waiting: Dict[str, Set[str]]) -> str:
    """One cycle among the ``waiting`` sections (each still needing others), as
    ``a → b → a``."""
    node = min(waiting)
    path: List[str] = []
    while node not in path:
        path.append(node)
        node = min(n for n in waiting[node] if n in waiting)
    return " → ".join(path[path.index(node) :] + [node])


def probe_specs() -> List[ProbeSpec]:
    """The probe modules' declarations in run order (:func:`probe_order`); modules
    without ``probe`` or ``SECTION`` are skipped.  Raises :class:`ProbeOrderError`."""
    reg = registry()
    if reg is not None:  # no probe module is imported before it runs
        return probe_order(ProbeSpec.declared(*spec) for spec in reg.PROBES)
    mods = [m for m in _modules("npudoctor.probes") if hasattr(m, "probe") and hasattr(m, "SECTION")]
    return probe_order(ProbeSpec.of(m) for m in mods)


class _LazyProbe:
    """A probe module's ``probe`` function, imported on the first call."""

    def __init__(self, module: str) -> None:
        self.module = module

    def __call__(self, ctx: ProbeContext) -> Any:
        return importlib.import_module(self.module).probe(ctx)

    def __repr__(self) -> str:
        return f"<probe of {self.module}>"


def select_probes(
    specs: Sequence[ProbeSpec], options: Options, sections: Optional[Sequence[str]] = None
) -> List[ProbeSpec]:
    """The probes one :func:`collect` runs, in the order of ``specs``.

    With ``sections``: exactly those (the caller's choice, nothing pulled in).  Else the
    candidates are the ``quick`` probes with ``options.quick``, all but ``deep`` ones
    unless ``options.deep``; ``options.only`` keeps ``host``, the named sections and,
    transitively, the candidates they need; ``options.skip`` removes sections last (a
    probe whose needed section is skipped runs without it, as it would on an older
    snapshot).
    """
    if sections is not None:
        return [s for s in specs if s.section in sections]
    candidates = {s.section: s for s in specs if (s.quick or not options.quick) and (options.deep or not s.deep)}
    chosen = set(candidates)
    if options.only:
        chosen = set()
        todo = [n for n in list(options.only) + ["host"] if n in candidates]
        while todo:
            name = todo.pop()
            if name not in chosen:
                chosen.add(name)
                todo.extend(n for n in candidates[name].needs if n in candidates)
    chosen -= set(options.skip)
    return [s for s in specs if s.section in chosen]


#: Sections every snapshot may carry besides the probes' own: ``access`` (paths refused
#: while probing) and ``_errors`` (probes that raised).
EXTRA_SECTIONS = ("access", "_errors")


def rule_modules(sections: Optional[Iterable[str]] = None, areas: Optional[Iterable[str]] = None) -> List[str]:
    """The rule modules to import for a snapshot holding ``sections`` (``None``: every
    module), in registry order; with ``areas`` (``Options.only``: only findings of these
    areas are reported), only those that can matter to them (:func:`judging_modules`).

    A module is needed unless it declares ``ONLY_WITH`` (the sections without which it says
    nothing: not probed is not broken) and none of those is present.  A module without
    ``ONLY_WITH`` is always imported: those reading nothing (the matrix, the options, the
    other rules' findings: ``order``, ``matrix``) and those that speak about a section's
    absence (``health``: ``--require 8`` with no devices probed).  ``tests/test_rule_registry.py``
    checks ``READS`` against what each module reads, each ``ONLY_WITH`` by running the
    module without those sections on every scenario, and that every scenario's findings are
    the same as with every module imported.  Every module when ``sections`` is ``None``,
    :data:`PRUNE_RULES` is off or the registry is stale."""
    reg = registry()
    if reg is None:
        return module_names("npudoctor.rules")
    if sections is None or not PRUNE_RULES:
        return [spec[0] for spec in reg.RULE_MODULES]
    present = set(sections)
    names = [name for name, _reads, only, _post in reg.RULE_MODULES if not only or present.intersection(only)]
    return judging_modules(reg, names, areas) if areas else names


def judging_modules(reg: ModuleType, names: List[str], areas: Iterable[str]) -> List[str]:
    """Of the rule modules ``names``, those that can change a finding of ``areas``: every
    module with post-processors (they rewrite the others' findings), and those whose codes
    (the registry's ``RULE_AREAS``) are of ``areas`` or of an area feeding them (``FEEDS``:
    a symptom folded under its cause, a fix ordered after an earlier layer's, a root that
    lists what it explains).  ``devices`` (areas devices and container) skips the packages,
    CANN, Python and environment rules that it would run only to drop their findings.
    ``tests/test_rule_registry.py`` checks ``RULE_AREAS`` against every scenario's findings
    and compares every scenario judged so with every module imported."""
    wanted = set(areas)
    feeds = dict(reg.FEEDS)
    for area in list(wanted):
        wanted.update(feeds.get(area, ()))
    by_module = dict(reg.RULE_AREAS)
    posts = {name for name, _reads, _only, post in reg.RULE_MODULES if post}
    return [name for name in names if name in posts or wanted.intersection(by_module.get(name, wanted))]


def load_rules(sections: Optional[Iterable[str]] = None, areas: Optional[Iterable[str]] = None) -> List[str]:
    """Import the rule modules a snapshot with ``sections`` needs for findings of ``areas``
    (:func:`rule_modules`; ``None``: every one) so that their codes and rules are
    registered; returns their names."""
    names = rule_modules(sections, areas)
    for name in names:
        importlib.import_module(name)
    return names


def planned_sections(options: Options) -> List[str]:
    """The sections a :func:`collect` with ``options`` will write (its probes' and
    :data:`EXTRA_SECTIONS`): what :func:`load_rules` may load before the probes finish."""
    return [s.section for s in select_probes(probe_specs(), options)] + list(EXTRA_SECTIONS)


def _selected(
    registered: Sequence[Tuple[str, Any]], order: Sequence[str], modules: Sequence[str]
) -> List[Tuple[str, Any]]:
    """The ``registered`` ``(name, function)`` pairs of ``modules``, in ``order`` (the
    registry's: what importing every module gives), then any the registry does not know
    (a stale registry) in registration order.  Names are ``module.function``."""
    short = {m.rsplit(".", 1)[-1] for m in modules}
    by_name = {name: func for name, func in registered if name.split(".", 1)[0] in short}
    known = [(name, by_name.pop(name)) for name in order if name in by_name]
    return known + [(name, func) for name, func in registered if name in by_name]


def _crash(exc: Exception) -> str:
    """What ``_errors`` records of a probe that raised: the exception and its last frames."""
    import traceback  # only for a probe that crashed (~1 ms of every start otherwise)

    return f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=4)}"


def _start(spec: ProbeSpec, ctx: ProbeContext, errors: Dict[str, str]) -> None:
    """Call the ``start`` of a ``SLOW`` probe module that defines one (importing it now,
    as its probe would later); a crash is recorded as the probe's."""
    try:
        begin = getattr(importlib.import_module(spec.module), "start", None)
        if begin is not None:
            begin(ctx)
    except Exception as exc:  # the probe runs its commands itself; the bug is still shown
        errors[spec.section] = _crash(exc)


def collect(host: Host, options: Options, sections: Optional[Sequence[str]] = None) -> Snapshot:
    """Run the probes against ``host`` and return the snapshot.

    The probes run in the order derived from their ``NEEDS`` and are chosen by
    :func:`select_probes` (``sections``: exactly these; else ``options.quick``/``deep``/
    ``only``/``skip``).  First, each chosen ``SLOW`` probe module's ``start(ctx)`` (if it
    has one; ``ctx.facts`` holds no section) may begin its slowest command with
    :meth:`Host.start <npudoctor.host.Host.start>`, so that the command runs while the
    probes before it read files (``npu-smi info`` takes hundreds of milliseconds on a
    real node); whatever is not collected is ended when the probes are done.  Raises
    :class:`ProbeOrderError` when the declarations are broken (a bug of npudoctor, caught
    by the tests).
    """
    facts: Dict[str, Any] = {}
    errors: Dict[str, str] = {}
    chosen = select_probes(probe_specs(), options, sections)
    try:
        for spec in chosen:
            if spec.slow:
                _start(spec, ProbeContext(host=host, options=options, facts=FactsView({}, ())), errors)
        for spec in chosen:
            section = spec.section
            if options.progress:
                options.progress(section)
            ctx = ProbeContext(host=host, options=options, facts=FactsView(facts, spec.needs))
            try:
                result = spec.probe(ctx)
            except Exception as exc:  # a probe bug must not cost the user the report
                errors[section] = _crash(exc)
                result = {}
            facts[section] = result if isinstance(result, dict) else {}
            if options.collected is not None:
                options.collected[section] = facts[section]
    finally:
        host.close()  # what a probe started and did not collect (it crashed)
    if host.denied:
        facts["access"] = host.access_facts()
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
        import socket  # live runs only (~2 ms of every start otherwise)

        hostname = socket.gethostname()
    return Snapshot(facts=facts, target=target, node=hostname, created=now_iso())


def evaluate(
    snapshot: Snapshot,
    matrix: Optional[Matrix],
    options: Options,
    ignore: Iterable[str] = (),
    ignored: Optional[List[Finding]] = None,
) -> List[Finding]:
    """Run the rules of the modules the snapshot's sections need (:func:`rule_modules`),
    in the order importing every module registers them; return findings sorted by area,
    severity and code.

    Codes (or names) in ``ignore`` are dropped (appended to ``ignored`` when given, so a
    report can say how many were silenced).  A rule that raises becomes a finding
    of code ``HOST099`` naming the rule, never a traceback.
    """
    from npudoctor.rules import POSTPROCESSORS, RULES, internal_error

    modules = load_rules(list(snapshot.facts), options.only or None)
    reg = registry()
    rules, posts = (
        (list(RULES), list(POSTPROCESSORS))
        if reg is None
        else (_selected(RULES, reg.RULES, modules), _selected(POSTPROCESSORS, reg.POSTPROCESSORS, modules))
    )
    ctx = RuleContext(snapshot=snapshot, matrix=matrix, options=options)
    findings: List[Finding] = []
    for name, func in rules:
        try:
            produced = list(func(ctx) or ())
        except Exception as exc:
            produced = [internal_error(f"rule {name}", exc)]
        findings.extend(produced)
    for section, error in sorted(snapshot.section("_errors").items()):
        findings.append(internal_error(f"probe {section}", error))
    for name, post in posts:
        try:
            findings = list(post(ctx, findings))
        except Exception as exc:
            findings.append(internal_error(f"post-processor {name}", exc))
    dropped = {i.strip().upper() for i in ignore if i.strip()}
    kept = [f for f in findings if f.code.upper() not in dropped and f.name.upper() not in dropped]
    if ignored is not None:
        ignored.extend(f for f in findings if f.code.upper() in dropped or f.name.upper() in dropped)
    if options.only:
        kept = [f for f in kept if f.area in options.only]
    if options.skip:
        kept = [f for f in kept if f.area not in options.skip]
    return sorted(kept, key=Finding.sort_key)
