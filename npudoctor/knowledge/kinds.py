"""The root-cause kinds (``K01``..``K22``) by name, for every output that prints a kind
label (never a bare ``K10``).  Read from the ``[kinds]`` table of the packaged
``signatures.toml`` without building and validating every triage signature
(:func:`npudoctor.knowledge.signatures.load_kb` validates the same table; the tests load it).
"""

from __future__ import annotations

import os
from typing import Dict

#: The packaged triage knowledge base.
KB_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "signatures.toml")

_TITLES: Dict[str, str] = {}


def kind_titles() -> Dict[str, str]:
    """``{"K10": "one line", …}`` from the packaged knowledge base; empty when it cannot be
    read (the caller prints "(no description)")."""
    if not _TITLES:
        from npudoctor.tomlread import load_bundled

        try:
            kinds = load_bundled(KB_PATH).get("kinds", {})
        except (OSError, ValueError):
            return {}
        if isinstance(kinds, dict):
            _TITLES.update({str(k): str(v) for k, v in kinds.items()})
    return dict(_TITLES)
