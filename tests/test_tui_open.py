"""Pilot tests of the open view: every key changes the state it should."""

from __future__ import annotations

import io

import numpy as np
import pytest
from conftest import ROOT, real_dir
from rich.console import Console
from textual.command import CommandPalette

from ttdash.model import Trace, TraceError, Window
from ttdash.tui.app import TraceScreen, open_app
from ttdash.tui.optable import OpTable
from ttdash.tui.widgets import ConfirmScreen, DetailScreen, HelpScreen, PromptScreen

SIZE = (120, 36)


def view_of(name: str, window: str = "all"):
    path = real_dir() / name if not name.startswith("fixtures/") else ROOT / name
    return Trace.load(path, columns="all").view(Window(window))


def table(app) -> OpTable:
    return app.screen.query_one(OpTable)


def statics_text(screen) -> str:
    """The plain text of every Static on a screen (rich tables rendered)."""
    console = Console(width=200, record=True, file=io.StringIO(), color_system=None)
    for s in screen.query("Static"):
        console.print(s.content)
    return console.export_text()


def line_text(t: OpTable, y: int) -> str:
    return "".join(seg.text for seg in t.render_line(y))


async def test_cursor_keys():
    app = open_app(view_of("tt-perf-report__wh_clip_encoder_2.csv"))
    async with app.run_test(size=SIZE) as pilot:
        t = table(app)
        assert t.cursor == 0 and len(t.rows) == 1872
        await pilot.press("o")  # file order: the last row is the file's last op
        await pilot.press("j", "j", "down")
        assert t.cursor == 3
        await pilot.press("k", "up")
        assert t.cursor == 1
        await pilot.press("pagedown")
        assert t.cursor == 1 + t.body_height
        await pilot.press("pageup")
        assert t.cursor == 1
        await pilot.press("G")
        assert t.cursor == 1871 and t.current_id() == 1873
        await pilot.pause()
        assert t.scroll_offset.y > 0 and "1873" in line_text(t, t.size.height - 1)
        await pilot.press("g")
        assert t.cursor == 0 and t.scroll_offset.y == 0


async def test_signpost_jumps_narrow_and_widen():
    v = view_of("tt-perf-report__bh20_oft.csv")
    app = open_app(v)
    async with app.run_test(size=SIZE) as pilot:
        t = table(app)
        await pilot.press("o", "]", "]", "]")  # from the first row in file order
        row = t.current_row()
        assert row["is_signpost"] and row["region"] == 3
        await pilot.press("[")
        assert t.current_row()["region"] == 2
        await pilot.press("]", "enter")  # enter on a signpost row narrows to its region
        screen = app.screen
        assert isinstance(screen, TraceScreen) and screen.narrowed == 3
        regions = set(v.ops["region"].to_numpy()[t.rows])
        assert regions == {3} and len(t.rows) == v.trace.signposts.iloc[2]["ops"]
        assert "region TTBasicBlock 0 forward started" in str(
            screen.query_one("#summary").render())
        await pilot.press("escape")
        assert screen.narrowed == 0 and len(t.rows) == len(v.ops)


async def test_signpost_panel_enter_and_toggle():
    app = open_app(view_of("tt-perf-report__bh20_oft.csv"))
    async with app.run_test(size=(160, 48)) as pilot:
        panel = app.screen.query_one("#signposts")
        assert panel.display
        await pilot.press("s")
        assert not panel.display
        await pilot.press("s")
        assert panel.display and app.focused is panel
        await pilot.press("down", "down", "enter")  # (whole trace), 1st, 2nd signpost
        assert app.screen.narrowed == 2
        assert isinstance(app.focused, OpTable)
        await pilot.press("tab")  # tab moves between the table and the panel
        await pilot.pause()
        assert app.focused is panel
        await pilot.press("tab")
        await pilot.pause()
        assert isinstance(app.focused, OpTable)


async def test_details_screen_shows_the_row():
    app = open_app(view_of("tt-perf-report__wh_clip_encoder_2.csv"))
    async with app.run_test(size=SIZE) as pilot:
        t = table(app)
        await pilot.press(*["j"] * 6)
        op = t.current_row()
        assert "Matmul" in op["op_code"]
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen)
        text = statics_text(app.screen)
        assert f"ID {op['id']}" in text and "ATTRIBUTES" not in text.split("All columns")[0]
        for section in ("Figures", "Advice", "Tensors", "Timing columns", "Attributes",
                        "All columns", "DEVICE KERNEL DURATION [ns]", "INPUT_0"):
            assert section in text
        await pilot.press("escape")
        assert isinstance(app.screen, TraceScreen)


