"""Rules over the ``environment`` section: is the selected toolkit's (and NNAL's)
``set_env.sh`` in effect in the diagnosed environment? (kind K10, part of K11)"""

from __future__ import annotations

import posixpath
from typing import Any, Dict, Iterable, List

from npudoctor.findings import Code, Finding
from npudoctor.rules import rule

SERVICE_NOTE = (
    "For a systemd unit, Ray worker, Slurm job or Kubernetes pod, ~/.bashrc is not read: put the "
    "variables in the unit (Environment=/EnvironmentFile=) or the pod spec (env:), or start the "
    "command as `bash -c 'source {script} && exec <command>'`."
)

NOT_SOURCED = Code(
    "ENV001",
    "set-env-not-sourced",
    area="environment",
    severity="error",
    title="The CANN toolkit's set_env.sh is not sourced",
    explain=(
        "CANN is installed, but none of the variables its set_env.sh exports are set: "
        "ASCEND_TOOLKIT_HOME, ASCEND_HOME_PATH, ASCEND_OPP_PATH, and LD_LIBRARY_PATH lacks "
        "<toolkit>/lib64. `import torch_npu` then fails with `ImportError: libhccl.so: cannot open "
        "shared object file` (torch_npu adds: Please run 'source set_env.sh' in the CANN "
        "installation path), and operator compilation cannot find the kernels.\n\n"
        "npudoctor reads the toolkit's own set_env.sh (without running it) to know what it would set; "
        "when the script is missing it uses the documented list.\n\n"
        "Fix: `source /usr/local/Ascend/ascend-toolkit/set_env.sh` (8.5+: "
        "/usr/local/Ascend/cann/set_env.sh) in the shell that starts Python. Services (systemd, Ray, "
        "Kubernetes) do not read ~/.bashrc: set the variables in the unit or pod spec."
    ),
    kinds=("K10",),
)

STALE = Code(
    "ENV002",
    "stale-cann-environment",
    area="environment",
    severity="error",
    title="Environment variables point at another CANN install",
    explain=(
        "A CANN variable or a LD_LIBRARY_PATH/PYTHONPATH/PATH entry points into a CANN install "
        "other than the toolkit in use (an old version left in ~/.bashrc, an image ENV plus a "
        "sourced set_env.sh of a newer CANN, or a removed install). Mixing libraries of two CANN "
        "releases gives `undefined symbol` errors (for example in libgraph_base.so between 8.5.0 "
        "and 9.0.0) or loads the old libhccl.so.\n\nFix: remove the old entries (start a fresh "
        "shell, clean ~/.bashrc or the image ENV) and source the set_env.sh of the toolkit in use."
    ),
    kinds=("K10",),
)

LOADER_PATH = Code(
    "ENV003",
    "cann-loader-path-incomplete",
    area="environment",
    severity="warning",
    title="LD_LIBRARY_PATH lacks directories that set_env.sh adds",
    explain=(
        "CANN variables are set (set_env.sh was sourced, or the variables were copied into a "
        "service or container spec), but some library directories that the toolkit's set_env.sh "
        "adds to LD_LIBRARY_PATH are missing, e.g. the driver's lib64/common and lib64/driver "
        "(libc_sec.so, libascend_hal.so) or <toolkit>/lib64/plugin/opskernel. Symptoms: "
        "`libascend_hal.so`/`libc_sec.so: cannot open shared object file`, or failures only when an "
        "operator is first compiled.\n\nFix: source the toolkit's set_env.sh instead of copying a "
        "subset of its variables, or add the listed directories."
    ),
    kinds=("K10",),
)

PYTHONPATH = Code(
    "ENV004",
    "cann-pythonpath-missing",
    area="environment",
    severity="warning",
    title="PYTHONPATH lacks the toolkit's python/site-packages (te, tbe)",
    explain=(
        "The toolkit keeps its Python packages te and tbe in <toolkit>/python/site-packages and "
        "set_env.sh puts that directory on PYTHONPATH. Without it, eager inference works but the "
        "first graph/operator compilation fails: `ModuleNotFoundError: No module named "
        "'tbe.common'` → `TbeInit Failed` (typical for a training launcher started without "
        "set_env.sh).\n\nFix: source set_env.sh in the launcher's environment, or add "
        "<toolkit>/python/site-packages and <toolkit>/opp/built-in/op_impl/ai_core/tbe to PYTHONPATH."
    ),
    kinds=("K10",),
)

