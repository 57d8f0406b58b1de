"""Which environment a runtime check judges: a named workload's, this process's, or -- on a
host node, where this process is an agent -- the node's (what its CANN ``set_env.sh`` would
set).  Chosen from where the process runs (the markers of ``container.world``,
:func:`npudoctor.probes.container.where`).  Imports neither Typer nor rich.
"""

from __future__ import annotations

import os
from typing import Dict, Optional, Tuple

from npudoctor.record import replace
from npudoctor.session.request import MachineRequest

#: Launchers whose process environment is a workload's even on a host node
#: (``container.launched_by``: systemd's Environment=, a Slurm job's, a Ray worker's).
_WORKLOAD_LAUNCHERS = ("systemd", "slurm", "ray")


def judged_environment(
    machine: MachineRequest, pid: Optional[int] = None, exec_env: bool = False
) -> Tuple[Optional[Dict[str, str]], Dict[str, str]]:
    """The environment ``npudoctor health`` judges and why (``pid``: ``--pid``;
    ``exec_env``: ``--exec-env``): ``(environ, {"judged": WHICH, "because":
    text[, "world": WORLD]})``; ``environ`` ``None`` means the ``--env-file``'s, this
    process's, or ``--from``'s snapshot (:func:`npudoctor.runtime.quick.diagnosed_environ`).

    WHICH: ``"snapshot"`` (``--from``), ``"pid"`` (``/proc/PID/environ``), ``"exec-env"``
    (what ``npudoctor exec`` gives the workload), ``"env-file"``, and by default, chosen
    by where this process runs (:func:`npudoctor.probes.container.where`, the markers of
    ``container.world``): ``"process"`` in a container, pod or build step, or on a host
    when systemd, Slurm or Ray started it (its environment is the workload's: the image's
    ENV, the pod spec's env, the unit's Environment=, the job's); ``"node"`` on a host node
    otherwise (a timer, cron, a shell: this process's environment is the agent's), judged
    in what the node's CANN ``set_env.sh`` would set (as ``npudoctor env`` and ``npd``).
    Raises ``ValueError`` for an unreadable ``--pid`` or a bad ``--root``/``--env-file``."""
    from npudoctor.runtime.environment import LaunchError, pid_environ, plan_environment

    if machine.from_file:
        return None, {"judged": "snapshot", "because": "--from: the environment the snapshot recorded"}
    try:
        if pid is not None:
            environ = pid_environ(machine.root, pid)
            return environ, {"judged": "pid", "because": f"--pid {pid}: that process's environment"}
        node = replace(machine, user=None)
        if exec_env:
            because = "--exec-env: the environment `npudoctor exec` gives the workload (CANN set_env.sh applied)"
            return plan_environment(node).environ, {"judged": "exec-env", "because": because}
        if machine.env_file:
            return None, {"judged": "env-file", "because": f"--env-file {machine.env_file}"}
        from npudoctor.host import Host
        from npudoctor.probes.container import where

        found = where(Host(root=machine.root or "/", environ=dict(os.environ)))
        world = str(found["world"])
        if world != "host":
            because = (
                f"runs in a {world}: this process's environment is the workload's (the image's ENV, the pod's env)"
            )
            return None, {"judged": "process", "world": world, "because": because}
        for launcher in found["launched_by"]:
            if launcher.get("name") in _WORKLOAD_LAUNCHERS:
                because = (
                    f"on a host, started by {launcher['name']} ({launcher.get('evidence')}): "
                    "this process's environment is the workload's"
                )
                return None, {"judged": "process", "world": world, "because": because}
        because = (
            "on a host node this process's environment is the agent's, not a workload's: judged what the "
            "node's CANN set_env.sh would set (as `npudoctor env`); --env-file or --pid name a workload"
        )
        return plan_environment(node).environ, {"judged": "node", "world": world, "because": because}
    except LaunchError as exc:
        raise ValueError(str(exc)) from None
