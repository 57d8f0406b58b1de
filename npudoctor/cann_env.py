"""What sourcing a CANN toolkit's (and NNAL's) ``set_env.sh`` sets -- computed, never run.

Public API: :func:`expected_environment`.  Used by the ``environment`` probe (what is
missing or stale in the diagnosed environment) and by ``npudoctor exec`` / ``npudoctor
env`` (the environment to run a command in without sourcing anything).

How the values are obtained, in order:

1. the toolkit's ``set_env.sh`` (``<toolkit>/set_env.sh`` for the CANN 8.5+
   ``cann-<ver>`` layout, ``<toolkit>/../set_env.sh`` for the classic
   ``ascend-toolkit/{latest,<ver>}`` layout) interpreted statically by
   :mod:`npudoctor.parsers.set_env`.  When the script names another install than the
   toolkit asked for (``ascend-toolkit/set_env.sh`` hard-codes ``.../latest``), its
   values are *rebased* onto the requested toolkit;
2. without a readable script: the variables the CANN documentation lists (sample
   ``tests/fixtures/set_env_toolkit_8.0.0.sh.txt``):
   ``ASCEND_TOOLKIT_HOME``, ``ASCEND_HOME_PATH``, ``ASCEND_AICPU_PATH``,
   ``ASCEND_OPP_PATH``, ``TOOLCHAIN_HOME``, ``LD_LIBRARY_PATH`` += ``<driver>/lib64``,
   ``<driver>/lib64/common``, ``<driver>/lib64/driver``, ``<toolkit>/lib64``,
   ``<toolkit>/lib64/plugin/opskernel``, ``<toolkit>/lib64/plugin/nnengine``,
   ``<toolkit>/opp/built-in/op_impl/ai_core/tbe/op_tiling/lib/linux/<arch>``,
   ``PYTHONPATH`` += ``<toolkit>/python/site-packages``,
   ``<toolkit>/opp/built-in/op_impl/ai_core/tbe``, ``PATH`` += ``<toolkit>/bin``,
   ``<toolkit>/compiler/ccec_compiler/bin``.

NNAL's ``nnal/atb/set_env.sh`` picks ``cxx_abi_0``/``cxx_abi_1`` by running
``python3 -c 'import torch; print(torch.compiled_with_cxx11_abi())'``, which cannot be
evaluated statically; its effect is computed from the documented result (seen in
``env-vars_vllm-ascend-collect_env_CANN8.5.0-new-layout_A3.txt``):
``ATB_HOME_PATH=<nnal>/atb/latest/atb/cxx_abi_<N>`` and ``LD_LIBRARY_PATH`` +=
``$ATB_HOME_PATH/lib``, ``$ATB_HOME_PATH/examples``, ``$ATB_HOME_PATH/tests/atbopstest``,
``PATH`` += ``$ATB_HOME_PATH/bin``.
"""

from __future__ import annotations

import posixpath
from typing import Any, Dict, List, Mapping, Optional

from npudoctor import lazyre

#: Variables whose value is a ``:`` list that set_env.sh prepends to.
PATH_VARS = ("LD_LIBRARY_PATH", "PYTHONPATH", "PATH")

DEFAULT_DRIVER = "/usr/local/Ascend/driver"


#: A path component naming a CANN install root (classic, 8.5+ and nnae layouts).
_CANN_ROOT_RE = lazyre.pattern(r"^(?P<root>.*?/(?:ascend-toolkit/[^/]+|cann-[^/]+|cann|nnae/[^/]+))(?:/|$)")


def cann_root(path: str) -> Optional[str]:
    """The CANN install root a path lies in by its shape alone (``/x/ascend-toolkit/7.0.RC1``
    of ``/x/ascend-toolkit/7.0.RC1/lib64``; ``cann-<ver>``, ``cann``, ``nnae/<ver>``), or
    ``None`` when no component names one.  NNAL paths are no CANN install: ``None``."""
    m = _CANN_ROOT_RE.match(path or "")
    if m is None or "/nnal/" in path:
        return None
    return m.group("root")


def _norm(path: str) -> str:
    return posixpath.normpath(path) if path else path


def _split(value: Optional[str]) -> List[str]:
    return [p for p in (value or "").split(":") if p]


