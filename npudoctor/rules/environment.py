"""Rules over the ``environment`` section: is the selected toolkit's (and NNAL's)
``set_env.sh`` in effect in the diagnosed environment? (kind K10, part of K11)"""

from __future__ import annotations

import posixpath
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from npudoctor.context import RuleContext
from npudoctor.facts.environment import EnvironmentFacts, EnvNnal, EnvToolkit
from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.remedies import ComputedEnv, Export, PrependPath, Remedy, SourceFile
from npudoctor.rules import rule
from npudoctor.rules._env_vars import (
    missing_paths,
    nnal_lib_on_path,
    off_missing_dirs,
    recorded_set_env_script,
    sourced,
    variable_state,
)

READS = ("cann", "environment", "libraries", "packages")
ONLY_WITH = ("environment",)

#: A fix line: a structured remedy or prose.
FixLine = Union[Remedy, str]

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

NPUDOCTOR_ENV = ComputedEnv(lead="or: ", note="the same variables, computed by npudoctor from the toolkit")

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


def _toolkit(env: EnvironmentFacts) -> Optional[EnvToolkit]:
    """The toolkit whose set_env.sh is judged, or ``None`` when none was found (an empty
    record counts as none)."""
    tk = env.toolkit
    return tk if tk is not None and tk != EnvToolkit() else None


def _script(env: EnvironmentFacts) -> Optional[str]:
    """The set_env.sh to tell users to source: one that exists in the diagnosed root and
    sets up the toolkit in use (``environment.set_env_script``), or ``None``, in which
    case fixes give export lines.  Snapshots from before that key: the script the probe
    evaluated (it existed), unless it set up another install (rebased)."""
    recorded, script = recorded_set_env_script(env)
    if recorded:
        return script
    expected = env.expected
    if expected is not None and expected.script and expected.method in ("set_env.sh", "documented"):
        return expected.script
    return None


def _service_note(script: Optional[str]) -> str:
    if script:
        return SERVICE_NOTE.format(script=script)
    return SERVICE_NOTE_EXPORTS


#: How the toolkit in use was chosen, in words (``cann.selected_via`` / the environment
#: probe's ``toolkit.source``; "cann.selected" means: the CANN probe's choice).
_VIA = {
    "ASCEND_TOOLKIT_HOME": "chosen by ASCEND_TOOLKIT_HOME",
    "ASCEND_HOME_PATH": "chosen by ASCEND_HOME_PATH",
    "default": "the default location",
    "only": "the only toolkit found",
}


def _toolkit_line(env: EnvironmentFacts, cann_via: Optional[str] = None) -> str:
    tk = env.toolkit or EnvToolkit()
    via = cann_via if tk.source == "cann.selected" else tk.source
    words = _VIA.get(str(via)) if via else None
    return f"CANN toolkit {tk.version or '(version unknown)'} at {tk.path}" + (f" ({words})" if words else "")


def append_line(name: str, entries: Sequence[str]) -> PrependPath:
    """The entries put in front of the user's ``name`` value, never replacing it (see
    :class:`npudoctor.remedies.PrependPath`)."""
    return PrependPath(name, tuple(entries))


def _variables(env: EnvironmentFacts) -> Dict[str, str]:
    """What set_env.sh would set (``expected.variables``; ``{}`` when unknown)."""
    return dict(env.expected.variables) if env.expected is not None else {}


def _export_lines(
    env: EnvironmentFacts, names: Iterable[str], paths: Optional[Mapping[str, Sequence[str]]] = None
) -> List[FixLine]:
    """``export`` lines for the scalar variables ``names`` (their expected values) and the
    ``paths`` entries to put in front of LD_LIBRARY_PATH/PYTHONPATH/PATH."""
    variables = _variables(env)
    lines: List[FixLine] = [Export(n, variables[n]) for n in names if n in variables]
    for name in PATH_VARS:
        entries = (paths or {}).get(name) or []
        if entries:
            lines.append(append_line(name, entries))
    return lines


def _full_exports(env: EnvironmentFacts) -> List[FixLine]:
    """Every variable of the toolkit's set_env.sh (NNAL's are ENV005's): what to run when
    no set_env.sh exists in the root."""
    variables = _variables(env)
    scalars = [n for n in SCALAR_ORDER if n in variables]
    scalars += sorted(n for n in variables if n not in scalars and n not in PATH_VARS and not n.startswith("ATB_"))
    added = env.expected.added if env.expected is not None else {}
    paths = {n: [e for e in added.get(n) or () if "/nnal/" not in e] for n in PATH_VARS}
    return _export_lines(env, scalars, paths)


