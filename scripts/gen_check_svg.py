"""Render the README image ``docs/img/check.svg`` from a coloured terminal capture of
``npudoctor check`` (the golden file ``tests/golden/check-container-no-cann-120-color.txt``,
written by ``tests/test_golden.py`` from a real pty).  The ANSI colours of the capture are
turned into rich text and exported with rich's ``Console.export_svg``.

    python scripts/gen_check_svg.py          # print whether the image is current
    python scripts/gen_check_svg.py --write  # rewrite docs/img/check.svg
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CAPTURE = REPO / "tests" / "golden" / "check-container-no-cann-120-color.txt"
IMAGE = REPO / "docs" / "img" / "check.svg"
COLUMNS = 120


def render(capture: Path = CAPTURE) -> str:
    """The SVG text of ``capture`` (ANSI text) on a ``COLUMNS``-wide terminal."""
    from rich.console import Console
    from rich.text import Text

    console = Console(record=True, width=COLUMNS, file=open("/dev/null", "w"), color_system="standard")  # noqa: SIM115
    for line in capture.read_text(encoding="utf-8").splitlines():
        console.print(Text.from_ansi(line), soft_wrap=True)
    svg = console.export_svg(title="npudoctor check", unique_id="npudoctor-check")
    console.file.close()
    return svg


def main(argv: list) -> int:
    svg = render()
    if "--write" in argv:
        IMAGE.parent.mkdir(parents=True, exist_ok=True)
        IMAGE.write_text(svg, encoding="utf-8")
        print(f"wrote {IMAGE}")
        return 0
    current = IMAGE.exists() and IMAGE.read_text(encoding="utf-8") == svg
    print(f"{IMAGE}: {'current' if current else 'out of date (run with --write)'}")
    return 0 if current else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
