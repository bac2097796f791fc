"""Metal-trace replay sessions (issue #15.5): one session as the window (`--replay N`, `i` on
screen) and the sessions compared with each other as iterations of one run."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT, run_ttdash

from ttdash.model import Trace, Window
from ttdash.sim import generate_ops, write_report_csv
from ttdash.tui.app import open_app
from ttdash.tui.widgets import PromptScreen


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    """120 ops: a first run, then sessions 1-5 of 21 ops each (the fifth cut short at 15)."""
    path = tmp_path_factory.mktemp("replay") / "replay.csv"
    write_report_csv(generate_ops(120, trace_replay=True, layers=1, seed=1), path)
    return path


def test_sessions_compared_as_iterations_agree_with_each_session_alone(replayed):
    doc = json.loads(run_ttdash("report", str(replayed), "-f", "json").stdout)
    sessions = doc["replay_sessions"]
    assert [s["session"] for s in sessions] == [1, 2, 3, 4, 5]
    assert [s["ops"] for s in sessions] == [21, 21, 21, 21, 15]
    for s in sessions:
        one = json.loads(run_ttdash("report", str(replayed), "-f", "json", "--replay",
                                    str(s["session"])).stdout)
        assert one["window"] == f"replay session {s['session']} of 5"
        assert one["totals"]["ops"] == s["ops"]
        assert one["totals"]["device_time_us"] == pytest.approx(s["device_time_us"], abs=1e-6)
        assert one["replay_sessions"] is None  # one session: nothing to compare
    text = run_ttdash("report", str(replayed)).stdout
    assert "Replay sessions (5, --replay N for one): steady time per session median" in text
    assert "partial (fewer ops): 5" in text


def test_an_unknown_session_is_named(replayed):
    r = run_ttdash("report", str(replayed), "--replay", "9")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == (f"ttdash: {replayed}: no metal-trace replay session 9 "
                        "(sessions: 1, 2, 3, 4, 5)\n")


def test_diff_of_two_sessions(replayed):
    r = run_ttdash("diff", str(replayed), str(replayed), "--replay", "2", "-f", "json")
    doc = json.loads(r.stdout)
    assert r.returncode == 0 and doc["counts"]["matched"] == 21


async def test_i_picks_a_session_on_screen(replayed):
    app = open_app(Trace.load(replayed).view(Window("all")))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        await pilot.press("i")
        assert isinstance(app.screen, PromptScreen)
        await pilot.press("3", "enter")
        await pilot.pause()
        assert screen.view.window == Window("replay", region=3)
        assert len(screen.view.op_rows) == 21
        await pilot.press("i")
        await pilot.press("backspace", "enter")  # empty: the whole trace again
        await pilot.pause()
        assert screen.view.window.mode == "all" and len(screen.view.op_rows) == 120
    plain = open_app(Trace.load(ROOT / "fixtures/generated/wh_small_report.csv").view())
    async with plain.run_test(size=(100, 30)) as pilot:
        await pilot.press("i")
        assert not isinstance(plain.screen, PromptScreen)
