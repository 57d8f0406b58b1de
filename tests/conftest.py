import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

# Widths are each test's own choice: a COLUMNS or LINES of the terminal pytest runs in (or
# the 80 columns pytest-xdist's workers are given) must not change what commands print.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)

# The user's cache (a refreshed matrix, ELF facts) is not the tests' input: every command a
# test runs in-process or passes this environment on to reads an empty cache of its own.
os.environ["NPUDOCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="npudoctor-test-cache-")
atexit.register(shutil.rmtree, os.environ["NPUDOCTOR_CACHE_DIR"], True)

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def pytest_addoption(parser):
    parser.addoption("--run-network", action="store_true", default=False, help="run tests marked network")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-network"):
        return
    skip = pytest.mark.skip(reason="needs --run-network")
    for item in items:
        if "network" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def fixture_text():
    """Read a captured sample from tests/fixtures/ (bytes kept, decoded as UTF-8)."""

    def read(name: str) -> str:
        return (FIXTURES / name).read_bytes().decode("utf-8", errors="replace")

    return read
