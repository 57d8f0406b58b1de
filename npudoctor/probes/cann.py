"""CANN facts: every toolkit installed, the one in use, its kernels per SoC, and NNAL/ATB.

Section ``cann`` (read by the rules of ``npudoctor/rules/cann.py`` and ``driver.py``, the
environment probe, the planner, ``triage`` and ``compare``)::

    toolkits   [toolkit record, ...]   one per distinct install (deduplicated by the
               directory it really lives in), in discovery order
    selected   toolkit record | None   the toolkit in use: the one named by
               ASCEND_TOOLKIT_HOME, else ASCEND_HOME_PATH (when it exists), else the
               default /usr/local/Ascend/ascend-toolkit/latest, else /usr/local/Ascend/cann,
               else the only toolkit found
    selected_via  "ASCEND_TOOLKIT_HOME" | "ASCEND_HOME_PATH" | "default" | "only" | None
    env        {"ASCEND_TOOLKIT_HOME": {"value", "exists"} | None, "ASCEND_HOME_PATH": ...,
                "ASCEND_TOOLKIT_LATEST_HOME": ..., "ASCEND_OPP_PATH": ..., "ATB_HOME_PATH": ...}
    nnal       NNAL record | None (the ATB install, see below)
    nnal_all   [NNAL record, ...]    every NNAL/ATB install found
    mindie     {"path", "version", "components", "source"} | None   (MindIE, if installed)
    atb_models {"path", "version", "source"} | None
    searched   [path, ...]           the places looked at (for "no CANN" evidence)

Toolkit record::

    path          str    the path it was found at (as the diagnosed machine sees it)
    resolved      str    the real install directory: symlinks resolved, and for a
                         classic ``latest/`` directory of relative symlinks
                         (``latest/runtime -> ../8.2.RC2/runtime``) the version directory
    kind          "toolkit" | "nnae" | "cann"   (``cann`` = the 8.5+ ``cann-<ver>`` layout)
    version       str | None   public CANN version ("8.0.0", "8.2.RC1", "8.0.T63", "9.0.0-beta.2")
    inner_version str | None   ("V100R001C20SPC001B251" or "7.6.0.1.220")
    compatible_version [str]  driver lines the install info accepts ("V100R001C15", "V100R001C15,V100R001C18")
    requires      {pkg: spec}  required_package_<pkg>_version of toolkit/version.info (">=7.6, <=8.2")
    arch          "aarch64" | "x86_64" | None
    source        str | None   the file the version came from, in this order:
                  <arch>-linux/ascend_{toolkit,nnae}_install.info (``version=``),
                  version.cfg (``toolkit_running_version=[inner:public]``),
                  toolkit/version.info, opp/version.info, runtime/version.info (``version_dir=``)
    versions      {source path: version}  every version statement read (to spot disagreement)
    components    {pkg: public version} from version.cfg ``*_running_version``
    found_via     str    the first way it was found: "ASCEND_TOOLKIT_HOME",
                         "ASCEND_HOME_PATH", "ASCEND_TOOLKIT_LATEST_HOME", or the default path
    aliases       [str]  every path or variable that leads to this install
    opp_path      str | None   <path>/opp when it exists
    kernels       {"socs": [dir, ...]     subdirectories of opp/built-in/op_impl/ai_core/tbe/kernel/
                                           that hold operator binaries ("ascend910b", "ascend310p", ...),
                   "configs": [dir, ...]  kernel/config/<dir>/binary_info_config.json present,
                   "version": str | None  kernels (opp_kernel) package version,
                   "inner_version": str | None  its Version= ("7.6.0.1.220"),
                   "requires": {pkg: spec}  its required_package_<pkg>_version values,
                   "source": str | None,  where that version came from
                   "installed": bool}     any kernels present at all
    errors        [{"path", "error"}]   files that could not be read or parsed
                  ("permission denied", "symlink loop", "not UTF-8", "no version= line", ...)
    set_env       str | None   path of the set_env.sh that belongs to this install

NNAL record: ``{path, resolved, version, build, platform, source, abi_dirs: ["cxx_abi_0",
"cxx_abi_1"], found_via, errors}`` -- ``path`` is the ``nnal/atb`` directory (its
``latest`` holds ``version.info`` and ``atb/cxx_abi_N``).

Nothing here judges; garbled, truncated, unreadable or non-UTF-8 files become ``errors``
entries, never exceptions.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Dict, List, Optional, Tuple

from npudoctor import lazyre
from npudoctor.context import ProbeContext
from npudoctor.host import Host
from npudoctor.parsers.info_files import (
    component_version_info,
    mindie_version_info,
    nnal_version_info,
    parse_version_cfg,
    toolkit_install_info,
)
from npudoctor.record import Record

SECTION = "cann"
NEEDS = ()
QUICK = True

ASCEND_ROOT = "/usr/local/Ascend"
DEFAULT_TOOLKIT = "/usr/local/Ascend/ascend-toolkit/latest"
ENV_VARS = ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH", "ASCEND_TOOLKIT_LATEST_HOME")
_KERNEL_DIR = "opp/built-in/op_impl/ai_core/tbe/kernel"
_ARCH_ALIASES = {"arm64": "aarch64", "aarch64": "aarch64", "x86_64": "x86_64", "amd64": "x86_64"}
_VERSION_DIR = lazyre.pattern(r"^[0-9]+\.[0-9]+(\.[0-9A-Za-z]+)*([-.][A-Za-z]+\.?[0-9]*)?$")
_MAX_HOMES = 50


def _read(host: Host, path: str, errors: List[Dict[str, str]]) -> Optional[str]:
    """Text of a small file, or ``None`` with the reason appended to ``errors``."""
    res = host.read_text(path, limit=256 * 1024)
    if not res.ok:
        if res.error != "not found":
            errors.append({"path": res.path, "error": res.error or "unreadable"})
        return None
    if res.lossy:
        errors.append({"path": res.path, "error": "not UTF-8 (bytes replaced)"})
    if res.truncated:
        errors.append({"path": res.path, "error": "too large; read the head only"})
    return res.text


def _join(*parts: str) -> str:
    return posixpath.normpath(posixpath.join(*parts))


def _real_install_dir(host: Host, path: str) -> str:
    """The directory the toolkit at ``path`` really lives in (see the module docstring)."""
    base = host.resolve(path)
    for component in ("runtime", "compiler", "opp", "toolkit"):
        link = _join(base, component)
        if host.stat(link, follow=False) is not None and host.readlink(link) is not None:
            target = host.resolve(link)
            if host.is_dir(target):
                return posixpath.dirname(target)
    return base


def _arch_dirs(host: Host, path: str) -> List[str]:
    """``<arch>-linux`` subdirectories, real ones first (``arm64-linux`` is usually a
    symlink to ``aarch64-linux``)."""
    names = [n for n in host.listdir(path) if n.endswith("-linux")]
    real = [n for n in names if host.readlink(_join(path, n)) is None]
    links = [n for n in names if n not in real]
    return [_join(path, n) for n in real + links]


def _looks_like_toolkit(host: Host, path: str) -> bool:
    if not host.is_dir(path):
        return False
    markers = ("version.cfg", "runtime", "compiler", "opp", "toolkit", "lib64", "set_env.sh")
    if any(host.exists(_join(path, m)) for m in markers):
        return True
    return any(host.glob(d, prefix="ascend_", suffix="_install.info") for d in _arch_dirs(host, path))


def _kind(resolved: str, path: str, package_name: Optional[str]) -> str:
    if (package_name or "").lower().endswith("nnae") or "/nnae/" in path + "/" or "/nnae/" in resolved + "/":
        return "nnae"
    name = posixpath.basename(resolved)
    if name == "cann" or name.startswith("cann-"):
        return "cann"
    return "toolkit"


def _kernels(host: Host, path: str, errors: List[Dict[str, str]], cfg: Dict[str, Any]) -> Dict[str, Any]:
    kdir = _join(path, _KERNEL_DIR)
    socs = [n for n in host.listdir(kdir) if n != "config" and host.is_dir(_join(kdir, n))]
    configs = [
        n
        for n in host.listdir(_join(kdir, "config"))
        if host.exists(_join(kdir, "config", n, "binary_info_config.json"))
    ]
    version = None
    source = None
    inner = None
    requires: Dict[str, str] = {}
    info_path = _join(path, "opp_kernel", "version.info")
    text = _read(host, info_path, errors)
    if text is not None:
        info = component_version_info(text)
        version = info["version_dir"]
        inner = info["version"]
        requires = dict(info["required"])
        source = info_path
        if version is None:
            errors.append({"path": info_path, "error": "no version_dir= line"})
    if version is None:
        running = (cfg.get("opp_kernel") or {}).get("running") or []
        if running and running[0].get("public"):
            version = running[0]["public"]
            source = _join(path, "version.cfg")
    return {
        "socs": socs,
        "configs": configs,
        "version": version,
        "inner_version": inner,
        "requires": requires,
        "source": source,
        "installed": bool(socs or configs),
    }


def toolkit_record(host: Host, path: str, found_via: str) -> Dict[str, Any]:
    """Read the toolkit installed at ``path`` (a path of the diagnosed machine) into a
    toolkit record (shape in the module docstring).  Never raises."""
    path = host.display(path)
    errors: List[Dict[str, str]] = []
    installed = _install_infos(host, path, errors)
    cfg, components, cfg_versions, cfg_stated = _version_cfg(host, path, errors)
    comp_versions, comp_stated, requires = _component_infos(host, path, errors)
    resolved = _real_install_dir(host, path)
    # the first statement found, in this order, is the toolkit's version
    stated = installed.stated or cfg_stated or comp_stated or _dir_name_version(resolved)
    opp = _join(path, "opp")
    return {
        "path": path,
        "resolved": resolved,
        "kind": _kind(resolved, path, installed.package_name),
        "version": stated.version if stated else None,
        "inner_version": stated.inner if stated else None,
        "compatible_version": installed.accepts,
        "requires": requires,
        "arch": installed.arch,
        "source": stated.source if stated else None,
        "versions": {**installed.versions, **cfg_versions, **comp_versions},
        "components": components,
        "found_via": found_via,
        "aliases": [found_via] if found_via != path else [path],
        "opp_path": opp if host.is_dir(opp) else None,
        "kernels": _kernels(host, path, errors, cfg),
        "errors": errors,
        "set_env": _set_env(host, path),
    }


class _Stated(Record):
    """One statement of a toolkit's version: the version, where it is said (a file, or the
    install directory's name) and the inner (build) version said with it."""

    version: str
    source: str
    inner: Optional[str] = None


