"""Probes: read the machine through the Host seam, never judge, never import torch.

Each module defines ``SECTION`` (the record it writes), ``NEEDS`` (the sections it
reads through ``ctx.facts``), optional ``QUICK``/``DEEP``/``SLOW`` flags and
``probe(ctx) -> dict`` (see :mod:`npudoctor.engine`).  Modules are discovered
automatically; the run order is derived from ``NEEDS``.
"""

from __future__ import annotations

from typing import Any, Dict


def mapping(value: Any) -> Dict[str, Any]:
    """``value`` when it is a JSON object (a dict), else an empty one: how a probe reads an
    earlier section, or a record in it, that may be absent or malformed."""
    return value if isinstance(value, dict) else {}
