"""Static evaluation of a CANN ``set_env.sh`` (never executed).

CANN ships ``set_env.sh`` scripts (``ascend-toolkit/set_env.sh``, ``cann-<ver>/set_env.sh``,
``nnal/atb/set_env.sh``) that users ``source``.  npudoctor must know what such a script
*would* set without running a file from the diagnosed machine, so this module
interprets the small subset of POSIX shell these scripts use:

* assignments and ``export`` (``export A=B C=D``, ``export A``, ``A=B``), ``unset``;
* expansions ``$VAR``, ``${VAR}``, ``${VAR:-word}``, ``${VAR-word}``, ``${VAR:+word}``,
  ``${VAR%pat}``, ``${VAR%%pat}``, ``${VAR#pat}``, ``${VAR##pat}``, ``$0``,
  ``${BASH_SOURCE[0]}``, single and double quotes;
* command substitution ``$(...)`` and backquotes running only known pure commands:
  ``arch``, ``uname -m``, ``pwd``, ``cd DIR``, ``dirname``, ``basename``,
  ``readlink -f``/``realpath``, ``echo``, and ``grep KEY FILE | cut -d= -fN`` (CANN 9
  reads ``driver_install_path_param`` from ``/etc/ascend_install.info`` this way) --
  the self-location idiom ``$(cd "$(dirname "${BASH_SOURCE[0]}")"; pwd)`` included;
* ``if``/``elif``/``else``/``fi`` with ``[ ... ]``/``[[ ... ]]``/``test`` conditions
  (``-d -f -e -x -n -z = == !=``, ``!``), ``&&``/``||`` lists, ``;`` separators;
* ``source FILE``/``. FILE`` (followed through the given file system, depth 4);
* function definitions are skipped (recorded), so are ``return``/``echo`` lines.

The tokenizer is :mod:`npudoctor.parsers.shell_lex`, the result and interpreter state
:mod:`npudoctor.parsers.set_env_model`.

Anything else is recorded in :attr:`SetEnvResult.unsupported` (line number, text) and
skipped, so the result is always a best effort plus an honest list of what was not
understood.  The source of the format: ``set_env_toolkit_8.0.0.sh.txt`` (CANN 8.0.0
``ascend-toolkit/set_env.sh``) and the CANN 8.5/9.x layouts of the
official CANN container images.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from typing import Any, List, Mapping, Optional, Tuple

from npudoctor import lazyre
from npudoctor.parsers.numbers import to_int
from npudoctor.parsers.set_env_model import MAX_EXPANDED, MAX_VALUE, SetEnvResult
from npudoctor.parsers.set_env_model import State as _State
from npudoctor.parsers.shell_lex import MAX_LINES
from npudoctor.parsers.shell_lex import Unsupported as _Unsupported
from npudoctor.parsers.shell_lex import find_close as _find_close
from npudoctor.parsers.shell_lex import logical_lines as _logical_lines
from npudoctor.parsers.shell_lex import split_assignments as _split_assignments
from npudoctor.parsers.shell_lex import split_commands as _split_commands
from npudoctor.parsers.shell_lex import split_pipe as _split_pipe

__all__ = ["MAX_DEPTH", "MAX_EXPANDED", "MAX_LINES", "MAX_VALUE", "SetEnvResult", "evaluate"]

#: Nesting depth of ``source`` and of ``$(...)`` evaluated.
MAX_DEPTH = 4

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_ASSIGN_RE = lazyre.pattern(rf"^({_NAME})(\+?)=(.*)$", re.S)
_FUNC_RE = lazyre.pattern(rf"^(?:function\s+({_NAME})\s*(?:\(\s*\))?|({_NAME})\s*\(\s*\))\s*\{{?\s*$")


# ------------------------------------------------------------------- expansion
def _words(st: _State, text: str, depth: int) -> List[str]:
    """Split ``text`` into words, expanding variables and substitutions.

    Unquoted expansions are not field-split (CANN paths have no spaces; keeping them
    whole is the safer reading)."""
    words: List[str] = []
    cur: List[str] = []
    have = False
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\n":
            if have:
                words.append("".join(cur))
                cur, have = [], False
            i += 1
            continue
        have = True
        if c == "'":
            j = text.find("'", i + 1)
            if j < 0:
                raise _Unsupported("unterminated quote")
            cur.append(text[i + 1 : j])
            i = j + 1
        elif c == '"':
            j = i + 1
            part: List[str] = []
            while j < n and text[j] != '"':
                if text[j] == "\\" and j + 1 < n and text[j + 1] in '"\\$`':
                    part.append(text[j + 1])
                    j += 2
                elif text[j] == "$":
                    value, j = _dollar(st, text, j, depth)
                    part.append(value)
                elif text[j] == "`":
                    k = text.find("`", j + 1)
                    if k < 0:
                        raise _Unsupported("unterminated backquote")
                    part.append(_substitute(st, text[j + 1 : k], depth))
                    j = k + 1
                else:
                    part.append(text[j])
                    j += 1
            if j >= n:
                raise _Unsupported("unterminated quote")
            cur.append("".join(part))
            i = j + 1
        elif c == "\\":
            cur.append(text[i + 1 : i + 2])
            i += 2
        elif c == "$":
            value, i = _dollar(st, text, i, depth)
            cur.append(value)
        elif c == "`":
            k = text.find("`", i + 1)
            if k < 0:
                raise _Unsupported("unterminated backquote")
            cur.append(_substitute(st, text[i + 1 : k], depth))
            i = k + 1
        else:
            cur.append(c)
            i += 1
    if have:
        words.append("".join(cur))
    return words


def _expand(st: _State, text: str, depth: int) -> str:
    """Expand one assignment value (no word splitting, quotes removed)."""
    return " ".join(_words(st, text, depth)) if text.strip() else ""


def _special(st: _State, name: str) -> Optional[str]:
    if name in ("0", "BASH_SOURCE", "BASH_SOURCE[0]"):
        return st.script
    if name == "PWD":
        return st.cwd
    if name in ("HOSTTYPE",):
        return st.arch
    return None


def _lookup(st: _State, name: str) -> Optional[str]:
    special = _special(st, name)
    value = special if special is not None and name not in st.vars else st.vars.get(name)
    if value:
        st.expanded += len(value)
        if st.expanded > MAX_EXPANDED:
            raise _Unsupported(f"expansions past {MAX_EXPANDED >> 20} MiB in all: not evaluated")
    return value


def _dollar(st: _State, text: str, i: int, depth: int) -> Tuple[str, int]:
    """Expand the ``$`` expression at ``text[i]``; return ``(value, next index)``."""
    nxt = text[i + 1 : i + 2]
    if nxt == "(":
        if text[i + 2 : i + 3] == "(":
            raise _Unsupported("arithmetic expansion")
        j = _find_close(text, i + 2, "(", ")")
        return _substitute(st, text[i + 2 : j], depth), j + 1
    if nxt == "{":
        j = _find_close(text, i + 2, "{", "}")
        return _braced(st, text[i + 2 : j], depth), j + 1
    m = re.match(rf"{_NAME}|[0-9]|[#?@*$!-]", text[i + 1 :])
    if not m:
        return "$", i + 1
    name = m.group(0)
    if name in ("#", "?", "@", "*", "$", "!", "-") or (name.isdecimal() and name != "0"):
        return "", i + 1 + len(name)
    return _lookup(st, name) or "", i + 1 + len(name)


def _braced(st: _State, body: str, depth: int) -> str:
    m = re.match(rf"^({_NAME}(?:\[[0-9@*]+\])?|[0-9])(.*)$", body, re.S)
    if not m:
        if body.startswith("#"):
            return str(len(_lookup(st, body[1:]) or ""))
        raise _Unsupported(f"${{{body}}}")
    name, rest = m.group(1), m.group(2)
    value = _lookup(st, name)
    if not rest:
        return value or ""
    for op in (":-", ":=", ":+", "-", "=", "+"):
        if rest.startswith(op):
            word = rest[len(op) :]
            is_set = value is not None and (value != "" or ":" not in op)
            if op.endswith("+"):
                return _expand(st, word, depth) if is_set else ""
            if is_set:
                return value or ""
            alt = _expand(st, word, depth)
            if op.endswith("="):
                st.vars[name] = alt
            return alt
    for op in ("%%", "%", "##", "#"):
        if rest.startswith(op):
            pattern = _expand(st, rest[len(op) :], depth)
            return _trim(value or "", pattern, op)
    raise _Unsupported(f"${{{body}}}")


def _trim(value: str, pattern: str, op: str) -> str:
    """Shell ``${v%pat}``/``%%``/``#``/``##`` with glob patterns."""
    n = len(value)
    if op.startswith("%"):
        rng = range(n + 1) if op == "%%" else range(n, -1, -1)
        for k in rng:
            if fnmatch.fnmatchcase(value[k:], pattern):
                return value[:k]
        return value
    rng = range(n, -1, -1) if op == "##" else range(n + 1)
    for k in rng:
        if fnmatch.fnmatchcase(value[:k], pattern):
            return value[k:]
    return value


