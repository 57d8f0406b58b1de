"""Rules over the ``environment`` section: is the selected toolkit's (and NNAL's)
``set_env.sh`` in effect in the diagnosed environment? (kind K10, part of K11)"""

from __future__ import annotations

import posixpath
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.remedies import Export, PrependPath, SourceFile
from npudoctor.rules import rule
from npudoctor.rules._env_vars import variable_state

SERVICE_NOTE = (
    "For a systemd unit, Ray worker, Slurm job or Kubernetes pod, ~/.bashrc is not read: put the "
    "variables in the unit (Environment=/EnvironmentFile=) or the pod spec (env:), or start the "
    'command through bash, e.g. `bash -c \'source {script} && exec "$0" "$@"\' python train.py` '
    "(your command and its arguments in place of python train.py)."
)

SERVICE_NOTE_EXPORTS = (
    "For a systemd unit, Ray worker, Slurm job or Kubernetes pod, ~/.bashrc is not read: put these "
    "variables in the unit (Environment=/EnvironmentFile=) or the pod spec (env:), or start the command "
    "under `npudoctor exec --`, which applies them (e.g. `npudoctor exec -- python train.py`)."
)

NPUDOCTOR_ENV = 'or: eval "$(npudoctor env)"  # the same variables, computed by npudoctor from the toolkit'

#: Variables whose value is a ``:`` list that set_env.sh prepends to.
PATH_VARS = ("LD_LIBRARY_PATH", "PYTHONPATH", "PATH")
#: set_env.sh's own variables, in the order the scripts set them.
SCALAR_ORDER = ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH", "ASCEND_OPP_PATH", "ASCEND_AICPU_PATH", "TOOLCHAIN_HOME")

NOT_SOURCED = codes.get("ENV001")

STALE = codes.get("ENV002")

LOADER_PATH = codes.get("ENV003")

PYTHONPATH = codes.get("ENV004")

NNAL_NOT_SOURCED = codes.get("ENV005")

CUSTOM = codes.get("ENV006")


def _torch_npu_installed(ctx: Any) -> bool:
    installed = ctx.facts("packages").get("installed") or {}
    return isinstance(installed, dict) and any(
        str(k).lower().replace("_", "-") == "torch-npu" and v for k, v in installed.items()
    )


def _script(env: Dict[str, Any]) -> Optional[str]:
    """The set_env.sh to tell users to source: one that exists in the diagnosed root and
    sets up the toolkit in use (``environment.set_env_script``), or ``None``, in which
    case fixes give export lines.  Snapshots from before that key: the script the probe
    evaluated (it existed), unless it set up another install (rebased)."""
    if "set_env_script" in env:
        return str(env["set_env_script"]) if env.get("set_env_script") else None
    expected = env.get("expected") or {}
    if expected.get("script") and expected.get("method") in ("set_env.sh", "documented"):
        return str(expected["script"])
    return None


def _service_note(script: Optional[str]) -> str:
    if script:
        return SERVICE_NOTE.format(script=script)
    return SERVICE_NOTE_EXPORTS


def _toolkit_line(env: Dict[str, Any]) -> str:
    tk = env.get("toolkit") or {}
    version = tk.get("version")
    via = tk.get("source")
    return f"CANN toolkit {version or '(version unknown)'} at {tk.get('path')}" + (
        f" (selected via {via})" if via else ""
    )


def append_line(name: str, entries: Sequence[str]) -> PrependPath:
    """The entries put in front of the user's ``name`` value, never replacing it (see
    :class:`npudoctor.remedies.PrependPath`)."""
    return PrependPath(name, tuple(entries))


def _export_lines(env: Dict[str, Any], names: Iterable[str], paths: Optional[Dict[str, List[str]]] = None) -> List[Any]:
    """``export`` lines for the scalar variables ``names`` (their expected values) and the
    ``paths`` entries to put in front of LD_LIBRARY_PATH/PYTHONPATH/PATH."""
    variables = (env.get("expected") or {}).get("variables") or {}
    lines: List[Any] = [Export(n, str(variables[n])) for n in names if n in variables]
    for name in PATH_VARS:
        entries = (paths or {}).get(name) or []
        if entries:
            lines.append(append_line(name, entries))
    return lines