async def test_filter_sort_reverse_original():
    v = view_of("tt-perf-report__wh_clip_encoder_2.csv")
    app = open_app(v)
    async with app.run_test(size=SIZE) as pilot:
        t = table(app)
        await pilot.press("slash")
        assert isinstance(app.screen, PromptScreen)
        await pilot.press(*"matmul", "enter")
        codes = v.ops["op_code"].to_numpy()[t.rows]
        assert len(codes) == 514 and all("matmul" in c.lower() for c in codes)
        status = str(app.screen.query_one("#status").render())
        assert "showing 514 of 1,872 ops" in status and "filter: matmul" in status
        await pilot.press("slash", *"bound:SLOW", "enter")
        assert set(v.ops["bound"].to_numpy()[t.rows]) == {"SLOW"}
        await pilot.press("escape")
        assert len(t.rows) == 1872
        assert app.screen.sort_key == "device_time_us"  # the view opens on the heaviest ops
        await pilot.press("o")
        assert app.screen.sort_key is None and (t.rows == np.arange(1872)).all()
        assert "sort: file order" in str(app.screen.query_one("#summary").render())
        await pilot.press("greater_than_sign", "greater_than_sign")  # ID, then op code
        await pilot.press("greater_than_sign")  # device time, descending
        assert app.screen.sort_key == "device_time_us"
        dt = v.ops["device_time_us"].to_numpy()[t.rows]
        assert (np.diff(dt[~np.isnan(dt)]) <= 0).all()
        assert "Device↓" in line_text(t, 0)
        await pilot.press("r")
        dt = v.ops["device_time_us"].to_numpy()[t.rows]
        assert (np.diff(dt[~np.isnan(dt)]) >= 0).all()
        await pilot.press("less_than_sign")
        assert app.screen.sort_key == "op_code"
        await pilot.press("o")
        assert (t.rows == np.arange(1872)).all()


