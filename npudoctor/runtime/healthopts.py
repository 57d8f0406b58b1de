"""``npudoctor health``'s options: the one table of them (:data:`OPTIONS`), the argparse
parser made of it (``--help`` and usage errors), the plain reader of the usual command lines
(:func:`parse_plain`: no argparse on the path of a check that runs every few seconds), and
the typed :class:`HealthOptions`.  Imports neither argparse (until a command line needs
it), ``dataclasses`` nor ``typing`` (issue 18)."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from npudoctor.cli.request import ExitStatus, MachineRequest

if TYPE_CHECKING:
    import argparse
    from typing import Any, Callable, Dict, NoReturn, Optional, Sequence, Tuple

DEFAULT_TIMEOUT = 0.9
_FAIL_ON = ("error", "warning")

#: health's options, the one definition of them: ``(flags, dest, kind, type, default,
#: metavar, help)``; ``kind`` is ``"value"`` (one argument, converted by ``type``),
#: ``"append"`` (repeatable), ``"flag"`` (``store_true``) or ``"accepted"`` (a flag that
#: changes nothing).  :func:`build_parser` makes the argparse parser of it (``--help``,
#: usage errors) and :func:`parse_plain` parses the usual command lines without argparse.
OPTIONS: Tuple[Tuple[Tuple[str, ...], str, str, Optional[Callable[[str], Any]], Any, Optional[str], str], ...] = (
    (("--root",), "root", "value", str, None, "DIR", "inspect DIR as if it were /"),
    (("--python",), "python", "value", str, None, "PATH", "inspect this interpreter's packages"),
    (("--user",), "user", "value", str, None, "NAME|UID", "judge device access for this account"),
    (
        ("--env-file",),
        "env_file",
        "value",
        str,
        None,
        "FILE",
        "diagnose the environment in FILE (NAME=value lines) instead of this one",
    ),
    (
        ("--pid",),
        "pid",
        "value",
        int,
        None,
        "PID",
        "diagnose the environment of this workload process (/proc/PID/environ) instead of this one",
    ),
    (("--from",), "from_file", "value", str, None, "FILE", "judge a snapshot written by `npudoctor collect`"),
    (("--json",), "json", "flag", None, False, None, "print a JSON document"),
    (("--color", "--no-color"), "color", "accepted", None, None, None, "accepted (the output is plain)"),
    (("--timeout",), "timeout", "value", float, DEFAULT_TIMEOUT, "SECONDS", "hard total budget (default 0.9)"),
    (("--require",), "require", "value", int, None, "N", "at least N NPU chips must be visible"),
    (
        ("--require-checked",),
        "require_checked",
        "append",
        str,
        None,
        "AREA",
        "an area that must be checked: not checked (no npu-smi, --no-commands, a timeout) is unhealthy (repeatable)",
    ),
    (("--skip",), "skip", "append", str, None, "AREA", "leave out an area (repeatable)"),
    (("--only",), "only", "append", str, None, "AREA", "check only these areas"),
    (("--fail-on",), "fail_on", "value", str, "error", None, "severity that makes it unhealthy"),
    (("--ignore",), "ignore", "append", str, None, "CODE", "silence a finding code"),
    (("--matrix",), "matrix", "value", str, None, "FILE", "use this matrix file"),
    (("--no-commands",), "no_commands", "flag", None, False, None, "run no external command (npu-smi)"),
    (
        ("--exec-env",),
        "exec_env",
        "flag",
        None,
        False,
        None,
        "judge the environment `npudoctor exec` gives the workload (the CANN set_env.sh variables "
        "applied), not this process's: use it when the container's entrypoint is `npudoctor exec`, and "
        "from a systemd timer's service, whose own environment is the agent's (on a host node outside "
        "systemd/Slurm, e.g. cron or a shell, that is the default)",
    ),
    (("--cache-ttl",), "cache_ttl", "value", float, 0.0, "SECONDS", "reuse a result younger than this"),
    (
        ("--fresh",),
        "fresh",
        "flag",
        None,
        False,
        None,
        "judge everything anew (by default the last verdict is reused when every file, listing and "
        "command output it was made from is unchanged)",
    ),
    (
        ("-v", "--verbose"),
        "verbose",
        "flag",
        None,
        False,
        None,
        "say on stderr which environment was judged and why (by default: in a container, pod or "
        "systemd/Slurm job this process's; on a host node what its CANN set_env.sh would set)",
    ),
    (
        ("--fallback-ttl",),
        "fallback_ttl",
        "value",
        float,
        0.0,
        "SECONDS",
        "when the budget runs out, repeat the last finished verdict if younger than this (default 0: answer unknown)",
    ),
)
#: The choices of the options that have them.
_CHOICES = {"fail_on": _FAIL_ON}


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of :data:`OPTIONS`: ``--help``, and the usage errors of a
    command line :func:`parse_plain` leaves to it (reported as *unhealthy*, exit 1)."""
    import argparse

    class _Parser(argparse.ArgumentParser):
        """argparse that reports usage problems as *unhealthy* (exit 1), never exit 2."""

        def error(self, message: str) -> NoReturn:
            print(f"unhealthy: bad health-check option: {message}")
            sys.exit(ExitStatus.PROBLEMS)

    parser = _Parser(
        prog="npudoctor health",
        description=(
            "Fast container health check: devices visible and openable, driver files mounted, "
            "chips healthy, CANN environment applied, torch/torch_npu/CANN paired. "
            "Exit codes: 0 healthy, 1 unhealthy (also for bad options, internal errors and timeouts)."
        ),
    )
    for flags, dest, kind, kind_type, default, metavar, help_text in OPTIONS:
        if kind == "flag":
            parser.add_argument(*flags, dest=dest, action="store_true", help=help_text)
        elif kind == "accepted":
            parser.add_argument(*flags, dest=dest, action="store_const", const=None, help=help_text)
        elif kind == "append":
            parser.add_argument(*flags, dest=dest, action="append", default=[], metavar=metavar, help=help_text)
        elif dest in _CHOICES:
            parser.add_argument(*flags, dest=dest, choices=_CHOICES[dest], default=default, help=help_text)
        else:
            assert kind_type is not None  # a "value" row names its type
            parser.add_argument(*flags, dest=dest, type=kind_type, default=default, metavar=metavar, help=help_text)
    return parser


