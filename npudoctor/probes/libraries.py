"""Shared libraries: will torch_npu's binaries load, and do their symbols match?

Section ``libraries``.  Starting from torch_npu's extension
(``torch_npu/_C*.so``) and ``torch_npu/lib/libtorch_npu.so`` (found in the ``location``
of the ``torch-npu`` record of ``facts["packages"]``), every ``DT_NEEDED`` entry is
resolved the way glibc's ``ld.so`` does (``elf/dl-load.c``: ``_dl_map_object``):

1. a library with that SONAME already loaded (torch's own ``libtorch*.so``/``libc10.so``
   count as loaded when torch is installed: ``import torch`` loads them first);
2. ``DT_RPATH`` of the object and of the objects that loaded it (only when the object has
   no ``DT_RUNPATH``), ``$ORIGIN`` = the object's directory;
3. ``LD_LIBRARY_PATH`` of the diagnosed environment;
4. ``DT_RUNPATH`` of the object;
5. ``/etc/ld.so.cache`` (or, when there is none, the directories of
   ``/etc/ld.so.conf`` and its includes);
6. the default directories (``/lib/<triplet>``, ``/usr/lib/<triplet>``, ``/lib64``,
   ``/usr/lib64``, ``/lib``, ``/usr/lib``).

A candidate counts only if it is an ELF file of the right class and machine.  All paths
are paths of the diagnosed machine (inside ``--root``).  Libraries found are followed
(bounded: :data:`MAX_OBJECTS` files), so a CANN library whose own dependency (the
driver's ``libascend_hal.so``) is missing is reported too.

Keys::

    torch_npu        {"version", "location", "package_dir"} | None
    torch            {"version", "lib_dir"} | None
    torch_cxx11_abi  bool | None: the mangling of c10's own std::string exports in
                     torch/lib/libc10.so (npudoctor.parsers.cxxabi); abi_source: that file
    roots            [paths]  the binaries checked first
    objects          [{"path", "soname", "needed", "rpath", "runpath", "version_needs", "error"}]
                     version_needs: {library: [symbol versions needed from it]}
    resolution       [{"name", "needed_by", "status", "path", "via", "found_at", "optional"}]
                     status: "found" | "torch" (counted as loaded) | "missing" |
                     "system-unknown" (a base-system library while the root holds no libc);
                     found_at: where the library is on disk (selected toolkit lib64,
                     other toolkits, driver lib64, NNAL), optional: only needed by a
                     lazily-loaded plugin (libop_plugin_atb.so)
    missing          [names] required libraries (not optional) that will not load
    loader           {"ld_library_path", "cache": {"path","format","entries","error"} | None,
                      "conf_dirs", "default_dirs", "hwcaps": glibc-hwcaps subdirectories
                      searched first in each directory (x86-64-v4/v3/v2 this CPU supports)}
    glibc            {"provided": {"GLIBC": [...], "GLIBCXX": [...], "CXXABI": [...]},
                      "providers": {"libc.so.6": path, "libstdc++.so.6": path},
                      "defined": {"libc.so.6": [every version the provider defines], ...},
                      "root_has_libc": bool}
                     (which needed versions are not defined is judged by
                     rules/_symbol_versions.py; older snapshots' "too_new" is ignored)
    symbols          {"torch": check, "atb": check, "cann": check, "extensions": [check]}
                     ("torch" adds "abi"/"abi_symbol": libtorch_npu.so's C++ ABI from the
                     torch names it imports, npudoctor.parsers.cxxabi.module_cxx11_abi)
                     check = {"object", "against": [paths], "checked", "missing_count",
                              "missing": [first 25 names], "error"}; extension checks
                     add "package", "links" and "unresolved" (probes/_extensions.py);
                     "torch_extensions": [check] of every other module linking torch's
                     libraries (its torch names against torch's lib/*.so) with "package",
                     "links", "abi" (its C++11 ABI from those names, or None) and "abi_symbol"
    stack            [{"path", "where", "unresolved", "version_needs", "error"}]: the rest of
                     the NPU stack's ELF files (toolkit lib64/bin, NNAL, driver, npu-smi;
                     probes/_inventory.py) as they load with the documented environment,
                     and ("where": "extension") every extension module of the interpreter
                     with version needs of base-system libraries
    stack_ld_library_path  [dirs]: LD_LIBRARY_PATH the stack was resolved with (the
                     environment's, then the entries set_env.sh adds that it lacks)
    stack_shadowed   [{"name", "taken", "via", "copies", "needed_by", "taken_by"}]: libraries of
                     CANN / NNAL / the driver the loader finds first elsewhere (set-up path;
                     probes/_inventory.py shadows), taken_by: "<dist> <version>" whose RECORD
                     lists the copy taken, or None
    stack_found_at   {library: [{"path", "where", "usable"}]}: where the stack's unresolved
                     libraries are on disk
    elf_cache        {"hits", "misses"}: parsed file facts (ELF facts, symbol checks, RECORD
                     lists, package-directory walks) reused from the on-disk cache
    atb_plugin       path of torch_npu/lib/libop_plugin_atb.so or None
    located          {"names": {library: [paths]}, "complete": bool}: where the libraries
                     torch_npu (found in none of the stack's directories), extensions and
                     autoloaded backends miss are on disk after all
                     (probes/_locate.py; complete False: the bounded walk stopped early)
    autoload         the backends import torch imports itself (entry points torch.backends)
                     and their unresolved DT_NEEDED entries (probes/_autoload.py), or None
    duration         seconds spent
    errors           [strings]
"""