NNAL_NOT_SOURCED = Code(
    "ENV005",
    "nnal-set-env-not-sourced",
    area="environment",
    severity="warning",
    title="NNAL is installed but its set_env.sh is not sourced",
    explain=(
        "NNAL (ATB) is installed, but ATB_HOME_PATH is unset or its lib directory is not on "
        "LD_LIBRARY_PATH. torch_npu's ATB operators (libop_plugin_atb.so), vllm-ascend and MindIE "
        "then fail with `ImportError: libatb.so: cannot open shared object file`.\n\nFix: after "
        "torch is installed, `source /usr/local/Ascend/nnal/atb/set_env.sh` (it picks cxx_abi_0/1 "
        "from the installed torch)."
    ),
    kinds=("K11",),
)

CUSTOM = Code(
    "ENV006",
    "cann-variable-custom-value",
    area="environment",
    severity="info",
    title="A CANN variable has another value than set_env.sh would give",
    explain=(
        "A CANN variable (ASCEND_OPP_PATH, ASCEND_AICPU_PATH, TOOLCHAIN_HOME, ...) is set to a "
        "value that set_env.sh of the toolkit in use would not set and that is not another CANN "
        "install. This can be intended (custom operators in ASCEND_CUSTOM_OPP_PATH are the usual "
        "way), but a wrong ASCEND_OPP_PATH makes every kernel lookup fail.\n\nFix: if this was not "
        "intended, unset it and source set_env.sh."
    ),
    kinds=("K10",),
)


def _env(ctx: Any) -> Dict[str, Any]:
    value = ctx.facts("environment")
    return value if isinstance(value, dict) else {}


def _torch_npu_installed(ctx: Any) -> bool:
    installed = ctx.facts("packages").get("installed") or {}
    return isinstance(installed, dict) and any(
        str(k).lower().replace("_", "-") == "torch-npu" and v for k, v in installed.items()
    )


def _script(env: Dict[str, Any]) -> str:
    expected = env.get("expected") or {}
    script = expected.get("script")
    if script:
        return str(script)
    tk = (env.get("toolkit") or {}).get("path") or "/usr/local/Ascend/ascend-toolkit/latest"
    return posixpath.join(posixpath.dirname(str(tk)), "set_env.sh")


def _toolkit_line(env: Dict[str, Any]) -> str:
    tk = env.get("toolkit") or {}
    version = tk.get("version")
    via = tk.get("source")
    return f"CANN toolkit {version or '(version unknown)'} at {tk.get('path')}" + (
        f" (selected via {via})" if via else ""
    )


def _export_lines(env: Dict[str, Any], names: Iterable[str]) -> List[str]:
    variables = (env.get("expected") or {}).get("variables") or {}
    return [f"export {n}={variables[n]}" for n in names if n in variables]


def _method_line(env: Dict[str, Any]) -> List[str]:
    expected = env.get("expected") or {}
    method = expected.get("method")
    lines = []
    if method == "documented":
        lines.append(
            "no readable set_env.sh next to the toolkit: expected values are the documented set_env.sh variables"
        )
    elif expected.get("script"):
        lines.append(f"expected values from {expected['script']} ({method}, read, not executed)")
    skipped = expected.get("unsupported") or []
    if skipped:
        lines.append(
            f"{len(skipped)} construct(s) of the script were not interpreted, e.g. line {skipped[0].get('line')}: {skipped[0].get('text')}"
        )
    return lines