class _InstallInfo(Record):
    """What a toolkit's ``<arch>-linux/ascend_*_install.info`` files say: each file's
    version, the first readable one's statement, package name and compatible versions, and
    the architecture (that file's, else the directory's)."""

    versions: Dict[str, str]
    stated: Optional[_Stated]
    package_name: Optional[str]
    accepts: List[str]
    arch: Optional[str]


def _install_infos(host: Host, path: str, errors: List[Dict[str, str]]) -> _InstallInfo:
    """The :class:`_InstallInfo` of the toolkit at ``path``; unreadable or garbled files
    go to ``errors``."""
    versions: Dict[str, str] = {}
    stated: Optional[_Stated] = None
    arch: Optional[str] = None
    package_name: Optional[str] = None
    accepts: List[str] = []
    for adir in _arch_dirs(host, path):
        for info_path in host.glob(adir, prefix="ascend_", suffix="_install.info"):
            text = _read(host, info_path, errors)
            if text is None:
                continue
            info = toolkit_install_info(text)
            if info["version"] is None:
                errors.append({"path": info_path, "error": "no version= line (truncated or garbled)"})
                continue
            versions[info_path] = info["version"]
            if stated is None:
                stated = _Stated(info["version"], info_path, info["innerversion"])
                package_name = info["package_name"]
                accepts = list(info["compatible_version"])
                arch = _ARCH_ALIASES.get((info["arch"] or "").lower())
        if arch is None:
            arch = _ARCH_ALIASES.get(posixpath.basename(adir)[: -len("-linux")].lower())
    return _InstallInfo(versions, stated, package_name, accepts, arch)


