"""Human report: findings grouped by area with ✓ / ! / ✗ and one-line fixes."""

from __future__ import annotations

from typing import IO, Optional, Sequence

from npudoctor.facts import Facts
from npudoctor.facts.coverage import unchecked
from npudoctor.findings import AREA_TITLES, AREAS, Finding, counts
from npudoctor.report.build import fix_list, has_dependencies
from npudoctor.snapshot import Snapshot

MARK = {"error": ("✗", "bold red"), "warning": ("!", "yellow"), "info": ("·", "cyan")}


def _headline(snapshot: Snapshot) -> str:
    facts = Facts(snapshot.facts)
    arch, version = facts.host.arch, facts.python.version
    target = snapshot.target or {}
    mode = target.get("mode", "live")
    where = {"live": "this machine", "root": f"root {target.get('root')}", "from": f"snapshot {target.get('from')}"}
    bits = [str(b) for b in (arch, f"Python {version}" if version else None) if b]
    extra = f" ({', '.join(bits)})" if bits else ""
    return f"npudoctor {snapshot.npudoctor_version} — {where.get(mode, mode)}{extra}"


def render(
    snapshot: Snapshot,
    findings: Sequence[Finding],
    verbose: bool = False,
    file: Optional[IO[str]] = None,
    color: Optional[bool] = None,
    width: Optional[int] = None,
) -> None:
    """Write the report with rich to ``file`` (default: stdout).  ``verbose`` adds evidence
    and the matrix provenance; ``color`` forces colour on or off (``None``: rich decides);
    ``width``: columns of the terminal (lines are never broken: soft wrap)."""
    from rich.console import Console
    from rich.markup import escape

    console = Console(
        file=file, highlight=False, no_color=(color is False), force_terminal=color, soft_wrap=True, width=width
    )
    console.print(f"[bold]{escape(_headline(snapshot))}[/bold]")
    probed = set(snapshot.facts)
    by_area = {a: [f for f in findings if f.area == a] for a in AREAS}
    gaps = unchecked(snapshot.facts)
    clean = [AREA_TITLES[a] for a in AREAS if not by_area[a] and a in probed and a not in gaps]
    for area in AREAS:
        items = by_area[area]
        if not items:
            continue
        console.print()
        console.print(f"[bold]{AREA_TITLES[area]}[/bold]")
        for f in items:
            mark, style = MARK[f.severity]
            console.print(f"  [{style}]{mark}[/{style}] [dim]{f.code}[/dim] {escape(f.title)}")
            if verbose:
                for line in f.evidence:
                    console.print(f"      [dim]evidence:[/dim] {escape(line)}")
                if f.confirmed_by:
                    console.print(f"      [dim]confirmed by:[/dim] {escape(', '.join(f.confirmed_by))}")
            if f.fix:
                console.print(f"      [dim]fix:[/dim] {escape(f.fix[0])}")
                for step in f.fix[1:]:
                    console.print(f"           {escape(step)}")
    if clean:
        console.print()
        console.print(f"[green]✓[/green] no problems: {escape(', '.join(clean))}")
    for area, reason in gaps.items():
        console.print(f"[yellow]?[/yellow] not checked: {escape(AREA_TITLES[area])} ({escape(reason)})")
    ordered = fix_list(findings) if has_dependencies(findings) else []
    if len(ordered) > 1:
        console.print()
        console.print("[bold]Fix in this order[/bold] (driver → CANN → kernels/NNAL → set_env.sh → packages)")
        for n, f in enumerate(ordered, start=1):
            more = f"  [dim](+{len(f.fix) - 1} more step(s) under {f.code} above)[/dim]" if len(f.fix) > 1 else ""
            console.print(f"  {n}. [dim]{f.code}[/dim] {escape(f.fix[0])}{more}")
    if verbose and snapshot.matrix:
        m = snapshot.matrix
        console.print()
        console.print(
            f"[dim]matrix: {escape(str(m.get('source')))} ({m.get('origin', '?')}), "
            f"retrieved {m.get('retrieved', '?')}, sha256 {str(m.get('sha256', '?'))[:16]}…[/dim]"
        )
    summary = counts(findings)
    console.print()
    console.print(
        f"{summary['error']} error(s), {summary['warning']} warning(s), {summary['info']} note(s). "
        + ("Run `npudoctor explain CODE` for details." if findings else "")
    )
