"""The CANN variables set now against what ``set_env.sh`` would set: which are unset, which
hold a custom value and which point into another CANN install; whether a set_env.sh was
sourced at all, which entries it adds are missing, and whether NNAL's lib is on
``LD_LIBRARY_PATH``.

Judged on every run from the facts the ``environment`` probe read (``expected``,
``current``, ``paths``: how the diagnosed root resolves each value) and the toolkits the
``cann`` probe found, so a replayed snapshot is judged by the current rules.  The
``missing_vars``/``differs``/``stale`` lists, ``sourced``, ``missing_paths`` and
``nnal.lib_on_path`` older snapshots carry are ignored; without ``paths`` (older
snapshots) a path resolves to itself and its existence is unknown (an added entry whose
existence is unknown is not claimed missing)."""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING, Dict, Iterable, List, Optional, Tuple, TypedDict

from npudoctor.cann_env import cann_root
from npudoctor.facts.environment import EnvironmentFacts, EnvToolkit
from npudoctor.facts.stack import CannFacts, Toolkit
from npudoctor.record import MutableRecord, field

if TYPE_CHECKING:
    from npudoctor.facts.runtime_env import Resolution

#: set_env.sh's own scalar variables, judged unset / custom / stale.
SCALAR_VARS = ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH", "ASCEND_OPP_PATH", "ASCEND_AICPU_PATH", "TOOLCHAIN_HOME")
#: Variables whose value is a ``:`` list, each entry judged stale or not.
PATH_VARS = ("LD_LIBRARY_PATH", "PYTHONPATH", "PATH")


class Differs(TypedDict):
    """A scalar variable set to a custom value."""

    name: str
    expected: str
    current: str


class Stale(TypedDict):
    """A variable or path entry pointing into another CANN install than the selected one
    (``exists``: whether that path exists in the root, ``None`` when the snapshot does
    not say)."""

    variable: str
    value: str
    install: Optional[str]
    version: Optional[str]
    exists: Optional[bool]


class VariableState(MutableRecord):
    """``missing_vars``: expected scalar variables that are unset; ``differs``: the
    scalars set to a custom value (:class:`Differs`); ``stale``: variables or path entries
    pointing into another CANN install than the selected one (:class:`Stale`)."""

    missing_vars: List[str] = field(default_factory=list)
    differs: List[Differs] = field(default_factory=list)
    stale: List[Stale] = field(default_factory=list)


def _norm(path: str) -> str:
    return posixpath.normpath(path) if path else path


def _under(path: str, root: str) -> bool:
    return bool(root) and (path == root or path.startswith(root.rstrip("/") + "/"))


class _Paths:
    """Lookups in ``environment.paths`` (how the root resolves each value)."""

    def __init__(self, env: EnvironmentFacts) -> None:
        self.paths = env.paths

    def resolve(self, path: str) -> str:
        rec = self.paths.get(path)
        if rec is not None and rec.resolved:
            return rec.resolved
        return _norm(path)

    def exists(self, path: str) -> Optional[bool]:
        rec = self.paths.get(path)
        return rec.exists if rec is not None else None

    def is_dir(self, path: str) -> Optional[bool]:
        rec = self.paths.get(path)
        return rec.is_dir if rec is not None else None

    def present(self, entry: str, current: Iterable[str]) -> bool:
        """Whether ``entry`` is among the ``current`` path-list entries, as given or
        through the directory each resolves to."""
        entry_n = _norm(entry)
        target = self.resolve(entry_n)
        return any(_norm(cur) == entry_n or self.resolve(_norm(cur)) == target for cur in current)


def _entries(env: EnvironmentFacts, name: str) -> List[str]:
    """The non-empty entries of the ``:`` list ``name`` as set now."""
    return [p for p in (env.current.get(name) or "").split(":") if p]


def _install_of(paths: _Paths, value: str, installs: Iterable[Toolkit]) -> Optional[Toolkit]:
    """The toolkit record whose tree holds ``value`` (by path, alias or resolved dir)."""
    resolved = paths.resolve(value)
    for rec in installs:
        roots = {_norm(rec.path)}
        if rec.resolved:
            roots.add(_norm(rec.resolved))
        roots.add(paths.resolve(rec.path or "/"))
        for alias in rec.aliases:
            if alias.startswith("/"):
                roots.add(_norm(alias))
        roots.discard("")
        if any(_under(_norm(value), r) or _under(resolved, r) for r in roots):
            return rec
    return None


def _belongs_to_selected(paths: _Paths, value: str, toolkit: EnvToolkit, path: str) -> bool:
    roots = [path, paths.resolve(path)]
    if toolkit.resolved:
        roots.append(_norm(toolkit.resolved))
    resolved = paths.resolve(value)
    return any(_under(_norm(value), r) or _under(resolved, r) for r in roots)


def _stale(
    paths: _Paths, name: str, value: str, toolkit: EnvToolkit, path: str, installs: Tuple[Toolkit, ...]
) -> Optional[Stale]:
    """A stale-entry record when ``value`` points into a CANN install other than the
    selected toolkit (at ``path``), else ``None``."""
    value = _norm(value)
    if _belongs_to_selected(paths, value, toolkit, path):
        return None
    other = _install_of(paths, value, installs)
    if other is not None:
        # A different path to the very same install is not stale.
        if paths.resolve(str(other.path)) == paths.resolve(path):
            return None
        return {
            "variable": name,
            "value": value,
            "install": other.path,
            "version": other.version,
            "exists": paths.exists(value),
        }
    root = cann_root(value)
    if root is not None:
        if paths.resolve(root) in (paths.resolve(path), _norm(toolkit.resolved or "")):
            return None
        return {"variable": name, "value": value, "install": root, "version": None, "exists": paths.exists(value)}
    return None


