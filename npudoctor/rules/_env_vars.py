"""The CANN variables set now against what ``set_env.sh`` would set: which are unset, which
hold a custom value and which point into another CANN install.

Judged on every run from the facts the ``environment`` probe read (``expected``,
``current``, ``paths``: how the diagnosed root resolves each value) and the toolkits the
``cann`` probe found, so a replayed snapshot is judged by the current rules.  The
``missing_vars``/``differs``/``stale`` lists older snapshots carry are ignored; without
``paths`` (older snapshots) a path resolves to itself and its existence is unknown."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional

from npudoctor.cann_env import cann_root

#: set_env.sh's own scalar variables, judged unset / custom / stale.
SCALAR_VARS = ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH", "ASCEND_OPP_PATH", "ASCEND_AICPU_PATH", "TOOLCHAIN_HOME")
#: Variables whose value is a ``:`` list, each entry judged stale or not.
PATH_VARS = ("LD_LIBRARY_PATH", "PYTHONPATH", "PATH")


@dataclass
class VariableState:
    """``missing_vars``: expected scalar variables that are unset; ``differs``:
    ``{"name", "expected", "current"}`` of a scalar set to a custom value; ``stale``:
    ``{"variable", "value", "install", "version", "exists"}`` of a variable or path entry
    pointing into another CANN install than the selected one (``exists``: whether that
    path exists in the root, ``None`` when the snapshot does not say)."""

    missing_vars: List[str] = field(default_factory=list)
    differs: List[Dict[str, Any]] = field(default_factory=list)
    stale: List[Dict[str, Any]] = field(default_factory=list)


def _norm(path: str) -> str:
    return posixpath.normpath(path) if path else path


def _under(path: str, root: str) -> bool:
    return bool(root) and (path == root or path.startswith(root.rstrip("/") + "/"))


class _Paths:
    """Lookups in ``environment.paths`` ({path: {"resolved", "exists"}})."""

    def __init__(self, paths: Any) -> None:
        self.paths: Mapping[str, Any] = paths if isinstance(paths, dict) else {}

    def resolve(self, path: str) -> str:
        rec = self.paths.get(path)
        if isinstance(rec, dict) and isinstance(rec.get("resolved"), str) and rec["resolved"]:
            return str(rec["resolved"])
        return _norm(path)

    def exists(self, path: str) -> Optional[bool]:
        rec = self.paths.get(path)
        value = rec.get("exists") if isinstance(rec, dict) else None
        return value if isinstance(value, bool) else None


def _install_of(paths: _Paths, value: str, installs: List[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The toolkit record whose tree holds ``value`` (by path, alias or resolved dir)."""
    resolved = paths.resolve(value)
    for rec in installs:
        roots = {_norm(str(rec.get("path") or ""))}
        if rec.get("resolved"):
            roots.add(_norm(str(rec["resolved"])))
        roots.add(paths.resolve(str(rec.get("path") or "/")))
        for alias in rec.get("aliases") or []:
            if isinstance(alias, str) and alias.startswith("/"):
                roots.add(_norm(alias))
        roots.discard("")
        if any(_under(_norm(value), r) or _under(resolved, r) for r in roots):
            return rec
    return None


def _belongs_to_selected(paths: _Paths, value: str, toolkit: Dict[str, Any]) -> bool:
    roots = [str(toolkit["path"]), paths.resolve(str(toolkit["path"]))]
    if toolkit.get("resolved"):
        roots.append(_norm(str(toolkit["resolved"])))
    resolved = paths.resolve(value)
    return any(_under(_norm(value), r) or _under(resolved, r) for r in roots)


def _stale(
    paths: _Paths, name: str, value: str, toolkit: Dict[str, Any], installs: List[Dict[str, Any]]
) -> Optional[Dict[str, Any]]:
    """A stale-entry record when ``value`` points into a CANN install other than the
    selected toolkit, else ``None``."""
    value = _norm(value)
    if _belongs_to_selected(paths, value, toolkit):
        return None
    other = _install_of(paths, value, installs)
    if other is not None:
        # A different path to the very same install is not stale.
        if paths.resolve(str(other.get("path"))) == paths.resolve(str(toolkit["path"])):
            return None
        return {
            "variable": name,
            "value": value,
            "install": other.get("path"),
            "version": other.get("version"),
            "exists": paths.exists(value),
        }
    root = cann_root(value)
    if root is not None:
        if paths.resolve(root) in (paths.resolve(str(toolkit["path"])), _norm(str(toolkit.get("resolved") or ""))):
            return None
        return {"variable": name, "value": value, "install": root, "version": None, "exists": paths.exists(value)}
    return None


def _dict(value: Any) -> Dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _other_installs(cann: Any) -> List[Dict[str, Any]]:
    """The toolkits of the ``cann`` section other than the selected one."""
    if not isinstance(cann, dict):
        return []
    selected = cann.get("selected") if isinstance(cann.get("selected"), dict) else None
    return [t for t in cann.get("toolkits") or [] if isinstance(t, dict) and t != selected]


def variable_state(env: Dict[str, Any], cann: Any) -> VariableState:
    """Judge the ``environment`` section's variables (see :class:`VariableState`).

    ``env``: the ``environment`` section (``toolkit``, ``expected.variables``,
    ``current``, ``paths``); ``cann``: the ``cann`` section (its ``toolkits`` and
    ``selected``) or ``{}``.  Pure: reads nothing but its arguments; never raises on odd
    facts (an empty state when no toolkit was found)."""
    state = VariableState()
    toolkit = env.get("toolkit")
    if not isinstance(toolkit, dict) or not toolkit.get("path"):
        return state
    paths = _Paths(env.get("paths"))
    installs = _other_installs(cann)
    expected = _dict(env.get("expected"))
    variables = _dict(expected.get("variables"))
    current = _dict(env.get("current"))
    stale: List[Dict[str, Any]] = []
    for name in SCALAR_VARS:
        want = variables.get(name)
        have = current.get(name)
        if want is None:
            continue
        if not have:
            state.missing_vars.append(name)
            continue
        have, want = str(have), str(want)
        if _norm(have) == _norm(want) or paths.resolve(have) == paths.resolve(want):
            continue
        hit = _stale(paths, name, have, toolkit, installs)
        if hit is not None:
            stale.append(hit)
        else:
            state.differs.append({"name": name, "expected": want, "current": have})
    for name in PATH_VARS:
        for entry in [p for p in str(current.get(name) or "").split(":") if p]:
            hit = _stale(paths, name, entry, toolkit, installs)
            if hit is not None:
                stale.append(hit)
    seen = set()
    for item in stale:
        key = (item["variable"], item["value"])
        if key not in seen:
            seen.add(key)
            state.stale.append(item)
    return state
