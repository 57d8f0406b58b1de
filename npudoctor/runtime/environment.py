"""What the CANN ``set_env.sh`` scripts would set: the environment ``npudoctor exec`` runs
a command in and ``npudoctor env`` prints.

1. find the toolkit in use and NNAL (the ``cann`` probe: ``facts["cann"]["selected"]``
   and ``facts["cann"]["nnal"]``);
2. compute what their ``set_env.sh`` would set (:func:`npudoctor.cann_env.expected_environment`,
   a static evaluation of the real script, never run) -- or keep the environment when it
   already has that toolkit sourced.

Public API: :class:`EnvPlan`, :func:`plan_environment` (a machine),
:func:`plan_from_snapshot` (a snapshot written by ``collect``), :func:`export_lines`.

This module imports neither Typer nor rich (the Typer commands are in
:mod:`npudoctor.cli.commands.exec_env`).
"""

from __future__ import annotations

import os
import posixpath
import shlex
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple, Union

from npudoctor.facts import Facts
from npudoctor.facts._typed import dump
from npudoctor.record import MutableRecord, field
from npudoctor.session.request import MachineRequest

if TYPE_CHECKING:
    from npudoctor.facts.environment import EnvToolkit
    from npudoctor.facts.stack import Nnal, Toolkit
    from npudoctor.host import Host
    from npudoctor.snapshot import Snapshot

#: ``:``-lists that set_env.sh scripts prepend to (cleaned after composition).
PATH_VARS = ("LD_LIBRARY_PATH", "PYTHONPATH", "PATH")


class LaunchError(Exception):
    """npudoctor cannot prepare the environment: a bad ``--root``, ``--user``,
    ``--env-file`` or ``--from``, or ``--from`` combined with options it cannot honour."""


