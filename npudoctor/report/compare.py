"""The human form of ``npudoctor compare``: the majority stack, each node that differs,
split fields, repeated and duplicate snapshots, unreadable ones.  The ``--json`` form is the
report of :func:`npudoctor.cluster.compare.compare` itself.
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from npudoctor.report.escape import one_line


def _q(value: Any) -> str:
    """A value from a snapshot (a node label, a field value, a file name), one line and
    without the control characters another machine's text may carry."""
    return one_line(str(value))


def _same_differences(differing: List[Dict[str, Any]]) -> List[List[Dict[str, Any]]]:
    """The differing nodes grouped by what differs (the same fields with the same values):
    the largest group first, then in the report's order."""
    groups: Dict[Tuple[Tuple[str, str, str], ...], List[Dict[str, Any]]] = {}
    for item in differing:
        key = tuple((str(d["field"]), str(d["value"]), str(d["majority"])) for d in item["differences"])
        groups.setdefault(key, []).append(item)
    return sorted(groups.values(), key=len, reverse=True)  # sorted() keeps the order of equals


def render(report: Dict[str, Any], limit: int = 50) -> str:
    """The human report: the majority stack, then the nodes that differ, those that differ
    alike said once (groups listed in full up to ``limit`` nodes; the first group always),
    split fields and unreadable snapshots."""
    lines: List[str] = []
    n = report["nodes"]
    differing = report["differing"]
    same = report["majority_nodes"]
    differ = {d["node"] for d in differing}
    partial = len({u["node"] for u in report["unknown"]} - differ)  # no difference, some field untold
    counts = [f"{same} match the majority", f"{len(differing)} differ"]
    if partial:
        counts.append(f"{partial} do not tell every field")
    undecided = n - same - len(differing) - partial  # every field told, none differs, one is split
    if undecided > 0:
        counts.append(f"{undecided} agree wherever there is a majority")
    lines.append(
        f"Compared {n} node(s): {', '.join(counts)}, {len(report['split'])} field(s) split, "
        f"{len(report['unreadable'])} unreadable."
    )
    if report["majority"]:
        lines.append("")
        lines.append("Majority stack:")
        width = max(len(f) for f in report["majority"])
        for field in report["fields"]:
            if field in report["majority"]:
                lines.append(f"  {field:<{width}}  {_q(report['majority'][field])}")
    if differing:
        lines.append("")
        lines.append("Nodes that differ from the majority:")
        listed = 0  # nodes: ``limit`` counts nodes, a group is shown whole or not at all
        for group in _same_differences(differing):
            if listed and listed + len(group) > limit:
                break
            named = [f"{_q(item['node'])}  ({_q(item['source'])})" for item in group[:10]]
            more = f", ... (+{len(group) - 10})" if len(group) > 10 else ""
            lines.append(f"  {f'{len(group)} nodes: ' if len(group) > 1 else ''}{', '.join(named)}{more}")
            for d in group[0]["differences"]:
                lines.append(f"      {d['field']}: {_q(d['value'])}  (majority: {_q(d['majority'])})")
            listed += len(group)
        if listed < len(differing):
            lines.append(f"  ... and {len(differing) - listed} more (use --json for all)")
    for item in report["split"]:
        lines.append("")
        lines.append(f"No majority for {item['field']}:")
        for value, names in item["values"].items():
            shown = ", ".join(_q(name) for name in names[:10]) + (
                f" ... (+{len(names) - 10})" if len(names) > 10 else ""
            )
            lines.append(f"  {_q(value)}: {shown}")
    if report.get("repeated"):
        lines.append("")
        shown = ", ".join(_q(r["source"]) for r in report["repeated"][:limit])
        lines.append(f"Given more than once (the same snapshot), counted once: {shown}")
    for dup in report.get("duplicates", [])[:limit]:
        lines.append("")
        sources = ", ".join(_q(src) for src in dup["sources"])
        if dup["identical"]:
            lines.append(
                f"Node {_q(dup['node'])} appears in {len(dup['sources'])} snapshots ({sources}): "
                "the same stack, counted once."
            )
            continue
        lines.append(
            f"Node {_q(dup['node'])} appears in {len(dup['sources'])} snapshots that differ ({sources}): "
            f"counted once, as {_q(dup['used'])} (the newest)."
        )
        for d in dup["differences"]:
            values = ", ".join(f"{_q(src)}: {_q(v) if v is not None else '?'}" for src, v in d["values"].items())
            lines.append(f"      {d['field']}: {values}")
        lines.append(
            "  A stale snapshot next to a fresh one, or two machines with one host name: remove the "
            "stale file, or give each machine its own name."
        )
    if report["unreadable"]:
        lines.append("")
        lines.append("Unreadable snapshots:")
        for item in report["unreadable"][:limit]:
            lines.append(f"  {_q(item['source'])}: {_q(item['error'])}")
    if report["unknown"]:
        lines.append("")
        lines.append(
            f"{len(report['unknown'])} node(s) lack some facts (not counted as drift), e.g. "
            f"{_q(report['unknown'][0]['node'])}: {', '.join(report['unknown'][0]['fields'][:6])}"
        )
    if not report["drift"]:
        lines.append("")
        lines.append("No drift: every node has the same stack.")
    return "\n".join(lines) + "\n"
