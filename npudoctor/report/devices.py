"""The ``npudoctor devices`` view: the NPU chips of a machine (health, memory, processes,
topology), its visibility variables and the device and container findings, as a table.
The ``--json`` form is the data itself (see :func:`npudoctor.cli.commands.devices.gather`).

The view is laid out here (:class:`_Plain`: the layout and colour codes rich gives a
``SIMPLE_HEAD`` table of ``no_wrap`` columns and styled lines, byte for byte), so a run
does not import rich (a seventh of a run: docs/performance.md).  A line that rich would
word-wrap on a terminal, a table it would shrink, or a character whose width is not one
column is left to rich (:class:`_Rich`, the same calls).  Every text is literal: no rich
markup or emoji codes (a bus id ``0000:AB:00.0`` stays as it is, an error message with
``[/]`` prints).  ``tests/test_devices_render.py`` compares both on every scenario at
several widths, with and without colour.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Dict, List, Sequence, TextIO, Tuple


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


if TYPE_CHECKING:
    #: A run of text and its rich style (``""``: none).
    Part = Tuple[str, str]

#: Characters one column wide besides printable ASCII (the only others the view prints).
_NARROW = frozenset("°→·─")


def _quoted(text: str) -> str:
    """``text`` with its control characters escaped, colour codes included: a chip name or a
    variable's value from the judged machine cannot recolour the terminal (the view's own
    colours are added around it)."""
    from npudoctor.report.escape import quoted

    return quoted(text)


class _Unplain(Exception):
    """The plain layout cannot promise rich's output for this view: draw it with rich."""


#: SGR parameters of the styles the view uses, as rich writes them.
_SGR = {"bold": "1", "bold red": "1;31", "dim": "2", "green": "32", "yellow": "33", "cyan": "36"}


class _Plain:
    """The view's lines as rich would print them, collected in ``lines`` (with ``color``,
    each styled run in its SGR codes, as rich writes them); raises :class:`_Unplain` for
    what only rich can lay out (word wrapping, wide or control characters, another style)."""

    def __init__(self, terminal: bool, width: int, color: bool = False) -> None:
        self.soft_wrap = not terminal
        self.width = width if terminal else PIPE_WIDTH
        self.color = color
        self.lines: List[str] = []

    def _paint(self, text: str, style: str) -> str:
        if not (self.color and style and text):
            return text
        if style not in _SGR:
            raise _Unplain(style)
        return f"\x1b[{_SGR[style]}m{text}\x1b[0m"

    @staticmethod
    def _check(text: str) -> str:
        text = _quoted(text)
        if not all(" " <= ch <= "~" or ch in _NARROW for ch in text):
            raise _Unplain(text)
        return text

    def text(self, parts: Sequence[Part], wrap: bool = True) -> None:
        """Print ``parts`` as one line (``wrap``: rich would word-wrap it on a terminal)."""
        line = self._check("".join(t for t, _style in parts))
        if wrap and not self.soft_wrap and len(line) > self.width:
            raise _Unplain(line)
        if any(style for _t, style in parts[1:]):  # styles layered on the first: rich's to combine
            raise _Unplain(line)
        self.lines.append(self._paint(line, parts[0][1]))  # the first part's style is the line's

    def table(self, cols: Sequence[str], right: Sequence[str], rows: Sequence[Sequence[Part]], fit: bool) -> bool:
        """A ``SIMPLE_HEAD`` table without edges, one space of padding, ``no_wrap`` cells
        (``right``: the right-justified columns).  Wider than :attr:`width`: with ``fit``,
        nothing is printed and ``False`` returned; without, rich's shrinking (cells cut
        with an ellipsis) is left to rich."""
        cells = [[(self._check(c), "bold") for c in cols]] + [[(self._check(t), s) for t, s in row] for row in rows]
        widths = [max(len(row[i][0]) for row in cells) for i in range(len(cols))]
        total = sum(widths) + 3 * (len(cols) - 1)
        if total > self.width:
            if fit:
                return False
            raise _Unplain("rich shrinks the columns of a table wider than the terminal")
        last = len(cols) - 1
        for n, row in enumerate(cells):
            pad = "bold" if n == 0 else ""  # the header's padding is bold too, a row's plain
            line = []
            for i, ((text, style), w, col) in enumerate(zip(row, widths, cols)):
                text = text.rjust(w) if col in right else text.ljust(w)
                left = self._paint(" ", pad) if i else ""
                line.append(left + self._paint(text, style) + (self._paint(" ", pad) if i < last else ""))
            self.lines.append(" ".join(line))
            if n == 0:
                self.lines.append("─" * total)
        return True

    def raw(self, text: str) -> None:
        self.lines.extend(text.splitlines())


