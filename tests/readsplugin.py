"""A pytest plugin (``-p readsplugin``) recording which facts sections each public rule module
reads while the tests run: every :class:`npudoctor.facts.Facts` notes the sections asked of it
and charges them to the outermost ``npudoctor.rules.<module>`` frame on the stack (the rule or
rule-module function a test called; helpers in ``rules/_*.py`` are charged to their caller).
Active only when ``NPUDOCTOR_RECORD_READS`` names the JSON file to write ``{module: [sections]}``
to; ``tests/test_rule_registry.py`` runs the rule tests with it and checks the ``READS``."""

from __future__ import annotations

import json
import os
import sys
from collections import defaultdict
from typing import Any, Dict, Optional, Set

READS: Dict[str, Set[str]] = defaultdict(set)


def _rule_module() -> Optional[str]:
    frame: Any = sys._getframe(2)
    found = None
    while frame is not None:
        name = str(frame.f_globals.get("__name__", ""))
        if name.startswith("npudoctor.rules.") and not name.rsplit(".", 1)[-1].startswith("_"):
            found = name.rsplit(".", 1)[-1]
        frame = frame.f_back
    return found


def pytest_configure(config: Any) -> None:
    if not os.environ.get("NPUDOCTOR_RECORD_READS"):
        return
    from npudoctor.facts import Facts

    def wrap(original: Any, section: Optional[str] = None) -> Any:
        def noted(self: Facts, *args: Any) -> Any:
            module = _rule_module()
            if module is not None:
                READS[module].add(section or str(args[0]))
            return original(self, *args)

        return noted

    for method in ("_view", "present", "state", "problems", "fields_of"):
        setattr(Facts, method, wrap(getattr(Facts, method)))
    Facts.packages_of = wrap(Facts.packages_of, "packages")  # type: ignore[method-assign]


def pytest_unconfigure(config: Any) -> None:
    path = os.environ.get("NPUDOCTOR_RECORD_READS")
    if path:
        with open(path, "w", encoding="utf-8") as out:
            json.dump({module: sorted(sections) for module, sections in sorted(READS.items())}, out)
