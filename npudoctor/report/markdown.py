"""Markdown report, redacted, ready to paste into a bug report."""

from __future__ import annotations

import re
from typing import List, Sequence

from npudoctor.findings import Finding, counts
from npudoctor.snapshot import Snapshot, redact


def _stack_lines(snapshot: Snapshot) -> List[str]:
    host = snapshot.section("host")
    py = snapshot.section("python")
    pkgs = snapshot.section("packages").get("installed", {})
    cann = snapshot.section("cann").get("selected") or {}
    driver = snapshot.section("driver")
    rows = [
        ("arch", host.get("arch")),
        ("OS", (host.get("os") or {}).get("pretty_name")),
        ("glibc", host.get("glibc")),
        ("Python", py.get("version")),
    ]
    for name in ("torch", "torch-npu", "torchvision", "numpy"):
        recs = pkgs.get(name) or []
        rows.append((name, ", ".join(str(r.get("version")) for r in recs) or None))
    rows.append(("CANN toolkit", cann.get("version")))
    rows.append(("driver", (driver.get("driver") or {}).get("version")))
    rows.append(("firmware", (driver.get("firmware") or {}).get("version")))
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
    return "\n".join(redact_text_lines(out, snapshot)) + "\n"


#: Account names that say nothing about a person (left as they are in reports).
_SYSTEM_ACCOUNTS = {"root", "hwhiaiuser", "nobody", "daemon", "www-data"}


def redact_text_lines(lines: List[str], snapshot: Snapshot) -> List[str]:
    """Apply the snapshot redaction to free text (findings quote facts verbatim): IPs and
    ``/home/<user>`` as in :func:`redact`, plus the host name and the judged account's
    name wherever they appear as words."""
    personal = []
    host = snapshot.section("host")
    hostname = str(host.get("hostname") or snapshot.node or "")
    name = str((host.get("identity") or {}).get("name") or "")
    if len(hostname) >= 3:
        personal.append((hostname, "<host>"))
    if len(name) >= 3 and name.lower() not in _SYSTEM_ACCOUNTS:
        personal.append((name, "<user>"))
    scrubbed = [str(x) for x in redact(Snapshot(facts={"lines": lines}, node="", created="")).facts["lines"]]
    for word, mask in personal:
        pattern = re.compile(r"(?<![\w.-])" + re.escape(word) + r"(?![\w-])")
        scrubbed = [pattern.sub(mask, line) for line in scrubbed]
    return scrubbed
