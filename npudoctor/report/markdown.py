"""Markdown report, redacted, ready to paste into a bug report: the same summary, folding and\nfix order as the text report (:mod:`npudoctor.report.text`)."""

from __future__ import annotations

import re
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from npudoctor.facts import Facts
from npudoctor.facts.coverage import unchecked
from npudoctor.findings import AREA_TITLES, Finding, counts
from npudoctor.redact import Redactor, conceal_text
from npudoctor.remedies.render import example
from npudoctor.report.build import fix_list, folded_under, has_dependencies, order_header
from npudoctor.report.escape import quoted
from npudoctor.report.layout import command_of, remedy_for
from npudoctor.report.summary import area_lines
from npudoctor.snapshot import Snapshot, redactor_for


def _stack_lines(snapshot: Snapshot) -> List[str]:
    facts = Facts(snapshot.facts)
    host, driver = facts.host, facts.driver
    selected = facts.cann.selected
    rows: List[Tuple[str, Optional[str]]] = [
        ("arch", host.arch),
        ("OS", host.os.pretty_name),
        ("glibc", host.glibc),
        ("Python", facts.python.version),
    ]
    for name in ("torch", "torch-npu", "torchvision", "numpy"):
        recs = facts.packages.installed.get(name, ())
        rows.append((name, ", ".join(str(r.version) for r in recs) or None))
    rows.append(("CANN toolkit", selected.version if selected else None))
    rows.append(("driver", driver.driver.version))
    rows.append(("firmware", driver.firmware.version))
    return [f"| {k} | {v if v else '—'} |" for k, v in rows]