from __future__ import annotations

import posixpath
import re
import time
from typing import Any, Dict, List, Optional, Set, Tuple

from npudoctor.context import ProbeContext
from npudoctor.host import Host
from npudoctor.knowledge.versions import symbol_versions
from npudoctor.parsers.cxxabi import module_cxx11_abi, torch_cxx11_abi
from npudoctor.probes import _inventory, mapping
from npudoctor.probes._autoload import autoload_record
from npudoctor.probes._elfcache import ElfCache, default_path
from npudoctor.probes._extensions import ATB_SYM_RE, SYSTEM_LIB_RE, npu_package_files, record_owner, scan
from npudoctor.probes._ldso import Resolver, expand_origin
from npudoctor.probes._locate import located_record

SECTION = "libraries"
NEEDS = ("host", "python", "packages", "cann", "environment")

#: Most ELF files parsed per run (the roots, CANN libraries they pull, extensions).
MAX_OBJECTS = 250
#: Seconds after which following dependencies and scanning extensions stops.
TIME_BUDGET = 8.0

TORCH_LIB_RE = re.compile(
    r"^(?!libtorch_npu)(libtorch[a-z0-9_]*|libc10[a-z0-9_]*|libshm|libcaffe2[a-z0-9_]*)\.so(\.[0-9]+)*$"
)
_TEST_LIB_RE = re.compile(r"(_test|backend_with_compiler|aoti_custom_ops)\.so$")

#: Mangled-name prefixes of the namespaces each library family exports.
TORCH_SYM_RE = re.compile(r"^_Z(?:T[VIST])?N?K?(?:2at|3c10|5torch|4c10d|6caffe2)(?:[0-9]|[A-Z]|$)")
CANN_SYM_RE = re.compile(
    r"^(?:acl[a-zA-Z]|Hccl|hccl[A-Z]|Msprof|_Z(?:T[VIST])?N?K?(?:2ge|4gert|2fe|8optiling)(?:[0-9]|[A-Z]))"
)


def _now() -> float:
    return time.monotonic()


def _expired(start: float) -> Any:
    """Whether the probe's :data:`TIME_BUDGET` from ``start`` has run out (a callable)."""
    return lambda: _now() > start + TIME_BUDGET


