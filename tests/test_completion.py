"""Shell completion (issue 31): Typer's ``--install-completion``/``--show-completion`` are on,
and a completion request answers the commands, each command's options and ``health``'s
(whose options its own parser reads).  Real processes: the shell's request arrives in the
environment of a fresh ``npudoctor`` (the help that offers completion runs in-process)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import clirun
import pytest

REPO = Path(__file__).resolve().parent.parent


def _run(args: List[str], **env: str) -> subprocess.CompletedProcess:
    environ: Dict[str, str] = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "PYTHONPATH": str(REPO)}
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-m", "npudoctor", *args], capture_output=True, text=True, timeout=120, env=environ
    )


def test_help_offers_completion_and_the_bash_script_is_shown() -> None:
    helptext = clirun.npudoctor("--help", env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}).stdout
    assert "--install-completion" in helptext and "--show-completion" in helptext
    # --show-completion is a flag: Typer names the shell it runs under (shellingham reads the
    # parent processes), so it runs under bash as a user's would; the test's own parents vary
    script = subprocess.run(
        ["bash", "-c", '"$0" -m npudoctor --show-completion; exit $?', sys.executable],
        capture_output=True, text=True, timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert script.returncode == 0, script.stderr
    assert "_NPUDOCTOR_COMPLETE=complete_bash" in script.stdout
    assert "complete -o default -F _npudoctor_completion npudoctor" in script.stdout


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ("npudoctor che", ["check"]),
        ("npudoctor check --qu", ["--quiet"]),
        ("npudoctor matrix sh", ["show"]),
        ("npudoctor health --ti", ["--timeout"]),
        ("npudoctor health --fail", ["--fail-on"]),
    ],
)
def test_a_completion_request_answers_from_the_command_line_so_far(words: str, expected: List[str]) -> None:
    cword = str(len(words.split()) - 1)
    result = _run([], _NPUDOCTOR_COMPLETE="complete_bash", COMP_WORDS=words, COMP_CWORD=cword)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == expected