def driver_path(host: Any) -> str:
    """The driver install directory: ``Driver_Install_Path_Param`` of
    ``/etc/ascend_install.info`` + ``/driver`` (the key CANN 9 ``set_env.sh`` reads),
    else ``/usr/local/Ascend/driver``."""
    read = host.read_text("/etc/ascend_install.info")
    for line in (read.text or "").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip().lower() == "driver_install_path_param" and value.strip():
            return _norm(posixpath.join(value.strip().strip("\"'"), "driver"))
    return DEFAULT_DRIVER


def set_env_candidates(toolkit_path: str) -> List[str]:
    """Where the ``set_env.sh`` of a toolkit may live, in the order tried (paths of the
    diagnosed machine; none of them need exist).

    1. ``<toolkit>/set_env.sh``: the CANN 8.5+ layout (``cann-<ver>/set_env.sh``, and
       through the ``cann`` and ``ascend-toolkit/latest`` symlinks);
    2. for a ``cann`` / ``cann-<ver>`` toolkit: the sibling ``cann/set_env.sh`` and the
       compatibility entry point ``ascend-toolkit/set_env.sh`` (the 8.5+ layout of
       the official CANN images: ``/usr/local/Ascend/cann/set_env.sh`` or
       ``cann-<ver>/set_env.sh``, and ``ascend-toolkit/set_env.sh`` still works);
    3. ``<toolkit>/../set_env.sh``: the classic ``ascend-toolkit/set_env.sh`` next to
       ``ascend-toolkit/{latest,<ver>}`` (and ``nnae/set_env.sh``).
    """
    tk = _norm(toolkit_path)
    parent = posixpath.dirname(tk)
    out = [posixpath.join(tk, "set_env.sh")]
    name = posixpath.basename(tk)
    if name == "cann" or name.startswith("cann-"):
        out.append(posixpath.join(parent, "cann", "set_env.sh"))
        out.append(posixpath.join(parent, "ascend-toolkit", "set_env.sh"))
    out.append(posixpath.join(parent, "set_env.sh"))
    seen: List[str] = []
    for c in out:
        if c not in seen:
            seen.append(c)
    return seen


def toolkit_arch(host: Any, toolkit_path: str) -> Optional[str]:
    """The CPU architecture a toolkit was installed for (``"aarch64"`` | ``"x86_64"``),
    read from the toolkit itself: the ``arch=`` line of
    ``<toolkit>/<arch>-linux/ascend_toolkit_install.info``, else the one
    ``<arch>-linux`` directory present (``arm64-linux`` is a symlink to
    ``aarch64-linux`` in the classic layout).  ``None`` when neither tells.

    Used where ``uname -m`` of the diagnosed machine is unknown (``--root`` over a tree
    without system binaries), as ``npudoctor env --root`` does."""
    tk = _norm(toolkit_path)
    present = [a for a in ("aarch64", "x86_64") if host.is_dir(posixpath.join(tk, f"{a}-linux"))]
    for a in present:
        read = host.read_text(posixpath.join(tk, f"{a}-linux", "ascend_toolkit_install.info"))
        for line in (read.text or "").splitlines():
            key, sep, value = line.partition("=")
            if sep and key.strip() == "arch" and value.strip() in ("aarch64", "x86_64"):
                return value.strip()
    return present[0] if len(present) == 1 else None


def documented_variables(toolkit_path: str, driver: str = DEFAULT_DRIVER, arch: str = "x86_64") -> Dict[str, Any]:
    """The documented ``set_env.sh`` effect for ``toolkit_path``: ``{"set": {name: value},
    "prepend": {LD_LIBRARY_PATH|PYTHONPATH|PATH: [entries]}}``."""
    tk = _norm(toolkit_path)
    return {
        "set": {
            "ASCEND_TOOLKIT_HOME": tk,
            "ASCEND_HOME_PATH": tk,
            "ASCEND_AICPU_PATH": tk,
            "ASCEND_OPP_PATH": f"{tk}/opp",
            "TOOLCHAIN_HOME": f"{tk}/toolkit",
        },
        "prepend": {
            "LD_LIBRARY_PATH": [
                f"{tk}/lib64",
                f"{tk}/lib64/plugin/opskernel",
                f"{tk}/lib64/plugin/nnengine",
                f"{tk}/opp/built-in/op_impl/ai_core/tbe/op_tiling/lib/linux/{arch}",
                f"{driver}/lib64",
                f"{driver}/lib64/common",
                f"{driver}/lib64/driver",
            ],
            "PYTHONPATH": [f"{tk}/python/site-packages", f"{tk}/opp/built-in/op_impl/ai_core/tbe"],
            "PATH": [f"{tk}/bin", f"{tk}/compiler/ccec_compiler/bin"],
        },
    }


