"""The run-history screen (`ttdash history` without an action): Pilot tests of its keys, the
themes, hostile labels, empty and large stores, and snapshots."""

from __future__ import annotations

import os
import time
from datetime import timedelta

import pytest
from conftest import real_dir, screen_text, tiered, wait_until
from history_fixture import T0, make_store

from ttdash.format import fmt_us
from ttdash.history import record
from ttdash.history.store import Store
from ttdash.tui.app import TraceScreen
from ttdash.tui.diffview import DiffScreen
from ttdash.tui.history import HistoryScreen, TrendScreen, history_app
from ttdash.tui.widgets import HelpScreen

FACTORS = [1.0, 1.1, 0.9, 1.2]
HOSTILE = "[bold]x[/]"
THEMES = ["ttdash-dark", "ttdash-light", "ttdash-ansi"]


@pytest.fixture(autouse=True)
def utc():
    """Times are shown in local time: UTC here, so that screens (and snapshots) are the same
    on every machine."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if old is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = old
    time.tzset()


def _fixed_labels(env=None):
    return {"machine": "lab1"}  # not the host and user running the tests


@pytest.fixture(scope="module")
def hist(tmp_path_factory):
    """One store for the tests that only read it: four runs of the clip trace (device times
    x1.0, 1.1, 0.9, 1.2) a day apart, with a label that is markup. (dir, ids, csv paths)"""
    real_dir()  # skip or fail as the `real` fixture does
    root = tmp_path_factory.mktemp("hist")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(record, "default_labels", _fixed_labels)
        _, ids, paths = make_store(root, FACTORS, labels={"model": HOSTILE})
    return root, ids, paths


@pytest.fixture
def app_in(hist, monkeypatch):
    """A history app over the shared store, opened by a relative path from its directory
    (the header and the status line show short, machine-independent paths)."""
    root, _, _ = hist
    monkeypatch.chdir(root)

    def make(theme: str = "ttdash-dark"):
        return history_app(Store.open("store"), theme=theme)

    return make


async def loaded(pilot) -> HistoryScreen:
    app = pilot.app
    await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen) and app.screen.loaded)
    await pilot.pause()
    return app.screen


def messages(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


def table_ids(screen: HistoryScreen) -> list[str]:
    table = screen.query_one("#runs")
    return [str(table.coordinate_to_cell_key((i, 0)).row_key.value)
            for i in range(table.row_count)]


# ------------------------------------------------------------------ the list
async def test_newest_first_with_values(real, hist, app_in):
    _, ids, _ = hist
    app = app_in()
    async with app.run_test(size=(120, 30)) as pilot:
        screen = await loaded(pilot)
        assert table_ids(screen) == ids[::-1]
        text, _ = screen_text(app)
        assert "Run history · 4 runs · store" in text
        lines = text.splitlines()
        rows = [next(i for i, line in enumerate(lines) if rid[:8] in line) for rid in ids]
        assert rows == sorted(rows, reverse=True), "newest run first"
        runs = {r["run_id"]: r for r in screen.runs}
        newest = lines[rows[-1]]
        assert "2026-11-04 12:00" in newest and "wormhole_b0" in newest and "1,872" in newest
        assert fmt_us(runs[ids[-1]]["device_time_us"]) in newest
        assert fmt_us(runs[ids[-1]]["steady_us"]) in newest
        change = (runs[ids[3]]["steady_us"] / runs[ids[2]]["steady_us"] - 1) * 100
        assert f"{change:+.2f}%" in newest  # present.table.RUNS's change, as `history list`
        assert "%" not in lines[rows[0]].split("1,872")[1], "the oldest run has no change"
        # the sparklines' labels: min over all runs, last = the newest run
        dev = [runs[i]["device_time_us"] for i in ids]
        spark = next(line for line in lines if "Device min" in line)
        assert fmt_us(min(dev)) in spark and fmt_us(dev[-1]) in spark
        assert any("Steady min" in line for line in lines)
        # the status line follows the cursor
        await pilot.press("j")
        status = screen_text(app)[0].splitlines()[-2]
        assert "run 2/4" in status and "2026-11-03 12:00" in status and "run2_0.9.csv" in status


async def test_label_markup_shown_literally(real, hist, app_in):
    app = app_in()
    async with app.run_test(size=(200, 50)) as pilot:
        await loaded(pilot)
        text, _ = screen_text(app)
        assert f"model={HOSTILE}" in text  # in the table and on the status line
        assert text.count(f"model={HOSTILE}") == 5


async def test_resize_relays_the_table(real, hist, app_in):
    """80 columns: the year is dropped and the labels cut; wider: the full date and labels."""
    app = app_in()
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        text, _ = screen_text(app)
        assert "11-04 12:00" in text and "2026-11-04 12:00 640f" not in text
        assert f"model={HOSTILE}" not in text.split("Labels")[1].split("run 1/4")[0]
        await pilot.resize_terminal(200, 40)
        await wait_until(pilot, lambda: "2026-11-04 12:00 640ff201" in screen_text(app)[0])
        assert f"machine=lab1 model={HOSTILE}" in screen_text(app)[0]


async def test_help_lists_the_keys(real, hist, app_in):
    app = app_in()
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        ids = {bid for _, _, bid in app.screen.rows}
        assert {"ttdash.history_open", "ttdash.history_baseline", "ttdash.history_candidate",
                "ttdash.history_diff", "ttdash.history_trend", "ttdash.history_reload",
                "ttdash.quit"} <= ids


# ------------------------------------------------------------------ open, diff, trend
async def test_enter_opens_the_run(real, hist, app_in):
    _, _, paths = hist
    app = app_in()
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        await pilot.press("j", "enter")  # the second newest: factor 0.9
        await wait_until(pilot, lambda: isinstance(app.screen, TraceScreen))
        await pilot.pause()
        assert app.screen.view.trace.path == paths[2].resolve()
        text, _ = screen_text(app)
        assert "1,872 ops" in text and "run2_0.9.csv" in text
        assert "esc/q: back" in text
        await pilot.press("escape")
        assert isinstance(app.screen, HistoryScreen)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, TraceScreen))
        await pilot.press("q")  # back, not quit
        assert isinstance(app.screen, HistoryScreen)


async def test_enter_on_a_moved_or_changed_file(real, tmp_path, monkeypatch):
    store, ids, paths = make_store(tmp_path, [1.0, 1.1])
    paths[1].unlink()  # the newest run's CSV is gone
    with paths[0].open("a") as fh:  # the oldest run's CSV has other content now
        fh.write("\n")
    app = history_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await loaded(pilot)
        await pilot.press("enter")
        await wait_until(pilot, lambda: any("moved or changed" in m for m in messages(app)))
        assert f"source file moved or changed: {paths[1].resolve()}" in messages(app)
        await pilot.press("j", "enter")
        await wait_until(pilot, lambda: len(messages(app)) == 2)
        assert f"source file moved or changed: {paths[0].resolve()}" in messages(app)
        await pilot.press("b", "k", "c", "d")  # a diff of changed files: the same message
        await wait_until(pilot, lambda: len(messages(app)) == 3)
        assert app.screen is screen and not screen.busy


async def test_mark_and_diff(real, hist, app_in):
    _, ids, paths = hist
    app = app_in()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await loaded(pilot)
        table = screen.query_one("#runs")
        await pilot.press("j", "j", "b")  # baseline: factor 1.1
        await pilot.press("k", "k", "c")  # candidate: factor 1.2
        assert (screen.baseline, screen.candidate) == (ids[1], ids[3])
        assert str(table.get_cell(ids[1], "mark")) == "B"
        assert str(table.get_cell(ids[3], "mark")) == "C"
        await pilot.press("j", "b")  # the baseline moves: its old row loses the mark
        assert str(table.get_cell(ids[1], "mark")) == ""
        assert str(table.get_cell(ids[2], "mark")) == "B"
        await pilot.press("d")
        await wait_until(pilot, lambda: isinstance(app.screen, DiffScreen))
        result = app.screen.result
        assert result.baseline.trace.path == paths[2].resolve()
        assert result.candidate.trace.path == paths[3].resolve()
        assert result.delta_pct["device"] == pytest.approx((1.2 / 0.9 - 1) * 100, abs=0.5)
        await pilot.press("escape")
        assert app.screen is screen
        await pilot.press("r")  # a reload keeps the cursor and the marks on their runs
        await wait_until(pilot, lambda: not screen.busy)
        assert screen.current_id() == ids[2] and screen.store.skipped == []
        assert str(screen.query_one("#runs").get_cell(ids[3], "mark")) == "C"


async def test_diff_needs_two_marks(real, hist, app_in):
    app = app_in()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await loaded(pilot)
        await pilot.press("d")
        assert "mark a baseline (b) and a candidate (c) first" in messages(app)
        await pilot.press("b", "c", "d")
        assert any("same run" in m for m in messages(app))
        assert app.screen is screen


async def test_trend_cycles_op_codes(real, hist, app_in):
    _, ids, _ = hist
    app = app_in()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await loaded(pilot)
        newest = screen.by_id[ids[-1]].run
        by_time = sorted(newest["op_codes"], key=lambda g: -g["steady_us"])
        await pilot.press("t")
        assert isinstance(app.screen, TrendScreen)
        await pilot.pause()
        assert app.screen.op_code == by_time[0]["name"]
        text, _ = screen_text(app)
        assert f"Trend {by_time[0]['name']} (1/{len(by_time)}" in text
        assert "4 runs" in text and f"run {ids[-1][:8]}" in text
        await pilot.press("right")
        await pilot.pause()
        text, _ = screen_text(app)
        assert f"Trend {by_time[1]['name']} (2/{len(by_time)}" in text
        await pilot.press("left", "left")  # wraps around to the last
        assert app.screen.op_code == by_time[-1]["name"]
        await pilot.press("escape")
        assert app.screen is screen


@pytest.mark.parametrize("theme", tiered(THEMES, THEMES[:1]))
async def test_every_theme_at_80x24(real, hist, app_in, theme):
    _, ids, _ = hist
    app = app_in(theme)
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        text, _ = screen_text(app)
        assert "Run history" in text and ids[-1][:8] in text and "Device min" in text
        assert "b Baseline" in text and "d Diff" in text and "t Trend" in text
        await pilot.press("t")
        await pilot.pause()
        assert "Trend " in screen_text(app)[0]


# ------------------------------------------------------------------ odd stores
async def test_empty_store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # short paths: the message is not wrapped mid-phrase
    app = history_app(Store.open("nothing"))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await loaded(pilot)
        assert "no history store here yet" in screen_text(app)[0]
        (tmp_path / "empty").mkdir()
        screen.store = Store.open("empty")
        await pilot.press("r")
        await wait_until(pilot, lambda: "No runs in this store yet" in screen_text(app)[0])
        await pilot.press("enter", "b", "c", "d", "t", "j", "G")  # nothing to act on: no crash
        assert app.screen is screen
        assert "mark a baseline (b) and a candidate (c) first" in messages(app)


async def test_skipped_files_are_named(real, tmp_path, monkeypatch):
    make_store(tmp_path, [1.0])
    bad = tmp_path / "store" / "runs" / "arch=wormhole_b0" / "run-[red]bad.parquet"
    bad.write_bytes(b"not parquet")
    monkeypatch.chdir(tmp_path)
    app = history_app(Store.open("store"))
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        text, _ = screen_text(app)
        assert "1 run · 1 file skipped (?) · store" in text
        assert "⚠ store/runs/arch=wormhole_b0/run-[red]bad.parquet: unreadable" in text
        await pilot.press("r")  # a reload counts the file once more, not twice
        await wait_until(pilot, lambda: not app.screen.busy)
        assert "1 file skipped" in screen_text(app)[0]


class FakeStore:
    """Run rows as the store returns them, without Parquet: a thousand runs."""

    uri = "fake://many"

    def __init__(self, n: int) -> None:
        self.skipped: list[str] = []
        self.reads = 0
        self.rows = [{"run_id": f"{i * 2654435761 % 2**32:08x}{i:08x}", "added_at": T0 + timedelta(hours=i),
                      "arch": "wormhole_b0" if i % 3 else "blackhole_p150",
                      "file": f"/nowhere/run{i}.csv", "sha256": "0" * 64, "ops": 1000 + i,
                      "device_time_us": 5e4 + (i % 17) * 100.0,
                      "steady_us": 6e4 + (i % 13) * 100.0,
                      "labels": {"commit": f"{i:07x}", "batch": str(i % 4)},
                      "op_codes": [{"name": f"Op{j}", "ops": 10, "device_us": 10.0 * j + i,
                                    "steady_us": 12.0 * j + i} for j in range(12)]}
                     for i in range(n)]

    def runs(self, columns=None):
        self.reads += 1
        return [dict(r) for r in self.rows]


async def test_a_thousand_runs_stay_responsive(monkeypatch):
    from ttdash.tui import history

    built = []
    monkeypatch.setattr(history, "history_rows",
                        lambda runs, f=history.history_rows: built.append(1) or f(runs))
    store = FakeStore(1000)
    app = history_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        start = time.monotonic()
        screen = await loaded(pilot)
        assert screen.query_one("#runs").row_count == 1000
        await pilot.press(*"jjjjjjjjjj", "G", "k", "g", "b", "G", "c")
        await pilot.pause()
        assert screen.current_id() == store.rows[0]["run_id"]  # G: the bottom, the oldest
        assert (screen.baseline, screen.candidate) == (store.rows[-1]["run_id"],
                                                       store.rows[0]["run_id"])
        await pilot.press("t", "right", "right", "escape")
        assert time.monotonic() - start < 10  # generous: a slow CI machine; ~1 s here
        assert built == [1] and store.reads == 1  # rows built once; keys walk no runs
        # the change is against the previous run of the same arch
        rows = {r.run_id: r for r in screen.rows}
        r3, r0 = store.rows[3], store.rows[0]
        assert rows[r3["run_id"]].change == pytest.approx(
            (r3["steady_us"] / r0["steady_us"] - 1) * 100)


# ------------------------------------------------------------------ snapshots
@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
def test_history_snapshot(real, hist, app_in, snap_compare, size):
    assert snap_compare(app_in(), terminal_size=size, run_before=loaded,
                        press=["j", "j", "b", "k", "k", "c", "j"])


def test_trend_snapshot(real, hist, app_in, snap_compare):
    assert snap_compare(app_in(), terminal_size=(80, 24), run_before=loaded, press=["t", "right"])


def test_the_store_fixture_is_stable(real, hist):
    """Snapshots name run ids: they are content hashes of the scaled copies."""
    _, ids, paths = hist
    assert ids[-1] == "640ff201707e5f77"
    assert [p.name for p in paths] == ["run0_1.csv", "run1_1.1.csv", "run2_0.9.csv",
                                       "run3_1.2.csv"]
