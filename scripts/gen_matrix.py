#!/usr/bin/env python3
"""Compile the bundled compatibility matrix (``matrix/*.toml``) into
``npudoctor/knowledge/matrix/compiled.json``: the files merged and validated once, here,
instead of on every run.  One JSON document (the SHA-256 of the TOML bytes it was made from,
their file names, the merged data), which a run loads whole and never checks against the TOML:
a stale file is caught in a checkout by ``tests/test_matrix_compiled.py``, not at run time.

Usage::

    python scripts/gen_matrix.py           # exit 1 (and say so) when the committed file is stale
    python scripts/gen_matrix.py --write   # regenerate it (atomically)

``tests/test_matrix_compiled.py`` runs the check.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script from anywhere: this checkout's npudoctor
    sys.path.insert(0, str(REPO))

from npudoctor.knowledge.matrix.load import (  # noqa: E402
    COMPILED_FILE,
    _files_of,
    _read_raw,
    compile_documents,
    render_compiled,
)


def render() -> str:
    """The text of the compiled matrix for ``REPO/matrix`` (deterministic: sorted tables and keys)."""
    files = _files_of(str(REPO / "matrix"))
    doc = compile_documents(files, [_read_raw(f) for f in files])
    return render_compiled(doc)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="regenerate the compiled matrix")
    args = parser.parse_args(argv)
    text = render()
    target = Path(COMPILED_FILE)
    current = target.read_text(encoding="utf-8") if target.exists() else None
    if current == text:
        return 0
    if not args.write:
        print(f"{target.relative_to(REPO)} is stale: run python scripts/gen_matrix.py --write", file=sys.stderr)
        return 1
    fd, tmp = tempfile.mkstemp(dir=str(target.parent), prefix=".compiled.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, target)
    print(f"wrote {target.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