def _added_entries(new: Optional[str], old: Optional[str]) -> List[str]:
    """Entries of ``new`` that the script added (those not in ``old``), in order."""
    before = set(_split(old))
    out: List[str] = []
    for p in _split(new):
        if p not in before and p not in out:
            out.append(p)
    return out


def _rebase(value: str, old_home: str, new_home: str) -> str:
    parts = []
    for p in value.split(":"):
        if p == old_home or p.startswith(old_home + "/"):
            p = new_home + p[len(old_home) :]
        parts.append(p)
    return ":".join(parts)


def _compose(environ: Mapping[str, str], set_vars: Dict[str, str], prepend: Dict[str, List[str]]) -> Dict[str, str]:
    env = dict(environ)
    env.update(set_vars)
    for name, entries in prepend.items():
        rest = [p for p in _split(environ.get(name)) if p not in entries]
        env[name] = ":".join(list(entries) + rest)
    return env


def nnal_variables(host: Any, nnal_path: str, cxx11_abi: Optional[bool] = None) -> Dict[str, Any]:
    """The effect of ``<nnal>/set_env.sh`` (``nnal_path`` is the ``nnal/atb`` directory;
    ``nnal`` or ``nnal/atb/latest`` are accepted too).

    ``cxx11_abi``: torch's ``compiled_with_cxx11_abi()`` when known (from the torch
    libraries' symbols); ``None`` takes the ABI directory that exists, preferring
    ``cxx_abi_1`` (pip torch wheels use the C++11 ABI since torch 2.7 on x86_64).
    Returns ``{"set": {"ATB_HOME_PATH": ...}, "prepend": {...}, "abi": 0|1|None,
    "atb_home": path, "abi_dirs": [...]}``."""
    base = _norm(nnal_path)
    if posixpath.basename(base) == "latest":
        base = posixpath.dirname(base)
    if posixpath.basename(base) == "nnal" or host.is_dir(posixpath.join(base, "atb", "latest")):
        base = posixpath.join(base, "atb")
    atb_root = posixpath.join(base, "latest", "atb")
    abi_dirs = [d for d in ("cxx_abi_0", "cxx_abi_1") if host.is_dir(posixpath.join(atb_root, d))]
    if cxx11_abi is not None:
        abi: Optional[int] = 1 if cxx11_abi else 0
    elif "cxx_abi_1" in abi_dirs or not abi_dirs:
        abi = 1
    else:
        abi = 0
    home = posixpath.join(atb_root, f"cxx_abi_{abi}")
    return {
        "set": {"ATB_HOME_PATH": home},
        "prepend": {
            "LD_LIBRARY_PATH": [f"{home}/lib", f"{home}/examples", f"{home}/tests/atbopstest"],
            "PATH": [f"{home}/bin"],
        },
        "abi": abi if cxx11_abi is not None else None,
        "atb_home": home,
        "abi_dirs": abi_dirs,
        "script": posixpath.join(base, "set_env.sh") if host.is_file(posixpath.join(base, "set_env.sh")) else None,
    }


