"""The order a table opens in and the sort picker (`S`): the trace screen on its heaviest device
ops, the diff on its largest slowdown, any sort in two keystrokes."""

from __future__ import annotations

import numpy as np
import pandas as pd
from conftest import real_dir, screen_text
from textual.command import CommandPalette

from ttdash.model import Trace, Window
from ttdash.model.compare.diff import diff_traces
from ttdash.model.query import ASCENDING_KEYS
from ttdash.tui.app import open_app
from ttdash.tui.diffview import DiffTable, diff_app
from ttdash.tui.optable import OpTable
from ttdash.tui.palette import TTDashCommands
from ttdash.tui.sortmenu import RESERVED, SortMenu, sort_entries
from ttdash.tui.widgets import HelpScreen

SEG = "ttnn-visualizer__SEG_ENCODER_ops_perf_results_2025_02_16_18_11_10.csv"
WH = "tt-perf-report__wh_clip_encoder_2.csv"
BH = "tt-perf-report__bh_64_clip_encoder_1.csv"
KERNEL = "DEVICE KERNEL DURATION [ns]"


def view_of(name: str):
    return Trace.load(real_dir() / name, columns="all").view(Window("all"))


def status(app) -> str:
    return str(app.screen.query_one("#status").render())


def header(app) -> str:
    """The trace screen's header as drawn (its first line says the order)."""
    return screen_text(app)[0].splitlines()[0]


def line_text(t: OpTable, y: int) -> str:
    return "".join(seg.text for seg in t.render_line(y))


def heaviest(name: str) -> tuple[int, str, int]:
    """(ID, op code, ops with a device time) straight from the CSV: the ID is the op's line in
    the file (the header is line 1)."""
    df = pd.read_csv(real_dir() / name, usecols=["OP CODE", KERNEL])
    i = int(df[KERNEL].idxmax())
    return i + 2, str(df.loc[i, "OP CODE"]), int(df[KERNEL].notna().sum())


# ------------------------------------------------------------------ the order on open
async def test_seg_opens_on_its_heaviest_device_op_host_rows_last_at_80x24():
    """SEG's file starts with host (torch) rows without device time; the table starts on the op
    with the longest kernel, every device op before every host op, and says so."""
    op_id, op_code, n_device = heaviest(SEG)
    v = view_of(SEG)
    app = open_app(v)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        t = app.screen.query_one(OpTable)
        assert t.cursor == 0 and t.current_id() == op_id
        assert t.current_row()["op_code"] == op_code
        assert f"{op_id} {op_code}" in " ".join(line_text(t, 1).split())
        dt = v.ops["device_time_us"].to_numpy(dtype="float64")[t.rows]
        timed = ~np.isnan(dt)
        assert timed.sum() == n_device and timed[:n_device].all()  # host rows after
        assert (np.diff(dt[:n_device]) <= 0).all()
        assert v.ops["is_host"].to_numpy(dtype=bool)[t.rows[n_device:]].all()
        assert "sort: Device ↓" in header(app)  # the header's first line, at 80 columns
        assert "Device↓" in line_text(t, 0)
        await pilot.press("o")
        assert (t.rows == np.arange(len(v.ops))).all()
        assert "sort: file order" in header(app)
        assert v.ops["is_host"].iloc[0]  # the file starts with a host op


async def test_diff_opens_on_the_largest_slowdown():
    v = view_of(WH)
    result = diff_traces(v, view_of(BH))
    app = diff_app(result)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        t = app.screen.query_one(DiffTable)
        d = app.screen.frame["delta_us"].to_numpy(dtype="float64")[t.rows]
        assert d[0] == np.nanmax(d) > 0
        known = ~np.isnan(d)
        assert known[:known.sum()].all() and (np.diff(d[known]) <= 0).all()
        assert "sort: Δ time ↓" in screen_text(app)[0]