def _torch_npu_dir(host: Host, facts: Dict[str, Any]) -> Tuple[Optional[Dict[str, Any]], Optional[Dict[str, Any]]]:
    installed = (facts.get("packages") or {}).get("installed") or {}
    tnpu = None
    torch = None
    for key, recs in installed.items() if isinstance(installed, dict) else []:
        canon = str(key).lower().replace("_", "-")
        for rec in recs or []:
            if not isinstance(rec, dict) or not rec.get("location"):
                continue
            if canon == "torch-npu" and tnpu is None:
                pkg = posixpath.join(str(rec["location"]), "torch_npu")
                if host.is_dir(pkg):
                    tnpu = {"version": rec.get("version"), "location": rec["location"], "package_dir": pkg}
            if canon == "torch" and torch is None:
                lib = posixpath.join(str(rec["location"]), "torch", "lib")
                torch = {"version": rec.get("version"), "lib_dir": lib if host.is_dir(lib) else None}
    return tnpu, torch


def _search_dirs(facts: Dict[str, Any], env: Dict[str, Any]) -> List[Tuple[str, str]]:
    """``(dir, label)`` places where a missing library may be on disk."""
    out: List[Tuple[str, str]] = []
    cann = mapping(facts.get("cann"))
    tk_path = mapping(cann.get("selected")).get("path") or mapping(env.get("toolkit")).get("path")
    if tk_path:
        out += [
            (posixpath.join(tk_path, sub), "selected toolkit")
            for sub in ("lib64", "lib64/plugin/opskernel", "lib64/plugin/nnengine")
        ]
    for rec in cann.get("toolkits") or []:
        if isinstance(rec, dict) and rec.get("path") and rec.get("path") != tk_path:
            label = f"CANN {rec.get('version') or '?'}"
            out.append((posixpath.join(rec["path"], "lib64"), label))
    driver = mapping(env.get("expected")).get("driver") or "/usr/local/Ascend/driver"
    out += [(posixpath.join(driver, sub), "driver") for sub in ("lib64", "lib64/common", "lib64/driver")]
    for rec in ([cann.get("nnal")] if cann.get("nnal") else []) + list(cann.get("nnal_all") or []):
        if isinstance(rec, dict) and rec.get("path"):
            for abi in ("cxx_abi_0", "cxx_abi_1"):
                out.append((posixpath.join(rec["path"], "latest", "atb", abi, "lib"), f"NNAL ({abi})"))
    if not tk_path:
        out += [
            ("/usr/local/Ascend/ascend-toolkit/latest/lib64", "toolkit"),
            ("/usr/local/Ascend/cann/lib64", "toolkit"),
            ("/usr/local/Ascend/nnal/atb/latest/atb/cxx_abi_1/lib", "NNAL (cxx_abi_1)"),
            ("/usr/local/Ascend/nnal/atb/latest/atb/cxx_abi_0/lib", "NNAL (cxx_abi_0)"),
        ]
    seen: Set[str] = set()
    uniq = []
    for d, label in out:
        if d not in seen:
            seen.add(d)
            uniq.append((d, label))
    return uniq


def probe(ctx: ProbeContext) -> Dict[str, Any]:
    start = _now()
    cache = ElfCache(default_path())
    try:
        return _probe(ctx, start, cache)
    finally:
        cache.save()


