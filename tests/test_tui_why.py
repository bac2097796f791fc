"""The why-slow view (`6`, issues #34 and #47) and the model's columns in the op table: the rows
are model.whyslow.why_contract's op codes with their reason, enter drills into an op code's
ops, the 80x24 and 200x50 screens hold the lead, the top rows and what to try, every theme draws
it; Eff% and Recov from the sort and column pickers."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from conftest import each_theme, real_dir, screen_text

from ttdash.format import fmt_pct, fmt_share, fmt_us
from ttdash.model import Trace, Window
from ttdash.model.analysis import whyslow
from ttdash.report import why
from ttdash.tui.app import open_app
from ttdash.tui.columns import ColumnsScreen
from ttdash.tui.optable import OpTable
from ttdash.tui.sortmenu import SortMenu
from ttdash.tui.whyview import NO_MODEL, WhyList, WhyView

CLIP = "tt-perf-report__wh_clip_encoder_2.csv"
DEEPSEEK = "tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv"
SIZE = (80, 24)


def view_of(name: str, columns: str = "analysis"):
    return Trace.load(real_dir() / name, columns=columns).view(Window("all"))


def lines_of(app) -> list[str]:
    return screen_text(app)[0].splitlines()


async def test_the_rows_are_the_contracts_op_codes_heaviest_first():
    view = view_of(CLIP)
    app = open_app(view)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("6")
        await pilot.pause()
        lst = app.screen.query_one(WhyList)
        assert app.screen.focused is lst
        got = lst.frame
    want = whyslow.why_contract(view)["by_op_code"]
    assert got["group"].tolist() == [g["op_code"] for g in want]
    assert got["reason"].tolist() == [g["reason"] for g in want]
    # independently of the model module: device time per op code (its first word)
    ops = view.op_rows
    first = ops["op_code"].astype(str).str.split().str[0]
    dev = ops["device_time_us"].groupby(first.to_numpy()).sum().sort_values(ascending=False)
    assert got["group"].iloc[0] == dev.index[0] == "MinimalMatmulOp"
    for g, d in zip(got["group"], got["device_us"]):
        assert d == pytest.approx(dev[g], rel=1e-9)
    assert (np.diff(got["device_us"].to_numpy()) <= 0).all()
    ln = got.set_index("group").loc["LayerNormDeviceOperation"]
    assert ln["reason"] == "under-gridded: 1 of 64 cores"  # CORE COUNT 1, AVAILABLE 64


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
async def test_the_screen_holds_the_lead_the_top_rows_and_what_to_try(size):
    view = view_of(CLIP)
    app = open_app(view)
    async with app.run_test(size=size) as pilot:
        await pilot.press("6")
        await pilot.pause()
        lines = lines_of(app)
        await pilot.press("down")  # the footer follows the cursor
        await pilot.pause()
        after = " ".join(" ".join(ln.split()) for ln in lines_of(app))
    text = " ".join(" ".join(ln.split()) for ln in lines)
    assert " ".join(why.reason_lead(view, short=True).split()) in text
    s = whyslow.model_summary(view)
    assert " ".join(f"Model: {why.headline(view, s)}".split()) in text
    rows = whyslow.why_contract(view)["by_op_code"]
    body = [" ".join(ln.split()) for ln in lines]
    shown = 0
    for g in rows:
        cells = f"{fmt_us(g['device_us'])} {fmt_share(g['share_pct'])} " \
                f"{fmt_us(g['saving_us'])} {g['ops']:,} {g['op_code']}:"
        shown += any(b.startswith(cells) for b in body)
    assert shown >= (3 if size[1] == 24 else len(rows)), body
    if size[0] >= 200:  # the reasons are whole at 200 columns
        for g in rows:
            assert any(f"{g['op_code']}: {g['reason']}" in b for b in body), g
    first, second = rows[0]["try"], rows[1]["try"]
    assert " ".join(f"Try: {first[0]}".split()) in text
    assert " ".join(f"Try: {second[0]}".split()) in after
    if size[0] >= 200:  # every line of what to try; narrower: the first and a count
        assert all(" ".join(f"Try: {t}".split()) in text for t in first)
    else:
        assert f"({len(first) - 1} more line" in text
    assert max(len(ln.rstrip()) for ln in lines) <= size[0]


async def test_enter_drills_into_the_op_codes_ops_heaviest_first():
    view = view_of(CLIP)
    app = open_app(view)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        await pilot.press("6", "down", "enter")  # LayerNorm, the second op code
        await pilot.pause()
        w = screen.query_one(WhyView)
        lst = screen.query_one(WhyList)
        assert w.drilled and w.group == "LayerNormDeviceOperation"
        ops = lst.frame
        codes = view.ops["op_code"].to_numpy(dtype=object)[ops["pos"].to_numpy()]
        assert set(codes) == {"LayerNormDeviceOperation"}
        assert len(ops) == int((view.op_rows["op_code"] == "LayerNormDeviceOperation").sum())
        dev = ops["device_us"].to_numpy()
        assert (np.diff(dev) <= 0).all()
        want = view.ops["device_time_us"].to_numpy()[ops["pos"].to_numpy()]
        assert np.array_equal(dev, want)
        lines = lines_of(app)
        first = view.ops.iloc[int(ops["pos"].iloc[0])]
        assert any(ln.split()[:1] == [str(first["id"])]
                   and f"{fmt_us(first['device_time_us'])}" in ln
                   and "under-gridded 1/64 cores" in ln and NO_MODEL in ln
                   for ln in lines), lines
        assert any("LayerNormDeviceOperation: 130 ops" in ln for ln in lines)
        # the cursor's op is the op table's: 1 shows the table on it
        await pilot.press("down")
        await pilot.pause()
        second = int(ops["id"].iloc[1])
        await pilot.press("enter")
        await pilot.pause()
        assert type(app.screen).__name__ == "DetailScreen"
        assert any(f"#{second}" in ln or f" {second} " in ln for ln in lines_of(app))
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("escape")  # back to the op codes, the cursor on LayerNorm
        await pilot.pause()
        assert not w.drilled and lst.cursor == 1
        await pilot.press("1")
        await pilot.pause()
        assert screen.query_one(OpTable).current_id() == second


async def test_a_trace_without_a_model_still_gives_a_reason(tmp_path):
    f = tmp_path / "plain.csv"
    f.write_text("OP CODE,OP TYPE,DEVICE ID,CORE COUNT,DEVICE KERNEL DURATION [ns]\n"
                 "Matmul,tt_dnn_device,0,2,1000\nSoftmax,tt_dnn_device,0,64,900\n")
    app = open_app(Trace.load(f).view(Window("all")))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("6")
        await pilot.pause()
        text = " ".join(screen_text(app)[0].split())
        rows = app.screen.query_one(WhyList).frame
    assert "Model:" not in text
    assert rows["group"].tolist() == ["Matmul", "Softmax"]
    assert rows["reason"].tolist() == ["under-gridded: 2 of 64 cores",
                                       "no data: whole grid, no per-core times, no model, no "
                                       "DRAM tensor or FLOPs"]
    assert "Softmax: no guide line" not in text and "Try: more cores" in text


@pytest.mark.parametrize("theme", each_theme())
async def test_the_why_view_in_every_theme_at_80x24(theme):
    """As test_timeline's every-view test for keys 1-5: the view draws in each theme."""
    app = open_app(view_of(DEEPSEEK, columns="all"), theme=theme)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("6")
        await pilot.pause()
        plain = screen_text(app)[0]
        assert "Every op explained" in plain and "Op code: reason" in plain, plain
        await pilot.press("enter")
        await pilot.pause()
        plain = screen_text(app)[0]
        assert "Saving" in plain and "Reason" in plain and "Model" in plain, plain