# --------------------------------------------------------------- substitution
def _substitute(st: _State, script: str, depth: int) -> str:
    """Run the body of ``$(...)`` with the supported pure commands; return stdout."""
    if depth >= MAX_DEPTH:
        raise _Unsupported("command substitution nested too deep")
    saved_cwd = st.cwd
    out: List[str] = []
    try:
        for _op, command in _split_commands(script.replace("\n", ";")):
            out = _run_pipeline(st, command, depth + 1)
    finally:
        st.cwd = saved_cwd
    return "\n".join(out).rstrip("\n")


def _run_pipeline(st: _State, command: str, depth: int) -> List[str]:
    stages = _split_pipe(command)
    lines: Optional[List[str]] = None
    for stage in stages:
        lines = _run_simple(st, _words(st, stage, depth), lines)
    return lines or []


def _abs(st: _State, path: str) -> str:
    return posixpath.normpath(path if path.startswith("/") else posixpath.join(st.cwd, path))


def _run_simple(st: _State, argv: List[str], stdin: Optional[List[str]]) -> List[str]:
    if not argv:
        return []
    cmd, args = argv[0], argv[1:]
    flags = [a for a in args if a.startswith("-") and a != "-"]
    plain = [a for a in args if not (a.startswith("-") and a != "-")]
    if cmd in ("arch",) or (cmd == "uname" and args in (["-m"], ["-p"], ["-i"])):
        return [st.arch]
    if cmd == "pwd":
        return [st.cwd]
    if cmd == "cd":
        target = plain[0] if plain else st.vars.get("HOME", "/")
        st.cwd = _abs(st, target)
        return []
    if cmd == "dirname" and plain:
        return [posixpath.dirname(p.rstrip("/")) or ("/" if p.startswith("/") else ".") for p in plain]
    if cmd == "basename" and plain:
        return [posixpath.basename(plain[0].rstrip("/"))]
    if cmd in ("readlink", "realpath") and plain and (cmd == "realpath" or "-f" in flags or "-e" in flags):
        path = _abs(st, plain[0])
        resolve = getattr(st.fs, "resolve", None)
        return [resolve(path) if resolve else path]
    if cmd == "echo":
        return [" ".join(a for a in args if a not in ("-n", "-e"))]
    if cmd == "grep":
        return _grep(st, args, stdin)
    if cmd == "cut" and stdin is not None:
        return _cut(args, stdin)
    if cmd in ("true", ":"):
        return []
    raise _Unsupported(f"command `{' '.join(argv)}`")


