"""``npudoctor exec`` and ``npudoctor env``: run a command in the CANN environment.

The official CANN images start every container through an entrypoint that sources
``set_env.sh``.  ``npudoctor exec -- CMD [ARGS...]`` does the same job without running
any script of the machine:

1. find the toolkit in use and NNAL (the ``cann`` probe: ``facts["cann"]["selected"]``
   and ``facts["cann"]["nnal"]``);
2. compute what their ``set_env.sh`` would set (:func:`npudoctor.cann_env.expected_environment`,
   a static evaluation of the real script) -- or keep the environment when it already
   has that toolkit sourced;
3. run the quick checks of ``npudoctor health`` (:func:`npudoctor.health.evaluate_health`)
   against that environment, print one line per finding on stderr;
4. ``os.execvpe`` the command with that environment: the process is *replaced*, so the
   command keeps npudoctor's pid, receives the signals sent to it and its exit status is
   the container's.

``npudoctor env`` prints the environment of step 2 as ``export NAME='value'`` lines.

Exit statuses of ``exec`` follow coreutils ``env(1)``: :data:`EXIT_REFUSED` (125)
when npudoctor refuses (``--strict`` and errors) or cannot prepare, :data:`EXIT_CANNOT_RUN`
(126) when the command is found but cannot be executed, :data:`EXIT_NOT_FOUND` (127) when
it is not found; otherwise the command's own status.

This module imports neither Typer nor rich (the Typer commands are in
:mod:`npudoctor.cli.commands.exec_env`).
"""

from __future__ import annotations

import errno
import os
import posixpath
import shlex
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, TextIO

EXIT_REFUSED = 125
EXIT_CANNOT_RUN = 126
EXIT_NOT_FOUND = 127

#: Default budget (seconds) of the quick checks before the command starts.
DEFAULT_CHECK_TIMEOUT = 5.0

#: ``:``-lists that set_env.sh scripts prepend to (cleaned after composition).
PATH_VARS = ("LD_LIBRARY_PATH", "PYTHONPATH", "PATH")


class LaunchError(Exception):
    """npudoctor cannot prepare the environment (a bad ``--root``); exit 125."""


@dataclass
class EnvPlan:
    """The environment a command will run in, and why.

    ``environ``: the complete environment (name -> value).  ``base``: the environment it
    was computed from.  ``method``: ``"kept"`` (the toolkit was already sourced),
    ``"set_env.sh"`` / ``"set_env.sh (rebased)"`` / ``"documented"`` (see
    :func:`npudoctor.cann_env.expected_environment`), or ``"none"`` (no toolkit found:
    ``environ`` is ``base``).  ``toolkit``: the selected toolkit record of the cann probe
    (``path``, ``version``, ...) or ``None``; ``nnal``: the NNAL record or ``None``;
    ``script``: the set_env.sh evaluated; ``unsupported``: script lines skipped;
    ``notes``: human lines saying what was done.
    """

    environ: Dict[str, str]
    base: Dict[str, str]
    method: str
    toolkit: Optional[Dict[str, Any]] = None
    nnal: Optional[Dict[str, Any]] = None
    script: Optional[str] = None
    nnal_abi: Optional[int] = None
    unsupported: List[Dict[str, Any]] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)

    def changes(self) -> Dict[str, Optional[str]]:
        """Variables whose value differs from ``base``, sorted by name: ``{name: value}``,
        ``None`` for a variable that is removed."""
        out: Dict[str, Optional[str]] = {}
        for name in sorted(set(self.environ) | set(self.base)):
            new = self.environ.get(name)
            if new != self.base.get(name):
                out[name] = new
        return out

    def to_dict(self) -> Dict[str, Any]:
        """The JSON document of ``npudoctor env --json``."""
        changes = self.changes()
        tk = self.toolkit or {}
        return {
            "method": self.method,
            "toolkit": {"path": tk.get("path"), "version": tk.get("version"), "resolved": tk.get("resolved")}
            if self.toolkit
            else None,
            "nnal": {"path": self.nnal.get("path"), "version": self.nnal.get("version"), "abi": self.nnal_abi}
            if self.nnal
            else None,
            "script": self.script,
            "set": {k: v for k, v in changes.items() if v is not None},
            "unset": [k for k, v in changes.items() if v is None],
            "unsupported": list(self.unsupported),
            "notes": list(self.notes),
        }


def _split(value: Optional[str]) -> List[str]:
    return (value or "").split(":") if value else []


