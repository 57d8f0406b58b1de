"""Parsers of ``npu-smi`` output (Ascend driver tool): the ``info`` table in every
layout seen, ``info -m``, ``info -l``, the ``info -t <type>`` key/value outputs
(``board``, ``health``, ``usages``, ``common``, ``proc-mem``), ``npu-smi -v`` and the
error messages (``dcmi … ret is -8005``, ``-8020``, ``command not found``).

Pure functions: text in, plain data out; none of them raises on malformed input and
all run in linear time (safe on garbage, fuzzed in ``tests/test_fuzz_parsers.py``).

The ``info`` table is parsed by its *grammar*, not by column offsets: every table line
is split on ``|`` into cells and each cell is matched by content.  This covers the
layouts of the captured tables — 910-class (27/15/52), legacy
22.0.4 (22/15/52), 310-class with ``Chip  Device`` (31/17/54, 19/17/54, 20/12/54),
300I Duo (two chips per NPU id), A3 with ``Chip  Phy-ID`` (two chips per NPU, the
second with power ``-``), the 26.x wide layout with ``Process id in container``
(27/15/70) — plus trailing spaces, TAB or space indentation, shell prompts, log lines
and Markdown fences around the table, ``...`` elisions, rows-only excerpts and tables
cut short.  Sources of the formats: the captured outputs in ``tests/fixtures``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from npudoctor import lazyre

if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple

# ----------------------------------------------------------------------------- regexes
_PAIR = r"((?<![0-9])[0-9]{1,18}(?![0-9]))\s*/\s*((?<![0-9])[0-9]{1,18}(?![0-9]))"
_VERSION_RE = lazyre.pattern(r"npu-smi\s+(\S+)\s+Version:\s*(\S+)", re.I)
_ROW1_C0 = lazyre.pattern(r"^((?<![0-9])[0-9]{1,18}(?![0-9]))\s+(\S.*?)$")
_ROW1_C2 = lazyre.pattern(r"^(\S+)\s+(\S+)\s+" + _PAIR)
_ROW2_C0 = lazyre.pattern(r"^((?<![0-9])[0-9]{1,18}(?![0-9]))(?:\s+((?<![0-9])[0-9]{1,18}(?![0-9])))?$")
_ROW2_C2 = lazyre.pattern(r"^(\S+)\s+" + _PAIR + r"(?:\s+" + _PAIR + r")?")
_PROC_C0 = lazyre.pattern(r"^((?<![0-9])[0-9]{1,18}(?![0-9]))\s+((?<![0-9])[0-9]{1,18}(?![0-9]))$")
_NO_PROC = lazyre.pattern(r"No running processes found in NPU\s+((?<![0-9])[0-9]{1,18}(?![0-9]))", re.I)
_HEALTH_RE = lazyre.pattern(r"^[A-Za-z][A-Za-z _-]*$")
_BUS_RE = lazyre.pattern(r"^(?:[0-9A-Fa-fx]{4}:[0-9A-Fa-fx]{2}:[0-9A-Fa-fx]{2}\.[0-9A-Fa-fx]|NA|-)$")
_INT_RE = lazyre.pattern(r"^-?(?<![0-9])[0-9]{1,18}(?![0-9])$")
_FLOAT_RE = lazyre.pattern(r"^-?(?<![0-9])[0-9]{1,18}(?![0-9])(?:\.(?<![0-9])[0-9]{1,18}(?![0-9]))?$")
#: Longest line looked at (npu-smi lines are ~120 characters); longer ones are cut so
#: that no regex can run long on garbage.
MAX_LINE = 2000
_DCMI_RE = lazyre.pattern(r"(dcmi[^\n]*?)\bret(?:urn)?\s*(?:is|=|:)?\s*(-(?<![0-9])[0-9]{1,18}(?![0-9]))", re.I)
_DCMI_CODE_RE = lazyre.pattern(r"dcmi[^\n]*?error code\s*[:=]?\s*(-(?<![0-9])[0-9]{1,18}(?![0-9]))", re.I)
#: The loader's refusal to start npu-smi: a library it needs is on no loader path
#: (``npu-smi: error while loading shared libraries: libc_sec.so: cannot open shared object file``).
_LOADER_RE = lazyre.pattern(r"error while loading shared libraries:\s*([^\s:]+):\s*cannot open shared object file")
_NOT_FOUND_RE = lazyre.pattern(r"npu-smi:?\s*(?:command )?not found|No such file or directory.*npu-smi", re.I)
_SMI_VERSION_RE = lazyre.pattern(r"npu-smi\s+version\s*:\s*(\S+)", re.I)
_PROC_MEM_RE = lazyre.pattern(
    r"Process id\s*:\s*((?<![0-9])[0-9]{1,18}(?![0-9]))\s+Process name\s*:(.*?)\s*Process memory\(MB\)\s*:\s*((?<![0-9])[0-9]{1,18}(?![0-9]))",
    re.I,
)

HEALTH_VALUES = ("OK", "Warning", "Alarm", "Critical", "UNKNOWN")


def _lines(text: str) -> List[str]:
    return [line[:MAX_LINE] for line in text.splitlines()]


def _kv(line: str) -> Optional[Tuple[str, str]]:
    """``key : value`` of one line (key starts with a letter, at most 60 chars)."""
    key, sep, value = line.partition(":")
    key = key.strip()
    if not sep or not key or not key[0].isalpha() or len(key) > 60 or "=" in key:
        return None
    return key, value.strip()


def _num(text: str) -> Optional[float]:
    """A number (int when written without a point) or None for ``NA``/``-``/text."""
    text = text.strip()
    if _INT_RE.match(text):
        return int(text)
    if _FLOAT_RE.match(text):
        try:
            return float(text)
        except ValueError:  # pragma: no cover - regex guarantees a float
            return None
    return None


def _int(text: Optional[str]) -> Optional[int]:
    if text is None:
        return None
    text = text.strip()
    return int(text) if _INT_RE.match(text) else None


def _cells(line: str) -> Optional[List[str]]:
    """Cells of a table line ``| a | b |`` (text before the first ``|`` dropped)."""
    start = line.find("|")
    if start < 0:
        return None
    body = line[start:].rstrip()
    if body.endswith("|"):
        body = body[:-1]
    parts = body[1:].split("|")
    return [p.strip() for p in parts]


def _is_border(line: str) -> bool:
    s = line.strip()
    return len(s) >= 3 and s[0] == "+" and s[-1] == "+" and set(s) <= set("+-=")


# ------------------------------------------------------------------------ npu-smi info
def parse_info(text: str) -> Dict[str, Any]:
    """Parse ``npu-smi info`` (the table) in any layout.

    Returns a dict::

        version          npu-smi tool version ("23.0.7") or None
        driver_version   the "Version:" of the header (the driver; may differ from the tool)
        layout           "910" (Memory + HBM columns) | "310" (Chip Device, no HBM) | None
        second_id        "phy_id" (A3 ``Chip  Phy-ID``) | "device" (310 ``Chip  Device``) | None
        chips            [chip records, in table order]
        processes        [{"npu_id", "chip_id", "pid", "name", "memory_mb", "container_pid"}]
        idle_npus        [npu ids with "No running processes found"]
        process_section  True when the process table (header or rows) was seen
        container_pid_column  True for the 26.x wide layout
        header           True when the column header rows were seen
        truncated        True when the table does not end with a border line
        elided           True when the paste holds "..." / "[...]" elision lines
        error            parse_error(text) result or None (dcmi codes, not found)

    A chip record: ``npu_id``, ``chip_id``, ``phy_id`` (A3), ``device_id`` and
    ``logic_id`` (310-class ``Device`` column, which is the chip's logic id; otherwise
    None until ``info -m`` fills it), ``name`` ("910B3", "Ascend910", "310P3"),
    ``health`` (raw: OK/Warning/Alarm/Critical/…), ``power_w`` (float or None for
    ``NA``/``-``), ``temp_c``, ``hugepages_used``/``hugepages_total`` (pages),
    ``aicore_pct``, ``memory_used_mb``/``memory_total_mb`` (DDR), ``hbm_used_mb``/
    ``hbm_total_mb`` (None on 310-class), ``bus_id`` (raw: may be ``NA`` or masked).
    Never raises.
    """
    out = _empty_info()
    if not isinstance(text, str) or not text:
        return out
    chips: List[Dict[str, Any]] = out["chips"]
    pending: Optional[Dict[str, Any]] = None
    in_processes = False
    last_table_line = ""
    for raw in _lines(text):
        line = raw.replace("\t", "    ").rstrip()
        stripped = line.strip()
        if not stripped:
            continue
        if stripped in ("...", "…") or stripped.startswith("[...") or stripped.startswith("[…"):
            out["elided"] = True
            continue
        if _is_border(stripped):
            last_table_line = "border"
            continue
        cells = _cells(line)
        if cells is None:
            continue
        last_table_line = "row"
        heading = _info_heading(cells, out)
        if heading:
            in_processes = in_processes or heading == "processes"
            continue
        if len(cells) >= 4:
            in_processes = _info_process_row(cells, out) or in_processes
            continue
        if len(cells) != 3 or in_processes and not _ROW1_C0.match(cells[0]):
            continue
        row1 = _device_row1(cells)
        if row1 is not None:
            if pending is not None:
                chips.append(pending)
            pending = row1
            in_processes = False
            continue
        if pending is not None and _ROW2_C0.match(cells[0]):
            _device_row2(cells, pending, out)
            chips.append(pending)
            pending = None
    if pending is not None:
        chips.append(pending)
    _conclude_info(text, out, last_table_line)
    return out


def _empty_info() -> Dict[str, Any]:
    """What :func:`parse_info` returns for a text without a table."""
    return {
        "version": None,
        "driver_version": None,
        "layout": None,
        "second_id": None,
        "chips": [],
        "processes": [],
        "idle_npus": [],
        "process_section": False,
        "container_pid_column": False,
        "header": False,
        "truncated": False,
        "elided": False,
        "error": None,
    }


def _info_heading(cells: List[str], out: Dict[str, Any]) -> str:
    """Record a line that is not a row of the table into ``out``: the version line, a
    "No running processes" line, the process table's header, the column headers.
    Returns "processes" when the line opens the process section, "heading" for another
    such line, "" for a table row."""
    joined = " ".join(cells)
    vm = _VERSION_RE.search(joined)
    if vm:
        out["version"], out["driver_version"] = vm.group(1), vm.group(2)
        return "heading"
    nm = _NO_PROC.search(joined)
    if nm:
        out["process_section"] = True
        out["idle_npus"].append(int(nm.group(1)))
        return "processes"
    if any(c.lower().startswith("process id") for c in cells):
        out["process_section"] = True
        if any("container" in c.lower() for c in cells):
            out["container_pid_column"] = True
        return "processes"
    first = cells[0]
    if first.startswith("NPU") and "Name" in first:
        out["header"] = True
        return "heading"
    if first.startswith("Chip") and len(cells) >= 2 and "Bus" in cells[1]:
        out["header"] = True
        if "Phy" in first:
            out["second_id"] = "phy_id"
        elif "Device" in first:
            out["second_id"] = "device"
        layout_hint = cells[2] if len(cells) > 2 else ""
        out["layout"] = "910" if "HBM" in layout_hint else "310"
        return "heading"
    return ""


def _info_process_row(cells: List[str], out: Dict[str, Any]) -> bool:
    """Record a row of the process table into ``out``; False when the line is not one."""
    proc = _process_row(cells)
    if proc is None:
        return False
    out["process_section"] = True
    if len(cells) >= 5:
        out["container_pid_column"] = True
    out["processes"].append(proc)
    return True


def _conclude_info(text: str, out: Dict[str, Any], last_table_line: str) -> None:
    """The layout when no header named it, whether the table was cut short, and the
    error a text without chips says."""
    chips = out["chips"]
    if chips and out["layout"] is None:
        out["layout"] = "910" if any(c.get("hbm_total_mb") is not None for c in chips) else "310"
    if chips or out["process_section"]:
        out["truncated"] = last_table_line != "border" and out["header"]
    out["error"] = parse_error(text) if not chips else None


def _device_row1(cells: List[str]) -> Optional[Dict[str, Any]]:
    m0 = _ROW1_C0.match(cells[0])
    m2 = _ROW1_C2.match(cells[2])
    if not m0 or not m2 or not _HEALTH_RE.match(cells[1] or "?"):
        return None
    name = m0.group(2).strip()
    if _INT_RE.match(name):
        return None
    return {
        "npu_id": int(m0.group(1)),
        "chip_id": None,
        "phy_id": None,
        "device_id": None,
        "logic_id": None,
        "name": name,
        "health": cells[1],
        "power_w": _num(m2.group(1)),
        "temp_c": _num(m2.group(2)),
        "hugepages_used": int(m2.group(3)),
        "hugepages_total": int(m2.group(4)),
        "aicore_pct": None,
        "memory_used_mb": None,
        "memory_total_mb": None,
        "hbm_used_mb": None,
        "hbm_total_mb": None,
        "bus_id": None,
    }


def _device_row2(cells: List[str], chip: Dict[str, Any], out: Dict[str, Any]) -> None:
    m0 = _ROW2_C0.match(cells[0])
    if m0 is None:  # pragma: no cover - caller checked
        return
    chip["chip_id"] = int(m0.group(1))
    bus = cells[1].strip()
    chip["bus_id"] = bus or None
    m2 = _ROW2_C2.match(cells[2])
    has_hbm = False
    if m2:
        chip["aicore_pct"] = _num(m2.group(1))
        chip["memory_used_mb"] = int(m2.group(2))
        chip["memory_total_mb"] = int(m2.group(3))
        if m2.group(4) is not None:
            has_hbm = True
            chip["hbm_used_mb"] = int(m2.group(4))
            chip["hbm_total_mb"] = int(m2.group(5))
    if m0.group(2) is not None:
        second = int(m0.group(2))
        kind = out["second_id"] or ("phy_id" if has_hbm else "device")
        if kind == "phy_id":
            chip["phy_id"] = second
        else:
            chip["device_id"] = second
            chip["logic_id"] = second


def _process_row(cells: List[str]) -> Optional[Dict[str, Any]]:
    m0 = _PROC_C0.match(cells[0])
    pid = _int(cells[1])
    mem = _int(cells[3]) if len(cells) > 3 else None
    if not m0 or pid is None:
        return None
    cpid: Optional[int] = None
    if len(cells) > 4:
        cpid = _int(cells[4])
    return {
        "npu_id": int(m0.group(1)),
        "chip_id": int(m0.group(2)),
        "pid": pid,
        "name": cells[2],
        "memory_mb": mem,
        "container_pid": cpid,
    }


# ------------------------------------------------------------------------------ errors
def parse_error(text: str) -> Optional[Dict[str, Any]]:
    """Recognise an npu-smi failure in its output (stdout + stderr together).

    Returns ``None`` when no failure is recognised, else ``{"code": int|None, "cause":
    "dcmi" (a DCMI return code was printed: ``code``) | "not-installed" | "permission" |
    "loader" (the loader could not find a library npu-smi needs: ``library``),
    "message": the line}``.  The *presence of a* ``dcmi … ret is -NNNN`` *line* is the
    signal (as the captured outputs show), not the exit status.  ``DrvMngGetConsoleLogLevel failed``
    lines and ``[EVENT] PROFILING`` noise are ignored.  What a DCMI code means (-8005,
    -8020: the device is busy) is the rules' knowledge
    (:data:`npudoctor.rules.devices.DCMI_CODES`).  Never raises.
    """
    if not isinstance(text, str) or not text:
        return None
    for line in _lines(text):
        m = _DCMI_RE.search(line) or _DCMI_CODE_RE.search(line)
        if m:
            return {"code": int(m.group(m.lastindex or 1)), "cause": "dcmi", "message": line.strip()}
    for line in _lines(text):
        m = _LOADER_RE.search(line)
        if m:
            return {"code": None, "cause": "loader", "message": line.strip(), "library": m.group(1)}
    for line in _lines(text):
        if _NOT_FOUND_RE.search(line):
            return {"code": None, "cause": "not-installed", "message": line.strip()}
    for line in _lines(text):
        low = line.lower()
        if "permission denied" in low or "operation not permitted" in low:
            return {"code": None, "cause": "permission", "message": line.strip()}
    return None


# ------------------------------------------------------------------------- npu-smi -v
def parse_version(text: str) -> Optional[str]:
    """``npu-smi -v`` → ``"23.0.rc2"`` (or None).  Source: the official template
    ``npu-smi version: x.x.x``."""
    if not isinstance(text, str):
        return None
    m = _SMI_VERSION_RE.search(text)
    if m:
        return m.group(1)
    m = _VERSION_RE.search(text)
    return m.group(1) if m else None


# ---------------------------------------------------------------------- npu-smi info -m
def parse_mapping(text: str) -> List[Dict[str, Any]]:
    """``npu-smi info -m`` → one record per row: ``{"npu_id", "chip_id", "logic_id",
    "phy_id", "chip_name", "is_mcu"}``.

    Columns are ``NPU ID  Chip ID  Chip Logic ID  [Chip Phy-ID]  Chip Name`` in 31-char
    fields (TAB or spaces before); ``Mcu`` rows have ``-`` ids (``is_mcu``).  The Chip
    Name may contain one space (``Ascend 910B3``).  Without a header line rows are read
    as 4 columns (5 when the row has 5 fields).  Never raises.
    """
    rows: List[Dict[str, Any]] = []
    if not isinstance(text, str):
        return rows
    has_phy: Optional[bool] = None
    for raw in _lines(text):
        line = raw.strip()
        if not line:
            continue
        fields = re.split(r"\s{2,}|\t", line)
        if line.startswith("NPU ID") and "Logic" in line:
            has_phy = "Phy" in line
            continue
        if len(fields) < 4 or not _INT_RE.match(fields[0]) or not _INT_RE.match(fields[1]):
            continue
        phy_col = has_phy if has_phy is not None else len(fields) >= 5
        logic = fields[2]
        phy = fields[3] if phy_col else None
        name = " ".join(fields[4:] if phy_col else fields[3:]).strip()
        if not name:
            continue
        rows.append(
            {
                "npu_id": int(fields[0]),
                "chip_id": int(fields[1]),
                "logic_id": _int(logic),
                "phy_id": _int(phy) if phy is not None else None,
                "chip_name": name,
                "is_mcu": name.lower() == "mcu" or _int(logic) is None,
            }
        )
    return rows


# ---------------------------------------------------------------------- npu-smi info -l
def parse_list(text: str) -> Dict[str, Any]:
    """``npu-smi info -l`` → ``{"total": int|None, "npus": [{"npu_id", "chip_count"}]}``."""
    out: Dict[str, Any] = {"total": None, "npus": []}
    for block in parse_kv_blocks(text):
        if "Total Count" in block:
            out["total"] = _int(block.get("Total Count"))
        npu = _int(block.get("NPU ID"))
        if npu is not None:
            out["npus"].append({"npu_id": npu, "chip_count": _int(block.get("Chip Count"))})
    return out


# ------------------------------------------------------------ npu-smi info -t <type> ...
def parse_kv_blocks(text: str) -> List[Dict[str, str]]:
    """Key/value output of ``npu-smi info -t <type>`` (and ``-l``) → list of blocks.

    Lines are ``<key><padding>: <value>`` with any indentation (TAB, 8 or 9 spaces, or
    none).  A blank line (even one holding spaces) or a repeated key starts a new block.
    A line without ``:`` that is indented deeper than the keys continues the previous
    value (``-t health`` wraps ``Error Information``).  Never raises.
    """
    blocks: List[Dict[str, str]] = []
    if not isinstance(text, str):
        return blocks
    current: Dict[str, str] = {}
    last_key: Optional[str] = None
    for raw in _lines(text):
        line = raw.replace("\t", "        ").rstrip()
        if not line.strip():
            if current:
                blocks.append(current)
            current, last_key = {}, None
            continue
        kv = _kv(line)
        if kv is not None:
            key, value = kv
            if key in current:
                blocks.append(current)
                current = {}
            current[key] = value
            last_key = key
        elif last_key is not None and raw[:1].isspace():
            current[last_key] = (current[last_key] + " " + line.strip()).strip()
    if current:
        blocks.append(current)
    return blocks


def parse_kv(text: str) -> Dict[str, str]:
    """All blocks of :func:`parse_kv_blocks` merged (first value of a key wins)."""
    merged: Dict[str, str] = {}
    for block in parse_kv_blocks(text):
        for key, value in block.items():
            merged.setdefault(key, value)
    return merged


def parse_health(text: str) -> Dict[str, Any]:
    """``npu-smi info -t health -i N [-c C]`` → ``{"status", "error_codes": [hex str],
    "information"}``.  ``Error Code : NA`` gives no codes; several codes may be listed
    separated by spaces or commas.  Never raises."""
    kv = parse_kv(text)
    codes_text = kv.get("Error Code", "") or ""
    codes = [c.upper() for c in re.split(r"[\s,;]+", codes_text) if re.match(r"^[0-9A-Fa-f]{6,10}$", c)]
    info = kv.get("Error Information")
    return {
        "status": kv.get("Health Status") or kv.get("Health"),
        "error_codes": codes,
        "information": None if info in (None, "", "NA") else info,
    }


def parse_board(text: str) -> Dict[str, Any]:
    """``npu-smi info -t board -i N [-c C]`` → the fields plus ``soc_version`` when the
    output allows it.

    ``soc_version`` follows the ATC ``--soc_version`` documentation: A3 = ``Chip Name`` +
    ``_`` + ``NPU Name`` (``Ascend910_9391``); otherwise ``Chip Type`` + ``Chip Name``
    (``Ascend`` + ``910B3``).  Masked values (``xxx``) give None."""
    kv = parse_kv(text)
    chip_type = kv.get("Chip Type", "")
    chip_name = kv.get("Chip Name", "")
    npu_name = kv.get("NPU Name", "")
    soc: Optional[str] = None
    if chip_name and not re.match(r"^x+$", chip_name, re.I) and chip_name.lower() != "mcu":
        if npu_name and npu_name.upper() != "NA":
            soc = f"{chip_name}_{npu_name}"
        elif chip_type and not chip_name.startswith(chip_type):
            soc = f"{chip_type}{chip_name}"
        else:
            soc = chip_name
    return {
        "fields": kv,
        "software_version": kv.get("Software Version"),
        "firmware_version": kv.get("Firmware Version"),
        "compatibility": kv.get("Compatibility"),
        "pci_device_id": kv.get("PCI Device ID"),
        "soc_version": soc,
    }


def parse_usages(text: str) -> Dict[str, Any]:
    """``npu-smi info -t usages -i N`` → numbers: ``ddr_capacity_mb``,
    ``hbm_capacity_mb``, ``hbm_usage_pct``, ``aicore_usage_pct`` … (None when absent)."""
    kv = parse_kv(text)
    keys = {
        "ddr_capacity_mb": "DDR Capacity(MB)",
        "ddr_usage_pct": "DDR Usage Rate(%)",
        "hbm_capacity_mb": "HBM Capacity(MB)",
        "hbm_usage_pct": "HBM Usage Rate(%)",
        "aicore_usage_pct": "Aicore Usage Rate(%)",
        "aivector_usage_pct": "Aivector Usage Rate(%)",
        "aicpu_usage_pct": "Aicpu Usage Rate(%)",
    }
    out: Dict[str, Any] = {k: _num(kv.get(v, "")) for k, v in keys.items()}
    out["chip_count"] = _int(kv.get("Chip Count"))
    return out


def parse_common(text: str) -> List[Dict[str, Any]]:
    """``npu-smi info -t common -i N`` → one record per block that has a temperature:
    ``{"chip_id", "chip_name", "temp_c", "power_w", "aicore_pct", "hbm_pct"}``; the
    ``Chip Name : mcu`` block is kept with its name."""
    out: List[Dict[str, Any]] = []
    for block in parse_kv_blocks(text):
        if "Temperature(C)" not in block:
            continue
        out.append(
            {
                "chip_id": _int(block.get("Chip ID")),
                "chip_name": block.get("Chip Name"),
                "temp_c": _num(block.get("Temperature(C)", "")),
                "power_w": _num(block.get("NPU Real-time Power(W)", "")),
                "aicore_pct": _num(block.get("Aicore Usage Rate(%)", "")),
                "hbm_pct": _num(block.get("HBM Usage Rate(%)", "")),
            }
        )
    return out


def parse_proc_mem(text: str) -> List[Dict[str, Any]]:
    """``npu-smi info -t proc-mem -i N`` → ``[{"chip_id", "pid", "name",
    "memory_mb"}]`` (chips with "No process in device." give no record).  The
    ``Chip ID`` line follows the process lines of its chip."""
    out: List[Dict[str, Any]] = []
    waiting: List[Dict[str, Any]] = []
    if not isinstance(text, str):
        return out
    for raw in _lines(text):
        m = _PROC_MEM_RE.search(raw)
        if m:
            waiting.append(
                {"chip_id": None, "pid": int(m.group(1)), "name": m.group(2).strip(), "memory_mb": int(m.group(3))}
            )
            continue
        kv = _kv(raw)
        if kv and kv[0] == "Chip ID":
            chip = _int(kv[1])
            for rec in waiting:
                rec["chip_id"] = chip
            out.extend(waiting)
            waiting = []
    out.extend(waiting)
    return out


def merge_mapping(chips: List[Dict[str, Any]], mapping: List[Dict[str, Any]]) -> Tuple[int, List[Dict[str, Any]]]:
    """Fill ``logic_id``/``phy_id`` of table chips from ``info -m`` rows (matched on
    ``npu_id`` + ``chip_id``).  Returns ``(filled, unmatched_rows)``; Mcu rows are
    ignored.  Mutates ``chips``."""
    index = {(c.get("npu_id"), c.get("chip_id")): c for c in chips}
    filled = 0
    unmatched: List[Dict[str, Any]] = []
    for row in mapping:
        if row.get("is_mcu"):
            continue
        chip = index.get((row["npu_id"], row["chip_id"]))
        if chip is None:
            unmatched.append(row)
            continue
        if row.get("logic_id") is not None:
            chip["logic_id"] = row["logic_id"]
            filled += 1
        if row.get("phy_id") is not None and chip.get("phy_id") is None:
            chip["phy_id"] = row["phy_id"]
    return filled, unmatched
