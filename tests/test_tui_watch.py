"""watch / demo: live rows, the switch to the report, faults, follow and pause (Pilot), CLI."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import run_ttdash, wait_until

from ttdash.sim import cpp_device_rows, generate_ops, simulate_run, write_cpp_device_csv
from ttdash.tui.watch import RunsScreen, watch_app

SIZE = (110, 32)



def listing(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in root.rglob("*")}


def live_log(root: Path, ops, start: int = 0, stop: int | None = None) -> Path:
    rows = cpp_device_rows(ops)
    path = root / ".logs" / "cpp_device_perf_report.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_cpp_device_csv(rows.iloc[start:stop], path, append=path.exists())
    return path


async def test_live_rows_then_report_switch(tmp_path):
    root = tmp_path / "profiler"
    root.mkdir()
    app = watch_app(root, refresh=0.1)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        table = screen.query_one("OpTable")
        assert screen.mode == "live" and len(table.rows) == 0
        stop, seen_live = threading.Event(), threading.Event()

        def hold_after_a_dump(phase: str, done: int, total: int) -> None:
            # the writer waits, after a dump, until the screen has shown live rows: a loaded
            # machine could otherwise write every row and the report between two looks
            if phase == "dump" and 0 < done < total:
                seen_live.wait(30)

        writer = threading.Thread(target=simulate_run, args=(root,),
                                  kwargs=dict(n_ops=300, speed=40, stop=stop,
                                              on_progress=hold_after_a_dump), daemon=True)
        writer.start()
        await wait_until(pilot, lambda: 0 < len(table.rows) < 300 and screen.mode == "live")
        seen_live.set()
        live_ids = list(table.rows)
        assert screen.follow and table.cursor == len(table.rows) - 1
        assert "live:" in str(screen.query_one("#summary").render())
        await wait_until(pilot, lambda: screen.mode == "report", timeout=30)
        writer.join(10)
        assert screen.report_path.name.startswith("ops_perf_results_")
        assert len(screen.view.op_rows) == 300 and len(screen.view.trace.signposts) > 0
        assert live_ids and screen.live.total_rows == 300
        assert "report (L live" in str(screen.query_one("#status").render())
        await pilot.press("L")
        assert screen.mode == "live" and len(table.rows) == 300


async def test_watcher_never_writes_and_survives_faults(tmp_path):
    root = tmp_path / "profiler"
    ops = generate_ops(120, seed=3)
    app = watch_app(root, refresh=0.05, poll=0.1)  # also exercises the polling observer
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        table = screen.query_one("OpTable")
        await wait_until(pilot, lambda: "waiting" in screen.watch_status[1].lower()
                         or "missing" in screen.watch_status[1].lower())
        root.mkdir()
        log = live_log(root, ops, 0, 60)
        await wait_until(pilot, lambda: len(table.rows) == 60)
        live_log(root, ops, 60, 90)
        await wait_until(pilot, lambda: len(table.rows) == 90)
        before = listing(root)
        # Device re-open: the runtime deletes the log and starts a new, shorter one.
        log.unlink()
        live_log(root, ops, 0, 10)
        await wait_until(pilot, lambda: len(table.rows) == 10)
        assert screen.watch_status[0] == "warning" and "restarted" in screen.watch_status[1]
        assert set(listing(root)) == set(before)  # nothing of ours appeared under root
        # The whole directory disappears while watching.
        shutil.rmtree(root)
        await wait_until(pilot, lambda: screen.watch_status[0] in ("warning", "error")
                         and "restarted" not in screen.watch_status[1], timeout=15)
        assert app.is_running


async def test_follow_and_pause(tmp_path):
    root = tmp_path / "p"
    root.mkdir()
    ops = generate_ops(200, seed=5)
    live_log(root, ops, 0, 100)
    app = watch_app(root, refresh=0.05)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        table = screen.query_one("OpTable")
        await wait_until(pilot, lambda: len(table.rows) == 100)
        await pilot.press("k", "k")
        assert not screen.follow and table.cursor == 97
        live_log(root, ops, 100, 130)
        await wait_until(pilot, lambda: len(table.rows) == 130)
        assert table.cursor == 97 and screen.pending_new == 30
        assert "30 new ops" in str(screen.query_one("#status").render())
        await pilot.press("G")
        assert screen.follow and screen.pending_new == 0 and table.cursor == 129
        await pilot.press("p")
        assert screen.paused
        live_log(root, ops, 130, 150)
        # the feed's view of the 20 rows reaches the screen (counted, not shown): waited for,
        # not slept on (0.2 s was short under load)
        await wait_until(pilot, lambda: screen.pending_new == 20)
        assert len(table.rows) == 130 and screen.live.total_rows == 150
        await pilot.press("p")
        assert not screen.paused and len(table.rows) == 150 and table.cursor == 149


async def test_runs_list_and_report_rewrite(tmp_path):
    root = tmp_path / "p"
    for ts, n in (("2025_01_01_00_00_00", 50), ("2025_02_01_00_00_00", 80)):
        simulate_run(root, n_ops=n, speed=0, timestamp=ts)
    app = watch_app(root, refresh=0.05)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        # Both reports are announced in any order; the newest one ends up shown.
        await wait_until(pilot, lambda: "2025_02_01" in str(screen.report_path)
                         and screen._loading is None)
        await pilot.press("R")
        assert isinstance(app.screen, RunsScreen) and len(app.screen.runs) == 2
        await pilot.press("down", "enter")  # the older run
        await wait_until(pilot, lambda: "2025_01_01" in str(screen.report_path))
        assert len(screen.view.op_rows) == 50
        await pilot.press("R", "b", "down", "c")
        runs = app.screen
        assert screen.baseline == runs.runs[0].path and screen.candidate == runs.runs[1].path
        await pilot.press("d")
        await pilot.pause()
        from ttdash.tui.diffview import DiffScreen
        assert isinstance(app.screen, DiffScreen)
        assert app.screen.result.baseline_totals.ops == 80
        assert app.screen.result.candidate_totals.ops == 50




def test_watch_once_json(tmp_path):
    root = tmp_path / "p"
    simulate_run(root, n_ops=150, speed=0)
    state = json.loads(run_ttdash("watch", str(root), "--once").stdout)
    assert state["exists"] and len(state["runs"]) == 1 and state["runs"][0]["complete"]
    assert state["live"]["ops"] == 150 and state["live"]["arch"] == "wormhole_b0"
    missing = json.loads(run_ttdash("watch", str(tmp_path / "none"), "--once").stdout)
    assert not missing["exists"] and missing["runs"] == []
    env_root = json.loads(subprocess.run(
        [sys.executable, "-m", "ttdash", "watch", "--once"], capture_output=True, text=True,
        env=dict(os.environ, TT_METAL_PROFILER_DIR=str(root)), timeout=60).stdout)
    assert env_root["root"] == str(root)


def test_demo_once():
    r = run_ttdash("demo", "--ops", "200", "--speed", "0", "--once")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["ops"] == 200 and out["signposts"] > 0
    assert not Path(out["dir"]).exists()  # the temp run is cleaned up
    r = run_ttdash("demo", "--ops", "0", "--once")
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1


async def test_two_live_sources_are_not_counted_twice(tmp_path):
    root = tmp_path / "p"
    ops = generate_ops(60, seed=9)
    log = live_log(root, ops, 0, 60)
    (root / ".logs" / "ttdash_realtime_profile.csv").write_bytes(log.read_bytes())
    app = watch_app(root, refresh=0.05)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: screen.live.total_rows == 60
                         and sum(screen.sources.ignored.values()) == 60)
        table, status = screen.query_one("OpTable"), screen.query_one("#status")
        # the table follows the model at its next refresh (no fixed sleep: under load it lags)
        await wait_until(pilot, lambda: len(table.rows) == 60
                         and "not counted twice" in str(status.render()))
        assert len(table.rows) == 60
        assert "not counted twice" in str(status.render())


def test_rows_all_set_aside_still_redraw_the_status(tmp_path):
    """A second source's rows, all set aside by the one source rule, change only the status note
    ("not counted twice"): the feed must tell the UI, or the note waits for the next change."""
    from ttdash.live.feed import LiveFeed
    from ttdash.live.watcher import RowsAppended

    root = tmp_path / "p"
    log = live_log(root, generate_ops(30, seed=9), 0, 30)
    with log.open(newline="") as f:
        header, *rows = list(csv.reader(f))
    feed = LiveFeed(root, refresh=0.05)
    calls = []
    feed._notify = lambda: calls.append(1)
    token = next(iter(feed._watchers.values()))[0]
    feed._apply((token, RowsAppended(log, header, rows, 2)))
    feed._flush()  # the first source's rows analysed: one notify
    assert len(calls) == 1
    twin = root / ".logs" / "ttdash_realtime_profile.csv"
    feed._apply((token, RowsAppended(twin, header, rows, 2)))
    assert sum(feed.sources.ignored.values()) == 30
    assert len(calls) == 2  # told at once, with no new rows to analyse


async def test_live_timeline_and_roofline_grow_with_the_rows(tmp_path):
    """`4` and `5` on live rows (cycle columns present in the .logs file: the timeline is on FW
    cycles), then more rows arrive: both views follow the table."""
    from ttdash.tui.rooflineview import RooflineView
    from ttdash.tui.timelineview import TimelineView

    root = tmp_path / "profiler"
    root.mkdir()
    ops = generate_ops(400, seed=3)
    live_log(root, ops, 0, 150)
    app = watch_app(root, refresh=0.1)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        table = screen.query_one("OpTable")
        await wait_until(pilot, lambda: len(table.rows) == 150)
        await pilot.press("4")
        await pilot.pause()
        tlv = screen.query_one(TimelineView)
        assert len(tlv.tl) == 150 and tlv.shown.sum() == 150
        live_log(root, ops, 150, 400)
        await wait_until(pilot, lambda: len(table.rows) == 400)
        await pilot.pause()
        assert len(tlv.tl) == 400
        await pilot.press("5")
        await pilot.pause()
        rv = screen.query_one(RooflineView)
        assert rv.pts is not None and rv.pts.device_ops == 400


async def test_switch_to_report_follows_the_same_op_not_its_capture_row(tmp_path):
    """A metal trace's report holds the op twice under one GLOBAL CALL COUNT: its capture (no
    device data) and its replay (device data, a replay session). After the switch from the
    live rows, the cursor is on the replayed op, the live row's own run (same device time), not
    on the capture row the call count finds first."""
    import numpy as np
    import pandas as pd

    from ttdash.sim import generate_ops
    from ttdash.sim.run import report_path_for
    from ttdash.sim.writers import write_report_csv

    root = tmp_path / "profiler"
    root.mkdir()
    ops = generate_ops(n_ops=40, seed=3, signposts=False)
    live_log(root, ops)
    app = watch_app(root, refresh=0.1)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        table = screen.query_one("OpTable")
        await wait_until(pilot, lambda: len(table.rows) == 40)
        table.cursor = 20  # the user stops following, on an op mid-table
        await pilot.pause()
        live = table.current_row()
        gcc, live_us = int(live["global_call_count"]), float(live["device_time_us"])
        i = int(np.flatnonzero(ops["GLOBAL CALL COUNT"].to_numpy() == gcc)[0])
        capture = ops.iloc[[i]].copy()
        for col in ops.columns:
            if col.startswith("DEVICE ") and col not in ("DEVICE ID", "DEVICE ARCH"):
                capture[col] = pd.NA  # the host recorded it; the device ran the replay
        capture["METAL TRACE ID"] = 0
        report = ops.copy()
        report["METAL TRACE ID"] = report["METAL TRACE ID"].astype("Int64")
        report.loc[report.index[i], "METAL TRACE ID"] = 0
        report.loc[report.index[i], "METAL TRACE REPLAY SESSION ID"] = 1
        report = pd.concat([report.iloc[:i], capture, report.iloc[i:]], ignore_index=True)
        out = report_path_for(root, "2026_01_01_00_00_00")
        out.parent.mkdir(parents=True)
        write_report_csv(report, out)
        await wait_until(pilot, lambda: screen.mode == "report", timeout=30)
        await pilot.pause()
        view_ops = screen.view.ops
        same = view_ops[view_ops["global_call_count"] == gcc]
        assert len(same) == 2 and same["device_time_us"].isna().sum() == 1  # capture + replay
        row = table.current_row()
        assert row["global_call_count"] == gcc
        assert row["device_time_us"] == pytest.approx(live_us)


async def test_live_rows_reach_the_screen_long_before_refresh(tmp_path, monkeypatch):
    """--refresh is the longest rows wait: with it at 60 s, rows written after the first
    refresh are on screen at once (the refresh adapts to its cost); the screen reports what a
    refresh cost it to the feed's pacer, and draws the status line once per live refresh at
    most."""
    from ttdash.tui.watch import WatchScreen

    root = tmp_path / "p"
    ops = generate_ops(60, seed=5)
    live_log(root, ops, 0, 20)
    app = watch_app(root, refresh=60.0)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        table = screen.query_one("OpTable")
        await wait_until(pilot, lambda: len(table.rows) == 20)
        await pilot.pause()
        shown, show_live = [], WatchScreen._show_live
        monkeypatch.setattr(WatchScreen, "_show_live",
                            lambda self, *a: (shown.append(1), show_live(self, *a))[1])
        draws = screen.status_draws
        for stop in (30, 40, 50):
            live_log(root, ops, stop - 10, stop)
            await wait_until(pilot, lambda n=stop: len(table.rows) == n, timeout=30)
        await pilot.pause()
        assert table.cursor == len(table.rows) - 1  # followed the tail
        assert len(shown) >= 3 and screen.status_draws - draws <= len(shown)
        assert screen.feed.pacer._w >= 1  # refreshes measured (the screen's part reported)


async def test_a_live_refresh_repaints_without_a_layout(tmp_path, monkeypatch):
    """A live refresh (new rows, the header's counts, the status line) asks for no layout of
    the screen: a layout repaints every widget, and was most of a Galaxy refresh's paint. The
    table's scroll range and scrollbar still follow the rows."""
    from textual.screen import Screen

    from ttdash.tui.widgets import SteadyFooter

    root = tmp_path / "p"
    ops = generate_ops(200, seed=5)
    live_log(root, ops, 0, 100)  # more rows than the table's height: its scrollbar is shown
    app = watch_app(root, refresh=0.1)
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.query_one("OpTable")
        await wait_until(pilot, lambda: len(table.rows) == 100)
        # the footer's fit after a rebuild (its first, and the live keys') hides the keys that
        # do not fit: a layout of its own, late on a busy machine; refreshes are measured after
        footer = app.screen.query_one(SteadyFooter)
        await wait_until(pilot, lambda: footer.fitted == (footer.shown_of(app.screen),
                                                          footer.size.width))
        await pilot.pause()
        layouts, layout = [], Screen._refresh_layout
        monkeypatch.setattr(Screen, "_refresh_layout",
                            lambda self, *a, **k: (layouts.append(1), layout(self, *a, **k))[1])
        for stop in (120, 140, 160):
            live_log(root, ops, stop - 20, stop)
            await wait_until(pilot, lambda n=stop: len(table.rows) == n)
        await pilot.pause()
        n = 160
        assert f"{n} ops" in str(app.screen.query_one("#summary").render())
        assert table.cursor == n - 1 and table.virtual_size.height == n + 1
        assert table.vertical_scrollbar.window_virtual_size == n + 1
        assert int(table.scroll_offset.y) == n - table.body_height  # the tail on screen
        assert layouts == []
