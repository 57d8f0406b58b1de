"""Run a scenario folder (format: ../shared/scenarios/README.md) the way the contract says.

    env -i PATH="<scenario>/bin:/usr/bin:/bin" <[env] pairs> \
        <python> -m npudoctor check --root <scenario>/root --json

The command runs in-process (:func:`npudoctor.cli.run` with that environment injected and
the scenario as the working directory): the same command line, without a Python start per
scenario.

Scenarios may add a ``[setup]`` table that this runner applies to a *copy* of the
scenario before running (real owners and modes cannot live in git):

    [[setup.chmod]]   path = "dev/davinci0"  mode = "0660"
    [[setup.chown]]   path = "dev/davinci0"  uid = 1000  gid = 1000
    [setup] args = ["--user", "1001"]        extra arguments for `check`
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional

from clirun import npudoctor

try:
    import tomllib
except ImportError:  # pragma: no cover
    import tomli as tomllib  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parent.parent
SHARED_SCENARIOS = REPO.parent / "shared" / "scenarios"


def scenario_dirs(*bases: Path) -> List[Path]:
    """Every ``<base>/<name>/scenario.toml`` folder, sorted by name."""
    out: List[Path] = []
    for base in bases:
        if base.is_dir():
            out.extend(sorted(p.parent for p in base.glob("*/scenario.toml")))
    return out


@dataclass
class Run:
    scenario: Path
    spec: Dict[str, Any]
    returncode: int
    stdout: str
    stderr: str
    doc: Optional[Dict[str, Any]]


def prepare(src: Path, workdir: Path) -> Path:
    """Copy the scenario to ``workdir`` (symlinks kept) and apply its ``[setup]``."""
    dst = workdir / src.name
    shutil.copytree(src, dst, symlinks=True)
    spec = tomllib.loads((dst / "scenario.toml").read_text(encoding="utf-8"))
    setup = spec.get("setup", {})
    for item in setup.get("chmod", []):
        os.chmod(dst / "root" / item["path"], int(str(item["mode"]), 8))
    for item in setup.get("chown", []):
        os.chown(dst / "root" / item["path"], int(item.get("uid", -1)), int(item.get("gid", -1)))
    return dst


def environment(scenario: Path, spec: Dict[str, Any]) -> Dict[str, str]:
    env = {"PATH": f"{scenario / 'bin'}:/usr/bin:/bin"}
    for key, value in spec.get("env", {}).items():
        env[str(key)] = str(value)
    return env


def run_check(scenario: Path, extra: Optional[List[str]] = None) -> Run:
    """Run ``check --json`` on a prepared scenario, in-process."""
    spec = tomllib.loads((scenario / "scenario.toml").read_text(encoding="utf-8"))
    args = ["check", "--root", str(scenario / "root"), "--json"]
    args += list(spec.get("setup", {}).get("args", [])) + list(extra or [])
    proc = npudoctor(*args, env=environment(scenario, spec), cwd=scenario)
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        doc = None
    return Run(scenario, spec, proc.returncode, proc.stdout, proc.stderr, doc)


def _finding_text(f: Dict[str, Any]) -> str:
    return "\n".join([f.get("title", "")] + list(f.get("evidence", [])) + list(f.get("fix", [])))


def top_level(findings: List[Dict[str, Any]]) -> List[str]:
    """The codes of the top-level findings of a ``check --json`` list: those the report shows
    as findings of their own, not folded under their cause
    (:func:`npudoctor.report.build.folded_under`)."""
    from npudoctor.findings import Finding
    from npudoctor.report.build import folded_under

    records = [Finding.from_dict(f) for f in findings]
    folded = {id(f) for group in folded_under(records).values() for f in group}
    return [f.code for f in records if id(f) not in folded]


def repeated_commands(findings: List[Dict[str, Any]]) -> List[str]:
    """The commands the ordered fix list (:func:`npudoctor.report.build.fix_list`) prints
    in more than one step: one cause has one fix, and a command run twice in order can
    undo the step before it (a second ``pip uninstall`` removes the copy the first kept)."""
    from npudoctor.findings import Finding
    from npudoctor.report.build import fix_list

    first: Dict[str, str] = {}
    out: List[str] = []
    for f in fix_list([Finding.from_dict(f) for f in findings]):
        for line, remedy in zip(f.fix, f.remedies):
            command = remedy.get("command")
            if not command:
                continue  # prose is said where it belongs
            if command in first and first[command] != f.code:
                out.append(f"{first[command]} and {f.code} both print `{line}`")
            first.setdefault(command, f.code)
    return out


def failures(run: Run) -> List[str]:
    """What the run got wrong against ``[expect]`` (empty list: all expectations met).
    ``top_level = N``: the number of top-level findings (:func:`top_level`: folded
    symptoms not counted); every scenario of this repository states it."""
    problems: List[str] = []
    expect = run.spec.get("expect", {})
    if run.doc is None:
        return [f"no JSON on stdout (exit {run.returncode}); stderr:\n{run.stderr[-2000:]}"]
    findings = run.doc.get("findings", [])
    codes = {f["code"] for f in findings}
    summary = ", ".join(f"{f['code']}:{f['severity']}" for f in findings)
    for code in expect.get("codes", []):
        if code not in codes:
            problems.append(f"expected code {code} not reported (got {summary or 'none'})")
    for code in expect.get("absent", []):
        if code in codes:
            problems.append(f"code {code} reported but must be absent")
    if "top_level" in expect:
        top = top_level(findings)
        if len(top) != expect["top_level"]:
            problems.append(
                f"{len(top)} top-level findings ({', '.join(top) or 'none'}), expected {expect['top_level']} "
                f"(folded symptoms not counted; findings: {summary})"
            )
    problems.extend(f"the fix list repeats a command: {r}" for r in repeated_commands(findings))
    if "exit" in expect and run.returncode != expect["exit"]:
        problems.append(f"exit {run.returncode}, expected {expect['exit']} (findings: {summary})")
    for want in expect.get("finding", []):
        # "grade": the evidence grade the finding must carry in data (issue 13); "source": why
        # the expectation is what it is (documentation only)
        sev = set(want.get("severity", ["error", "warning", "info"]))
        pats = [re.compile(p, re.I) for p in want.get("match", [])]
        grade = want.get("grade")
        if not any(
            f["severity"] in sev
            and all(p.search(_finding_text(f)) for p in pats)
            and (grade is None or (f.get("data") or {}).get("grade") == grade)
            for f in findings
        ):
            problems.append(
                f"no {sorted(sev)} finding matches {want.get('match')}"
                + (f" with grade {grade}" if grade else "")
                + f" (findings: {summary})"
            )
    for unwanted in expect.get("not", []):
        pats = [re.compile(p, re.I) for p in unwanted.get("match", [])]
        hits = [f["code"] for f in findings if all(p.search(_finding_text(f)) for p in pats)]
        if hits:
            problems.append(f"findings {hits} match forbidden {unwanted.get('match')}")
    devices = expect.get("devices")
    if devices:
        chips = (run.doc.get("facts", {}).get("devices", {}) or {}).get("chips", [])
        if "chips" in devices and len(chips) != devices["chips"]:
            problems.append(f"{len(chips)} chips in facts, expected {devices['chips']}")
        if "names" in devices:
            names = sorted({c.get("name") for c in chips})
            if names != sorted(set(devices["names"])):
                problems.append(f"chip names {names}, expected {devices['names']}")
        if "unhealthy" in devices:
            bad = [c for c in chips if str(c.get("health", "")).upper() != "OK"]
            if len(bad) != devices["unhealthy"]:
                problems.append(f"{len(bad)} unhealthy chips, expected {devices['unhealthy']}")
    triage = expect.get("triage")
    if triage:
        problems.extend(triage_failures(run.scenario, run.spec, triage))
    return problems


def triage_failures(scenario: Path, spec: Dict[str, Any], triage: Dict[str, Any]) -> List[str]:
    args = ["triage", str(scenario / triage["log"]), "--root", str(scenario / "root"), "--json"]
    proc = npudoctor(*args, env=environment(scenario, spec))
    text = proc.stdout
    missing = [p for p in triage.get("match", []) if not re.search(p, text, re.I)]
    if missing:
        return [f"triage output (exit {proc.returncode}) does not match {missing}: {text[-1500:]} {proc.stderr[-500:]}"]
    return []
