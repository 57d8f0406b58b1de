"""Terminal layout of the text reports: lines of styled segments, prose wrapped to a width,
commands never broken, and ANSI colour only when asked.

A fix line of a finding is rendered from its structured remedy (``Finding.remedies``): the
lead and the note are prose, the command (``remedy["command"]``) is printed whole after
``$ `` -- on the line of its lead when it fits, else on its own line, never split -- and the
flags of a ``docker-flags`` step are printed whole on their own line.  A fix line that is
prose (a :class:`~npudoctor.remedies.Prose` step, a package whose file is unknown, a line
added without a remedy) is wrapped as words.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from npudoctor.findings import Finding
from npudoctor.record import MutableRecord, field
from npudoctor.report.escape import quoted
from npudoctor.report.wrapping import wrap as wrap  # re-exported: the reports wrap with it

if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional, Tuple

#: ANSI SGR codes of the styles the reports use (standard 16 colours: stable in golden tests).
_SGR = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}


class Line(MutableRecord):
    """One output line: ``segments`` of ``(text, style)``; a style is space-separated
    words of :data:`_SGR` (``"bold red"``) or empty."""

    segments: List[Tuple[str, str]] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The line without styles."""
        return "".join(t for t, _s in self.segments)


class Painter:
    """Turns a :class:`Line` into text: with ``color``, each styled segment wrapped in ANSI
    SGR codes; without, the plain text.  Trailing spaces are dropped either way.  The text
    of a segment may quote the judged machine (a variable's value in a command, a chip
    name): its control characters, colour codes included, are escaped
    (:func:`npudoctor.report.escape.quoted`), so the only colours printed are the styles'."""

    def __init__(self, color: bool) -> None:
        self.color = color

    def __call__(self, line: Line) -> str:
        if not self.color:
            return quoted(line.text).rstrip()
        out = []
        segments = [(quoted(text), style) for text, style in line.segments]
        while segments and not segments[-1][0].strip():
            segments.pop()
        if segments:
            last, style = segments[-1]
            segments[-1] = (last.rstrip(), style)
        for text, style in segments:
            codes = ";".join(_SGR[w] for w in style.split() if w in _SGR)
            out.append(f"\x1b[{codes}m{text}\x1b[0m" if codes and text else text)
        return "".join(out)


def remedy_for(f: Finding, index: int) -> Optional[Dict[str, Any]]:
    """The structured remedy behind ``f.fix[index]``, or ``None`` (a line added later)."""
    if index < len(f.remedies) and f.remedies[index].get("shell") == f.fix[index]:
        return f.remedies[index]
    return None


def command_of(remedy: Optional[Dict[str, Any]]) -> Optional[str]:
    """The pasteable command of a remedy dict (``None``: prose, or docker flags, which
    are not a command of their own)."""
    if remedy is None or remedy.get("kind") in ("prose", "docker-flags", "pod-spec-field"):
        return None
    cmd = remedy.get("command")
    return cmd if isinstance(cmd, str) and cmd else None


def _prose(text: str, width: int, indent: int) -> List[Line]:
    rows = wrap(text, width, first=indent, indent=indent)
    return [Line([(" " * indent + rows[0], "")])] + [Line([(r, "")]) for r in rows[1:]]


def _command(cmd: str, note: str, width: int, indent: int) -> List[Line]:
    """``$ cmd`` whole; the note as a wrapped ``# comment`` row when the line is too long."""
    head = Line([(" " * indent, ""), ("$ ", "dim"), (cmd, "bold")])
    if not note:
        return [head]
    if indent + 2 + len(cmd) + 4 + len(note) <= width:
        head.segments.append((f"  # {note}", "dim"))
        return [head]
    rows = wrap(f"# {note}", width, first=indent + 2, indent=indent + 4)
    return [head, Line([(" " * (indent + 2) + rows[0], "dim")])] + [Line([(r, "dim")]) for r in rows[1:]]


def fix_line(line: str, remedy: Optional[Dict[str, Any]], width: int, indent: int) -> List[Line]:
    """The rows of one fix line (see the module docstring)."""
    cmd = command_of(remedy)
    if remedy is not None and remedy.get("kind") == "docker-flags" and remedy.get("command"):
        lead = str(remedy.get("lead") or "").strip() or "docker run flags:"
        out = _prose(lead.rstrip(":") + ":", width, indent)
        out.append(Line([(" " * (indent + 2) + str(remedy["command"]), "bold")]))
        rest = line[len(str(remedy.get("lead") or "")) + len(str(remedy["command"])) :].strip()
        if rest:
            out += _prose(rest.lstrip("#").strip(), width, indent + 2)
        return out
    if remedy is not None and remedy.get("kind") == "install-package" and cmd is None:
        from npudoctor.remedies.render import example

        split = example(line)
        if split is not None:
            prose, chip, example_cmd = split
            return _prose(prose + ":", width, indent) + _command(example_cmd, f"for {chip}", width, indent)
    if cmd is None or remedy is None:
        return _prose(line, width, indent)
    lead = str(remedy.get("lead") or "").strip()
    note = str(remedy.get("note") or "").strip()
    if not line.startswith(str(remedy.get("lead") or "") + cmd):
        note = line[line.find(cmd) + len(cmd) :].strip().lstrip("#").strip() if cmd in line else note
    head: List[Line] = _prose(lead, width, indent) if lead else []
    return head + _command(cmd, note, width, indent)


def fix_lines(f: Finding, width: int, indent: int) -> List[Line]:
    """The rows of every fix line of ``f``, in order."""
    out: List[Line] = []
    for i, line in enumerate(f.fix):
        out += fix_line(line, remedy_for(f, i), width, indent)
    return out


def plain_commands(f: Finding) -> List[str]:
    """The commands of ``f``'s fix lines as they are printed after ``$ `` (for tests: each
    must be pasteable)."""
    return [c for c in (command_of(remedy_for(f, i)) for i in range(len(f.fix))) if c]
