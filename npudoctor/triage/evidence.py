"""Tracebacks as evidence: tie a log to the findings whose subject its tracebacks run through.

A traceback frame (``File ".../site-packages/<package>/...", line N``) or a shared library a
loader message names (``libtorch_npu.so: undefined symbol ...``) lies inside a distribution or
library.  When an error/warning finding on the same machine names that distribution or
library as its subject (``torch``, ``vllm-ascend:torch-npu``, ``/…/libtorch_npu.so``), the log
is tied to the finding even where no line carries a code.  Nothing is judged here: the rules
made the findings; this only matches names.
"""

from __future__ import annotations

import os
import re
from typing import Any, Dict, List, Optional, Sequence

from npudoctor.findings import Finding

__all__ = ["FRAME_ANCHOR", "frame_package", "lib_names", "names_of", "tie"]

#: Every traceback frame line holds this.
FRAME_ANCHOR = b'File "'
_FRAME_RX = re.compile(rb'File "(?P<path>[^"]{1,1000})", line [0-9]+')
_SITE_RX = re.compile(r"/(?:site|dist)-packages/(?P<top>[A-Za-z_][\w.\-]*)")
_SO_RX = re.compile(r"(?P<lib>lib[\w+\-]+\.so)(?:[0-9.]*)")


def frame_package(line: bytes) -> Optional[str]:
    """The top-level package a traceback frame ``line`` runs in (``torch_npu``), or ``None``
    (no frame, or a file outside site-/dist-packages)."""
    m = _FRAME_RX.search(line)
    if m is None:
        return None
    site = _SITE_RX.search(m.group("path").decode("utf-8", "replace"))
    if site is None:
        return None
    top = site.group("top")
    return _norm(top[:-3] if top.endswith(".py") else top)


def lib_names(text: str) -> List[str]:
    """The ``lib*.so`` names in ``text`` (a path or a soname), without version suffixes
    (``/usr/lib/libm.so.6`` -> ``libm.so``): how :func:`names_of` spells libraries."""
    return _SO_RX.findall(os.path.basename(text))


def _norm(name: str) -> str:
    return name.lower().replace("-", "_")


def names_of(finding: Finding) -> List[str]:
    """The distributions and library file names ``finding`` is about, normalised: the parts of
    its ``subject`` (``vllm-ascend:torch-npu`` -> ``vllm_ascend``, ``torch_npu``), the
    ``lib*.so`` basenames in it, and the libraries its ``data`` names (``libraries``: the
    loader findings' missing libraries, grouped by owner under a subject that names none;
    ``library``: the shadowed one), so that a loader message naming a library ties the log
    to the finding about that library."""
    subject = finding.subject or ""
    out: List[str] = []
    for lib in _SO_RX.findall(subject):
        out.append(lib)
    data = finding.data if isinstance(finding.data, dict) else {}
    named = data.get("libraries")
    named = list(named) if isinstance(named, (list, tuple)) else []
    if isinstance(data.get("library"), str):
        named.append(data["library"])
    for value in named:
        out.extend(_SO_RX.findall(os.path.basename(str(value))))
    if not out:
        for part in subject.split(":"):
            part = part.strip()
            if part and "/" not in part:
                out.append(_norm(part))
    return list(dict.fromkeys(out))


def _libs(group: Dict[str, Any]) -> List[str]:
    """The ``lib*.so`` file names a known group's captures or first line name."""
    out: List[str] = []
    for value in list((group.get("captures") or {}).values()) + [group.get("sample") or ""]:
        for word in str(value).split():
            out.extend(_SO_RX.findall(os.path.basename(word.rstrip(":,)"))))
    return out


def tie(
    frames: Dict[str, Dict[str, Any]], known: Sequence[Dict[str, Any]], findings: Sequence[Finding]
) -> List[Dict[str, Any]]:
    """The findings the log is tied to: ``frames`` (package -> first place, from the
    scanner), ``known`` (the ranked groups: the libraries their captures and first line
    name), ``findings`` (the rule findings on the same facts; only errors and warnings
    count).  Each record: ``code``, ``title``, ``severity``, ``by`` (what in the log names it)
    and ``first`` (``{source, line}``)."""
    places: Dict[str, Dict[str, Any]] = dict(frames)
    for group in known:
        for lib in _libs(group):
            places.setdefault(lib, group["first"])
    out: List[Dict[str, Any]] = []
    seen = set()
    for f in findings:
        if f.severity not in ("error", "warning"):
            continue
        for name in names_of(f):
            place = places.get(name)
            if place is None or (f.code, name) in seen:
                continue
            seen.add((f.code, name))
            what = "the library" if name.endswith(".so") else "a traceback frame in"
            out.append(
                {"code": f.code, "title": f.title, "severity": f.severity, "by": f"{what} {name}", "first": place}
            )
    return out
