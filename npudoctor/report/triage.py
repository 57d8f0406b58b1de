"""The text view of a triage result (``npudoctor triage`` without ``--json``)."""

from __future__ import annotations

import shlex
from typing import IO, Any, Callable, Dict, List, Optional, Set

from npudoctor.knowledge.signatures import MAX_LINE
from npudoctor.redact import conceal

#: Why the causes are not ranked, by reason (the ``unranked`` key of ``--json``).
NO_STACK_NOTE = (
    "this machine has no Ascend NPU stack (no CANN toolkit, NPU driver, torch_npu or NPU device), "
    "so its facts cannot explain this log: the causes are listed unranked"
)
NO_STACK_HINT = (
    "to rank them, run `npudoctor triage` on the machine that produced the log, or give its facts here: "
    "--from <its snapshot> (`npudoctor collect -o snap.json` there) or --root <its rootfs>"
)


_MARK = {"error": "✗", "warning": "!", "noise": "·"}

#: Logs at least this large (bytes) get a progress line when stderr is a terminal.
PROGRESS_MIN_BYTES = 64 << 20


class ProgressLine:
    """A one-line progress bar on a terminal (``out``: stderr), redrawn at most every 0.2 s
    of ``clock``; plain text (no colour, no library), cleared by :meth:`done`."""

    def __init__(self, out: IO[str], name: str, total: int, clock: Callable[[], float], width: int = 80) -> None:
        self.out, self.name, self.total, self.clock = out, name, max(total, 1), clock
        self.width = max(width, 40)
        self._last = -1.0
        self._drawn = False

    def __call__(self, done: int) -> None:
        now = self.clock()
        if now - self._last < 0.2 and done < self.total:
            return
        self._last = now
        frac = min(done / self.total, 1.0)
        label = f" {frac:4.0%} {done >> 20}/{self.total >> 20} MiB  {self.name}"
        bar = max(self.width - len(label) - 14, 10)
        filled = int(bar * frac)
        line = f"triage [{'#' * filled}{'.' * (bar - filled)}]{label}"[: self.width - 1]
        self.out.write("\r")  # written alone: the one carriage return a safe stream keeps
        self.out.write(line)
        self.out.flush()
        self._drawn = True

    def done(self) -> None:
        """Clear the line (when it was drawn)."""
        if self._drawn:
            self.out.write("\r")
            self.out.write(" " * (self.width - 1))
            self.out.write("\r")
            self.out.flush()


def conceal_result(result: Dict[str, Any]) -> Dict[str, Any]:
    """A triage ``result`` with every secret in it concealed (:func:`npudoctor.redact.conceal`):
    quoted log lines (``sample``, ``text``) may carry ``HF_TOKEN=…`` or a password in a URL.
    Applied to the text view and to ``--json`` alike."""
    concealed: Dict[str, Any] = conceal(result)
    return concealed


def _where(group: Dict[str, Any], many_sources: bool) -> str:
    first, last = group["first"], group["last"]
    src = f"{first['source']}:" if many_sources else ""
    if group.get("count", 1) == 1 or first == last:
        return f"{src}line {first['line']}"
    if first["source"] == last["source"]:
        return f"{src}lines {first['line']}–{last['line']}"
    return f"{src}line {first['line']} … {last['source']}:{last['line']}"


#: First words of a ``fix:`` line that is (or starts with) a shell command: never wrapped.
_COMMAND_WORDS = frozenset(
    [
        "export",
        "source",
        "unset",
        "docker",
        "pip",
        "pip3",
        "python",
        "python3",
        "cd",
        "conda",
        "ldconfig",
        "npu-smi",
        "sudo",
        "chmod",
        "bash",
    ]
)


def _command_fix(body: str) -> bool:
    """Whether ``body`` is a ``fix:`` line holding a command (``fix: export …``) rather
    than prose, or a backquoted command."""
    if not body.startswith("fix: "):
        return False
    words = body[5:].split()
    return not words or words[0] in _COMMAND_WORDS or words[0].startswith(("./", "/")) or "`" in body


class _Wrapped:
    """A text stream that wraps the prose lines written to it to ``width`` columns (a
    continuation row indented four columns past its line's own indent); quoted log lines
    (indented by four) and ``fix:`` lines that start with a command are written whole."""

    def __init__(self, out: IO[str], width: int) -> None:
        self.out, self.width, self.pending = out, width, ""

    def write(self, text: str) -> None:
        from npudoctor.report.wrapping import wrap

        self.pending += text
        *lines, self.pending = self.pending.split("\n")
        for line in lines:
            body = line.lstrip(" ")
            lead = len(line) - len(body)
            if len(line) <= self.width or lead == 4 or body.startswith("$ ") or _command_fix(body):
                self.out.write(line + "\n")
                continue
            rows = wrap(body, self.width, first=lead, indent=lead + 4)
            self.out.write(" " * lead + "\n".join(rows) + "\n")

    def flush(self) -> None:
        if self.pending:
            self.out.write(self.pending)
            self.pending = ""


