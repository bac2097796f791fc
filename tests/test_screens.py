"""What the screens do after the fixes of the screens issue (Pilot): the table view shared by the
trace and diff screens (filter errors, negation, sort from the top), the grouped views (enter
narrows, export writes the groups), the runs list, the window rule, the live -> report switch."""

from __future__ import annotations

import shutil

import numpy as np
from conftest import real_dir, screen_text, wait_until

from ttdash.model import Trace, Window
from ttdash.model.compare.diff import diff_traces
from ttdash.model.query import Filter, FilterError, TableState
from ttdash.tui.app import open_app
from ttdash.tui.diffview import DiffScreen, diff_app
from ttdash.tui.optable import OpTable
from ttdash.tui.watch import RunsScreen, watch_app
from ttdash.tui.widgets import ConfirmScreen, PromptScreen

WH = "tt-perf-report__wh_clip_encoder_2.csv"
SIZE = (80, 24)


def view_of(name: str, window: str = "all"):
    return Trace.load(real_dir() / name, columns="all").view(Window(window))


def status(app) -> str:
    return str(app.screen.query_one("#status").render())


# ------------------------------------------------------------------ the filter language (spec)
def test_filter_terms_spec():
    f = Filter("-Reshape !bound:DRAM matmul ttnn::add")
    assert [(t.field, t.value, t.negate) for t in f.terms()] == [
        ("op_code", "Reshape", True), ("bound", "DRAM", True), ("op_code", "matmul", False),
        ("op_code", "ttnn::add", False)]
    try:
        Filter("foo:bar").terms()
    except FilterError as exc:
        assert "foo:" in str(exc) and "bound:" in str(exc) and "cat:" in str(exc)
    else:
        raise AssertionError("an unknown key must be an error")


def test_table_state_sorts_text_ascending_numbers_descending():
    v = view_of(WH)
    st = TableState(v.ops)
    st.sort_step(["id", "op_code", "device_time_us"], 1)
    assert (st.sort_key, st.sort_desc) == ("id", False)
    st.sort_step(["id", "op_code", "device_time_us"], 1)
    assert (st.sort_key, st.sort_desc) == ("op_code", False)
    st.sort_step(["id", "op_code", "device_time_us"], 1)
    assert (st.sort_key, st.sort_desc) == ("device_time_us", True)
    dt = v.ops["device_time_us"].to_numpy()[st.rows()]
    assert (np.diff(dt[~np.isnan(dt)]) <= 0).all()


# ------------------------------------------------------------------ trace screen
async def test_unknown_filter_key_says_which_keys_exist_and_keeps_the_table():
    v = view_of(WH)
    app = open_app(v)
    async with app.run_test(size=SIZE) as pilot:
        t = app.screen.query_one(OpTable)
        await pilot.press("slash", *"foo:bar", "enter")
        await pilot.pause()
        assert len(t.rows) == 1872  # not silently empty
        msgs = [str(n.message) for n in app._notifications]
        assert any("unknown filter key" in m and "bound:" in m for m in msgs), msgs


async def test_negated_filter_excludes():
    v = view_of(WH)
    app = open_app(v)
    async with app.run_test(size=SIZE) as pilot:
        t = app.screen.query_one(OpTable)
        await pilot.press("slash", *"-Reshape", "enter")
        codes = v.ops["op_code"].to_numpy()[t.rows]
        assert len(codes) == 1872 - 256 and not any("Reshape" in c for c in codes)
        await pilot.press("slash", *"!bound:SLOW", "enter")
        bounds = set(v.ops["bound"].to_numpy()[t.rows])
        assert "SLOW" not in bounds and len(t.rows) > 0


async def test_sort_starts_at_the_top():
    app = open_app(view_of(WH))
    async with app.run_test(size=SIZE) as pilot:
        t = app.screen.query_one(OpTable)
        await pilot.press("G")
        assert t.cursor == 1871
        await pilot.press("greater_than_sign", "greater_than_sign", "greater_than_sign")
        assert t.cursor == 0 and t.scroll_offset.y == 0
        assert "row 1/1,872" in status(app)
        await pilot.press("G", "r")
        assert t.cursor == 0


