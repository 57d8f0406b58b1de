"""The CANN environment: what ``set_env.sh`` of the selected toolkit (and NNAL's) would
set, against what the diagnosed environment holds now.

Section ``environment`` (QUICK).  The toolkit comes from
``facts["cann"]["selected"]`` (its ``path``/``version``/``resolved``); without the cann
section, from ``ASCEND_TOOLKIT_HOME`` or the default
``/usr/local/Ascend/ascend-toolkit/latest`` when that directory exists.  The expected
values come from :func:`npudoctor.cann_env.expected_environment` (the script is read and
interpreted, never run).  Keys::

    toolkit        {"path", "version", "resolved", "source"} | None (None: no toolkit,
                   nothing else is computed)
    expected       {"method", "script", "unsupported", "fallback", "variables", "added",
                    "driver", "nnal"}  (see cann_env.expected_environment; "environ" left out)
    arch, arch_source  ``uname -m`` of the diagnosed machine used for ``$(arch)`` in
                   set_env.sh: the host probe's, else the toolkit's own
                   (``<arch>-linux``), else the packages' platform tags, else x86_64
    set_env_script path | None: an existing set_env.sh that sets up this toolkit, the one
                   fixes tell to source (None: fixes give export lines instead)
    current        {name: value} of the CANN-related variables set now (ASCEND_*, ATB_*,
                   TOOLCHAIN_HOME, LD_LIBRARY_PATH, PYTHONPATH, PATH, LD_PRELOAD)
    paths          {path: {"resolved", "exists", "is_dir"}}: how the root resolves each
                   value the rules compare -- the current and expected
                   ASCEND_*/TOOLCHAIN_HOME values, every LD_LIBRARY_PATH/PYTHONPATH/PATH
                   entry, every entry set_env.sh adds to them, <toolkit>/lib64, NNAL's
                   <ATB_HOME_PATH>/lib, the toolkit and every install path, and the CANN
                   install root each names by its shape.  Which variables are unset,
                   custom or point into another install, whether a set_env.sh was
                   sourced, which added entries are missing and whether NNAL's lib is on
                   LD_LIBRARY_PATH are judged by rules/_env_vars.py (older snapshots'
                   ``missing_vars``, ``differs``, ``stale``, ``sourced``,
                   ``missing_paths`` and ``nnal.lib_on_path`` are ignored)
    toolkit_python {"site_packages": dir | None, "te": dir | None, "tbe": dir | None}
                   CANN's own Python packages inside the toolkit
    nnal           None | {"path", "version", "expected_atb_home", "current_atb_home",
                   "current_abi": 0|1|None, "torch_cxx11_abi": bool|None,
                   "torch_abi_source", "abi_dirs": [...]}
    torch_cxx11_abi  bool | None   torch's C++11 ABI, read from the mangling of c10's own
                   std::string exports in libc10.so (npudoctor.parsers.cxxabi)
                   without importing torch
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Dict, List, Optional, Tuple

from npudoctor import lazyre
from npudoctor.context import ProbeContext
from npudoctor.host import Host
from npudoctor.probes import mapping

SECTION = "environment"
NEEDS = ("host", "python", "packages", "cann")
QUICK = True

DEFAULT_TOOLKIT = "/usr/local/Ascend/ascend-toolkit/latest"
SCALAR_VARS = ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH", "ASCEND_OPP_PATH", "ASCEND_AICPU_PATH", "TOOLCHAIN_HOME")
PATH_VARS = ("LD_LIBRARY_PATH", "PYTHONPATH", "PATH")
_CURRENT_RE = lazyre.pattern(r"^(ASCEND_|ATB_|TOOLCHAIN_HOME$|LD_LIBRARY_PATH$|PYTHONPATH$|PATH$|LD_PRELOAD$)")


def _norm(path: str) -> str:
    return posixpath.normpath(path) if path else path


def _under(path: str, root: str) -> bool:
    return bool(root) and (path == root or path.startswith(root.rstrip("/") + "/"))


def _select_toolkit(ctx: ProbeContext) -> Optional[Dict[str, Any]]:
    cann = ctx.facts.get("cann")
    if isinstance(cann, dict) and "selected" in cann:
        sel = cann.get("selected")
        if isinstance(sel, dict) and sel.get("path"):
            return {
                "path": _norm(str(sel["path"])),
                "version": sel.get("version"),
                "resolved": sel.get("resolved"),
                "source": "cann.selected",
                "set_env": sel.get("set_env"),
            }
        return None
    host = ctx.host
    for var in ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH"):
        value = (host.getenv(var) or "").strip()
        if value and host.is_dir(value):
            return {"path": _norm(value), "version": None, "resolved": host.resolve(value), "source": var}
    if host.is_dir(DEFAULT_TOOLKIT):
        return {
            "path": DEFAULT_TOOLKIT,
            "version": None,
            "resolved": host.resolve(DEFAULT_TOOLKIT),
            "source": "default",
        }
    return None


def torch_cxx11_abi(host: Host, facts: Dict[str, Any]) -> Tuple[Optional[bool], Optional[str]]:
    """torch's ``compiled_with_cxx11_abi()`` without importing torch: the mangling of c10's
    own ``std::string`` exports in ``torch/lib/libc10.so`` of the installed torch
    (:func:`npudoctor.parsers.cxxabi.torch_cxx11_abi`; never "``__cxx11`` anywhere", which
    every real libc10.so holds).  ``(abi, path of libc10.so)``; ``(None, None)`` when torch
    or the library is absent, ``(None, path)`` when its symbols do not tell."""
    from npudoctor.parsers.cxxabi import torch_cxx11_abi as abi_of

    installed = (facts.get("packages") or {}).get("installed") or {}
    for record in installed.get("torch") or []:
        location = record.get("location") if isinstance(record, dict) else None
        if not location:
            continue
        lib = posixpath.join(location, "torch", "lib", "libc10.so")
        data, _err, _trunc = host.read_bytes(lib, limit=64 << 20)
        if data and data[:4] == b"\x7fELF":
            return abi_of(data)[0], lib
    return None, None


def _read_path(host: Host, paths: Dict[str, Dict[str, Any]], value: str) -> None:
    """Record how the root resolves ``value`` (as given and normalized) and the CANN
    install root its shape names (:func:`npudoctor.cann_env.cann_root`), and whether it
    exists, in ``paths``."""
    from npudoctor.cann_env import cann_root

    norm = _norm(value)
    for path in (value, norm, cann_root(norm)):
        if path and path not in paths:
            paths[path] = {"resolved": host.resolve(path), "exists": host.exists(path), "is_dir": host.is_dir(path)}


def _arch(ctx: ProbeContext, toolkit: Dict[str, Any]) -> Tuple[str, str]:
    """``uname -m`` of the diagnosed machine and where it came from: ``facts["host"]["arch"]``
    (the host probe), else the selected toolkit's own arch (``facts["cann"]["selected"]
    ["arch"]``, or its ``<arch>-linux`` install info), else the WHEEL platform tag of the
    target interpreter's packages (``facts["python"]["machine"]``), else ``x86_64``."""
    from npudoctor.cann_env import toolkit_arch

    host_arch = (ctx.facts.get("host") or {}).get("arch")
    if host_arch:
        return str(host_arch), "host"
    sel = mapping(mapping(ctx.facts.get("cann")).get("selected"))
    if sel.get("arch") in ("aarch64", "x86_64"):
        return str(sel["arch"]), "the toolkit's install info"
    found = toolkit_arch(ctx.host, toolkit["path"])
    if found:
        return found, f"{toolkit['path']}/{found}-linux"
    machine = (ctx.facts.get("python") or {}).get("machine")
    if machine in ("aarch64", "x86_64"):
        return str(machine), "the Python packages' platform tags"
    return "x86_64", "default (unknown)"


