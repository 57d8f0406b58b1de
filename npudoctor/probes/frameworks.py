"""What installed frameworks record about their own build, and the CUDA evidence of every
installed distribution.  Nothing is imported or executed.

Section ``frameworks``.  Reads, through the Host:

* ``vllm_ascend/_build_info.py`` next to the vllm-ascend dist-info: its literal assignments
  (``__device_type__``, ``__soc_version__``, ``__sleep_mode_enabled__``), parsed with
  :mod:`ast` (npudoctor/parsers/build_info.py);
* a pre-release / dev torch_npu's own METADATA body (its README): the table row naming the
  installed version and the CANN that row names -- the wheel's own statement of the CANN it was built for;
* each installed distribution's RECORD: the paths that match the CUDA-only data
  (npudoctor/knowledge/data/frameworks/cuda_only.toml) or are CUDA library files, and the
  ``DT_NEEDED`` entries naming CUDA libraries of the extension modules it installs
  (npudoctor/parsers/elf.py; at most :data:`MAX_SO_PER_DIST` per distribution and
  :data:`MAX_SO` in all; torch, torch_npu and the projects the data identifies by name with no
  DT_NEEDED pattern, such as the nvidia-* runtime wheels, are judged by their files, not read).
  What each RECORD yields and each ELF file's facts are kept in the ELF cache
  (npudoctor/probes/_elfcache.py) by the file's path, size and mtime.

Keys::

    vllm_ascend   None | {"path", "values": {name: literal}, "error"}
    torch_npu_description  None | {"metadata", "version", "row", "cann", "error"}
    cuda          [{"name", "version", "dist_info", "files": [RECORD paths],
                    "needed": {RECORD path: [CUDA DT_NEEDED names]}, "checked": n}]
                  only distributions with CUDA files or CUDA DT_NEEDED entries
    errors        [strings]
"""

from __future__ import annotations

import posixpath
import time
from typing import Any, Dict, List, Optional

from npudoctor.context import ProbeContext
from npudoctor.digest import sha256_hex
from npudoctor.host import Host
from npudoctor.knowledge.cuda_only import CUDA_LIBRARY, entry_for, files_source, interesting_file
from npudoctor.knowledge.versions import pep440_prerelease
from npudoctor.parsers.build_info import python_constants, torch_npu_description_row
from npudoctor.parsers.metadata import canonical_name
from npudoctor.probes._elfcache import ElfCache, default_path

SECTION = "frameworks"
NEEDS = ("packages",)

#: RECORD bytes read per distribution (torch's RECORD is ~1.5 MB).
RECORD_LIMIT = 8 << 20
#: A torch_npu METADATA body (its README) is ~40 KB; read at most this much.
DESCRIPTION_LIMIT = 1 << 20
#: Extension modules whose DT_NEEDED is read, per distribution and in all.
MAX_SO_PER_DIST = 24
MAX_SO = 400
#: Paths kept per distribution.
MAX_FILES = 40
#: Seconds this probe spends on ELF reads at most (the rest is recorded as an error).
TIME_BUDGET = 6.0
#: Distributions judged by their files only (their libraries are huge, or are the NPU stack).
_NO_ELF = frozenset({"torch", "torch-npu", "triton-ascend", "triton"})


def _first_records(packages: Dict[str, Any]) -> List[Dict[str, Any]]:
    installed = packages.get("installed") or {}
    out: List[Dict[str, Any]] = []
    for recs in installed.values() if isinstance(installed, dict) else []:
        if isinstance(recs, list) and recs and isinstance(recs[0], dict):
            out.append(recs[0])
    return out


def _vllm_ascend(host: Host, rec: Dict[str, Any]) -> Dict[str, Any]:
    path = posixpath.join(str(rec.get("location") or ""), "vllm_ascend", "_build_info.py")
    read = host.read_text(path, limit=64 << 10)
    if read.text is None:
        return {"path": path, "values": {}, "error": read.error or "not readable"}
    return {"path": path, "values": python_constants(read.text), "error": None}


def _description(host: Host, rec: Dict[str, Any]) -> Dict[str, Any]:
    meta = str(rec.get("metadata") or posixpath.join(str(rec.get("dist_info") or ""), "METADATA"))
    version = str(rec.get("version") or "")
    out: Dict[str, Any] = {"metadata": meta, "version": version, "row": None, "cann": None, "error": None}
    read = host.read_text(meta, limit=DESCRIPTION_LIMIT)
    if read.text is None:
        out["error"] = read.error or "not readable"
        return out
    found = torch_npu_description_row(read.text, version) if version else None
    if found is not None:
        out["row"], out["cann"] = found
    return out


def _record_paths(host: Host, rec: Dict[str, Any]) -> Optional[List[str]]:
    if rec.get("kind") != "dist-info":
        return None
    read = host.read_text(posixpath.join(str(rec.get("dist_info") or ""), "RECORD"), limit=RECORD_LIMIT)
    if read.text is None:
        return None
    return [line.split(",", 1)[0].strip() for line in read.text.splitlines() if line.strip()]


_KIND: List[str] = []