#: Each option string of :data:`OPTIONS` -> its row.
_BY_FLAG = {flag: row for row in OPTIONS for flag in row[0]}


def parse_plain(argv: Sequence[str]) -> Optional[Dict[str, Any]]:
    """The values (dest -> value, as ``vars()`` of :func:`build_parser`'s namespace) of a
    command line made only of :data:`OPTIONS`' exact option strings (``--opt value`` or
    ``--opt=value``), without importing argparse (~5 ms with building the parser, on every
    run of a check that runs every few seconds).  ``None`` for anything else -- ``--help``,
    an abbreviation, a positional argument, a value that looks like an option or does not
    convert, a choice not offered -- which argparse then parses and reports as it always
    did.  ``tests/test_health_options.py`` compares both on many command lines."""
    values: Dict[str, Any] = {}
    for _flags, dest, kind, _type, default, _metavar, _help in OPTIONS:
        values[dest] = [] if kind == "append" else default
    i = 0
    while i < len(argv):
        arg = argv[i]
        inline: Optional[str] = None
        if arg.startswith("--") and "=" in arg:
            arg, inline = arg.split("=", 1)
        row = _BY_FLAG.get(arg)
        if row is None:
            return None
        _flags, dest, kind, kind_type, _default, _metavar, _help = row
        if kind in ("flag", "accepted"):
            if inline is not None:
                return None
            values[dest] = True if kind == "flag" else None
            i += 1
            continue
        if inline is None:
            if i + 1 >= len(argv) or argv[i + 1].startswith("-"):
                return None
            inline = argv[i + 1]
            i += 1
        try:
            value = kind_type(inline) if kind_type is not None else inline
        except (TypeError, ValueError, OverflowError):
            return None
        if dest in _CHOICES and value not in _CHOICES[dest]:
            return None
        if kind == "append":
            values[dest].append(value)
        else:
            values[dest] = value
        i += 1
    return values


def parse_values(argv: Sequence[str]) -> Dict[str, Any]:
    """The option values of ``argv``: :func:`parse_plain`, else argparse (which exits with
    ``SystemExit`` for ``--help`` and usage errors, after printing them)."""
    values = parse_plain(argv)
    if values is None:
        values = vars(build_parser().parse_args(list(argv)))
    return values


@dataclass(frozen=True)
class HealthOptions:
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
    fresh: bool = False

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
        fresh=values["fresh"],
    )
