"""``lint_paths``: walk the given files and directories, lint each file, return the findings.
A file's kind comes from its name (:func:`kind_of`), else from its shebang; a file given by
name that neither names is read as Python.

Bounded: a file over :data:`MAX_FILE_BYTES`, or holding more than :data:`MAX_CODE_CHARS` of
Python code, is one LNT016 finding, at most :data:`MAX_FILES` files are read, directories are walked without following links (no loop), files reached
through a link that leaves the given path are skipped, and ``.git``, virtual environments
(a ``pyvenv.cfg``), ``node_modules``, caches and ``.github`` (CI of the project's own runners)
are not entered.  Nothing is executed.  Python sources are decoded as Python decodes them (a
coding declaration, else UTF-8); the other files lint reads are UTF-8."""

from __future__ import annotations

import ast
import io
import json
import os
import stat
import tokenize
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from npudoctor import lazyre
from npudoctor.hostio import read_capped
from npudoctor.lint import installs, shell
from npudoctor.lint import python as pylint
from npudoctor.lint.knowledge import LintKnowledge, load
from npudoctor.lint.model import LintFinding, LintResult
from npudoctor.lint.rules import FIXABLE, lint_codes

MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_FILES = 100_000
#: Most characters of Python code parsed from one file (a notebook: its code cells joined).
#: The interpreter's parser holds about a hundred times the code's size while it builds the
#: tree of a dense file, so a bound on the file's bytes alone lets one file cost gigabytes;
#: hand-written modules are far below this, generated ones above it are not linted.
MAX_CODE_CHARS = 2 * 1024 * 1024
PYTHON = (".py", ".pyw")
SHELL = (".sh", ".bash")
NOTEBOOK = (".ipynb",)
CONFIG = (".yaml", ".yml", ".json")
DOCKERFILES = ("dockerfile", "containerfile")
DOCKERFILE_SUFFIXES = (".dockerfile", ".containerfile")
REQUIREMENTS = ("requirements", "constraints")
SKIP_DIRS = {
    ".git",
    ".hg",
    ".svn",
    "node_modules",
    "__pycache__",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    "site-packages",
    ".venv",
    "venv",
    ".eggs",
}


#: The fix of a file that cannot be linted, unless the reason names a better one.
UNREADABLE_FIX = "fix the file, or exclude it"
ENCODING_FIX = "declare its encoding on line 1 or 2 (# -*- coding: gbk -*-), or save it as UTF-8"


class _Unreadable(Exception):
    """A file that cannot be linted, and why (``fix``: what the user can do)."""

    def __init__(self, why: str, fix: str = UNREADABLE_FIX) -> None:
        super().__init__(why)
        self.fix = fix


def kind_of(path: str) -> Optional[str]:
    """What ``path`` is by its name: ``python``, ``shell``, ``notebook``, ``config``,
    ``dockerfile`` (``Dockerfile``, ``Containerfile``, ``Dockerfile.a3``, ``x.dockerfile``)
    or ``requirements`` (``requirements*.txt``, ``constraints*.txt``, ``requirements*.in``);
    ``None`` when the name does not say."""
    low = os.path.basename(path).lower()
    if low.endswith(PYTHON):
        return "python"
    if low.endswith(SHELL):
        return "shell"
    if low.endswith(NOTEBOOK):
        return "notebook"
    if low.endswith(CONFIG):
        return "config"
    if low in DOCKERFILES or low.startswith(tuple(d + "." for d in DOCKERFILES)) or low.endswith(DOCKERFILE_SUFFIXES):
        return "dockerfile"
    if low.startswith(REQUIREMENTS) and low.endswith((".txt", ".in")):
        return "requirements"
    return None


_SHEBANG = lazyre.pattern(rb"#![ \t]*(\S+)(?:[ \t]+(\S+))?(?:[ \t]+(\S+))?")
_SHELLS = {"sh", "bash", "dash", "ksh", "zsh", "ash"}


