"""Runtime tunables: the values of the variables torch_npu, CANN and HCCL read at start, and
of their CUDA-named twins, as the diagnosed process's environment holds them (read, never
judged: rules/tunables.py judges them against knowledge/data/tunables.toml).

Section ``tunables``::

    variables  {name: value} of every watched variable that is set (empty values included)
"""

from __future__ import annotations

from typing import Any, Dict

from npudoctor.engine import ProbeContext
from npudoctor.knowledge.tunables import watched_names

SECTION = "tunables"
NEEDS = ()


def probe(ctx: ProbeContext) -> Dict[str, Any]:
    env = ctx.host.environ
    return {"variables": {name: env[name] for name in watched_names() if name in env}}