def _version_cfg(
    host: Host, path: str, errors: List[Dict[str, str]]
) -> Tuple[Dict[str, Any], Dict[str, Any], Dict[str, str], Optional[_Stated]]:
    """The toolkit's ``version.cfg``: parsed, each package's running public version, and
    the toolkit's (or runtime's) running version as ``{file: version}`` and as a
    statement."""
    cfg_path = _join(path, "version.cfg")
    cfg_text = _read(host, cfg_path, errors)
    cfg = parse_version_cfg(cfg_text) if cfg_text is not None else {}
    if cfg_text is not None and not cfg:
        errors.append({"path": cfg_path, "error": "no <pkg>_running_version= line (truncated or garbled)"})
    components = {
        pkg: states["running"][0].get("public")
        for pkg, states in cfg.items()
        if states.get("running") and states["running"][0].get("public")
    }
    tk_running = (cfg.get("toolkit") or cfg.get("runtime") or {}).get("running") or []
    if tk_running and tk_running[0].get("public"):
        public = tk_running[0]["public"]
        return cfg, components, {cfg_path: public}, _Stated(public, cfg_path, tk_running[0].get("inner"))
    return cfg, components, {}, None


def _component_infos(
    host: Host, path: str, errors: List[Dict[str, str]]
) -> Tuple[Dict[str, str], Optional[_Stated], Dict[str, str]]:
    """The ``<component>/version.info`` files (toolkit, opp, runtime, compiler): each
    file's version, the first readable one's statement, and the versions of other
    packages the toolkit's file requires."""
    versions: Dict[str, str] = {}
    stated: Optional[_Stated] = None
    requires: Dict[str, str] = {}
    for component in ("toolkit", "opp", "runtime", "compiler"):
        info_path = _join(path, component, "version.info")
        text = _read(host, info_path, errors)
        if text is None:
            continue
        info = component_version_info(text)
        if info["version_dir"] is None:
            errors.append({"path": info_path, "error": "no version_dir= line (truncated or garbled)"})
            continue
        if component == "toolkit":
            requires = dict(info["required"])
        versions[info_path] = info["version_dir"]
        if stated is None:
            stated = _Stated(info["version_dir"], info_path, info["version"])
    return versions, stated, requires