def _full_exports(env: Dict[str, Any]) -> List[Any]:
    """Every variable of the toolkit's set_env.sh (NNAL's are ENV005's): what to run when
    no set_env.sh exists in the root."""
    expected = env.get("expected") or {}
    variables = expected.get("variables") or {}
    scalars = [n for n in SCALAR_ORDER if n in variables]
    scalars += sorted(n for n in variables if n not in scalars and n not in PATH_VARS and not n.startswith("ATB_"))
    added = expected.get("added") or {}
    paths = {n: [e for e in added.get(n) or [] if "/nnal/" not in e] for n in PATH_VARS}
    return _export_lines(env, scalars, paths)


def _method_line(env: Dict[str, Any]) -> List[str]:
    """Evidence lines saying where the expected values come from."""
    expected = env.get("expected") or {}
    method = expected.get("method")
    script = expected.get("script")
    lines = []
    fallback = expected.get("fallback")
    skipped = [u for u in expected.get("unsupported") or [] if isinstance(u, dict)]
    if fallback is None:
        # snapshots from before "fallback": the reason was an entry with line 0
        reasons = [str(u.get("text")) for u in skipped if not isinstance(u.get("line"), int) or u["line"] < 1]
        fallback = "; ".join(reasons) or None
    skipped = [u for u in skipped if isinstance(u.get("line"), int) and u["line"] >= 1]
    if method == "documented":
        lines.append(
            (fallback or "no readable set_env.sh next to the toolkit")
            + ": the expected values are the variables CANN's set_env.sh is documented to set"
        )
    elif method == "set_env.sh (rebased)" and script:
        lines.append(
            f"expected values from {script} (read, not executed), which sets up another install: its paths "
            f"were moved onto {(env.get('toolkit') or {}).get('path')}"
        )
    elif script:
        lines.append(f"expected values from {script} (read, not executed)")
    if skipped:
        first = skipped[0]
        text = str(first.get("text") or "").strip()
        lines.append(
            f"npudoctor could not interpret {len(skipped)} line(s) of {script or 'the script'}; "
            f"the first is line {first.get('line')}: {text}"
        )
    return lines


@rule
def set_env_not_sourced(ctx: Any) -> Iterable[Finding]:
    """ENV001: a toolkit is installed and nothing of its set_env.sh is in effect."""
    env = ctx.facts("environment")
    if not env.get("toolkit") or env.get("sourced", True):
        return
    script = _script(env)
    severity = "error" if _torch_npu_installed(ctx) else "warning"
    missing_ld = (env.get("missing_paths") or {}).get("LD_LIBRARY_PATH") or []
    evidence = [_toolkit_line(env)]
    missing_vars = variable_state(env, ctx.facts("cann")).missing_vars
    evidence.append("unset: " + ", ".join(missing_vars or ["ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH"]))
    if missing_ld:
        evidence.append("LD_LIBRARY_PATH lacks " + ", ".join(missing_ld))
    evidence += _method_line(env)
    if script:
        fix: List[Any] = [SourceFile(script)]
    else:
        if (env.get("expected") or {}).get("method") == "set_env.sh (rebased)":
            evidence.append("sourcing that script would set up the other install, not this toolkit")
        fix = _full_exports(env) + [NPUDOCTOR_ENV]
    fix.append(_service_note(script))
    yield NOT_SOURCED.finding(
        title=f"CANN {((env.get('toolkit') or {}).get('version') or '')} is installed but its set_env.sh is not sourced".replace(
            "  ", " "
        ),
        evidence=evidence,
        fix=fix,
        severity=severity,
        subject=str((env.get("toolkit") or {}).get("path")),
    )


def _source_or(script: Optional[str], exports: List[Any]) -> List[Any]:
    """``source <script>`` then the narrower export lines, or the export lines alone when
    no script exists in the root."""
    if script:
        return [SourceFile(script), "or set only what is missing:"] + exports
    return list(exports)


def _clean_value(env: Dict[str, Any], name: str, drop: Iterable[str]) -> str:
    """The current ``name`` list without the ``drop`` entries (and without empty entries)."""
    gone = {posixpath.normpath(d) for d in drop}
    current = str((env.get("current") or {}).get(name) or "")
    kept: List[str] = []
    for entry in current.split(":"):
        if entry and posixpath.normpath(entry) not in gone and entry not in kept:
            kept.append(entry)
    return ":".join(kept)