async def test_grouped_enter_narrows_and_export_writes_groups(tmp_path):
    v = view_of(WH)
    app = open_app(v)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await pilot.pause()
        groups = app.screen.query_one("#groups")
        headers = [str(c.label) for c in groups.columns.values()]
        assert headers[-2:] == ["Max", "Share"]
        # export from the grouped view writes the grouped table
        target = tmp_path / "groups.csv"
        await pilot.press("e")
        assert isinstance(app.screen, PromptScreen)
        app.screen.query_one("Input").value = str(target)
        await pilot.press("enter")
        await pilot.pause()
        text = target.read_text()
        assert text.splitlines()[0].startswith('"op_code","count","total_us"')
        assert len(text.splitlines()) == 1 + groups.row_count
        # enter on the first group: the op table, that op code only
        first = str(groups.get_row_at(0)[0])
        await pilot.press("enter")
        await pilot.pause()
        t = app.screen.query_one(OpTable)
        assert app.screen.query_one("#switcher").current == "ops"
        codes = set(v.ops["op_code"].to_numpy()[t.rows])
        assert codes == {first} and "filter: op:" in status(app)


async def test_default_window_note_and_whole_trace_key():
    v = view_of("tt-perf-report__bh20_oft.csv", window="default")
    assert "49 of the file's 1,571" in v.window_note()
    app = open_app(v)
    async with app.run_test(size=SIZE) as pilot:
        t = app.screen.query_one(OpTable)
        assert len(t.rows) == 49
        await pilot.press("w")
        await pilot.pause()
        assert app.screen.view.window.mode == "all" and len(app.screen.view.op_rows) == 1571


# ------------------------------------------------------------------ diff screen
async def test_diff_shares_the_table_view():
    a = view_of(WH)
    app = diff_app(diff_traces(a, a))
    async with app.run_test(size=SIZE) as pilot:
        s = app.screen
        t = s.query_one(OpTable)
        await pilot.press("slash", *"cat:TM", "enter")  # not a diff key: an error, no change
        await pilot.pause()
        assert len(t.rows) == len(s.frame)
        assert any("unknown filter key" in str(n.message) for n in app._notifications)
        await pilot.press("slash", *"-Reshape", "enter")
        assert len(t.rows) == len(s.frame) - 256
        await pilot.press("G", "greater_than_sign")
        assert t.cursor == 0
        await pilot.press("2")
        await pilot.pause()
        headers = [str(c.label) for c in s.query_one("#groups").columns.values()]
        assert "Δ%" in headers and "Share" in headers


# ------------------------------------------------------------------ watch: runs list, switch
def _two_runs(root):
    src = real_dir() / WH
    for ts in ("2025_01_01_00_00_00", "2025_01_02_00_00_00"):
        d = root / "reports" / ts
        d.mkdir(parents=True)
        shutil.copy(src, d / f"ops_perf_results_{ts}.csv")


async def test_runs_list_keys_refuse_self_diff_and_back_from_diff(tmp_path):
    root = tmp_path / "p"
    _two_runs(root)
    app = watch_app(root, refresh=0.05)
    async with app.run_test(size=(120, 36)) as pilot:
        watch = app.screen
        await wait_until(pilot, lambda: watch.mode == "report", timeout=30)
        await pilot.press("R")
        runs = app.screen
        assert isinstance(runs, RunsScreen)
        ol = runs.query_one("OptionList")
        assert ol.highlighted == 0
        await pilot.press("j")
        assert ol.highlighted == 1
        await pilot.press("k")
        assert ol.highlighted == 0
        await pilot.press("b", "c", "d")  # the same run twice: refused, the list stays
        await pilot.pause()
        assert app.screen is runs
        assert any("same run" in str(n.message) for n in app._notifications)
        await pilot.press("j", "c", "d")
        await wait_until(pilot, lambda: isinstance(app.screen, DiffScreen))
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is watch and app.is_running
        await pilot.press("R", "j", "d")  # marks are kept: diff again, then q goes back too
        await wait_until(pilot, lambda: isinstance(app.screen, DiffScreen))
        await pilot.press("q")
        await pilot.pause()
        assert app.screen is watch and app.is_running


async def test_export_confirm_overwrite_keeps_mode(tmp_path):
    target = tmp_path / "x.csv"
    target.write_text("old")
    target.chmod(0o644)
    app = open_app(view_of(WH))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("e")
        app.screen.query_one("Input").value = str(target)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await pilot.pause()
    assert target.read_text().startswith("id,") or target.read_text().startswith('"id"')
    assert target.stat().st_mode & 0o777 == 0o644


