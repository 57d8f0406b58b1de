"""The one quick evaluation: the ``QUICK`` probes and the rules they feed, under a :class:`Budget`.

``npudoctor health`` and ``npudoctor exec`` both call :func:`evaluate_quick` with a typed
:class:`QuickRequest`; ``health`` turns the result into its verdict, ``exec`` into lines on
stderr before it starts the workload.  The machine is judged by the one request service,
:func:`npudoctor.session.machine.judge`; what is added here is the budget (the matrix and
rules load while ``npu-smi`` runs, the areas finished before a cut are still judged).

This module imports neither Typer nor rich (``health`` runs every few seconds).
"""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING, Any, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple

from npudoctor.facts import Facts
from npudoctor.record import MutableRecord, Record, field, replace
from npudoctor.runtime.deadline import Budget
from npudoctor.session.request import MachineRequest

if TYPE_CHECKING:
    from npudoctor.context import Options
    from npudoctor.findings import Finding
    from npudoctor.snapshot import Snapshot


class QuickRequest(Record):
    """What to evaluate.

    ``machine``: the machine options (``--root --python --user --env-file --no-commands
    --from``; ``json`` is the caller's business).  ``environ``: the environment to diagnose
    (``None``: the ``--env-file``'s, else this process's).  ``only``/``skip``: area or
    section names (validated with :func:`areas`).  ``require``: chips that must be visible
    (``None``: no requirement).  ``ignore``: finding codes or names to drop.  ``matrix``:
    a matrix file (``None``: the cached or bundled one).  ``pid``: the workload process
    judged (``--pid``): its capabilities and ids decide device access.  ``progress``: where
    the evaluation records what it finished (:class:`Progress`, :func:`finished_findings`).
    """

    machine: MachineRequest = field(default_factory=MachineRequest)
    environ: Optional[Mapping[str, str]] = None
    only: FrozenSet[str] = frozenset()
    skip: FrozenSet[str] = frozenset()
    require: Optional[int] = None
    ignore: Tuple[str, ...] = ()
    matrix: Optional[str] = None
    pid: Optional[int] = None
    progress: Optional[Progress] = None


class Progress(MutableRecord):
    """What a running :func:`evaluate_quick` has done so far, shared with the thread that
    waits for it (so that a budget that runs out still answers for the areas that
    finished): ``facts`` (each section as its probe returns), ``options`` (the engine's),
    ``loaded`` (``{"matrix": Matrix}`` once loaded), ``judging`` (the thread judging the
    areas as they finish, started once rules and matrix are loaded), ``judged`` (the areas judged so far
    and their findings, replaced as one tuple: a reader never sees half of it),
    ``changed`` (set when a section finished or the evaluation ended), ``ended`` (the
    evaluation finished or gave up: the judging thread stops), ``cut`` (see
    :meth:`freeze`)."""

    facts: Dict[str, Any] = field(default_factory=dict)
    options: Any = None
    loaded: Dict[str, Any] = field(default_factory=dict)
    judging: Optional[threading.Thread] = None
    judged: Tuple[List[str], List[Any]] = ([], [])
    changed: threading.Event = field(default_factory=threading.Event)
    ended: bool = False
    cut: Optional[Dict[str, Any]] = None
    shared: Dict[str, Any] = field(default_factory=dict)
    """the sections' views, converted once for every judging of this run
    (:data:`npudoctor.facts.SharedViews`)"""

    def freeze(self) -> Dict[str, Any]:
        """The sections finished now, kept as ``cut`` (called by the waiter when the budget
        runs out or SIGTERM comes, before the commands are killed and the probes move on):
        the judging beside the probes judges these once more if it had not, then stops."""
        self.cut = dict(self.facts)
        self.changed.set()
        return self.cut


