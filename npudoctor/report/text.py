"""Human report: a summary line per area (✓ / ! / ✗ / –) with what was found, then one
finding per root cause with its follow-on symptoms folded under it, then one ordered fix
list.

Terminal-aware: prose is wrapped to ``width`` columns (words and paths are never split);
a command is never broken -- it is printed whole after ``$ `` (on its own line when it does
not fit), so it can be pasted.  Without colour the text is plain and stable (piped output,
golden tests).  Lines are built by :mod:`npudoctor.report.layout`.
"""

from __future__ import annotations

from typing import IO, Dict, List, Mapping, Optional, Sequence, Tuple

from npudoctor.facts import Facts
from npudoctor.findings import Finding, counts
from npudoctor.report.build import fix_list, folded_under, has_dependencies, order_header
from npudoctor.report.layout import Line, Painter, fix_lines, wrap
from npudoctor.report.summary import area_lines
from npudoctor.snapshot import Snapshot

#: Mark and style of a finding by severity.
MARK = {"error": ("✗", "bold red"), "warning": ("!", "yellow"), "info": ("·", "cyan")}
#: Style of a summary line by state.
STATE_STYLE = {"error": "bold red", "warning": "yellow", "ok": "green", "unchecked": "dim"}


def _headline(snapshot: Snapshot) -> str:
    facts = Facts(snapshot.facts)
    arch, version = facts.host.arch, facts.python.version
    target = snapshot.target or {}
    mode = target.get("mode", "live")
    where = {"live": "this machine", "root": f"root {target.get('root')}", "from": f"snapshot {target.get('from')}"}
    bits = [str(b) for b in (arch, f"Python {version}" if version else None) if b]
    extra = f" ({', '.join(bits)})" if bits else ""
    return f"npudoctor {snapshot.npudoctor_version} — {where.get(mode, mode)}{extra}"


def _summary(
    snapshot: Snapshot, findings: Sequence[Finding], width: int, product_lines: Optional[Mapping[str, str]] = None
) -> List[Line]:
    out: List[Line] = [Line([("Summary", "bold")])]
    for item in area_lines(snapshot.facts, findings, product_lines):
        head = f"  {item.mark} {item.title}" + (": " if item.found else "")
        style = STATE_STYLE[item.state]
        rows = wrap(item.found, width, first=len(head), indent=6) if item.found else [""]
        out.append(Line([(f"  {item.mark}", style), (head[3:], "bold" if item.state != "unchecked" else "dim")]))
        out[-1].segments.append((rows[0], "dim" if item.state == "unchecked" else ""))
        out.extend(Line([(r, "dim" if item.state == "unchecked" else "")]) for r in rows[1:])
    return out


def _finding(
    f: Finding,
    width: int,
    verbose: bool,
    indent: int = 2,
    fixes: bool = True,
    step: Optional[int] = None,
    same_as: Optional[str] = None,
) -> List[Line]:
    """The rows of one finding; ``same_as``: the code of a finding shown above whose fix
    lines are these very lines (said once, referred to here)."""
    mark, style = MARK[f.severity]
    lead = " " * indent + f"{mark} {f.code} "
    rows = wrap(f.title, width, first=len(lead), indent=len(lead))
    out = [Line([(" " * indent, ""), (mark, style), (" ", ""), (f.code, "dim"), (" " + rows[0], "")])]
    out.extend(Line([(r, "")]) for r in rows[1:])
    body = indent + 4
    if verbose:
        for line in f.evidence:
            for n, r in enumerate(wrap(line, width, first=body + 10, indent=body + 2)):
                out.append(Line([(" " * body + "evidence: ", "dim"), (r, "")]) if n == 0 else Line([(r, "")]))
        if f.confirmed_by:
            out.append(Line([(" " * body + "confirmed by: ", "dim"), (", ".join(f.confirmed_by), "")]))
    if fixes and f.fix and step is not None:
        out.append(Line([(" " * body + f"fix: step {step} of “Fix in this order” below", "dim")]))
    elif fixes and f.fix and same_as:
        out.append(Line([(" " * body + f"fix: the same as {same_as}'s above", "dim")]))
    elif fixes and f.fix:
        out.append(Line([(" " * body + "fix:", "dim")]))
        out.extend(fix_lines(f, width, body + 2))
    return out


#: Where the fix lines of the "Fix in this order" steps start, whatever the code's length.
FIX_INDENT = 8


def is_routine(f: Finding) -> bool:
    """Whether ``f`` is a routine note (its rule says it informs no decision)."""
    return f.severity == "info" and bool(f.data.get("routine"))


def _quiet(findings: Sequence[Finding], cols: int, paint: Painter) -> str:
    """The text of ``check -q``: each error and warning that is a root cause (its folded
    symptoms are not repeated) with its fix, those in a fix order first in that order."""
    folded = {id(f) for group in folded_under(findings).values() for f in group}
    chosen = [f for f in findings if id(f) not in folded and f.severity in ("error", "warning")]
    first = fix_list(chosen) if has_dependencies(chosen) else []
    lines: List[Line] = []
    said: Dict[Tuple[str, ...], str] = {}
    for f in first + [f for f in chosen if f not in first]:
        lines += _finding(f, cols, False, indent=0, same_as=said.get(tuple(f.fix)))
        if f.fix:
            said.setdefault(tuple(f.fix), f.code)
    return "".join(paint(line) + "\n" for line in lines)