def _method_line(env: EnvironmentFacts) -> List[str]:
    """Evidence lines saying where the expected values come from."""
    if env.expected is None:
        return []
    expected = env.expected
    method = expected.method
    script = expected.script
    lines = []
    fallback = expected.fallback
    skipped = list(expected.unsupported)
    if fallback is None:
        # snapshots from before "fallback": the reason was an entry with line 0
        reasons = [str(u.text) for u in skipped if u.line is None or u.line < 1]
        fallback = "; ".join(reasons) or None
    skipped = [u for u in skipped if u.line is not None and u.line >= 1]
    if method == "documented":
        lines.append(
            (fallback or "no readable set_env.sh next to the toolkit")
            + ": the expected values are the variables CANN's set_env.sh is documented to set"
        )
    elif method == "set_env.sh (rebased)" and script:
        lines.append(
            f"expected values from {script} (read, not executed), which sets up another install: its paths "
            f"were moved onto {(env.toolkit or EnvToolkit()).path}"
        )
    elif script:
        lines.append(f"expected values from {script} (read, not executed)")
    if skipped:
        first = skipped[0]
        text = (first.text or "").strip()
        lines.append(
            f"npudoctor could not interpret {len(skipped)} line(s) of {script or 'the script'}; "
            f"the first is line {first.line}: {text}"
        )
    return lines


def _missing_paths(env: EnvironmentFacts, name: str) -> Tuple[str, ...]:
    """The directories set_env.sh would add to ``name`` that it lacks now (judged by
    :func:`npudoctor.rules._env_vars.missing_paths`)."""
    return missing_paths(env).get(name) or ()


@rule
def set_env_not_sourced(ctx: RuleContext) -> Iterable[Finding]:
    """ENV001: a toolkit is installed and nothing of its set_env.sh is in effect."""
    env = ctx.view.environment
    tk = _toolkit(env)
    # ``sourced`` is a bool whenever the probe found a toolkit; unknown counts as sourced.
    if tk is None or sourced(env) is not False:
        return
    script = _script(env)
    severity = "error" if ctx.view.packages.torch_npu is not None else "warning"
    missing_ld = _missing_paths(env, "LD_LIBRARY_PATH")
    evidence = [_toolkit_line(env, ctx.view.cann.selected_via)]
    missing_vars = variable_state(env, ctx.view.cann).missing_vars
    evidence.append("unset: " + ", ".join(missing_vars or ["ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH"]))
    if missing_ld:
        evidence.append("LD_LIBRARY_PATH lacks " + ", ".join(missing_ld))
    evidence += _method_line(env)
    fix: List[FixLine]
    if script:
        fix = [SourceFile(script)]
    else:
        if env.expected is not None and env.expected.method == "set_env.sh (rebased)":
            evidence.append("sourcing that script would set up the other install, not this toolkit")
        fix = _full_exports(env) + [NPUDOCTOR_ENV]
    fix.append(_service_note(script))
    yield NOT_SOURCED.finding(
        title=f"CANN {tk.version or ''} is installed but its set_env.sh is not sourced".replace("  ", " "),
        evidence=evidence,
        fix=fix,
        severity=severity,
        subject=str(tk.path),
    )


def _source_or(script: Optional[str], exports: List[FixLine]) -> List[FixLine]:
    """``source <script>`` then the narrower export lines, or the export lines alone when
    no script exists in the root."""
    if script:
        head: List[FixLine] = [SourceFile(script), "or set only what is missing:"]
        return head + exports
    return list(exports)


def _clean_value(env: EnvironmentFacts, name: str, drop: Iterable[str]) -> str:
    """The current ``name`` list without the ``drop`` entries (and without empty entries)."""
    gone = {posixpath.normpath(d) for d in drop}
    current = env.current.get(name) or ""
    kept: List[str] = []
    for entry in current.split(":"):
        if entry and posixpath.normpath(entry) not in gone and entry not in kept:
            kept.append(entry)
    return ":".join(kept)


