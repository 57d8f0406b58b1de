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
from typing import Any, Dict, List, Optional, Sequence

from npudoctor import lazyre
from npudoctor.findings import Finding

__all__ = [
    "FRAME_ANCHOR",
    "PATH_ANCHOR",
    "frame_owner",
    "frame_package",
    "frame_path",
    "lib_names",
    "names_of",
    "path_package",
    "tie",
]

#: Every traceback frame line holds this.
FRAME_ANCHOR = b'File "'
#: A path into an installed distribution (``.../site-packages/flash_attn_2_cuda...so``).
PATH_ANCHOR = b"-packages/"
_FRAME_RX = lazyre.pattern(rb'File "(?P<path>[^"]{1,1000})", line [0-9]+')
_SITE_RX = lazyre.pattern(r"/(?:site|dist)-packages/(?P<top>[A-Za-z_][\w.\-]{0,200})")
#: Words of an error line that names a file of a distribution (an import error, a loader
#: message): ``ImportError: /…/site-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so:
#: undefined symbol: …``, ``OSError: …/nvidia/cudnn/lib/libcudnn.so.9: cannot open shared object file``.
_ERROR_WORDS = (b"Error", b"error:", b"cannot open shared object file", b"undefined symbol")
#: A file of the standard library (``/usr/lib/python3.10/...``) outside site-/dist-packages.
_STDLIB_RX = lazyre.pattern(r"/lib(?:64)?/python[23](?:\.[0-9]+)?/")
_SO_RX = lazyre.pattern(r"(?P<lib>lib[\w+\-]+\.so)(?:[0-9.]*)")


def frame_package(line: bytes) -> Optional[str]:
    """The top-level package a traceback frame ``line`` runs in (``torch_npu``), or ``None``
    (no frame, or a file outside site-/dist-packages)."""
    m = _FRAME_RX.search(line)
    if m is None:
        return None
    return _top_of(m.group("path").decode("utf-8", "replace"))


def frame_path(line: bytes) -> Optional[str]:
    """The file of a traceback frame ``line`` (``File "/x/y.py", line 3, in f`` -> ``/x/y.py``),
    ``""`` for a frame of the import machinery (``<frozen importlib._bootstrap>``,
    ``.../importlib/__init__.py``: it never owns the module it failed to find), or ``None``
    when the line is no frame."""
    m = _FRAME_RX.search(line)
    if m is None:
        return None
    path = m.group("path").decode("utf-8", "replace")
    if path.startswith("<") or "/importlib/" in path:
        return ""
    return path


def frame_owner(path: str, cann_frames: Sequence[str], cann_packages: Sequence[str]) -> Dict[str, str]:
    """Who owns the code of the frame at ``path``, as a capture: ``in_cann`` (the CANN toolkit's
    Python code: a path holding one of ``cann_frames``, or a site-packages package among
    ``cann_packages``), ``in_package`` (the import name of another installed package) or
    ``in_code`` (the user's own file); nothing for a file of the standard library.  Paths are kept to their last 200 characters."""
    top = _top_of(path)
    if top is None and _STDLIB_RX.search(path):
        return {}  # the standard library: the frame names no owner
    if any(marker in path for marker in cann_frames) or (top is not None and top in cann_packages):
        return {"in_cann": path[-200:]}
    if top is not None:
        return {"in_package": top}
    return {"in_code": path[-200:]}


def path_package(line: bytes) -> Optional[str]:
    """The top-level package or extension module an error ``line`` names a file of
    (``ImportError: /…/site-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so:
    undefined symbol: …`` -> ``flash_attn_2_cuda``), or ``None`` (no error word, or no path
    into site-/dist-packages).  Lines that only mention a path (INFO lines) are not evidence."""
    if PATH_ANCHOR not in line or not any(w in line for w in _ERROR_WORDS):
        return None
    return _top_of(line[:4000].decode("utf-8", "replace"))


def _top_of(path: str) -> Optional[str]:
    """The import name of the first entry under site-/dist-packages in ``path``: a package
    directory, a module (``six.py`` -> ``six``) or an extension module (its name before the
    first dot)."""
    site = _SITE_RX.search(path)
    if site is None:
        return None
    top = site.group("top").split(".", 1)[0]
    return _norm(top) if top else None


def lib_names(text: str) -> List[str]:
    """The ``lib*.so`` names in ``text`` (a path or a soname), without version suffixes
    (``/usr/lib/libm.so.6`` -> ``libm.so``): how :func:`names_of` spells libraries."""
    return _SO_RX.findall(os.path.basename(text))


def _norm(name: str) -> str:
    return name.lower().replace("-", "_")


def _strings(value: Any) -> List[str]:
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value if isinstance(v, str)] if isinstance(value, (list, tuple)) else []


def names_of(finding: Finding) -> List[str]:
    """The distributions, import names and library file names ``finding`` is about,
    normalised, so that a traceback frame, an import error or a loader message naming one
    ties the log to the finding:

    * the ``lib*.so`` basenames in its ``subject`` and in the libraries and files its
      ``data`` names (``libraries``: the loader findings' missing libraries or a CUDA-only
      distribution's CUDA libraries; ``library``: the shadowed one; ``files``);
    * the import names in ``data["modules"]`` (PKG052: ``flash_attn``, ``flash_attn_2_cuda``;
      PKG051: ``vllm_ascend``), the ``data["package"]`` and the site-packages package of a
      subject that is a path (``/…/site-packages/torch_npu/lib/libtorch_npu.so``);
    * when none of these is given, the parts of ``subject`` (``vllm-ascend:torch-npu`` ->
      ``vllm_ascend``, ``torch_npu``)."""
    subject = finding.subject or ""
    out: List[str] = []
    for lib in _SO_RX.findall(subject):
        out.append(lib)
    data = finding.data if isinstance(finding.data, dict) else {}
    named = _strings(data.get("libraries")) + _strings(data.get("library")) + _strings(data.get("files"))
    for value in named:
        out.extend(_SO_RX.findall(os.path.basename(value)))
    modules = _strings(data.get("modules")) + _strings(data.get("package"))
    top = _top_of(subject) if "/" in subject else None
    if top is not None:
        modules.append(top)
    out.extend(_norm(m) for m in modules if m)
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
    frames: Dict[str, Dict[str, Any]],
    known: Sequence[Dict[str, Any]],
    findings: Sequence[Finding],
    named: Optional[Dict[str, Dict[str, Any]]] = None,
) -> List[Dict[str, Any]]:
    """The findings the log is tied to: ``frames`` (package -> first place, from the
    scanner), ``known`` (the ranked groups: the libraries their captures and first line
    name), ``findings`` (the rule findings on the same facts; only errors and warnings
    count), ``named`` (package or extension module -> first error line naming a file of it:
    :func:`path_package`).  Each record: ``code``, ``title``, ``severity``, ``by`` (what in
    the log names it) and ``first`` (``{source, line}``)."""
    places: Dict[str, Dict[str, Any]] = dict(frames)
    what_of: Dict[str, str] = {}
    for name, where in (named or {}).items():
        if name not in places:
            places[name] = where
            what_of[name] = "an error naming a file of"
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
            what = "the library" if name.endswith(".so") else what_of.get(name, "a traceback frame in")
            out.append(
                {"code": f.code, "title": f.title, "severity": f.severity, "by": f"{what} {name}", "first": place}
            )
    return out
