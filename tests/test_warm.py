"""The helper thread that imports what the run needs while the target interpreter answers
(npudoctor.probes._warm, issue 18): same modules, same order, nothing left running."""

from __future__ import annotations

import importlib
import sys
import threading
from pathlib import Path

import pytest

from npudoctor import context, engine
from npudoctor.probes._warm import Warming
from npudoctor.probes.python import later_imports


def _package(tmp_path: Path, name: str, modules: dict) -> None:
    pkg = tmp_path / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("ORDER = []\n")
    for mod, body in modules.items():
        (pkg / f"{mod}.py").write_text(body)


def test_names_are_imported_in_order_in_a_thread_that_is_gone_after_the_block(tmp_path, monkeypatch):
    record = "import threading\nfrom {pkg} import ORDER\nORDER.append((__name__, threading.current_thread().name))\n"
    _package(tmp_path, "warmpkg_a", {m: record.format(pkg="warmpkg_a") for m in ("one", "two", "three")})
    monkeypatch.syspath_prepend(str(tmp_path))
    names = ["warmpkg_a.two", "warmpkg_a.one", "warmpkg_a.three"]
    with Warming(names) as warm:  # the block stands for the wait on a child
        warm._thread.join(2.0)
    import warmpkg_a

    assert [m for m, _t in warmpkg_a.ORDER] == names
    assert {t for _m, t in warmpkg_a.ORDER} == {"npudoctor-warm"}
    assert not [t for t in threading.enumerate() if t.name == "npudoctor-warm"]
    for name in names:
        sys.modules.pop(name, None)
    sys.modules.pop("warmpkg_a", None)


def test_leaving_the_block_stops_the_helper_after_the_import_in_progress(tmp_path, monkeypatch):
    _package(tmp_path, "warmpkg_c", {"slow": "from warmpkg_c import STARTED, GATE\nSTARTED.set()\nGATE.wait(5)\n"})
    (tmp_path / "warmpkg_c" / "__init__.py").write_text(
        "import threading\nSTARTED, GATE = threading.Event(), threading.Event()\n"
    )
    (tmp_path / "warmpkg_c" / "after.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with Warming(["warmpkg_c.slow", "warmpkg_c.after"]):
        import warmpkg_c

        assert warmpkg_c.STARTED.wait(2.0)
        threading.Timer(0.2, warmpkg_c.GATE.set).start()  # the child answers: the block ends first
    assert "warmpkg_c.slow" in sys.modules and "warmpkg_c.after" not in sys.modules
    assert not [t for t in threading.enumerate() if t.name == "npudoctor-warm"]
    for name in ("warmpkg_c", "warmpkg_c.slow"):
        sys.modules.pop(name, None)


def test_a_failing_import_fails_again_where_the_run_imports_it(tmp_path, monkeypatch):
    _package(tmp_path, "warmpkg_b", {"bad": "raise ImportError('the real reason')\n", "good": "X = 1\n"})
    monkeypatch.syspath_prepend(str(tmp_path))
    with Warming(["warmpkg_b.bad", "warmpkg_b.good"]) as warm:
        warm._thread.join(2.0)
    assert "warmpkg_b.bad" not in sys.modules and sys.modules["warmpkg_b.good"].X == 1
    with pytest.raises(ImportError, match="the real reason"):
        importlib.import_module("warmpkg_b.bad")
    for name in ("warmpkg_b", "warmpkg_b.good"):
        sys.modules.pop(name, None)


def test_no_name_no_thread():
    with Warming([]) as warm:
        assert warm._thread is None


def test_later_imports_are_the_later_probes_psutil_and_the_planned_rule_modules():
    options = context.Options(python="/usr/bin/python3")
    names = later_imports(options, {"MASTER_ADDR": "192.0.2.1"})
    specs = engine.select_probes(engine.probe_specs(), options)
    sections = [s.section for s in specs]
    probes = [s.module for s in specs[sections.index("python") + 1 :]]
    assert names[: len(probes)] == probes and "npudoctor.probes.hccl" in probes
    assert names[len(probes)] == "psutil"
    assert names[len(probes) + 1 :] == engine.rule_modules(sections + list(engine.EXTRA_SECTIONS))
    assert "npudoctor.rules.hccl" in names and "npudoctor.probes.cann" not in names
    # psutil only when the hccl probe will read this node's addresses
    assert later_imports(options, {"MASTER_ADDR": " "}) == [n for n in names if n != "psutil"]