@rule
def stale_environment(ctx: RuleContext) -> Iterable[Finding]:
    """ENV002: variables or path entries pointing into another CANN install.

    A LD_LIBRARY_PATH directory that does not exist loads nothing: when every stale entry is
    such a directory and the toolkit in use is fully on the path (set_env.sh applied, no
    library directory it adds missing), the finding is a note (info), not an error."""
    env = ctx.view.environment
    state = variable_state(env, ctx.view.cann)
    stale = state.stale
    tk = _toolkit(env)
    if tk is None or not stale:
        return
    if all(s["variable"] == "LD_LIBRARY_PATH" and s["exists"] is False for s in stale) and (
        sourced(env) and not state.missing_vars and not _missing_paths(env, "LD_LIBRARY_PATH")
    ):
        dirs = [s["value"] for s in stale]
        yield STALE.finding(
            title=f"LD_LIBRARY_PATH names {_and(dirs)}, which {'does' if len(dirs) == 1 else 'do'} not exist: "
            f"harmless, the toolkit in use ({tk.path}) is fully on the path",
            evidence=[_toolkit_line(env, ctx.view.cann.selected_via)]
            + [f"LD_LIBRARY_PATH entry {d} (does not exist) names another CANN install" for d in dirs]
            + ["no library can load from a directory that does not exist; every directory set_env.sh adds is present"],
            fix=[
                Export(
                    "LD_LIBRARY_PATH",
                    _clean_value(env, "LD_LIBRARY_PATH", dirs),
                    note="optional tidy-up: the current value without " + ", ".join(dirs),
                )
            ],
            severity="info",
        )
        return
    installs = []
    for s in stale:
        label = f"{s['install']}" + (f" (CANN {s['version']})" if s["version"] else "")
        if label not in installs:
            installs.append(label)
    evidence = [_toolkit_line(env, ctx.view.cann.selected_via)]
    for s in stale[:12]:
        where = s["install"]
        ver = f"CANN {s['version']}" if s["version"] else "another install"
        gone = " (does not exist)" if s["exists"] is False else ""
        if s["variable"] in PATH_VARS:
            evidence.append(f"{s['variable']} entry {s['value']}{gone} belongs to {ver} at {where}")
        else:
            evidence.append(f"{s['variable']}={s['value']}{gone} belongs to {ver} at {where}")
    if len(stale) > 12:
        evidence.append(f"... and {len(stale) - 12} more")
    script = _script(env)
    fix: List[FixLine] = [
        "Start a fresh shell (or remove the old CANN lines from ~/.bashrc, /etc/profile or the image ENV)"
    ]
    if script:
        fix.append(SourceFile(script))
    else:
        scalars = [s["variable"] for s in stale if s["variable"] not in PATH_VARS]
        fix += _export_lines(env, dict.fromkeys(scalars))
        for name in PATH_VARS:
            drop = [s["value"] for s in stale if s["variable"] == name]
            if drop:
                fix.append(
                    Export(name, _clean_value(env, name, drop), note="the current value without " + ", ".join(drop))
                )
    fix.append(_service_note(script))
    yield STALE.finding(
        title=f"The environment points at {', '.join(installs)} while the toolkit in use is {tk.path}",
        evidence=evidence,
        fix=fix,
    )


def _describe_dirs(env: EnvironmentFacts, dirs: Sequence[str]) -> str:
    """``the driver's lib64 and lib64/driver (/usr/local/Ascend/driver)`` -- missing
    directories named by their owner (the toolkit, the driver) and path inside it; others
    in full."""
    tk = (env.toolkit or EnvToolkit()).path or ""
    driver = (env.expected.driver if env.expected is not None else None) or ""
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
def loader_path_incomplete(ctx: RuleContext) -> Iterable[Finding]:
    """ENV003: sourced (or partly copied) but library directories are missing."""
    env = ctx.view.environment
    if _toolkit(env) is None or not sourced(env):
        return
    missing = _missing_paths(env, "LD_LIBRARY_PATH")
    missing_vars = variable_state(env, ctx.view.cann).missing_vars
    if not missing and not missing_vars:
        return
    evidence = [_toolkit_line(env, ctx.view.cann.selected_via)]
    if missing:
        evidence.append("LD_LIBRARY_PATH lacks (directories that exist): " + ", ".join(missing))
    if missing_vars:
        evidence.append("unset: " + ", ".join(missing_vars))
    evidence += _method_line(env)
    # an observed failure makes it an error: libraries the loader does not find lie in
    # exactly these directories (LIB001 names them and folds under this finding)
    # (only when the libraries were probed: health does not, and reads no library view)
    probed = ctx.view.present("libraries")
    unresolved = (
        [r for r in ctx.view.libraries.resolution if r.status == "missing" and not r.optional] if probed else []
    )
    unloaded = off_missing_dirs(env, unresolved)
    if unloaded:
        evidence.append(f"{', '.join(unloaded)} will not load: they lie in these directories only (LIB001)")
    script = _script(env)
    exports = _export_lines(env, missing_vars, {"LD_LIBRARY_PATH": list(missing)})
    fix = _source_or(script, exports)
    what = ([f"LD_LIBRARY_PATH lacks {_describe_dirs(env, missing)}"] if missing else []) + (
        ["CANN variables unset: " + ", ".join(missing_vars)] if missing_vars else []
    )
    how = "set_env.sh only partly applied" if script else "the toolkit's environment only partly applied"
    yield LOADER_PATH.finding(
        title="; ".join(what) + f" ({how})",
        evidence=evidence,
        fix=fix,
        severity="error" if unloaded else None,
    )