def clean_path_list(new: Optional[str], old: Optional[str]) -> Optional[str]:
    """A ``:``-list without repeated entries (the first one wins, as in every lookup).

    Empty entries mean "the current directory" to ``ld.so`` and Python; ``set_env.sh``
    leaves one behind (``...:$LD_LIBRARY_PATH`` with the variable unset), so they are
    dropped unless ``old`` (the value before) had one on purpose."""
    if new is None:
        return None
    keep_empty = "" in _split(old)
    out: List[str] = []
    for entry in new.split(":"):
        if entry == "" and not keep_empty:
            continue
        if entry in out:
            continue
        out.append(entry)
    return ":".join(out)


def _same_dir(host: Any, a: str, b: str) -> bool:
    a_n, b_n = posixpath.normpath(a), posixpath.normpath(b)
    return a_n == b_n or host.resolve(a_n) == host.resolve(b_n)


def toolkit_sourced(host: Any, environ: Mapping[str, str], toolkit_path: str) -> bool:
    """True when ``environ`` already has the toolkit at ``toolkit_path`` sourced:
    ``ASCEND_TOOLKIT_HOME`` (or ``ASCEND_HOME_PATH``) names it and its ``lib64`` is on
    ``LD_LIBRARY_PATH`` (the two things set_env.sh does that everything else needs).
    Paths are compared on the diagnosed machine (symlinks resolved)."""
    home = (environ.get("ASCEND_TOOLKIT_HOME") or environ.get("ASCEND_HOME_PATH") or "").strip()
    if not home or not _same_dir(host, home, toolkit_path):
        return False
    lib64 = posixpath.join(toolkit_path, "lib64")
    return any(e and _same_dir(host, e, lib64) for e in _split(environ.get("LD_LIBRARY_PATH")))


def nnal_sourced(environ: Mapping[str, str]) -> bool:
    """True when NNAL's set_env.sh has been sourced (``ATB_HOME_PATH`` is set)."""
    return bool((environ.get("ATB_HOME_PATH") or "").strip())


def plan_environment(
    root: Optional[str] = None,
    environ: Optional[Mapping[str, str]] = None,
    python: Optional[str] = None,
) -> EnvPlan:
    """Compute the environment ``exec``/``env`` run a command in.

    ``root``: the diagnosed root (``None``: this machine); ``environ``: the starting
    environment (default ``os.environ``); ``python``: the interpreter whose torch decides
    NNAL's C++ ABI directory (default: the one found by the python probe).  The toolkit
    and NNAL come from the cann probe (``facts["cann"]["selected"]``, ``["nnal"]``); the
    values from :func:`npudoctor.cann_env.expected_environment` (the toolkit's and NNAL's
    set_env.sh read and interpreted, never run; torch's ABI read from libc10.so's
    symbols by :func:`npudoctor.probes.environment.torch_cxx11_abi`).  A toolkit that is
    already sourced (:func:`toolkit_sourced`) is kept as is; NNAL is then added only when
    ``ATB_HOME_PATH`` is unset.  Raises :class:`LaunchError` when ``root`` is not a
    directory; never raises for odd installs (they end up in ``notes``/``unsupported``).
    """
    from npudoctor.cann_env import expected_environment, nnal_variables
    from npudoctor.engine import Options, collect
    from npudoctor.host import Host

    if root and not os.path.isdir(root):
        raise LaunchError(f"--root {root}: not a directory")
    base = dict(os.environ if environ is None else environ)
    host = Host(root=root or "/", environ=base)
    options = Options(python=python, quick=True, command_timeout=10.0)
    facts = collect(host, options, sections=("host", "cann")).facts
    cann = facts.get("cann") if isinstance(facts.get("cann"), dict) else {}
    selected = cann.get("selected") if isinstance(cann.get("selected"), dict) else None
    nnal = cann.get("nnal") if isinstance(cann.get("nnal"), dict) else None
    if selected is None or not selected.get("path"):
        return EnvPlan(
            environ=dict(base),
            base=base,
            method="none",
            notes=["no CANN toolkit found; the environment is left as it is"],
        )
    tk_path = str(selected["path"])
    label = f"CANN {selected.get('version') or '(version unknown)'} at {tk_path}"
    # `$(arch)` in set_env.sh: this machine's; under --root without system binaries the
    # toolkit's own arch (its <arch>-linux install info) stands in for it.
    arch = str((facts.get("host") or {}).get("arch") or selected.get("arch") or "x86_64")
    abi: Optional[bool] = None
    if nnal is not None and nnal.get("path"):
        abi = _torch_abi(host, python)
    else:
        nnal = None

    if toolkit_sourced(host, base, tk_path):
        plan = EnvPlan(environ=dict(base), base=base, method="kept", toolkit=selected, nnal=nnal)
        plan.notes.append(f"{label}: already sourced in this environment, kept")
        if nnal is not None and not nnal_sourced(base):
            nv = nnal_variables(host, str(nnal["path"]), abi)
            env = dict(base)
            env.update(nv["set"])
            for name, entries in nv["prepend"].items():
                env[name] = ":".join(list(entries) + _split(base.get(name)))
            plan.environ = _cleaned(env, base)
            plan.nnal_abi = nv.get("abi") if nv.get("abi") is not None else _abi_of(nv.get("atb_home"))
            plan.script = nv.get("script")
            plan.notes.append(f"NNAL {nnal.get('version') or ''} added from {nv.get('script') or nnal['path']}".strip())
        return plan

    exp = expected_environment(
        host,
        tk_path,
        nnal_path=str(nnal["path"]) if nnal else None,
        environ=base,
        arch=arch,
        cxx11_abi=abi,
    )
    plan = EnvPlan(
        environ=_cleaned(dict(exp["environ"]), base),
        base=base,
        method=str(exp["method"]),
        toolkit=selected,
        nnal=nnal,
        script=exp.get("script"),
        unsupported=list(exp.get("unsupported") or []),
    )
    how = {
        "set_env.sh": f"from {exp.get('script')}",
        "set_env.sh (rebased)": f"from {exp.get('script')} (its paths moved onto {tk_path})",
    }.get(plan.method, "from the documented set_env.sh variables (no readable script)")
    plan.notes.append(f"{label}: environment applied {how}")
    if exp.get("nnal"):
        plan.nnal_abi = _abi_of(exp["nnal"].get("atb_home"))
        plan.notes.append(
            f"NNAL {nnal.get('version') or ''} applied (ATB_HOME_PATH={exp['nnal'].get('atb_home')})".replace("  ", " ")
        )
    if plan.unsupported:
        plan.notes.append(f"{len(plan.unsupported)} line(s) of set_env.sh not understood; see `npudoctor env --json`")
    return plan