def _probe(ctx: ProbeContext, start: float, cache: ElfCache) -> Dict[str, Any]:
    host = ctx.host
    facts = ctx.facts
    env_facts = mapping(facts.get("environment"))
    errors: List[str] = []
    tnpu, torch = _torch_npu_dir(host, facts)
    out: Dict[str, Any] = {"torch_npu": tnpu, "torch": torch, "errors": errors}
    out["torch_cxx11_abi"], out["abi_source"] = _torch_abi(host, torch)
    if tnpu is None:
        _without_torch_npu(host, facts, env_facts, torch, cache, out, start, errors)
        out["duration"] = round(_now() - start, 3)
        return out

    pkg = tnpu["package_dir"]
    roots, libtorch_npu, atb_plugin = _roots(host, pkg)
    out["atb_plugin"] = atb_plugin if host.is_file(atb_plugin) else None
    out["roots"] = list(roots)
    if not roots:
        errors.append(f"no torch_npu/_C*.so nor lib/libtorch_npu.so under {pkg}")
        out["duration"] = round(_now() - start, 3)
        return out

    first = cache.read(_real(host, roots[0]))
    resolver = _resolver(host, facts, env_facts, first)
    out["loader"] = {
        "ld_library_path": resolver.ld_library_path,
        "cache": resolver.cache_info,
        "conf_dirs": resolver.conf_dirs,
        "default_dirs": resolver.default_dirs,
        "hwcaps": resolver.hwcaps,
    }
    if not first.error and (first.machine != resolver.arch or first.bits != resolver.bits):
        # pip installs wheels of the interpreter's platform: torch_npu's WHEEL tag rule says
        # which wheel this is; its load chain cannot be judged against this machine's loader
        errors.append(
            f"{roots[0]}: {_inventory.wrong_architecture(first, resolver)}: torch_npu's libraries not followed"
        )
        _stack(host, facts, env_facts, resolver, {}, set(), cache, out, start + TIME_BUDGET, errors)
        out["duration"] = round(_now() - start, 3)
        return out
    root_has_libc = bool(resolver.search("libc.so.6", [], [])[0])

    # torch's libraries count as loaded (import torch runs first).
    loaded = _torch_libs(host, torch)
    torch_libs = list(loaded.values())
    out["autoload"] = autoload_record(
        host, facts, torch, resolver, loaded, cache.read, lambda p: _real(host, p), _expired(start)
    )
    deadline = start + TIME_BUDGET
    walk = _LoadWalk(host, resolver, cache, loaded, torch_libs, root_has_libc, deadline, errors)
    walk.follow(roots, atb_plugin if out["atb_plugin"] else None)
    objects, resolution = walk.objects, walk.resolution
    _note_found_at(host, resolver, resolution, _search_dirs(facts, env_facts))
    keep = ("soname", "needed", "rpath", "runpath", "version_needs", "error")
    out["objects"] = [
        dict({k: v for k, v in info.to_dict().items() if k in keep}, path=p) for p, info in objects.items()
    ]
    out["resolution"] = sorted(resolution.values(), key=lambda r: (r["status"] != "missing", r["name"]))
    out["missing"] = sorted(r["name"] for r in resolution.values() if r["status"] == "missing" and not r["optional"])
    out["glibc"] = _glibc_check(host, resolver, objects, resolution, root_has_libc, cache.read)
    out["symbols"] = _symbol_checks(
        host, pkg, roots, libtorch_npu, atb_plugin, torch_libs, resolution, facts, env_facts, deadline, errors, cache
    )
    versions, foreign = _extension_checks(host, facts, pkg, resolver, walk, cache, out, errors)
    out["located"] = located_record(host, facts, out, lambda: _now() > deadline, cache)
    versions += foreign
    _stack(host, facts, env_facts, resolver, loaded, set(objects), cache, out, deadline, errors, versions)
    out["duration"] = round(_now() - start, 3)
    return out


def _torch_abi(host: Host, torch: Optional[Dict[str, Any]]) -> Tuple[Optional[bool], Optional[str]]:
    """torch's C++11 ABI from the mangling of ``libc10.so``'s own exports, and that file."""
    if torch and torch.get("lib_dir"):
        lib = posixpath.join(torch["lib_dir"], "libc10.so")
        data, _e, _t = host.read_bytes(lib, limit=64 << 20)
        if data and data[:4] == b"\x7fELF":
            return torch_cxx11_abi(data)[0], lib
    return None, None


def _without_torch_npu(
    host: Host,
    facts: Dict[str, Any],
    env_facts: Dict[str, Any],
    torch: Optional[Dict[str, Any]],
    cache: ElfCache,
    out: Dict[str, Any],
    start: float,
    errors: List[str],
) -> None:
    """``autoload`` and the stack's records of ``out`` when torch_npu is not installed."""
    arch = (facts.get("host") or {}).get("arch") or env_facts.get("arch") or "x86_64"
    ld_path = [posixpath.normpath(p) for p in host.env_paths("LD_LIBRARY_PATH") if p.startswith("/")]
    resolver = Resolver(host, arch, 64, ld_path)
    out["autoload"] = autoload_record(
        host,
        facts,
        torch,
        resolver,
        _torch_libs(host, torch),
        cache.read,
        lambda p: _real(host, p),
        _expired(start),
    )
    _stack(host, facts, env_facts, resolver, {}, set(), cache, out, start + TIME_BUDGET, errors)