class _Rich:
    """The same calls drawn by a rich Console (:func:`_console`)."""

    def __init__(self, out: TextIO, terminal: bool, width: int, color: bool) -> None:
        self.console = _console(out, terminal, width, color)
        self.soft_wrap = self.console.soft_wrap
        self.width = self.console.width

    @staticmethod
    def _text(parts: Sequence[Part]) -> Any:
        from rich.text import Text

        first, style = parts[0]
        text = Text(_quoted(first), style=style)
        for t, style in parts[1:]:
            text = text + Text(_quoted(t), style=style)
        return text

    def text(self, parts: Sequence[Part], wrap: bool = True) -> None:
        self.console.print(self._text(parts), soft_wrap=None if wrap else True)

    def table(self, cols: Sequence[str], right: Sequence[str], rows: Sequence[Sequence[Part]], fit: bool) -> bool:
        from rich import box
        from rich.table import Table

        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
        for col in cols:
            table.add_column(col, justify="right" if col in right else "left", no_wrap=True)
        for row in rows:
            table.add_row(*(self._text([part]) for part in row))
        if fit and not _fits(self.console, table):
            return False
        self.console.print(table)
        return True

    def raw(self, text: str) -> None:
        self.console.file.write(text)


def render(data: Dict[str, Any], out: TextIO, *, terminal: bool = False, width: int = 80, color: bool = False) -> None:
    """Write the device view (the ``data`` of :func:`npudoctor.cli.commands.devices.gather`)
    to ``out``.  ``terminal``: ``out`` is a terminal ``width`` columns wide (else the piped
    layout); ``color``: emit colour codes.  Laid out here unless the view needs rich's word
    wrapping or shrinking (then drawn by rich)."""
    plain = _Plain(terminal, width, color)
    try:
        draw(data, plain, terminal=terminal, color=color)
    except _Unplain:
        draw(data, _Rich(out, terminal, width, color), terminal=terminal, color=color)
    else:
        out.write("".join(line + "\n" for line in plain.lines))


def draw(data: Dict[str, Any], view: Any, *, terminal: bool, color: bool) -> None:
    """Draw the device view on ``view`` (a :class:`_Plain` or :class:`_Rich`): the heading,
    the chips (or why there is no chip table), the processes, the topology, the visibility
    variables and the findings."""
    dev = data.get("devices") or {}
    _heading(dev, data.get("source"), view, terminal)
    chips: List[Dict[str, Any]] = dev.get("chips") or []
    if not chips:
        _no_chips(dev, view, data.get("unread") or [])
    else:
        procs = dev.get("processes") or []
        _chips(chips, procs, view)
        _product_lines(chips, view)
        if procs:
            _processes(procs, view)
    _topology(dev.get("topology") or {}, view)
    vis = {k: v for k, v in (dev.get("visibility") or {}).items() if v is not None}
    if vis:
        view.text([("Visibility: ", "bold"), ("  ".join(f"{k}={v}" for k, v in vis.items()), "")])
    _findings(data.get("findings") or [], view, terminal, color)
    _ignored(data.get("ignored") or [], view)


def _heading(dev: Dict[str, Any], source: Any, view: Any, terminal: bool) -> None:
    """``NPU devices · npu-smi V (driver D) · SOURCE``, wrapped on a terminal."""
    from npudoctor.report.layout import wrap

    smi = dev.get("npu_smi") or {}
    head = "NPU devices"
    if smi.get("version"):
        head += f" · npu-smi {smi['version']}"
        if smi.get("driver_version") and smi.get("driver_version") != smi.get("version"):
            head += f" (driver {smi['driver_version']})"
    head += f" · {source}"
    for row in wrap(head, view.width, indent=2) if terminal else [head]:
        view.text([(row, "bold")], wrap=False)


