"""Console entry point.

``npudoctor health …`` is dispatched before Typer/rich are imported (it runs every
few seconds in containers and may exit only 0 or 1).  Everything else goes to the
Typer app; an unexpected exception becomes exit 3 with a short "please report" line
instead of a traceback (``NPUDOCTOR_DEBUG=1`` shows the traceback).
"""

from __future__ import annotations

import os
import sys
from typing import List, Optional


def main(argv: Optional[List[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "health":
        from npudoctor.runtime.health import main as health_main

        return health_main(args[1:])
    try:
        from npudoctor.cli.app import app

        app(args=args, prog_name="npudoctor", standalone_mode=True)
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("npudoctor: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # the last line of defence: never a bare traceback
        if os.environ.get("NPUDOCTOR_DEBUG"):
            raise
        print(
            f"npudoctor failed: {type(exc).__name__}: {exc}\n"
            "This is a bug in npudoctor; please report it (rerun with NPUDOCTOR_DEBUG=1 for the traceback).",
            file=sys.stderr,
        )
        return 3
    return 0


def run() -> None:
    """Console-script wrapper: exit with :func:`main`'s code."""
    sys.exit(main())
