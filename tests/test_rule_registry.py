"""The registry of probe and rule modules (issue 18): each rule module's ``READS`` covers every
section it reads, ``health``, ``devices`` and ``check --json`` judge every scenario and example
the same with the pruned imports as with every rule module imported, and the generated
``npudoctor/_registry.py`` is current.

The reads are recorded on the real runs: every :class:`npudoctor.facts.Facts` (the only way
rules read facts) notes the sections asked of it while a rule or post-processor of a module
runs, and the run's findings are compared with the run that imports every module
(:data:`npudoctor.engine.PRUNE_RULES` off).
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import threading
from collections import defaultdict
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

import pytest
from clirun import npudoctor
from scenario_runner import REPO, SHARED_SCENARIOS, environment, prepare, scenario_dirs, tomllib

from npudoctor import context, engine
from npudoctor.facts import SECTIONS, Facts

SCENARIOS = scenario_dirs(REPO / "tests" / "scenarios", REPO / "examples", SHARED_SCENARIOS)

#: The commands compared: ``(name, argv after the command's --root)``.
COMMANDS = (
    ("check", ["check", "--json"]),
    ("health", ["health", "--json", "--timeout", "120"]),
    ("devices", ["devices", "--json"]),
)


class Reads:
    """Sections asked of any :class:`Facts` while a rule module's function runs, in the
    thread that runs it (health judges beside its probe threads, which read facts too)."""

    def __init__(self) -> None:
        self._running = threading.local()
        self.by_module: Dict[str, Set[str]] = defaultdict(set)
        #: areas of the findings each module's rules reported
        self.areas: Dict[str, Set[str]] = defaultdict(set)

    @property
    def current(self) -> Optional[str]:
        return getattr(self._running, "module", None)

    @current.setter
    def current(self, module: Optional[str]) -> None:
        self._running.module = module

    def note(self, section: str) -> None:
        if self.current is not None:
            self.by_module[self.current].add(section)

    def wrap(self, name: str, func: Callable[..., Any], rule: bool = False) -> Callable[..., Any]:
        module = name.split(".", 1)[0]

        def recorded(*args: Any) -> Any:
            before, self.current = self.current, module
            try:
                result = func(*args)
                result = list(result) if result is not None and not isinstance(result, list) else result
                if rule:
                    self.areas[module].update(f.area for f in result or ())
                return result
            finally:
                self.current = before

        return recorded


def _record(mp: pytest.MonkeyPatch, reads: Reads) -> None:
    """Make every Facts note the sections asked of it, and every rule and post-processor
    name its module while it runs."""
    import npudoctor.rules

    engine.load_rules()
    for method in ("_view", "present", "state", "problems", "fields_of"):
        original = getattr(Facts, method)

        def noted(self: Facts, name: str, *args: Any, _original: Any = original) -> Any:
            reads.note(name)
            return _original(self, name, *args)

        mp.setattr(Facts, method, noted)
    packages_of = Facts.packages_of

    def packages_noted(self: Facts, *names: str) -> Any:
        reads.note("packages")
        return packages_of(self, *names)

    mp.setattr(Facts, "packages_of", packages_noted)
    for attr in ("RULES", "POSTPROCESSORS"):  # every module is imported: the lists are complete
        wrapped = [(name, reads.wrap(name, func, attr == "RULES")) for name, func in getattr(npudoctor.rules, attr)]
        mp.setattr(npudoctor.rules, attr, wrapped)


def _findings(stdout: str) -> Any:
    try:
        doc = json.loads(stdout)
    except ValueError:
        return stdout
    return doc.get("findings") if isinstance(doc, dict) else doc


class Runs:
    """Per scenario and command line: ``compared[scenario][command] = (pruned, full)``, each
    ``(exit status, findings)``; ``docs[scenario]``: the ``check --json`` document; ``reads``."""

    def __init__(self) -> None:
        self.compared: Dict[str, Dict[str, Tuple[Any, Any]]] = {}
        self.docs: Dict[str, Any] = {}
        self.reads = Reads()


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Runs:
    """Every scenario's commands (``health`` also with each of its ``[[health]]`` cases'
    arguments), run with the pruned imports and with every rule module, recording reads."""
    import signal

    from npudoctor.runtime import health as health_runtime

    out = Runs()
    sigterm = signal.getsignal(signal.SIGTERM)  # health answers SIGTERM; this process keeps its own
    with pytest.MonkeyPatch.context() as mp:
        # health's budget counts from the start of the process (this long-lived one): from
        # each run's start instead, as when the process age cannot be told
        mp.setattr(health_runtime, "process_started", lambda: None)
        _record(mp, out.reads)
        for src in SCENARIOS:
            scenario = prepare(src, tmp_path_factory.mktemp(src.name))
            spec = tomllib.loads((scenario / "scenario.toml").read_text(encoding="utf-8"))
            extra = [str(a) for a in spec.get("setup", {}).get("args", [])]
            env = environment(scenario, spec)
            lines = [(name, argv + extra) for name, argv in COMMANDS]
            lines += [
                ("health", COMMANDS[1][1] + [str(a) for a in case.get("args", [])]) for case in spec.get("health", [])
            ]
            compared = out.compared[src.name] = {}
            for name, argv in lines:
                got = []
                collected: List[Any] = []
                for prune in (True, False):
                    mp.setattr(engine, "PRUNE_RULES", prune)
                    mp.setattr(engine, "collect", _recording(collected) if prune else _replaying(collected))
                    proc = npudoctor(*argv, "--root", scenario / "root", env=env, cwd=scenario)
                    got.append((proc.returncode, _findings(proc.stdout)))
                    if name == "check" and prune:
                        out.docs[src.name] = json.loads(proc.stdout)
                compared[" ".join(argv)] = (got[0], got[1])
    signal.signal(signal.SIGTERM, sigterm)
    return out


COLLECT = engine.collect


def _recording(snapshots: List[Any]) -> Callable[..., Any]:
    """:func:`engine.collect`, keeping a copy of each snapshot it makes."""

    def collect(host: Any, options: context.Options, sections: Any = None) -> Any:
        snapshot = COLLECT(host, options, sections)
        snapshots.append(copy.deepcopy(snapshot))
        return snapshot

    return collect


def _replaying(snapshots: List[Any]) -> Callable[..., Any]:
    """A collect giving the recorded snapshots again, in order (so that the two runs judge
    the same facts: a hung npu-smi's measured CPU starvation differs run to run)."""
    queue = list(snapshots)

    def collect(host: Any, options: context.Options, sections: Any = None) -> Any:
        snapshot = copy.deepcopy(queue.pop(0))
        if options.collected is not None:
            options.collected.update(snapshot.facts)
        return snapshot

    return collect


def test_every_rule_module_declares_what_it_reads(runs):
    reads = runs.reads
    assert reads.by_module, "no rule read anything: the recording is broken"
    for module, asked in sorted(reads.by_module.items()):
        declared = set(sys.modules[f"npudoctor.rules.{module}"].READS)
        assert asked <= declared, f"rules/{module}.py reads {sorted(asked - declared)}, not in its READS"


def test_every_rule_module_declares_the_areas_it_reports(runs):
    """``RULE_AREAS`` (the codes a module names) holds every area its rules reported on
    every scenario: the engine skips a module whose areas cannot matter to ``--only``."""
    reg = engine.registry()
    assert reg is not None
    declared = {name.rsplit(".", 1)[-1]: set(areas) for name, areas in reg.RULE_AREAS}
    assert {"devices", "container", "packages", "cann"} <= set(runs.reads.areas), sorted(runs.reads.areas)
    for module, areas in sorted(runs.reads.areas.items()):
        assert areas <= declared[module], f"rules/{module}.py reported {sorted(areas - declared[module])}"


def test_devices_skips_the_rule_modules_of_other_areas():
    """``devices`` (areas devices and container) imports no packages, CANN, Python or
    environment rules; their findings would be dropped (and are: the pruned and full runs
    of every scenario compare equal above)."""
    modules = engine.rule_modules(["host", "python", "packages", "devices", "container"], ["devices", "container"])
    short = {m.rsplit(".", 1)[-1] for m in modules}
    assert {"packages", "frameworks", "companions", "python_env"}.isdisjoint(short), short
    assert {"devices", "visibility", "container", "container_world", "driver", "order"} <= short, short
    every = engine.rule_modules(["host", "python", "packages", "devices", "container"])
    assert {"packages", "frameworks", "python_env"} <= {m.rsplit(".", 1)[-1] for m in every}


#: The rule tests, run again with the reads recorded (tests/readsplugin.py).
#: The tests that call rules on facts of their own (odd facts no scenario has).
RULE_TESTS = sorted(p.name for p in (REPO / "tests").glob("test_*_rules.py")) + [
    "test_libraries.py",
    "test_libraries_fixes.py",
    "test_chips_catalogue.py",
]


@pytest.fixture(scope="module")
def rule_test_reads(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, List[str]]:
    """``{rule module: sections it read}`` while the rule tests ran (in a child pytest)."""
    out = tmp_path_factory.mktemp("reads") / "reads.json"
    assert len(RULE_TESTS) >= 5, RULE_TESTS
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "readsplugin", *RULE_TESTS],
        env=dict(os.environ, NPUDOCTOR_RECORD_READS=str(out), PYTHONPATH=f"{REPO}{os.pathsep}{REPO / 'tests'}"),
        cwd=str(REPO / "tests"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    reads: Dict[str, List[str]] = json.loads(out.read_text(encoding="utf-8"))
    return reads


def test_the_rule_tests_read_only_what_the_modules_declare(rule_test_reads):
    """The rule tests call rules on odd facts no scenario has: what each rule module read
    there is in its ``READS`` too."""
    reads = rule_test_reads
    assert {"cann", "frameworks", "hccl", "packages", "libraries"} <= set(reads), sorted(reads)
    reg = engine.registry()
    assert reg is not None
    declared = {name.rsplit(".", 1)[-1]: set(reads) for name, reads, _only, _post in reg.RULE_MODULES}
    for module, asked in sorted(reads.items()):
        assert set(asked) <= declared[module], (
            f"rules/{module}.py reads {sorted(set(asked) - declared[module])} in the rule tests"
        )


def test_every_declared_read_is_read_somewhere(runs, rule_test_reads):
    """Every section a module declares is read on some scenario or in the rule tests."""
    for name in engine.module_names("npudoctor.rules"):
        module = name.rsplit(".", 1)[-1]
        declared = set(sys.modules[name].READS)
        assert declared <= set(SECTIONS)
        read = runs.reads.by_module.get(module, set()) | set(rule_test_reads.get(module, ()))
        assert declared <= read | {"access", "_errors"}, (
            f"rules/{module}.py declares {sorted(declared - read)} it never read"
        )


def test_pruned_imports_judge_like_every_module(runs):
    assert len(runs.compared) == len(SCENARIOS) >= 100
    judged, differ = 0, []
    for scenario, commands in runs.compared.items():
        for command, (pruned, full) in commands.items():
            assert isinstance(full[1], list), f"{scenario}: {command} printed no JSON: {full[1]!r}"
            if pruned != full:
                differ.append(f"{scenario}: {command}: {json.dumps(pruned)[:3000]}\n  != {json.dumps(full)[:3000]}")
            judged += bool(full[1])
    assert not differ, "differ with the pruned rule modules:\n" + "\n".join(differ)
    assert judged > 250, "most runs have findings to compare"


def test_a_module_says_nothing_without_its_only_with_sections(runs, monkeypatch):
    """Each ``ONLY_WITH`` holds on every scenario: with those sections taken out of its
    facts, the module's rules find nothing, and its post-processors change nothing of what
    the others judged."""
    import npudoctor.rules
    from npudoctor.knowledge.matrix import load_matrix
    from npudoctor.snapshot import Snapshot

    matrix = load_matrix(None)
    reg = engine.registry()
    assert reg is not None
    pruned = [(name.rsplit(".", 1)[-1], only, post) for name, _reads, only, post in reg.RULE_MODULES if only]
    assert {"hccl", "libraries", "deep", "cann", "environment"} <= {m for m, _, _ in pruned}
    monkeypatch.setattr(engine, "PRUNE_RULES", False)
    every = list(npudoctor.rules.POSTPROCESSORS)
    groups: Dict[Tuple[str, ...], List[str]] = defaultdict(list)  # post-processing modules by ONLY_WITH
    for module, only, post in pruned:
        if post:
            groups[only].append(module)
    for scenario, doc in runs.docs.items():
        for module, only, _post in pruned:
            without = Snapshot.from_dict(dict(doc, facts={k: v for k, v in doc["facts"].items() if k not in only}))
            ctx = context.RuleContext(without, matrix, context.Options())
            for name, func in npudoctor.rules.RULES:
                if name.split(".", 1)[0] == module:
                    assert not list(func(ctx) or ()), f"{scenario}: {name} speaks without {only}"
        for only, modules in groups.items():
            # judged without these modules' post-processors, each of them changes nothing
            without = Snapshot.from_dict(dict(doc, facts={k: v for k, v in doc["facts"].items() if k not in only}))
            ctx = context.RuleContext(without, matrix, context.Options())
            others = [(n, f) for n, f in every if n.split(".", 1)[0] not in modules]
            monkeypatch.setattr(npudoctor.rules, "POSTPROCESSORS", others)
            judged = engine.evaluate(without, matrix, context.Options())
            for name, post in every:
                if name.split(".", 1)[0] in modules:
                    assert post(ctx, list(judged)) == judged, f"{scenario}: {name} acts without {only}"


def test_health_and_devices_import_only_what_they_run(tmp_path):
    """In a fresh interpreter, ``health`` imports the quick probes and no rule module whose
    sections it does not collect; ``devices`` its five probes.  Neither defines the views of
    sections it never reads (the libraries views; for ``devices`` the environment's too)."""
    scenario = prepare(REPO / "tests" / "scenarios" / "health-910b3-8npu-healthy", tmp_path)
    spec = tomllib.loads((scenario / "scenario.toml").read_text(encoding="utf-8"))
    code = (
        "import sys, runpy\n"
        "sys.argv = ['npudoctor'] + sys.argv[1:]\n"
        "try:\n"
        "    runpy.run_module('npudoctor', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith(('npudoctor.probes.', 'npudoctor.rules.', "
        "'npudoctor.facts.'))), "
        "file=sys.stderr)\n"
    )
    loaded: Dict[str, List[str]] = {}
    # a generous budget: health ends its process when its budget runs out, which a loaded
    # machine can make it do before the list is printed
    for command, extra in (("health", ["--timeout", "120"]), ("devices", [])):
        proc = subprocess.run(
            [sys.executable, "-c", code, command, "--root", str(scenario / "root"), *extra],
            env=dict(environment(scenario, spec), PYTHONPATH=str(REPO)),
            capture_output=True,
            text=True,
            timeout=120,
            cwd=str(scenario),
        )
        loaded[command] = eval(proc.stderr.strip().splitlines()[-1])  # a list literal printed above
    probes = {m.rsplit(".", 1)[-1] for m in loaded["health"] if m.startswith("npudoctor.probes.")}
    assert {"hccl", "hygiene", "libraries", "frameworks", "deep"}.isdisjoint(probes), probes
    assert {"devices", "cann", "packages", "environment"} <= probes
    rules = {m.rsplit(".", 1)[-1] for m in loaded["health"] if m.startswith("npudoctor.rules.")}
    assert {"hccl", "deep", "library_symbols"}.isdisjoint(rules), rules
    assert {"devices", "cann", "environment", "order"} <= rules
    devices = {m.rsplit(".", 1)[-1] for m in loaded["devices"] if m.startswith("npudoctor.probes.")}
    assert {"cann", "driver", "environment"}.isdisjoint(devices), devices
    views = {c: {m.rsplit(".", 1)[-1] for m in loaded[c] if m.startswith("npudoctor.facts.")} for c in loaded}
    assert {"runtime_env", "hygiene", "hccl"}.isdisjoint(views["health"]), views["health"]
    assert {"devices", "container", "environment", "system", "stack"} <= views["health"]
    assert {"runtime_env", "environment", "hygiene", "hccl"}.isdisjoint(views["devices"]), views["devices"]
    assert {"devices", "container", "system"} <= views["devices"]


def test_the_registry_is_current():
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gen_registry.py")], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert engine.registry() is not None, "the registry does not list the modules on disk"


def test_a_stale_registry_falls_back_to_every_module(monkeypatch):
    """A module on disk the registry does not list (added without regenerating it): the
    registry is not used; every probe and rule module is imported and asked, as before."""
    from npudoctor import _registry

    monkeypatch.setattr(engine, "_REGISTRY", None)
    monkeypatch.setattr(_registry, "SCANNED", _registry.SCANNED[:-1])
    assert engine.registry() is None
    assert {s.section for s in engine.probe_specs()} == {spec[1] for spec in _registry.PROBES}
    assert engine.rule_modules({"host"}) == engine.module_names("npudoctor.rules")
    monkeypatch.undo()
    assert engine.registry() is not None


def test_the_findings_keep_the_registry_order_whatever_was_imported_first(runs, monkeypatch):
    """Rules registered in another order (modules imported by an earlier, pruned run) still
    run in the order importing every module gives: the same findings, post-processed alike."""
    import npudoctor.rules
    from npudoctor.knowledge.matrix import load_matrix
    from npudoctor.snapshot import Snapshot

    matrix = load_matrix(None)
    snapshots = [Snapshot.from_dict(runs.docs[name]) for name in sorted(runs.docs)[:20]]
    before = [engine.evaluate(s, matrix, context.Options()) for s in snapshots]
    monkeypatch.setattr(npudoctor.rules, "RULES", list(reversed(npudoctor.rules.RULES)))
    monkeypatch.setattr(npudoctor.rules, "POSTPROCESSORS", list(reversed(npudoctor.rules.POSTPROCESSORS)))
    assert [engine.evaluate(s, matrix, context.Options()) for s in snapshots] == before
