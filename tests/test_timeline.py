"""When ops ran (model.timeline), the roofline (model.roofline), the Perfetto export, and the two
views in the trace screen (Pilot)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from conftest import REPORT_FIXTURES, each_theme, real_dir, run_ttdash, screen_text

from ttdash.model import Trace, Window
from ttdash.model.analysis.roofline import points, roofs
from ttdash.model.analysis.timeline import CUMULATIVE, CYCLES, binned, build, for_view
from ttdash.model.arch import get_arch
from ttdash.tui.app import open_app
from ttdash.tui.optable import OpTable
from ttdash.tui.rooflineview import RooflineView
from ttdash.tui.timelineview import TimelineView
from ttdash.tui.widgets import DetailScreen

DEEPSEEK = "tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv"  # 26 ops x 8 devices
WH = "tt-perf-report__wh_clip_encoder_2.csv"
SIGNPOSTED = "tt-perf-report__bh20_oft.csv"
SINGLE_DEVICE = [f for f in REPORT_FIXTURES if "8xp150" not in f and "EXCERPT" not in f]


def view_of(name: str, merge: bool = True, columns: str = "analysis"):
    return Trace.load(real_dir() / name, columns=columns).view(Window("all"), merge=merge)


# ------------------------------------------------------------------ model.timeline
@pytest.mark.parametrize("name", SINGLE_DEVICE)
def test_cycle_times_agree_with_the_profilers_op_to_op_latency(name):
    """Two independent sources: the idle time between consecutive ops placed from FW end cycles
    and kernel durations, and the CSV's OP TO OP LATENCY. They agree to a median of 0.1 us."""
    v = view_of(name)
    tl = build(v.ops, merged_devices=False)
    assert tl.source == CYCLES and tl.lanes == ("dev 0",)
    idle = tl.start_us[1:] - tl.end_us[:-1]
    gap = v.ops["op_to_op_us"].to_numpy(dtype="float64")[tl.pos[1:]]
    ok = np.isfinite(gap) & (gap > 0)
    assert ok.sum() > 3
    assert float(np.median(np.abs(idle[ok] - gap[ok]))) < 0.1


@pytest.mark.parametrize("name", REPORT_FIXTURES)
@pytest.mark.parametrize("merge", [True, False])
def test_every_op_with_a_device_time_is_placed_once(name, merge):
    v = view_of(name, merge)
    tl = for_view(v)
    assert math.isclose(float((tl.end_us - tl.start_us).sum()), v.totals()["device_time_us"],
                        rel_tol=1e-9, abs_tol=1e-9)
    assert len(np.unique(tl.pos)) == len(tl)
    assert (tl.start_us >= 0).all()
    for lane in range(len(tl.lanes)):
        s = tl.start_us[tl.lane == lane]
        assert s.min() == 0 and (np.diff(s) >= 0).all()  # each lane from its own first op


def test_lanes_per_device_and_one_cumulative_lane_for_merged_devices():
    per = for_view(view_of(DEEPSEEK, merge=False))
    assert per.lanes == tuple(f"dev {d}" for d in range(8)) and per.source == CYCLES
    assert [int((per.lane == i).sum()) for i in range(8)] == [26] * 8
    merged = for_view(view_of(DEEPSEEK))
    assert merged.lanes == ("all devices (merged)",) and merged.source == CUMULATIVE
    # cumulative: each op starts after the previous op's time and its own gap
    v = view_of(DEEPSEEK)
    gap = np.nan_to_num(v.ops["op_to_op_us"].to_numpy(dtype="float64"))[merged.pos]
    assert np.allclose(merged.start_us[1:], merged.end_us[:-1] + gap[1:])


def test_cutting_pauses_keeps_durations_and_order_and_says_where():
    v = view_of(SIGNPOSTED)
    real = build(v.ops, merged_devices=False)
    cut = build(v.ops, merged_devices=False, cut_pauses_above=1000.0)
    assert np.array_equal(real.pos, cut.pos)
    assert np.allclose(real.end_us - real.start_us, cut.end_us - cut.start_us)
    idle_real = real.start_us[1:] - np.maximum.accumulate(real.end_us)[:-1]
    idle_cut = cut.start_us[1:] - np.maximum.accumulate(cut.end_us)[:-1]
    long = idle_real > 1000.0
    assert long.sum() == len(cut.breaks_us) > 100
    assert np.allclose(idle_cut[long], 1000.0) and np.allclose(idle_cut[~long], idle_real[~long])
    assert math.isclose(cut.cut_us, float((idle_real[long] - 1000.0).sum()), rel_tol=1e-9)
    assert math.isclose(real.span_us - cut.span_us, cut.cut_us, rel_tol=1e-9)


