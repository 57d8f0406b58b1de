"""A venv holding this checkout's npudoctor and the dependencies its commands import, as
sources only: what ``pip install --no-compile`` (or uv's default) leaves, without pip.

The dependencies are copied from the test interpreter (their releases differ in what they
need, so the ones installed here are the ones that work with this checkout)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Tuple

REPO = Path(__file__).resolve().parents[2]

#: npudoctor's dependencies that its commands import.
DEPS = (
    "typer",
    "click",
    "annotated_doc",
    "shellingham",
    "typing_extensions",
    "msgspec",
    "packaging",
    "psutil",
    "rich",
    "platformdirs",
)


def source_venv(directory: Path) -> Tuple[Path, Path]:
    """``(venv, site-packages)``: a new venv at ``directory`` with npudoctor and :data:`DEPS`
    copied in without any ``__pycache__``."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(directory)], check=True, timeout=120)
    (site,) = directory.glob("lib/python*/site-packages")
    shutil.copytree(REPO / "npudoctor", site / "npudoctor", ignore=shutil.ignore_patterns("__pycache__"))
    for name in DEPS:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            continue
        origin = Path(spec.origin)
        if origin.name == "__init__.py":
            shutil.copytree(origin.parent, site / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(origin, site / origin.name)
    return directory, site


#: Runs the console script's code with ``argv[2:]``, then writes to ``argv[1]``: the number of
#: modules imported, ``sys.pycache_prefix``, and the modules whose ``.pyc`` (where the import
#: system looked for it) does not exist: those were compiled from source in this run.
NO_PYC_REPORTER = """
import atexit, os, sys
def report(out=sys.argv[1]):
    missing = sorted(
        name for name, module in list(sys.modules.items())
        if getattr(module, "__cached__", None) and not os.path.exists(module.__cached__)
    )
    with open(out, "w") as fh:
        fh.write("%d\\n%s\\n" % (len(sys.modules), sys.pycache_prefix) + "\\n".join(missing))
atexit.register(report)
sys.argv = ["npudoctor"] + sys.argv[2:]
from npudoctor.entry import run
run()
"""
