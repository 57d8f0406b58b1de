#!/usr/bin/env python3
"""Regenerate every generated file of the repository, or check that each is current.

Usage::

    python scripts/regen.py           # regenerate every generated file (the default)
    python scripts/regen.py --check   # exit 1 naming the stale files; write nothing

The generators (:data:`GENERATORS`), in the order a change flows through them: the compiled
twins of the knowledge TOML files, the compiled matrix, the rule/probe registry, the JSON
schemas, the grades page and the README image.  Each runs as its own script in a fresh
interpreter: the registry must be made by an interpreter that imported no rule module yet,
and each generator reads what the ones before it wrote.  ``docs/architecture.md``
("Generated files") names the test that fails when each output is stale.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import List, Sequence, Tuple

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = REPO / "scripts"

#: ``(script in scripts/, what it writes)``, in the order they run.
GENERATORS: Tuple[Tuple[str, str], ...] = (
    ("gen_compiled_data.py", "npudoctor/knowledge/**/*.toml.compiled.json"),
    ("gen_triage_plan.py", "npudoctor/knowledge/_signatures_plan.py"),
    ("gen_matrix.py", "npudoctor/knowledge/matrix/compiled.jsonl"),
    ("gen_registry.py", "npudoctor/_registry.py"),
    ("gen_view_nodes.py", "npudoctor/facts/_view_nodes.py"),
    ("gen_schema.py", "docs/schema/*.schema.json"),
    ("gen_grades_doc.py", "docs/grades.md"),
    ("gen_check_svg.py", "docs/img/check.svg"),
)


def run(script: str, write: bool) -> Tuple[int, str]:
    """Run one generator (``--write`` or its check); its exit status and what it printed."""
    argv = [sys.executable, str(SCRIPTS / script)] + (["--write"] if write else [])
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=str(REPO), check=False)
    return proc.returncode, (proc.stdout + proc.stderr).strip()


def main(argv: Sequence[str] = ()) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 naming the stale files")
    args = parser.parse_args(list(argv))
    failed: List[str] = []
    for script, output in GENERATORS:
        status, said = run(script, write=not args.check)
        if status == 0:
            if not args.check and said:
                print(said)
            continue
        failed.append(output)
        print(f"{output} ({script}): {'stale' if args.check else 'failed'}", file=sys.stderr)
        if said:
            print("  " + said.replace("\n", "\n  "), file=sys.stderr)
    if failed:
        if args.check:
            print("stale generated files: " + ", ".join(failed) + "; run: python scripts/regen.py", file=sys.stderr)
        return 1
    if args.check:
        print("every generated file is current")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
