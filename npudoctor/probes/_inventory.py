"""The rest of the NPU stack's ELF files: the CANN toolkit's libraries and
programs, NNAL's ATB libraries, the driver's libraries and ``npu-smi``.

Found by walking the directories of the installs the other probes found (the selected
toolkit's ``lib64``, its plugin directories ``lib64/plugin/opskernel`` and
``lib64/plugin/nnengine`` and ``opp/.../op_tiling(/lib/linux/<arch>)`` (set_env.sh puts
them on ``LD_LIBRARY_PATH``), ``bin`` and ``compiler/ccec_compiler/bin``; NNAL's ``atb/.../lib`` of
the C++ ABI in use; the driver's ``lib64``, ``lib64/common``, ``lib64/driver``; the
``npu-smi`` on ``PATH`` and ``<driver>/tools/npu-smi``), never from a list of file names.
Every ELF file found is resolved as it would load in a process set up the way the stack
documents it (``LD_LIBRARY_PATH`` of the environment plus the entries the toolkit's and
NNAL's ``set_env.sh`` add: a library missing only because ``set_env.sh`` was not sourced is
the environment rules' finding, not one per file here), with its own RPATH/RUNPATH.

Records (``stack`` of the ``libraries`` section)::

    {"path", "where": "toolkit lib64" | "toolkit opp" | "toolkit bin" | "NNAL" | "driver" | "npu-smi",
     "unresolved": [DT_NEEDED names found on no loader path],
     "version_needs": {library: [highest needed version of each family]}  (system libraries),
     "error": why the file could not be read as a loadable ELF file, or None}

Only files with something to say (an unresolved name, a version need of a system library,
an error) are kept.  Not a probe: a helper of :mod:`npudoctor.probes.libraries`.
"""

from __future__ import annotations

import posixpath
from typing import Any, Callable, Dict, List, Optional, Tuple

from npudoctor.host import Host
from npudoctor.probes._extensions import SYSTEM_LIB_RE
from npudoctor.probes._ldso import VERSIONED_RE, Resolver, expand_origin, highest

#: Files examined at most per run.
MAX_FILES = 800


def _dict(value: Any) -> Dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _toolkit(facts: Dict[str, Any], env: Dict[str, Any]) -> Optional[str]:
    sel = _dict(_dict(facts.get("cann")).get("selected"))
    path = sel.get("path") or _dict(env.get("toolkit")).get("path")
    return str(path) if path else None


def nnal_lib(env: Dict[str, Any]) -> Optional[str]:
    """``<ATB home>/lib`` of the NNAL in use (``ATB_HOME_PATH``, else the one NNAL's
    set_env.sh would pick), or ``None``."""
    nnal = _dict(env.get("nnal"))
    home = nnal.get("current_atb_home") or nnal.get("expected_atb_home")
    return posixpath.join(str(home), "lib") if home else None


def _arch(facts: Dict[str, Any], env: Dict[str, Any]) -> str:
    """``aarch64`` | ``x86_64`` (``$(arch)`` of set_env.sh) of the diagnosed machine."""
    return str(_dict(facts.get("host")).get("arch") or env.get("arch") or "x86_64")


def _driver(env: Dict[str, Any]) -> str:
    expected = _dict(env.get("expected"))
    return str(expected.get("driver") or "/usr/local/Ascend/driver")


def places(host: Host, facts: Dict[str, Any], env: Dict[str, Any]) -> List[Tuple[str, str, bool]]:
    """``(directory or file, where, libraries_only)`` to walk, in order."""
    out: List[Tuple[str, str, bool]] = []
    tk = _toolkit(facts, env)
    if tk:
        out.append((posixpath.join(tk, "lib64"), "toolkit lib64", True))
        # set_env.sh puts these on LD_LIBRARY_PATH too (CANN 8.0 set_env.sh: lib64/plugin/opskernel,
        # lib64/plugin/nnengine, opp/built-in/op_impl/ai_core/tbe/op_tiling/lib/linux/$(arch);
        # CANN 8.3 / 9.0 images: .../op_tiling itself -- tests/fixtures/set_env_toolkit_8.0.0.sh.txt)
        for sub in ("opskernel", "nnengine"):
            out.append((posixpath.join(tk, "lib64", "plugin", sub), "toolkit lib64", True))
        tiling = posixpath.join(tk, "opp", "built-in", "op_impl", "ai_core", "tbe", "op_tiling")
        out.append((posixpath.join(tiling, "lib", "linux", _arch(facts, env)), "toolkit opp", True))
        out.append((tiling, "toolkit opp", True))
        out.append((posixpath.join(tk, "bin"), "toolkit bin", False))
        out.append((posixpath.join(tk, "compiler", "ccec_compiler", "bin"), "toolkit bin", False))
    nnal = nnal_lib(env)
    if nnal:
        out.append((nnal, "NNAL", True))
    driver = _driver(env)
    for sub in ("lib64", "lib64/common", "lib64/driver"):
        out.append((posixpath.join(driver, sub), "driver", True))
    smi = host.which("npu-smi")
    for cand in ([smi] if smi else []) + [posixpath.join(driver, "tools", "npu-smi")]:
        out.append((cand, "npu-smi", False))
    return out