def _script_rank(path: str) -> Tuple[bool, bool, int]:
    """Sort key of equivalent set_env.sh paths: the stable ``cann/set_env.sh`` or
    ``ascend-toolkit/set_env.sh`` before paths through ``latest`` or a versioned
    ``cann-<ver>`` directory."""
    parts = path.split("/")
    return ("latest" in parts, any(c.isdecimal() for c in posixpath.basename(posixpath.dirname(path))), len(path))


def _set_env_script(
    host: Host, toolkit: Dict[str, Any], selected: Optional[Dict[str, Any]], evaluated: Optional[str]
) -> Optional[str]:
    """The ``set_env.sh`` to tell users to source, or ``None`` when no such file exists in
    the diagnosed root.  Looked for next to the toolkit, its parent and the ``cann`` /
    ``ascend-toolkit`` siblings (:func:`npudoctor.cann_env.set_env_candidates`) of the
    toolkit path, its aliases and the directory it resolves to.  The script npudoctor
    evaluated wins; among paths to that same file the stable one is named
    (``/usr/local/Ascend/cann/set_env.sh`` rather than ``ascend-toolkit/latest/set_env.sh``
    or ``cann-8.5.0/set_env.sh``).  (The caller passes no script for a toolkit whose
    set_env.sh sets up another install, e.g. ``ascend-toolkit/set_env.sh`` naming
    ``latest`` while ``ascend-toolkit/8.0.0`` is in use: sourcing it would select the
    other one.)"""
    from npudoctor.cann_env import set_env_candidates

    roots = [toolkit["path"]]
    for rec in (selected or {}, toolkit):
        for alias in rec.get("aliases") or []:
            if isinstance(alias, str) and alias.startswith("/"):
                roots.append(alias)
        if rec.get("resolved"):
            roots.append(str(rec["resolved"]))
    found: List[str] = []
    for root in roots:
        for cand in set_env_candidates(root):
            if cand not in found and host.is_file(cand):
                found.append(cand)
    if evaluated and host.is_file(evaluated):
        real = host.resolve(evaluated)
        same = [f for f in found if host.resolve(f) == real] or [evaluated]
        return sorted(same, key=_script_rank)[0]
    return found[0] if found else None


