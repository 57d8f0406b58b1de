"""What probes and rules receive: the user's :class:`Options`, a probe's
:class:`ProbeContext` (with the :class:`FactsView` of the sections it declared) and a
rule's :class:`RuleContext`.  The orchestrator that builds them is :mod:`npudoctor.engine`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from npudoctor.facts import Facts
from npudoctor.host import Host
from npudoctor.record import MutableRecord, field
from npudoctor.snapshot import Snapshot

if TYPE_CHECKING:  # the matrix package is imported by whoever loads a matrix, not by the engine
    from typing import Any, Callable, Dict, Optional, Sequence, Set

    from npudoctor.facts import SharedViews
    from npudoctor.knowledge.matrix import Matrix

    _Sections = Dict[str, Any]
else:
    _Sections = dict


class Options(MutableRecord):
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
    (``devices``: its time must not grow with the distributions installed).
    ``started``: called by :func:`collect` once the slow probes' commands have started,
    before the first probe: work that needs no facts runs while those commands do (a quick
    run loads its rules and matrix there).
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
    started: Optional[Callable[[], None]] = None

    def remaining(self, default: float) -> float:
        """Seconds a command may still take: ``default``, capped by the deadline."""
        if self.deadline is None:
            return default
        return max(0.05, min(default, self.deadline - time.monotonic()))


class ProbeContext(MutableRecord):
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


class RuleContext(MutableRecord):
    """What a rule gets: the snapshot, the matrix (``None`` if it failed to load) and
    the options.  ``view`` is the typed, read-only view of the facts
    (:class:`npudoctor.facts.Facts`, built once per context): the only way rules read facts."""

    snapshot: Snapshot
    matrix: Optional[Matrix]
    options: Options
    shared: Optional[SharedViews] = None
    """views of earlier snapshots of this run to reuse (:data:`npudoctor.facts.SharedViews`)"""
    _view: Optional[Facts] = None

    @property
    def view(self) -> Facts:
        if self._view is None:
            self._view = Facts(self.snapshot.facts, self.shared)
        return self._view
