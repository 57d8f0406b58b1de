"""The README's claims hold (issue 19): the options table matches every command's ``-h``,
``health`` is listed in ``npudoctor --help``, and the sample report is what ``check``
prints on that example at 100 columns."""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from clirun import npudoctor  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")


def _options(command: str) -> set:
    text = npudoctor(command, "-h", env={"PATH": "/usr/bin:/bin", "COLUMNS": "200"}, width=200).stdout
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", text))


def test_options_table_is_true_for_every_command():
    table = README[README.index("| options | check, collect") :].split("\n\n")[0].splitlines()[2:]
    columns = {
        1: ["check", "collect", "devices", "triage", "health", "env", "npd"],
        2: ["exec"],
    }
    for row in table:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", row.strip("|"))]
        option = re.match(r"`(--[a-z-]+)", cells[0]).group(1)  # type: ignore[union-attr]
        for col, commands in columns.items():
            has = cells[col].startswith("yes")
            for command in commands:
                assert (option in _options(command)) is has, f"README says {command} {option}: {cells[col]}"


def test_help_lists_every_command_of_the_readme_table():
    top = npudoctor("--help", env={"PATH": "/usr/bin:/bin"}, width=120).stdout
    for command in re.findall(r"^\| `npudoctor (\w+)", README, flags=re.M):
        assert re.search(rf"^\s+{command}\s", top, flags=re.M), command


def test_sample_report_is_what_check_prints():
    example = REPO / "examples" / "numpy-2-with-cann-8.0"
    block = README[README.index("```\nSummary\n") + 4 :].split("```")[0]
    env = {"PATH": f"{example / 'bin'}:/usr/bin:/bin", "COLUMNS": "100"}
    out = npudoctor(
        "check", "--root", str(example / "root"), "--env-file", str(example / "env"), env=env, cwd=example, width=100
    ).stdout
    for line in block.strip("\n").splitlines():
        assert line in out.splitlines(), line