@rule
def set_env_not_sourced(ctx: Any) -> Iterable[Finding]:
    """ENV001: a toolkit is installed and nothing of its set_env.sh is in effect."""
    env = _env(ctx)
    if not env.get("toolkit") or env.get("sourced", True):
        return
    script = _script(env)
    severity = "error" if _torch_npu_installed(ctx) else "warning"
    missing_ld = (env.get("missing_paths") or {}).get("LD_LIBRARY_PATH") or []
    evidence = [_toolkit_line(env)]
    evidence.append("unset: " + ", ".join(env.get("missing_vars") or ["ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH"]))
    if missing_ld:
        evidence.append("LD_LIBRARY_PATH lacks " + ", ".join(missing_ld))
    evidence += _method_line(env)
    fix = [f"source {script}"]
    if (env.get("expected") or {}).get("method") == "documented":
        fix = _export_lines(env, ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH", "ASCEND_OPP_PATH", "ASCEND_AICPU_PATH"))
        fix += _export_lines(env, ("LD_LIBRARY_PATH", "PYTHONPATH", "PATH"))
    fix.append(SERVICE_NOTE.format(script=script))
    yield NOT_SOURCED.finding(
        title=f"CANN {((env.get('toolkit') or {}).get('version') or '')} is installed but its set_env.sh is not sourced".replace(
            "  ", " "
        ),
        evidence=evidence,
        fix=fix,
        severity=severity,
        subject=str((env.get("toolkit") or {}).get("path")),
    )


@rule
def stale_environment(ctx: Any) -> Iterable[Finding]:
    """ENV002: variables or path entries pointing into another CANN install."""
    env = _env(ctx)
    stale = [s for s in env.get("stale") or [] if isinstance(s, dict)]
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
        gone = "" if s.get("exists") else " (does not exist)"
        if s.get("variable") in ("LD_LIBRARY_PATH", "PYTHONPATH", "PATH"):
            evidence.append(f"{s['variable']} entry {s['value']}{gone} belongs to {ver} at {where}")
        else:
            evidence.append(f"{s['variable']}={s['value']}{gone} belongs to {ver} at {where}")
    if len(stale) > 12:
        evidence.append(f"... and {len(stale) - 12} more")
    script = _script(env)
    fix = [
        "Start a fresh shell (or remove the old CANN lines from ~/.bashrc, /etc/profile or the image ENV)",
        f"source {script}",
        SERVICE_NOTE.format(script=script),
    ]
    yield STALE.finding(
        title=f"The environment points at {', '.join(installs)} while the toolkit in use is {(env.get('toolkit') or {}).get('path')}",
        evidence=evidence,
        fix=fix,
    )


@rule
def loader_path_incomplete(ctx: Any) -> Iterable[Finding]:
    """ENV003: sourced (or partly copied) but library directories are missing."""
    env = _env(ctx)
    if not env.get("toolkit") or not env.get("sourced"):
        return
    missing = (env.get("missing_paths") or {}).get("LD_LIBRARY_PATH") or []
    missing_vars = env.get("missing_vars") or []
    if not missing and not missing_vars:
        return
    evidence = [_toolkit_line(env)]
    if missing:
        evidence.append("LD_LIBRARY_PATH lacks (directories that exist): " + ", ".join(missing))
    if missing_vars:
        evidence.append("unset: " + ", ".join(missing_vars))
    evidence += _method_line(env)
    script = _script(env)
    fix = [f"source {script}"]
    if missing:
        fix.append("or: export LD_LIBRARY_PATH=" + ":".join(missing) + ":$LD_LIBRARY_PATH")
    fix += _export_lines(env, missing_vars)
    yield LOADER_PATH.finding(
        title=(
            "LD_LIBRARY_PATH lacks " + ", ".join(posixpath.basename(m.rstrip("/")) or m for m in missing[:4])
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
    env = _env(ctx)
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
        fix=[f"source {_script(env)}", "or: export PYTHONPATH=" + ":".join(missing) + ":$PYTHONPATH"],
    )


@rule
def nnal_not_sourced(ctx: Any) -> Iterable[Finding]:
    """ENV005: NNAL installed, ATB_HOME_PATH unset or its lib not on LD_LIBRARY_PATH."""
    env = _env(ctx)
    nnal = env.get("nnal")
    if not isinstance(nnal, dict):
        return
    if nnal.get("current_atb_home") and nnal.get("lib_on_path"):
        return
    script = nnal.get("script") or posixpath.join(str(nnal.get("path") or "/usr/local/Ascend/nnal/atb"), "set_env.sh")
    evidence = [f"NNAL {nnal.get('version') or ''} at {nnal.get('path')}".replace("  ", " ")]
    if not nnal.get("current_atb_home"):
        evidence.append("ATB_HOME_PATH is unset")
    if not nnal.get("lib_on_path"):
        lib = posixpath.join(str(nnal.get("current_atb_home") or nnal.get("expected_atb_home")), "lib")
        evidence.append(f"LD_LIBRARY_PATH lacks {lib} (libatb.so)")
    needs = _atb_needed(ctx)
    if needs:
        evidence.append(needs)
    yield NNAL_NOT_SOURCED.finding(
        title="NNAL (ATB) is installed but nnal/atb/set_env.sh is not sourced",
        evidence=evidence,
        fix=[f"source {script}  # after torch is installed", SERVICE_NOTE.format(script=script)],
        severity="error" if needs else "warning",
    )


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
    env = _env(ctx)
    for item in env.get("differs") or []:
        if not isinstance(item, dict):
            continue
        yield CUSTOM.finding(
            title=f"{item.get('name')}={item.get('current')} (set_env.sh would set {item.get('expected')})",
            evidence=[_toolkit_line(env), f"{item.get('name')}={item.get('current')}"],
            fix=[f"export {item.get('name')}={item.get('expected')}  # if the custom value was not intended"],
            subject=str(item.get("name")),
        )