def probe(ctx: ProbeContext) -> Dict[str, Any]:
    from npudoctor.cann_env import expected_environment

    host = ctx.host
    current = {k: v for k, v in sorted(host.environ.items()) if _CURRENT_RE.match(k)}
    abi, abi_source = torch_cxx11_abi(host, ctx.facts)
    toolkit = _select_toolkit(ctx)
    out: Dict[str, Any] = {"toolkit": toolkit, "current": current, "torch_cxx11_abi": abi}
    if toolkit is None:
        return out
    cann = mapping(ctx.facts.get("cann"))
    installs = [t for t in (cann.get("toolkits") or []) if isinstance(t, dict)]
    selected_rec = cann.get("selected") if isinstance(cann.get("selected"), dict) else None
    nnal_rec = cann.get("nnal") if isinstance(cann.get("nnal"), dict) else None
    arch, arch_source = _arch(ctx, toolkit)
    out["arch"] = arch
    out["arch_source"] = arch_source
    expected = expected_environment(
        host,
        toolkit["path"],
        nnal_path=nnal_rec.get("path") if nnal_rec else None,
        arch=arch,
        cxx11_abi=abi,
    )
    expected.pop("environ", None)
    out["expected"] = expected
    out["set_env_script"] = (
        None
        if expected.get("method") == "set_env.sh (rebased)"
        else _set_env_script(host, toolkit, selected_rec, expected.get("script"))
    )
    # How the root resolves every value the rules compare (rules/_env_vars.py judges
    # which variables are unset, custom or stale from these and `current`).
    paths: Dict[str, Dict[str, Any]] = {}
    variables = expected.get("variables") or {}
    for name in SCALAR_VARS:
        for value in (host.getenv(name), variables.get(name)):
            if value:
                _read_path(host, paths, str(value))
    for name in PATH_VARS:
        for entry in host.env_paths(name):
            _read_path(host, paths, entry)
    _read_path(host, paths, toolkit["path"])
    for rec in installs:
        _read_path(host, paths, str(rec.get("path") or "/"))

    added = expected.get("added") or {}
    for name in PATH_VARS:
        for entry in added.get(name) or []:
            _read_path(host, paths, str(entry))
    tk = toolkit["path"]
    _read_path(host, paths, posixpath.join(tk, "lib64"))

    site = posixpath.join(tk, "python", "site-packages")
    toolkit_python = {
        "site_packages": site if host.is_dir(site) else None,
        "te": posixpath.join(site, "te") if host.is_dir(posixpath.join(site, "te")) else None,
        "tbe": posixpath.join(site, "tbe") if host.is_dir(posixpath.join(site, "tbe")) else None,
    }

    nnal: Optional[Dict[str, Any]] = None
    if nnal_rec is not None and expected.get("nnal"):
        exp_n = expected["nnal"]
        cur_home = (host.getenv("ATB_HOME_PATH") or "").strip() or None
        m = re.search(r"cxx_abi_([01])", cur_home or "")
        _read_path(host, paths, posixpath.join(cur_home or exp_n["atb_home"], "lib"))
        nnal = {
            "path": nnal_rec.get("path"),
            "version": nnal_rec.get("version"),
            "script": exp_n.get("script"),
            "expected_atb_home": exp_n["atb_home"],
            "current_atb_home": cur_home,
            "current_abi": int(m.group(1)) if m else None,
            "torch_cxx11_abi": abi,
            "torch_abi_source": abi_source,
            "abi_dirs": exp_n.get("abi_dirs") or [],
        }

    out.update(
        {
            "paths": paths,
            "toolkit_python": toolkit_python,
            "nnal": nnal,
        }
    )
    return out