@rule
def stale_environment(ctx: Any) -> Iterable[Finding]:
    """ENV002: variables or path entries pointing into another CANN install."""
    env = ctx.facts("environment")
    stale = variable_state(env, ctx.facts("cann")).stale
    if not env.get("toolkit") or not stale:
        return
    installs = []
    for s in stale:
        label = f"{s.get('install')}" + (f" (CANN {s['version']})" if s.get("version") else "")
        if label not in installs:
            installs.append(label)
    evidence = [_toolkit_line(env)]
    for s in stale[:12]:
        where = s.get("install")
        ver = f"CANN {s['version']}" if s.get("version") else "another install"
        gone = " (does not exist)" if s.get("exists") is False else ""
        if s.get("variable") in PATH_VARS:
            evidence.append(f"{s['variable']} entry {s['value']}{gone} belongs to {ver} at {where}")
        else:
            evidence.append(f"{s['variable']}={s['value']}{gone} belongs to {ver} at {where}")
    if len(stale) > 12:
        evidence.append(f"... and {len(stale) - 12} more")
    script = _script(env)
    fix: List[Any] = [
        "Start a fresh shell (or remove the old CANN lines from ~/.bashrc, /etc/profile or the image ENV)"
    ]
    if script:
        fix.append(SourceFile(script))
    else:
        scalars = [str(s["variable"]) for s in stale if s.get("variable") not in PATH_VARS]
        fix += _export_lines(env, dict.fromkeys(scalars))
        for name in PATH_VARS:
            drop = [str(s["value"]) for s in stale if s.get("variable") == name]
            if drop:
                fix.append(
                    Export(name, _clean_value(env, name, drop), note="the current value without " + ", ".join(drop))
                )
    fix.append(_service_note(script))
    yield STALE.finding(
        title=f"The environment points at {', '.join(installs)} while the toolkit in use is {(env.get('toolkit') or {}).get('path')}",
        evidence=evidence,
        fix=fix,
    )


def _describe_dirs(env: Dict[str, Any], dirs: Sequence[str]) -> str:
    """``the driver's lib64 and lib64/driver (/usr/local/Ascend/driver)`` -- missing
    directories named by their owner (the toolkit, the driver) and path inside it; others
    in full."""
    tk = str((env.get("toolkit") or {}).get("path") or "")
    driver = str((env.get("expected") or {}).get("driver") or "")
    groups: Dict[Tuple[str, str], List[str]] = {}
    others: List[str] = []
    for d in dirs:
        d = posixpath.normpath(d)
        for label, root in (("the toolkit's", tk), ("the driver's", driver)):
            if root and d.startswith(root.rstrip("/") + "/"):
                groups.setdefault((label, root), []).append(d[len(root.rstrip("/")) + 1 :])
                break
        else:
            others.append(d)
    parts = [f"{label} {_and(rels)} ({root})" for (label, root), rels in groups.items()]
    return _and(parts + others)


def _and(items: Sequence[str]) -> str:
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


@rule
def loader_path_incomplete(ctx: Any) -> Iterable[Finding]:
    """ENV003: sourced (or partly copied) but library directories are missing."""
    env = ctx.facts("environment")
    if not env.get("toolkit") or not env.get("sourced"):
        return
    missing = (env.get("missing_paths") or {}).get("LD_LIBRARY_PATH") or []
    missing_vars = variable_state(env, ctx.facts("cann")).missing_vars
    if not missing and not missing_vars:
        return
    evidence = [_toolkit_line(env)]
    if missing:
        evidence.append("LD_LIBRARY_PATH lacks (directories that exist): " + ", ".join(missing))
    if missing_vars:
        evidence.append("unset: " + ", ".join(missing_vars))
    evidence += _method_line(env)
    script = _script(env)
    exports = _export_lines(env, missing_vars, {"LD_LIBRARY_PATH": list(missing)})
    fix = _source_or(script, exports)
    yield LOADER_PATH.finding(
        title=(
            f"LD_LIBRARY_PATH lacks {_describe_dirs(env, missing)}"
            if missing
            else "CANN variables unset: " + ", ".join(missing_vars)
        )
        + " (set_env.sh only partly applied)",
        evidence=evidence,
        fix=fix,
    )