def expected_environment(
    host: Any,
    toolkit_path: str,
    nnal_path: Optional[str] = None,
    environ: Optional[Mapping[str, str]] = None,
    arch: Optional[str] = None,
    cxx11_abi: Optional[bool] = None,
) -> Dict[str, Any]:
    """What ``source <toolkit>/../set_env.sh`` (and NNAL's) would set.

    ``host``: a :class:`npudoctor.host.Host` (files are read through it, nothing is
    executed); ``toolkit_path``: the toolkit directory as the diagnosed machine sees it
    (``/usr/local/Ascend/ascend-toolkit/latest``, ``/usr/local/Ascend/cann-8.5.0``);
    ``nnal_path``: the ``nnal/atb`` directory or ``None``; ``environ``: the environment
    sourced into (default ``host.environ``); ``arch``: ``uname -m`` of the diagnosed
    machine (default: ``x86_64``; callers diagnosing a ``--root`` pass the diagnosed
    machine's, see :func:`toolkit_arch`); ``cxx11_abi``: torch's C++ ABI for NNAL.

    Returns a dict::

        toolkit      the toolkit path asked for
        method       "set_env.sh" | "set_env.sh (rebased)" | "documented"
        script       path of the set_env.sh evaluated, or None
        unsupported  [{"line", "text"}] constructs of the script that were skipped
                     (line: the 1-based line number in the script)
        fallback     None, or why the documented list was used (no script found: the
                     paths looked at; a script that cannot be read; a script that sets
                     no ASCEND_TOOLKIT_HOME/ASCEND_HOME_PATH that can be evaluated)
        variables    {name: value} every variable set (PATH-like ones in full, i.e.
                     the script's entries followed by the previous value)
        added        {LD_LIBRARY_PATH|PYTHONPATH|PATH: [entries the scripts add]}
        environ      the whole resulting environment (for `npudoctor exec`)
        nnal         None | {"atb_home", "abi", "abi_dirs", "script"}

    Never raises for odd files (a broken script falls back to the documented list).
    """
    from npudoctor.parsers.set_env import evaluate

    base_env: Dict[str, str] = dict(host.environ if environ is None else environ)
    arch = arch or "x86_64"
    tk = _norm(toolkit_path)
    driver = driver_path(host)
    candidates = set_env_candidates(tk)
    script = next((c for c in candidates if host.is_file(c)), None)
    method = "documented"
    fallback: Optional[str] = None
    unsupported: List[Dict[str, Any]] = []
    variables: Dict[str, str] = {}
    added: Dict[str, List[str]] = {}
    env = dict(base_env)
    if script is not None:
        read = host.read_text(script)
        if read.ok:
            result = evaluate(read.text or "", script, base_env, arch=arch, fs=host)
            unsupported = result.to_dict()["unsupported"]
            home = result.variables.get("ASCEND_TOOLKIT_HOME") or result.variables.get("ASCEND_HOME_PATH")
            if home:
                method = "set_env.sh"
                values = {n: result.variables[n] for n in result.exported if n in result.variables}
                if _norm(home) != tk and host.resolve(home) != host.resolve(tk):
                    method = "set_env.sh (rebased)"
                    values = {n: _rebase(v, _norm(home), tk) for n, v in values.items()}
                variables = values
                added = {n: _added_entries(values.get(n), base_env.get(n)) for n in PATH_VARS if n in values}
                env = dict(base_env)
                env.update(values)
            else:
                fallback = f"{script} sets neither ASCEND_TOOLKIT_HOME nor ASCEND_HOME_PATH in a way npudoctor can read"
        else:
            fallback = f"{script} cannot be read ({read.error})"
    else:
        fallback = "no set_env.sh found (looked for " + ", ".join(candidates) + ")"
    if method == "documented":
        doc = documented_variables(tk, driver, arch)
        env = _compose(base_env, doc["set"], doc["prepend"])
        variables = dict(doc["set"])
        variables.update({n: env[n] for n in doc["prepend"]})
        added = {n: list(v) for n, v in doc["prepend"].items()}
    nnal: Optional[Dict[str, Any]] = None
    if nnal_path:
        nv = nnal_variables(host, nnal_path, cxx11_abi)
        before = dict(env)
        env = _compose(before, nv["set"], nv["prepend"])
        variables.update(nv["set"])
        for name, entries in nv["prepend"].items():
            variables[name] = env[name]
            added[name] = list(entries) + [e for e in added.get(name, []) if e not in entries]
        nnal = {k: nv[k] for k in ("atb_home", "abi", "abi_dirs", "script")}
    return {
        "toolkit": tk,
        "method": method,
        "script": script,
        "unsupported": unsupported,
        "fallback": fallback,
        "variables": variables,
        "added": added,
        "environ": env,
        "nnal": nnal,
        "driver": driver,
    }
