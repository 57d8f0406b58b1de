"""Third-party extensions of the judged interpreter that link the NPU stack.

Every ``.so`` under the interpreter's site-packages (found by walking, never from a list of
file names; torch, torch_npu and big non-NPU packages are skipped) whose ``DT_NEEDED``
names ``libtorch_npu.so``, ``libascendcl.so``, ``libhccl.so``, ``libatb.so`` or
``libopapi.so`` is checked as it would load *after* ``import torch_npu`` (what such
extensions require):

* each ``DT_NEEDED`` entry resolves like ``ld.so`` (libraries already loaded by torch /
  torch_npu count; then the extension's RPATH/RUNPATH with ``$ORIGIN``,
  ``LD_LIBRARY_PATH``, ``ld.so.cache``, default directories): ``unresolved`` lists those
  that do not;
* its undefined ``c10_npu::`` / ``at_npu::`` / ``torch_npu::`` / ``op_api::`` symbols
  against the exports of the installed ``torch_npu/lib/*.so``, and its ``acl*`` /
  ``aclnn*`` / ``Hccl*`` / ATB symbols against the libraries that would be loaded (those
  ``import torch_npu`` loaded and the extension's own ``DT_NEEDED`` providers: ld.so binds
  a symbol from its global scope, so an ``aclCreateTensor`` of ``libnnopbase.so`` counts
  even when the extension names only ``libascendcl.so``).

A ``.so`` that a distribution of the NPU stack installs (its ``RECORD``;
:mod:`npudoctor.knowledge.npu_wheels`: torch-npu, vllm-ascend, triton-ascend, torchair,
MindIE's, Ascend's apex, ...) but that links no NPU library directly is checked too, for
its unresolved ``DT_NEEDED`` entries (``links`` empty, ``package`` the distribution).

Records: ``{"object", "package" (top-level site-packages name, or the NPU distribution
that installs it), "links", "unresolved", "checked", "missing_count", "missing" (first 25
names), "against", "error"}``.
"""

from __future__ import annotations

import os
import posixpath
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from npudoctor import lazyre
from npudoctor.host import Host
from npudoctor.probes._elfcache import same_mtime
from npudoctor.probes._ldso import VERSIONED_RE, Resolver, expand_origin, highest

#: torch's own libraries: a module linking one of them is a torch extension, whose C++ ABI
#: and torch symbols are checked against the installed torch (``torch_extensions``).
TORCH_LINK_RE = lazyre.pattern(r"^(?!libtorch_npu)(libtorch[a-z0-9_]*|libc10(?!_npu)[a-z0-9_]*)\.so$")
#: The NPU libraries whose linking makes a site-packages .so an NPU extension.
NPU_LINKS = ("libtorch_npu.so", "libascendcl.so", "libhccl.so", "libatb.so", "libopapi.so")
#: Base-system libraries (unknowable when the root holds no libc).
SYSTEM_LIB_RE = lazyre.pattern(
    r"^(libc|libm|libpthread|libdl|librt|libutil|libresolv|libanl|libnsl|libmvec|ld-linux[-a-z0-9_]*|ld64)\.so(\.[0-9]+)*$"
    r"|^(libstdc\+\+|libgcc_s|libgomp|libatomic)\.so(\.[0-9]+)*$"
)
#: Third-party .so files examined at most, and directory entries walked at most.
MAX_EXTENSIONS = 200
#: Bytes of one NPU distribution's RECORD read at most (torch_npu's is ~0.5 MB).
RECORD_LIMIT = 8 << 20
#: Shared objects of NPU distributions (RECORD) checked at most.
MAX_OWNED = 400
MAX_WALK = 20000

NPU_SYM_RE = lazyre.pattern(r"^_Z(?:T[VIST])?N?K?(?:7c10_npu|6at_npu|9torch_npu|3op_api|7op_plugin)(?:[0-9]|[A-Z])")
ATB_SYM_RE = lazyre.pattern(r"^_Z(?:T[VIST])?N?K?(?:3atb|3Mki|6AsdOps)(?:[0-9]|[A-Z])")
#: Symbols of the CANN / NNAL family an extension may import: ``acl*`` (libascendcl,
#: libnnopbase), ``aclnn*`` (libopapi), ``Hccl*`` (libhccl) and ATB's C++ API (libatb).
CANN_EXT_SYM_RE = lazyre.pattern(r"^(?:acl[a-zA-Z]|Hccl|hccl[A-Z])|" + ATB_SYM_RE.pattern[1:])