def render_text(result: Dict[str, Any], out: IO[str], width: Optional[int] = None) -> None:
    """Write the human view of a triage ``result`` (:func:`npudoctor.triage.rank` plus the
    command's ``facts_from``/``ranked``/``unranked`` keys) to ``out``; ``width``: columns
    to wrap prose to (``None``: not wrapped)."""
    if width:
        wrapped = _Wrapped(out, width)
        _render_text(result, wrapped)  # type: ignore[arg-type]
        wrapped.flush()
    else:
        _render_text(result, out)


def _write_signature(out: IO[str], g: Dict[str, Any], many: bool, ranked: bool, said: Dict[Any, str]) -> None:
    """One known signature's block: its line, meaning, the official entry, the line it
    follows, the causes ranked for this machine and the fix.  ``said``: what earlier blocks
    wrote (a meaning, an official entry, a cause, a fix) -> where; each is written once, a
    later block pointing back to it."""
    times = f" ×{g['count']}" if g["count"] > 1 else ""
    place = _where(g, many)
    # the signature id, and its label where it has one: `npudoctor explain` takes either
    label = f" {g['label']}" if g.get("label") and g["label"] != g["id"] else ""
    out.write(f"\n{_MARK.get(g['severity'], '?')} {g['title']}{times}  [{g['id']}{label}, {place}]\n")
    out.write(f"    {g['sample']}\n")
    seen = said.setdefault(("means", g["meaning"]), place)
    out.write(f"  means: {g['meaning']}\n" if seen == place else f"  means: as for {seen} above\n")
    official = g.get("official")
    if official and said.setdefault(("official", official["family"], official["code"]), place) != place:
        official = None
    if official:
        # said once: the summary when the title does not already give it, the solution when
        # it is not already the fix printed below
        summary = official["summary"] if official["summary"] not in g["title"] else ""
        solution = official["solution"] if g["conclusion"] or g["fix"] != [official["solution"]] else ""
        if summary or official["cause"] or solution:
            out.write(f"  official {official['family']} {official['code']}" + (f": {summary}\n" if summary else ":\n"))
            if official["cause"]:
                out.write(f"    possible cause: {official['cause']}\n")
            if solution:
                out.write(f"    solution: {solution}\n")
    if g["severity"] == "noise":
        return
    after = g.get("after")
    if after:
        src = f"{after['source']}:" if many else ""
        out.write(f"  after {src}line {after['line']}: {after['text'][:160]}\n")
        if after.get("id"):
            out.write(f"  it follows {after['id']} (above): fix that one first\n")
        else:
            out.write("  the line above is the last warning/error before the crash: start there\n")
    elif g["follow_on"] and g.get("first_error_line", True):
        out.write(
            "  usually a follow-on error, and no error line comes before it here: the error it follows is not in this log\n"
        )
    elif g["follow_on"]:
        out.write("  usually a follow-on error: the first error above it is the one to fix\n")
    repeated: List[str] = []
    for i, c in enumerate(g["causes"]):
        if i == 0 and c["status"] == "cause":
            _write_conclusion(out, c, place, said)
            continue
        label = f": {c['label']}" if ranked or c["status"] != "unknown" else ""
        line = f"  - {c['text']}{label}"
        if c["evidence"] and c["status"] in ("ruled_out", "cause", "no_sign"):
            line += f" ({'; '.join(c['evidence'][:2])})"
        seen = said.setdefault(("line", line), place)
        if seen == place:
            out.write(line + "\n")
        else:
            repeated.append(seen)
    if repeated:
        places = " and ".join(dict.fromkeys(repeated))
        out.write(f"  - {len(repeated)} more cause(s) judged as for {places} above\n")
    if not g["conclusion"] and g["fix"] and not after:  # a crash's line above says what to fix
        seen = said.setdefault(("fix", tuple(g["fix"])), place)
        for f in g["fix"] if seen == place else ():
            out.write(f"  fix: {f}\n")
        if seen != place:
            out.write(f"  fix: as for {seen} above\n")
    if g.get("lint"):
        # the CUDA-ism behind the line is in the code: lint finds it there
        out.write(f"  in the code: npudoctor lint finds it ({', '.join(g['lint'])}); in the project directory:\n")
        out.write("    $ npudoctor lint .\n")


#: Compressed logs: the command that writes their text.
_CAT = {"gzip": "zcat", "xz": "xzcat", "bzip2": "bzcat"}


def _write_long_lines(out: IO[str], source: Dict[str, Any]) -> None:
    """Say that ``source``'s lines over :data:`MAX_LINE` bytes were read in part (the JSON's
    ``long_lines``), and the command that splits them so that all of them is read."""
    n, kib, name = source["long_lines"], MAX_LINE >> 10, source["name"]
    read = f"its first {kib} KiB" if n == 1 else f"the first {kib} KiB of each"
    out.write(
        f"  ! {name}: {n} line{'s' if n > 1 else ''} over {kib} KiB read in part ({read} and the text after its "
        "last carriage return); split long lines to read them whole:\n"
    )
    split = "tr '\\r' '\\n' | fold -w 60000 | npudoctor triage -"
    if name == "<stdin>":
        out.write(f"    $ <the same input> | {split}\n")
    else:
        out.write(f"    $ {_CAT.get(source.get('compressed') or '', 'cat')} {shlex.quote(name)} | {split}\n")