def _abi_of(atb_home: Optional[str]) -> Optional[int]:
    if atb_home and atb_home.rstrip("/")[-1:] in ("0", "1") and "cxx_abi_" in atb_home:
        return int(atb_home.rstrip("/")[-1])
    return None


def _torch_abi(host: Any, python: Optional[str]) -> Optional[bool]:
    """torch's C++11 ABI flag from its libc10.so (no import), or ``None``."""
    from npudoctor.engine import Options, collect
    from npudoctor.probes.environment import torch_cxx11_abi

    try:
        facts = collect(host, Options(python=python, quick=True), sections=("host", "python", "packages")).facts
        return torch_cxx11_abi(host, facts)[0]
    except Exception:  # an odd torch install must not stop the command from starting
        return None


def _cleaned(env: Dict[str, str], base: Mapping[str, str]) -> Dict[str, str]:
    for name in PATH_VARS:
        if name in env and env.get(name) != base.get(name):
            env[name] = clean_path_list(env[name], base.get(name)) or ""
    return env


def export_lines(plan: EnvPlan) -> List[str]:
    """``export NAME='value'`` (and ``unset NAME``) lines for ``eval "$(npudoctor env)"``,
    values quoted with :func:`shlex.quote`."""
    lines = []
    for name, value in plan.changes().items():
        if value is None:
            lines.append(f"unset {name}")
        else:
            lines.append(f"export {name}={shlex.quote(value)}")
    return lines


# ---------------------------------------------------------------------- checks
@dataclass
class CheckResult:
    """The quick checks run before the command: the health document (see
    :func:`npudoctor.health.evaluate_health`) or why there is none."""

    findings: List[Dict[str, Any]] = field(default_factory=list)
    failure: Optional[str] = None  # npudoctor failed or ran out of time (counts as an error)

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.get("severity") == "error") + (1 if self.failure else 0)


def quick_checks(
    plan: EnvPlan,
    root: Optional[str] = None,
    python: Optional[str] = None,
    user: Optional[str] = None,
    ignore: Sequence[str] = (),
    timeout: float = DEFAULT_CHECK_TIMEOUT,
) -> CheckResult:
    """Run ``npudoctor health``'s evaluation with the planned environment, within
    ``timeout`` seconds (the work runs in a daemon thread; when it does not finish, the
    commands it started are killed and the result says so)."""
    from npudoctor.health import build_parser, evaluate_health, kill_children

    argv = ["--timeout", repr(float(timeout))]
    for flag, value in (("--root", root), ("--python", python), ("--user", user)):
        if value:
            argv += [flag, value]
    for code in ignore:
        argv += ["--ignore", code]
    args = build_parser().parse_args(argv)
    state: Dict[str, Any] = {"step": "starting"}
    box: Dict[str, Any] = {}

    def work() -> None:
        try:
            box["doc"] = evaluate_health(args, state, environ=plan.environ)
        except BaseException as exc:
            box["error"] = f"{type(exc).__name__}: {exc}"

    worker = threading.Thread(target=work, name="npudoctor-exec-checks", daemon=True)
    worker.start()
    # Host.run enforces the command deadlines (0.6 x timeout); the extra second lets a
    # killed command be reaped before we give up on the thread.
    worker.join(timeout + 1.0)
    if worker.is_alive():
        kill_children()
        return CheckResult(failure=f"HOST090 the checks exceeded their {timeout:g} s budget while {state['step']}")
    if "error" in box:
        return CheckResult(failure=f"npudoctor failed: {box['error']}")
    return CheckResult(findings=list(box["doc"].get("findings") or []))