def _grep(st: _State, args: List[str], stdin: Optional[List[str]]) -> List[str]:
    ignore_case = word = False
    rest: List[str] = []
    for a in args:
        if a.startswith("-") and len(a) > 1 and not rest:
            ignore_case = ignore_case or "i" in a
            word = word or "w" in a
            if set(a[1:]) - set("iwEF"):
                raise _Unsupported(f"grep {a}")
        else:
            rest.append(a)
    if not rest:
        raise _Unsupported("grep without pattern")
    pattern, files = rest[0], rest[1:]
    lines: List[str] = []
    if files:
        for f in files:
            text = _read(st, _abs(st, f))
            lines.extend((text or "").splitlines())
    else:
        lines = list(stdin or [])
    flags = re.I if ignore_case else 0
    rx = re.compile((r"\b%s\b" if word else "%s") % re.escape(pattern), flags)
    return [ln for ln in lines if rx.search(ln)]


def _cut(args: List[str], stdin: List[str]) -> List[str]:
    delim, fields = "\t", None
    it = iter(args)
    for a in it:
        if a.startswith("-d"):
            delim = a[2:] or next(it, "\t")
        elif a.startswith("-f"):
            fields = a[2:] or next(it, "")
    number = to_int(fields) if fields is not None and fields.isdecimal() else None
    if number is None:
        raise _Unsupported("cut with field ranges")
    k = number - 1
    out = []
    for ln in stdin:
        parts = ln.split(delim)
        out.append(parts[k] if k < len(parts) else (ln if len(parts) == 1 else ""))
    return out


