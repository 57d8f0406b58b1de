"""Runtime tunables: the values of the variables torch_npu, CANN and HCCL read at start, and
of their CUDA-named twins, as the diagnosed process's environment holds them (read, never
judged: rules/tunables.py judges them against knowledge/data/tunables.toml).

Section ``tunables``::

    variables  {name: value} of every watched variable that is set (empty values included)
    dirs       {name: {"path", "exists": bool, "parent_exists": bool}} for the set variables
               whose reader creates the directory with one mkdir (absolute paths only)
"""

from __future__ import annotations

import posixpath
from typing import Any, Dict

from npudoctor.context import ProbeContext
from npudoctor.knowledge.tunables import table, watched_names

SECTION = "tunables"
NEEDS = ()


def probe(ctx: ProbeContext) -> Dict[str, Any]:
    env = ctx.host.environ
    variables = {name: env[name] for name in watched_names() if name in env}
    dirs: Dict[str, Any] = {}
    for name, var in table().variables.items():
        path = variables.get(name, "")
        if var.grammar == "dir_parent" and path.startswith("/"):
            parent = posixpath.dirname(posixpath.normpath(path))
            dirs[name] = {"path": path, "exists": ctx.host.is_dir(path), "parent_exists": ctx.host.is_dir(parent)}
    return {"variables": variables, "dirs": dirs}
