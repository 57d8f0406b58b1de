#!/usr/bin/env python3
"""Write the compiled twin (``<file>.toml.compiled.json``) of every bundled TOML data file
under ``npudoctor/knowledge`` (finding codes, triage signatures, framework data): the
parsed document and the SHA-256 of the TOML bytes it came from.  At run time
:func:`npudoctor.tomlread.load_bundled` reads the twin instead of parsing the TOML while the
hash matches (parsing TOML at every start is what it saves).  The compatibility matrix has
its own compiled form (``scripts/gen_matrix.py``: merged and validated).

Usage::

    python scripts/gen_compiled_data.py           # exit 1 (and name them) when a twin is stale or missing
    python scripts/gen_compiled_data.py --write   # regenerate the twins

``tests/test_compiled_data.py`` runs the check.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import List

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script from anywhere: this checkout's npudoctor
    sys.path.insert(0, str(REPO))

from npudoctor.tomlread import COMPILED_SUFFIX, loads, twin_document  # noqa: E402

KNOWLEDGE = REPO / "npudoctor" / "knowledge"


def sources() -> List[Path]:
    """The bundled TOML data files that get a compiled twin."""
    return sorted(p for p in KNOWLEDGE.rglob("*.toml") if "__pycache__" not in p.parts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="regenerate the twins")
    args = parser.parse_args()
    stale = []
    wanted = set()
    for src in sources():
        raw = src.read_bytes()
        text = twin_document(raw, loads(raw.decode("utf-8")))
        twin = src.with_name(src.name + COMPILED_SUFFIX)
        wanted.add(twin)
        if twin.exists() and twin.read_text(encoding="utf-8") == text:
            continue
        stale.append(twin)
        if args.write:
            twin.write_text(text, encoding="utf-8")
    orphans = [p for p in KNOWLEDGE.rglob("*" + COMPILED_SUFFIX) if p not in wanted]
    for p in orphans:
        if args.write:
            p.unlink()
    changed = [str(p.relative_to(REPO)) for p in stale + orphans]
    if changed and not args.write:
        print(
            "stale compiled data: " + ", ".join(changed) + "; run python scripts/gen_compiled_data.py --write",
            file=sys.stderr,
        )
        return 1
    for name in changed:
        print(f"wrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
