"""``npudoctor health``'s command line: one argparse parser (:func:`build_parser`) and the
typed :class:`HealthOptions` made of what it read.

``health`` runs every few seconds in containers and keeps its own contract (exit 0 or 1
only: Docker reserves 2), so :mod:`npudoctor.entry` dispatches it here before Typer is
imported; every other command goes through the Typer app.  ``npudoctor health`` in the
Typer app (listed in ``--help``) hands its words to the same parser; ``health --help`` is
answered by the Typer app (help is not on the probe path), from :func:`help_rows`."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from npudoctor.record import Record, field
from npudoctor.session.request import MachineRequest

if TYPE_CHECKING:
    import argparse
    from typing import Any, Dict, List, NoReturn, Optional, Sequence, Tuple

DEFAULT_TIMEOUT = 0.9

#: What ``health`` does, said once for ``npudoctor --help``, ``health --help`` and argparse.
DESCRIPTION = """Fast container health check for Docker HEALTHCHECK and Kubernetes probes.  It
checks that the devices are visible and openable, the driver files mounted, the chips healthy,
the CANN environment applied and torch/torch_npu/CANN paired.

Exit codes: 0 healthy, also when an area could not be checked or the --timeout ran out before it
was judged ("not checked: ..." / "unknown: ...": a busy node is not a sick one); 1 unhealthy (also
for bad options, internal errors and an npu-smi that hung on a node not starved of CPU)."""


class OptionError(ValueError):
    """A command line health's parser refuses (the message says why, with a near option
    name when there is one): the caller answers *unhealthy* (exit 1), never exit 2."""


def build_parser() -> argparse.ArgumentParser:
    """health's parser.  A usage problem raises :class:`OptionError`."""
    import argparse
    import functools

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:
            if message.startswith("unrecognized arguments: "):
                from npudoctor.session.terminal import close_options

                known = [o for action in self._actions for o in action.option_strings]
                unknown = next((w for w in message.split(": ", 1)[1].split() if w.startswith("--")), "")
                near = close_options(unknown, known) if unknown else []
                if near:
                    message += f" (did you mean {' or '.join(near)}?)"
            raise OptionError(message)

    # argparse never prints health's help (the Typer app does) nor its usage (``error``
    # above): a fixed width spares every option a look at the terminal, and the import
    # of shutil that look costs.
    parser = _Parser(
        prog="npudoctor health",
        description=DESCRIPTION,
        formatter_class=functools.partial(argparse.RawDescriptionHelpFormatter, width=100),
    )
    add = parser.add_argument
    add("--root", metavar="DIR", help="inspect DIR as if it were /")
    add("--python", metavar="PATH", help="inspect this interpreter's packages")
    add("--user", metavar="NAME|UID", help="judge device access for this account")
    add(
        "--env-file",
        metavar="FILE",
        help="diagnose the environment in FILE (NAME=value lines) instead of this one",
    )
    add(
        "--pid",
        type=int,
        metavar="PID",
        help="diagnose the environment of this workload process (/proc/PID/environ) instead of this one",
    )
    add("--from", dest="from_file", metavar="FILE", help="judge a snapshot written by `npudoctor collect`")
    add("--json", action="store_true", help="print a JSON document")
    add("--color", "--no-color", dest="color", action="store_const", const=None, help="accepted (the output is plain)")
    add("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS", help="hard total budget (default 0.9)")
    add("--require", type=int, metavar="N", help="at least N NPU chips must be visible")
    add(
        "--require-checked",
        action="append",
        default=[],
        metavar="AREA",
        help="an area that must be checked: not checked (no npu-smi, --no-commands, a timeout) is unhealthy "
        "(repeatable)",
    )
    add("--skip", action="append", default=[], metavar="AREA", help="leave out an area (repeatable)")
    add("--only", action="append", default=[], metavar="AREA", help="check only these areas")
    add("--fail-on", choices=("error", "warning"), default="error", help="severity that makes it unhealthy")
    add("--ignore", action="append", default=[], metavar="CODE", help="silence a finding code")
    add("--matrix", metavar="FILE", help="use this matrix file")
    add("--no-commands", action="store_true", help="run no external command (npu-smi)")
    add(
        "--exec-env",
        action="store_true",
        help="judge the environment `npudoctor exec` gives the workload (the CANN set_env.sh variables "
        "applied), not this process's: use it when the container's entrypoint is `npudoctor exec`, and "
        "from a systemd timer's service, whose own environment is the agent's (on a host node outside "
        "systemd/Slurm, e.g. cron or a shell, that is the default)",
    )
    add(
        "--cache-ttl",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="reuse a result younger than this (default 0: judge anew on every run)",
    )
    add(
        "-v",
        "--verbose",
        action="store_true",
        help="say on stderr which environment was judged and why (by default: in a container, pod or "
        "systemd/Slurm job this process's; on a host node what its CANN set_env.sh would set)",
    )
    add(
        "--fallback-ttl",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="when the budget runs out, repeat the last finished verdict if younger than this "
        "(default 0: answer unknown)",
    )
    return parser


