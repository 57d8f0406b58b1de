"""The scenario builders still reproduce the committed trees byte for byte.

tests/builders/build_{cann,case,health,framework,tunables}_scenarios.py write tests/scenarios/<name>/; a scenario edited
by hand (or a builder changed without rebuilding) would make the committed tree and the code
that justifies it drift apart.  Each builder runs here into a temporary directory and every
file, symlink and executable bit of what it builds is compared with the committed copy.
"""

from __future__ import annotations

import filecmp
import importlib
import os
from pathlib import Path
from typing import Dict, List

import pytest

TESTS = Path(__file__).resolve().parent
SCENARIOS = TESTS / "scenarios"


def _tree(base: Path) -> Dict[str, str]:
    """relative path → "link:<target>" | "dir" | "file:<x or ->" of everything under base."""
    out: Dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(base):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(base))
            if path.is_symlink():
                out[rel] = "link:" + os.readlink(path)
            elif path.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = "file:" + ("x" if os.access(path, os.X_OK) else "-")
    return out


def _differences(built: Path, committed: Path) -> List[str]:
    new, old = _tree(built), _tree(committed)
    problems = [f"only in the builder's output: {p}" for p in sorted(set(new) - set(old))]
    problems += [f"only in the committed tree: {p}" for p in sorted(set(old) - set(new))]
    for rel in sorted(set(new) & set(old)):
        if new[rel] != old[rel]:
            problems.append(f"{rel}: built {new[rel]}, committed {old[rel]}")
        elif new[rel].startswith("file:") and not filecmp.cmp(built / rel, committed / rel, shallow=False):
            problems.append(f"{rel}: contents differ")
    return problems


@pytest.mark.parametrize(
    "builder",
    [
        "build_cann_scenarios",
        "build_case_scenarios",
        "build_health_scenarios",
        "build_framework_scenarios",
        "build_tunables_scenarios",
    ],
)
def test_builder_reproduces_the_committed_scenarios(
    builder: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cann = importlib.import_module("builders.build_cann_scenarios")
    module = importlib.import_module(f"builders.{builder}")
    monkeypatch.setattr(cann, "OUT", tmp_path)
    if hasattr(module, "OUT"):
        monkeypatch.setattr(module, "OUT", tmp_path)
    if builder == "build_health_scenarios":
        # it also writes two edited captures into tests/fixtures: send them to tmp and compare
        (tmp_path / "fixtures").mkdir()
        monkeypatch.setattr(module, "HERE", tmp_path)
    built = module.build()
    assert built, f"{builder} built nothing"
    problems: List[str] = []
    for name in built:
        committed = SCENARIOS / name
        if not committed.is_dir():
            problems.append(f"{name}: built but not committed")
            continue
        problems += [f"{name}/{p}" for p in _differences(tmp_path / name, committed)]
    if builder == "build_health_scenarios":
        for path in sorted((tmp_path / "fixtures").iterdir()):
            if not filecmp.cmp(path, TESTS / "fixtures" / path.name, shallow=False):
                problems.append(f"fixtures/{path.name}: contents differ")
    assert problems == []
