"""Text from the judged machine or from logs, made safe to print: control characters escaped.

A chip name printed by ``npu-smi``, a reply of the ``--python`` interpreter or a quoted log
line may carry terminal escape sequences: OSC 52 writes the operator's clipboard, CSI 2J
clears the screen, a carriage return or a bidirectional override hides what follows.
:class:`SafeStream` wraps every stream npudoctor prints to (installed by the console entry
point and by :func:`npudoctor.cli.run`), so no report, message or quote needs to remember
to escape: each control character is written as ``\\uXXXX`` (valid inside a JSON string
too, where it means the same character).  Kept as they are: newline, tab, the colour codes
npudoctor writes itself (SGR ``ESC [ … m`` without concealment) and a carriage return
written alone (the triage progress line).  A colour code inside a quoted value is
npudoctor's to escape before it reaches the stream: the reports quote every value with
:func:`quoted`."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from npudoctor import lazyre
from npudoctor.redact import conceal_text

if TYPE_CHECKING:
    from typing import Any, Iterable, TextIO

#: C0 and C1 controls and DEL (but newline and tab), and the bidirectional embedding,
#: override and isolate characters (Unicode TR 9: they reorder what the reader sees).
_UNSAFE = lazyre.pattern("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
#: What is kept: an SGR sequence (colours, bold, dim) -- it cannot move the cursor, clear,
#: retitle or reach the clipboard -- unless it conceals text (parameter 8).
_SGR = lazyre.pattern(r"\x1b\[([0-9;]{0,24})m")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group(0)):04x}"


def quoted(text: str) -> str:
    """``text`` quoted from the judged machine (an environment value, a file's contents, a
    command's output) as a report prints it: every unsafe character written as ``\\uXXXX``,
    the ESC of a colour code too.  :class:`SafeStream` keeps colour codes, since it cannot
    tell npudoctor's own from those a value carries; a renderer quotes each value with this
    before it adds its own colours, so that a value cannot recolour the terminal."""
    return _UNSAFE.sub(_escape, text)


def one_line(text: str) -> str:
    """``text`` :func:`quoted` and kept on one line: newline and tab written as ``\\u000a``
    and ``\\u0009`` too (a file name, a node label from another machine's snapshot)."""
    return quoted(text).replace("\n", "\\u000a").replace("\t", "\\u0009")


def visible(text: str) -> str:
    """``text`` with every unsafe character written as ``\\uXXXX`` (SGR colour codes kept)."""
    if not _UNSAFE.search(text):
        return text
    out = []
    last = 0
    for m in _SGR.finditer(text):
        if "8" in m.group(1).split(";"):
            continue
        out.append(_UNSAFE.sub(_escape, text[last : m.start()]))
        out.append(m.group(0))
        last = m.end()
    out.append(_UNSAFE.sub(_escape, text[last:]))
    return "".join(out)


class SafeStream:
    """A text stream that writes through :func:`npudoctor.redact.conceal_text` (the one
    concealer: no secret reaches any output, whichever command or path printed it) and
    :func:`visible`; everything else is the wrapped stream's (``flush``, ``isatty``,
    ``fileno``, ``buffer``…)."""

    def __init__(self, raw: TextIO) -> None:
        self.raw = raw

    def write(self, text: str) -> int:
        self.raw.write(text if text == "\r" else visible(conceal_text(text)))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def safe(stream: TextIO) -> TextIO:
    """``stream`` wrapped in a :class:`SafeStream` (once)."""
    if stream is None or isinstance(stream, SafeStream):
        return stream
    return SafeStream(stream)  # type: ignore[return-value]