def help_rows() -> List[Tuple[str, str]]:
    """The options of :func:`build_parser` as (names and metavar, help) rows for the help
    of the Typer command (:mod:`npudoctor.cli.commands.health`), the layout of every other
    command's help: each help a sentence, capitalised and ending with a full stop."""
    rows: List[Tuple[str, str]] = []
    for action in build_parser()._actions:
        if not action.option_strings or action.dest == "help":
            continue
        term = ", ".join(action.option_strings)
        if action.nargs != 0:
            choices = "[" + "|".join(map(str, action.choices)) + "]" if action.choices else None
            term += f" {action.metavar or choices or action.dest.upper()}"
        text = str(action.help or "")
        rows.append((term, text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")))
    return rows


def parse_values(argv: Sequence[str]) -> Dict[str, Any]:
    """The option values of ``argv`` (dest -> value).  Raises :class:`OptionError` for a
    command line the parser refuses (argparse's ``--help`` is not on health's path: the
    console entry hands it to the Typer app)."""
    return vars(build_parser().parse_args(list(argv)))


class HealthOptions(Record):
    """``npudoctor health``'s options, typed.

    ``machine``: ``--root --python --user --env-file --no-commands --from --json``.
    ``timeout``: the hard total budget, seconds in (0, 3600].  ``require``: chips that must
    be visible.  ``only``/``skip``: areas.  ``fail_on``: ``"error"`` or ``"warning"``.
    ``ignore``: codes or names to drop.  ``matrix``: a matrix file.  ``exec_env``: judge
    the environment ``npudoctor exec`` would give the workload.  ``cache_ttl``: seconds a
    previous result may be reused (0: never).  ``require_checked``: areas that must be
    checked.  ``fallback_ttl``: seconds a finished verdict stands in for one the budget
    cut short (0: never).  ``pid``: judge that process's environment (``/proc/PID/environ``).
    """

    machine: MachineRequest = field(default_factory=MachineRequest)
    timeout: float = DEFAULT_TIMEOUT
    require: Optional[int] = None
    only: Tuple[str, ...] = ()
    skip: Tuple[str, ...] = ()
    fail_on: str = "error"
    ignore: Tuple[str, ...] = ()
    matrix: Optional[str] = None
    exec_env: bool = False
    cache_ttl: float = 0.0
    require_checked: Tuple[str, ...] = ()
    fallback_ttl: float = 0.0
    pid: Optional[int] = None
    verbose: bool = False

    def problem(self) -> Optional[str]:
        """Why these options cannot be honoured (the reason of a "bad health-check
        option"), or ``None``."""
        if not (math.isfinite(self.timeout) and 0 < self.timeout <= 3600):
            return "--timeout must be a number of seconds in (0, 3600]"
        if not math.isfinite(self.cache_ttl) or self.require is not None and self.require < 0:
            return "--cache-ttl and --require must be finite and not negative"
        if not (math.isfinite(self.fallback_ttl) and self.fallback_ttl >= 0):
            return "--fallback-ttl must be a finite number of seconds, not negative"
        if self.pid is not None and (self.exec_env or self.machine.env_file or self.machine.from_file):
            return "--pid names the workload's environment: not with --exec-env, --env-file or --from"
        if self.only or self.skip or self.require_checked:
            from npudoctor.runtime.quick import areas

            try:
                areas(self.only + self.skip + self.require_checked)
            except ValueError as exc:
                return str(exc)
        return None


def options_from_values(values: Dict[str, Any]) -> HealthOptions:
    """The typed options from :func:`parse_values`' values."""
    return HealthOptions(
        machine=MachineRequest(
            root=values["root"],
            python=values["python"],
            user=values["user"],
            env_file=values["env_file"],
            no_commands=values["no_commands"],
            from_file=values["from_file"],
            json=values["json"],
        ),
        timeout=values["timeout"],
        require=values["require"],
        only=tuple(values["only"]),
        skip=tuple(values["skip"]),
        fail_on=values["fail_on"],
        ignore=tuple(values["ignore"]),
        matrix=values["matrix"],
        exec_env=values["exec_env"],
        cache_ttl=values["cache_ttl"],
        require_checked=tuple(values["require_checked"]),
        fallback_ttl=values["fallback_ttl"],
        pid=values["pid"],
        verbose=values["verbose"],
    )
