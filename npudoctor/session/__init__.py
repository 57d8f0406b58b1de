"""The request seam: what every command that looks at a machine receives and how it ends.

- :mod:`~npudoctor.session.request`: :class:`MachineRequest` (the machine options, parsed
  once) and :data:`DEFAULT_DEADLINE`.
- :mod:`~npudoctor.session.terminal`: :class:`Environment` (npudoctor's own streams,
  terminal facts and clock) and the colour options.
- :mod:`~npudoctor.session.status`: :class:`ExitStatus` and which command may end with which.
- :mod:`~npudoctor.session.machine`: request -> Host -> snapshot -> findings
  (:func:`~npudoctor.session.machine.judge`), the one service of every machine command.
- :mod:`~npudoctor.session.pyselect`: which Python interpreter a command judges.

Nothing here imports Typer, rich or :mod:`npudoctor.cli` (``health`` uses this package
before Typer is imported); :mod:`npudoctor.cli` builds on it.
"""