class EnvPlan(MutableRecord):
    """The environment a command will run in, and why.

    ``environ``: the complete environment (name -> value).  ``base``: the environment it
    was computed from.  ``method``: ``"kept"`` (the toolkit was already sourced),
    ``"set_env.sh"`` / ``"set_env.sh (rebased)"`` / ``"documented"`` (see
    :func:`npudoctor.cann_env.expected_environment`), or ``"none"`` (no toolkit found:
    ``environ`` is ``base``).  ``toolkit``: the selected toolkit record of the cann probe
    (a :class:`~npudoctor.facts.stack.Toolkit` view; from a snapshot without one, its
    environment probe's toolkit) or ``None``; ``nnal``: the NNAL view or ``None``;
    ``script``: the set_env.sh evaluated; ``unsupported``: script lines skipped;
    ``notes``: human lines saying what was done.
    """

    environ: Dict[str, str]
    base: Dict[str, str]
    method: str
    toolkit: Optional[Union[Toolkit, EnvToolkit]] = None
    nnal: Optional[Nnal] = None
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
        tk, nnal = self.toolkit, self.nnal
        return {
            "method": self.method,
            "toolkit": {"path": tk.path, "version": tk.version, "resolved": tk.resolved} if tk is not None else None,
            "nnal": {"path": nnal.path, "version": nnal.version, "abi": self.nnal_abi} if nnal is not None else None,
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
    return a_n == b_n or (host is not None and host.resolve(a_n) == host.resolve(b_n))


def toolkit_sourced(host: Any, environ: Mapping[str, str], toolkit_path: str) -> bool:
    """True when ``environ`` already has the toolkit at ``toolkit_path`` sourced:
    ``ASCEND_TOOLKIT_HOME`` (or ``ASCEND_HOME_PATH``) names it and its ``lib64`` is on
    ``LD_LIBRARY_PATH`` (the two things set_env.sh does that everything else needs).
    Paths are compared on the diagnosed machine (symlinks resolved; ``host=None``: as
    written, for a replayed snapshot)."""
    home = (environ.get("ASCEND_TOOLKIT_HOME") or environ.get("ASCEND_HOME_PATH") or "").strip()
    if not home or not _same_dir(host, home, toolkit_path):
        return False
    lib64 = posixpath.join(toolkit_path, "lib64")
    return any(e and _same_dir(host, e, lib64) for e in _split(environ.get("LD_LIBRARY_PATH")))


def nnal_sourced(environ: Mapping[str, str]) -> bool:
    """True when NNAL's set_env.sh has been sourced (``ATB_HOME_PATH`` is set)."""
    return bool((environ.get("ATB_HOME_PATH") or "").strip())


def plan_environment(machine: Optional[MachineRequest] = None, environ: Optional[Mapping[str, str]] = None) -> EnvPlan:
    """Compute the environment ``exec``/``env`` run a command in.

    ``machine``: the machine options -- ``root`` (``None``: this machine); ``python``: the
    interpreter whose torch decides NNAL's C++ ABI directory (default: the one found by
    the python probe); ``user``: compute the environment of that account's login
    (``HOME``, ``USER``, ``LOGNAME`` from the root's ``/etc/passwd``, so a toolkit
    installed in its ``~/Ascend`` is found); ``env_file``: start from that file's
    environment; ``no_commands``: run no interpreter; ``from_file``: plan from a snapshot
    instead (:func:`plan_from_snapshot`).  ``environ``: the starting environment (default:
    the ``--env-file``'s, else ``os.environ``).

    The toolkit and NNAL come from the cann probe (``facts["cann"]["selected"]``,
    ``["nnal"]``); the values from :func:`npudoctor.cann_env.expected_environment` (the
    toolkit's and NNAL's set_env.sh read and interpreted, never run; torch's ABI read from
    libc10.so's symbols by :func:`npudoctor.probes.environment.torch_cxx11_abi`).  A
    toolkit that is already sourced (:func:`toolkit_sourced`) is kept as is; NNAL is then
    added only when ``ATB_HOME_PATH`` is unset.  Raises :class:`LaunchError` for a bad
    option (``root`` not a directory, an unknown ``user``, an unreadable ``env_file`` or
    ``from_file``, ``from_file`` with another machine option); never raises for odd
    installs (they end up in ``notes``/``unsupported``).
    """
    from npudoctor.context import Options
    from npudoctor.engine import collect

    machine = machine or MachineRequest()
    conflict = machine.replay_conflict()
    if conflict:
        raise LaunchError(conflict)
    if machine.from_file:
        from npudoctor.snapshot import Snapshot, SnapshotError

        try:
            return plan_from_snapshot(Snapshot.load(machine.from_file))
        except SnapshotError as exc:
            raise LaunchError(str(exc)) from None
    host, base = _machine_host(machine, environ)
    options = Options(python=machine.python, quick=True, command_timeout=10.0)
    facts = Facts(collect(host, options, sections=("host", "cann")).facts)
    selected = facts.cann.selected
    if selected is None or not selected.path:
        return _no_toolkit(base)
    label = f"CANN {selected.version or '(version unknown)'} at {selected.path}"
    abi: Optional[bool] = None
    nnal = facts.cann.nnal
    if nnal is not None and nnal.path:
        abi = _torch_abi(host, machine.python)
    else:
        nnal = None
    if toolkit_sourced(host, base, selected.path):
        return _kept_plan(host, base, selected, nnal, abi, label)
    # `$(arch)` in set_env.sh: this machine's; under --root without system binaries the
    # toolkit's own arch (its <arch>-linux install info) stands in for it.
    arch = facts.host.arch or selected.arch or "x86_64"
    return _applied_plan(host, base, selected, nnal, abi, arch, label)


def _machine_host(machine: MachineRequest, environ: Optional[Mapping[str, str]]) -> Tuple[Host, Dict[str, str]]:
    """The Host of the machine options and the environment it starts from (the
    ``--user``'s login when one is given).  Raises :class:`LaunchError` for a bad option."""
    from npudoctor.host import Host
    from npudoctor.runtime.quick import diagnosed_environ

    root = machine.root
    if root and not os.path.isdir(root):
        raise LaunchError(f"--root {root}: not a directory")
    try:
        base = diagnosed_environ(machine, environ)
    except ValueError as exc:
        raise LaunchError(str(exc)) from None
    if machine.user:
        base = _account_environ(Host(root=root or "/", environ=base), machine.user, base)
    return Host(root=root or "/", environ=base, commands=machine.commands), base


def _kept_plan(
    host: Host, base: Dict[str, str], selected: Toolkit, nnal: Optional[Nnal], abi: Optional[bool], label: str
) -> EnvPlan:
    """The plan for an environment that has the toolkit sourced: kept as is, NNAL added
    when its set_env.sh has not been sourced."""
    from npudoctor.cann_env import nnal_variables

    plan = EnvPlan(environ=dict(base), base=base, method="kept", toolkit=selected, nnal=nnal)
    plan.notes.append(f"{label}: already sourced in this environment, kept")
    if nnal is not None and not nnal_sourced(base):
        nv = nnal_variables(host, nnal.path, abi)
        env = dict(base)
        env.update(nv["set"])
        for name, entries in nv["prepend"].items():
            env[name] = ":".join(list(entries) + _split(base.get(name)))
        plan.environ = _cleaned(env, base)
        plan.nnal_abi = nv.get("abi") if nv.get("abi") is not None else _abi_of(nv.get("atb_home"))
        plan.script = nv.get("script")
        plan.notes.append(f"NNAL {nnal.version or ''} added from {nv.get('script') or nnal.path}".strip())
    return plan


def _applied_plan(
    host: Host,
    base: Dict[str, str],
    selected: Toolkit,
    nnal: Optional[Nnal],
    abi: Optional[bool],
    arch: str,
    label: str,
) -> EnvPlan:
    """The plan that applies the toolkit's (and NNAL's) set_env.sh, read and interpreted."""
    from npudoctor.cann_env import expected_environment

    tk_path = selected.path
    exp = expected_environment(
        host,
        tk_path,
        nnal_path=nnal.path if nnal else None,
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
    if exp.get("nnal") and nnal is not None:
        plan.nnal_abi = _abi_of(exp["nnal"].get("atb_home"))
        plan.notes.append(
            f"NNAL {nnal.version or ''} applied (ATB_HOME_PATH={exp['nnal'].get('atb_home')})".replace("  ", " ")
        )
    if plan.unsupported:
        plan.notes.append(f"{len(plan.unsupported)} line(s) of set_env.sh not understood; see `npudoctor env --json`")
    return plan


def pid_environ(root: Optional[str], pid: int) -> Dict[str, str]:
    """The environment process ``pid`` was started with: ``/proc/<pid>/environ`` of the
    judged machine (under ``root``: ``<root>/proc/<pid>/environ``, e.g. the host's procfs
    of a node agent mounted at ``/host``), read through the Host (capped, never blocking).
    ``PATH`` is kept from it.  Raises :class:`LaunchError` when it cannot be read (no
    such process; another user's process needs root or CAP_SYS_PTRACE: run as that user
    or as root) or holds no variable."""
    from npudoctor.host import Host

    if pid <= 0:
        raise LaunchError(f"--pid {pid}: not a process id")
    host = Host(root=root or "/", environ={})
    path = f"/proc/{pid}/environ"
    data, error, _truncated = host.read_bytes(path, limit=1 << 20)
    if data is None:
        raise LaunchError(
            f"--pid {pid}: cannot read {path} ({error or 'unreadable'}); another user's process needs "
            "root or CAP_SYS_PTRACE, and a node agent in a pod needs hostPID and the host's / mounted"
        )
    env: Dict[str, str] = {}
    for item in data.split(b"\0"):
        name, sep, value = item.partition(b"=")
        if sep and name and b"\n" not in name:
            env[name.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    if not env:
        raise LaunchError(f"--pid {pid}: {path} holds no variable (a kernel thread or a process that cleared it)")
    return env


def _no_toolkit(base: Dict[str, str], where: str = "") -> EnvPlan:
    return EnvPlan(
        environ=dict(base),
        base=base,
        method="none",
        notes=[f"no CANN toolkit found{where}; the environment is left as it is"],
    )


def _account_environ(host: Any, user: str, base: Dict[str, str]) -> Dict[str, str]:
    """``base`` as the login of ``user`` (a name or uid) starts it: ``HOME``, ``USER`` and
    ``LOGNAME`` from the root's ``/etc/passwd``.  Raises :class:`LaunchError` for a name
    that is not there (a uid without an entry changes nothing)."""
    from npudoctor.parsers.accounts import parse_passwd
    from npudoctor.probes.host import user_problem

    problem = user_problem(host, user)
    if problem:
        raise LaunchError(problem)
    entries = parse_passwd(host.read_text("/etc/passwd").text or "")
    key = "uid" if user.isdecimal() else "name"
    wanted: Any = int(user) if user.isdecimal() else user
    entry = next((e for e in entries if e[key] == wanted), None)
    env = dict(base)
    if entry is not None:
        if entry["home"]:
            env["HOME"] = entry["home"]
        env["USER"] = env["LOGNAME"] = entry["name"]
    return env


def plan_from_snapshot(snapshot: Snapshot) -> EnvPlan:
    """The plan from a snapshot written by ``npudoctor collect`` (a
    :class:`npudoctor.snapshot.Snapshot`, read through its typed views): the starting
    environment is the CANN-related variables it recorded (``environment.current``), the
    values those its environment probe computed from set_env.sh (``environment.expected``:
    ``variables`` and the path entries ``added``).  Method ``"none"`` when the snapshot names
    no toolkit.  Never raises."""
    facts = Facts(snapshot.facts)
    env_facts, cann = facts.environment, facts.cann
    base = dict(env_facts.current)
    toolkit, expected = env_facts.toolkit, env_facts.expected
    if toolkit is None or not toolkit.path or expected is None:
        return _no_toolkit(base, " in the snapshot")
    selected: Union[Toolkit, EnvToolkit] = cann.selected if cann.selected is not None else toolkit
    nnal_exp = expected.nnal
    nnal = cann.nnal if nnal_exp is not None else None
    tk_path = toolkit.path
    label = f"CANN {selected.version or '(version unknown)'} at {tk_path} (from the snapshot)"
    variables = dict(expected.variables)
    added = {name: list(entries) for name, entries in expected.added.items()}
    atb_home = nnal_exp.atb_home if nnal_exp is not None else None
    kept = toolkit_sourced(None, base, tk_path)
    if kept:
        atb = atb_home or ""
        if nnal is None or nnal_sourced(base) or not atb:
            plan = EnvPlan(environ=dict(base), base=base, method="kept", toolkit=selected, nnal=nnal)
            plan.notes.append(f"{label}: already sourced in that environment, kept")
            return plan
        variables = {k: v for k, v in variables.items() if k == "ATB_HOME_PATH"}
        added = {k: [e for e in v if e.startswith(atb)] for k, v in added.items()}
    env = dict(base)
    for name, value in variables.items():
        if name in PATH_VARS:
            continue
        env[name] = value
    for name in PATH_VARS:
        entries = added.get(name) or []
        if entries:
            env[name] = ":".join(entries + [e for e in _split(base.get(name)) if e not in entries])
    plan = EnvPlan(
        environ=_cleaned(env, base),
        base=base,
        method="kept" if kept else (expected.method or "documented"),
        toolkit=selected,
        nnal=nnal,
        script=expected.script,
        nnal_abi=_abi_of(atb_home),
        unsupported=[dump(line) for line in expected.unsupported],
    )
    plan.notes.append(f"{label}: environment applied as the snapshot's set_env.sh evaluation recorded it")
    return plan


def _abi_of(atb_home: Optional[str]) -> Optional[int]:
    if atb_home and atb_home.rstrip("/")[-1:] in ("0", "1") and "cxx_abi_" in atb_home:
        return int(atb_home.rstrip("/")[-1])
    return None


def _torch_abi(host: Any, python: Optional[str]) -> Optional[bool]:
    """torch's C++11 ABI flag from its libc10.so (no import), or ``None``."""
    from npudoctor.context import Options
    from npudoctor.engine import collect
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
