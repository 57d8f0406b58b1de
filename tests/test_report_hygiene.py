"""Every report of every scenario (issue 19): fix commands are pasteable, and no internal
label leaks into what a person reads.

The scenarios (``tests/scenarios``, ``examples``) are run once with ``check --json`` (with
their own ``[setup]``); the text report of each is rendered from that document with the
same renderer ``check`` uses (plain, 80 columns, verbose: evidence included).
"""

from __future__ import annotations

import io
import re
import shlex
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from scenario_runner import REPO, SHARED_SCENARIOS, prepare, run_check, scenario_dirs  # noqa: E402

from npudoctor.findings import Finding  # noqa: E402
from npudoctor.report.layout import plain_commands  # noqa: E402
from npudoctor.report.text import render  # noqa: E402
from npudoctor.snapshot import Snapshot  # noqa: E402

SCENARIOS = scenario_dirs(REPO / "tests" / "scenarios", REPO / "examples", SHARED_SCENARIOS)

#: A placeholder inside a command: ``<path>``, ``<your command>`` (``<`` / ``>`` used as
#: redirections are written with spaces around them and are not matched).
PLACEHOLDER = re.compile(r"<[A-Za-z_][^<>\s]*(?:\s[^<>]*)?>")


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> List[Tuple[str, Dict[str, Any], str]]:
    """``[(scenario name, check --json document, text report)]`` of every scenario."""
    out = []
    base = tmp_path_factory.mktemp("hygiene")
    for scenario in SCENARIOS:
        run = run_check(prepare(scenario, base))
        assert run.doc is not None, f"{scenario.name}: {run.stderr[-500:]}"
        snapshot = Snapshot.from_dict(run.doc)
        findings = [Finding.from_dict(f) for f in run.doc["findings"]]
        buffer = io.StringIO()
        render(snapshot, findings, verbose=True, file=buffer, color=False, width=80)
        out.append((scenario.name, run.doc, buffer.getvalue()))
    return out


def _commands(doc: Dict[str, Any]) -> List[Tuple[str, str]]:
    """``[(code, command)]``: the bare commands of every remedy and the commands quoted in
    backticks inside prose fix lines."""
    out: List[Tuple[str, str]] = []
    for raw in doc["findings"]:
        f = Finding.from_dict(raw)
        out += [(f.code, c) for c in plain_commands(f)]
        for line in f.fix:
            out += [(f.code, c) for c in re.findall(r"`([^`]+)`", line)]
    return out


def test_every_fix_command_is_pasteable(reports):
    """No ``…``, no ``<placeholder>``, and it parses as shell words."""
    bad = []
    for name, doc, _text in reports:
        for code, command in _commands(doc):
            problem = None
            if "…" in command or "..." in command:
                problem = "an ellipsis"
            elif PLACEHOLDER.search(command):
                problem = f"a placeholder {PLACEHOLDER.search(command).group(0)!r}"  # type: ignore[union-attr]
            else:
                try:
                    shlex.split(command)
                except ValueError as exc:
                    problem = f"not shell words ({exc})"
            if problem:
                bad.append(f"{name}: {code}: {problem}: {command}")
    assert not bad, "\n".join(bad)


#: The first words of a fix line that is a command (a prose line starting with one is a
#: command printed as prose: it must be a command remedy, printed after ``$ ``).
COMMAND_WORDS = re.compile(
    r"^(?:dmesg|lsmod|npu-smi|npudoctor|export|unset|source|python3?|pip3?|ldconfig|chmod|chown|ls|cat|grep)\s"
)


def test_no_command_is_printed_as_prose(reports):
    """A fix line whose text is a complete command is a command remedy (``$ `` in the text
    report, ``command`` in JSON), never a prose step (issue 19)."""
    bad = []
    for name, doc, _text in reports:
        for raw in doc["findings"]:
            for line, remedy in zip(raw["fix"], raw["remedies"]):
                if remedy["kind"] == "prose" and COMMAND_WORDS.match(line):
                    bad.append(f"{name}: {raw['code']}: {line}")
    assert not bad, "\n".join(bad)


#: What never appears in a report a person reads: a root-cause kind label without its
#: name (K10), a fact key path (``cann.selected``), a path into this repository.
KIND_ALONE = re.compile(r"(?<![\w/-])K\d{2}(?![\w])")
FACT_KEY = re.compile(
    r"\b(?:cann|driver|python|packages|environment|libraries|devices|container|hccl|host|deep)"
    r"\.(?:selected|toolkits|nnal|env|driver|firmware|npu_smi|chips|nodes|expected|resolution|loader)\b"
)
REPO_PATH = re.compile(r"(?:\.\./)+shared/|/work/shared/|cases/cases\.md|kinds\.md")


def test_no_internal_labels_in_any_report(reports):
    bad = []
    for name, _doc, text in reports:
        for line in text.splitlines():
            for pattern, what in ((KIND_ALONE, "kind label"), (FACT_KEY, "fact key"), (REPO_PATH, "repository path")):
                m = pattern.search(line)
                if m:
                    bad.append(f"{name}: {what} {m.group(0)!r} in: {line.strip()}")
    assert not bad, "\n".join(bad[:60]) + (f"\n… and {len(bad) - 60} more" if len(bad) > 60 else "")


def test_explain_names_every_kind_and_points_nowhere_inside_the_repository():
    from clirun import npudoctor

    from npudoctor.knowledge.codes import all_codes

    for code in all_codes():
        text = npudoctor("explain", code.code, env={"PATH": "/usr/bin:/bin", "COLUMNS": "80"}).stdout
        assert not REPO_PATH.search(text), (code.code, text)
        for kind in code.kinds:
            line = next(ln for ln in text.splitlines() if ln.startswith(f"  {kind}  "))
            assert len(line.split()) > 2, line  # the kind with its name
        assert all(len(ln) <= 80 or " " not in ln or "`" in ln for ln in text.splitlines()), code.code
