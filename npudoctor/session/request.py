"""What every command that looks at a machine receives, how it talks to the terminal, and
how it ends.

- :class:`MachineRequest`: the machine options (``--root --python --user --env-file
  --no-commands --from --json``), parsed once and accepted uniformly by ``check``,
  ``devices``, ``health``, ``exec``, ``env``, ``npd``, ``collect`` and ``triage``.
- :class:`Environment`: npudoctor's own streams, terminal facts and clock, injected so that
  commands run in-process in tests (the idea of HTTPie's ``httpie/context.py``).
- :class:`ExitStatus`: the one enum of exit statuses, one member per meaning; each command
  decides its status in one place and returns a member of it
  (:data:`npudoctor.session.status.COMMAND_STATUSES`: which command may end with which).

This module imports neither Typer nor rich: ``health`` uses it before Typer is imported.
:class:`Environment`, :class:`UsageError` and the colour options live in
:mod:`npudoctor.session.terminal`, :class:`ExitStatus` in :mod:`npudoctor.session.status` (both
re-exported here).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npudoctor.record import Record
from npudoctor.session.status import ExitStatus
from npudoctor.session.terminal import COLOR_FLAGS, Environment, UsageError, take_color_flags

if TYPE_CHECKING:
    from typing import Dict, Mapping, Optional

__all__ = [
    "COLOR_FLAGS",
    "DEFAULT_DEADLINE",
    "Environment",
    "ExitStatus",
    "MachineRequest",
    "UsageError",
    "take_color_flags",
]


#: Default overall deadline of probing one machine in ``check``, ``collect``, ``devices``
#: and ``triage`` (seconds; ``--deadline``).  ``health`` keeps its own budget.
DEFAULT_DEADLINE = 15.0


class MachineRequest(Record):
    """The machine a command looks at, and how.

    ``root``: a directory seen as ``/`` (``None``: this machine).  ``python``: the
    interpreter to judge (``None``: the one npudoctor runs in, or the root's).  ``user``:
    account (name or uid) whose device access is judged.  ``env_file``: ``NAME=value``
    lines describing the workload's environment instead of this process's.
    ``no_commands``: run no external command.  ``from_file``: replay a snapshot instead of
    probing.  ``json``: print the JSON contract (``collect``: the snapshot, on stdout).
    ``deadline``: seconds the probes of the machine may take in all (the deep probe's own
    deadline comes on top); commands still running then are killed and reported.
    """

    root: Optional[str] = None
    python: Optional[str] = None
    user: Optional[str] = None
    env_file: Optional[str] = None
    no_commands: bool = False
    from_file: Optional[str] = None
    json: bool = False
    deadline: float = DEFAULT_DEADLINE

    @property
    def commands(self) -> bool:
        """Whether external commands (``npu-smi``, the target interpreter) may run."""
        return not self.no_commands

    def replay_conflict(self) -> Optional[str]:
        """Why this request cannot be carried out, or ``None``: ``--from`` replays a snapshot,
        so an option that would probe a machine (``--root``, ``--python``, ``--user``,
        ``--env-file``, ``--no-commands``) would be silently ignored; that is refused."""
        if not self.from_file:
            return None
        given = [
            flag
            for flag, value in (
                ("--root", self.root),
                ("--python", self.python),
                ("--user", self.user),
                ("--env-file", self.env_file),
                ("--no-commands", self.no_commands),
            )
            if value
        ]
        if not given:
            return None
        return f"--from replays a snapshot; it cannot be combined with {' or '.join(given)}"

    def workload_environ(self, own: Mapping[str, str]) -> Dict[str, str]:
        """The environment of the diagnosed workload: the ``--env-file``'s (``PATH`` from
        ``own`` unless the file sets it), else a copy of ``own`` (npudoctor's own
        environment).  Raises ``ValueError`` for an unreadable or malformed env file."""
        if not self.env_file:
            return dict(own)
        from npudoctor.parsers.envfile import load_env_file

        return dict(load_env_file(self.env_file, own.get("PATH", "/usr/bin:/bin")))