def _kind() -> str:
    """The ELF-cache kind of :func:`_record_facts`: its answer depends on the CUDA-only
    data's file patterns and the caps, so a changed npudoctor does not reuse an old one."""
    if not _KIND:
        spec = f"{files_source()}\0{CUDA_LIBRARY.pattern}\0{MAX_FILES}\0{MAX_SO_PER_DIST}"
        _KIND.append("record:" + sha256_hex(spec.encode("utf-8"))[:16])
    return _KIND[0]


def _record_facts(host: Host, rec: Dict[str, Any], cache: ElfCache) -> Optional[Dict[str, List[str]]]:
    """``{"files": [RECORD paths worth keeping], "so": [shared objects, at most
    MAX_SO_PER_DIST + 1]}`` of a dist-info's RECORD, or ``None`` (no RECORD / not
    readable); cached by the RECORD's path, size and mtime (torch's lists ~15,000 files)."""

    def compute() -> Optional[Dict[str, List[str]]]:
        paths = _record_paths(host, rec)
        if paths is None:
            return None
        so = [
            p
            for p in paths  # ".so" in p first: one substring test rules out nearly every path
            if ".so" in p and (p.endswith(".so") or ".so." in p.rsplit("/", 1)[-1]) and not p.startswith("..")
        ]
        return {"files": [p for p in paths if interesting_file(p)][:MAX_FILES], "so": so[: MAX_SO_PER_DIST + 1]}

    if rec.get("kind") != "dist-info":
        return None
    try:
        real = host.real(posixpath.join(str(rec.get("dist_info") or ""), "RECORD"))
    except OSError:
        return compute()
    found = cache.derived(_kind(), real, compute)
    ok = isinstance(found, dict) and all(isinstance(found.get(k), list) for k in ("files", "so"))
    return {"files": [str(p) for p in found["files"]], "so": [str(p) for p in found["so"]]} if ok else None


def _cuda_record(
    host: Host, rec: Dict[str, Any], budget: Dict[str, Any], errors: List[str], cache: ElfCache
) -> Optional[Dict[str, Any]]:
    facts = _record_facts(host, rec, cache)
    if not facts:
        return None
    name = canonical_name(str(rec.get("name") or ""))
    files = facts["files"]
    needed: Dict[str, List[str]] = {}
    checked = 0
    entry = entry_for(name)
    # a project the data identifies by name and whose DT_NEEDED proves nothing (nvidia-cublas-cu12:
    # ~0.5 GB of libraries that ARE the CUDA libraries) needs no ELF read; nor do torch and the NPU stack
    if name not in _NO_ELF and not (entry is not None and entry.name_enough and not entry.dt_needed):
        location = str(rec.get("location") or "")
        for rel in facts["so"]:
            if checked >= MAX_SO_PER_DIST:
                errors.append(f"{name}: DT_NEEDED read of its first {MAX_SO_PER_DIST} extension modules only")
                break
            if budget["so"] >= MAX_SO or time.monotonic() > budget["until"]:
                if not budget.get("told"):
                    errors.append("CUDA DT_NEEDED scan stopped early (file count or time budget)")
                    budget["told"] = True
                break
            checked += 1
            budget["so"] += 1
            info = cache.read(host.real(posixpath.join(location, rel)))
            libs = [n for n in info.needed if CUDA_LIBRARY.match(n)]
            if libs:
                needed[rel] = libs
    if not files and not needed:
        return None
    return {
        "name": rec.get("name"),
        "version": rec.get("version"),
        "dist_info": rec.get("dist_info"),
        "files": files,
        "needed": needed,
        "checked": checked,
    }


def probe(ctx: ProbeContext) -> Dict[str, Any]:
    """The ``frameworks`` record (see the module docstring)."""
    host = ctx.host
    packages = ctx.facts.get("packages") or {}
    errors: List[str] = []
    out: Dict[str, Any] = {"vllm_ascend": None, "torch_npu_description": None, "cuda": [], "errors": errors}
    budget: Dict[str, Any] = {"so": 0, "until": time.monotonic() + ctx.options.remaining(TIME_BUDGET)}
    # a site-packages so big that the packages probe only indexed it (100,000 distributions): the
    # RECORD of a distribution is read only when the CUDA-only data names it or its METADATA
    # was read (the distributions rules judge by name)
    indexed_only = packages.get("indexed_only") if isinstance(packages, dict) else None
    if isinstance(indexed_only, int) and indexed_only > 0:
        errors.append(
            f"{indexed_only} distributions only indexed (a very large site-packages): their RECORD files "
            "are read only for the distributions the CUDA-only data names"
        )
    # the DT_NEEDED reads go through the ELF cache of the libraries probe (path, size, mtime)
    cache = ElfCache(default_path())
    try:
        for rec in _first_records(packages if isinstance(packages, dict) else {}):
            name = canonical_name(str(rec.get("name") or ""))
            if indexed_only and not rec.get("metadata") and entry_for(name) is None:
                continue
            if name == "vllm-ascend":
                out["vllm_ascend"] = _vllm_ascend(host, rec)
            elif name == "torch-npu" and pep440_prerelease(str(rec.get("version") or "")):
                out["torch_npu_description"] = _description(host, rec)
            found = _cuda_record(host, rec, budget, errors, cache)
            if found is not None:
                out["cuda"].append(found)
    finally:
        cache.save()
    return out
