"""The target Python interpreter: version, venv/conda, site directories, shadowing.

Section ``python`` (QUICK).  How the facts are obtained (``source``):

* ``"live"`` -- the interpreter running npudoctor, read in-process by
  :func:`npudoctor.probes.pyprobe_script.collect` (no subprocess);
* ``"--python"`` -- ``<PATH> -c <pyprobe_script source>`` run through ``ctx.host.run``
  with the diagnosed environment and a timeout; its JSON line is parsed.  Nothing is
  imported there besides the standard library;
* ``"root"`` -- under ``--root`` nothing is executed: environments are found on disk
  (see :func:`discover_environments`) and one is selected as the target.

Keys (``None`` where unknown)::

    source          "live" | "--python" | "root"
    error           why the interpreter could not be inspected (then most keys are absent)
    version         "3.10.12" (under --root may be "3.10" when only lib/python3.10 is known)
    version_info    [3, 10, 12] (or [3, 10])
    version_source  where the version came from (e.g. "pyvenv.cfg", "lib/python3.10 directory")
    implementation  "cpython"
    machine         "aarch64" | "x86_64"   (--root: host.arch, else the platform tags of
                    the installed wheels; machine_source says which)
    executable      path of the interpreter (of the diagnosed machine)
    prefix, base_prefix
    base_executable (--root, venvs) pyvenv.cfg ``home``/pythonX.Y: the interpreter the
                    venv was made from (None elsewhere)
    is_venv         bool
    conda_prefix    prefix of the conda env (has conda-meta/) or None
    conda_env       "base" | env name | None
    site_packages   [dirs]     the env's own site-packages/dist-packages
    user_site       ~/.local/lib/pythonX.Y/site-packages or None
    user_site_enabled  bool (False in a venv without system site packages)
    sys_path        [dirs] import order ("" = current directory); under --root:
                    PYTHONPATH, then (venv) its own site dirs, the user site, the system
                    site dirs, or (no venv) the user site and the site dirs, each site
                    dir followed by its .pth additions
    glibc           "2.35" (the target interpreter's libc; --root: host.glibc)
    cwd             working directory of the diagnosed process (live: os.getcwd();
                    --root: $PWD of the scenario environment), cwd_source
    shadowing       {"torch_npu": {...}, "torch": {...}} for each: origin (dir of the
                    package import would pick), origin_in_cwd (bool), has_extension (a
                    _C*.so next to __init__.py), installed (dir of the first package of
                    that name outside the cwd, or None), shadowed (bool: import would
                    take the cwd copy instead of the installed one, or a cwd copy
                    without its compiled _C)
    environments    (--root only) every environment found: [{prefix, kind, version,
                    site_packages, has_torch, has_torch_npu}]; the selected one is
                    ``prefix``
"""

from __future__ import annotations

import os
import posixpath
from typing import TYPE_CHECKING

from npudoctor import lazyre
from npudoctor.context import ProbeContext
from npudoctor.host import Host
from npudoctor.knowledge.versions import python_release
from npudoctor.parsers import jsontext

if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple

SECTION = "python"
NEEDS = ("host",)
QUICK = True

#: Seconds the target interpreter may take to answer (a cold conda env on NFS is slow).
PROBE_TIMEOUT = 20.0

#: Grammars of file and directory names (``lib/python3.11``, ``/usr/local/python3.11.4``,
#: ``conda-meta/python-3.11.4-*.json``), not version helpers: the text they read is
#: ``knowledge.versions.python_release``'s.
_PYDIR_RE = lazyre.pattern(r"^python([0-9]{1,9})\.([0-9]{1,9})t?$")
_USR_LOCAL_PY_RE = lazyre.pattern(r"^python([0-9]{1,9})\.([0-9]{1,9})(?:\.([0-9]{1,9}))?$")
_CONDA_PY_RE = lazyre.pattern(r"^python-([0-9]{1,9})\.([0-9]{1,9})\.([0-9]{1,9})-")

#: Conda installations looked for under --root (besides $HOME/<name>).
_CONDA_ROOTS = ("/opt/conda", "/opt/miniconda3", "/opt/anaconda3", "/opt/miniforge3", "/opt/mambaforge")
_CONDA_HOME_NAMES = ("miniconda3", "anaconda3", "miniforge3", "mambaforge", "miniconda", "anaconda")