class QuickResult(MutableRecord):
    """The evaluation: ``findings`` (:class:`npudoctor.findings.Finding`, sorted),
    ``chips`` (NPU chips seen by ``npu-smi info``; ``None`` when they were not counted: the
    devices not probed, or ``npu-smi`` not answering), ``summary`` (``"8 NPU chip(s), CANN
    8.0.0, torch_npu 2.1.0.post10"``, possibly empty), ``unchecked`` (``{area: reason}``
    of the areas probed but not judged, :func:`npudoctor.facts.coverage.unchecked`, within
    ``--only``/``--skip``), ``python_choice`` (without ``--python``: which interpreter was
    judged and why, when npudoctor runs from a venv of its own or an active environment
    was chosen over its own -- :func:`npudoctor.session.pyselect.default_choice`; else
    ``None``), ``ignored`` (the findings left out by ``--ignore`` or ``.npudoctor.toml``, as
    ``check --json`` lists them: :func:`npudoctor.config.silenced`), ``ignore_notes`` (what
    to say of the ignores: a config file that could not be used, an ``--ignore`` or
    ``.npudoctor.toml`` entry that names no finding, :func:`npudoctor.config.unknown_ignores`)."""

    findings: List[Any]
    chips: Optional[int] = None
    summary: str = ""
    unchecked: Dict[str, str] = field(default_factory=dict)
    python_choice: Optional[str] = None
    ignored: List[Dict[str, str]] = field(default_factory=list)
    ignore_notes: List[str] = field(default_factory=list)

    def failing(self, fail_on: str = "error") -> List[Any]:
        """Findings of severity ``error`` (``fail_on="warning"``: and ``warning``)."""
        levels = ("error", "warning") if fail_on == "warning" else ("error",)
        return [f for f in self.findings if f.severity in levels]


def areas(values: Sequence[str]) -> List[str]:
    """Area names from repeated/comma-separated ``--only``/``--skip`` values; raises
    ``ValueError`` for a name that is no area (a typo must not switch a check off)."""
    from npudoctor.findings import AREAS, EXTRA_SECTIONS

    names = [a.strip() for v in values for a in v.split(",") if a.strip()]
    unknown = [n for n in names if n not in AREAS and n not in EXTRA_SECTIONS]
    if unknown:
        raise ValueError(f"unknown area {', '.join(unknown)} (areas: {', '.join(AREAS + EXTRA_SECTIONS)})")
    return names


