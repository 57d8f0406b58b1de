"""Every ``npudoctor ...`` command an explain page names is a real next step (issue 31): a
command that runs (not a group that only prints its help), with options it accepts."""

from __future__ import annotations

import re
import shlex
from typing import List, Tuple

import pytest
from clirun import npudoctor

from npudoctor.knowledge import codes

#: A command in backquotes: `npudoctor ...`.
QUOTED = re.compile(r"`(npudoctor [^`]+)`")


def _named() -> List[Tuple[str, str]]:
    out = []
    for code in codes.all_codes():
        for m in QUOTED.finditer(code.explain):
            out.append((code.code, m.group(1)))
    return out


NAMED = _named()


def test_explain_pages_name_commands() -> None:
    assert len(NAMED) >= 10 and ("HOST050", "npudoctor matrix show --cann 8.0.0") in NAMED


@pytest.mark.parametrize("code,command", NAMED, ids=[f"{c}:{cmd}" for c, cmd in NAMED])
def test_a_command_an_explain_page_names_runs(code: str, command: str) -> None:
    try:
        words = shlex.split(command)[1:]
    except ValueError:
        pytest.fail(f"{code}: `{command}` is not a shell command")
    words = words[: words.index("--")] if "--" in words else words
    path = []
    for w in words:
        if w.startswith("-"):
            break
        path.append(w)
    help_text = npudoctor(*path, "--help", env={"PATH": "/usr/bin:/bin", "COLUMNS": "200"}).stdout
    assert "usage:" in help_text.lower(), (code, command)
    options = [w for w in words if w.startswith("-")]
    assert "\nCommands:" not in help_text or options, f"{code}: `{command}` only prints a group's help"
    for w in words:
        if w.startswith("--"):
            assert w.split("=", 1)[0] in help_text, f"{code}: `{command}`: no option {w}"