async def test_a_sorted_table_at_its_top_stays_there_when_the_whole_trace_arrives(monkeypatch):
    """A large trace comes up on its first rows, sorted; when the rest is loaded, a cursor not
    moved is on the heaviest op of the whole trace, not on the first rows' heaviest."""
    import threading

    from ttdash.commands.common import preview_of
    from ttdash.commands.common import view_of as load
    from ttdash.commands.options import WindowOptions
    from ttdash.model.read import loader
    from ttdash.tui.app import TraceScreen, open_loading_app

    monkeypatch.setattr(loader, "PREVIEW_ROWS", 200)
    monkeypatch.setattr(loader, "BLOCK", 1 << 16)
    src = real_dir() / WH
    opts, release = WindowOptions(), threading.Event()

    def slow_load():
        view = load(str(src), opts, "lazy")
        release.wait(10)
        return view

    app = open_loading_app(slow_load, src.name, preview=lambda t: preview_of(t, opts))
    async with app.run_test(size=(80, 24)) as pilot:
        while not isinstance(app.screen, TraceScreen):
            await pilot.pause(0.02)
        await pilot.pause()
        t = app.screen.query_one(OpTable)
        first_top = t.current_id()
        release.set()
        while len(t.rows) != 1872:
            await pilot.pause(0.02)
        await pilot.pause()
        dt = app.screen.view.ops["device_time_us"].to_numpy(dtype="float64")
        assert t.cursor == 0 and dt[t.rows[0]] == np.nanmax(dt)
        assert t.current_id() != first_top  # (the heaviest op is not in the first 200 rows)


# ------------------------------------------------------------------ the sort picker
def _sorted_by(values: np.ndarray, descending: bool) -> bool:
    """Ordered, missing values last (numbers or text)."""
    if values.dtype == object:
        s = pd.Series(values).astype("string").fillna("")
        missing = (s == "").to_numpy()
        present = s[~missing].tolist()
        ordered = present == sorted(present, reverse=descending)
    else:
        v = values.astype("float64")
        missing = np.isnan(v)
        d = np.diff(v[~missing])
        ordered = bool((d <= 0).all() if descending else (d >= 0).all())
    return ordered and not (missing[:-1] & ~missing[1:]).any()


async def test_the_sort_menu_sorts_by_each_key_and_its_capital_the_other_way():
    v = view_of(WH)
    app = open_app(v)
    async with app.run_test(size=(160, 40)) as pilot:
        screen = app.screen
        t = screen.query_one(OpTable)
        entries = screen.sort_entries()
        letters = [e.hotkey for e in entries if e.hotkey]
        assert len(letters) == len(set(letters)) and not set(letters) & (RESERVED - {"o"})
        shown = {c.key for c in t.visible_columns()}
        assert {e.key for e in entries if e.on_screen} - {None} == shown
        wanted = {"d": "device_time_us", "g": "op_to_op_us", "t": "total_pct", "c": "cores",
                  "m": "dram_pct", "f": "flops_pct", "i": "id", "n": "op_code", "o": None}
        assert {e.hotkey: e.key for e in entries if e.hotkey in wanted} == wanted
        menu = SortMenu(entries, None, True)  # every letter is its entry's (on_key's table)
        assert menu.by_letter == {e.hotkey: e for e in entries if e.hotkey}
        # through the menu, as typed: a number column, a text column, file order (each pushes
        # and pops the modal, the slow part); every other key through the call the menu makes
        by_menu = {"d", "n", "o"}
        for e in entries:
            if not e.hotkey:
                continue
            natural = e.key not in ASCENDING_KEYS
            if e.hotkey in by_menu:
                await pilot.press("S")
                assert isinstance(app.screen, SortMenu)
                await pilot.press(e.hotkey)
                assert app.screen is screen
            else:
                screen.sort_by(e.key, natural if e.key is not None else False)
                await pilot.pause()
            if e.key is None:
                assert screen.sort_key is None and (t.rows == np.arange(len(v.ops))).all()
                assert "sort: file order" in header(app)
                continue
            assert (screen.sort_key, screen.sort_desc) == (e.key, natural), e
            title = next(c.title for c in t.all_columns if c.key == e.key)
            assert t.cursor == 0 and f"sort: {title} {'↓' if natural else '↑'}" in header(app)
            assert _sorted_by(screen.state.frame[e.key].to_numpy()[t.rows], natural), e
            if e.hotkey in by_menu:
                await pilot.press("S", e.hotkey.upper())
            else:
                screen.sort_by(e.key, not natural)
                await pilot.pause()
            assert (screen.sort_key, screen.sort_desc) == (e.key, not natural), e
            assert _sorted_by(screen.state.frame[e.key].to_numpy()[t.rows], not natural), e
        before = (screen.sort_key, screen.sort_desc)
        await pilot.press("S", "escape")  # cancelled: the sort stays
        assert app.screen is screen and (screen.sort_key, screen.sort_desc) == before
        await pilot.press("S", "home", "down", "enter")  # enter on a line: as its letter
        assert screen.sort_key == entries[1].key


