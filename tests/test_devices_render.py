"""The ``devices`` table without rich (issue 18): on every scenario's device view, at widths
from 40 to 200 columns, on a terminal and piped, with and without colour, the layout of
:mod:`npudoctor.report.devices` prints byte for byte what rich draws from the same calls,
and most runs (all but a narrow terminal's wrapped lines) do not need rich at all."""

from __future__ import annotations

import copy
import io
import json
from typing import Any, Dict

import pytest
from clirun import npudoctor
from scenario_runner import REPO, SHARED_SCENARIOS, environment, prepare, scenario_dirs, tomllib

from npudoctor.report import devices as view

SCENARIOS = scenario_dirs(REPO / "tests" / "scenarios", REPO / "examples", SHARED_SCENARIOS)
WIDTHS = (40, 60, 80, 89, 90, 99, 100, 120, 200)


@pytest.fixture(scope="module")
def views(tmp_path_factory) -> Dict[str, Any]:
    """``devices --json`` of every scenario (the scenario's directory written ``/SC``)."""
    out: Dict[str, Any] = {}
    for src in SCENARIOS:
        scenario = prepare(src, tmp_path_factory.mktemp(src.name))
        spec = tomllib.loads((scenario / "scenario.toml").read_text(encoding="utf-8"))
        extra = [str(a) for a in spec.get("setup", {}).get("args", [])]
        env = environment(scenario, spec)
        proc = npudoctor("devices", "--json", *extra, "--root", scenario / "root", env=env, cwd=scenario)
        out[src.name] = json.loads(proc.stdout.replace(str(scenario), "/SC"))
    return out


def _plain(data: Any, terminal: bool, width: int, color: bool = False) -> Any:
    plain = view._Plain(terminal, width, color)
    try:
        view.draw(data, plain, terminal=terminal, color=color)
    except view._Unplain:
        return None
    return "".join(line + "\n" for line in plain.lines)


def _rich(data: Any, terminal: bool, width: int, color: bool = False) -> str:
    buf = io.StringIO()
    view.draw(data, view._Rich(buf, terminal, width, color), terminal=terminal, color=color)
    return buf.getvalue()


def test_the_plain_layout_is_riches_byte_for_byte(views):
    assert len(views) >= 100
    tables = plain = 0
    for name, data in views.items():
        tables += bool(data["devices"].get("chips"))
        for terminal, widths, color in (
            (False, (80,), False),
            (False, (80,), True),
            (True, WIDTHS, False),
            (True, WIDTHS, True),
        ):
            for width in widths:
                drawn = _plain(data, terminal, width, color)
                if drawn is None:  # rich wraps or shrinks, or a character's width: rich draws it
                    continue
                plain += 1
                where = f"{name}, {width} columns, terminal={terminal}, color={color}"
                assert drawn == _rich(data, terminal, width, color), where
                out = io.StringIO()
                view.render(data, out, terminal=terminal, width=width, color=color)
                assert out.getvalue() == drawn
    assert tables >= 30, "a chip table on many scenarios"
    assert plain >= 0.8 * len(views) * 2 * (1 + len(WIDTHS)), plain


def test_render_falls_back_to_rich_when_a_terminal_line_must_wrap(views):
    data = copy.deepcopy(views["k15-process-holds-npu"])
    assert _plain(data, True, 60) is None  # the processes table is shrunk by rich at 60 columns
    out = io.StringIO()
    view.render(data, out, terminal=True, width=60, color=False)
    assert out.getvalue() == _rich(data, True, 60)
    assert "PID in contain…" in out.getvalue()


def test_colour_codes_are_riches(views):
    data = views["health-910b3-8npu-healthy"]
    out = io.StringIO()
    view.render(data, out, terminal=True, width=120, color=True)
    assert out.getvalue() == _rich(data, True, 120, color=True)
    assert "\x1b[1mNPU\x1b[0m\x1b[1m \x1b[0m \x1b[1m \x1b[0m\x1b[1mChip" in out.getvalue()
    assert "   \x1b[32mOK    \x1b[0m   " in out.getvalue()


def test_text_is_literal_not_rich_markup(views):
    """A bus id with ``:AB:`` (rich's emoji code for 🆎) and an npu-smi error with ``[/]``
    (rich markup) print as they are, with and without rich."""
    data = copy.deepcopy(views["health-910b3-8npu-healthy"])
    data["devices"]["chips"][0]["bus_id"] = "0000:AB:00.0"
    for terminal, width, color in ((False, 80, False), (True, 120, False), (True, 120, True)):
        out = io.StringIO()
        view.render(data, out, terminal=terminal, width=width, color=color)
        assert "0000:AB:00.0" in out.getvalue() and "🆎" not in out.getvalue()
    empty = dict(data, devices=dict(data["devices"], chips=[], npu_smi={"error": "dcmi [/] failed :cd:"}))
    for color in (False, True):
        out = io.StringIO()
        view.render(empty, out, terminal=True, width=100, color=color)
        assert "  no chip table: dcmi [/] failed :cd:" in out.getvalue()


@pytest.mark.parametrize("name", ["health-910b3-8npu-healthy", "k15-process-holds-npu"])
@pytest.mark.parametrize("width", [60, 80, 120])
@pytest.mark.parametrize("color", [False, True])
def test_golden_terminal_text(views, name, width, color):
    """The view on a terminal, as rich drew it before the table was laid out here
    (``tests/golden/devices-*``, written by the rich renderer of commit 75c6d97)."""
    golden = REPO / "tests" / "golden" / f"devices-{name}-{width}-{'color' if color else 'plain'}.txt"
    out = io.StringIO()
    view.render(views[name], out, terminal=True, width=width, color=color)
    assert out.getvalue() == golden.read_text(encoding="utf-8")