def _ops(rows: list[tuple]) -> pd.DataFrame:
    """(device, device time, gap, bound) rows without cycle data: the cumulative clock."""
    return pd.DataFrame({
        "device": [r[0] for r in rows], "device_time_us": [r[1] for r in rows],
        "op_to_op_us": [r[2] for r in rows], "bound": [r[3] for r in rows],
        "is_signpost": [False] * len(rows), "fw_end_us": [np.nan] * len(rows)})


def test_binned_busy_share_and_dominant_bound_per_column():
    # ops at [0,10) DRAM, [10,12) FLOP, [22,42) SLOW (gap 10), [42,43) not modelled
    tl = build(_ops([(0, 10, 0, "DRAM"), (0, 2, 0, "FLOP"), (0, 20, 10, "SLOW"),
                     (0, 1, 0, "")]), merged_devices=False)
    assert tl.source == CUMULATIVE
    assert np.allclose(tl.start_us, [0, 10, 22, 42])
    busy, code = binned(tl, 0, 0.0, 50.0, 5)  # columns of 10 us
    assert np.allclose(busy, [1.0, 0.2, 0.8, 1.0, 0.3])
    assert code.tolist() == [0, 1, 3, 3, 3]  # DRAM, FLOP, SLOW, SLOW (crossing), SLOW 2 of 3
    busy, code = binned(tl, 0, 42.0, 44.0, 2)
    assert busy.tolist() == [1.0, 0.0] and code.tolist() == [-2, -1]  # busy, not modelled
    busy, code = binned(tl, 0, 12.0, 22.0, 2)  # the gap alone: idle
    assert busy.tolist() == [0.0, 0.0] and code.tolist() == [-1, -1]
    hidden = np.array([True, False, True, True])  # a filter hides the FLOP op: idle there
    busy, code = binned(tl, 0, 0.0, 50.0, 5, hidden)
    assert np.allclose(busy, [1.0, 0.0, 0.8, 1.0, 0.3]) and code[1] == -1


def test_binned_million_ops_total_is_exact():
    n = 1_000_000
    rng = np.random.default_rng(1)
    dur = rng.uniform(1, 50, n)
    ops = pd.DataFrame({"device": np.zeros(n), "device_time_us": dur,
                        "op_to_op_us": rng.uniform(0, 5, n),
                        "bound": np.where(rng.random(n) < 0.5, "DRAM", "FLOP"),
                        "is_signpost": np.zeros(n, bool), "fw_end_us": np.full(n, np.nan)})
    tl = build(ops, merged_devices=False)
    cols = 200
    busy, _ = binned(tl, 0, 0.0, tl.span_us, cols)
    assert math.isclose(busy.sum() * tl.span_us / cols, dur.sum(), rel_tol=1e-9)


# ------------------------------------------------------------------ model.roofline
def test_roofline_points_and_roofs():
    v = view_of(WH)
    p = points(v.ops)
    ops = v.ops.iloc[p.pos]
    flop = ops["flops"].to_numpy() * 1e12 * ops["device_time_us"].to_numpy() / 1e6
    assert np.allclose(p.intensity, flop / ops["dram_bytes"].to_numpy())
    assert len(p.pos) == 514 and p.unplaced == 1872 - 514 and p.device_ops == 1872
    g = points(v.ops, by_op_code=True)
    assert len(g.label) == len(set(ops["op_code"]))
    # a group's TFLOP/s is its FLOPs over its time, not a mean of the ops' rates
    for label, tf in zip(g.label, g.tflops):
        mine = ops["op_code"].to_numpy() == label
        assert math.isclose(tf, flop[mine].sum() / (ops["device_time_us"].to_numpy()[mine].sum()
                                                    / 1e6) / 1e12, rel_tol=1e-9)
    wh = get_arch("wormhole_b0")
    slope, peak = roofs(wh, "HiFi4")
    assert slope == 0.288 and math.isclose(peak, 74 / 72 * 64)
    assert roofs(wh, "no such fidelity")[1] is None
    # achieved never above the DRAM roof by more than the model's own rounding
    assert (p.tflops <= p.intensity * slope * 1.0001 + 1e-9).mean() > 0.99