def _shebang(path: str) -> Tuple[Optional[str], str]:
    """The kind a file's shebang line names (``shell``, ``python``, ``None`` for another
    interpreter or none) and that line ("" none): ``#!/bin/bash``, ``#!/usr/bin/env python3``,
    ``#!/usr/bin/env -S python3 -u``."""
    try:
        head, _over = read_capped(path, 256)
    except OSError:
        return None, ""
    m = _SHEBANG.match(head.split(b"\n", 1)[0])
    if m is None:
        return None, ""
    words = [os.path.basename(w.decode("utf-8", "replace")) for w in m.groups() if w]
    if words[0] == "env":
        words = [w for w in words[1:] if not w.startswith("-")] or [""]
    program, line = words[0], m.group(0).decode("utf-8", "replace")
    if program in _SHELLS:
        return "shell", line
    if program == "python" or (program.startswith("python") and program[6:].replace(".", "").isdigit()):
        return "python", line
    return None, line


def _inside(path: str, root: str) -> bool:
    real = os.path.realpath(path)
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def walk(paths: Sequence[str]) -> Iterator[str]:
    """The lintable files under ``paths``, each once, in a stable order: a file given
    explicitly whatever its name; in a directory, files of a kind lint knows by name
    (:func:`kind_of`) and files without a suffix whose shebang names a shell or Python."""
    seen = set()
    count = 0
    for given in paths:
        if os.path.isdir(given):
            root = os.path.realpath(given)
            for dirpath, dirnames, filenames in os.walk(given, followlinks=False):
                dirnames[:] = sorted(
                    d
                    for d in dirnames
                    if d not in SKIP_DIRS and not os.path.exists(os.path.join(dirpath, d, "pyvenv.cfg"))
                )
                for name in sorted(filenames):
                    full = os.path.join(dirpath, name)
                    if not _inside(full, root):
                        continue
                    if kind_of(name) is None and ("." in name or _shebang(full)[0] is None):
                        continue  # a script without a suffix is linted when its shebang names a shell or Python
                    real = os.path.realpath(full)
                    if real in seen:
                        continue
                    seen.add(real)
                    count += 1
                    if count > MAX_FILES:
                        return
                    yield full
        else:
            real = os.path.realpath(given)
            if real not in seen:
                seen.add(real)
                yield given