def _first_error_lines(result: Dict[str, Any]) -> Set[int]:
    """The ``id()`` of each known group that no error or warning line (known or not) comes
    before in its source: nothing above it for a follow-on error to follow."""
    known = [g for g in result["known"] if g["severity"] != "noise"]
    first: Dict[str, int] = {}
    for item in known + list(result["unknown"]):
        where = item["first"]
        first[where["source"]] = min(first.get(where["source"], where["line"]), where["line"])
    return {id(g) for g in known if g["first"]["line"] <= first[g["first"]["source"]]}


def _write_conclusion(out: IO[str], c: Dict[str, Any], place: str, said: Dict[Any, str]) -> None:
    """The cause concluded for a block: in full the first time, else (the same findings,
    or the same conclusion stated by a line) a pointer to the block that said it."""
    key = ("cause", tuple(c["findings"])) if c["findings"] else ("cause", c["here"], tuple(c["fix"]))
    seen = said.setdefault(key, place)
    if seen != place:
        codes = f" ({', '.join(c['findings'])})" if c["findings"] else ""
        out.write(f"  → the same cause as {seen} above{codes}\n")
        return
    out.write(f"  → {c['here']}\n")
    for e in c["evidence"]:
        code, _, title = e.partition(": ")
        if code in c["findings"] and title and title in c["here"]:
            e = f"{code}, as quoted above"  # the conclusion quotes the finding's title
        out.write(f"      evidence: {e}\n")
    for f in c["fix"]:
        out.write(f"      fix: {f}\n")


def _render_text(result: Dict[str, Any], out: IO[str]) -> None:
    sources = result["sources"]
    many = len(sources) > 1
    names = ", ".join(f"{s['name']} ({s['lines']} lines)" for s in sources)
    out.write(f"npudoctor triage: {names}\n")
    # whether causes are ranked matters only where a known signature has causes to rank
    causes = any(g.get("causes") for g in result["known"])
    if causes and result.get("unranked") == "no-npu-stack":
        out.write(f"  note: {NO_STACK_NOTE};\n        {NO_STACK_HINT}\n")
    elif causes and result.get("facts_from") == "none":
        out.write("  (no facts gathered: causes are not ranked for this machine)\n")
    for f in result.get("facts_unreadable") or ():
        out.write(f"  ! {f['code']} {f['title']}\n")
        for e in f["evidence"][:3]:
            out.write(f"      evidence: {e}\n")
    ranked = result.get("ranked", True)
    for s in sources:
        if s.get("skipped"):
            out.write(f"  ! {s['name']}: skipped: {s['skipped']}\n")
        elif s.get("error"):
            out.write(f"  ! {s['name']}: read stopped: {s['error']}\n")
        if s.get("long_lines"):
            _write_long_lines(out, s)
    known = result["known"]
    scanned = [s for s in sources if not s.get("skipped")]
    if not known and not result["unknown"]:
        if scanned:
            out.write("\nNo known error signature and no error-looking line found.\n")
        else:
            out.write("\nNothing was scanned: no input is a text log.\n")
    said: Dict[Any, str] = {}
    firsts = _first_error_lines(result)
    for g in known:
        _write_signature(out, dict(g, first_error_line=id(g) in firsts), many, ranked, said)
    if result.get("tied"):
        out.write("\nThe log runs through what these findings on this machine are about:\n")
        for t in result["tied"]:
            src = f"{t['first']['source']}:" if many else ""
            out.write(
                f"  {_MARK.get(t['severity'], '?')} {t['code']}: {t['title']}  [{t['by']}, {src}line {t['first']['line']}]\n"
            )
    if result["unknown"]:
        total = result["summary"]["unknown"]
        out.write(f"\nError-looking lines no known signature matches ({total}; not guessed):\n")
        for u in sorted(result["unknown"], key=lambda u: -u["count"])[:15]:
            times = f"×{u['count']} " if u["count"] > 1 else ""
            src = f"{u['first']['source']}:" if many else ""
            out.write(f"  {times}{src}line {u['first']['line']}: {u['text'][:160]}\n")
        if len(result["unknown"]) > 15:
            out.write(f"  … and {len(result['unknown']) - 15} more (see --json)\n")
    s = result["summary"]
    out.write(
        f"\n{s['known_errors']} known error line(s), {s['known_warnings']} warning(s), {s['noise']} noise, "
        f"{s['unknown']} unknown.\n"
    )
    if result.get("verdict"):
        out.write(f"Verdict: {result['verdict']}\n")