# ------------------------------------------------------------------ Perfetto export
@pytest.mark.parametrize("name,extra", [(SIGNPOSTED, []), (DEEPSEEK, ["--per-device"]),
                                        (DEEPSEEK, [])])
def test_perfetto_export_is_a_chrome_trace_of_the_report(name, extra, tmp_path):
    out = tmp_path / "trace.json"
    r = run_ttdash("report", str(real_dir() / name), "--format", "perfetto", "-o", str(out),
                   *extra)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    events = doc["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    rep = json.loads(run_ttdash("report", str(real_dir() / name), "--format", "json",
                                *extra).stdout)
    dev_ops = [o for o in rep["ops"] if o["device_time_us"] is not None]
    assert len(complete) == len(dev_ops)
    assert math.isclose(sum(e["dur"] for e in complete), rep["totals"]["device_time_us"],
                        rel_tol=1e-9)
    assert sorted(e["args"]["id"] for e in complete) == sorted(o["id"] for o in dev_ops)
    for e in complete:
        assert isinstance(e["ts"], float) and e["ts"] >= 0 and e["dur"] >= 0
        assert {"name", "cat", "pid", "tid", "args"} <= set(e)
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    if extra:
        assert sorted(names.values()) == [f"Device {d}" for d in range(8)]
        assert {e["pid"]: e["args"]["device"] for e in complete} == {
            pid: int(n.split()[1]) for pid, n in names.items()}
    elif "8xp150" in name:
        assert list(names.values()) == ["all devices (merged)"]
    instants = [e for e in events if e["ph"] == "i"]
    assert len(instants) == rep["totals"]["signposts"]
    assert all(e["s"] == "g" and e["cat"] == "signpost" for e in instants)


# ------------------------------------------------------------------ the views (Pilot)
def timeline_text(app) -> str:
    return "\n".join(str(line) for line in app.screen.query_one(TimelineView).render().renderables)


