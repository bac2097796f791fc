"""Metal-trace replay sessions (issue #15.5): one session as the window (`--replay N`, `i` on
screen) and the sessions compared with each other as iterations of one run."""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pandas as pd
import pytest
from conftest import ROOT, run_ttdash

from ttdash.model import Trace, Window
from ttdash.schemas import load as load_schema
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


# ------------------------------------------------------------------ one replay session
def test_one_replay_session_is_the_steady_state(tmp_path):
    """A decode trace with one replay session (33 eager ops, 22 capture rows without device
    data, the 22 replayed ops): the session is listed and is the steady state; the capture
    rows are not "missing device data" (was: replay_sessions null and a "steady state" of the
    capture rows plus one op)."""
    from synthetic_traces import DECODE, REPLAY_NS, one_replay_session

    path = one_replay_session(tmp_path / "decode.csv")
    raw = pd.read_csv(path)
    replayed = raw["METAL TRACE REPLAY SESSION ID"].notna().to_numpy()
    want_ids = (np.flatnonzero(replayed) + 2).tolist()  # line numbers of the replayed rows
    want_us = raw.loc[replayed, "DEVICE KERNEL DURATION [ns]"].sum() / 1000
    assert want_us == pytest.approx(sum(REPLAY_NS) / 1000) == pytest.approx(786.0)
    doc = json.loads(run_ttdash("report", str(path), "-f", "json").stdout)
    jsonschema.validate(doc, load_schema("report"))
    (s,) = doc["replay_sessions"]
    assert (s["session"], s["ops"]) == (1, len(DECODE))
    assert s["device_time_us"] == pytest.approx(want_us)
    it = doc["iterations"]
    assert (it["source"], it["count"], it["warmup"]) == ("replay", 1, 0)
    assert it["steady_from_id"] == want_ids[0]
    assert "no_device_data" not in {w["kind"] for w in doc["warnings"]}
    steady = run_ttdash("report", str(path), "--steady-state", "-f", "json")
    assert steady.returncode == 0, steady.stderr
    sdoc = json.loads(steady.stdout)
    assert [o["id"] for o in sdoc["ops"]] == want_ids
    assert sdoc["totals"]["device_time_us"] == pytest.approx(want_us)
    assert "the 55 op rows before the replay session" in sdoc["window_note"]
    text = run_ttdash("report", str(path)).stdout
    assert "Replay session: 1 (#1, 22 ops)" in text


def test_one_session_window_lists_no_sessions(replayed):
    """--replay N: the window is that session, named in the window; nothing listed."""
    one = json.loads(run_ttdash("report", str(replayed), "-f", "json", "--replay", "2").stdout)
    assert one["window"] == "replay session 2 of 5" and one["replay_sessions"] is None
