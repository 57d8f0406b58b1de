"""Error triage: find the known signatures in logs and rank their causes by the rule findings.

A use of the one pipeline, never a second judge of the facts:

* :mod:`npudoctor.triage.scan` streams logs in constant memory and groups what it finds
  (the signatures are knowledge: :mod:`npudoctor.knowledge.signatures`);
* :mod:`npudoctor.triage.rank` orders the candidate causes of each signature by the
  findings :func:`npudoctor.engine.evaluate` makes on the facts of the machine (a live
  collection, ``--root``, or a ``--from`` snapshot);
* the text view is :mod:`npudoctor.report.triage`; the command is
  :mod:`npudoctor.cli.commands.triage`.
"""

from __future__ import annotations

import io
from typing import Any, Dict, List, Mapping, Optional, Sequence

from npudoctor.findings import Finding
from npudoctor.knowledge.signatures import KBError, KnowledgeBase, load_kb
from npudoctor.triage.rank import STATUS_LABEL, judge_cause, rank
from npudoctor.triage.scan import CHUNK, MAX_LINE, MAX_UNKNOWN, Scanner, iter_log_files

__all__ = [
    "CHUNK",
    "MAX_LINE",
    "MAX_UNKNOWN",
    "STATUS_LABEL",
    "KBError",
    "KnowledgeBase",
    "Scanner",
    "findings_on",
    "iter_log_files",
    "judge_cause",
    "load_kb",
    "rank",
    "triage_text",
]


def findings_on(facts: Mapping[str, Any], matrix: Any = None) -> List[Finding]:
    """The rule findings on ``facts`` (a snapshot's ``facts`` dict): every rule of
    :func:`npudoctor.engine.evaluate` with default options and ``matrix`` (``None``: the
    bundled/cached matrix, or no matrix when it cannot be loaded)."""
    from npudoctor.context import Options
    from npudoctor.engine import evaluate
    from npudoctor.knowledge.matrix import MatrixError, load_matrix
    from npudoctor.snapshot import Snapshot

    if matrix is None:
        try:
            matrix = load_matrix()
        except MatrixError:
            matrix = None
    return evaluate(Snapshot(facts=dict(facts)), matrix, Options())


def triage_text(
    text: str, facts: Optional[Mapping[str, Any]] = None, findings: Optional[Sequence[Finding]] = None
) -> Dict[str, Any]:
    """Triage an in-memory log (tests, pasted text): the :func:`rank` result.

    ``facts``: the facts of the machine (``None``: nothing is ranked); ``findings``: the
    rule findings on them (``None``: computed with :func:`findings_on`)."""
    sc = Scanner(load_kb())
    sc.feed("<text>", io.BytesIO(text.encode("utf-8", "replace")))
    facts = dict(facts or {})
    if findings is None:
        findings = findings_on(facts) if facts else []
    return rank(sc, findings, facts)