async def test_timeline_keys_move_the_table_cursor_zoom_and_open_the_op():
    app = open_app(view_of(DEEPSEEK, merge=False, columns="all"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("o", "4")  # file order: the first op on the first lane
        await pilot.pause()
        screen = app.screen
        tlv = screen.query_one(TimelineView)
        table = screen.query_one(OpTable)
        assert app.focused is tlv and "Timeline" in timeline_text(app)
        assert "dev 0" in timeline_text(app) and "dev 7" in timeline_text(app)
        first = tlv.selected_pos()
        assert first == int(table.rows[table.cursor])
        await pilot.press("right")
        await pilot.pause()
        second = tlv.selected_pos()
        ops = screen.view.ops
        assert second != first and int(table.rows[table.cursor]) == second
        assert ops["device"].iloc[second] == ops["device"].iloc[first]  # the same lane
        await pilot.press("down")
        await pilot.pause()
        assert ops["device"].iloc[tlv.selected_pos()] != ops["device"].iloc[second]
        width = tlv.t1 - tlv.t0
        await pilot.press("plus")
        await pilot.pause()
        assert math.isclose(tlv.t1 - tlv.t0, width / 2)
        await pilot.press("0")
        await pilot.pause()
        assert math.isclose(tlv.t1 - tlv.t0, width)
        span_cut = tlv.tl.span_us
        await pilot.press("t")
        await pilot.pause()
        assert tlv.tl.span_us > span_cut and "real time" in timeline_text(app)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen)
        await pilot.press("escape")
        await pilot.press("1")
        await pilot.pause()
        assert app.focused is table and int(table.rows[table.cursor]) == tlv.selected_pos()


async def test_timeline_follows_the_table_filter_and_cursor():
    app = open_app(view_of(WH, columns="all"))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        table = app.screen.query_one(OpTable)
        for _ in range(5):
            await pilot.press("j")
        await pilot.press("4")
        await pilot.pause()
        tlv = app.screen.query_one(TimelineView)
        assert tlv.selected_pos() == int(table.rows[5])
        app.screen.state.filter = app.screen.state.filter.for_keys("Softmax",
                                                                   app.screen.filter_keys)
        app.screen.recompute(top=True)
        await pilot.pause()
        assert tlv.shown.sum() == len(table.rows) < 1872
        assert set(tlv.tl.pos[tlv.shown]) == set(table.rows.tolist())
        await pilot.press("right")
        await pilot.pause()
        assert "Softmax" in str(app.screen.view.ops["op_code"].iloc[tlv.selected_pos()])


async def test_roofline_view_highlights_the_cursor_op_and_groups():
    app = open_app(view_of(WH, columns="all"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("5")
        await pilot.pause()
        rv = app.screen.query_one(RooflineView)
        table = app.screen.query_one(OpTable)
        info = str(rv.query_one("#roof-info").render())
        assert "Roofline · wormhole_b0" in info and "514 ops placed; 1,358 of 1,872" in info
        await pilot.press("right")
        await pilot.pause()
        pos = int(table.rows[table.cursor])
        assert rv.cursor_pos == pos and pos in rv.pts.pos
        info = str(rv.query_one("#roof-info").render())
        assert f"#{app.screen.view.ops['id'].iloc[pos]} " in info and "% of the roof" in info
        await pilot.press("c")
        await pilot.pause()
        info = str(rv.query_one("#roof-info").render())
        assert "op codes placed" in info
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen)


async def test_export_from_the_timeline_writes_a_perfetto_trace(tmp_path):
    app = open_app(view_of(SIGNPOSTED, columns="all"))
    target = tmp_path / "run.perfetto.json"  # the export's format follows the suffix
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("4", "e")
        await pilot.pause()
        prompt = app.screen
        prompt.query_one("Input").value = str(target)
        await pilot.press("enter")
        for _ in range(50):
            await pilot.pause()
            if target.exists():
                break
    doc = json.loads(target.read_text(encoding="utf-8"))
    v = view_of(SIGNPOSTED)
    timed = int(np.isfinite(v.op_rows["device_time_us"].to_numpy(dtype="float64")).sum())
    assert sum(1 for e in doc["traceEvents"] if e["ph"] == "X") == timed
    dur = sum(e["dur"] for e in doc["traceEvents"] if e["ph"] == "X")
    assert math.isclose(dur, v.totals()["device_time_us"], rel_tol=1e-9)


@pytest.mark.parametrize("theme", each_theme())
async def test_every_view_in_every_theme_at_80x24(theme):
    """Keys 1-6 at 80x24 in each bundled theme: each view draws its own content (a theme
    variable a view needs and a theme lacks would crash here), and its first line is uncut."""
    app = open_app(view_of(DEEPSEEK, columns="all"), theme=theme)
    marks = {"1": ["Op code"], "2": ["Count"], "3": ["Grouped: ", "Op-to-op gaps over"],
             "4": ["Timeline 0–", "█DRAM █FLOP"], "5": ["Roofline · blackhole_p150"],
             "6": ["Every op explained", "Model: ", "Op code: reason"]}
    async with app.run_test(size=(80, 24)) as pilot:
        for key, wanted in marks.items():
            await pilot.press(key)
            await pilot.pause()
            plain, _ = screen_text(app)
            assert all(m in plain for m in wanted), (theme, key, plain)
        await pilot.press("1", "a")  # the optional columns, picked, in the table
        await pilot.pause()
        plain, _ = screen_text(app)
        assert "Table columns" in plain and "PM FPU UTIL (%)" in plain, (theme, plain)
        await pilot.press("space", "escape")
        await pilot.pause()
        plain, _ = screen_text(app)
        assert "RISC" in plain.splitlines()[2] and "BRISC" in plain, (theme, plain)


async def test_roofline_steps_through_placed_ops_in_the_tables_order():
    """Sorted by device time, right/left walk the placed ops down/up the sorted table (the
    cursor row moves the same way) and left from the first stays on it."""
    app = open_app(view_of(WH, columns="all"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.screen.sort_by("device_time_us")
        await pilot.press("5")
        await pilot.pause()
        table = app.screen.query_one(OpTable)
        rv = app.screen.query_one(RooflineView)
        cursors = []
        for _ in range(4):
            await pilot.press("right")
            await pilot.pause()
            cursors.append(table.cursor)
            assert int(table.rows[table.cursor]) in rv.pts.pos
        assert cursors == sorted(cursors) and len(set(cursors)) == 4
        dt = app.screen.view.ops["device_time_us"].to_numpy()[table.rows[cursors]]
        assert (np.diff(dt) <= 0).all()  # down the sort: longest first
        await pilot.press("left")
        await pilot.pause()
        assert table.cursor == cursors[2]


# ------------------------------------------------------------------ review findings
def test_merged_view_without_a_device_op_and_absurd_times():
    empty = pd.DataFrame({"device": [0.0, 1.0], "device_time_us": [np.nan, np.nan],
                          "op_to_op_us": [1.0, 1.0], "bound": ["", ""],
                          "is_signpost": [False, False], "fw_end_us": [np.nan, np.nan]})
    tl = build(empty, merged_devices=True, cut_pauses_above=1000.0)
    assert len(tl) == 0 and tl.lanes == ("all devices (merged)",)
    assert binned(tl, 0, 0.0, 10.0, 20)[0].sum() == 0
    absurd = _ops([(0, 1e308, 0, ""), (0, 1e308, 0, ""), (0, 5, 0, "")])
    tl = build(absurd, merged_devices=False, cut_pauses_above=1000.0)
    assert tl.unplaced == 2 and np.isfinite(tl.end_us).all()


def test_perfetto_of_absurd_times_is_valid_json(tmp_path):
    src = real_dir() / "tt-perf-report__wh_clip_encoder_2.csv"
    lines = src.read_text(encoding="utf-8").splitlines()
    head = lines[0].split(",")
    k = head.index("DEVICE KERNEL DURATION [ns]")
    rows = [ln.split(",") for ln in lines[1:4]]
    assert all(len(r) == len(head) for r in rows)  # no quoted commas in these rows
    for r in rows[:2]:
        r[k] = "1e300"
    f = tmp_path / "absurd.csv"
    f.write_text("\n".join([lines[0]] + [",".join(r) for r in rows]) + "\n", encoding="utf-8")
    out = tmp_path / "t.json"
    r = run_ttdash("report", str(f), "-f", "perfetto", "-o", str(out))
    assert r.returncode == 0 and "Warning" not in r.stderr, r.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))  # strict: no NaN / Infinity
    assert all(math.isfinite(e["ts"]) and math.isfinite(e["dur"])
               for e in doc["traceEvents"] if e["ph"] == "X")


def test_perfetto_refuses_table_only_options():
    r = run_ttdash("report", str(real_dir() / WH), "-f", "perfetto", "--summary")
    assert r.returncode == 2 and "--format perfetto exports every op" in r.stderr


async def test_timeline_survives_a_smaller_view_and_moves_only_between_shown_ops():
    from ttdash.model import Window as W

    app = open_app(view_of(DEEPSEEK, merge=False, columns="all"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("4", "end", "plus")
        await pilot.pause()
        screen = app.screen
        tlv = screen.query_one(TimelineView)
        # a filter: only AllGather ops; up/down and left/right stay among them
        screen.state.filter = screen.state.filter.for_keys("AllGather", screen.filter_keys)
        screen.recompute(top=True)
        await pilot.pause()
        for key in ("down", "right", "down", "left", "up"):
            await pilot.press(key)
            await pilot.pause()
            code = str(screen.view.ops["op_code"].iloc[tlv.selected_pos()])
            assert "AllGather" in code, (key, code)
            assert int(screen.table.rows[screen.table.cursor]) == tlv.selected_pos()
        # a view with no device op at all (a window of signposts only): nothing left to select
        empty = screen.view.trace.view(W("all"), merge=False).subset(
            np.zeros(len(screen.view.ops), dtype=bool))
        screen.set_view(empty, keep_state=False)
        await pilot.pause()
        for key in ("plus", "minus", "t", "right", "0"):
            await pilot.press(key)
            await pilot.pause()
        assert tlv.sel is None and "nothing to place" in timeline_text(app)