_SKIP_TOP = {
    "torch",
    "torch_npu",
    "numpy",
    "scipy",
    "torchvision",
    "torchaudio",
    "pip",
    "setuptools",
    "__pycache__",
    "sympy",
    "pandas",
}


def site_dirs(facts: Dict[str, Any]) -> List[str]:
    """The judged interpreter's package directories: every installed record's location,
    then ``python.site_packages``."""
    dirs: List[str] = []
    installed = (facts.get("packages") or {}).get("installed") or {}
    for recs in installed.values() if isinstance(installed, dict) else []:
        for rec in recs or []:
            loc = rec.get("location") if isinstance(rec, dict) else None
            if loc and loc not in dirs:
                dirs.append(str(loc))
    for d in (facts.get("python") or {}).get("site_packages") or []:
        if isinstance(d, str) and d not in dirs:
            dirs.append(d)
    return dirs


#: Top-level names walked only for the symbol versions of their modules (torch_npu's own
#: files are the main walk's; pip and setuptools hold no extension the stack loads).
_VERSIONS_ONLY = _SKIP_TOP - {"torch_npu", "__pycache__", "pip", "setuptools"}
#: Shared objects of those packages read at most for their symbol versions.
MAX_VERSIONED = 1500


def _walk(
    host: Host,
    facts: Dict[str, Any],
    real: Callable[[str], str],
    expired: Callable[[], bool],
    errors: List[str],
    big: bool = False,
    cache: Optional[Any] = None,
) -> List[Tuple[str, str]]:
    """``(path, top-level name)`` of every shared object under the site directories: of
    the packages that may link the NPU stack, or (``big``) of the big packages that do not
    (torch, numpy, scipy, ...: read only for their symbol versions).  ``cache``: an
    :class:`~npudoctor.probes._elfcache.ElfCache` keeping each package directory's walk,
    reused while every directory walked keeps its size and mtime (torch: ~900 directories)."""
    found: List[Tuple[str, str]] = []
    walked = 0
    for site in site_dirs(facts):
        for top in host.listdir(site):
            if (top in _VERSIONS_ONLY) != big or top in _SKIP_TOP - _VERSIONS_ONLY:
                continue
            if top.endswith((".dist-info", ".egg-info", ".libs")):
                continue
            base = posixpath.join(site, top)
            if host.is_file(base) and (top.endswith(".so") or ".so." in top):
                found.append((base, top))
                continue
            if not host.is_dir(base) or host.readlink(base) is not None:
                continue
            tree = _tree(host, base, cache) if cache is not None else None
            if tree is not None and walked + tree[1] <= MAX_WALK:
                shown = host.display(base)
                found += [(posixpath.join(shown, rel), top) for rel in tree[0]]
                walked += tree[1]
            else:
                for dirpath, dirnames, filenames in host.walk(base):
                    walked += len(filenames) + len(dirnames)
                    dirnames[:] = [d for d in dirnames if d not in _PRUNE]
                    for f in filenames:
                        if f.endswith(".so") or ".so." in f:
                            found.append((posixpath.join(dirpath, f), top))
                    if walked > MAX_WALK or expired():
                        break
            if walked > MAX_WALK or expired():
                errors.append(
                    f"{'symbol-version' if big else 'extension'} scan stopped early (too many files or time budget)"
                )
                return found
    return found


#: Directories not descended into by the walks.
_PRUNE = ("tests", "__pycache__")
#: Entries (files and directories) of one package directory walked at most for the cache.
_TREE_LIMIT = MAX_WALK + 1


