"""CUDA-only Python distributions in an Ascend NPU environment: the data of
``npudoctor/knowledge/data/frameworks/cuda_only.toml`` and the one judgement of whether an
installed distribution is a CUDA-only build, from its OWN metadata and files.

Evidence, strongest first (:func:`judge`):

* ``DT_NEEDED`` of an extension module the distribution installs names a CUDA library
  (``libcudart.so.12``, ``libcublas.so.12``, ``libtorch_cuda.so``, hashed copies such as
  ``libcudart-45da57e3.so.11.0``): the import fails without the NVIDIA stack;
* a PEP 440 local version ``+cuNNN`` (the PyTorch index's CUDA builds: ``2.6.0+cu124``);
* files the entry names (``torch/lib/libtorch_cuda.so``, ``triton/backends/nvidia/...``);
* ``Requires-Dist`` on ``nvidia-*`` / ``cuda-*`` wheels (markers evaluated for the judged
  interpreter);
* the name, for entries whose name alone identifies a CUDA-only project (``name_enough``).

Each entry of the data says why it breaks on NPU, the NPU replacement and the uninstall
command, with its sources (checked 2026-12-01, see the file's header).
"""

from __future__ import annotations

import os
import re
from typing import Any, Dict, Iterable, List, Mapping, Optional, Pattern, Sequence, Tuple

from npudoctor import lazyre, tomlread
from npudoctor.lazyre import LazyPattern
from npudoctor.record import Record

#: A CUDA / NVIDIA library or the CUDA half of torch, as a ``DT_NEEDED`` entry or a file name.
#: CUDA wheels bundle renamed copies (``libcudart-45da57e3.so.11.0``, torchopt#46), hence the
#: optional ``-<hash>``.  Source: the readelf lists of cuda_only.toml (xformers 0.0.35,
#: auto-gptq 0.7.1, bitsandbytes 0.50.2) and TransformerEngine#3381 (libcuda.so.1).
CUDA_LIBRARY_NAME = (
    r"lib(cuda|cudart|cublas|cublasLt|cudnn\w*|cufft\w*|curand|cusolver\w*|cusparse\w*|nccl|nvrtc\w*|"
    r"nvToolsExt|nvJitLink|c10_cuda|torch_cuda\w*)(-[0-9a-f]{8})?\.so(\.\d+)*"
)
CUDA_LIBRARY: LazyPattern[str] = lazyre.pattern(f"^{CUDA_LIBRARY_NAME}$")

#: A local version that marks a CUDA build (``2.6.0+cu124``, ``0.21.0+cu121``); the PyTorch
#: index's own spelling (download.pytorch.org/whl/cu124).
CUDA_LOCAL = lazyre.pattern(r"^cu\d+")

#: Requirements on NVIDIA's CUDA wheels (PyPI nvidia-* and cuda-* projects).
CUDA_REQUIREMENT = lazyre.pattern(r"^(nvidia-[a-z0-9-]+|cuda-(toolkit|bindings|python|core|pathfinder|tile))$")


class Entry(Record):
    """One ``[[entry]]`` of cuda_only.toml (see its header for the fields).  Its patterns
    are :class:`~npudoctor.lazyre.LazyPattern`: compiled when first used, so a run compiles
    only those it matches with (names, files and requirements are matched through one
    alternation of their texts: :func:`entry_for`, :func:`interesting_file`,
    :func:`requirement_of_interest`)."""

    id: str
    names: Tuple[LazyPattern[str], ...]
    modules: Tuple[str, ...]
    severity: str
    name_enough: bool
    beside: Tuple[str, ...]
    local_version: Optional[LazyPattern[str]]
    not_if_local_version: Optional[LazyPattern[str]]
    requires_dist: Tuple[LazyPattern[str], ...]
    dt_needed: Tuple[LazyPattern[str], ...]
    files: Tuple[LazyPattern[str], ...]
    not_if_files: Tuple[LazyPattern[str], ...]
    why: str
    npu_replacement: str
    uninstall: str
    sources: Tuple[str, ...]

    def named(self, canonical: str) -> bool:
        """Whether ``canonical`` (a PEP 503 name) is one of this entry's distributions."""
        return any(p.fullmatch(canonical) for p in self.names)


def _patterns(values: Any) -> Tuple[LazyPattern[str], ...]:
    return tuple(lazyre.pattern(str(v)) for v in (values or ()) if str(v))


def _one(value: Any) -> Optional[LazyPattern[str]]:
    return lazyre.pattern(str(value)) if value else None