# ------------------------------------------------------------------ the key footer
async def test_footer_is_rebuilt_only_when_its_keys_change(monkeypatch):
    """Textual's footer rebuilt its key widgets on every focus change and screen push (~40 ms
    each, 40% of a headless session's CPU). ttdash's shows the same keys as Textual's would
    after every key, and is rebuilt only when they differ."""
    from textual.widgets._footer import FooterKey

    from ttdash.tui.widgets import SteadyFooter

    KEYS = ("j", "j", "k", "2", "j", "1", "3", "1", "slash", "escape", "enter", "escape")
    rebuilt: list[int] = []  # the press (1, 2, ...) during which the footer was rebuilt
    presses: list[str] = []
    checked = 0
    app = open_app(view_of(WH))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()

        def shown() -> list[tuple[str, str, bool]] | None:  # None: a modal without keys
            footers = app.screen.query(SteadyFooter)
            return [(k.key, k.description, k.disabled) for k in footers.first().query(FooterKey)
                    if not k.has_class("-command-palette")] if footers else None

        def wanted() -> list[tuple[str, str, bool]]:  # Textual's: one key per action
            first: dict[str, tuple[str, str, bool]] = {}
            for _, b, on, _ in app.screen.active_bindings.values():
                if b.show:
                    first.setdefault(b.action, (b.key, b.description, not on))
            return list(first.values())

        real = SteadyFooter.recompose

        async def counted(footer):
            rebuilt.append(len(presses))
            return await real(footer)

        monkeypatch.setattr(SteadyFooter, "recompose", counted)
        for key in KEYS:
            presses.append(key)
            await pilot.press(key)
            await pilot.pause()
            keys = shown()
            assert keys is None or keys == wanted(), key
            checked += keys is not None
    assert checked >= 9
    # once for each view switch (Textual's: twice, and once more for a modal opened or closed);
    # never for a cursor move, a modal or closing it
    assert [KEYS[i - 1] for i in rebuilt] == ["2", "1", "3", "1"], rebuilt


async def test_footer_shows_whole_keys_only_and_help_lists_the_rest(tmp_path):
    """At 80 columns the watch screen's keys do not all fit: Textual cut the last one to "R R".
    The footer shows the keys that fit whole, in order, the rest hidden until the terminal is
    wide enough again; `?` lists every one."""
    from textual.widgets._footer import FooterKey

    def bottom() -> str:
        return screen_text(app)[0].rstrip("\n").splitlines()[-1]

    def keys() -> list[tuple[str, bool]]:
        return [(k.description, k.display) for k in app.screen.query(FooterKey)
                if not k.has_class("-command-palette")]

    app = watch_app(tmp_path / "p", refresh=0.1)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await wait_until(pilot, lambda: keys() and not all(on for _, on in keys()))
        shown = [d for d, on in keys() if on]
        hidden = [d for d, on in keys() if not on]
        assert "Runs" in hidden and shown[:2] == ["Help", "Filter"]
        line = bottom()
        for d in shown:  # each shown key whole, the hidden ones nowhere
            assert f" {d} " in line + " ", (d, line)
        assert "R R" not in line and all(d not in line for d in hidden), line
        assert [d for d, on in keys()] == shown + hidden  # hidden from the end, order kept
        await pilot.resize_terminal(160, 24)
        await wait_until(pilot, lambda: all(on for _, on in keys()))
        assert "R Runs" in bottom()
        await pilot.resize_terminal(*SIZE)
        await wait_until(pilot, lambda: not all(on for _, on in keys()))
        await pilot.press("question_mark")
        await pilot.pause()
        assert all(any(d == action for _, action, _ in app.screen.rows) for d in hidden), hidden


async def test_an_app_freezes_what_its_first_screen_holds_and_lets_go_when_it_ends():
    """The collector's full passes skip what exists once the first screen is up (gc.freeze: they
    paused a live screen 50-90 ms every few seconds); an app that ended leaves nothing frozen."""
    import gc

    app = open_app(view_of(WH))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await wait_until(pilot, lambda: gc.get_freeze_count() > 0)
        assert gc.get_freeze_count() > 10_000  # modules, Textual, the trace
    assert gc.get_freeze_count() == 0