def _other_installs(cann: CannFacts) -> Tuple[Toolkit, ...]:
    """The toolkits of the ``cann`` section other than the selected one."""
    return tuple(t for t in cann.toolkits if t != cann.selected)


def variable_state(env: EnvironmentFacts, cann: CannFacts) -> VariableState:
    """Judge the ``environment`` section's variables (see :class:`VariableState`).

    ``env``: the ``environment`` view (``toolkit``, ``expected.variables``, ``current``,
    ``paths``); ``cann``: the ``cann`` view (its ``toolkits`` and ``selected``).  Pure:
    reads nothing but its arguments; never raises (an empty state when no toolkit was
    found)."""
    state = VariableState()
    toolkit = env.toolkit
    if toolkit is None or not toolkit.path:
        return state
    path = toolkit.path
    paths = _Paths(env)
    installs = _other_installs(cann)
    variables = env.expected.variables if env.expected is not None else {}
    current = env.current
    stale: List[Stale] = []
    for name in SCALAR_VARS:
        want = variables.get(name)
        have = current.get(name)
        if want is None:
            continue
        if not have:
            state.missing_vars.append(name)
            continue
        if _norm(have) == _norm(want) or paths.resolve(have) == paths.resolve(want):
            continue
        hit = _stale(paths, name, have, toolkit, path, installs)
        if hit is not None:
            stale.append(hit)
        else:
            state.differs.append({"name": name, "expected": want, "current": have})
    for name in PATH_VARS:
        for entry in [p for p in (current.get(name) or "").split(":") if p]:
            hit = _stale(paths, name, entry, toolkit, path, installs)
            if hit is not None:
                stale.append(hit)
    seen = set()
    for item in stale:
        key = (item["variable"], item["value"])
        if key not in seen:
            seen.add(key)
            state.stale.append(item)
    return state


#: Variables only a sourced set_env.sh (or a copy of its lines) sets.
SOURCED_VARS = ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH", "ASCEND_OPP_PATH")


def sourced(env: EnvironmentFacts) -> Optional[bool]:
    """Whether some trace of a sourced set_env.sh is in the environment: one of
    :data:`SOURCED_VARS` set, or ``<toolkit>/lib64`` on ``LD_LIBRARY_PATH`` (as given or
    through the directory it resolves to).  ``None`` when no toolkit was found.  Pure."""
    toolkit = env.toolkit
    if toolkit is None or not toolkit.path:
        return None
    if any(env.current.get(v) for v in SOURCED_VARS):
        return True
    return _Paths(env).present(posixpath.join(toolkit.path, "lib64"), _entries(env, "LD_LIBRARY_PATH"))


def missing_paths(env: EnvironmentFacts) -> Dict[str, Tuple[str, ...]]:
    """``{variable: entries}``: the entries set_env.sh adds to ``LD_LIBRARY_PATH``,
    ``PYTHONPATH`` and ``PATH`` (NNAL's left out: :func:`nnal_lib_on_path`) that are
    directories in the root (``paths``; unknown counts as not) and are absent now.
    Variables lacking nothing are left out.  Pure."""
    out: Dict[str, Tuple[str, ...]] = {}
    if env.toolkit is None or not env.toolkit.path or env.expected is None:
        return out
    paths = _Paths(env)
    for name in PATH_VARS:
        current = _entries(env, name)
        absent = tuple(
            e
            for e in env.expected.added.get(name) or ()
            if paths.is_dir(e) and "/nnal/" not in e and not paths.present(e, current)
        )
        if absent:
            out[name] = absent
    return out


def off_missing_dirs(env: EnvironmentFacts, unresolved: Iterable[Resolution]) -> Tuple[str, ...]:
    """The names of the ``unresolved`` libraries (resolutions the loader will not find)
    that are on disk in a directory set_env.sh adds to ``LD_LIBRARY_PATH`` and the
    environment lacks now (:func:`missing_paths`, the directories ENV003 names), when
    set_env.sh was sourced or copied (:func:`sourced`).  Pure."""
    if not sourced(env):
        return ()
    dirs = {_norm(d) for d in missing_paths(env).get("LD_LIBRARY_PATH") or ()}
    return tuple(
        r.name for r in unresolved if any(f.usable and _norm(posixpath.dirname(f.path)) in dirs for f in r.found_at)
    )


def nnal_lib_on_path(env: EnvironmentFacts) -> Optional[bool]:
    """Whether NNAL's ``<ATB_HOME_PATH>/lib`` (the current ATB_HOME_PATH, else the one its
    set_env.sh would set) is on ``LD_LIBRARY_PATH``.  ``None`` without NNAL.  Pure."""
    nnal = env.nnal
    if nnal is None:
        return None
    home = nnal.current_atb_home or nnal.expected_atb_home
    if not home:
        return False
    return _Paths(env).present(posixpath.join(home, "lib"), _entries(env, "LD_LIBRARY_PATH"))


def recorded_set_env_script(env: EnvironmentFacts) -> Tuple[bool, Optional[str]]:
    """``(recorded, script)``: whether the environment probe recorded
    ``set_env_script`` (the set_env.sh that exists in the root and sets up the toolkit in
    use; ``None``: none does) and that script.  Probes since ``set_env_script`` always
    write it together with ``arch_source`` (a string whenever a toolkit was found), so
    ``arch_source`` tells a snapshot from before that key (``recorded`` False: the caller
    falls back to older facts)."""
    if env.set_env_script:
        return True, env.set_env_script
    return env.arch_source is not None, None
