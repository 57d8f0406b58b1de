"""Compatibility verdicts graded by evidence (the severity policy, AUDIT §7, as refined for
npudoctor).

Every pairing judgement (torch ↔ torch_npu, torch_npu ↔ CANN, CANN ↔ kernels/NNAL, CANN ↔
driver, driver ↔ firmware, Python ↔ wheels, numpy ↔ CANN) returns a :class:`Verdict`: a
:class:`Grade` with the source that justifies it, in words a user can check.  The severity of a
finding follows from the grade (:func:`severity`), never from "not in the matrix":

=========================  ==========================================================  ========
grade                      evidence                                                    severity
=========================  ==========================================================  ========
paired                     an official pairing table                                   none
declared compatible        an official range, a release-note Y/N grid, or the          none
                           packages' own ``compatible_version`` ↔ ``innerversion``
same release line          a maintenance, alpha, beta or RC build of a paired or        info
                           declared version; ``.postN`` of a known line (rc/dev/
                           ``+git`` builds: their base line, named unofficial)          (warning
                                                                                        if unofficial)
undocumented               between or next to documented versions: no statement        warning
                           either way (a newer CANN than every declared one)           (info for a
                                                                                        driver newer
                                                                                        by ≤ ~1 year)
documented incompatible    an explicit N, a documented floor, or far outside every     error
                           documented window (≥ 3 CANN lines; > ~1 year of HDKs)
proven broken              a runtime probe or a log signature shows it                 error
=========================  ==========================================================  ========

In a container the host's driver and the image's CANN are installed and upgraded
separately, so their relation is always reported: ``severity(..., always_report=True)``
turns "none" into "info".
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING

from npudoctor.record import Record

if TYPE_CHECKING:
    from typing import Optional


class Grade(str, Enum):
    """How well the evidence supports a combination, strongest first."""

    PAIRED = "paired"
    DECLARED = "declared-compatible"
    SAME_LINE = "same-release-line"
    UNDOCUMENTED = "undocumented"
    INCOMPATIBLE = "documented-incompatible"
    BROKEN = "proven-broken"

    @property
    def words(self) -> str:
        """The grade as a user reads it ("declared compatible")."""
        return _WORDS[self]

    @property
    def works(self) -> bool:
        """Whether the evidence says the combination works (paired, declared, same line)."""
        return self in (Grade.PAIRED, Grade.DECLARED, Grade.SAME_LINE)


_WORDS = {
    Grade.PAIRED: "paired",
    Grade.DECLARED: "declared compatible",
    Grade.SAME_LINE: "same release line",
    Grade.UNDOCUMENTED: "not documented either way",
    Grade.INCOMPATIBLE: "documented incompatible",
    Grade.BROKEN: "proven broken",
}


class Verdict(Record):
    """One graded judgement of a version pairing.

    ``grade``: the evidence grade.  ``source``: where it comes from, in words ("the driver's
    own version.info compatible_version lists C22", "explicit N in the CANN 9.2.0 release
    notes").  ``unofficial``: an rc/dev/``+git``/local build mapped to its base line.
    ``window``: for documented incompatible or undocumented verdicts, what is known to work
    ("CANN 8.0.RC2 to 8.3.RC1"); ``recommend``: the build or version the fix should name.
    ``newer``: ``True`` when the installed version is newer than the documented ones,
    ``False`` when older, ``None`` when it does not apply.
    """

    grade: Grade
    source: str
    unofficial: bool = False
    window: str = ""
    recommend: str = ""
    newer: Optional[bool] = None

    def describe(self) -> str:
        """``"declared compatible (the driver's own version.info lists C22)"``; a source that
        already starts with the grade's words is not prefixed with them again
        (``"declared compatible by the toolkit's own ascend_toolkit_install.info: …"``)."""
        extra = ", an unofficial build" if self.unofficial else ""
        if self.source.lower().startswith(self.grade.words):
            return f"{self.source}{extra}"
        return f"{self.grade.words} ({self.source}{extra})"


def severity(verdict: Verdict, always_report: bool = False, mild: bool = False) -> Optional[str]:
    """The finding severity for ``verdict`` (``"error"`` | ``"warning"`` | ``"info"``), or
    ``None`` when no finding is due.

    ``always_report``: report a working pairing too, as ``info`` (the host driver ↔ image
    CANN relation in a container).  ``mild``: an undocumented combination that the policy
    rates ``info`` rather than ``warning`` (AUDIT §7 (c): a driver newer than every
    documented HDK by ≤ ~1 year; (d): one HDK release older on the same product line).
    Source: the severity policy (AUDIT §7) as refined for npudoctor (a newer CANN with no
    statement is a warning; an error needs an explicit N, a floor, a far-outside window or a failure)."""
    grade = verdict.grade
    if grade in (Grade.PAIRED, Grade.DECLARED):
        return "info" if always_report else None
    if grade is Grade.SAME_LINE:
        return "warning" if verdict.unofficial else "info"
    if grade is Grade.UNDOCUMENTED:
        return "info" if mild else "warning"
    return "error"