def files(host: Host, facts: Dict[str, Any], env: Dict[str, Any], skip: Callable[[str], bool]) -> List[Tuple[str, str]]:
    """``(path, where)`` of every candidate file of :func:`places` (regular files only;
    libraries: names holding ``.so``), without the paths ``skip`` says were read already."""
    out: List[Tuple[str, str]] = []
    seen = set()
    for place, where, libs_only in places(host, facts, env):
        entries = [place] if where == "npu-smi" else [posixpath.join(place, n) for n in sorted(host.listdir(place))]
        for path in entries:
            if libs_only and ".so" not in posixpath.basename(path):
                continue
            if path in seen or skip(path) or not host.is_file(path):
                continue
            seen.add(path)
            out.append((path, where))
    return out[:MAX_FILES]


def audit(
    host: Host,
    entries: List[Tuple[str, str]],
    resolver: Resolver,
    loaded: Dict[str, str],
    read: Callable[[str], Any],
    expired: Callable[[], bool],
    errors: List[str],
) -> List[Dict[str, Any]]:
    """The records (see the module docstring) of ``entries``; ``resolver`` searches the
    set-up loader path, ``loaded`` maps the sonames of this walk to their files (a
    library of the toolkit found by another of its libraries), ``read(path)`` gives an
    :class:`~npudoctor.parsers.elf.ElfInfo` (cached)."""
    has_libc = bool(resolver.search("libc.so.6", [], [])[0])
    out: List[Dict[str, Any]] = []
    for path, where in entries:
        if expired():
            errors.append(f"stack library audit stopped after {len(out)} files (time budget)")
            break
        info = read(path)
        rec: Dict[str, Any] = {"path": path, "where": where, "unresolved": [], "version_needs": {}, "error": None}
        if info.error:
            if info.error == "not an ELF file":
                continue  # scripts, linker scripts, data: not loaded by ld.so
            rec["error"] = info.error
            out.append(rec)
            continue
        foreign = wrong_architecture(info, resolver)
        if foreign:
            rec["error"] = foreign
            out.append(rec)
            continue
        origin = posixpath.dirname(host.resolve(path))
        rpath = expand_origin(info.rpath, origin) if not info.runpath else []
        runpath = expand_origin(info.runpath, origin)
        for name in info.needed:
            if name in loaded or resolver.search(name, rpath, runpath)[0]:
                continue
            if has_libc or not SYSTEM_LIB_RE.match(name):
                rec["unresolved"].append(name)
        for lib, versions in info.version_needs.items():
            if VERSIONED_RE.match(lib):
                rec["version_needs"][lib] = highest(list(versions))
        if rec["unresolved"] or rec["version_needs"]:
            out.append(rec)
    return out


def wrong_architecture(info: Any, resolver: Resolver) -> Optional[str]:
    """``"wrong architecture: x86_64 64-bit, the loader here is aarch64 64-bit"`` when the
    ELF file ``info`` (read without error) is not of the loader's machine and class (ld.so
    refuses it: ``wrong ELF class`` / ``cannot open shared object file``), else ``None``."""
    if info.error or (info.machine == resolver.arch and info.bits == resolver.bits):
        return None
    return f"wrong architecture: {info.machine} {info.bits}-bit, the loader here is {resolver.arch} {resolver.bits}-bit"


