"""Markdown report, redacted, ready to paste into a bug report."""

from __future__ import annotations

import re
from typing import List, Optional, Sequence, Tuple

from npudoctor.facts import Facts
from npudoctor.facts.coverage import unchecked
from npudoctor.findings import AREA_TITLES, Finding, counts
from npudoctor.redact import Redactor, conceal_text
from npudoctor.snapshot import Snapshot, redact


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


def render(snapshot: Snapshot, findings: Sequence[Finding]) -> str:
    """The Markdown text (personal data removed with :func:`redact`)."""
    safe = redact(snapshot)
    summary = counts(findings)
    out = [
        f"### npudoctor {safe.npudoctor_version} report",
        "",
        f"{summary['error']} error(s), {summary['warning']} warning(s), {summary['info']} note(s).",
        "",
        "| component | version |",
        "|---|---|",
        *_stack_lines(safe),
        "",
    ]
    if findings:
        out += ["| severity | code | finding |", "|---|---|---|"]
        for f in findings:
            title = f.title.replace("|", "\\|")
            out.append(f"| {f.severity} | `{f.code}` {f.name} | {title} |")
        out.append("")
        out.append("<details><summary>evidence and fixes</summary>")
        out.append("")
        for f in findings:
            out.append(f"**{f.code}** {f.title}")
            out += [f"- evidence: {e}" for e in f.evidence]
            if f.fix:
                out += ["", "```text", *f.fix, "```"]
            out.append("")
        out.append("</details>")
    gaps = unchecked(safe.facts)
    if gaps:
        out += ["", "Not checked (neither a problem nor a clean bill):", ""]
        out += [f"- {AREA_TITLES[a]}: {reason.replace('|', '/')}" for a, reason in gaps.items()]
    return "\n".join(redact_text_lines(out, snapshot)) + "\n"


#: Account names that say nothing about a person (left as they are in reports).
_SYSTEM_ACCOUNTS = {"root", "hwhiaiuser", "nobody", "daemon", "www-data"}


def redact_text_lines(lines: List[str], snapshot: Snapshot) -> List[str]:
    """Apply the snapshot redaction to free text (findings quote facts verbatim): the host
    name and the judged account's name wherever they appear as words become ``<host>`` and
    ``<user>``; secrets, other host and user names (``MASTER_ADDR``, paths) and addresses
    are handled as in :func:`redact` (:class:`npudoctor.redact.Redactor`, the same
    pseudonyms as the snapshot's)."""
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
    redactor = Redactor.for_facts(snapshot.facts, "" if snapshot.redacted else snapshot.node)
    return [redactor.text(line) for line in scrubbed]