async def test_the_sort_menu_in_the_diff_and_the_watch_screen(tmp_path):
    from ttdash.tui.watch import watch_app

    a = view_of(WH)
    app = diff_app(diff_traces(a, view_of(BH)))
    async with app.run_test(size=(120, 36)) as pilot:
        screen = app.screen
        keys = {e.hotkey: e.key for e in screen.sort_entries()}
        assert keys["d"] == "delta_us" and keys["p"] == "delta_pct"
        await pilot.press("S", "p")
        assert (screen.sort_key, screen.sort_desc) == ("delta_pct", True)
        names = dict(TTDashCommands(screen)._commands())  # the palette's sorts, as the menu's
        assert "sort: by Δ time (S d)" in names and "theme: ttdash-dark" in names
        assert "sort: Δ% ↓" in status(app)
    root = tmp_path / "profiler"
    root.mkdir()
    app = watch_app(root, refresh=0.1)
    async with app.run_test(size=(110, 32)) as pilot:
        await pilot.pause()
        assert "sort: file order" in header(app)  # live rows as they arrive
        await pilot.press("S")
        assert isinstance(app.screen, SortMenu)


def test_sort_entries_take_free_letters_and_lists_each_key_once():
    from ttdash.tui.diffview import DIFF_COLUMNS

    entries = sort_entries(DIFF_COLUMNS)
    keys = [e.key for e in entries]
    assert keys.count("delta_pct") == 1  # the bar sorts as its number
    assert len(keys) == len(set(keys)) == len(DIFF_COLUMNS)  # file order + all but the bar
    names = {e.key: e.name for e in entries}
    assert names["delta_us"] == "Δ time" and names["baseline_id"] == "A id"


async def test_help_lists_the_sort_menu_and_the_keymap_moves_it(tmp_path, monkeypatch):
    app = open_app(view_of(WH))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        rows = {r[2]: r for r in app.screen.rows}
        assert rows["ttdash.sort_menu"][:2] == ("S", "Sort")
    (tmp_path / "ttdash").mkdir()
    (tmp_path / "ttdash" / "keymap.toml").write_text('"ttdash.sort_menu" = "x"\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    app = open_app(view_of(WH))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("S")
        assert not isinstance(app.screen, SortMenu)  # moved away from S
        await pilot.press("x")
        assert isinstance(app.screen, SortMenu)


async def test_palette_sort_commands_come_from_the_table():
    app = open_app(view_of(WH))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
        await pilot.press("escape")
        await pilot.pause()
        screen = app.screen
        names = dict(TTDashCommands(screen)._commands())
        assert "sort: pick a column…" in names and "sort: by file order (S o)" in names
        assert "view: timeline (when ops ran, per device)" in names  # the trace view's own
        names["sort: by op-to-op gap (S g)"]()
        assert screen.sort_key == "op_to_op_us"


async def test_signpost_keys_on_a_sorted_table_go_by_the_file():
    """`]` on the heaviest op: file order, the cursor on the next signpost after that op."""
    v = view_of("tt-perf-report__bh20_oft.csv")
    app = open_app(v)
    async with app.run_test(size=(120, 36)) as pilot:
        t = app.screen.query_one(OpTable)
        pos = int(t.rows[0])
        assert app.screen.sort_key == "device_time_us"
        await pilot.press("right_square_bracket")
        assert app.screen.sort_key is None and "sort: file order" in header(app)
        sp = np.flatnonzero(v.ops["is_signpost"].to_numpy(dtype=bool))
        assert t.cursor == int(sp[sp > pos][0]) and t.current_row()["is_signpost"]


async def test_the_grouped_plot_is_over_the_run_whatever_the_sort():
    """`2`: "device time over the run" plots the shown ops in file order, not down the sort."""
    from ttdash.tui.widgets import GroupedView

    v = view_of(WH)
    app = open_app(v)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("slash", *"Matmul", "enter", "2")
        await pilot.pause()
        t = app.screen.query_one(OpTable)
        assert app.screen.sort_key == "device_time_us" and not (np.diff(t.rows) > 0).all()
        ops, rows = app.screen.query_one(GroupedView)._last
        assert (rows == np.sort(t.rows)).all()


# ------------------------------------------------------------------ the share's basis
async def test_the_total_column_is_the_specs_and_its_name_says_wall():
    """The op table's header and the status line use the column spec's short title
    (model.columns: a new title there is the TUI's at once); the sort picker names it by the long
    one, which says the share's basis."""
    from ttdash.model.columns import BY_KEY

    app = open_app(view_of(WH))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        t = screen.query_one(OpTable)
        assert {e.key: e.name for e in screen.sort_entries()}["total_pct"] == "total % (wall)"
        await pilot.press("S", "t")
        assert screen.sort_key == "total_pct"
        short = BY_KEY["total_pct"].short
        assert f"{short}↓" in line_text(t, 0) and f"sort: {short} ↓" in header(app)