def _te_from_pip(ctx: RuleContext) -> bool:
    packages = ctx.view.packages
    return bool(packages.records("te") or packages.modules.get("tbe") or packages.modules.get("te"))


@rule
def pythonpath_missing(ctx: RuleContext) -> Iterable[Finding]:
    """ENV004: toolkit python/site-packages (te/tbe) not on PYTHONPATH."""
    env = ctx.view.environment
    if _toolkit(env) is None or not sourced(env):
        return
    missing = _missing_paths(env, "PYTHONPATH")
    tp = env.toolkit_python
    site = tp.site_packages if tp is not None else None
    if tp is None or not site or site not in missing or _te_from_pip(ctx):
        return
    have = [name for name, value in (("te", tp.te), ("tbe", tp.tbe)) if value]
    evidence = [
        _toolkit_line(env, ctx.view.cann.selected_via),
        f"{site} exists" + (f" and holds {', '.join(have)}" if have else ""),
    ]
    evidence.append("PYTHONPATH=" + env.current.get("PYTHONPATH", "(unset)"))
    yield PYTHONPATH.finding(
        title=f"PYTHONPATH lacks {site}: te/tbe will not import when operators compile",
        evidence=evidence,
        fix=_source_or(_script(env), [append_line("PYTHONPATH", missing)]),
    )


@rule
def nnal_not_sourced(ctx: RuleContext) -> Iterable[Finding]:
    """ENV005: NNAL installed, ATB_HOME_PATH unset or its lib not on LD_LIBRARY_PATH."""
    nnal = ctx.view.environment.nnal
    if nnal is None:
        return
    lib_on_path = nnal_lib_on_path(ctx.view.environment)
    if nnal.current_atb_home and lib_on_path:
        return
    script = nnal.script or None
    evidence = [f"NNAL {nnal.version or ''} at {nnal.path}".replace("  ", " ")]
    if not nnal.current_atb_home:
        evidence.append("ATB_HOME_PATH is unset")
    if not lib_on_path:
        lib = posixpath.join(str(nnal.current_atb_home or nnal.expected_atb_home), "lib")
        evidence.append(f"LD_LIBRARY_PATH lacks {lib} (libatb.so)")
    if not script:
        evidence.append(f"no set_env.sh in {nnal.path}: the fix sets what it would set")
    needs = _atb_needed(ctx)
    if needs:
        evidence.append(needs)
    fix: List[FixLine] = [SourceFile(script, note="after torch is installed")] if script else _nnal_exports(nnal)
    yield NNAL_NOT_SOURCED.finding(
        title="NNAL (ATB) is installed but nnal/atb/set_env.sh is not sourced",
        evidence=evidence,
        fix=fix + [_service_note(script)],
        severity="error" if needs else "warning",
    )


def _nnal_exports(nnal: EnvNnal) -> List[FixLine]:
    """What nnal/atb/set_env.sh sets for the ABI directory torch needs (see
    :func:`npudoctor.cann_env.nnal_variables`)."""
    home = nnal.expected_atb_home or ""
    if not home:
        return []
    return [
        Export("ATB_HOME_PATH", home),
        append_line("LD_LIBRARY_PATH", [f"{home}/lib", f"{home}/examples", f"{home}/tests/atbopstest"]),
        append_line("PATH", [f"{home}/bin"]),
    ]


def _atb_needed(ctx: RuleContext) -> str:
    """Why ATB must load (a package that loads it is installed), or ``""``."""
    for name in ("vllm-ascend", "mindie-turbo"):
        if ctx.view.packages.records(name):
            return f"{name} is installed and loads ATB"
    return ""


@rule
def custom_values(ctx: RuleContext) -> Iterable[Finding]:
    """ENV006: a CANN variable with a non-CANN custom value."""
    env = ctx.view.environment
    for item in variable_state(env, ctx.view.cann).differs:
        yield CUSTOM.finding(
            title=f"{item['name']}={item['current']} (set_env.sh would set {item['expected']})",
            evidence=[_toolkit_line(env, ctx.view.cann.selected_via), f"{item['name']}={item['current']}"],
            fix=[Export(item["name"], item["expected"], note="if the custom value was not intended")],
            subject=item["name"],
        )
