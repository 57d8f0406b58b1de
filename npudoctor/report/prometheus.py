"""Prometheus text exposition (format 0.0.4) of a check, for node_exporter's textfile
collector (``npudoctor check --format prometheus > …/npudoctor.prom``).

Metrics (all gauges; label values escaped as the format requires)::

    npudoctor_findings{severity, area}          number of findings; every severity x area
                                                pair is present (0 included) so that alert
                                                rules see a stable set of series
    npudoctor_finding_active{code, name, severity, area}
                                                1 for each finding code reported (bounded
                                                by the code registry, not by subjects)
    npudoctor_stack_info{npudoctor_version, python, torch, torch_npu, cann_toolkit,
                         cann_kernels, cann_nnal, driver, firmware, chips, arch}  1
                                                the stack fingerprint of npudoctor.cluster.compare
                                                ("" when unknown)
    npudoctor_area_checked{area}                1 judged, 0 probed but not checked (no npu-smi,
                                                --no-commands, a timeout on a busy node, ...);
                                                every area is present, an area the mode does
                                                not probe is 0 too ("matrix": 1 when a matrix
                                                was loaded)
    npudoctor_check_exit_code                   what `npudoctor check` exits with (0/1)
    npudoctor_check_timestamp_seconds           when the check ran (Unix time)
"""

from __future__ import annotations

import time
from typing import Iterable, List, Optional, Sequence, Tuple

from npudoctor import __version__
from npudoctor.findings import AREAS, SEVERITIES, Finding
from npudoctor.report.escape import quoted
from npudoctor.snapshot import Snapshot

#: Fingerprint fields exported as labels of npudoctor_stack_info (label name → field).
INFO_LABELS = (
    ("python", "python"),
    ("torch", "torch"),
    ("torch_npu", "torch_npu"),
    ("cann_toolkit", "cann.toolkit"),
    ("cann_kernels", "cann.kernels"),
    ("cann_nnal", "cann.nnal"),
    ("driver", "driver"),
    ("firmware", "firmware"),
    ("chips", "chips"),
    ("arch", "arch"),
)


def escape(value: str) -> str:
    """Escape a label value: the control characters it carries from the machine (an
    ``npu-smi`` chip name, a version file) written as ``\\uXXXX`` text, as the reports quote
    them (:func:`npudoctor.report.escape.quoted`: the textfile is read by people too), then
    the exposition format's backslash, double quote and line feed."""
    return quoted(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(pairs: Iterable[Tuple[str, object]]) -> str:
    return "{" + ",".join(f'{k}="{escape(str(v))}"' for k, v in pairs) + "}"


def render(snapshot: Snapshot, findings: Sequence[Finding], exit_code: int, now: Optional[float] = None) -> str:
    """The text exposition for one check (ends with a newline)."""
    from npudoctor.cluster.compare import NONE, fingerprint

    lines: List[str] = []

    def family(name: str, help_text: str) -> None:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} gauge")

    family("npudoctor_findings", "Findings of the last npudoctor check, by severity and area.")
    counts = {(s, a): 0 for s in SEVERITIES for a in AREAS}
    for f in findings:
        key = (f.severity, f.area)
        counts[key] = counts.get(key, 0) + 1
    for (sev, area), n in sorted(counts.items(), key=lambda kv: (SEVERITIES.index(kv[0][0]), kv[0][1])):
        lines.append(f"npudoctor_findings{_labels([('severity', sev), ('area', area)])} {n}")

    family("npudoctor_finding_active", "1 for each finding code reported by the last check.")
    seen = set()
    for f in findings:
        if f.code in seen:
            continue
        seen.add(f.code)
        labels = [("code", f.code), ("name", f.name), ("severity", f.severity), ("area", f.area)]
        lines.append(f"npudoctor_finding_active{_labels(labels)} 1")

    family("npudoctor_stack_info", "The software stack seen by npudoctor (value always 1).")
    fp = fingerprint(snapshot.facts)
    info = [("npudoctor_version", __version__)]
    for label, field in INFO_LABELS:
        value = fp.get(field)
        info.append((label, "" if value in (None, NONE) else value))
    lines.append(f"npudoctor_stack_info{_labels(info)} 1")

    from npudoctor.facts.coverage import unchecked

    family("npudoctor_area_checked", "1 when the area was judged by the last check, 0 when it could not be.")
    gaps = unchecked(snapshot.facts)
    probed = set(snapshot.facts)
    for area in AREAS:
        checked = (area in probed or area == "matrix" and bool(snapshot.matrix)) and area not in gaps
        lines.append(f"npudoctor_area_checked{_labels([('area', area)])} {int(checked)}")

    family("npudoctor_check_exit_code", "Exit code of the last npudoctor check (0 no errors, 1 errors).")
    lines.append(f"npudoctor_check_exit_code {int(exit_code)}")
    family("npudoctor_check_timestamp_seconds", "Unix time of the last npudoctor check.")
    lines.append(f"npudoctor_check_timestamp_seconds {int(now if now is not None else time.time())}")
    return "\n".join(lines) + "\n"