def _roots(host: Host, pkg: str) -> Tuple[List[str], str, str]:
    """torch_npu's binaries checked first (its ``_C*.so`` extension and
    ``lib/libtorch_npu.so`` when present), that library's path and its ATB plugin's path."""
    roots = host.glob(pkg, prefix="_C", suffix=".so")
    libtorch_npu = posixpath.join(pkg, "lib", "libtorch_npu.so")
    if host.is_file(libtorch_npu):
        roots.append(libtorch_npu)
    return roots, libtorch_npu, posixpath.join(pkg, "lib", "libop_plugin_atb.so")


def _resolver(host: Host, facts: Dict[str, Any], env_facts: Dict[str, Any], first: Any) -> Resolver:
    """The machine's loader, with the environment's ``LD_LIBRARY_PATH``."""
    # The loader is the machine's (its /bin/sh, or this process when live); torch_npu's own
    # files tell it only when the machine's architecture is unknown.
    machine = (facts.get("host") or {}).get("arch")
    arch = machine or first.machine or env_facts.get("arch") or "x86_64"
    bits = first.bits if first.machine == arch and first.bits else 64
    # Each directory once, first place kept: the loader's answer is the same, and a
    # 15,000-entry LD_LIBRARY_PATH of a few hundred directories is searched as those.
    ld_path = list(dict.fromkeys(posixpath.normpath(p) for p in host.env_paths("LD_LIBRARY_PATH") if p.startswith("/")))
    return Resolver(host, arch, bits, ld_path)


class _LoadWalk:
    """torch_npu's load chain followed the way ``ld.so`` maps it: ``objects`` (path -> ELF
    facts of each file mapped) and ``resolution`` (one record per ``DT_NEEDED`` name)."""

    def __init__(
        self,
        host: Host,
        resolver: Resolver,
        cache: ElfCache,
        loaded: Dict[str, str],
        torch_libs: List[str],
        root_has_libc: bool,
        deadline: float,
        errors: List[str],
    ) -> None:
        self.host = host
        self.resolver = resolver
        self.cache = cache
        self.loaded = loaded
        self.torch_libs = torch_libs
        self.root_has_libc = root_has_libc
        self.deadline = deadline
        self.errors = errors
        self.objects: Dict[str, Any] = {}
        self.resolution: Dict[str, Dict[str, Any]] = {}

    def follow(self, roots: List[str], atb_plugin: Optional[str]) -> None:
        """Map ``roots`` (and the lazily-loaded ``atb_plugin``, its needs optional) and every
        library they pull, within :data:`MAX_OBJECTS` files and the deadline."""
        queue: List[Tuple[str, List[str], bool]] = [(r, [], False) for r in roots]
        if atb_plugin:
            queue.append((atb_plugin, [], True))
        while queue:
            path, parent_rpaths, optional = queue.pop(0)
            if path in self.objects:
                continue
            if len(self.objects) >= MAX_OBJECTS or _now() > self.deadline:
                self.errors.append(f"stopped following dependencies after {len(self.objects)} files (time/size budget)")
                break
            queue += self._map(path, parent_rpaths, optional)

    def _map(self, path: str, parent_rpaths: List[str], optional: bool) -> List[Tuple[str, List[str], bool]]:
        """Map one file and resolve its ``DT_NEEDED`` entries; the libraries to map next."""
        info = self.cache.read(_real(self.host, path))
        self.objects[path] = info
        if info.error:
            self.errors.append(f"{path}: {info.error}")
            return []
        if info.soname and info.soname not in self.loaded:
            self.loaded[info.soname] = path
        origin = posixpath.dirname(self.host.resolve(path))
        own_rpath = expand_origin(info.rpath, origin) if not info.runpath else []
        chain = own_rpath + parent_rpaths
        runpath = expand_origin(info.runpath, origin)
        nxt: List[Tuple[str, List[str], bool]] = []
        for name in info.needed:
            rec = self._record(name, path, optional)
            if rec["status"] in ("found", "torch"):
                continue
            found = self._resolve(rec, chain, runpath)
            if found and not SYSTEM_LIB_RE.match(name):
                nxt.append((found, chain if not info.runpath else [], optional))
        return nxt

    def _record(self, name: str, needed_by: str, optional: bool) -> Dict[str, Any]:
        """The resolution record of ``name``, ``needed_by`` added to it."""
        rec = self.resolution.get(name)
        if rec is None:
            rec = {
                "name": name,
                "needed_by": [],
                "status": None,
                "path": None,
                "via": None,
                "found_at": [],
                "optional": optional,
            }
            self.resolution[name] = rec
        if needed_by not in rec["needed_by"]:
            rec["needed_by"].append(needed_by)
        if not optional:
            rec["optional"] = False
        return rec

    def _resolve(self, rec: Dict[str, Any], chain: List[str], runpath: List[str]) -> Optional[str]:
        """Set ``rec``'s status the way the loader answers; the path of a library newly found."""
        name = rec["name"]
        if name in self.loaded and name not in ("libc.so.6",):
            status = "torch" if self.loaded[name] in self.torch_libs else "found"
            rec.update(status=status, path=self.loaded[name], via="already loaded")
            return None
        if TORCH_LIB_RE.match(name) and self.torch_libs:
            rec.update(status="torch", path=None, via="import torch")
            return None
        found, via = self.resolver.search(name, chain, runpath)
        if found:
            rec.update(status="found", path=found, via=via)
            self.loaded.setdefault(name, found)
            return found
        if SYSTEM_LIB_RE.match(name) and not self.root_has_libc:
            rec.update(status="system-unknown")
        else:
            rec["status"] = "missing"
        return None