def _read(st: _State, path: str) -> Optional[str]:
    reader = getattr(st.fs, "read_text", None)
    if reader is None:
        return None
    got = reader(path)
    text = getattr(got, "text", got)
    return text if isinstance(text, str) else None


# ------------------------------------------------------------------ conditions
def _test(st: _State, argv: List[str]) -> bool:
    if argv and argv[0] == "!":
        return not _test(st, argv[1:])
    for joiner, combine in (("-o", any), ("||", any), ("-a", all), ("&&", all)):
        if joiner in argv:
            groups: List[List[str]] = [[]]
            for a in argv:
                if a == joiner:
                    groups.append([])
                else:
                    groups[-1].append(a)
            return combine(_test(st, g) for g in groups)
    if len(argv) == 1:
        return argv[0] != ""
    if len(argv) == 2:
        op, arg = argv
        fs = st.fs
        if op == "-n":
            return arg != ""
        if op == "-z":
            return arg == ""
        if op in ("-d", "-f", "-e", "-x", "-r", "-s", "-L", "-h"):
            if fs is None:
                raise _Unsupported("file test without a file system")
            path = _abs(st, arg)
            if op == "-d":
                return bool(fs.is_dir(path))
            if op == "-f":
                return bool(fs.is_file(path))
            return bool(fs.exists(path))
    if len(argv) == 3:
        a, op, b = argv
        if op in ("=", "=="):
            return fnmatch.fnmatchcase(a, b) if "*" in b or "?" in b else a == b
        if op == "!=":
            return a != b
        if op in ("-eq", "-ne", "-lt", "-le", "-gt", "-ge"):
            x, y = to_int(a), to_int(b)  # ASCII digits only, as the shell reads them
            if x is None or y is None:
                return False
            return {"-eq": x == y, "-ne": x != y, "-lt": x < y, "-le": x <= y, "-gt": x > y, "-ge": x >= y}[op]
    raise _Unsupported(f"test {' '.join(argv)}")


def _condition(st: _State, text: str, depth: int) -> bool:
    result = True
    for op, command in _split_commands(text):
        if (op == "&&" and not result) or (op == "||" and result):
            continue
        result = _command_status(st, command, depth)
    return result


