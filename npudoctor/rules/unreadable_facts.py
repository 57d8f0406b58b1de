"""Sections of the facts that could not be read (typed validation at the boundary).

Code ``HOST005`` (area host).  Facts read: every section's state through ``ctx.view.state``
and ``ctx.view.problems`` (the typed views of :mod:`npudoctor.facts` keep what fits and record
the rest).  A malformed section is one finding; ``HOST050`` ("no NPU stack") is not said when
a section it rests on could not be read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npudoctor.context import RuleContext
from npudoctor.facts import SECTIONS
from npudoctor.findings import Finding
from npudoctor.knowledge import codes
from npudoctor.rules import postprocess, rule

if TYPE_CHECKING:
    from typing import Iterable, List

READS = tuple(name for name in SECTIONS if name != "_errors")

UNREADABLE_SECTION = codes.get("HOST005")

#: Sections "no NPU stack" (HOST050) is concluded from.
_STACK_SECTIONS = ("cann", "driver", "packages", "devices", "python")

_SHOWN = 8


def _malformed(ctx: RuleContext) -> List[str]:
    return [
        name
        for name in SECTIONS
        if name != "_errors" and ctx.view.present(name) and ctx.view.state(name) == "malformed"
    ]


@rule
def unreadable_sections(ctx: RuleContext) -> Iterable[Finding]:
    """HOST005: one finding naming the sections whose values do not fit their typed views."""
    names = _malformed(ctx)
    if not names:
        return
    problems = [f"{name}.{p}" for name in names for p in ctx.view.problems(name)]
    more = len(problems) - _SHOWN
    yield UNREADABLE_SECTION.finding(
        title=f"could not read section{'s' if len(names) > 1 else ''} {', '.join(names)} of the facts: "
        f"{len(problems)} value(s) of the wrong type were dropped, and nothing is concluded from them",
        evidence=problems[:_SHOWN] + ([f"... and {more} more"] if more > 0 else []),
        fix=["Collect the facts again with this npudoctor (npudoctor collect -o node.json) and judge that"],
        data={"sections": names, "problems": problems[:50]},
    )


@postprocess
def no_stack_needs_readable_sections(ctx: RuleContext, findings: List[Finding]) -> List[Finding]:
    """Leave out HOST050 when a section it rests on could not be read."""
    if not any(name in _STACK_SECTIONS for name in _malformed(ctx)):
        return findings
    return [f for f in findings if f.code != "HOST050"]