# ------------------------------------------------------------------ the op table's model columns
async def test_the_sort_picker_sorts_by_efficiency_and_recoverable_time_at_80x24():
    view = view_of(CLIP)
    app = open_app(view)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        t = screen.query_one(OpTable)
        assert "pm_eff_pct" not in {c.key for c in t.visible_columns()}  # the bars keep 80
        entries = {e.key: e for e in screen.sort_entries()}
        assert entries["pm_eff_pct"].hotkey == "e" and not entries["pm_eff_pct"].on_screen
        assert entries["recoverable_us"].hotkey == "r"
        await pilot.press("S")
        assert isinstance(app.screen, SortMenu)
        await pilot.press("r")
        await pilot.pause()
        rec = screen.state.frame["recoverable_us"].to_numpy()[t.rows]
        assert screen.sort_key == "recoverable_us" and rec[0] == np.nanmax(rec)
        assert "sort: Recov ↓" in screen_text(app)[0]
        await pilot.press("S", "E")  # the lowest efficiency first
        await pilot.pause()
        eff = screen.state.frame["pm_eff_pct"].to_numpy()[t.rows]
        m = ~np.isnan(eff)
        assert (np.diff(eff[m]) >= 0).all() and not (~m[:-1] & m[1:]).any()
        assert "sort: Eff% ↑" in screen_text(app)[0]


async def test_the_column_picker_shows_efficiency_without_cutting_ids_or_op_codes():
    view = view_of(CLIP)
    app = open_app(view)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        t = screen.query_one(OpTable)
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, ColumnsScreen)
        keys = [c.key for c in app.screen.columns]
        assert keys[-2:] == ["pm_eff_pct", "recoverable_us"]
        await pilot.press("end", "space", "escape")
        await pilot.pause()
        assert [c.key for c in t.extra_columns] == ["recoverable_us"]
        await pilot.press("a", "end", "up", "space", "escape")
        await pilot.pause()
        shown = [c.key for c in t.visible_columns()]
        assert shown[:5] == ["id", "op_code", "device_time_us", "pm_eff_pct", "recoverable_us"]
        lines = lines_of(app)
    head = lines[2].split()
    assert head[:5] == ["ID", "Op", "code", "Device↓", "Eff%"] and "Recov" in head
    op = view.ops.iloc[int(t.rows[0])]
    row = lines[3].split()
    assert row[0] == str(op["id"]) and row[1] == op["op_code"]  # whole id and op code
    # Eff% with its spec's digits (present.table.OPS: 0), as the text outputs write it
    assert fmt_pct(op["pm_eff_pct"], 0) in row and fmt_us(op["recoverable_us"]) in " ".join(row)