def _command_status(st: _State, command: str, depth: int) -> bool:
    negate = False
    stripped = command.strip()
    if stripped.startswith("! "):
        negate, stripped = True, stripped[2:].strip()
    argv = _words(st, stripped, depth)
    if not argv:
        return not negate
    if (argv[0], argv[-1]) in (("[", "]"), ("[[", "]]")):
        value = _test(st, argv[1:-1])
    elif argv[0] == "test":
        value = _test(st, argv[1:])
    elif argv[0] in ("true", ":"):
        value = True
    elif argv[0] == "false":
        value = False
    else:
        raise _Unsupported(f"condition `{command}`")
    return value != negate


# ------------------------------------------------------------------ statements
def _assign(st: _State, name: str, append: bool, raw: str, depth: int, export: bool) -> None:
    value = _expand(st, raw, depth)
    if append:
        value = st.vars.get(name, "") + value
    if len(value) > MAX_VALUE:
        raise _Unsupported(f"the value of {name} would be {len(value)} bytes, over {MAX_VALUE >> 10} KiB")
    st.vars[name] = value
    st.result.variables[name] = value
    if name in st.unset:
        st.unset.remove(name)
    if (export or name in st.env_names) and name not in st.exported:
        st.exported.append(name)


def _statement(st: _State, command: str, depth: int, lineno: int) -> None:
    first = command.split(None, 1)[0]
    if first in ("export", "declare", "typeset", "local", "readonly"):
        rest = command[len(first) :].strip()
        export = first == "export" or (first in ("declare", "typeset") and rest.startswith("-x"))
        for word in _split_assignments(rest):
            if word.startswith("-"):
                continue
            m = _ASSIGN_RE.match(word)
            if m:
                _assign(st, m.group(1), bool(m.group(2)), m.group(3), depth, export)
            elif re.fullmatch(_NAME, word) and export:
                if word not in st.exported:
                    st.exported.append(word)
                if word in st.vars:
                    st.result.variables.setdefault(word, st.vars[word])
        st.status = True
        return
    words = _split_assignments(command)
    if words and all(_ASSIGN_RE.match(w) for w in words):
        for w in words:
            m = _ASSIGN_RE.match(w)
            assert m is not None
            _assign(st, m.group(1), bool(m.group(2)), m.group(3), depth, False)
        st.status = True
        return
    argv = _words(st, command, depth)
    if not argv:
        return
    cmd = argv[0]
    if cmd == "unset":
        for name in argv[1:]:
            if name.startswith("-"):
                continue
            st.vars.pop(name, None)
            st.result.variables.pop(name, None)
            if name in st.exported:
                st.exported.remove(name)
            if name not in st.unset:
                st.unset.append(name)
        st.status = True
        return
    if cmd in ("source", ".") and len(argv) >= 2:
        _source(st, _abs(st, argv[1]), depth, lineno)
        return
    if cmd in ("[", "[[", "test", "true", "false", ":"):
        st.status = _command_status(st, command, depth)
        return
    if cmd in ("echo", "printf", "return", "set", "shopt", "cd"):
        if cmd == "cd":
            _run_simple(st, argv, None)
        st.status = True
        return
    raise _Unsupported(f"command `{cmd}`")


def _source(st: _State, path: str, depth: int, lineno: int) -> None:
    st.result.sourced.append(path)
    if depth >= MAX_DEPTH:
        st.result.unsupported.append((lineno, f"source {path}: nested too deep"))
        return
    text = _read(st, path)
    if text is None:
        st.result.unsupported.append((lineno, f"source {path}: not readable"))
        st.status = False
        return
    saved = st.script
    st.script = path
    try:
        _run_lines(st, _logical_lines(text), depth + 1)
    finally:
        st.script = saved


