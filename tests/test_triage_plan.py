"""Triage's start-up: the plan (``npudoctor/knowledge/_signatures_plan.py``: the signature
anchors and the gate plan derived at build time) is current and gives what deriving them at
start-up gives; a triage without facts builds no facts view."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from npudoctor.facts import Facts
from npudoctor.knowledge import _signatures_plan as plan
from npudoctor.knowledge.signatures import load_kb
from npudoctor.triage.gate import gate_for, plan_pivots
from npudoctor.triage.rank import display_values
from npudoctor.triage.scan import FRAME_ANCHOR, Scanner, entry_candidates

REPO = Path(__file__).resolve().parent.parent


def test_the_plan_is_current() -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gen_triage_plan.py")], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr


def test_the_packaged_signatures_are_loaded_from_the_plan_without_parsing_a_pattern() -> None:
    planned, derived = load_kb(), load_kb(use_plan=False)
    assert len(planned.entries) >= 60
    assert all(not e.parsed for e in planned.entries)
    assert all(len(e.parsed) == len(e.patterns) for e in derived.entries)
    assert [e.anchors for e in planned.entries] == [e.anchors for e in derived.entries]
    assert planned.anchors == derived.anchors and planned.code_gates == derived.code_gates
    libgomp = next(e for e in planned.entries if e.id == "libgomp-static-tls")
    assert libgomp.anchors == [[b": cannot allocate memory in static TLS block"]]
    line = b"/opt/env/lib/libgomp.so.1: cannot allocate memory in static TLS block"
    assert libgomp.match_bytes(line) == {"lib": "/opt/env/lib/libgomp.so.1"}


def test_the_scanner_gate_comes_from_the_plan_and_equals_one_planned_anew() -> None:
    kb = load_kb()
    gate = gate_for(kb, (FRAME_ANCHOR,))
    assert gate.groups is plan.GROUPS
    members: dict = {}
    assert plan_pivots(list(kb.anchors) + [FRAME_ANCHOR], kb.code_gates, members) == plan.GROUPS
    assert members == plan.MEMBERS


def test_the_scanner_s_candidates_come_from_the_plan_and_equal_those_worked_out_anew() -> None:
    kb = load_kb()
    assert kb.planned and not load_kb(use_plan=False).planned
    sc = Scanner(kb)
    assert sc._by_anchor is plan.CANDIDATES
    always, candidates = entry_candidates(kb.entries, tuple(kb.anchors) + (FRAME_ANCHOR,))
    assert (always, candidates) == (plan.ALWAYS, plan.CANDIDATES)
    assert tuple(e.id for e in kb.entries) == plan.ENTRY_IDS
    # another knowledge base works its candidates out at start
    other = Scanner(load_kb(use_plan=False))
    assert other._by_anchor is not plan.CANDIDATES and other._by_anchor == plan.CANDIDATES


def test_a_signature_changed_since_the_plan_is_parsed_at_load(tmp_path: Path) -> None:
    """Another file (or a pattern the plan does not hold) is derived as before."""
    src = Path(load_kb().path).read_text(encoding="utf-8")
    changed = src.replace(": cannot allocate memory in static TLS block", ": cannot allocate memory in static TLS", 1)
    assert changed != src
    path = tmp_path / "signatures.toml"
    path.write_text(changed, encoding="utf-8")
    kb = load_kb(str(path))
    libgomp = next(e for e in kb.entries if e.id == "libgomp-static-tls")
    assert libgomp.parsed and libgomp.anchors == [[b": cannot allocate memory in static TLS"]]
    gate = gate_for(kb, (FRAME_ANCHOR,))
    assert gate.groups is not plan.GROUPS


def test_a_triage_without_facts_builds_no_facts_view(tmp_path: Path) -> None:
    """``--no-facts``: the placeholders take their defaults from the absent sections, and the
    view modules (dataclasses of every probe's facts) are never imported."""
    log = tmp_path / "train.log"
    log.write_text(
        "step 1\nImportError: libhccl.so: cannot open shared object file: No such file or directory\n",
        encoding="utf-8",
    )
    code = (
        "import sys\n"
        "from npudoctor.entry import main\n"
        "try:\n"
        f"    main([{'triage'!r}, {str(log)!r}, '--no-facts', '--json'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.stderr.write(' '.join(sorted(m for m in sys.modules if m.startswith('npudoctor.facts.'))))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    doc = json.loads(proc.stdout)
    assert "cann-library-not-found" in json.dumps(doc)
    imported = proc.stderr.split()
    assert "npudoctor.facts.stack" not in imported and "npudoctor.facts.system" not in imported, imported


def test_display_values_of_absent_sections_are_the_defaults() -> None:
    assert display_values(Facts({})) == {
        "python": "python",
        "toolkit_set_env": "/usr/local/Ascend/ascend-toolkit/set_env.sh",
        "cann_version": "(none)",
        "protobuf": "protobuf",
        "hccl_connect_timeout": "",
        "hccl_exec_timeout": "",
    }
    given = display_values(Facts({"python": {"executable": "/opt/py/bin/python3"}}))
    assert given["python"] == "/opt/py/bin/python3"


def test_scanning_imports_no_host_or_process_machinery() -> None:
    """The packaged signatures are read through their compiled twin: loading them and building
    the scanner imports neither npudoctor.host nor subprocess (the deep rules and ``explain``
    load the signatures too; the triage command imports the host to open its logs), nor the
    string module (placeholders are filled with str.format_map)."""
    code = (
        "import sys\n"
        "import npudoctor.triage\n"
        "from npudoctor.knowledge.signatures import load_kb\n"
        "from npudoctor.triage.scan import Scanner\n"
        "Scanner(load_kb())\n"
        "print(' '.join(m for m in ('npudoctor.host', 'npudoctor.hostproc', 'subprocess', 'string') if m in sys.modules))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == []
