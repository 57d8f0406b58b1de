"""The ``npudoctor devices`` view: the NPU chips of a machine (health, memory, processes,
topology), its visibility variables and the device and container findings, as a rich table.
The ``--json`` form is the data itself (see :func:`npudoctor.cli.commands.devices.gather`).
"""

from __future__ import annotations

from typing import Any, Dict, List, TextIO


def _fmt(value: Any, suffix: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{value}{suffix}"


def _mem(used: Any, total: Any) -> str:
    if not total:
        return "-"
    pct = f" ({100 * used / total:.0f}%)" if isinstance(used, (int, float)) else ""
    return f"{used}/{total}{pct}"


_HEALTH_STYLE = {"OK": "green", "WARNING": "yellow", "ALARM": "yellow", "CRITICAL": "bold red"}
_SEV_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


#: Layout width when stdout is not a terminal: wide enough for every table column, so
#: piped output (``| cat``, ``| less``, a CI log) lists the same columns as a wide terminal.
PIPE_WIDTH = 200


def _console(out: TextIO, terminal: bool, width: int, color: bool) -> Any:
    """A rich Console writing to ``out``.  On a terminal: its ``width``, rich's word
    wrapping.  Not a terminal (rich would assume 80 columns and insert newlines, splitting
    commands such as ``taskset -c 144-167 <command>`` and the header): ``soft_wrap=True``
    (no line is ever broken) and a layout width of :data:`PIPE_WIDTH` for the tables."""
    from rich.console import Console

    return Console(
        file=out,
        highlight=False,
        force_terminal=color,
        no_color=not color,
        soft_wrap=not terminal,
        width=width if terminal else PIPE_WIDTH,
    )


def _pack(items: List[str], width: int, first: str, indent: str) -> List[str]:
    """``items`` joined by `` · `` into rows of at most ``width`` columns (an item is never
    split; one longer than a row stands alone)."""
    rows: List[str] = []
    current = first
    for item in items:
        sep = "" if current in (first, indent) else " · "
        if current not in (first, indent) and len(current) + len(sep) + len(item) > width:
            rows.append(current)
            current, sep = indent, ""
        current += sep + item
    rows.append(current)
    return rows


def _fits(console: Any, table: Any) -> bool:
    """Whether ``table`` fits the console's width without cutting a cell."""
    from rich.measure import Measurement

    return bool(Measurement.get(console, console.options.update_width(10_000), table).maximum <= console.width)


def render(data: Dict[str, Any], out: TextIO, *, terminal: bool = False, width: int = 80, color: bool = False) -> None:
    """Write the device view (the ``data`` of :func:`npudoctor.cli.commands.devices.gather`)
    to ``out`` with rich.  ``terminal``: ``out`` is a terminal ``width`` columns wide
    (else the piped layout); ``color``: emit colour codes."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    console = _console(out, terminal, width, color)
    dev = data.get("devices") or {}
    smi = dev.get("npu_smi") or {}
    chips: List[Dict[str, Any]] = dev.get("chips") or []
    head = "NPU devices"
    if smi.get("version"):
        head += f" · npu-smi {smi['version']}"
        if smi.get("driver_version") and smi.get("driver_version") != smi.get("version"):
            head += f" (driver {smi['driver_version']})"
    head += f" · {data.get('source')}"
    from npudoctor.report.layout import wrap as _wrap

    for row in _wrap(head, console.width, indent=2) if terminal else [head]:
        console.print(Text(row, style="bold"), soft_wrap=True)
    if not chips:
        why = smi.get("error") or "npu-smi listed no chip"
        nodes = [n["path"] for n in dev.get("nodes") or [] if n.get("exists") and n.get("kind") == "chip"]
        console.print(f"  no chip table: {why}")
        if nodes:
            console.print(f"  device nodes present: {', '.join(nodes)}")
    else:
        procs = dev.get("processes") or []
        count: Dict[Any, int] = {}
        for p in procs:
            key = (p.get("npu_id"), p.get("chip_id"))
            count[key] = count.get(key, 0) + 1
        hbm = any(c.get("hbm_total_mb") for c in chips)
        width = console.width
        cols = ["NPU", "Chip", "Logic", "Name", "Health", "Power", "Temp", "AICore", "HBM MB" if hbm else "Memory MB"]
        if width >= 100:
            cols.append("Bus-Id")
        if count:
            cols.append("Procs")
        if width < 90 or not any(c.get("logic_id") is not None for c in chips):
            cols.remove("Logic")
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
        rows: List[Any] = []
        for col in cols:
            table.add_column(col, justify="left" if col in ("Name", "Health", "Bus-Id") else "right", no_wrap=True)
        for c in chips:
            name = str(c.get("name") or "?")
            if width >= 90 and c.get("soc_version") and c.get("soc_version") != f"Ascend{name}":
                name += f" ({c['soc_version']})"
            elif width >= 90 and c.get("family"):
                name += f" [{c['family']}]"
            health = str(c.get("health") or "?")
            used, total = (
                (c.get("hbm_used_mb"), c.get("hbm_total_mb"))
                if hbm
                else (c.get("memory_used_mb"), c.get("memory_total_mb"))
            )
            n = count.get((c.get("npu_id"), c.get("chip_id")), 0)
            cells: Dict[str, Any] = {
                "NPU": _fmt(c.get("npu_id")),
                "Chip": _fmt(c.get("chip_id")),
                "Logic": _fmt(c.get("logic_id")),
                "Name": name,
                "Health": Text(health, style=_HEALTH_STYLE.get(health.upper(), "yellow")),
                "Power": f"{c['power_w']:.1f}W" if isinstance(c.get("power_w"), (int, float)) else "-",
                "Temp": _fmt(c.get("temp_c"), "°C"),
                "AICore": _fmt(c.get("aicore_pct"), "%"),
                "Bus-Id": str(c.get("bus_id") or "-"),
                "Procs": str(n) if n else "",
            }
            cells["HBM MB"] = cells["Memory MB"] = _mem(used, total)
            table.add_row(*(cells[col] for col in cols))
            rows.append((cols, cells))
        if _fits(console, table):
            console.print(table)
        else:  # a terminal too narrow for the table: one chip a block, no cell cut
            for cols_, cells_ in rows:
                items = [f"NPU {cells_['NPU']} chip {cells_['Chip']}: {cells_['Name']}"]
                items += [f"{col} {cells_[col]}" for col in cols_ if col not in ("NPU", "Chip", "Name")]
                for row in _pack(items, console.width, "  ", "    "):
                    console.print(Text(row), soft_wrap=True)
        if procs:
            console.print(Text("Processes", style="bold"))
            pt = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
            for col in ("NPU", "Chip", "PID", "Name", "Memory", "PID in container"):
                pt.add_column(col, no_wrap=True)
            for p in procs:
                pt.add_row(
                    _fmt(p.get("npu_id")),
                    _fmt(p.get("chip_id")),
                    _fmt(p.get("pid")),
                    str(p.get("name") or ""),
                    _fmt(p.get("memory_mb"), " MB"),
                    _fmt(p.get("container_pid")),
                )
            console.print(pt)
    topo = dev.get("topology") or {}
    if topo.get("npus"):
        if topo.get("all_fabric"):
            line = f"all {len(topo['npus'])} NPUs linked by {'/'.join(topo.get('link_types') or [])}"
        else:
            islands = " ".join("[" + ",".join(map(str, g)) + "]" for g in topo.get("islands") or [])
            line = f"islands {islands}; links {'/'.join(topo.get('link_types') or [])}"
        console.print(Text("Topology: ", style="bold") + Text(line))
        by_cpus: Dict[str, List[str]] = {}
        for npu, cpus in (topo.get("affinity") or {}).items():
            by_cpus.setdefault(cpus, []).append(npu)
        if by_cpus:
            groups = [f"NPU {','.join(v)} → {k}" for k, v in by_cpus.items()]
            line = "  CPU affinity: " + "; ".join(groups)
            if console.soft_wrap or len(line) <= console.width:
                console.print(line)
            else:  # a narrow terminal: one group a line rather than a CPU range split in two
                console.print("  CPU affinity:")
                for group in groups:
                    console.print(f"    {group}", soft_wrap=True)
    vis = {k: v for k, v in (dev.get("visibility") or {}).items() if v is not None}
    if vis:
        console.print(Text("Visibility: ", style="bold") + Text("  ".join(f"{k}={v}" for k, v in vis.items())))
    findings = data.get("findings") or []
    if findings:
        from npudoctor.findings import Finding
        from npudoctor.report.layout import Line, Painter, fix_lines, wrap

        console.print(Text("Findings", style="bold"))
        paint = Painter(color)
        room = console.width
        for raw in findings:
            f = Finding.from_dict(raw)
            if not terminal:
                console.print(
                    Text(f"  {f.code} ", style=_SEV_STYLE.get(f.severity, "")) + Text(f"{f.severity}: {f.title}")
                )
                for fix in f.fix:
                    console.print(Text(f"      → {fix}", style="dim"), soft_wrap=True)
                continue
            head = f"  {f.code} {f.severity}: "
            rows_ = wrap(f.title, room, first=len(head), indent=len(head))
            lines = [Line([(f"  {f.code} ", _SEV_STYLE.get(f.severity, "")), (f"{f.severity}: {rows_[0]}", "")])]
            lines += [Line([(r, "")]) for r in rows_[1:]]
            lines += fix_lines(f, room, 6)
            console.file.write("".join(paint(line) + "\n" for line in lines))
    else:
        console.print(Text("No device or container problems found.", style="green"))
