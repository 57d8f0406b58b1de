"""Golden text of ``check`` on a terminal (issue 19): 60, 80 and 120 columns, with colour
(a terminal) and without (``NO_COLOR=1``), run in-process with the terminal injected
(:mod:`clirun`: ``tty=True``, ``width``).  The expected text lives in ``tests/golden/``; it
changes only when the test runs with ``NPUDOCTOR_UPDATE_GOLDEN=1`` (then the files are
rewritten and ``docs/img/check.svg`` must be regenerated with ``python scripts/gen_check_svg.py``).
``test_e2e_*`` runs ``python -m npudoctor`` on a real pty (the window size set with
``TIOCSWINSZ``, no ``COLUMNS``) and expects the same files: the process finds its terminal.

Each scenario is collected once (``collect --no-redact``) and replayed with ``check --from
snapshot.json`` from its directory, so the headline does not carry the checkout's path.
"""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from clirun import npudoctor

REPO = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).parent / "golden"
SCENARIOS = {
    "container-no-cann": REPO / "tests" / "scenarios" / "k16-container-no-cann-driver-not-mounted",
    "torch-mismatch": REPO / "examples" / "torch-npu-torch-mismatch",
}
UPDATE = bool(os.environ.get("NPUDOCTOR_UPDATE_GOLDEN"))


def _env(scenario: Path, **extra: str) -> dict:
    env = {"PATH": f"{scenario / 'bin'}:/usr/bin:/bin", "HOME": "/root", "PYTHONPATH": str(REPO), "TERM": "xterm"}
    env.update(extra)
    return env


def run_in_pty(argv: list, cwd: Path, env: dict, columns: int) -> str:
    """Run ``argv`` with stdout on a pty ``columns`` wide; its output with ``\\r\\n`` as ``\\n``."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    proc = subprocess.Popen(argv, cwd=str(cwd), env=env, stdout=slave, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the pty
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(master)
    assert proc.returncode in (0, 1), proc.stderr.read().decode() if proc.stderr else ""
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = {}
    for name, scenario in SCENARIOS.items():
        where = tmp_path_factory.mktemp(name)
        argv = ["collect", "--root", str(scenario / "root"), "--no-redact", "-o", str(where / "snapshot.json")]
        result = npudoctor(*argv, env=_env(scenario))
        assert result.returncode == 0, result.stderr
        out[name] = where
    return out


@pytest.mark.parametrize("colour", ["plain", "color"])
@pytest.mark.parametrize("columns", [60, 80, 120])
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_check_golden_text_on_a_terminal(snapshots: dict, name: str, columns: int, colour: str):
    extra = {"NO_COLOR": "1"} if colour == "plain" else {}
    env = _env(SCENARIOS[name], **extra)
    result = npudoctor("check", "--from", "snapshot.json", env=env, cwd=snapshots[name], tty=True, width=columns)
    assert result.returncode in (0, 1), result.stderr
    text = result.stdout
    assert ("\x1b[" in text) is (colour == "color")
    plain = text if colour == "plain" else _strip(text)
    for line in plain.splitlines():
        if " " in line.strip() and not line.lstrip().startswith(("$ ", "-v ", "--device", "`")) and "`" not in line:
            assert len(line) <= columns, line  # prose wraps; only a command may be longer
    golden = GOLDEN / f"check-{name}-{columns}-{colour}.txt"
    if UPDATE or not golden.exists():
        if not UPDATE:
            pytest.fail(f"{golden} is missing: run with NPUDOCTOR_UPDATE_GOLDEN=1 to write it")
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    assert text == golden.read_text(encoding="utf-8")


@pytest.mark.parametrize(("columns", "colour"), [(60, "color"), (120, "plain")])
def test_e2e_check_on_a_real_pty(snapshots: dict, columns: int, colour: str):
    """A process on a pty: it reads its width from the terminal (``TIOCSWINSZ``, no
    ``COLUMNS``) and colours only there; the text is the golden one."""
    name = "container-no-cann"
    extra = {"NO_COLOR": "1"} if colour == "plain" else {}
    argv = [sys.executable, "-m", "npudoctor", "check", "--from", "snapshot.json"]
    text = run_in_pty(argv, snapshots[name], _env(SCENARIOS[name], **extra), columns)
    assert text == (GOLDEN / f"check-{name}-{columns}-{colour}.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_check_golden_markdown(snapshots: dict, name: str):
    """``check --markdown`` (the text pasted into a bug report): the per-area summary table
    (✓ ! ✗ – and what was found) and the follow-on symptoms folded under their cause, as
    in the text report; changed only with NPUDOCTOR_UPDATE_GOLDEN=1."""
    proc = npudoctor("check", "--from", "snapshot.json", "--markdown", cwd=snapshots[name], env=_env(SCENARIOS[name]))
    assert proc.returncode in (0, 1), proc.stderr
    text = proc.stdout
    assert "| | area | found |" in text and "\x1b[" not in text
    golden = GOLDEN / f"check-{name}.md"
    if UPDATE or not golden.exists():
        if not UPDATE:
            pytest.fail(f"{golden} is missing: run with NPUDOCTOR_UPDATE_GOLDEN=1 to write it")
        golden.write_text(text, encoding="utf-8")
    assert text == golden.read_text(encoding="utf-8")


def test_markdown_folds_the_symptoms_under_their_cause(snapshots: dict):
    """The container scenario's driver symptoms are rows under CTR002, not findings of
    their own, and the summary says the driver area is ✗ because of CTR002."""
    name = "container-no-cann"
    text = npudoctor(
        "check", "--from", "snapshot.json", "--markdown", cwd=snapshots[name], env=_env(SCENARIOS[name])
    ).stdout
    lines = text.splitlines()
    assert "| ✗ | Driver and firmware | no driver found (/usr/local/Ascend/driver); because of CTR002 |" in lines
    assert "| – | NPU devices | not checked: npu-smi: command not found on PATH |" in lines
    assert (
        "| error | ↳ `DRV001` npu-driver-missing | because of CTR002: "
        "The host's NPU driver is not mounted into this container |" in lines
    )
    assert not any(line.startswith("| error | `DRV001`") for line in lines)
    assert "**DRV001**" not in text and "Because of this (CTR002), also:" in lines
    assert lines[2] == "2 error(s), 0 warning(s), 0 note(s), 3 follow-on finding(s) folded under their cause."


def _strip(text: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def test_readme_image_is_rendered_from_the_coloured_capture():
    """docs/img/check.svg is what scripts/gen_check_svg.py makes of the 120-column
    coloured capture of the container scenario (regenerate it after updating goldens)."""
    sys.path.insert(0, str(REPO / "scripts"))
    import gen_check_svg

    assert (REPO / "docs" / "img" / "check.svg").read_text(encoding="utf-8") == gen_check_svg.render()