def _note_found_at(
    host: Host, resolver: Resolver, resolution: Dict[str, Dict[str, Any]], search_dirs: List[Tuple[str, str]]
) -> None:
    """Add to each missing or found library's ``found_at`` where it is on disk."""
    for rec in resolution.values():
        if rec["status"] not in ("missing", "found") or SYSTEM_LIB_RE.match(rec["name"]):
            continue
        for d, label in search_dirs:
            cand = posixpath.join(d, rec["name"])
            if host.is_file(cand):
                rec["found_at"].append({"path": cand, "where": label, "usable": resolver.usable(cand)})


def _extension_checks(
    host: Host,
    facts: Dict[str, Any],
    pkg: str,
    resolver: Resolver,
    walk: _LoadWalk,
    cache: ElfCache,
    out: Dict[str, Any],
    errors: List[str],
) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """``symbols.extensions`` and ``symbols.torch_extensions`` of ``out``: every other module
    linking torch_npu / CANN / NNAL or torch's libraries (after ``import torch_npu``).
    Returns the extension modules' version needs of base-system libraries and the records
    of modules of another architecture (one unreadable-file record each, not judged)."""
    objects, loaded, deadline = walk.objects, walk.loaded, walk.deadline
    versions: List[Dict[str, Any]] = []
    torch_extensions: List[Dict[str, Any]] = []
    # K03: third-party extensions linking torch_npu / CANN / NNAL libraries (after import torch_npu)
    out["symbols"]["extensions"] = scan(
        host,
        facts,
        host.glob(posixpath.join(pkg, "lib"), suffix=".so"),
        resolver,
        loaded,
        walk.resolution,
        lambda: _now() > deadline,
        lambda p: _real(host, p),
        lambda obj, names, against: _check(obj, names, against, lambda p: _real(host, p), cache),
        errors,
        read=cache.read,
        undefined=cache.undefined,
        versions=versions,
        owned={p: d for p, d in npu_package_files(host, facts, cache).items() if p not in objects},
        cache=cache,
        torch_libs=walk.torch_libs,
        torch_extensions=torch_extensions,
    )
    out["symbols"]["torch_extensions"] = torch_extensions

    def elf_of(p: str) -> Any:
        return cache.read(_real(host, p))

    # extension modules of another architecture: one unreadable-file record each, not judged
    out["symbols"]["extensions"], foreign = _inventory.split_foreign(
        out["symbols"]["extensions"], "object", resolver, elf_of
    )
    versions, more = _inventory.split_foreign(versions, "path", resolver, elf_of)
    return versions, [r for r in more if r["path"] not in {f["path"] for f in foreign}] + foreign