def data_path() -> str:
    """Path of the bundled cuda_only.toml."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "frameworks", "cuda_only.toml")


_CACHE: Dict[str, Tuple[Entry, ...]] = {}


def entries() -> Tuple[Entry, ...]:
    """The entries of the bundled data, parsed once per process.  Raises ``ValueError`` on
    a malformed file (a packaging error; ``tests/test_frameworks_data.py`` checks it)."""
    if "all" in _CACHE:
        return _CACHE["all"]
    doc = tomlread.load_bundled(data_path())
    out: List[Entry] = []
    for raw in doc.get("entry", []):
        rec = raw.get("recognise") or {}
        out.append(
            Entry(
                id=str(raw["id"]),
                names=_patterns(raw.get("names")),
                modules=tuple(str(x) for x in raw.get("modules", ())),
                severity=str(raw.get("severity", "warning")),
                name_enough=bool(raw.get("name_enough", False)),
                beside=tuple(str(x) for x in raw.get("beside", ())),
                local_version=_one(rec.get("local_version")),
                not_if_local_version=_one(rec.get("not_if_local_version")),
                requires_dist=_patterns(rec.get("requires_dist")),
                dt_needed=_patterns(rec.get("dt_needed")),
                files=_patterns(rec.get("files")),
                not_if_files=_patterns(rec.get("not_if_files")),
                why=str(raw.get("why", "")),
                npu_replacement=str(raw.get("npu_replacement", "")),
                uninstall=str(raw.get("uninstall", "")),
                sources=tuple(str(s) for s in raw.get("sources", ())),
            )
        )
    _CACHE["all"] = tuple(out)
    return _CACHE["all"]


_NAMED: List[Pattern[str]] = []


def entry_for(canonical: str) -> Optional[Entry]:
    """The entry naming the distribution ``canonical`` (PEP 503 name), or ``None``: the
    first entry in data order with a name pattern that matches all of it.  One combined
    pattern (a named group per entry) is tried instead of every pattern in turn: a
    site-packages of 100,000 distributions is asked about each."""
    found = entries()
    if not _NAMED:
        groups = "|".join(
            f"(?P<e{i}>" + "|".join(f"(?:{p.pattern})" for p in e.names) + ")" for i, e in enumerate(found) if e.names
        )
        _NAMED.append(re.compile(groups or "(?!)"))
    m = _NAMED[0].fullmatch(canonical)
    if m is None:
        return None
    for i, entry in enumerate(found):
        if entry.names and m.group(f"e{i}") is not None:
            return entry
    return None


def file_patterns() -> Tuple[LazyPattern[str], ...]:
    """Every ``files`` / ``not_if_files`` pattern of the data: the RECORD paths worth keeping
    as facts (the probe keeps those and CUDA library file names, nothing else)."""
    out: List[LazyPattern[str]] = []
    for entry in entries():
        out.extend(entry.files)
        out.extend(entry.not_if_files)
    return tuple(out)


def files_source() -> str:
    """The alternation of every :func:`file_patterns` pattern, as regex text: it fully matches
    a path exactly when one of them does (fullmatch backtracks into every alternative).  A
    cache key as it is; compiled (in :func:`interesting_file`) only when a RECORD is read."""
    return "|".join(f"(?:{p.pattern})" for p in file_patterns()) or "(?!)"


_INTERESTING: List[Pattern[str]] = []


def interesting_file(path: str) -> bool:
    """Whether a RECORD path (one line's, so without a line break) is worth recording: it
    matches a data pattern or its file name is a CUDA library
    (``nvidia/cuda_runtime/lib/libcudart.so.12``).  One match of one pattern: the data
    patterns' alternation (:func:`files_source`) or any directories then a
    :data:`CUDA_LIBRARY_NAME` (which holds no ``/``: the last component), built once."""
    if not _INTERESTING:
        _INTERESTING.append(re.compile(f"{files_source()}|(?:.*/)?(?:{CUDA_LIBRARY_NAME})"))
    return _INTERESTING[0].fullmatch(path) is not None


_REQUIRED: List[Pattern[str]] = []


def requirement_of_interest(canonical: str) -> bool:
    """Whether a requirement on the project ``canonical`` (PEP 503 name) can count in
    :func:`judge`: it matches :data:`CUDA_REQUIREMENT` or fully matches an entry's
    ``requires_dist`` pattern (their alternation, built once).  Callers parse and evaluate
    only these (parsing a requirement with packaging is the costly step)."""
    if not _REQUIRED:
        alternatives = "|".join(f"(?:{p.pattern})" for e in entries() for p in e.requires_dist)
        _REQUIRED.append(re.compile(alternatives or "(?!)"))
    return bool(CUDA_REQUIREMENT.match(canonical)) or _REQUIRED[0].fullmatch(canonical) is not None


class Judgement(Record):
    """Why an installed distribution counts as CUDA-only.

    ``entry``: the data entry naming it, or ``None`` (recognised by generic evidence only);
    ``severity``: ``"error"`` (its import fails without CUDA) or ``"warning"`` (dead weight
    or pulled in by a CUDA build); ``evidence``: what was seen, in words, each with where."""

    name: str
    version: str
    entry: Optional[Entry]
    severity: str
    evidence: Tuple[str, ...]


def local_part(version: str) -> str:
    """The PEP 440 local part of ``version`` (``"cu124"`` of ``"2.6.0+cu124"``), or ``""``."""
    return version.split("+", 1)[1].lower() if "+" in version else ""


def judge(
    canonical: str,
    version: str,
    requires: Sequence[str],
    files: Sequence[str],
    needed: Mapping[str, Sequence[str]],
    installed: Iterable[str] = (),
) -> Optional[Judgement]:
    """Judge one installed distribution.

    ``canonical``: its PEP 503 name; ``version``: its Version header; ``requires``: the
    canonical names of its Requires-Dist that apply to the judged interpreter (markers
    already evaluated); ``files``: its RECORD paths the probe kept; ``needed``: extension
    module (RECORD path) → its CUDA ``DT_NEEDED`` entries; ``installed``: canonical names of
    every installed distribution (for ``beside``).  Returns ``None`` when nothing shows a
    CUDA-only build, or when the distribution's own evidence says it is the NPU / CPU build
    (``apex 0.1+ascend``, bitsandbytes with its CPU library).  Never raises."""
    entry = entry_for(canonical)
    local = local_part(version)
    if entry is None and not needed and not CUDA_LOCAL.match(local) and not any(map(CUDA_REQUIREMENT.match, requires)):
        return None  # no entry names it and nothing of its own shows a CUDA build (most distributions)
    if entry is not None:
        if entry.not_if_local_version is not None and entry.not_if_local_version.fullmatch(local):
            return None
        if any(p.fullmatch(f) for p in entry.not_if_files for f in files):
            return None
        if entry.beside and not set(entry.beside) & set(installed):
            return None
    evidence: List[str] = []
    strong = False
    for so, libs in sorted(needed.items()):
        if libs:
            evidence.append(f"{so} links {', '.join(libs)} (DT_NEEDED)")
            strong = True
    if CUDA_LOCAL.match(local):
        evidence.append(f"its version {version} carries the local tag +{local} (a CUDA build)")
        strong = True
    marked = [f for f in files if entry is not None and any(p.fullmatch(f) for p in entry.files)]
    if marked:
        more = f" (+{len(marked) - 3} more)" if len(marked) > 3 else ""
        evidence.append("it installs " + ", ".join(marked[:3]) + more)
    cuda_reqs = sorted({r for r in requires if CUDA_REQUIREMENT.match(r)})
    if entry is not None:
        cuda_reqs = sorted(set(cuda_reqs) | {r for r in requires if any(p.fullmatch(r) for p in entry.requires_dist)})
    if cuda_reqs:
        evidence.append("Requires-Dist: " + ", ".join(cuda_reqs))
    if entry is None:
        if not evidence:
            return None
        return Judgement(canonical, version, None, "error" if strong else "warning", tuple(evidence))
    if not evidence and not entry.name_enough:
        return None
    if not evidence:
        evidence.append(f"{canonical} is {_what(entry)}")
    return Judgement(canonical, version, entry, entry.severity, tuple(evidence))


def _what(entry: Entry) -> str:
    """A few words naming what the entry is, from its id."""
    return {
        "transformer-engine": "NVIDIA Transformer Engine",
        "nvidia-runtime-wheels": "an NVIDIA CUDA runtime wheel",
        "cuda-python-wheels": "one of NVIDIA's cuda-* wheels",
        "flash-attn": "FlashAttention (CUDA/ROCm only)",
        "xformers": "xformers (CUDA extension modules)",
        "cupy-cuda": "a CuPy build for CUDA",
        "triton-cuda-beside-triton-ascend": "upstream (CUDA) triton, installed beside triton-ascend",
        "auto-gptq": "auto-gptq (CUDA kernels)",
    }.get(entry.id, entry.id)