def _no_chips(dev: Dict[str, Any], view: Any, unread: List[str]) -> None:
    """Why there is no chip table (npu-smi's error, facts that could not be read, or none
    listed), and the chip device nodes present anyway."""
    from npudoctor.report.wrapping import wrap

    why = (dev.get("npu_smi") or {}).get("error") or (
        f"the devices facts could not be read ({unread[0]})" if unread else "npu-smi listed no chip"
    )
    nodes = [n["path"] for n in dev.get("nodes") or [] if n.get("exists") and n.get("kind") == "chip"]
    said = [("  no chip table: ", why)] + ([("  device nodes present: ", ", ".join(nodes))] if nodes else [])
    for lead, text in said:  # wrapped between words, the rows after the first indented
        rows = [text] if view.soft_wrap else wrap(text, view.width, first=len(lead), indent=4)
        for n, row in enumerate(rows):
            view.text([(lead + row if n == 0 else row, "")], wrap=False)


def _columns(chips: List[Dict[str, Any]], hbm: bool, procs: bool, width: int) -> List[str]:
    """The chip table's columns for ``width``: Logic from 90 columns, Bus-Id from 100."""
    cols = ["NPU", "Chip", "Logic", "Name", "Health", "Power", "Temp", "AICore", "HBM MB" if hbm else "Memory MB"]
    if width >= 100:
        cols.append("Bus-Id")
    if procs:
        cols.append("Procs")
    if width < 90 or not any(c.get("logic_id") is not None for c in chips):
        cols.remove("Logic")
    return cols


def _cells(c: Dict[str, Any], hbm: bool, procs: int, width: int) -> Dict[str, str]:
    """The text of every column of one chip's row."""
    name = str(c.get("name") or "?")
    if width >= 90 and c.get("soc_version") and c.get("soc_version") != f"Ascend{name}":
        name += f" ({c['soc_version']})"
    elif width >= 90 and c.get("family"):
        name += f" [{c['family']}]"
    used, total = (
        (c.get("hbm_used_mb"), c.get("hbm_total_mb")) if hbm else (c.get("memory_used_mb"), c.get("memory_total_mb"))
    )
    cells = {
        "NPU": _fmt(c.get("npu_id")),
        "Chip": _fmt(c.get("chip_id")),
        "Logic": _fmt(c.get("logic_id")),
        "Name": name,
        "Health": str(c.get("health") or "?"),
        "Power": f"{c['power_w']:.1f}W" if isinstance(c.get("power_w"), (int, float)) else "-",
        "Temp": _fmt(c.get("temp_c"), "°C"),
        "AICore": _fmt(c.get("aicore_pct"), "%"),
        "Bus-Id": str(c.get("bus_id") or "-"),
        "Procs": str(procs) if procs else "",
    }
    cells["HBM MB"] = cells["Memory MB"] = _mem(used, total)
    return cells


def _chips(chips: List[Dict[str, Any]], procs: List[Dict[str, Any]], view: Any) -> None:
    """The chip table; on a terminal too narrow for it, one chip a block (no cell cut)."""
    count: Dict[Any, int] = {}
    for p in procs:
        key = (p.get("npu_id"), p.get("chip_id"))
        count[key] = count.get(key, 0) + 1
    hbm = any(c.get("hbm_total_mb") for c in chips)
    cols = _columns(chips, hbm, bool(count), view.width)
    right = [col for col in cols if col not in ("Name", "Health", "Bus-Id")]
    rows = [_cells(c, hbm, count.get((c.get("npu_id"), c.get("chip_id")), 0), view.width) for c in chips]

    def styled(cells: Dict[str, str], col: str) -> Any:
        health = cells["Health"]
        return (health, _HEALTH_STYLE.get(health.upper(), "yellow")) if col == "Health" else (cells[col], "")

    if view.table(cols, right, [[styled(cells, col) for col in cols] for cells in rows], fit=True):
        return
    for cells in rows:
        items = [f"NPU {cells['NPU']} chip {cells['Chip']}: {cells['Name']}"]
        items += [f"{col} {cells[col]}" for col in cols if col not in ("NPU", "Chip", "Name")]
        for row in _pack(items, view.width, "  ", "    "):
            view.text([(row, "")], wrap=False)