def _torch_libs(host: Host, torch: Optional[Dict[str, Any]]) -> Dict[str, str]:
    """soname -> path of torch's own libraries (``import torch`` loads them first)."""
    loaded: Dict[str, str] = {}
    if torch and torch.get("lib_dir"):
        for path in host.glob(torch["lib_dir"], suffix=".so"):
            name = posixpath.basename(path)
            if TORCH_LIB_RE.match(name) and not _TEST_LIB_RE.search(name):
                loaded[name] = path
    return loaded


def _real(host: Host, path: str) -> str:
    try:
        return host.real(path)
    except OSError:
        return host.root.rstrip("/") + path


def _stack(
    host: Host,
    facts: Dict[str, Any],
    env_facts: Dict[str, Any],
    resolver: Resolver,
    loaded: Dict[str, str],
    done: Set[str],
    cache: ElfCache,
    out: Dict[str, Any],
    deadline: float,
    errors: List[str],
    versions: Optional[List[Dict[str, Any]]] = None,
) -> None:
    """``stack``, ``stack_found_at`` and ``elf_cache`` of ``out`` (and ``glibc`` when the
    torch_npu walk did not set it): the rest of the NPU stack's ELF files, resolved with
    ``LD_LIBRARY_PATH`` as the toolkit's and NNAL's set_env.sh set it."""
    expected = mapping(env_facts.get("expected"))
    added = (expected.get("added") or {}).get("LD_LIBRARY_PATH") or []
    set_up = list(resolver.ld_library_path)
    for entry in list(added) + [_inventory.nnal_lib(env_facts) or ""]:
        entry = posixpath.normpath(str(entry)) if str(entry).startswith("/") else ""
        if entry and entry not in set_up:
            set_up.append(entry)
    entries = _inventory.files(host, facts, env_facts, lambda p: p in done)
    stack = list(versions or []) + _inventory.audit(
        host,
        entries,
        resolver.with_path(set_up),
        loaded,
        lambda p: cache.read(_real(host, p)),
        lambda: _now() > deadline,
        errors,
    )
    out["stack"] = stack
    out["stack_ld_library_path"] = set_up
    shadowed = _inventory.shadows(
        host,
        entries,
        resolver.with_path(set_up),
        lambda p: cache.read(_real(host, p)),
        lambda n: n in loaded,
        _inventory.install_roots(host, facts, env_facts),
    )
    for rec in shadowed:
        rec["taken_by"] = record_owner(host, facts, rec["taken"])
    out["stack_shadowed"] = shadowed
    found_at: Dict[str, List[Dict[str, Any]]] = {}
    search = _search_dirs(facts, env_facts)
    for rec in stack:
        for name in rec["unresolved"]:
            if name in found_at:
                continue
            found_at[name] = [
                {"path": posixpath.join(d, name), "where": label, "usable": resolver.usable(posixpath.join(d, name))}
                for d, label in search
                if host.is_file(posixpath.join(d, name))
            ]
    out["stack_found_at"] = found_at
    if out.get("glibc") is None:
        has_libc = bool(resolver.search("libc.so.6", [], [])[0])
        out["glibc"] = _glibc_check(host, resolver, {}, {}, has_libc, cache.read)
    out["elf_cache"] = {"hits": cache.hits, "misses": cache.misses}