def render(
    snapshot: Snapshot,
    findings: Sequence[Finding],
    verbose: bool = False,
    file: Optional[IO[str]] = None,
    color: Optional[bool] = None,
    width: Optional[int] = None,
    ignored: Sequence[str] = (),
    quiet: bool = False,
    product_lines: Optional[Mapping[str, str]] = None,
) -> None:
    """Write the report to ``file`` (default: stdout).  ``verbose`` adds evidence and the
    matrix provenance; ``color`` colours it (ANSI, standard colours) or not (``None``: no
    colour); ``width``: columns to wrap prose to (default 80; commands are never broken);
    ``ignored``: the codes of findings silenced by ``.npudoctor.toml`` / ``--ignore``;
    ``quiet``: only the errors and warnings with their fixes (no headline, no summary, no
    notes, no closing line: a clean run prints nothing); ``product_lines``: the official
    product line of each chip name, named in the summary beside the chips."""
    import sys

    out = file if file is not None else sys.stdout
    if quiet:
        out.write(_quiet(findings, max(40, width) if width else 1_000_000, Painter(bool(color))))
        return
    cols = max(40, width) if width else 1_000_000
    paint = Painter(bool(color))
    lines: List[Line] = [Line([(r, "bold")]) for r in wrap(_headline(snapshot), cols, indent=2)]
    choice = (snapshot.target or {}).get("python_choice")
    if isinstance(choice, str) and choice:
        lines += [Line([(r, "dim")]) for r in wrap(f"Python: {choice}", cols, indent=2)]
    lines.append(Line([]))
    lines += _summary(snapshot, findings, cols, product_lines)
    folded: Dict[str, List[Finding]] = folded_under(findings)
    hidden = {id(f) for group in folded.values() for f in group}
    shown = [f for f in findings if id(f) not in hidden]
    # routine notes (a pair declared compatible, numpy inside the range a fix would pin)
    # inform no decision: shown with -v only
    routine = [] if verbose else [f for f in shown if is_routine(f)]
    shown = [f for f in shown if f not in routine]
    ordered = fix_list(shown) if has_dependencies(shown) else []
    steps = {id(f): n for n, f in enumerate(ordered, start=1)} if len(ordered) > 1 else {}
    if shown:
        lines += [Line([]), Line([("Findings", "bold")])]
    said: Dict[Tuple[str, ...], str] = {}  # fix lines already printed -> the code they came with
    for f in shown:
        same = said.get(tuple(f.fix)) if id(f) not in steps else None
        lines += _finding(f, cols, verbose, step=steps.get(id(f)), same_as=same)
        if f.fix and id(f) not in steps:
            said.setdefault(tuple(f.fix), f.code)
        symptoms = folded.get(f.code, [])
        if symptoms:
            lines.append(Line([(f"      because of this ({f.code}), also:", "dim")]))
            for s in symptoms:
                lines += _finding(s, cols, verbose, indent=8, fixes=False)
    if ignored:
        codes = ", ".join(sorted(set(ignored)))
        text = f"{len(ignored)} finding(s) ignored (by .npudoctor.toml / --ignore): {codes}"
        lines += [Line([])] + [Line([(r, "dim")]) for r in wrap(text, cols)]
    if steps:
        lines += [Line([]), Line([("Fix in this order", "bold")])]
        lines += [Line([(r, "dim")]) for r in wrap(f"({order_header(ordered)})", cols)]
        for n, f in enumerate(ordered, start=1):
            head = f"  {n}. {f.code} "
            rows = wrap(f.title, cols, first=len(head), indent=FIX_INDENT)
            lines.append(Line([(f"  {n}. ", ""), (f.code, "dim"), (" " + rows[0], "")]))
            lines.extend(Line([(r, "")]) for r in rows[1:])
            lines.extend(fix_lines(f, cols, FIX_INDENT))
    if verbose and snapshot.matrix:
        m = snapshot.matrix
        text = (
            f"matrix: {m.get('source')} ({m.get('origin', '?')}), retrieved {m.get('retrieved', '?')}, "
            f"sha256 {str(m.get('sha256', '?'))[:16]}…"
        )
        lines += [Line([])] + [Line([(r, "dim")]) for r in wrap(text, cols)]
    summary = counts(shown)
    if shown:
        tail = f"{summary['error']} error(s), {summary['warning']} warning(s), {summary['info']} note(s)"
        if hidden:
            tail += f", {len(hidden)} follow-on finding(s) folded under their cause"
        tail += ". Run `npudoctor explain CODE` for details."
    else:
        tail = "No issues found."
    if routine:
        tail += f" ({len(routine)} routine note(s) not shown: -v shows them.)"
    lines += [Line([])] + [Line([(r, "")]) for r in wrap(tail, cols)]
    out.write("".join(paint(line) + "\n" for line in lines))
