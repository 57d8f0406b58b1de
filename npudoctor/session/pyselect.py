"""Which Python interpreter a command judges.

``--python`` accepts an interpreter file, a venv or conda environment directory (its
``bin/python``), or the name of a conda environment.  Conda environments are found the way
conda itself lists them, without running conda: the paths in ``~/.conda/environments.txt``
(conda writes every environment it creates there), the ``envs`` directory next to the
active environment (``$CONDA_PREFIX/..``, or ``$CONDA_PREFIX/envs`` when the active one is
the base), and the ``envs`` directory of the installation ``$CONDA_EXE`` belongs to;
``base`` is that installation itself.

Without ``--python``, npudoctor judges the interpreter it runs in -- unless it was
installed in a venv of its own (pipx, ``uv tool``): then the user's active environment
(``VIRTUAL_ENV``, else ``CONDA_PREFIX``) is what they mean, and it is judged instead.  When
there is none, the report says plainly which interpreter was judged and how to point it
elsewhere.

No Typer or rich here: ``health`` resolves ``--python`` too, before Typer is imported.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from npudoctor import lazyre
from npudoctor.hostio import open_regular

if TYPE_CHECKING:
    from typing import Any, List, Mapping, Optional, Tuple

#: Interpreter names tried inside an environment directory, in order.
_NAMES = ("bin/python", "bin/python3")
#: File names of Python interpreters (``python``, ``python3.10``, ``python3.13t``, ``pypy3``):
#: a file so named is taken as one (a pyenv shim or a wrapper script is one too).
_INTERPRETER_NAME = lazyre.pattern(r"(?:python|pypy)[0-9.]*[a-z]?(?:\.exe)?")
#: Names every CPython executable holds in its symbol table (``Py_BytesMain`` from Python
#: 3.8, ``Py_Main`` before; linked statically or against libpython).
_ENTRY_POINTS = (b"Py_BytesMain", b"Py_Main")
#: Executable file magic numbers: ELF, Mach-O (32/64 bits, both byte orders, universal).
_BINARY_MAGIC = {
    b"\x7fELF": "an ELF executable",
    b"\xcf\xfa\xed\xfe": "a Mach-O executable",
    b"\xce\xfa\xed\xfe": "a Mach-O executable",
    b"\xfe\xed\xfa\xcf": "a Mach-O executable",
    b"\xca\xfe\xba\xbe": "a Mach-O executable",
}
#: Most bytes read looking for an entry point (a static CPython is well below this).
_SCAN_LIMIT = 64 << 20


def _interpreter_in(directory: str, root: Optional[str] = None) -> Optional[str]:
    """``directory``'s ``bin/python`` (or ``bin/python3``) as a path of the diagnosed
    machine, or ``None``; with ``root`` the directory is a path inside it."""
    for name in _NAMES:
        path = os.path.join(directory, name)
        real = os.path.join(root, path.lstrip("/")) if root else path
        if os.path.isfile(real):
            return path
    return None


def conda_env_dirs(environ: Mapping[str, str]) -> List[str]:
    """Directories that may hold conda environments (existing or not), most specific first:
    the ``envs`` directory of the active environment's installation and of ``$CONDA_EXE``'s."""
    out: List[str] = []
    prefix = environ.get("CONDA_PREFIX", "")
    if prefix:
        parent = os.path.dirname(prefix.rstrip("/"))
        out.append(parent if os.path.basename(parent) == "envs" else os.path.join(prefix, "envs"))
    exe = environ.get("CONDA_EXE", "")
    if exe:
        out.append(os.path.join(os.path.dirname(os.path.dirname(exe)), "envs"))
    return list(dict.fromkeys(out))


def _environments_txt(environ: Mapping[str, str]) -> List[str]:
    home = environ.get("HOME") or os.path.expanduser("~")
    path = os.path.join(home, ".conda", "environments.txt")
    from npudoctor.host import read_capped_text

    try:
        text = read_capped_text(path, 1 << 20, what="conda environments.txt")
    except OSError:
        return []
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def conda_env(name: str, environ: Mapping[str, str]) -> Optional[str]:
    """The directory of the conda environment called ``name`` (``base``: the installation
    of ``$CONDA_EXE``), or ``None`` when none is found."""
    exe = environ.get("CONDA_EXE", "")
    if name == "base" and exe:
        return os.path.dirname(os.path.dirname(exe))
    for path in _environments_txt(environ):
        if os.path.basename(path.rstrip("/")) == name and os.path.isdir(path):
            return path
    for base in conda_env_dirs(environ):
        candidate = os.path.join(base, name)
        if os.path.isdir(candidate):
            return candidate
    return None


def resolve(value: str, root: Optional[str] = None, environ: Optional[Mapping[str, str]] = None) -> str:
    """The interpreter ``--python value`` means: a file as given; a directory's
    ``bin/python``; else (a bare name, live only) the conda environment of that name.
    With ``root`` the value is a path inside it.  Raises ``ValueError`` saying what was
    tried."""
    env = os.environ if environ is None else environ
    real = os.path.join(root, value.lstrip("/")) if root else value
    if os.path.isfile(real):
        if not root:  # under --root nothing is run: the probes read what the file is
            what = not_an_interpreter(real)
            if what:
                raise ValueError(f"--python {value}: {what}, not a Python interpreter (it was not run)")
        return value
    if os.path.isdir(real):
        found = _interpreter_in(value, root)
        if found:
            return found
        raise ValueError(f"--python {value}: a directory without bin/python (not a venv or conda environment)")
    if not root and "/" not in value:
        directory = conda_env(value, env)
        if directory:
            found = _interpreter_in(directory)
            if found:
                return found
            raise ValueError(f"--python {value}: conda environment {directory} has no bin/python")
        where = ", ".join(["~/.conda/environments.txt"] + conda_env_dirs(env))
        raise ValueError(f"--python {value}: no such file, directory or conda environment (looked in {where})")
    raise ValueError(f"--python {value}: no such file or directory")


def not_an_interpreter(path: str) -> Optional[str]:
    """``None`` when the file at ``path`` is a Python interpreter, else what it is (``an
    ELF executable without Python's entry point``, ``a text file starting '# npudoctor'``),
    judged from its name and its bytes -- it is never run.  A file named like an
    interpreter (:data:`_INTERPRETER_NAME`, after following links) is one; so is an
    executable holding CPython's entry point (:data:`_ENTRY_POINTS`)."""
    names = {os.path.basename(path), os.path.basename(os.path.realpath(path))}
    if any(_INTERPRETER_NAME.fullmatch(n) for n in names):
        return None
    try:
        with open_regular(path) as f:  # never blocks on a FIFO, refuses devices
            head = f.read(4096)
            kind = _BINARY_MAGIC.get(head[:4])
            if kind:
                f.seek(0)
                if _holds(f, _ENTRY_POINTS):
                    return None
                return f"{kind} without Python's entry point (Py_BytesMain)"
    except OSError as exc:
        return f"a file that cannot be read ({exc.strerror or exc})"
    if not head:
        return "an empty file"
    first = head.split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    if len(first) > 60:
        first = first[:57] + "..."
    shown = "".join(c if c.isprintable() else "?" for c in first)
    if first.startswith("#!"):
        return f"a script for {shown[2:].strip() or 'an unnamed interpreter'}"
    if b"\0" in head:
        return "a binary file that is not an executable"
    return f"a text file starting {shown!r}" if shown else "a text file"


def _holds(stream: Any, needles: Tuple[bytes, ...]) -> bool:
    """Whether the binary ``stream`` holds one of ``needles`` in its first
    :data:`_SCAN_LIMIT` bytes (read in chunks, overlapping by the longest needle)."""
    keep = max(len(n) for n in needles)
    tail, read = b"", 0
    while read < _SCAN_LIMIT:
        chunk = stream.read(1 << 20)
        if not chunk:
            return False
        read += len(chunk)
        window = tail + chunk
        if any(n in window for n in needles):
            return True
        tail = window[-keep:]
    return False


def own_venv(prefix: Optional[str] = None, base_prefix: Optional[str] = None) -> bool:
    """Whether npudoctor runs in a venv (pipx, ``uv tool``, a project venv)."""
    prefix = sys.prefix if prefix is None else prefix
    base = getattr(sys, "base_prefix", sys.prefix) if base_prefix is None else base_prefix
    return os.path.realpath(prefix) != os.path.realpath(base)


def default_choice(
    environ: Mapping[str, str], prefix: Optional[str] = None, executable: Optional[str] = None
) -> Tuple[Optional[str], Optional[str]]:
    """``(interpreter to judge or None for npudoctor's own, the sentence for the report or
    None)`` when no ``--python`` is given on a live machine.  ``prefix``/``executable``:
    npudoctor's own (default ``sys.prefix``/``sys.executable``)."""
    prefix = sys.prefix if prefix is None else prefix
    executable = sys.executable if executable is None else executable
    mine = os.path.realpath(prefix)
    for var, kind in (("VIRTUAL_ENV", "virtualenv"), ("CONDA_PREFIX", "conda environment")):
        active = environ.get(var, "")
        if active and os.path.realpath(active) != mine and os.path.isdir(active):
            found = _interpreter_in(active)
            if found:
                return found, (
                    f"judged the active {kind} {active} ({var}), not npudoctor's own Python {executable}; "
                    "another one: --python PATH|ENV_DIR|CONDA_ENV"
                )
    if own_venv(prefix) and not environ.get("VIRTUAL_ENV") and not environ.get("CONDA_PREFIX"):
        return None, (
            f"judged npudoctor's own Python {executable} (its own venv: no active virtualenv or conda "
            "environment); to judge yours: --python PATH|ENV_DIR|CONDA_ENV"
        )
    return None, None