def finding_lines(result: CheckResult, quiet: bool = False) -> List[str]:
    """One line per finding (``--quiet``: errors only), terminal-safe."""
    from npudoctor.health import printable

    lines = []
    for f in result.findings:
        if quiet and f.get("severity") != "error":
            continue
        lines.append(printable(f"npudoctor: {f.get('severity')} {f.get('code')} {f.get('title')}"))
    if result.failure:
        lines.append(printable(f"npudoctor: error {result.failure}"))
    return lines


# ---------------------------------------------------------------------- exec
def resolve_command(name: str, environ: Mapping[str, str]) -> str:
    """The file ``name`` runs (looked up on ``environ['PATH']`` unless it holds a ``/``).

    Raises ``FileNotFoundError`` (not found) or ``PermissionError`` (found, not
    executable), as ``execvpe`` would."""
    if "/" in name:
        if not os.path.exists(name):
            raise FileNotFoundError(errno.ENOENT, "no such file", name)
        if os.path.isdir(name) or not os.access(name, os.X_OK):
            raise PermissionError(errno.EACCES, "not executable", name)
        return name
    found_unexecutable = None
    for directory in (environ.get("PATH") or os.defpath).split(":"):
        candidate = os.path.join(directory or ".", name)
        if os.path.isfile(candidate):
            if os.access(candidate, os.X_OK):
                return candidate
            found_unexecutable = found_unexecutable or candidate
    if found_unexecutable:
        raise PermissionError(errno.EACCES, "not executable", found_unexecutable)
    raise FileNotFoundError(errno.ENOENT, "command not found", name)


def run_exec(
    command: Sequence[str],
    *,
    root: Optional[str] = None,
    python: Optional[str] = None,
    user: Optional[str] = None,
    strict: bool = False,
    quiet: bool = False,
    timeout: float = DEFAULT_CHECK_TIMEOUT,
    ignore: Sequence[str] = (),
    environ: Optional[Mapping[str, str]] = None,
    stderr: Optional[TextIO] = None,
) -> int:
    """Prepare the environment, run the quick checks, then replace this process with
    ``command``.  Returns only when the command does not start: 125 (refused by
    ``strict``, or npudoctor cannot prepare), 126 (not executable), 127 (not found).
    Output goes to ``stderr`` (default ``sys.stderr``); stdout stays the command's."""
    err = stderr or sys.stderr

    def say(line: str) -> None:
        print(line, file=err)

    if not command:
        say("npudoctor exec: no command given (usage: npudoctor exec -- CMD [ARGS...])")
        return EXIT_REFUSED
    try:
        plan = plan_environment(root=root, environ=environ, python=python)
    except LaunchError as exc:
        say(f"npudoctor exec: {exc}")
        return EXIT_REFUSED
    if not quiet:
        for note in plan.notes:
            say(f"npudoctor: {note}")
    result = quick_checks(plan, root=root, python=python, user=user, ignore=ignore, timeout=timeout)
    for line in finding_lines(result, quiet=quiet):
        say(line)
    if strict and result.errors:
        say(f"npudoctor: refusing to start {command[0]}: {result.errors} error(s) found (--strict)")
        return EXIT_REFUSED
    try:
        path = resolve_command(command[0], plan.environ)
    except FileNotFoundError:
        say(f"npudoctor exec: {command[0]}: command not found")
        return EXIT_NOT_FOUND
    except PermissionError as exc:
        say(f"npudoctor exec: {exc.filename}: not executable")
        return EXIT_CANNOT_RUN
    err.flush()
    sys.stdout.flush()
    try:
        os.execvpe(path, list(command), plan.environ)
    except OSError as exc:  # ENOEXEC (no #! line), a race with the file going away, ...
        say(f"npudoctor exec: cannot run {path}: {exc.strerror or exc}")
        return EXIT_NOT_FOUND if exc.errno == errno.ENOENT else EXIT_CANNOT_RUN
    return EXIT_REFUSED  # not reached: execvpe does not return
