"""Parser of ``npu-smi info -t topo``: the NPU-to-NPU link matrix and CPU affinity.

Format (samples ``topo_*`` in ``tests/fixtures/``): a header
line of ``NPU<id>`` names (led by a TAB or spaces; ids may be non-contiguous) ending in
``CPU Affinity``; one row per NPU: ``NPU<id>`` then one link token per header column
(``X`` self, ``HCCS``, ``PIX``, ``PXB``, ``PHB``, ``SYS``, ``SIO``, ``UB``, ``NA``) and
the CPU affinity (``144-167`` or ``0-63,128-191``); then an optional ``Legend:``.
Column widths vary inside a line, so tokens are split on whitespace, never offsets.
Pure and total: never raises, linear time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npudoctor import lazyre

if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional

#: Link types and what they mean (from the npu-smi legend, official command reference).
LINKS = {
    "X": "self",
    "HCCS": "HCCS (Huawei Cache Coherence System) direct link",
    "SIO": "SIO bus between the two dies of one package",
    "UB": "UB (unified bus) link",
    "PIX": "a single PCIe switch",
    "PXB": "several PCIe switches",
    "PHB": "PCIe and the PCIe host bridge of a CPU",
    "SYS": "PCIe and the SMP link between NUMA nodes (QPI/UPI)",
    "NA": "unknown relationship",
}
#: Links that do not go through PCIe (fast NPU-to-NPU fabrics).
FABRIC = ("HCCS", "SIO", "UB")

_NPU_RE = lazyre.pattern(r"^NPU((?<![0-9])[0-9]{1,18}(?![0-9]))$")
_CPUS_RE = lazyre.pattern(
    r"^(?<![0-9])[0-9]{1,18}(?![0-9])(?:-(?<![0-9])[0-9]{1,18}(?![0-9]))?(?:,(?<![0-9])[0-9]{1,18}(?![0-9])(?:-(?<![0-9])[0-9]{1,18}(?![0-9]))?)*$"
)
_MAX_LINE = 4000


def parse_cpus(text: str) -> Optional[List[int]]:
    """``"0-63,128-191"`` → sorted CPU numbers; None when not a CPU list (or absurdly
    large, > 65536 CPUs)."""
    if not isinstance(text, str) or not _CPUS_RE.match(text.strip()):
        return None
    cpus: List[int] = []
    for part in text.strip().split(","):
        lo, _, hi = part.partition("-")
        a, b = int(lo), int(hi or lo)
        if b < a or b - a > 65536 or len(cpus) > 65536:
            return None
        cpus.extend(range(a, b + 1))
    return sorted(set(cpus))


def parse_topo(text: str) -> Dict[str, Any]:
    """Parse ``npu-smi info -t topo``.

    Returns ``{"npus": [ids in header order], "links": {"<a>": {"<b>": token}},
    "affinity": {"<id>": "144-167"}, "affinity_cpus": {"<id>": [int…]},
    "link_types": sorted tokens seen (without X), "all_fabric": bool (every pair on
    HCCS/SIO/UB), "islands": [[ids]] (groups joined by fabric links or a single PCIe
    switch PIX), "legend": bool}``.  Keys of the maps are strings (JSON).  Missing
    header: the ids come from the row labels.  Never raises.
    """
    out: Dict[str, Any] = {
        "npus": [],
        "links": {},
        "affinity": {},
        "affinity_cpus": {},
        "link_types": [],
        "all_fabric": False,
        "islands": [],
        "legend": False,
    }
    if not isinstance(text, str) or not text:
        return out
    header: List[int] = []
    rows: Dict[int, List[str]] = {}
    for raw in text.splitlines():
        tokens = raw[:_MAX_LINE].split()
        if not tokens:
            continue
        if tokens[0].startswith("Legend"):
            out["legend"] = True
            break
        ids = [int(m.group(1)) for m in (_NPU_RE.match(t) for t in tokens) if m]
        if (
            not raw[:1].strip()
            and tokens
            and _NPU_RE.match(tokens[0])
            and len(ids) == len([t for t in tokens if t not in ("CPU", "Affinity")])
        ):
            header = ids
            continue
        m = _NPU_RE.match(tokens[0])
        if m and len(tokens) >= 2:
            if not header and len(ids) == len(tokens) - (2 if tokens[-1] == "Affinity" else 0):
                header = ids
                continue
            rows[int(m.group(1))] = tokens[1:]
    if not header:
        header = sorted(rows)
    out["npus"] = header
    seen = set()
    for npu, cells in rows.items():
        links: Dict[str, str] = {}
        for i, peer in enumerate(header):
            if i < len(cells) and cells[i].upper() in LINKS:
                links[str(peer)] = cells[i].upper()
                if cells[i].upper() != "X":
                    seen.add(cells[i].upper())
        out["links"][str(npu)] = links
        if len(cells) > len(header):
            aff = cells[len(header)]
            if parse_cpus(aff) is not None:
                out["affinity"][str(npu)] = aff
                out["affinity_cpus"][str(npu)] = parse_cpus(aff)
    out["link_types"] = sorted(seen)
    pairs = [(a, b, t) for a, peers in out["links"].items() for b, t in peers.items() if a != b]
    out["all_fabric"] = bool(pairs) and all(t in FABRIC for _a, _b, t in pairs)
    out["islands"] = _islands([str(n) for n in header if str(n) in out["links"]], pairs)
    return out


def _islands(nodes: List[str], pairs: List[Any]) -> List[List[int]]:
    parent = {n: n for n in nodes}

    def find(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for a, b, t in pairs:
        if a in parent and b in parent and t in FABRIC + ("PIX",):
            parent[find(a)] = find(b)
    groups: Dict[str, List[int]] = {}
    for n in nodes:
        groups.setdefault(find(n), []).append(int(n))
    return sorted((sorted(g) for g in groups.values()), key=lambda g: g[0])