def _glibc_check(
    host: Host,
    resolver: Resolver,
    objects: Dict[str, Any],
    resolution: Dict[str, Dict[str, Any]],
    root_has_libc: bool,
    read_elf: Any,
) -> Dict[str, Any]:
    providers: Dict[str, str] = {}
    provided: Dict[str, List[str]] = {}
    for lib in ("libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1"):
        rec = resolution.get(lib)
        path = rec.get("path") if rec and rec.get("status") == "found" else resolver.search(lib, [], [])[0]
        if not path:
            continue
        providers[lib] = path
        info = read_elf(_real(host, path))
        provided[lib] = info.version_defs
    summary = {
        "GLIBC": symbol_versions(provided.get("libc.so.6", []), "GLIBC")[-1:],
        "GLIBCXX": symbol_versions(provided.get("libstdc++.so.6", []), "GLIBCXX")[-1:],
        "CXXABI": symbol_versions(provided.get("libstdc++.so.6", []), "CXXABI")[-1:],
    }
    return {"providers": providers, "provided": summary, "defined": provided, "root_has_libc": root_has_libc}


def _check(obj: str, names: Set[str], against: List[str], real: Any, cache: ElfCache) -> Dict[str, Any]:
    res: Dict[str, Any] = {
        "object": obj,
        "against": against,
        "checked": len(names),
        "missing_count": 0,
        "missing": [],
        "error": None,
    }
    if not names or not against:
        return res
    missing, problems = cache.missing(names, [real(p) for p in against])
    res["missing_count"] = len(missing)
    res["missing"] = missing[:25]
    if problems:
        res["error"] = "; ".join(problems)[:500]
    return res


def _symbol_checks(
    host: Host,
    pkg: str,
    roots: List[str],
    libtorch_npu: str,
    atb_plugin: str,
    torch_libs: List[str],
    resolution: Dict[str, Dict[str, Any]],
    facts: Dict[str, Any],
    env_facts: Dict[str, Any],
    deadline: float,
    errors: List[str],
    cache: ElfCache,
) -> Dict[str, Any]:
    def real(p: str) -> str:
        return _real(host, p)

    out: Dict[str, Any] = {"torch": None, "atb": None, "cann": None, "extensions": []}
    npu_libs = host.glob(posixpath.join(pkg, "lib"), suffix=".so")
    if host.is_file(libtorch_npu):
        undef, err = cache.undefined(real(libtorch_npu))
        if err:
            errors.append(f"{libtorch_npu}: {err}")
        else:
            if torch_libs:
                torch_names = {s for s in undef if TORCH_SYM_RE.match(s)}
                out["torch"] = _check(libtorch_npu, torch_names, torch_libs, real, cache)
                out["torch"]["abi"], out["torch"]["abi_symbol"] = module_cxx11_abi(torch_names)
            cann_libs = [
                r["path"]
                for r in resolution.values()
                if r["status"] == "found"
                and r["path"]
                and libtorch_npu in r["needed_by"]
                and not SYSTEM_LIB_RE.match(r["name"])
                and r["path"] not in npu_libs
            ]
            cann_syms = {s for s in undef if CANN_SYM_RE.match(s)}
            needed_cann = [
                r for r in resolution.values() if libtorch_npu in r["needed_by"] and r["status"] == "missing"
            ]
            if cann_libs and not needed_cann:
                out["cann"] = _check(libtorch_npu, cann_syms, cann_libs, real, cache)
    # K04: ATB symbols of torch_npu's ATB plugin (and libtorch_npu) vs libatb.so
    atb_rec = resolution.get("libatb.so")
    atb_lib = atb_rec.get("path") if atb_rec and atb_rec.get("status") == "found" else None
    if atb_lib is None:
        nnal = env_facts.get("nnal") if isinstance(env_facts.get("nnal"), dict) else None
        home = (nnal or {}).get("current_atb_home")
        if home and host.is_file(posixpath.join(home, "lib", "libatb.so")):
            atb_lib = posixpath.join(home, "lib", "libatb.so")
    if atb_lib:
        names: Set[str] = set()
        objs = [p for p in (libtorch_npu, atb_plugin) if host.is_file(p)]
        for p in objs:
            undef, err = cache.undefined(real(p))
            if not err:
                names |= {s for s in undef if ATB_SYM_RE.match(s)}
        out["atb"] = _check(", ".join(objs), names, [atb_lib], real, cache)
    return out