def _te_from_pip(ctx: Any) -> bool:
    installed = ctx.facts("packages").get("installed") or {}
    modules = ctx.facts("packages").get("modules") or {}
    return bool(
        (isinstance(installed, dict) and installed.get("te"))
        or (isinstance(modules, dict) and (modules.get("tbe") or modules.get("te")))
    )


@rule
def pythonpath_missing(ctx: Any) -> Iterable[Finding]:
    """ENV004: toolkit python/site-packages (te/tbe) not on PYTHONPATH."""
    env = ctx.facts("environment")
    if not env.get("toolkit") or not env.get("sourced"):
        return
    missing = (env.get("missing_paths") or {}).get("PYTHONPATH") or []
    tp = env.get("toolkit_python") or {}
    site = tp.get("site_packages")
    if not site or site not in missing or _te_from_pip(ctx):
        return
    have = [p for p in ("te", "tbe") if tp.get(p)]
    evidence = [_toolkit_line(env), f"{site} exists" + (f" and holds {', '.join(have)}" if have else "")]
    evidence.append("PYTHONPATH=" + str((env.get("current") or {}).get("PYTHONPATH", "(unset)")))
    yield PYTHONPATH.finding(
        title=f"PYTHONPATH lacks {site}: te/tbe will not import when operators compile",
        evidence=evidence,
        fix=_source_or(_script(env), [append_line("PYTHONPATH", missing)]),
    )


@rule
def nnal_not_sourced(ctx: Any) -> Iterable[Finding]:
    """ENV005: NNAL installed, ATB_HOME_PATH unset or its lib not on LD_LIBRARY_PATH."""
    env = ctx.facts("environment")
    nnal = env.get("nnal")
    if not isinstance(nnal, dict):
        return
    if nnal.get("current_atb_home") and nnal.get("lib_on_path"):
        return
    script = nnal.get("script") if nnal.get("script") else None
    evidence = [f"NNAL {nnal.get('version') or ''} at {nnal.get('path')}".replace("  ", " ")]
    if not nnal.get("current_atb_home"):
        evidence.append("ATB_HOME_PATH is unset")
    if not nnal.get("lib_on_path"):
        lib = posixpath.join(str(nnal.get("current_atb_home") or nnal.get("expected_atb_home")), "lib")
        evidence.append(f"LD_LIBRARY_PATH lacks {lib} (libatb.so)")
    if not script:
        evidence.append(f"no set_env.sh in {nnal.get('path')}: the fix sets what it would set")
    needs = _atb_needed(ctx)
    if needs:
        evidence.append(needs)
    yield NNAL_NOT_SOURCED.finding(
        title="NNAL (ATB) is installed but nnal/atb/set_env.sh is not sourced",
        evidence=evidence,
        fix=([SourceFile(script, note="after torch is installed")] if script else _nnal_exports(nnal))
        + [_service_note(script)],
        severity="error" if needs else "warning",
    )


def _nnal_exports(nnal: Dict[str, Any]) -> List[Any]:
    """What nnal/atb/set_env.sh sets for the ABI directory torch needs (see
    :func:`npudoctor.cann_env.nnal_variables`)."""
    home = str(nnal.get("expected_atb_home") or "")
    if not home:
        return []
    return [
        Export("ATB_HOME_PATH", home),
        append_line("LD_LIBRARY_PATH", [f"{home}/lib", f"{home}/examples", f"{home}/tests/atbopstest"]),
        append_line("PATH", [f"{home}/bin"]),
    ]


def _atb_needed(ctx: Any) -> str:
    installed = ctx.facts("packages").get("installed") or {}
    if not isinstance(installed, dict):
        return ""
    for name in ("vllm-ascend", "vllm_ascend", "mindie-turbo", "mindie_turbo"):
        recs = installed.get(name)
        if recs:
            return f"{name} is installed and loads ATB"
    return ""


@rule
def custom_values(ctx: Any) -> Iterable[Finding]:
    """ENV006: a CANN variable with a non-CANN custom value."""
    env = ctx.facts("environment")
    for item in variable_state(env, ctx.facts("cann")).differs:
        yield CUSTOM.finding(
            title=f"{item.get('name')}={item.get('current')} (set_env.sh would set {item.get('expected')})",
            evidence=[_toolkit_line(env), f"{item.get('name')}={item.get('current')}"],
            fix=[Export(str(item.get("name")), str(item.get("expected")), note="if the custom value was not intended")],
            subject=str(item.get("name")),
        )
