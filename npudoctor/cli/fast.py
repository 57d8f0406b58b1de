"""Command lines answered without importing Typer (issue 18): ``--version``, ``--help``
/ ``-h``, ``explain`` (a code, ``--list``, ``--json``), ``devices`` and ``check``.  Importing
Typer and click costs several times a bare interpreter start, which these answers do not need.

Typer stays the one definition of the CLI:

* ``--help`` prints :data:`npudoctor.cli._roothelp.TEXT`, which ``scripts/gen_cli_help.py``
  renders from the Typer app itself; it is used only where click would render the same
  text (a terminal of at least 80 columns, or none), and ``tests/test_cli_fast.py`` checks
  that the text is current and that every fast answer -- output and exit status -- equals
  the Typer path's;
* ``explain`` calls the same :func:`npudoctor.cli.explain.run_explain` as the Typer
  command; anything else (an unknown code, a usage error, other options) is left to Typer,
  so its messages and exit codes are Typer's;
* ``devices`` and ``check`` (:data:`FAST_COMMANDS`) are parsed with
  :data:`npudoctor.cli._fastopts.COMMANDS`, the table of their options that
  ``scripts/gen_cli_help.py`` reads from the Typer app, and run by the same function the
  Typer command calls.  A command line this parser does not take exactly as click would --
  help, an unknown option, a value click would refuse or that starts with ``-``, a missing
  value, a repeated option that is not repeatable, a ``--flag=value``, an extra argument,
  ``--`` -- is left to Typer (``None``), so its messages and exit codes are Typer's.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from npudoctor.cli.terminal import Environment, UsageError

if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Sequence, Tuple

#: The commands parsed here: name -> (module, function).  The function takes the
#: :class:`Environment` and the command's options as keyword arguments named like the Typer
#: command's parameters, and returns the exit status; the Typer command calls it too.
FAST_COMMANDS: Dict[str, Tuple[str, str]] = {
    "devices": ("npudoctor.cli.devices", "devices_command"),
    "check": ("npudoctor.cli.check", "check_command"),
}

#: Width at or above which click renders the root help as :data:`_roothelp.TEXT`
#: (click wraps to ``min(terminal columns, 80) - 2``).
HELP_COLUMNS = 80


def dispatch(argv: Sequence[str], env: Environment) -> Optional[int]:
    """The exit status of ``npudoctor ARGV`` when it is answered here (its output written
    to ``env.stdout``), else ``None``: the caller runs the Typer app.  ``argv`` has its
    colour options taken out already.  Never raises for a command line it does not take."""
    words = list(argv)
    if words == ["--version"]:
        from npudoctor import __version__
        from npudoctor.knowledge.matrix_stamp import version_line

        env.stdout.write(f"npudoctor {__version__}\n{version_line()}\n")
        return 0
    if len(words) == 1 and words[0] in ("--help", "-h"):
        if _help_columns() < HELP_COLUMNS:
            return None
        from npudoctor.cli._roothelp import TEXT

        env.stdout.write(TEXT)
        return 0
    if words and words[0] == "explain":
        return _explain(words[1:], env)
    if words and words[0] in FAST_COMMANDS:
        return _command(words[0], words[1:], env)
    return None


class _Refused(Exception):
    """A command line the fast parser leaves to Typer."""


def parse_options(command: str, args: Sequence[str]) -> Optional[Dict[str, Any]]:
    """The options of ``npudoctor COMMAND ARGS`` as click would hand them to the Typer
    command (``{dest: value}``, every option present, defaults filled in; a repeatable
    option not given is ``None``, as Typer passes it), or ``None`` when this parser does not
    take the line exactly as click would (see the module docstring)."""
    from npudoctor.cli._fastopts import COMMANDS

    table = COMMANDS.get(command)
    if table is None:
        return None
    by_name: Dict[str, Tuple[Dict[str, Any], bool]] = {}
    for option in table["options"]:
        by_name.update(dict.fromkeys(option["names"], (option, True)))
        by_name.update(dict.fromkeys(option["off_names"], (option, False)))
    given: Dict[str, Any] = {}
    words = list(args)
    at = 0
    try:
        while at < len(words):
            word = words[at]
            at += 1
            name, equals, inline = word.partition("=") if word.startswith("--") else (word, "", "")
            if name in table["help"] or name not in by_name:
                return None  # help, an unknown option, an argument, "--", "-x" forms: Typer's
            option, on = by_name[name]
            dest = option["dest"]
            if dest in given and not option["repeatable"]:
                return None  # click keeps the last one: left to Typer rather than guessed
            if option["kind"] == "flag":
                if equals:
                    return None  # "--json=1": click's "does not take a value"
                given[dest] = on
                continue
            if equals:
                value = inline
            elif at < len(words) and not words[at].startswith("-"):
                value = words[at]
                at += 1
            else:
                return None  # a missing value, or one that looks like an option
            converted = _convert(option, value)
            if option["repeatable"]:
                given.setdefault(dest, []).append(converted)
            else:
                given[dest] = converted
    except _Refused:
        return None
    return {option["dest"]: given.get(option["dest"], option["default"]) for option in table["options"]}


def _convert(option: Dict[str, Any], value: str) -> Any:
    """``value`` converted as click converts it for ``option`` (``float()``/``int()``, a choice
    matched exactly); raises :class:`_Refused` where click would refuse it."""
    kind = option["kind"]
    try:
        if kind == "float":
            return float(value)
        if kind == "int":
            return int(value)
    except ValueError:
        raise _Refused(value) from None
    if kind == "choice" and value not in option["choices"]:
        raise _Refused(value)
    return value


def _command(command: str, args: List[str], env: Environment) -> Optional[int]:
    """Run ``command`` with ``args`` when :func:`parse_options` takes them, else ``None``.
    Ends as Typer's main loop ends the same command: an interrupt is exit 130, end of input
    ``Aborted!`` and exit 1, a closed output pipe exit 1."""
    options = parse_options(command, args)
    if options is None:
        return None
    import contextlib
    import errno
    import importlib

    from npudoctor.cli.status import ExitStatus

    module, function = FAST_COMMANDS[command]
    run = getattr(importlib.import_module(module), function)
    try:
        # as on the Typer path (npudoctor.cli.run), stray writes to sys.stdout/sys.stderr go to env's
        with contextlib.redirect_stdout(env.stdout), contextlib.redirect_stderr(env.stderr):
            return int(run(env, **options))
    except KeyboardInterrupt:
        return 130
    except EOFError:
        env.stderr.write("\nAborted!\n")
        return int(ExitStatus.PROBLEMS)
    except OSError as exc:
        if exc.errno == errno.EPIPE:
            return int(ExitStatus.PROBLEMS)
        raise


def _explain(args: List[str], env: Environment) -> Optional[int]:
    options = [a for a in args if a.startswith("-")]
    codes = [a for a in args if not a.startswith("-")]
    flags = set(options)
    if not flags <= {"--json", "--list"} or len(flags) < len(options) or len(codes) > 1:
        return None  # other options, repeats: Typer's parsing and messages
    if not codes and "--list" not in flags:
        return None  # "give a CODE": Typer's usage error
    from npudoctor.cli import explain

    try:
        return int(explain.run_explain(env, codes[0] if codes else None, "--list" in flags, "--json" in flags))
    except UsageError:
        return None  # unknown code: Typer's path prints the usage error (nothing written yet)


def _help_columns() -> int:
    """The columns click wraps the help to: ``shutil.get_terminal_size().columns`` as the
    Python documentation describes it -- ``COLUMNS`` when it is a positive integer, else the
    columns of the terminal on ``sys.__stdout__``, else 80 -- without importing ``shutil``
    (it loads the compression modules; issue 18).  ``tests/test_cli_fast.py`` checks it
    against ``shutil``."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80