async def test_live_rows_keep_the_op_code_drilled_into(tmp_path):
    """watch: `6` on live rows, enter on the first row (the heaviest op code), more rows arrive: the view stays on that list (its ops counted again),
    the cursor on the same row; esc: the ranking, over every op."""
    from conftest import wait_until

    from ttdash.sim import cpp_device_rows, generate_ops, write_cpp_device_csv
    from ttdash.tui.watch import watch_app

    root = tmp_path / "profiler"
    path = root / ".logs" / "cpp_device_perf_report.csv"
    path.parent.mkdir(parents=True)
    rows = cpp_device_rows(generate_ops(400, seed=3))
    write_cpp_device_csv(rows.iloc[:150], path)
    app = watch_app(root, refresh=0.1)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        table = screen.query_one(OpTable)
        await wait_until(pilot, lambda: len(table.rows) == 150)
        await pilot.press("6")
        await pilot.pause()
        w = screen.query_one(WhyView)
        first = w.list.frame
        assert len(first) and int(first["ops"].sum()) == 150  # every device op
        await pilot.press("enter", "down")
        await pilot.pause()
        group, n = w.group, len(w.list.frame)
        write_cpp_device_csv(rows.iloc[150:], path, append=True)
        await wait_until(pilot, lambda: len(table.rows) == 400)
        await wait_until(pilot, lambda: len(w.list.frame) > n)
        assert w.drilled and w.group == group and w.list.cursor == 1
        want = whyslow.reason_ops(w.view, group)
        assert w.list.frame["pos"].tolist() == want["pos"].tolist()
        await pilot.press("escape")
        await pilot.pause()
        assert not w.drilled and int(w.list.frame["ops"].sum()) == 400


async def test_op_codes_with_markup_and_escapes_stay_inert(tmp_path):
    """An op code that looks like Rich markup or carries a terminal escape is shown as text in
    the headline, the ranking and the drilled list; nothing of it reaches the terminal raw."""
    f = tmp_path / "hostile.csv"
    name = "[b]Evil[/b]\x1b[31mOp"
    rows = ["OP CODE,OP TYPE,DEVICE ID,DEVICE KERNEL DURATION [ns],PM IDEAL [ns],"
            "PM COMPUTE [ns],PM BANDWIDTH [ns]"]
    rows += [f'"{name}",tt_dnn_device,0,{1000 + k},250,250,100' for k in range(3)]
    f.write_text("\n".join(rows) + "\n")
    app = open_app(Trace.load(f).view(Window("all")))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("6")
        await pilot.pause()
        plain, styled = screen_text(app)
        flat = " ".join(plain.split())  # the headline (a Static) as well as the list's rows
        assert re.search(r"model; \[b\]Evil\[/b\]\S*Op holds", flat), flat
        await pilot.press("enter")
        await pilot.pause()
        plain2, styled2 = screen_text(app)
    assert re.search(r"\[b\]Evil\[/b\]\S*Op: 3 ops", " ".join(plain2.split()))
    for text in (styled, styled2):
        assert "\x1b[31mOp" not in text


async def test_headline_and_footer_are_whole_at_80x24():
    """DeepSeek's lead and model headline take several lines at 80 columns: every word of them
    is on screen, none cut at a fixed height; the model's footer words its counts."""
    view = Trace.load(real_dir() / DEEPSEEK).view(Window("all"))
    s = whyslow.model_summary(view)
    assert s is not None and s.faster_than_model
    app = open_app(view)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("6")
        await pilot.pause()
        text = " ".join(screen_text(app)[0].replace("▊", " ").split())
    assert " ".join(why.reason_lead(view, short=True).split()) in text
    assert " ".join(f"Model: {why.headline(view, s)}".split()) in text
    assert "(median over 1 op)" in why.headline(view, s)
    assert why.footer(s).endswith("13 device ops have no model (unmodelled: not known to be "
                                  "fine); 1 runs faster than its model")
    other = dataclasses.replace(s, device_ops=s.modelled_ops + 1, faster_than_model=2)
    assert why.footer(other).endswith("1 device op has no model (unmodelled: not known to be "
                                      "fine); 2 run faster than their model")


async def test_the_header_keeps_the_largest_device_time_share_at_80_columns():
    """Item 5 of issue #47: at 80 columns the SEG encoder's header said `HOST 0%` as its only
    share while 95% of device time is unmodelled; the largest share stays when the line is
    cut (before the dispatch and pause times), the host share too."""
    seg = "ttnn-visualizer__SEG_ENCODER_ops_perf_results_2025_02_16_18_11_10.csv"
    view = view_of(seg)
    shares = view.summary().bound_shares
    top = max(shares, key=shares.get)
    app = open_app(view)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        line2 = lines_of(app)[1]
    assert top == "unmodelled" and f"{top} {fmt_share(shares[top])}" in line2, line2
    assert "HOST 0%" in line2 and line2.rstrip().endswith("whole file")
