"""The one enum of exit statuses (re-exported by :mod:`npudoctor.cli.request`), in a module
of its own so that commands that need no :class:`~npudoctor.cli.request.MachineRequest`
(``explain``) do not import ``dataclasses`` for it (issue 18)."""

from enum import IntEnum


class ExitStatus(IntEnum):
    """Exit statuses of every command (see DESIGN "Exit statuses").

    ``check``/``devices``/``collect``/``triage``: OK, PROBLEMS (errors, or warnings with
    ``--strict``), USAGE, INTERNAL.  ``health``: OK or PROBLEMS only (Docker reserves 2).
    ``npd``: node-problem-detector's contract OK / PROBLEMS / NPD_UNKNOWN.  ``exec``: the
    workload's own status, or EXEC_REFUSED (``--strict`` refused to start it),
    EXEC_CANNOT_RUN (not executable), EXEC_NOT_FOUND (no such command).  ``matrix refresh``:
    NOT_WRITTEN (no source readable, result invalid or cache not writable).
    """

    OK = 0
    PROBLEMS = 1
    USAGE = 2
    NPD_UNKNOWN = 2
    INTERNAL = 3
    NOT_WRITTEN = 3
    EXEC_REFUSED = 125
    EXEC_CANNOT_RUN = 126
    EXEC_NOT_FOUND = 127
    INTERRUPTED = 130