def _stamp(path: str) -> Optional[List[int]]:
    """``[mtime in ns, size]`` of a directory: what an image copy keeps (no inode)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def _unchanged(path: str, kept: Any) -> bool:
    """Whether the directory ``path`` still has the ``kept`` stamp (see :func:`same_mtime`)."""
    now = _stamp(path)
    return (
        now is not None
        and isinstance(kept, list)
        and len(kept) == 2
        and kept[1] == now[1]
        and same_mtime(kept[0], now[0])
    )


def _tree(host: Host, base: str, cache: Any) -> Optional[Tuple[List[str], int]]:
    """``(shared objects relative to base, entries counted)`` of the walk of the package
    directory ``base``, from ``cache`` while every directory of the last walk has the same
    (mtime, size) -- a directory's mtime changes whenever an entry is added, removed or
    renamed in it -- else walked (up to :data:`_TREE_LIMIT` entries) and kept; ``None``
    when the directory cannot be walked whole (a refusal, too many entries)."""
    try:
        top = host.real(base)
    except OSError:
        return None
    key = "walk:" + top + "\0" + ",".join(_PRUNE)
    rec = cache.lookup(key)
    if isinstance(rec, dict) and isinstance(rec.get("dirs"), list) and isinstance(rec.get("so"), list):
        try:
            if key in cache.fresh or all(
                _unchanged(os.path.join(top, str(rel)) if rel else top, st) for rel, st in rec["dirs"]
            ):
                cache.hit(key, rec)
                cache.fresh.add(key)
                return [str(p) for p in rec["so"]], int(rec["count"])
        except (TypeError, ValueError, KeyError):
            pass
    denied = len(host.denied)
    shown = host.display(base)
    dirs: List[Any] = []
    so: List[str] = []
    count = 0
    for dirpath, dirnames, filenames in host.walk(base):
        rel = dirpath[len(shown) :].lstrip("/") if dirpath.startswith(shown) else None
        if rel is None:
            return None
        stamp = _stamp(os.path.join(top, rel) if rel else top)
        if stamp is None:
            return None
        dirs.append([rel, stamp])
        count += len(filenames) + len(dirnames)
        if count > _TREE_LIMIT:
            return None
        dirnames[:] = [d for d in dirnames if d not in _PRUNE]
        so += [posixpath.join(rel, f) if rel else f for f in filenames if f.endswith(".so") or ".so." in f]
    if len(host.denied) != denied:
        return None
    cache.store(key, {"dirs": dirs, "so": so, "count": count})
    cache.fresh.add(key)
    return so, count


def _record_so(host: Host, record: str) -> Optional[List[str]]:
    """The relative (not absolute) shared-object paths a RECORD lists, in order, or ``None``
    when it cannot be read."""
    read = host.read_text(record, limit=RECORD_LIMIT)
    if read.text is None:
        return None
    out: List[str] = []
    for line in read.text.splitlines():
        rel = line.split(",", 1)[0].strip()
        base = posixpath.basename(rel)
        if rel and (base.endswith(".so") or ".so." in base) and not posixpath.isabs(rel):
            out.append(rel)
    return out


def npu_package_files(host: Host, facts: Dict[str, Any], cache: Optional[Any] = None) -> Dict[str, str]:
    """``{path: distribution}`` of the shared objects the installed NPU distributions
    (:func:`~npudoctor.knowledge.npu_wheels.is_npu_distribution`; the first record of each
    name, the one import sees) list in their ``RECORD``; unreadable RECORDs are skipped.
    ``cache``: an :class:`~npudoctor.probes._elfcache.ElfCache` keeping each RECORD's list
    by its path, size and mtime (torch_npu's RECORD lists ~4,000 files)."""
    from npudoctor.knowledge.npu_wheels import is_npu_distribution
    from npudoctor.parsers.metadata import canonical_name

    out: Dict[str, str] = {}
    installed = (facts.get("packages") or {}).get("installed") or {}
    for recs in installed.values() if isinstance(installed, dict) else []:
        rec = recs[0] if isinstance(recs, list) and recs and isinstance(recs[0], dict) else None
        if rec is None or rec.get("kind") != "dist-info" or not rec.get("location"):
            continue
        name = canonical_name(str(rec.get("name") or ""))
        if not is_npu_distribution(name, rec.get("version")):
            continue
        record = posixpath.join(str(rec.get("dist_info") or ""), "RECORD")
        listed: Any = None
        if cache is not None:
            try:
                listed = cache.derived("record-so", host.real(record), lambda r=record: _record_so(host, r))
            except OSError:
                listed = None
        if not isinstance(listed, list):
            listed = _record_so(host, record) or []
        for rel in listed:
            out.setdefault(posixpath.normpath(posixpath.join(str(rec["location"]), str(rel))), name)
            if len(out) >= MAX_OWNED:
                return out
    return out


#: RECORD files read at most when looking for the distribution that installs one file.
MAX_RECORDS = 300


def record_owner(host: Host, facts: Dict[str, Any], path: str) -> Optional[str]:
    """``"<name> <version>"`` of the installed distribution whose ``RECORD`` lists the file
    ``path`` (a path of the diagnosed machine), or ``None`` (outside every package
    directory, or listed by none of the first :data:`MAX_RECORDS` RECORDs there)."""
    installed = (facts.get("packages") or {}).get("installed") or {}
    read = 0
    for recs in installed.values() if isinstance(installed, dict) else []:
        for rec in recs if isinstance(recs, list) else []:
            loc = str(rec.get("location") or "") if isinstance(rec, dict) else ""
            if not loc or not path.startswith(loc.rstrip("/") + "/") or rec.get("kind") != "dist-info":
                continue
            if read >= MAX_RECORDS:
                return None
            read += 1
            rel = path[len(loc.rstrip("/")) + 1 :]
            text = host.read_text(posixpath.join(str(rec.get("dist_info") or ""), "RECORD"), limit=RECORD_LIMIT).text
            if text and any(line.split(",", 1)[0].strip() == rel for line in text.splitlines()):
                return f"{rec.get('name')} {rec.get('version')}".strip()
    return None


def scan(
    host: Host,
    facts: Dict[str, Any],
    npu_libs: List[str],
    resolver: Optional[Resolver],
    loaded: Dict[str, str],
    resolution: Dict[str, Dict[str, Any]],
    expired: Callable[[], bool],
    real: Callable[[str], str],
    check: Callable[[str, Set[str], List[str]], Dict[str, Any]],
    errors: List[str],
    read: Optional[Callable[[str], Any]] = None,
    versions: Optional[List[Dict[str, Any]]] = None,
    undefined: Optional[Callable[[str], Tuple[Set[str], Optional[str]]]] = None,
    owned: Optional[Dict[str, str]] = None,
    cache: Optional[Any] = None,
    torch_libs: Optional[List[str]] = None,
    torch_extensions: Optional[List[Dict[str, Any]]] = None,
) -> List[Dict[str, Any]]:
    """The records of every NPU extension (see the module docstring).  ``loaded``:
    soname → path of what ``import torch_npu`` has loaded; ``resolution``: the main
    walk's records (the providers of libascendcl.so, …); ``check(object, names,
    against)``: the symbol check of the caller; ``read(real path)``: the ELF reader (the
    cached one of the caller; default :func:`~npudoctor.parsers.elf.read_elf`);
    ``undefined(real path) -> (names, error)``: the strong undefined symbols (default
    :func:`~npudoctor.parsers.elf.dynamic_symbols`).
    ``versions``, when given, receives a record ``{"path", "where": "extension",
    "unresolved": [], "version_needs", "error": None}`` for every shared object walked whose
    ``version_needs`` name a base-system library (its highest need of each family): the
    symbol versions of every extension module of the interpreter are judged by the rules.
    ``cache``: the caller's :class:`~npudoctor.probes._elfcache.ElfCache`, for the walks.
    ``owned``: ``{path: distribution}`` of the NPU distributions' shared objects
    (:func:`npu_package_files`): checked for unresolved ``DT_NEEDED`` entries even when they
    link no NPU library (those of ``npu_libs`` and ``loaded`` are the main walk's).
    ``torch_extensions``, when given with ``torch_libs`` (torch's ``lib/*.so``), receives
    :func:`torch_extension_record` of every shared object walked (the big packages'
    included, torch's own excepted) that links torch's libraries."""

    from npudoctor.parsers.elf import read_elf

    reader = read or read_elf
    out: List[Dict[str, Any]] = []
    has_libc = resolver is not None and bool(resolver.search("libc.so.6", [], [])[0])
    owned = dict(owned or {})
    walked = _walk(host, facts, real, expired, errors, cache=cache)[:MAX_EXTENSIONS]
    seen = {p for p, _t in walked} | set(npu_libs) | set(loaded.values())
    # the NPU distributions' files the walk skips (torch_npu's besides its load chain)
    extra = [(p, d) for p, d in owned.items() if p not in seen and host.is_file(p)]
    for path, top in walked + extra:
        if expired():
            errors.append("extension checks stopped early (time budget)")
            break
        info = reader(real(path))
        if versions is not None and (path, top) not in extra:
            _versions_of(path, info, versions)
        if torch_extensions is not None and torch_libs:
            _torch_ext(path, top, info, torch_libs, real, check, undefined, torch_extensions, errors)
        links = [n for n in info.needed if n in NPU_LINKS] if not info.error else []
        if not links:
            if path in owned and not info.error:
                rec = _owned_record(host, path, owned[path], info, resolver, loaded, has_libc)
                if rec is not None:
                    out.append(rec)
            continue
        undef, err = _undefined(real(path), undefined)
        if err:
            errors.append(f"{path}: {err}")
            continue
        providers, unresolved = _providers(host, path, info, resolver, loaded, has_libc)
        res: Dict[str, Any] = {
            "object": path,
            "package": top,
            "links": links,
            "unresolved": unresolved,
            "checked": 0,
            "missing_count": 0,
            "missing": [],
            "error": None,
            "against": [],
        }
        parts = _symbol_parts(path, info, links, undef, providers, npu_libs, loaded, check)
        for part in parts:
            res["checked"] += part["checked"]
            res["missing_count"] += part["missing_count"]
            res["missing"] += part["missing"]
            res["against"] += part["against"]
            if part["error"]:
                res["error"] = part["error"]
        out.append(res)
    if versions is not None:
        _big_packages(
            host, facts, real, expired, errors, reader, versions, cache, torch_libs, torch_extensions, check, undefined
        )
    return out


def _undefined(
    path: str, undefined: Optional[Callable[[str], Tuple[Set[str], Optional[str]]]]
) -> Tuple[Set[str], Optional[str]]:
    """The strong undefined symbols of the file at real ``path`` and the error reading them,
    by the caller's ``undefined`` (cached) or the ELF reader's."""
    if undefined is not None:
        return undefined(path)
    from npudoctor.parsers.elf import dynamic_symbols

    _d, undef, err = dynamic_symbols(path, want_defined=False)
    return undef, err


def _providers(
    host: Host,
    path: str,
    info: Any,
    resolver: Optional[Resolver],
    loaded: Dict[str, str],
    has_libc: bool,
) -> Tuple[Dict[str, str], List[str]]:
    """Each ``DT_NEEDED`` entry of the module at ``path`` resolved after ``import
    torch_npu``: ``{name: path}`` of those found (loaded already, or by the loader's
    search), and the names that will not resolve (a base-system library only when the root
    holds a libc to judge by)."""
    providers: Dict[str, str] = {}
    unresolved: List[str] = []
    origin = posixpath.dirname(host.resolve(path))
    rpath = expand_origin(info.rpath, origin) if not info.runpath else []
    runpath = expand_origin(info.runpath, origin)
    for name in info.needed:
        if name in loaded:
            providers[name] = loaded[name]
            continue
        found = resolver.search(name, rpath, runpath)[0] if resolver is not None else None
        if found:
            providers[name] = found
        elif has_libc or not SYSTEM_LIB_RE.match(name):
            unresolved.append(name)
    return providers, unresolved


def _symbol_parts(
    path: str,
    info: Any,
    links: List[str],
    undef: Set[str],
    providers: Dict[str, str],
    npu_libs: List[str],
    loaded: Dict[str, str],
    check: Callable[[str, Set[str], List[str]], Dict[str, Any]],
) -> List[Dict[str, Any]]:
    """The symbol checks of one module: its torch_npu names against torch_npu's libraries,
    its CANN / ATB names against what the process has loaded."""
    parts = []
    if "libtorch_npu.so" in links:
        parts.append(check(path, {s for s in undef if NPU_SYM_RE.match(s)}, npu_libs))
    if any(n != "libtorch_npu.so" and providers.get(n) for n in links):
        # acl* / aclnn* / Hccl* / ATB symbols bind to whatever the process has loaded
        # (ld.so's global scope): the libraries import torch_npu loaded, then its own
        against: List[str] = []
        for cand in list(loaded.values()) + [providers[n] for n in info.needed if n in providers]:
            if cand not in against and not SYSTEM_LIB_RE.match(posixpath.basename(cand)):
                against.append(cand)
        parts.append(check(path, {s for s in undef if CANN_EXT_SYM_RE.match(s)}, against))
    return parts


def _big_packages(
    host: Host,
    facts: Dict[str, Any],
    real: Callable[[str], str],
    expired: Callable[[], bool],
    errors: List[str],
    reader: Callable[[str], Any],
    versions: List[Dict[str, Any]],
    cache: Optional[Any],
    torch_libs: Optional[List[str]],
    torch_extensions: Optional[List[Dict[str, Any]]],
    check: Callable[[str, Set[str], List[str]], Dict[str, Any]],
    undefined: Optional[Callable[[str], Tuple[Set[str], Optional[str]]]],
) -> None:
    """The symbol versions (into ``versions``) and torch links (into ``torch_extensions``)
    of the big packages' modules, which the extension walk skips."""
    for path, top in _walk(host, facts, real, expired, errors, big=True, cache=cache)[:MAX_VERSIONED]:
        if expired():
            errors.append("symbol-version checks of extension modules stopped early (time budget)")
            break
        info = reader(real(path))
        _versions_of(path, info, versions)
        if torch_extensions is not None and torch_libs and top != "torch":
            _torch_ext(path, top, info, torch_libs, real, check, undefined, torch_extensions, errors)


def _torch_ext(
    path: str,
    top: str,
    info: Any,
    torch_libs: List[str],
    real: Callable[[str], str],
    check: Callable[[str, Set[str], List[str]], Dict[str, Any]],
    undefined: Optional[Callable[[str], Tuple[Set[str], Optional[str]]]],
    out: List[Dict[str, Any]],
    errors: List[str],
) -> None:
    """Append the record of ``path`` to ``out`` when it links torch's libraries: its C++ ABI
    (:func:`~npudoctor.parsers.cxxabi.module_cxx11_abi`, ``abi``/``abi_symbol``) and its
    undefined torch names against the exports of ``torch_libs`` (a :func:`scan` check)."""
    from npudoctor.parsers.cxxabi import TORCH_NAME, module_cxx11_abi

    if info.error or not any(TORCH_LINK_RE.match(n) for n in info.needed):
        return
    undef, err = _undefined(real(path), undefined)
    if err:
        errors.append(f"{path}: {err}")
        return
    names = {n for n in undef if TORCH_NAME.match(n)}
    abi, symbol = module_cxx11_abi(names)
    rec = check(path, names, torch_libs)
    rec.update(package=top, links=[n for n in info.needed if TORCH_LINK_RE.match(n)], abi=abi, abi_symbol=symbol)
    out.append(rec)


def _owned_record(
    host: Host,
    path: str,
    dist: str,
    info: Any,
    resolver: Optional[Resolver],
    loaded: Dict[str, str],
    has_libc: bool,
) -> Optional[Dict[str, Any]]:
    """The record of an NPU distribution's ``.so`` that links no NPU library: its
    ``DT_NEEDED`` entries found on no loader path (after ``import torch_npu``), or ``None``
    when every one resolves (or the loader is unknown)."""
    if resolver is None:
        return None
    origin = posixpath.dirname(host.resolve(path))
    rpath = expand_origin(info.rpath, origin) if not info.runpath else []
    runpath = expand_origin(info.runpath, origin)
    unresolved = [
        n
        for n in info.needed
        if n not in loaded and not resolver.search(n, rpath, runpath)[0] and (has_libc or not SYSTEM_LIB_RE.match(n))
    ]
    if not unresolved:
        return None
    return {
        "object": path,
        "package": dist,
        "links": [],
        "unresolved": unresolved,
        "checked": 0,
        "missing_count": 0,
        "missing": [],
        "error": None,
        "against": [],
    }


def _versions_of(path: str, info: Any, versions: List[Dict[str, Any]]) -> None:
    """Append the record of ``path`` to ``versions`` when its ``version_needs`` name a
    base-system library (its highest need of each family)."""
    if info.error:
        return
    needs = {lib: highest(list(v)) for lib, v in info.version_needs.items() if VERSIONED_RE.match(lib)}
    if needs:
        versions.append({"path": path, "where": "extension", "unresolved": [], "version_needs": needs, "error": None})
