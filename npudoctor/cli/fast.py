"""Command lines answered without importing Typer (issue 18): ``--version``, ``--help``
/ ``-h`` and ``explain`` (a code, ``--list``, ``--json``).  Importing Typer and click costs
several times a bare interpreter start, which these answers do not need.

Typer stays the one definition of the CLI:

* ``--help`` prints :data:`npudoctor.cli._roothelp.TEXT`, which ``scripts/gen_cli_help.py``
  renders from the Typer app itself; it is used only where click would render the same
  text (a terminal of at least 80 columns, or none), and ``tests/test_cli_fast.py`` checks
  that the text is current and that every fast answer -- output and exit status -- equals
  the Typer path's;
* ``explain`` calls the same :func:`npudoctor.cli.explain.run_explain` as the Typer
  command; anything else (an unknown code, a usage error, other options) is left to Typer,
  so its messages and exit codes are Typer's.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

from npudoctor.cli.request import Environment, UsageError

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

        env.stdout.write(f"npudoctor {__version__}\n")
        return 0
    if len(words) == 1 and words[0] in ("--help", "-h"):
        if _help_columns() < HELP_COLUMNS:
            return None
        from npudoctor.cli._roothelp import TEXT

        env.stdout.write(TEXT)
        return 0
    if words and words[0] == "explain":
        return _explain(words[1:], env)
    return None


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
    """The columns click would wrap the help to (``shutil.get_terminal_size``: ``COLUMNS``,
    else the terminal of stdout, else 80)."""
    import shutil

    return shutil.get_terminal_size().columns
