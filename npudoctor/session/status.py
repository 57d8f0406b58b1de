"""The one enum of exit statuses (re-exported by :mod:`npudoctor.session.request`) and the one
table of which statuses each command may end with (:data:`COMMAND_STATUSES`)."""

from __future__ import annotations

from enum import IntEnum
from typing import Dict, Tuple


class ExitStatus(IntEnum):
    """Exit statuses of every command (see DESIGN "Exit statuses"): one member per meaning.

    A member is the process exit code (an ``int``); two meanings may share a code -- npd's
    ``unknown`` and a usage error are both 2 -- and stay two members, each printed with its
    own name (the member's value is its meaning, not its code, so neither is an alias of
    the other).  Which command ends with which status: :data:`COMMAND_STATUSES`.
    """

    # each member: (exit code, meaning); the meaning is the member's value
    OK = (0, "ok")
    PROBLEMS = (1, "problems")
    USAGE = (2, "usage")
    NPD_UNKNOWN = (2, "npd-unknown")
    INTERNAL = (3, "internal")
    NOT_WRITTEN = (3, "not-written")
    EXEC_REFUSED = (125, "exec-refused")
    EXEC_CANNOT_RUN = (126, "exec-cannot-run")
    EXEC_NOT_FOUND = (127, "exec-not-found")
    INTERRUPTED = (130, "interrupted")

    def __new__(cls, code: int, meaning: str) -> ExitStatus:
        member = int.__new__(cls, code)
        member._value_ = meaning  # type: ignore[assignment]  # the meaning, so that no member is an alias
        return member

    def __repr__(self) -> str:
        return f"<{type(self).__name__}.{self.name}: {int(self)}>"

    @property
    def code(self) -> int:
        """The process exit code."""
        return int(self)


_COMMON = (ExitStatus.OK, ExitStatus.PROBLEMS, ExitStatus.USAGE, ExitStatus.INTERNAL, ExitStatus.INTERRUPTED)

#: The statuses each command may end with.  ``check``/``devices``/``collect``/``triage``/
#: ``compare``/``plan``/``explain``: OK, PROBLEMS (errors, or warnings with ``--strict``),
#: USAGE, INTERNAL.  ``health``: OK or PROBLEMS only (Docker reserves 2).  ``npd``:
#: node-problem-detector's contract OK / PROBLEMS / NPD_UNKNOWN.  ``exec``: the workload's
#: own status, or EXEC_REFUSED (``--strict`` refused to start it), EXEC_CANNOT_RUN (not
#: executable), EXEC_NOT_FOUND (no such command).  ``matrix``: NOT_WRITTEN when ``refresh``
#: wrote nothing (no source readable, result invalid or cache not writable).
COMMAND_STATUSES: Dict[str, Tuple[ExitStatus, ...]] = {
    "check": _COMMON,
    "collect": _COMMON,
    "compare": _COMMON,
    "devices": _COMMON,
    "env": _COMMON,
    "explain": _COMMON,
    "plan": _COMMON,
    "triage": _COMMON,
    "matrix": _COMMON + (ExitStatus.NOT_WRITTEN,),
    "health": (ExitStatus.OK, ExitStatus.PROBLEMS),
    "npd": (ExitStatus.OK, ExitStatus.PROBLEMS, ExitStatus.NPD_UNKNOWN),
    "exec": _COMMON + (ExitStatus.EXEC_REFUSED, ExitStatus.EXEC_CANNOT_RUN, ExitStatus.EXEC_NOT_FOUND),
}
