"""``npudoctor devices``: the NPU chips of this machine (health, memory, processes,
topology) as a readable table, or ``--json``; plus the device and container findings.

Only the ``host``, ``devices`` and ``container`` probes run (fast); ``--from`` replays
the same facts from a snapshot written by ``collect`` or ``check --json``.
"""

import json
import sys
from typing import Any, Dict, List

import typer

from npudoctor.cli.commands._common import (
    EnvFileOpt,
    FromOpt,
    JsonOpt,
    MatrixOpt,
    NoCommandsOpt,
    PythonOpt,
    RootOpt,
    Target,
    UsageError,
    UserOpt,
    fail_usage,
    load_matrix_or_none,
    snapshot_for,
)

DEVICES_HELP = """Show the NPU chips: health, power, temperature, AICore, memory/HBM, processes and
topology (from npu-smi), the device nodes and their permissions, and the device and
container findings (codes DEV*, CTR*).

Exit codes: 0 no device or container errors; 1 errors found (a Critical chip, a busy or
hung npu-smi, missing or inaccessible device nodes, an invalid visible-devices
variable); 2 usage error; 3 npudoctor itself failed."""

SECTIONS = ("host", "python", "packages", "devices", "container")
AREAS = ("devices", "container")


def gather(target: Target, matrix_path: Any = None) -> Dict[str, Any]:
    """Collect (or replay) the device facts and judge them: ``{"devices", "container",
    "identity", "findings", "source"}``.  Raises :class:`UsageError`."""
    from npudoctor.engine import Options, evaluate

    options = Options(user=target.user, matrix_path=matrix_path, only=set(AREAS))
    snapshot = snapshot_for(target, options, sections=SECTIONS)
    mode = snapshot.target.get("mode")
    source = {"from": f"snapshot {target.from_file}", "root": f"root {snapshot.target.get('root')}"}.get(
        str(mode), "this machine"
    )
    from npudoctor.rules.devices import chip_identity

    matrix, _err = load_matrix_or_none(matrix_path)
    findings = evaluate(snapshot, matrix, options)
    devices = dict(snapshot.section("devices"))
    if isinstance(devices.get("chips"), list):  # what each chip is: the rules' matrix lookup
        devices["chips"] = [
            dict(c, **{k: v for k, v in chip_identity(matrix, c).items() if k != "known"})
            for c in devices["chips"]
            if isinstance(c, dict)
        ]
    return {
        "source": source,
        "devices": devices,
        "container": snapshot.section("container"),
        "findings": [f.to_dict() for f in findings if f.area in AREAS],
    }


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


def _console(console_class: Any) -> Any:
    """A rich Console for stdout.  On a terminal: its width, rich's word wrapping.  Not
    a terminal (rich would assume 80 columns and insert newlines, splitting commands such
    as ``taskset -c 144-167 <command>`` and the header): ``soft_wrap=True`` (no line is
    ever broken) and a layout width of :data:`PIPE_WIDTH` for the tables."""
    console = console_class(highlight=False)
    if console.is_terminal:
        return console
    return console_class(highlight=False, soft_wrap=True, width=PIPE_WIDTH)


def render(data: Dict[str, Any]) -> None:
    """Print the device view with rich (human output only)."""
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = _console(Console)
    dev = data.get("devices") or {}
    smi = dev.get("npu_smi") or {}
    chips: List[Dict[str, Any]] = dev.get("chips") or []
    head = "NPU devices"
    if smi.get("version"):
        head += f" · npu-smi {smi['version']}"
        if smi.get("driver_version") and smi.get("driver_version") != smi.get("version"):
            head += f" (driver {smi['driver_version']})"
    head += f" · {data.get('source')}"
    console.print(Text(head, style="bold"))
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
            cells = {
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
        console.print(table)
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
        console.print(Text("Findings", style="bold"))
        for f in findings:
            console.print(
                Text(f"  {f['code']} ", style=_SEV_STYLE.get(f["severity"], ""))
                + Text(f"{f['severity']}: {f['title']}")
            )
            for fix in f.get("fix") or []:
                console.print(Text(f"      → {fix}", style="dim"), soft_wrap=True)
    else:
        console.print(Text("No device or container problems found.", style="green"))


def register(app: typer.Typer) -> None:
    @app.command(help=DEVICES_HELP)
    def devices(
        root: RootOpt = None,
        env_file: EnvFileOpt = None,
        python: PythonOpt = None,
        from_: FromOpt = None,
        user: UserOpt = None,
        as_json: JsonOpt = False,
        no_commands: NoCommandsOpt = False,
        matrix: MatrixOpt = None,
    ) -> None:
        target = Target(
            root=root, python=python, from_file=from_, user=user, commands=not no_commands, env_file=env_file
        )
        try:
            data = gather(target, matrix)
        except UsageError as exc:
            raise fail_usage(str(exc)) from None
        if as_json:
            sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        else:
            render(data)
        raise typer.Exit(1 if any(f["severity"] == "error" for f in data["findings"]) else 0)