def _run_lines(st: _State, lines: List[Tuple[int, str]], depth: int) -> None:
    # Stack of (this branch active, some branch already taken, parent active).
    stack: List[List[bool]] = []
    # Open braces of a skipped function body; -1: the name was seen, "{" not yet.
    func_depth = 0
    # Nesting of a skipped loop or case (for/while/until ... done, case ... esac).
    loop_depth = 0
    for lineno, line in lines:
        for op, command in _split_commands(line):
            active = all(frame[0] for frame in stack)
            head = command.split(None, 1)[0] if command else ""
            if func_depth:
                if func_depth < 0 and "{" not in command:
                    continue
                func_depth = max(func_depth, 0) + command.count("{") - command.count("}")
                continue
            if loop_depth:
                if head in ("for", "while", "until", "case"):
                    loop_depth += 1
                elif head in ("done", "esac"):
                    loop_depth -= 1
                continue
            fm = _FUNC_RE.match(command)
            if fm:
                st.result.unsupported.append((lineno, f"function {fm.group(1) or fm.group(2)} skipped"))
                func_depth = command.count("{") - command.count("}") if "{" in command else -1
                continue
            if head in ("for", "while", "until", "case"):
                if active:
                    st.result.unsupported.append((lineno, f"{head} loop skipped: {command.strip()[:200]}"))
                loop_depth = 1
                continue
            try:
                if head == "if":
                    taken = active and _condition(st, command[2:].strip(), depth)
                    stack.append([taken, taken, active])
                    continue
                if head == "elif" and stack:
                    frame = stack[-1]
                    taken = frame[2] and not frame[1] and _condition(st, command[4:].strip(), depth)
                    frame[0] = taken
                    frame[1] = frame[1] or taken
                    continue
                if head == "then":
                    rest = command[4:].strip()
                    if rest and active:
                        _statement(st, rest, depth, lineno)
                    continue
                if head == "else" and stack:
                    frame = stack[-1]
                    frame[0] = frame[2] and not frame[1]
                    frame[1] = True
                    rest = command[4:].strip()
                    if rest and frame[0] and all(f[0] for f in stack):
                        _statement(st, rest, depth, lineno)
                    continue
                if head == "fi" and stack:
                    stack.pop()
                    continue
                if not active:
                    continue
                if (op == "&&" and not st.status) or (op == "||" and st.status):
                    continue
                _statement(st, command, depth, lineno)
            except _Unsupported as exc:
                st.result.unsupported.append((lineno, f"{command.strip()[:200]} ({exc})"))
                st.status = False
                if head in ("if", "elif"):
                    if head == "if":
                        stack.append([False, False, active])
                    else:
                        stack[-1][0] = False
            except (RecursionError, ValueError, IndexError, KeyError) as exc:  # never a traceback
                st.result.unsupported.append((lineno, f"{command.strip()[:200]} ({type(exc).__name__})"))


def evaluate(
    text: str,
    script_path: str,
    environ: Optional[Mapping[str, str]] = None,
    arch: str = "x86_64",
    fs: Any = None,
) -> SetEnvResult:
    """Interpret ``text`` (a ``set_env.sh``) as if sourced at ``script_path``.

    ``environ``: the environment it is sourced into (``$LD_LIBRARY_PATH`` etc. expand to
    these values); ``arch``: what ``$(arch)``/``$(uname -m)`` print (``aarch64`` or
    ``x86_64``, from the host facts); ``fs``: an object with ``exists``, ``is_dir``,
    ``is_file``, ``read_text`` and ``resolve`` taking paths of the diagnosed machine
    (a :class:`npudoctor.host.Host` fits) -- used by ``[ -d ... ]`` tests, ``source`` and
    ``grep FILE``; without it those constructs are recorded as unsupported.

    Never raises for bad input: anything not understood lands in ``unsupported``.
    """
    st = _State(environ or {}, posixpath.normpath(script_path), arch, fs)
    _run_lines(st, _logical_lines(text or ""), 0)
    res = st.result
    res.exported = [n for n in st.exported if n in st.vars]
    res.unset = list(st.unset)
    return res