def split_foreign(
    records: List[Dict[str, Any]], key: str, resolver: Resolver, read: Callable[[str], Any]
) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """``(kept, foreign)``: the extension records (``key``: the field holding the file's
    path) whose file is of the loader's architecture, and a stack record (``"where":
    "extension"``, ``error`` the wrong architecture) for each of the others, once per file.
    An x86_64 extension module in an aarch64 environment is neither an extension built for
    another torch_npu nor a need of GLIBC_2.2.5: ld.so refuses the file, and the stack's
    unreadable-files note names it."""
    kept: List[Dict[str, Any]] = []
    foreign: List[Dict[str, Any]] = []
    seen = set()
    for rec in records:
        path = str(rec.get(key) or "")
        why = wrong_architecture(read(path), resolver) if path else None
        if why is None:
            kept.append(rec)
        elif path not in seen:
            seen.add(path)
            foreign.append({"path": path, "where": "extension", "unresolved": [], "version_needs": {}, "error": why})
    return kept, foreign


def install_roots(host: Host, facts: Dict[str, Any], env: Dict[str, Any]) -> Tuple[str, ...]:
    """The real paths of the selected toolkit, the NNAL in use (its ATB home) and the driver."""
    out = []
    for path in (_toolkit(facts, env), posixpath.dirname(nnal_lib(env) or ""), _driver(env)):
        if path:
            out.append(host.resolve(path))
    return tuple(out)


#: Where the owner's copies of the guarded libraries are walked (CANN, NNAL, the driver).
GUARDED_WHERE = ("toolkit lib64", "toolkit opp", "NNAL", "driver")


def shadows(
    host: Host,
    entries: List[Tuple[str, str]],
    resolver: Resolver,
    read: Callable[[str], Any],
    skip: Callable[[str], bool],
    roots: Tuple[str, ...] = (),
) -> List[Dict[str, Any]]:
    """Libraries of CANN, NNAL and the driver (the ``entries`` walked in
    :data:`GUARDED_WHERE`) whose name the loader finds first in another place: records
    ``{"name", "taken", "via", "copies": [the owner's files of that name], "needed_by":
    [stack files that name it in DT_NEEDED and get the other copy]}``.

    The search is ld.so's on ``resolver``'s loader path (LD_LIBRARY_PATH, ld.so.cache,
    default directories: what ``dlopen`` by name gets); each stack file that names the
    library in DT_NEEDED is searched with its own RPATH/RUNPATH, and ``needed_by`` keeps
    those that get the other copy.  When such files exist and every one of them gets the
    owner's copy (a RUNPATH ahead of a stray copy in ld.so.cache), nothing is reported.  Only names that are on disk
    somewhere else on that path (a directory listing, the ld.so.cache) are searched, so the
    cost is one listing per directory (a stray copy only an object's DT_RPATH reaches is
    not looked for).  ``skip(name)``: names judged elsewhere (torch_npu's
    own load chain).  ``roots``: the installs themselves (:func:`install_roots`): a copy
    inside one of them is the install's own layout (``tools/aml/lib64`` of the same
    toolkit), not a stray one."""
    copies: Dict[str, List[str]] = {}
    own_dirs = set()
    for path, where in entries:
        if where in GUARDED_WHERE:
            copies.setdefault(posixpath.basename(path), []).append(path)
            own_dirs.add(posixpath.dirname(host.resolve(path)))
    if not copies:
        return []
    elsewhere = set()
    for d in list(resolver.ld_library_path) + list(resolver.conf_dirs) + list(resolver.default_dirs):
        if host.resolve(d) not in own_dirs:
            elsewhere.update(host.listdir(d))
    cache = resolver.cache
    if cache is not None and not cache.error:
        elsewhere.update(e.soname for e in cache.entries)
    needers: Dict[str, List[Tuple[str, List[str], List[str]]]] = {}
    for path, _where in entries:
        info = read(path)
        if info.error:
            continue
        origin = posixpath.dirname(host.resolve(path))
        rpath = expand_origin(info.rpath, origin) if not info.runpath else []
        runpath = expand_origin(info.runpath, origin)
        for name in info.needed:
            if name in copies:
                needers.setdefault(name, []).append((path, rpath, runpath))
    own_real = {host.resolve(p) for paths in copies.values() for p in paths}
    out: List[Dict[str, Any]] = []
    for name in sorted(copies):
        if name not in elsewhere or skip(name):
            continue
        taken, via = resolver.search(name, [], [])
        real = host.resolve(taken) if taken else ""
        if not taken or real in own_real or posixpath.dirname(real) in own_dirs:
            continue
        if any(real.startswith(r.rstrip("/") + "/") for r in roots):
            continue
        by = [p for p, rp, run in needers.get(name, []) if resolver.search(name, rp, run)[0] == taken]
        if needers.get(name) and not by:
            continue  # every file of the stack that needs it gets the owner's copy
        out.append({"name": name, "taken": taken, "via": via, "copies": copies[name], "needed_by": by})
    return out