def diagnosed_environ(machine: MachineRequest, environ: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """The environment to diagnose: ``environ`` when given, else the ``--env-file``'s
    (``PATH`` from this process unless the file sets it), else ``os.environ``.  Raises
    ``ValueError`` for an unreadable or malformed env file."""
    from npudoctor.host import started_environ

    if environ is not None:
        return dict(environ)
    return machine.workload_environ(started_environ())


def evaluate_quick(request: QuickRequest, budget: Budget) -> QuickResult:
    """Run the quick probes against the machine (or load ``--from``'s snapshot) and every
    rule; return the findings.

    ``budget.step`` is updated with what is being done, so that a blown budget can name
    it; probes give up at ``budget.probe_deadline()`` and one command may take
    ``budget.command_timeout()`` seconds.  Raises ``ValueError`` for a bad option found
    while working (``--root`` not a directory, an unknown ``--user``, a bad ``--env-file``
    or ``--from`` file, a ``--matrix`` that cannot be loaded, ``--from`` with ``--root``);
    anything else the engine raises propagates.
    """
    from npudoctor.config import load_ignore_entries, silenced, unknown_ignores
    from npudoctor.session.machine import judge
    from npudoctor.session.terminal import UsageError

    machine = request.machine
    options = _quick_options(request, budget)
    shared = request.progress
    loaded: Dict[str, Any] = {}
    if shared is not None:
        shared.loaded = loaded

    def load() -> None:
        # once: in the probing thread right after the slow commands started (npu-smi runs
        # meanwhile), or when the matrix is first asked for (``--from``: no probes)
        if loaded:
            return
        step, budget.step = budget.step, "loading the rules and the matrix"
        _load(request, options, loaded)
        budget.step = step
        if shared is not None and not machine.from_file:
            shared.judging = _judging_thread(shared, list(request.ignore))
            shared.judging.start()

    options.started = load

    def probes_ended() -> None:
        if shared is not None:  # the judging beside the probes stops: the evaluation judges now
            shared.ended = True
            shared.changed.set()

    def matrix() -> Tuple[Any, Optional[str]]:
        probes_ended()
        load()
        if "error" in loaded and request.matrix:
            raise ValueError(str(loaded["error"]))
        budget.step = "judging"
        return loaded.get("matrix"), None

    entries, config_errors = load_ignore_entries()
    origins = [(code, "--ignore") for code in request.ignore] + entries
    ignored: List[Any] = []
    try:
        # the environment probed and choosing the interpreter: the caller's, else the --env-file's
        workload = None if machine.from_file else diagnosed_environ(machine, request.environ)
        if machine.from_file:
            budget.step = "reading the snapshot"
        snapshot, findings = judge(
            machine,
            options,
            workload=workload,
            matrix=matrix,
            ignore=[c for c, _ in origins],
            ignored=ignored,
            shared=shared.shared if shared is not None else None,
        )
    except UsageError as exc:
        raise ValueError(str(exc)) from None
    finally:
        probes_ended()
    result = _quick_result(snapshot, findings, options, machine, shared.shared if shared is not None else None)
    result.ignored = silenced(ignored, origins)
    result.ignore_notes = config_errors + unknown_ignores(origins)
    return result


def _quick_options(request: QuickRequest, budget: Budget) -> Options:
    """The options of a quick run: the budget's deadlines, the areas asked for, and the
    progress callback that names the section being probed (and wakes the judging beside
    the probes)."""
    from npudoctor.context import Options

    options = Options(
        quick=True,
        command_timeout=budget.command_timeout(),
        deadline=budget.probe_deadline(),
        only=set(areas(sorted(request.only))),
        skip=set(areas(sorted(request.skip))),
        require_devices=request.require,
        matrix_path=request.matrix,
        pid=request.pid,
    )
    shared = request.progress
    if shared is not None:
        options.collected = shared.facts
        shared.options = options

    def progress(section: str) -> None:
        budget.step = f"probing {section}"
        if shared is not None:
            shared.changed.set()  # the section before it finished: judge it beside the probes

    options.progress = progress
    return options


def _load(request: QuickRequest, options: Options, loaded: Dict[str, Any]) -> None:
    """Import the rule modules the quick sections need and load the matrix into ``loaded``
    (``loaded["error"]``: why it could not be).  Never raises.

    Why in the probing thread, after the slow commands started: importing the rules and
    parsing the matrix cost more than all quick probes together, so they run while
    ``npu-smi`` does (a slow one does not push them, and the finding that names it, past
    the budget), and not beside the probes in a second thread: two threads that both have
    work take turns at the interpreter, and each turn costs more than it saves
    (``docs/performance.md``)."""
    from npudoctor.engine import load_rules, planned_sections
    from npudoctor.knowledge.matrix import MatrixError, load_matrix

    with contextlib.suppress(Exception):  # evaluate() imports them again and reports a failure
        load_rules(planned_sections(options))  # the modules the quick sections need
    try:
        loaded["matrix"] = load_matrix(request.matrix)
    except MatrixError as exc:
        loaded["error"] = exc
    except Exception as exc:  # a matrix bug must not cost the verdict
        loaded["error"] = MatrixError(f"{type(exc).__name__}: {exc}")


def _judging_thread(progress: Progress, ignore: List[str]) -> threading.Thread:
    """The thread (not started) that judges the areas as they finish while the probes wait
    on a command (:func:`_judge_as_they_finish`); it sleeps while they work."""
    return threading.Thread(
        target=_judge_as_they_finish, args=(progress, ignore), name="npudoctor-quick-judging", daemon=True
    )


def _quick_result(
    snapshot: Snapshot,
    findings: List[Finding],
    options: Options,
    machine: MachineRequest,
    shared: Optional[Dict[str, Any]] = None,
) -> QuickResult:
    """The findings with what health reports beside them: chips, the stack summary and
    the areas not checked (within ``--only``/``--skip``)."""
    from npudoctor.facts.coverage import unchecked

    view = Facts(snapshot.facts, shared)
    every = unchecked(snapshot.facts)
    gaps = {
        area: reason
        for area, reason in every.items()
        if (not options.only or area in options.only) and area not in options.skip
    }
    counted = "devices" in snapshot.facts and "devices" not in every
    return QuickResult(
        findings=findings,
        chips=len(view.devices.chips) if counted else None,
        summary=_summary(view),
        unchecked=gaps,
        python_choice=None if machine.from_file else snapshot.target.get("python_choice"),
    )


def _finished_areas(facts: Mapping[str, Any], options: Any) -> List[str]:
    from npudoctor.findings import AREAS

    return [a for a in AREAS if a in facts and (not options.only or a in options.only) and a not in options.skip]


#: Seconds with no section finished after which the judging beside the probes judges the
#: areas finished so far: the probes are waiting on a command then (``npu-smi`` mostly).
#: While sections finish faster than this, judging them would only take the interpreter
#: from the probes, and the evaluation judges them all at the end anyway.
QUIET = 0.03


def _judge_as_they_finish(progress: Progress, ignore: List[str]) -> None:
    """In the judging thread, once rules and matrix are loaded: judge the areas finished so
    far (every rule on the sections collected, ``only`` = those areas, as ``--only`` would)
    whenever the probes have finished no section for :data:`QUIET` seconds, until they end,
    and keep the latest verdict in ``progress.judged``.  The probes wait for ``npu-smi``
    then, so this costs the run no time, and a budget that runs out answers with this
    verdict at once instead of judging again past the deadline; a cut (:meth:`Progress.freeze`)
    is judged at once.  Never raises."""
    from npudoctor.config import load_ignores
    from npudoctor.engine import evaluate
    from npudoctor.snapshot import Snapshot, now_iso

    try:
        ignores = list(ignore) + load_ignores()[0]
        options = progress.options
        while True:
            progress.changed.wait()
            progress.changed.clear()
            while progress.cut is None and not progress.ended and progress.changed.wait(QUIET):
                progress.changed.clear()  # another section finished: the probes are busy
            cut = progress.cut
            if progress.ended and cut is None:  # the evaluation judges for itself
                return
            facts = dict(progress.facts if cut is None else cut)  # the probe thread may still add one
            done = _finished_areas(facts, options)
            if done and done != progress.judged[0]:
                judged = replace(options, only=set(done), progress=None, collected=None, started=None)
                snapshot = Snapshot(facts=facts, target={"mode": "partial"}, node="", created=now_iso())
                findings = evaluate(
                    snapshot, progress.loaded.get("matrix"), judged, ignore=ignores, shared=progress.shared
                )
                progress.judged = (done, findings)
            if cut is not None:
                return
    except Exception:  # a verdict of the finished areas is a bonus; the full one still comes
        return


#: Longest wait, seconds, of a check stopped before its deadline (SIGTERM) for the judging
#: of the areas finished at the cut, already under way beside the probes; never past the
#: deadline.
LOAD_GRACE = 0.5


def finished_findings(
    progress: Optional[Progress],
    ignore: Sequence[str] = (),
    facts: Optional[Mapping[str, Any]] = None,
    wait: float = 0.0,
) -> Tuple[List[Any], List[str]]:
    """The findings of the areas an unfinished :func:`evaluate_quick` had judged (its
    ``progress``, judged beside the probes: :func:`_judge_as_they_finish`), and those
    areas, so an error found before the budget ran out still counts.  Nothing is judged
    here: a budget that ran out has no time left for it.  ``facts``: the sections at the
    cut; when the judging lags behind them, it is waited for up to ``wait`` seconds (a
    SIGTERM before the deadline; ``0`` when the budget ran out).  ``([], [])`` when no
    area was judged; ``ignore``: codes or names to drop as well.  Never raises."""
    import time

    if progress is None:
        return [], []
    if facts is not None and progress.options is not None and wait > 0:
        want = set(_finished_areas(facts, progress.options))
        until = time.monotonic() + wait
        while not want <= set(progress.judged[0]) and time.monotonic() < until:
            if progress.judging is None or not progress.judging.is_alive():
                break
            time.sleep(0.01)
    done, findings = progress.judged
    dropped = {i.strip().upper() for i in ignore if i.strip()}
    return [f for f in findings if f.code.upper() not in dropped and f.name.upper() not in dropped], list(done)


def unfinished(
    budget: Budget, how: str, pressure: Optional[float] = None, step: Optional[str] = None
) -> Dict[str, str]:
    """The areas a cut-short evaluation left unknown, with the reason: ``{"devices and the
    areas after it": "the 0.9 s budget ran out while probing devices; CPU-starved 97 % of
    the time"}`` (``how``: ``"ran out"`` or ``"was cut by SIGTERM"``; ``pressure``: percent
    of the run the node or this cgroup was CPU-starved, ``None`` when unknown).  The area is
    read from ``step`` (default ``budget.step``: ``"probing AREA"``); any other step leaves
    ``"all areas"``."""
    step = budget.step if step is None else step
    area = step[len("probing ") :] if step.startswith("probing ") else ""
    where = f"{area} and the areas after it" if area else "all areas"
    reason = f"the {budget.seconds:g} s budget {how} while {step}"
    if pressure is not None:
        reason += f"; CPU-starved {pressure:g} % of the time"
    return {where: reason}


def _summary(view: Facts) -> str:
    bits = []
    chips = view.devices.chips
    if chips:
        bits.append(f"{len(chips)} NPU chip(s)")
    selected = view.cann.selected
    if selected is not None and selected.version:
        bits.append(f"CANN {selected.version}")
    npu = view.packages_of("torch-npu").torch_npu  # one project's records, not every one's
    if npu is not None:
        bits.append(f"torch_npu {npu.version}")
    return ", ".join(bits)