def _product_lines(chips: List[Dict[str, Any]], view: Any) -> None:
    """``Product line: 910B3 → Atlas A2 training products / …``: the official product series
    of each chip name the matrix records one for (matrix/chips.toml), once a name."""
    lines: Dict[str, str] = {}
    for c in chips:
        name, line = str(c.get("name") or ""), c.get("product_line")
        if name and line and name not in lines:
            lines[name] = str(line)
    if not lines:
        return
    from npudoctor.report.wrapping import wrap

    lead = "Product line: "
    text = "; ".join(f"{name} → {line}" for name, line in lines.items())
    rows = [text] if view.soft_wrap else wrap(text, view.width, first=len(lead), indent=2)
    for n, row in enumerate(rows):  # wrapped between words, the rows after the first indented
        view.text([(lead, "bold"), (row, "")] if n == 0 else [(row, "")], wrap=False)


def _processes(procs: List[Dict[str, Any]], view: Any) -> None:
    """The processes npu-smi lists on the chips."""
    view.text([("Processes", "bold")])
    prows = [
        [
            (_fmt(p.get("npu_id")), ""),
            (_fmt(p.get("chip_id")), ""),
            (_fmt(p.get("pid")), ""),
            (str(p.get("name") or ""), ""),
            (_fmt(p.get("memory_mb"), " MB"), ""),
            (_fmt(p.get("container_pid")), ""),
        ]
        for p in procs
    ]
    view.table(("NPU", "Chip", "PID", "Name", "Memory", "PID in container"), (), prows, fit=False)


def _topology(topo: Dict[str, Any], view: Any) -> None:
    """The links between the NPUs and their CPU affinity (one group a line when narrow)."""
    if not topo.get("npus"):
        return
    if topo.get("all_fabric"):
        line = f"all {len(topo['npus'])} NPUs linked by {'/'.join(topo.get('link_types') or [])}"
    else:
        islands = " ".join("[" + ",".join(map(str, g)) + "]" for g in topo.get("islands") or [])
        line = f"islands {islands}; links {'/'.join(topo.get('link_types') or [])}"
    view.text([("Topology: ", "bold"), (line, "")])
    by_cpus: Dict[str, List[str]] = {}
    for npu, cpus in (topo.get("affinity") or {}).items():
        by_cpus.setdefault(cpus, []).append(npu)
    if not by_cpus:
        return
    groups = [f"NPU {','.join(v)} → {k}" for k, v in by_cpus.items()]
    line = "  CPU affinity: " + "; ".join(groups)
    if view.soft_wrap or len(line) <= view.width:
        view.text([(line, "")])
    else:  # a narrow terminal: one group a line rather than a CPU range split in two
        view.text([("  CPU affinity:", "")])
        for group in groups:
            view.text([(f"    {group}", "")], wrap=False)


def _findings(findings: List[Dict[str, Any]], view: Any, terminal: bool, color: bool) -> None:
    """The findings of the device and container rules with their fixes, or that there is none."""
    if not findings:
        view.text([("No device or container problems found.", "green")])
        return
    from npudoctor.findings import Finding
    from npudoctor.report.layout import Line, Painter, fix_lines, wrap

    view.text([("Findings", "bold")])
    paint = Painter(color)
    room = view.width
    for raw in findings:
        f = Finding.from_dict(raw)
        if not terminal:
            view.text([(f"  {f.code} ", _SEV_STYLE.get(f.severity, "")), (f"{f.severity}: {f.title}", "")])
            for fix in f.fix:
                view.text([(f"      → {fix}", "dim")], wrap=False)
            continue
        head = f"  {f.code} {f.severity}: "
        rows = wrap(f.title, room, first=len(head), indent=len(head))
        lines = [Line([(f"  {f.code} ", _SEV_STYLE.get(f.severity, "")), (f"{f.severity}: {rows[0]}", "")])]
        lines += [Line([(r, "")]) for r in rows[1:]]
        lines += fix_lines(f, room, 6)
        view.raw("".join(paint(line) + "\n" for line in lines))


def _ignored(entries: List[Dict[str, Any]], view: Any) -> None:
    """The findings left out by ``.npudoctor.toml``, each with what silenced it."""
    from npudoctor.config import ignored_line
    from npudoctor.report.wrapping import wrap

    line = ignored_line(entries)
    if line:
        for row in [line] if view.soft_wrap else wrap(line, view.width, indent=4):
            view.text([(row, "dim")], wrap=False)