# ------------------------------------------------------------------ the script
#: The marker the probe script prints before its JSON (its ``MARK``; repeated here so that
#: reading a reply does not import the script module, which imports platform, site and
#: sysconfig, a cost ``check --python`` would pay; tests/test_python_probe.py checks they agree).
MARK = "NPUDOCTOR-PYPROBE-JSON:"


def script_source() -> str:
    """The source text of :mod:`npudoctor.probes.pyprobe_script` (run with ``-c``)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pyprobe_script.py")
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def parse_script_output(stdout: str) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    """``(facts, None)`` from the probe script's stdout, or ``(None, reason)``.

    The JSON is the text after the last ``NPUDOCTOR-PYPROBE-JSON:`` marker on a line of
    its own; anything else on stdout (``.pth`` noise) is ignored.
    """
    for line in reversed((stdout or "").splitlines()):
        if line.startswith(MARK):
            try:
                data = jsontext.loads(line[len(MARK) :])
            except ValueError as exc:
                return None, f"garbled probe output ({exc})"
            if not isinstance(data, dict):
                return None, "garbled probe output (not an object)"
            if data.get("error"):
                return None, f"probe script failed: {data['error']}"
            return data, None
    return None, "the interpreter printed no probe result"


def later_imports(options: Any, environ: Mapping[str, str]) -> List[str]:
    """The modules a run with ``options`` imports after this probe: the probe modules after
    ``python`` in probe order, psutil (when the ``hccl`` probe reads this node's addresses
    with the diagnosed ``environ``) and the rule modules of the planned sections in
    registry order.  :func:`_run_target` imports them while the target interpreter runs
    (:class:`npudoctor.probes._warm.Warming`)."""
    from npudoctor import engine

    specs = engine.select_probes(engine.probe_specs(), options)
    sections = [s.section for s in specs]
    after = specs[sections.index(SECTION) + 1 :] if SECTION in sections else []
    names = [s.module for s in after]
    if any(s.section == "hccl" for s in after):
        from npudoctor.probes.hccl import addresses_needed

        if addresses_needed(environ):
            names.append("psutil")
    return names + engine.rule_modules(sections + list(engine.EXTRA_SECTIONS))


def _run_target(ctx: ProbeContext, python: str) -> Dict[str, Any]:
    from npudoctor.probes._warm import Warming

    timeout = ctx.options.remaining(max(PROBE_TIMEOUT, ctx.options.command_timeout))
    argv = [python, "-c", script_source()]
    # started before the helper thread, whose imports would hold up the spawn
    ctx.host.start(argv)
    with Warming(later_imports(ctx.options, ctx.host.environ)):
        result = ctx.host.run(argv, timeout=timeout)
    if result.error or result.timed_out:
        return {"error": f"{python}: {result.outcome()}"}
    facts, reason = parse_script_output(result.stdout)
    if facts is None:
        stderr = (result.stderr or "").strip().splitlines()
        tail = f"; stderr: {stderr[-1][:300]}" if stderr else ""
        return {"error": f"{python} (exit {result.returncode}): {reason}{tail}"}
    return _checked(python, facts)


def _checked(python: str, facts: Dict[str, Any]) -> Dict[str, Any]:
    """The target's reply if every field has the type the ``python`` view expects, else an
    ``error`` fact naming what could not be read: a reply printed with the probe's marker
    but wrong types (a wrapper, a hostile interpreter) is not believed in part."""
    from npudoctor.facts._typed import load
    from npudoctor.facts.system import PythonFacts

    problems = load(PythonFacts, facts)[1].as_list()
    if problems:
        return {"error": f"{python}: could not read the probe's reply: " + "; ".join(p[:120] for p in problems[:3])}
    return facts


# ------------------------------------------------------------- --root discovery
if TYPE_CHECKING:
    #: Lists a directory of the diagnosed machine: sorted entry names (``Host.listdir``).
    Listdir = Callable[[str], List[str]]


def _listed_once(host: Host) -> Listdir:
    """``host.listdir`` remembering each directory's entries for one run of the probe: the
    discovery reads a site directory three times (torch's metadata, the ``*.pth`` files,
    the wheel tags), and one of thousands of entries takes a millisecond to list."""
    listed: Dict[str, List[str]] = {}

    def listdir(directory: str) -> List[str]:
        if directory not in listed:
            listed[directory] = host.listdir(directory)
        return listed[directory]

    return listdir


def _version_from_libdirs(host: Host, prefix: str) -> Tuple[Optional[List[int]], List[str]]:
    """Highest ``lib*/pythonX.Y`` under ``prefix`` that has site-/dist-packages, and
    those package dirs."""
    found: List[Tuple[List[int], List[str]]] = []
    for lib in ("lib", "lib64"):
        for name in host.listdir(posixpath.join(prefix, lib)):
            m = _PYDIR_RE.match(name)
            if not m:
                continue
            base = posixpath.join(prefix, lib, name)
            present = [
                posixpath.join(base, d)
                for d in ("site-packages", "dist-packages")
                if host.is_dir(posixpath.join(base, d))
            ]
            if present:
                found.append(([int(m.group(1)), int(m.group(2))], present))
    if not found:
        return None, []
    found.sort(key=lambda item: item[0], reverse=True)
    best = found[0][0]
    dirs: List[str] = []
    for ver, ds in found:
        if ver == best:
            dirs.extend(d for d in ds if d not in dirs)
    return best, dirs


def _pyvenv_cfg(host: Host, prefix: str) -> Dict[str, str]:
    read = host.read_text(posixpath.join(prefix, "pyvenv.cfg"), limit=64 << 10)
    out: Dict[str, str] = {}
    for line in (read.text or "").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip().lower()] = value.strip()
    return out


def _conda_python_version(host: Host, prefix: str) -> Optional[List[int]]:
    for name in host.listdir(posixpath.join(prefix, "conda-meta")):
        m = _CONDA_PY_RE.match(name)
        if m and name.endswith(".json"):
            return [int(m.group(1)), int(m.group(2)), int(m.group(3))]
    return None


def _installed(listdir: Listdir, dirs: List[str], names: Sequence[str]) -> Set[str]:
    """Which of ``names`` (distribution names as their metadata directories spell them,
    ``torch_npu``) have a ``*.dist-info`` or ``*.egg-info`` in ``dirs``; each directory is
    listed once, however many names are asked for."""
    found: Set[str] = set()
    heads = tuple(n + "-" for n in names)
    for d in dirs:
        for entry in listdir(d):
            if entry.startswith(heads) and entry.endswith((".dist-info", ".egg-info")):
                found.update(n for n in names if entry.startswith(n + "-"))
    return found


def _environment(host: Host, prefix: str, kind: str, listdir: Listdir) -> Optional[Dict[str, Any]]:
    """One environment under ``prefix`` (of the diagnosed machine), or ``None`` when
    there is no Python there."""
    prefix = host.display(prefix)
    if not host.is_dir(prefix):
        return None
    libver, site_dirs = _version_from_libdirs(host, prefix)
    cfg = _pyvenv_cfg(host, prefix)
    conda = host.is_dir(posixpath.join(prefix, "conda-meta"))
    version: Optional[List[int]] = None
    version_source = None
    if cfg:
        version = python_release(cfg.get("version") or cfg.get("version_info") or "")
        version_source = f"{posixpath.join(prefix, 'pyvenv.cfg')}" if version else None
    if version is None and conda:
        version = _conda_python_version(host, prefix)
        version_source = f"{posixpath.join(prefix, 'conda-meta')}/python-*.json" if version else None
    if version is None and kind == "usr-local-python":
        version = python_release(posixpath.basename(prefix)[len("python") :])
        version_source = f"directory name {prefix}" if version else None
    if libver is not None and (version is None or version[:2] != libver):
        version = libver
        version_source = f"{prefix}/lib/python{libver[0]}.{libver[1]} directory"
    if version is None:
        return None
    if prefix == "/usr" and host.is_dir("/usr/lib/python3/dist-packages"):
        site_dirs.append("/usr/lib/python3/dist-packages")
    short = f"{version[0]}.{version[1]}"
    exe = None
    for cand in (f"bin/python{short}", "bin/python3", "bin/python"):
        path = posixpath.join(prefix, cand)
        if host.exists(path) or host.readlink(path):
            exe = path
            break
    env: Dict[str, Any] = {
        "prefix": prefix,
        "kind": "venv"
        if cfg
        else ("conda" if conda else (kind if kind in ("usr-local-python", "system") else "other")),
        "version": ".".join(str(v) for v in version),
        "version_info": version,
        "version_source": version_source,
        "site_packages": site_dirs,
        "executable": exe,
        "pyvenv_cfg": cfg or None,
        "conda": conda,
    }
    installed = _installed(listdir, site_dirs, ("torch", "torch_npu", "torch-npu"))
    env["has_torch"] = "torch" in installed
    env["has_torch_npu"] = bool(installed & {"torch_npu", "torch-npu"})
    return env


def discover_environments(
    host: Host, python: Optional[str] = None, listdir: Optional[Listdir] = None
) -> List[Dict[str, Any]]:
    """Python environments inside the root, in the order they are preferred.

    Looked for (scenarios/README.md "Python packages are found from…"): the prefix of
    ``python`` (``--python`` inside the root), ``$VIRTUAL_ENV``, ``$CONDA_PREFIX``,
    ``/usr/local/pythonX.Y.Z`` (official CANN images), conda installations
    (``/opt/conda``, ``~/miniconda3`` …) and their ``envs/*``, ``/usr/local`` and
    ``/usr``.  Each is a dict (see :func:`_environment`); duplicates (same prefix)
    are dropped.  ``listdir``: how a site directory is listed (default ``host.listdir``).
    """
    cands: List[Tuple[str, str]] = []
    if python:
        exe_dir = posixpath.dirname(host.display(python))
        cands.append((posixpath.dirname(exe_dir), "--python"))
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        value = host.getenv(var)
        if value:
            cands.append((value, "$" + var))
    for path in host.glob("/usr/local", prefix="python"):
        if _USR_LOCAL_PY_RE.match(posixpath.basename(path)) and host.is_dir(path):
            cands.append((path, "usr-local-python"))
    homes = ["/root"]
    home = host.getenv("HOME")
    if home and home not in homes:
        homes.insert(0, home)
    conda_roots = list(_CONDA_ROOTS) + [posixpath.join(h, n) for h in homes for n in _CONDA_HOME_NAMES]
    for croot in conda_roots:
        if not host.is_dir(posixpath.join(croot, "conda-meta")):
            continue
        cands.append((croot, "conda"))
        for env_dir in host.listdir(posixpath.join(croot, "envs")):
            cands.append((posixpath.join(croot, "envs", env_dir), "conda"))
    cands.append(("/usr/local", "system"))
    cands.append(("/usr", "system"))
    out: List[Dict[str, Any]] = []
    seen = set()
    for prefix, kind in cands:
        key = host.resolve(prefix)
        if key in seen:
            continue
        seen.add(key)
        env = _environment(host, prefix, kind, listdir or host.listdir)
        if env is not None:
            env["found_by"] = kind
            out.append(env)
    return out


def _merge_system(envs: List[Dict[str, Any]], chosen: Dict[str, Any]) -> List[str]:
    """Site dirs of the chosen env plus the system dirs of the same Python version that
    its interpreter also reads (/usr/local dist-packages for /usr, Debian style)."""
    dirs = list(chosen["site_packages"])
    if chosen["prefix"] == "/usr":
        for env in envs:
            if env["prefix"] == "/usr/local" and env["version_info"][:2] == chosen["version_info"][:2]:
                dirs = list(env["site_packages"]) + dirs
    if chosen["kind"] == "venv":
        cfg = chosen.get("pyvenv_cfg") or {}
        if str(cfg.get("include-system-site-packages", "false")).lower() == "true":
            for env in envs:
                if (
                    env is not chosen
                    and env["kind"] != "venv"
                    and env["version_info"][:2] == chosen["version_info"][:2]
                ):
                    dirs += [d for d in env["site_packages"] if d not in dirs]
                    break
    return dirs


def _pth_paths(host: Host, site_dir: str, listdir: Listdir) -> List[str]:
    """Directories added by ``*.pth`` files of a site dir (``import`` lines skipped)."""
    out: List[str] = []
    shown = host.display(site_dir)
    for name in listdir(site_dir):
        if not name.endswith(".pth"):
            continue
        read = host.read_text(posixpath.join(shown, name), limit=64 << 10)
        for line in (read.text or "").splitlines():
            line = line.strip()
            if not line or line.startswith("#") or line.startswith("import ") or line.startswith("import\t"):
                continue
            path = line if line.startswith("/") else posixpath.normpath(posixpath.join(site_dir, line))
            if host.is_dir(path) and path not in out:
                out.append(path)
    return out


def _select(envs: List[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    if not envs:
        return None
    for env in envs:
        if env["found_by"] in ("--python", "$VIRTUAL_ENV", "$CONDA_PREFIX"):
            return env
    for env in envs:
        if env["has_torch_npu"]:
            return env
    for env in envs:
        if env["has_torch"]:
            return env
    for env in envs:
        if env["site_packages"]:
            return env
    return envs[0]


#: Distributions whose wheels are built per architecture, read first (``torch-2.1.0.dist-info``).
_BINARY_FIRST = ("torch", "torch_npu", "numpy")


def arch_from_wheels(
    host: Host, site_dirs: List[str], limit: int = 200, listdir: Optional[Listdir] = None
) -> Optional[str]:
    """The CPU architecture named by the platform tags of installed wheels
    (``…manylinux_2_17_aarch64`` -> ``"aarch64"``), or ``None``; pure-Python wheels are
    skipped, and the wheels of :data:`_BINARY_FIRST` are read before the others.  Used
    under --root when no system binary shows the ELF machine.  ``listdir``: how a site
    directory is listed (default ``host.listdir``)."""
    seen = 0
    for d in site_dirs:
        entries = [e for e in (listdir or host.listdir)(d) if e.endswith(".dist-info")]
        entries.sort(key=lambda e: e.split("-", 1)[0].lower() not in _BINARY_FIRST)  # stable: the rest keep their order
        for entry in entries:
            seen += 1
            if seen > limit:
                return None
            text = host.read_text(posixpath.join(d, entry, "WHEEL"), limit=16 << 10).text or ""
            for line in text.splitlines():
                if not line.lower().startswith("tag:"):
                    continue
                tag = line.split(":", 1)[1].strip()
                for arch in ("aarch64", "x86_64"):
                    if tag.endswith("_" + arch):
                        return arch
    return None


def _root_facts(ctx: ProbeContext) -> Dict[str, Any]:
    host = ctx.host
    listdir = _listed_once(host)
    envs = discover_environments(host, ctx.options.python, listdir)
    chosen = _select(envs)
    summary = [
        {k: env[k] for k in ("prefix", "kind", "version", "site_packages", "has_torch", "has_torch_npu")}
        for env in envs
    ]
    host_facts = ctx.facts.get("host") or {}
    if chosen is None:
        return {
            "source": "root",
            "error": "no Python environment found in the root",
            "environments": summary,
            "machine": host_facts.get("arch"),
        }
    short = ".".join(str(v) for v in chosen["version_info"][:2])
    is_venv = chosen["kind"] == "venv"
    cfg = chosen.get("pyvenv_cfg") or {}
    # site.py: a venv without system site packages has no user site; PYTHONNOUSERSITE
    # (any non-empty value, like -s) turns it off too.
    user_enabled = not is_venv or str(cfg.get("include-system-site-packages", "false")).lower() == "true"
    if host.getenv("PYTHONNOUSERSITE"):
        user_enabled = False
    home = host.getenv("HOME") or "/root"
    user_site = posixpath.join(home, ".local", "lib", f"python{short}", "site-packages")
    site_dirs = _merge_system(envs, chosen)
    # Import order as site.py builds it: a venv's own site-packages come first (site.venv()
    # adds them), then the user site, then the system site dirs; outside a venv the user
    # site comes before every site dir.
    own = list(chosen["site_packages"]) if is_venv else []
    ordered = own + ([user_site] if user_enabled and host.is_dir(user_site) else [])
    ordered += [d for d in site_dirs if d not in own]
    sys_path: List[str] = list(host.env_paths("PYTHONPATH"))
    for d in ordered:
        if d not in sys_path:
            sys_path.append(d)
        for extra in _pth_paths(host, d, listdir):
            if extra not in sys_path:
                sys_path.append(extra)
    machine = host_facts.get("arch")
    machine_source = "host.arch"
    if not machine:
        machine = arch_from_wheels(host, site_dirs, listdir=listdir)
        machine_source = "WHEEL platform tags of installed packages" if machine else "unknown"
    base_prefix = chosen["prefix"]
    base_executable = None
    if is_venv and cfg.get("home"):
        base_prefix = posixpath.dirname(cfg["home"].rstrip("/")) or "/"
        # pyvenv.cfg ``home`` is the bin directory of the interpreter the venv was made from.
        base_executable = posixpath.join(cfg["home"].rstrip("/") or "/", f"python{short}")
    conda = chosen.get("conda")
    conda_env = None
    if conda:
        parent = posixpath.dirname(chosen["prefix"])
        conda_env = posixpath.basename(chosen["prefix"]) if posixpath.basename(parent) == "envs" else "base"
    return {
        "source": "root",
        "version": chosen["version"],
        "version_info": chosen["version_info"],
        "version_source": chosen["version_source"],
        "implementation": "cpython",
        "machine": machine,
        "machine_source": machine_source,
        "executable": chosen["executable"] or ctx.options.python,
        "prefix": chosen["prefix"],
        "base_prefix": base_prefix,
        "base_executable": base_executable,
        "is_venv": is_venv,
        "conda_prefix": chosen["prefix"] if conda else None,
        "conda_env": conda_env,
        "site_packages": site_dirs,
        "user_site": user_site,
        "user_site_enabled": user_enabled,
        "sys_path": sys_path,
        "glibc": host_facts.get("glibc"),
        "environments": summary,
    }


# ------------------------------------------------------------------ shadowing
def _package_dir(host: Host, directory: str, name: str) -> Optional[str]:
    pkg = posixpath.join(directory, name)
    if host.is_file(posixpath.join(pkg, "__init__.py")):
        return pkg
    return None


def _has_extension(host: Host, pkg: str) -> bool:
    return any(n.startswith("_C.") and n.endswith(".so") or n == "_C.so" for n in host.listdir(pkg))


def shadowing(host: Host, sys_path: List[str], cwd: Optional[str], name: str) -> Dict[str, Any]:
    """Where ``import <name>`` would come from, judged on disk (no import).

    The working directory is searched first (``python -c``/REPL put ``""`` first on
    ``sys.path``; ``python script.py`` from a source checkout puts the script's dir,
    usually the cwd).  Returns the dict described under ``shadowing`` in the module
    docstring.
    """
    order: List[str] = []
    if cwd:
        order.append(cwd)
    for entry in sys_path:
        if entry and entry not in order:
            order.append(entry)
    origin = None
    installed = None
    for entry in order:
        pkg = _package_dir(host, entry, name)
        if pkg is None:
            continue
        if origin is None:
            origin = pkg
        if not (cwd and entry == cwd):
            installed = pkg
            break
    in_cwd = bool(origin and cwd and posixpath.dirname(origin) == cwd)
    has_ext = _has_extension(host, origin) if origin else False
    same = bool(origin and installed and host.resolve(origin) == host.resolve(installed))
    shadowed = bool(in_cwd and not same and (not has_ext or installed is not None))
    return {
        "origin": origin,
        "origin_in_cwd": in_cwd,
        "has_extension": has_ext,
        "installed": installed,
        "shadowed": shadowed,
    }


def _cwd(ctx: ProbeContext, facts: Dict[str, Any]) -> Tuple[Optional[str], str]:
    if ctx.options.cwd:
        return ctx.options.cwd, "--cwd"
    if ctx.host.live:
        if facts.get("cwd"):
            return facts["cwd"], "target interpreter"
        try:
            return os.getcwd(), "os.getcwd()"
        except OSError:
            return None, "unknown"
    pwd = ctx.host.getenv("PWD")
    return (pwd, "$PWD") if pwd else (None, "unknown")


def probe(ctx: ProbeContext) -> Dict[str, Any]:
    host = ctx.host
    if not host.live:
        facts = _root_facts(ctx)
    elif ctx.options.python:
        facts = _run_target(ctx, ctx.options.python)
        facts["source"] = "--python"
        facts.setdefault("executable", ctx.options.python)
        facts["requested"] = ctx.options.python
    else:
        from npudoctor.probes.pyprobe_script import collect as collect_self

        facts = collect_self()
        facts["source"] = "live"
    if facts.get("error"):
        return facts
    cwd, cwd_source = _cwd(ctx, facts)
    facts["cwd"] = cwd
    facts["cwd_source"] = cwd_source
    sys_path = [p for p in facts.get("sys_path") or [] if isinstance(p, str)]
    facts["shadowing"] = {name: shadowing(host, sys_path, cwd, name) for name in ("torch_npu", "torch")}
    return facts
