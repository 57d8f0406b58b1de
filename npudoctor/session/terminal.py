"""npudoctor's own surroundings -- :class:`Environment` (streams, terminal facts, clock) -- and
the colour options every command accepts (:func:`take_color_flags`), :class:`UsageError`.

Kept apart from :mod:`npudoctor.session.request` (which re-exports these names) because the
console entry takes the colour options out of ``health``'s command line with
:func:`take_color_flags` before anything else is imported.
"""

from __future__ import annotations

import io
import os
import sys
import time
from typing import BinaryIO, Callable, List, Mapping, Optional, Sequence, TextIO, Tuple

from npudoctor.record import MutableRecord, field


def _is_tty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _columns(environ: Mapping[str, str], default: int = 80) -> int:
    raw = environ.get("COLUMNS", "")
    if raw.isascii() and raw.isdigit() and 20 <= int(raw) <= 1000:
        return int(raw)
    stdout = sys.__stdout__
    if stdout is None:
        return default
    try:
        return max(20, os.get_terminal_size(stdout.fileno()).columns)
    except (AttributeError, ValueError, OSError):
        return default


class Environment(MutableRecord):
    """npudoctor's own surroundings (never the diagnosed machine's: that is the Host).

    ``stdout``/``stderr``: where output goes.  ``environ``: npudoctor's own process
    environment (colour conventions, ``COLUMNS``).  ``stdout_isatty``: whether stdout is a
    terminal.  ``width``: columns to wrap to.  ``clock``: monotonic seconds.  ``stdin``:
    standard input as bytes (``triage -``, ``compare -``); ``stdin_isatty``: whether it is a
    terminal (then ``compare`` without paths does not wait on it); ``stderr_isatty``: whether
    stderr is (progress lines are shown only then); ``color_flag``: ``--color`` (True) or
    ``--no-color`` (False) given on the command line, ``None`` when neither was.
    """

    stdout: TextIO
    stderr: TextIO
    environ: Mapping[str, str] = field(default_factory=dict)
    stdout_isatty: bool = False
    width: int = 80
    clock: Callable[[], float] = time.monotonic
    stdin: BinaryIO = field(default_factory=io.BytesIO)
    stdin_isatty: bool = False
    stderr_isatty: bool = False
    color_flag: Optional[bool] = None

    @classmethod
    def from_process(cls) -> Environment:
        """The real process surroundings: ``sys.stdout``/``sys.stderr``, ``os.environ``,
        the terminal width (``COLUMNS`` when set, else the terminal's, else 80)."""
        environ = dict(os.environ)
        stdin = sys.stdin
        return cls(
            stdout=sys.stdout,
            stderr=sys.stderr,
            environ=environ,
            stdout_isatty=_is_tty(sys.stdout),
            width=_columns(environ),
            stdin=stdin.buffer if stdin is not None else io.BytesIO(),
            stdin_isatty=stdin is not None and _is_tty(stdin),
            stderr_isatty=_is_tty(sys.stderr),
        )

    def wrap_width(self) -> Optional[int]:
        """Columns to wrap text reports to: the terminal's :attr:`width` when stdout is a
        terminal, else ``COLUMNS`` when set (20-1000), else ``None``: piped output is not
        wrapped (stable text for logs and ``grep``)."""
        if self.stdout_isatty:
            return self.width
        raw = self.environ.get("COLUMNS", "")
        if raw.isascii() and raw.isdigit() and 20 <= int(raw) <= 1000:
            return int(raw)
        return None

    def color(self, flag: Optional[bool] = None) -> bool:
        """Whether to colour stdout.  Precedence: ``--color``/``--no-color`` (``flag``, else
        :attr:`color_flag`),
        then ``NO_COLOR`` (non-empty: off), then ``FORCE_COLOR``/``CLICOLOR_FORCE``
        (non-empty and not ``0``: on), then ``CLICOLOR=0`` (off), then ``TERM=dumb`` (off),
        then whether stdout is a terminal (the conventions of no-color.org and
        bixense.com/clicolors)."""
        if flag is None:
            flag = self.color_flag
        if flag is not None:
            return flag
        env = self.environ
        if env.get("NO_COLOR", ""):
            return False
        for name in ("FORCE_COLOR", "CLICOLOR_FORCE"):
            value = env.get(name, "")
            if value and value != "0":
                return True
        if env.get("CLICOLOR", None) == "0":
            return False
        # a terminal that says it understands no escape sequences (Emacs shell, some CI)
        if env.get("TERM", "") == "dumb":
            return False
        return self.stdout_isatty


#: The colour options every command accepts, anywhere before ``--`` (see :func:`take_color_flags`).
COLOR_FLAGS = {"--color": True, "--no-color": False}


class UsageError(Exception):
    """Bad combination of options or unreadable input named by the user (exit 2)."""


def take_color_flags(argv: Sequence[str]) -> Tuple[List[str], Optional[bool]]:
    """``(argv without the colour options, the last one's value)``: ``--color`` and
    ``--no-color`` are accepted by every command, before or after its name, so they are
    taken out before Typer parses the rest.  Nothing after ``--`` is touched (the argv of
    ``npudoctor exec -- CMD``), nor anything after ``exec``'s command word."""
    out: List[str] = []
    flag: Optional[bool] = None
    passthrough = False
    seen_exec = False
    for word in argv:
        if passthrough:
            out.append(word)
            continue
        if word == "--":
            passthrough = True
            out.append(word)
            continue
        if word in COLOR_FLAGS:
            flag = COLOR_FLAGS[word]
            continue
        if seen_exec and not word.startswith("-"):
            passthrough = True  # exec's CMD: its own words from here on
        if word == "exec" and not seen_exec and not out:
            seen_exec = True
        out.append(word)
    return out, flag


def close_options(word: str, options: Sequence[str]) -> List[str]:
    """The ``options`` that the unknown option ``word`` is probably a misspelling of, best
    first: an abbreviation of one (``--deep-t`` of ``--deep-timeout``) or a close spelling,
    compared without the leading dashes, which every option shares (with them, ``--bogus``
    looks like ``--user``)."""
    import difflib

    name = word.split("=", 1)[0].lstrip("-")
    if not name:
        return []
    by_name = {option.lstrip("-"): option for option in options if option.startswith("--")}
    prefixed = [by_name[n] for n in sorted(by_name) if len(name) >= 3 and n.startswith(name)]
    close = [by_name[n] for n in difflib.get_close_matches(name, list(by_name), n=3, cutoff=0.66)]
    return list(dict.fromkeys(prefixed + close))[:3]
