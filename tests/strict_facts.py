"""One check shared by the tests that hold real snapshots: every facts section fits its typed
view with no problem and no key the view does not declare (strict mode)."""

from __future__ import annotations

import json
from typing import Any, Dict, List

from npudoctor.facts import SECTIONS
from npudoctor.facts._typed import Problems, load


def undeclared(facts: Dict[str, Any]) -> List[str]:
    """``"section: path: message"`` for every problem the views find in ``facts`` (a
    snapshot's ``facts`` object, JSON round-tripped first); ``[]`` when all fit."""
    facts = json.loads(json.dumps(facts))
    out: List[str] = []
    for name in facts:
        if name not in SECTIONS:
            out.append(f"{name}: no view for this section")
            continue
        _, problems = load(SECTIONS[name], facts[name], Problems(strict=True))
        out.extend(f"{name}: {line}" for line in problems.as_list())
    return out
