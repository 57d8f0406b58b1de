"""The key of a health memo (:mod:`npudoctor.runtime.memo`): which memo file a run may
reuse.  The key hashes the options that change what is judged, this process's environment,
working directory, ids and interpreter (with ``sys.path`` and its directories' mtimes), and
npudoctor's own code and bundled matrix (size and mtime of each file), so that another
setting never meets this one's memo.  Imports neither ``typing`` nor ``dataclasses``
(health's start-up path)."""

from __future__ import annotations

import json
import os
import sys
import zlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Dict, List, Optional

#: Format of the memo file; another value is not read.
FORMAT = 1


def digest(data: bytes) -> str:
    """A fingerprint of ``data``: its length, CRC-32 and Adler-32 (hex), e.g.
    ``"1f4-0a1b2c3d-4e5f6a7b"``.  Not a security hash: memo files are this user's own."""
    return f"{len(data):x}-{zlib.crc32(data):08x}-{zlib.adler32(data):08x}"


def secure_digest(data: bytes) -> str:
    """SHA-256 of ``data`` (hex, first 32 digits): for what holds the environment's values
    (a CRC-32/Adler-32 pair of a short secret among known text gives it back, and the
    memo's name is listed in a shared ``/tmp``)."""
    from npudoctor.tomlread import sha256_hex  # the built-in SHA-256: no OpenSSL to load

    return sha256_hex(data)[:32]


def _code_signature() -> str:
    """Size and mtime of each file of npudoctor's own package (code and data) and of the
    bundled matrix (``matrix/`` beside the package in a source checkout, outside it):
    another install or an edited file is another key."""
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    rows: List[str] = []
    todo = [top]
    # where knowledge.matrix.load.bundled_dir finds the matrix (without importing the
    # matrix package, ~8 ms): npudoctor/_matrix in a wheel (scanned with the package), else
    # the checkout's top-level matrix/
    checkout = os.path.join(os.path.dirname(top), "matrix")
    if not os.path.isdir(os.path.join(top, "_matrix")) and os.path.isdir(checkout):
        todo.append(checkout)
    while todo:
        directory = todo.pop()
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.name == "__pycache__":
                    continue
                if entry.is_dir(follow_symlinks=False):
                    todo.append(entry.path)
                else:
                    st = entry.stat(follow_symlinks=False)
                    rows.append(f"{entry.path}:{st.st_size}:{st.st_mtime_ns}")
    rows.sort()
    return digest("\n".join(rows).encode("utf-8", errors="surrogateescape"))


def _mtime(path: str, state: str = "") -> Optional[int]:
    """The mtime (ns) of ``path`` (``""``: the working directory); ``None`` when it cannot
    be stat'ed or is ``state`` (an absolute path: the memo files' own directory)."""
    if state and os.path.abspath(path or ".") == state:
        return None
    try:
        return os.stat(path or ".").st_mtime_ns
    except OSError:
        return None


def state_dir() -> str:
    """Where health keeps its memo (and ``--cache-ttl`` results): ``$XDG_RUNTIME_DIR``,
    else ``$TMPDIR``, else ``/tmp``."""
    return os.environ.get("XDG_RUNTIME_DIR") or os.environ.get("TMPDIR") or "/tmp"


def memo_path(judged: Dict[str, Any]) -> str:
    """The memo file of a health run with the ``judged`` options (the options that change
    what is judged, as a JSON-able mapping) in this process's setting."""
    from npudoctor import __version__

    state = os.path.abspath(state_dir())
    what = {
        "format": FORMAT,
        "npudoctor": [__version__, _code_signature()],
        # sys.path: .pth files and user site too; the mtime of each of its directories: a
        # library npudoctor imports (packaging, tomli, ...) installed, upgraded or removed --
        # but not of the directory the memo files are written to (``python -m`` run from
        # /tmp puts it on sys.path): writing a memo would change the key of the next run
        "python": [sys.executable, sys.version, [[entry, _mtime(entry, state)] for entry in sys.path]],
        "cwd": os.getcwd(),
        "ids": [os.getuid(), os.getgid(), sorted(os.getgroups())],
        "environ": sorted(os.environ.items()),
        "options": judged,
    }
    key = secure_digest(json.dumps(what, sort_keys=True).encode("utf-8", errors="surrogateescape"))
    return os.path.join(state_dir(), f"npudoctor-memo-{os.getuid()}-{key}.json")


def judged_options(options: Any) -> Dict[str, Any]:
    """The health options that change what is judged (budget, cache and memo policies,
    verbosity and the output format do not), as a JSON-able mapping."""
    from dataclasses import asdict

    judged: Dict[str, Any] = asdict(options)
    for name in ("timeout", "cache_ttl", "fallback_ttl", "verbose", "fresh"):
        judged.pop(name, None)
    if isinstance(judged.get("machine"), dict):
        judged["machine"].pop("json", None)  # text or JSON: one verdict
    return judged