def _dir_name_version(resolved: str) -> Optional[_Stated]:
    """The version an install directory's name states (``8.0.0``, ``cann-8.5.0``), if any."""
    name = posixpath.basename(resolved)
    guess = name[len("cann-") :] if name.startswith("cann-") else name
    if _VERSION_DIR.match(guess):
        return _Stated(guess, f"directory name {resolved}")
    return None


def _set_env(host: Host, path: str) -> Optional[str]:
    """The toolkit's ``set_env.sh`` (for ``.../latest``, also the one beside it), if any."""
    candidates = [_join(path, "set_env.sh")]
    if posixpath.basename(path) == "latest":
        candidates.append(_join(posixpath.dirname(path), "set_env.sh"))
    for candidate in candidates:
        if host.is_file(candidate):
            return candidate
    return None


def _ascend_roots(host: Host) -> List[Tuple[str, str]]:
    """``(Ascend root, how it was found)``: /usr/local/Ascend, ~/Ascend of $HOME, /home/*/Ascend,
    /home/*/work/Ascend (ModelArts), and the parent of each env-var toolkit."""
    roots: List[Tuple[str, str]] = [(ASCEND_ROOT, "default")]
    home = host.getenv("HOME")
    if home:
        roots.append((_join(home, "Ascend"), "$HOME"))
    homes = host.listdir("/home")[:_MAX_HOMES]
    for user in homes:
        roots.append((_join("/home", user, "Ascend"), "/home"))
        roots.append((_join("/home", user, "work", "Ascend"), "/home"))
    roots.append(("/root/Ascend", "/root"))
    seen = set()
    out = []
    for root, how in roots:
        if root not in seen and host.is_dir(root):
            seen.add(root)
            out.append((root, how))
    return out