def _cell(text: str) -> str:
    """``text`` fit for one Markdown table cell (``|`` escaped, one line)."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _summary_lines(
    snapshot: Snapshot, findings: Sequence[Finding], product_lines: Optional[Mapping[str, str]] = None
) -> List[str]:
    """The per-area summary of the text report as a table: mark (✓ ! ✗ –), area, what
    was found (:func:`npudoctor.report.summary.area_lines`)."""
    out = ["| | area | found |", "|---|---|---|"]
    for item in area_lines(snapshot.facts, findings, product_lines):
        out.append(f"| {item.mark} | {_cell(item.title)} | {_cell(item.found) or '—'} |")
    return out


def _fix_block(f: Finding) -> List[str]:
    """``f``'s fix lines: the commands in ``sh`` blocks, as pasted (a note as a ``#``
    comment), consecutive ones in one block; prose (a lead, a step no command can say)
    outside them, once; docker flags, which are no command of their own, in a ``text``
    block."""
    out: List[str] = []
    block: List[str] = []

    def flush() -> None:
        if block:
            out.extend(["", "```sh", *block, "```"])
            block.clear()

    for i, line in enumerate(f.fix):
        remedy = remedy_for(f, i)
        cmd = command_of(remedy)
        if remedy is not None and remedy.get("kind") == "docker-flags" and remedy.get("command"):
            flush()
            lead = str(remedy.get("lead") or "").strip() or "docker run flags:"
            out.extend(["", lead, "", "```text", str(remedy["command"]), "```"])
            continue
        split = example(line) if remedy is not None and remedy.get("kind") == "install-package" else None
        if cmd is None and split is not None:
            flush()
            out.extend(["", split[0] + ":"])
            block.append(f"{split[2]}  # for {split[1]}")
            continue
        if cmd is None or remedy is None:
            flush()
            out.extend(["", line])
            continue
        lead = str(remedy.get("lead") or "").strip()
        note = line[line.find(cmd) + len(cmd) :].strip() if cmd in line else ""
        if lead:
            flush()
            out.extend(["", lead])
        block.append(cmd + (f"  {note}" if note.startswith("#") else f"  # {note}" if note else ""))
    flush()
    return out


def render(snapshot: Snapshot, findings: Sequence[Finding], product_lines: Optional[Mapping[str, str]] = None) -> str:
    """The Markdown text: the per-area summary table, the stack's versions, one row per
    root-cause finding with its follow-on symptoms folded under it (``because of``:
    :func:`npudoctor.report.build.folded_under`, as in the text report), evidence and fixes
    of the root causes (symptoms listed under their cause, without fixes), the ordered fix
    list when fixes depend on each other, and the areas not checked.

    Personal data and secrets are removed from the finished lines
    (:func:`redact_text_lines`, with the redactor of :func:`npudoctor.snapshot.redactor_for`,
    which knows the snapshot's host and user names and addresses): the findings quote facts
    verbatim, and so does every line drawn from the facts here (versions, paths, chip
    names, reasons), none of them from a key whose value the snapshot's redaction treats
    apart (a secret-named key, a host or user name), so redacting the snapshot first
    would change nothing the report shows.  ``tests/test_facts_views.py`` checks that no
    scenario's report shows what the snapshot's redaction removes.

    The finished text has its control characters escaped, colour codes included
    (:func:`npudoctor.report.escape.quoted`): a Markdown report has no colours of its own,
    and a value it quotes cannot recolour the terminal it is printed on."""
    redactor = redactor_for(snapshot)
    folded: Dict[str, List[Finding]] = folded_under(findings)
    hidden = {id(f) for group in folded.values() for f in group}
    shown = [f for f in findings if id(f) not in hidden]
    summary = counts(shown)
    tally = f"{summary['error']} error(s), {summary['warning']} warning(s), {summary['info']} note(s)"
    if hidden:
        tally += f", {len(hidden)} follow-on finding(s) folded under their cause"
    out = [
        f"### npudoctor {snapshot.npudoctor_version} report",
        "",
        tally + ".",
        "",
        *_summary_lines(snapshot, findings, product_lines),
        "",
        "| component | version |",
        "|---|---|",
        *_stack_lines(snapshot),
        "",
    ]
    if shown:
        out += ["| severity | code | finding |", "|---|---|---|"]
        for f in shown:
            out.append(f"| {f.severity} | `{f.code}` {f.name} | {_cell(f.title)} |")
            for s in folded.get(f.code, []):
                out.append(f"| {s.severity} | ↳ `{s.code}` {s.name} | because of {f.code}: {_cell(s.title)} |")
        out.append("")
        out.append("<details><summary>evidence and fixes</summary>")
        out.append("")
        for f in shown:
            out.append(f"**{f.code}** {f.title}")
            out += [f"- evidence: {e}" for e in f.evidence]
            out += _fix_block(f)
            symptoms = folded.get(f.code, [])
            if symptoms:
                out += ["", f"Because of this ({f.code}), also:", ""]
                out += [f"- `{s.code}` {s.title}" for s in symptoms]
            out.append("")
        ordered = fix_list(shown) if has_dependencies(shown) else []
        if len(ordered) > 1:
            out += [f"Fix in this order ({order_header(ordered)}):", ""]
            out += [f"{n}. `{f.code}` {f.title}" for n, f in enumerate(ordered, start=1)]
            out.append("")
        out.append("</details>")
    gaps = unchecked(snapshot.facts)
    if gaps:
        out += ["", "Not checked (neither a problem nor a clean bill):", ""]
        out += [f"- {AREA_TITLES[a]}: {reason.replace('|', '/')}" for a, reason in gaps.items()]
    return quoted("\n".join(redact_text_lines(out, snapshot, redactor))) + "\n"


#: Account names that say nothing about a person (left as they are in reports).
_SYSTEM_ACCOUNTS = {"root", "hwhiaiuser", "nobody", "daemon", "www-data"}


def redact_text_lines(lines: List[str], snapshot: Snapshot, redactor: Optional[Redactor] = None) -> List[str]:
    """Apply the snapshot redaction to free text (findings quote facts verbatim): the host
    name and the judged account's name wherever they appear as words become ``<host>`` and
    ``<user>``; secrets, other host and user names (``MASTER_ADDR``, paths) and addresses
    are handled as in :func:`redact` (:class:`npudoctor.redact.Redactor`, the same
    pseudonyms as the snapshot's; ``redactor``: the one :func:`npudoctor.snapshot.redactor_for`
    gave for ``snapshot``, made here when not given)."""
    personal = []
    host = Facts(snapshot.facts).host
    hostname = str(host.hostname or snapshot.node or "")
    name = str(host.identity.name or "")
    if len(hostname) >= 3:
        personal.append((hostname, "<host>"))
    if len(name) >= 3 and name.lower() not in _SYSTEM_ACCOUNTS:
        personal.append((name, "<user>"))
    scrubbed = [conceal_text(str(line)) for line in lines]
    for word, mask in personal:
        pattern = re.compile(r"(?<![\w.-])" + re.escape(word) + r"(?![\w-])")
        scrubbed = [pattern.sub(mask, line) for line in scrubbed]
    if redactor is None:
        redactor = redactor_for(snapshot)
    return [redactor.text(line) for line in scrubbed]