def _read_bytes(path: str) -> bytes:
    try:
        st = os.stat(path)
    except OSError as exc:
        raise _Unreadable(f"cannot read it: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise _Unreadable("not a regular file")
    if st.st_size > MAX_FILE_BYTES:
        raise _Unreadable(f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB: not read")
    try:
        raw, over = read_capped(path, MAX_FILE_BYTES, whole=True)  # a FIFO swapped in is refused, never waited on
    except OSError as exc:
        raise _Unreadable(f"cannot read it: {exc.strerror}") from None
    if over:
        raise _Unreadable(f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB: not read")
    return raw


def _read(path: str) -> str:
    raw = _read_bytes(path)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _Unreadable(f"not UTF-8 (byte {exc.start})") from None


def decode_python(raw: bytes) -> Tuple[str, str]:
    """``(text, encoding)`` of Python source bytes, decoded as Python decodes them (PEP 263,
    PEP 3120): a UTF-8 byte-order mark, else a coding declaration on line 1 or 2, else UTF-8.
    A mark gives ``utf-8-sig``, so text written back in ``encoding`` keeps it.  Raises
    ``ValueError`` saying why the bytes are not Python source text (an encoding Python does not
    know, bytes that are not in the encoding)."""
    try:
        encoding, _lines = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except SyntaxError as exc:
        message = str(exc.msg)
        if message.startswith("unknown encoding"):
            declared = message.rpartition(": ")[2]
            raise ValueError(f"declares the encoding {declared!r}, which Python does not know") from None
        if message.startswith("encoding problem"):
            raise ValueError("starts with a UTF-8 byte-order mark but declares another encoding") from None
        raise ValueError("not UTF-8 (line 1 or 2) and declares no encoding") from None
    try:
        return raw.decode(encoding), encoding
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        said = (
            "not UTF-8 and declares no encoding"
            if encoding in ("utf-8", "utf-8-sig")
            else f"not {encoding} as declared"
        )
        raise ValueError(f"{said} (line {line}, byte {exc.start})") from None


def _read_python(path: str) -> str:
    try:
        return decode_python(_read_bytes(path))[0]
    except ValueError as exc:
        raise _Unreadable(str(exc), ENCODING_FIX) from None


def _parse(text: str) -> ast.AST:
    if len(text) > MAX_CODE_CHARS:
        raise _Unreadable(f"more than {MAX_CODE_CHARS // (1024 * 1024)} MiB of Python code: not parsed")
    try:
        return ast.parse(text)
    except SyntaxError as exc:
        where = f" at line {exc.lineno}" if exc.lineno else ""
        raise _Unreadable(f"does not parse{where}: {exc.msg} (or uses syntax newer than this Python)") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise _Unreadable(f"does not parse: {type(exc).__name__}") from None


Raw = pylint.Raw


def _python(
    text: str, k: LintKnowledge, torch_npu: Optional[Tuple[int, int]], no_bf16: Optional[str], npus: Optional[int]
) -> List[Raw]:
    lines = text.splitlines()
    tree = _parse(text)
    try:
        return _columns(pylint.scan(tree, lines, k, torch_npu, no_bf16, npus), lines)
    except RecursionError:
        raise _Unreadable("nested too deeply to lint") from None


def _columns(raws: List[Raw], lines: List[str]) -> List[Raw]:
    """``raws`` with their columns in characters of the line (the parser counts UTF-8 bytes,
    which differ from characters on a line holding non-ASCII text)."""
    out = []
    for raw in raws:
        line, col = raw[0], raw[2]
        if 0 < line <= len(lines) and col and not lines[line - 1].isascii():
            col = len(lines[line - 1].encode("utf-8")[:col].decode("utf-8", errors="ignore"))
        out.append(raw[:2] + (col,) + raw[3:])
    return out


def _shell(text: str, k: LintKnowledge, npus: Optional[int]) -> List[Raw]:
    return _raws(installs.scan_shell(text.splitlines(), k, text, npus))


def _raws(hits: List[installs.Hit]) -> List[Raw]:
    return [(ln, ln, col, code, msg, fix, (), sev) for ln, col, code, msg, fix, sev in hits]


def _notebook(
    text: str, k: LintKnowledge, torch_npu: Optional[Tuple[int, int]], no_bf16: Optional[str], npus: Optional[int]
) -> List[Tuple[int, Raw]]:
    """Findings of a notebook's code cells as ``(cell, raw)`` with cell-relative lines."""
    try:
        doc = json.loads(text)
        cells = doc["cells"]
        if not isinstance(cells, list):
            raise TypeError
    except (ValueError, KeyError, TypeError, RecursionError):
        raise _Unreadable("not a notebook (no JSON object with a list of cells)") from None
    code_lines: List[str] = []
    where: List[Tuple[int, int]] = []  # (cell, line in cell) of each line of code_lines
    shell_lines: List[Tuple[int, int, int, str]] = []  # (cell, line, column of the command, command)
    out: List[Tuple[int, Raw]] = []
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        src = "".join(str(s) for s in source) if isinstance(source, list) else str(source)
        for i, line in enumerate(src.splitlines(), 1):
            stripped = line.lstrip()
            if stripped.startswith("!"):
                shell_lines.append((number, i, len(line) - len(stripped) + 1, stripped[1:]))
                line = ""
            elif stripped.startswith("%"):
                m = _MAGIC_ENV.match(line)
                if m:  # %env NAME=value sets the kernel's environment, as os.environ does
                    for _ln, col, code, msg, fix, sev in shell.env_var(i, m.start(1), m.group(1), k, text):
                        out.append((number, (i, i, col, code, msg, fix, (), sev)))
                line = ""
            code_lines.append(line)
            where.append((number, i))
    try:
        tree = _parse("\n".join(code_lines))
    except _Unreadable as exc:
        raise _Unreadable(f"a code cell {exc}") from None
    try:
        raws = _columns(pylint.scan(tree, code_lines, k, torch_npu, no_bf16, npus), code_lines)
    except RecursionError:
        raise _Unreadable("a code cell is nested too deeply to lint") from None
    for raw in raws:
        cell, at = where[raw[0] - 1] if 0 < raw[0] <= len(where) else (0, raw[0])
        out.append((cell, (at, at + raw[1] - raw[0], raw[2], raw[3], raw[4], raw[5], (), raw[7])))
    whole = text
    for cell, at, start, body in shell_lines:
        for _ln, col, code, msg, fix, sev in installs.scan_shell([body], k, whole, npus):
            out.append((cell, (at, at, start + col, code, msg, fix, (), sev)))
    return out


#: IPython's ``%env NAME=value`` / ``%env NAME value`` / ``%set_env NAME=value``.
_MAGIC_ENV = lazyre.pattern(r"\s*%(?:env|set_env)\s+([A-Za-z_][A-Za-z0-9_]*)\s*[=\s]")


def _cell_lines(text: str) -> Dict[Tuple[int, int], str]:
    """``(cell, line) -> source line`` of a notebook's code cells (its text already parsed
    once by :func:`_notebook`)."""
    out: Dict[Tuple[int, int], str] = {}
    for number, cell in enumerate(json.loads(text)["cells"], 1):
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            source = cell.get("source", "")
            src = "".join(str(s) for s in source) if isinstance(source, list) else str(source)
            for i, line in enumerate(src.splitlines(), 1):
                out[(number, i)] = line
    return out


def lint_file(
    path: str,
    k: LintKnowledge,
    torch_npu: Optional[Tuple[int, int]] = None,
    no_bf16: Optional[str] = None,
    npus: Optional[int] = None,
) -> List[LintFinding]:
    """The findings of one file (an unreadable file is one LNT016 finding)."""
    kind = kind_of(path)
    shebang = ""
    if kind is None:
        kind, shebang = _shebang(path)
    severity = {c: code.severity for c, code in lint_codes().items()}
    try:
        if kind is None and shebang:
            raise _Unreadable(
                f"a script for another interpreter ({shebang}); lint reads Python, shell scripts,"
                " notebooks, configs, Dockerfiles and requirements files",
                "lint the files it runs, or exclude it",
            )
        guessed = kind is None
        kind = kind or "python"
        text = _read_python(path) if kind == "python" else _read(path)
        lines = text.splitlines()
        if kind == "notebook":
            cells = _notebook(text, k, torch_npu, no_bf16, npus)
            sources = _cell_lines(text) if cells else {}
            return [_finding(path, raw, severity, sources.get((cell, raw[0]), ""), cell) for cell, raw in cells]
        if kind == "python":
            try:
                raws = _python(text, k, torch_npu, no_bf16, npus)
            except _Unreadable as exc:
                if not guessed:
                    raise
                raise _Unreadable(
                    f"neither its name nor a shebang says what it is, and as Python it {exc}", exc.fix
                ) from None
        elif kind == "config":
            raws = _raws(shell.scan_config(lines, k, text, no_bf16, npus))
        elif kind == "dockerfile":
            raws = _raws(installs.scan_dockerfile(lines, k, text, npus))
        elif kind == "requirements":
            raws = _raws(installs.scan_requirements(lines, k))
        else:
            raws = _shell(text, k, npus)
    except _Unreadable as exc:
        return [LintFinding(path, 1, 1, 0, "LNT016", severity["LNT016"], f"not linted: {exc}", exc.fix, "")]
    return [_finding(path, raw, severity, lines[raw[0] - 1] if 0 < raw[0] <= len(lines) else "") for raw in raws]


def _finding(path: str, raw: Raw, severity: dict, source: str, cell: Optional[int] = None) -> LintFinding:  # type: ignore[type-arg]
    line, end, col, code, message, fix, edits, sev = raw
    edits = edits if code in FIXABLE else ()
    return LintFinding(
        path, line, end, col, code, sev or severity[code], message, fix, source.strip()[:200], cell, edits
    )


def lint_paths(
    paths: Sequence[str],
    torch_npu: Optional[Tuple[int, int]] = None,
    progress: Optional[Callable[[int], None]] = None,
    no_bf16: Optional[str] = None,
    npus: Optional[int] = None,
) -> LintResult:
    """Lint every file under ``paths``."""
    k = load()
    result = LintResult()
    for path in walk(paths):
        result.files += 1
        result.findings.extend(lint_file(path, k, torch_npu, no_bf16, npus))
        if progress is not None:
            progress(result.files)
    result.findings.sort(key=LintFinding.sort_key)
    return result