def _candidates(host: Host) -> Tuple[List[Tuple[str, str]], List[str]]:
    """``(path, found_via)`` of every place a toolkit may live, most specific first,
    and the list of places searched."""
    out: List[Tuple[str, str]] = []
    searched: List[str] = []
    for var in ENV_VARS:
        value = (host.getenv(var) or "").strip()
        if value:
            out.append((value.rstrip("/") or "/", var))
            searched.append(f"${var}={value}")
    searched += [
        DEFAULT_TOOLKIT,
        _join(ASCEND_ROOT, "cann") + "[-<ver>]",
        _join(ASCEND_ROOT, "nnae"),
        _join(host.getenv("HOME") or "~", "Ascend"),
        "/home/*/Ascend",
    ]
    for root, _how in _ascend_roots(host):
        tk = _join(root, "ascend-toolkit")
        searched.append(tk)
        latest = _join(tk, "latest")
        out.append((latest, latest))
        for name in host.listdir(tk):
            if name not in ("latest", "set_env.sh") and host.is_dir(_join(tk, name)):
                out.append((_join(tk, name), _join(tk, name)))
        cann = _join(root, "cann")
        out.append((cann, cann))
        for name in host.listdir(root):
            if name.startswith("cann-"):
                out.append((_join(root, name), _join(root, name)))
        nnae = _join(root, "nnae")
        searched.append(nnae)
        out.append((_join(nnae, "latest"), _join(nnae, "latest")))
        for name in host.listdir(nnae):
            if name not in ("latest", "set_env.sh") and host.is_dir(_join(nnae, name)):
                out.append((_join(nnae, name), _join(nnae, name)))
    return out, searched


def _nnal_record(host: Host, atb_dir: str, found_via: str) -> Optional[Dict[str, Any]]:
    """NNAL record of ``<root>/nnal/atb`` (``None`` when there is no ATB there)."""
    if not host.is_dir(atb_dir):
        return None
    errors: List[Dict[str, str]] = []
    latest = _join(atb_dir, "latest")
    info_path = _join(latest, "version.info")
    text = _read(host, info_path, errors)
    info = nnal_version_info(text) if text is not None else {}
    if text is not None and not info.get("version"):
        errors.append({"path": info_path, "error": "no 'Ascend-cann-atb : <version>' line (truncated or garbled)"})
    abi_dirs = sorted(n for n in host.listdir(_join(latest, "atb")) if n.startswith("cxx_abi_"))
    return {
        "path": atb_dir,
        "resolved": host.resolve(latest),
        "version": info.get("version"),
        "build": info.get("build"),
        "platform": info.get("platform"),
        "source": info_path if info.get("version") else None,
        "abi_dirs": abi_dirs,
        "found_via": found_via,
        "set_env": _join(atb_dir, "set_env.sh") if host.is_file(_join(atb_dir, "set_env.sh")) else None,
        "errors": errors,
    }


def _nnal_from_env(value: str) -> Optional[str]:
    """The ``nnal/atb`` directory named by ``ATB_HOME_PATH``
    (``/usr/local/Ascend/nnal/atb/latest/atb/cxx_abi_0`` -> ``/usr/local/Ascend/nnal/atb``)."""
    value = value.rstrip("/")
    m = re.match(r"^(?P<atb>.*/atb)/latest(/.*)?$", value) or re.match(
        r"^(?P<atb>.*/atb)/[^/]+/atb/cxx_abi_[0-9]+$", value
    )
    if m:
        return m.group("atb")
    m = re.match(r"^(?P<atb>.*/nnal/atb)(/.*)?$", value)
    return m.group("atb") if m else None