async def test_grouped_view_and_group_by():
    app = open_app(view_of("tt-perf-report__wh_clip_encoder_2.csv"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await pilot.pause()
        groups = app.screen.query_one("#groups")
        assert groups.row_count > 5 and str(groups.get_row_at(0)[0])
        assert app.screen.query_one("#switcher").current == "grouped"
        await pilot.press("c")
        await pilot.pause()
        cats = {str(groups.get_row_at(i)[0]) for i in range(groups.row_count)}
        assert cats <= {"Compute", "TM", "DM", "CCL", "Host", "Other"} and "Compute" in cats
        await pilot.press("1")
        assert app.screen.query_one("#switcher").current == "ops"


async def test_grouped_view_by_input0_memory_narrows_to_the_group():
    """`c` a second time: tt-perf-report's summary groups (op code and input 0 memory); enter
    on one shows exactly its ops."""
    from ttdash.model.query import summary_groups

    view = view_of("tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv")
    want = summary_groups(view.ops, "memory")
    app = open_app(view)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2", "c", "c")
        await pilot.pause()
        groups = app.screen.query_one("#groups")
        names = [str(groups.get_row_at(i)[0]) for i in range(groups.row_count)]
        assert names == want["name"].tolist()
        row = names.index("ReduceScatterMinimalAsyncDeviceOperation (in0:l1_interleaved)")
        groups.move_cursor(row=row)
        await pilot.press("enter")
        await pilot.pause()
        t = table(app)
        assert app.screen.query_one("#switcher").current == "ops" and len(t.rows) == 1
        op = view.ops.iloc[t.rows[0]]
        assert op["op_code"] == "ReduceScatterMinimalAsyncDeviceOperation"
        assert "L1_INTERLEAVED" in op["in0_memory"]
        await pilot.press("2", "c")  # and round to op codes again
        await pilot.pause()
        assert str(app.screen.query_one("#groups").columns[next(iter(
            app.screen.query_one("#groups").columns))].label) == "Op code"


async def test_advice_view_lists_the_advice_and_jumps_to_its_op():
    """`3` then `f`: tt-perf-report's advice entry by entry (sections, one entry per op, matmul
    bullets; the view opens grouped, tests/test_tui_advice.py); enter on an entry shows that op
    in the op table, even when the filter hid it."""
    from ttdash.tui.widgets import AdviceView

    app = open_app(view_of("tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("slash", *"LayerNorm", "enter")
        assert len(table(app).rows) == 2
        await pilot.press("3", "f")
        adv = app.screen.query_one(AdviceView)
        assert app.screen.focused is adv
        def text(prompt) -> str:
            console = Console(width=200, record=True, file=io.StringIO(), color_system=None)
            console.print(prompt)
            return console.export_text()

        prompts = [text(adv.get_option_at_index(i).prompt) for i in range(adv.option_count)]
        assert prompts.pop(0).startswith("Every entry (38)")  # the lead line, then the sections
        assert prompts[0].startswith("High op-to-op gap")
        assert sum(p.startswith("ID ") for p in prompts) == 25 + 6  # gap ops, then matmuls
        assert any(p.startswith("Running with metal trace could save") for p in prompts)
        grid = next(p for p in prompts if p.startswith("ID 7 "))
        assert "• FLOP-bound on 100 of 110 cores" in grid
        assert adv.op_id(adv.get_option_at_index(adv.highlighted)) == 14  # first entry
        await pilot.press("down", "enter")  # ID 22: AllGather, hidden by the filter
        await pilot.pause()
        t = table(app)
        assert app.screen.focused is t and t.current_id() == 22 and len(t.rows) == 26


async def test_help_palette_copy_quit():
    app = open_app(view_of("tt-perf-report__bh_p100_dlv3.csv"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        ids = {r[2] for r in app.screen.rows}
        assert {"ttdash.filter", "ttdash.sort_next", "ttdash.signpost_next", "ttdash.export",
                "ttdash.down", "ttdash.bottom"} <= ids
        await pilot.press("escape")
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("j", "y")
        assert app.clipboard.split("\t")[0] == str(table(app).current_id())
        await pilot.press("q")
    assert app.return_code == 0


async def test_export_never_overwrites_without_asking(tmp_path):
    app = open_app(view_of("tt-perf-report__bh_p100_dlv3.csv"))
    target = tmp_path / "out.csv"
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("e")
        inp = app.screen.query_one("Input")
        inp.value = str(target)
        await pilot.press("enter")
        await pilot.pause()
        assert target.read_text().count("\n") == 388  # header + 387 ops
        target.write_text("keep me")
        await pilot.press("e")
        app.screen.query_one("Input").value = str(target)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        assert target.read_text() == "keep me"
        await pilot.press("slash", *"Conv", "enter", "e")
        app.screen.query_one("Input").value = str(tmp_path / "conv.md")
        await pilot.press("enter")
        await pilot.pause()
        md = (tmp_path / "conv.md").read_text()
        rows = [ln for ln in md.splitlines() if ln.startswith("| ") and
                ln.split("|")[1].strip().isdigit()]  # the op table's rows (ID first)
        assert len(rows) == 46 and all("Conv2d" in ln for ln in rows) and "| ID |" in md
        assert not list(tmp_path.glob(".*.tmp"))  # atomic: no temp files left


async def test_keymap_and_theme(tmp_path, monkeypatch):
    (tmp_path / "ttdash").mkdir()
    (tmp_path / "ttdash" / "keymap.toml").write_text('"ttdash.filter" = "f"\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    app = open_app(view_of("tt-perf-report__bh_p100_dlv3.csv"), theme="ttdash-light")
    async with app.run_test(size=SIZE) as pilot:
        assert app.theme == "ttdash-light"
        await pilot.press("f")
        assert isinstance(app.screen, PromptScreen)
        await pilot.press("escape", "question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)  # ? lists the key as remapped
        assert ("f", "ttdash.filter") in {(k, bid) for k, _, bid in app.screen.rows}
    with pytest.raises(TraceError):
        open_app(view_of("tt-perf-report__bh_p100_dlv3.csv"), theme="no-such-theme")


async def test_markup_and_escapes_are_literal():
    app = open_app(view_of("fixtures/edge/markup_injection.csv"))
    async with app.run_test(size=(200, 40)) as pilot:
        t = table(app)
        lines = [line_text(t, y) for y in range(1, min(12, len(t.rows) + 1))]
        joined = "\n".join(lines)
        assert "[bold red]" in joined
        assert "\x1b" not in joined and "\x07" not in joined
        for pos in range(len(t.rows)):
            t.cursor = pos
            if "[" in (t.current_row()["op_code"] or "") and not t.current_row()["is_signpost"]:
                break
        await pilot.press("enter")
        await pilot.pause()
        text = statics_text(app.screen)
        assert "[bold red]" in text and "\x1b" not in text


# ---------------------------------------------------------------- the loading screen
async def test_loading_screen_shows_progress_and_q_stops_the_load():
    """A large trace opens on the loading screen: the model's progress in its header, and `q`
    quits at once, the loading thread stopping at its next progress report."""
    import threading

    from textual.widgets import ProgressBar

    from ttdash.model.progress import step
    from ttdash.tui.app import open_loading_app
    from ttdash.tui.loading import LoadingScreen

    reported, release, stopped = threading.Event(), threading.Event(), threading.Event()

    def load():
        try:
            step("reading big.csv: 500 rows", 50, 100)
            reported.set()
            release.wait(10)
            step("reading big.csv: 900 rows", 90, 100)  # raises: q was pressed
        finally:
            stopped.set()
        raise AssertionError("the load went on after q")

    app = open_loading_app(load, "big.csv")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, LoadingScreen)
        while not reported.is_set() or "50%" not in statics_text(app.screen):
            await pilot.pause(0.02)
        text = statics_text(app.screen)
        assert "loading big.csv · 50%" in text and "reading big.csv: 500 rows" in text
        assert app.screen.query_one(ProgressBar).progress == 50
        await pilot.press("q")
        release.set()
        await pilot.pause()
    assert stopped.wait(5) and app.return_code in (0, None) and app.loading.error is None


async def test_loading_screen_hands_over_to_the_trace_screen(tmp_path):
    from ttdash.commands.common import view_of as load
    from ttdash.commands.options import WindowOptions
    from ttdash.tui.app import open_loading_app

    src = real_dir() / "tt-perf-report__wh_clip_encoder_2.csv"
    app = open_loading_app(lambda: load(str(src), WindowOptions(), "lazy"), src.name)
    async with app.run_test(size=(80, 24)) as pilot:
        while not isinstance(app.screen, TraceScreen):
            await pilot.pause(0.05)
        await pilot.pause()
        assert len(table(app).rows) == 1872
        assert "1,872 ops" in statics_text(app.screen)


async def test_loading_screen_ends_on_a_bad_file_with_its_error():
    from ttdash.tui.app import open_loading_app

    def load():
        raise TraceError("big.csv", "expected 12 fields, found 13", line=7, column=13)

    app = open_loading_app(load, "big.csv")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.2)
    assert app.return_code == 2 and isinstance(app.loading.error, TraceError)
    assert app.loading.error.oneline() == "big.csv:7:13: expected 12 fields, found 13"


async def test_a_large_trace_shows_its_first_rows_while_the_rest_loads(monkeypatch):
    """The read offers its first rows: the trace screen comes up on them at once (the load's
    progress first in its header, keys working) and takes the whole trace when it is ready."""
    import threading

    from ttdash.commands.common import preview_of, view_of
    from ttdash.commands.options import WindowOptions
    from ttdash.model.read import loader
    from ttdash.tui.app import open_loading_app

    monkeypatch.setattr(loader, "PREVIEW_ROWS", 200)
    monkeypatch.setattr(loader, "BLOCK", 1 << 16)  # several blocks in a 2.7 MB file
    src = real_dir() / "tt-perf-report__wh_clip_encoder_2.csv"
    opts, release = WindowOptions(), threading.Event()

    def load():
        view = view_of(str(src), opts, "lazy")
        release.wait(10)  # the whole view is ready: held back while the test looks
        return view

    app = open_loading_app(load, src.name, preview=lambda t: preview_of(t, opts))
    async with app.run_test(size=(80, 24)) as pilot:
        while not isinstance(app.screen, TraceScreen):
            await pilot.pause(0.02)
        await pilot.pause()
        first = len(table(app).rows)
        assert 200 <= first < 1872
        header = str(app.screen.query_one("#summary").render())
        assert "loading" in header and "%" in header, header
        await pilot.press("down")
        await pilot.pause()
        assert table(app).cursor == 1
        release.set()
        while len(table(app).rows) != 1872:
            await pilot.pause(0.02)
        await pilot.pause()
        header = str(app.screen.query_one("#summary").render())
        assert "1,872 ops" in header and "loading" not in header, header
        await pilot.press("q")
    assert app.loading.error is None