def _env_fact(host: Host, name: str) -> Optional[Dict[str, Any]]:
    value = host.getenv(name)
    if value is None:
        return None
    return {"value": value, "exists": bool(value.strip()) and host.is_dir(value.strip())}


def probe(ctx: ProbeContext) -> Dict[str, Any]:
    host = ctx.host
    candidates, searched = _candidates(host)
    toolkits: List[Dict[str, Any]] = []
    by_resolved: Dict[str, Dict[str, Any]] = {}
    for path, via in candidates:
        if not _looks_like_toolkit(host, path):
            continue
        resolved = _real_install_dir(host, path)
        existing = by_resolved.get(resolved)
        if existing is not None:
            alias = via if via in ENV_VARS else host.display(path)
            if alias not in existing["aliases"]:
                existing["aliases"].append(alias)
            if via in ENV_VARS and existing["found_via"] not in ENV_VARS:
                existing["found_via"] = via
            continue
        record = toolkit_record(host, path, via)
        if via in ENV_VARS:
            record["aliases"] = [via]
        by_resolved[resolved] = record
        toolkits.append(record)

    env = {name: _env_fact(host, name) for name in ENV_VARS + ("ASCEND_OPP_PATH", "ATB_HOME_PATH")}

    selected = None
    selected_via = None
    for var in ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH"):
        fact = env.get(var)
        if fact and fact["exists"]:
            selected = next((t for t in toolkits if var in t["aliases"]), None)
            if selected is not None:
                selected_via = var
                break
    if selected is None:
        for default in (DEFAULT_TOOLKIT, _join(ASCEND_ROOT, "cann")):
            selected = next((t for t in toolkits if default in t["aliases"] or t["path"] == default), None)
            if selected is not None:
                selected_via = "default"
                break
    if selected is None and len(toolkits) == 1:
        selected, selected_via = toolkits[0], "only"

    nnal_all: List[Dict[str, Any]] = []
    seen_nnal = set()
    atb_env = (host.getenv("ATB_HOME_PATH") or "").strip()
    nnal_candidates: List[Tuple[str, str]] = []
    if atb_env:
        derived = _nnal_from_env(atb_env)
        if derived:
            nnal_candidates.append((derived, "ATB_HOME_PATH"))
    for root, _how in _ascend_roots(host):
        nnal_candidates.append((_join(root, "nnal", "atb"), _join(root, "nnal", "atb")))
    for tk in toolkits:
        root = posixpath.dirname(posixpath.dirname(tk["path"]))
        nnal_candidates.append((_join(root, "nnal", "atb"), _join(root, "nnal", "atb")))
    for atb_dir, via in nnal_candidates:
        key = host.resolve(atb_dir)
        if key in seen_nnal:
            continue
        nnal = _nnal_record(host, atb_dir, via)
        if nnal is not None:
            seen_nnal.add(key)
            nnal_all.append(nnal)
        searched.append(atb_dir)

    mindie = None
    atb_models = None
    for root, _how in _ascend_roots(host):
        for name, target in (("mindie/latest/version.info", "mindie"), ("atb-models/version.info", "atb_models")):
            path = _join(root, name)
            errs: List[Dict[str, str]] = []
            text = _read(host, path, errs)
            if text is None:
                continue
            info = mindie_version_info(text)
            fact = {"path": posixpath.dirname(path), "version": info["version"], "source": path, "errors": errs}
            if target == "mindie" and mindie is None:
                fact["components"] = info["components"]
                mindie = fact
            elif target == "atb_models" and atb_models is None:
                atb_models = fact

    return {
        "toolkits": toolkits,
        "selected": selected,
        "selected_via": selected_via,
        "env": env,
        "nnal": nnal_all[0] if nnal_all else None,
        "nnal_all": nnal_all,
        "mindie": mindie,
        "atb_models": atb_models,
        "searched": _dedupe(searched),
    }


def _dedupe(items: List[str]) -> List[str]:
    seen = set()
    out = []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out
