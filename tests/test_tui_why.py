"""The why-slow view (`6`, issue #34 items 1-2) and the model's columns in the op table: the rows
are model.whyslow's ranking, enter drills into an op code's ops, the 80x24 screen holds the
headline and the top rows, every theme draws it; Eff% and Recov from the sort and column
pickers."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pandas as pd
import pytest
from conftest import each_theme, real_dir, screen_text

from ttdash.format import fmt_pct, fmt_us
from ttdash.model import Trace, Window, whyslow
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


async def test_the_rows_are_the_models_ranking_and_the_unmodelled_ops_a_row_of_their_own():
    view = view_of(CLIP)
    app = open_app(view)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("6")
        await pilot.pause()
        lst = app.screen.query_one(WhyList)
        assert app.screen.focused is lst
        got = lst.frame
    want = whyslow.model_ranking(view)
    s = whyslow.model_summary(view)
    assert len(got) == len(want) + 1
    for col in ("group", "ops", "recoverable_us", "median_eff_pct", "recoverable_share_pct"):
        assert got[col].iloc[:-1].tolist() == want[col].tolist(), col
    # independently of the model module: per op code, device time above PM IDEAL
    ops = view.op_rows
    ideal = ops["PM IDEAL [ns]"].to_numpy(dtype="float64") if "PM IDEAL [ns]" in ops else None
    dur = ops["raw_kernel_ns"].to_numpy(dtype="float64")
    if ideal is None:
        ideal = ops["pm_ideal_ns"].to_numpy(dtype="float64")
    m = (ideal > 1) & (dur > 0)
    first = ops["op_code"].astype(str).str.split().str[0].to_numpy()
    rec = pd.Series(np.maximum(dur[m] - ideal[m], 0) / 1000).groupby(first[m]).sum()
    assert got["group"].iloc[0] == rec.idxmax() == "MinimalMatmulOp"
    for g, r in zip(got["group"].iloc[:-1], got["recoverable_us"].iloc[:-1]):
        assert r == pytest.approx(rec[g], rel=1e-9)
    last = got.iloc[-1]  # the device ops without a model: counted, never given an efficiency
    assert int(last["ops"]) == s.device_ops - s.modelled_ops == 972
    assert pd.isna(last["median_eff_pct"]) and pd.isna(last["recoverable_us"])
    assert str(last["group"]).startswith("unmodelled")


async def test_80x24_holds_the_headline_the_top_rows_and_the_footer():
    view = view_of(CLIP)
    app = open_app(view)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("6")
        await pilot.pause()
        lines = lines_of(app)
    text = " ".join(" ".join(ln.split()) for ln in lines)
    s = whyslow.model_summary(view)
    assert " ".join(f"Model: {why.headline(view, s)}".split()) in text
    assert " ".join(why.footer(s).split()) in text
    body = [ln.split() for ln in lines]
    for g in whyslow.model_ranking(view).itertuples():
        row = [fmt_us(g.recoverable_us), fmt_pct(g.recoverable_share_pct),
               fmt_pct(g.median_eff_pct), f"{int(g.ops):,}", g.group]
        assert " ".join(row).split() in body, row
    unmodelled = next(ln for ln in lines if "unmodelled (972 ops" in ln)
    assert NO_MODEL in unmodelled and "%" not in unmodelled  # never an efficiency
    assert max(len(ln.rstrip()) for ln in lines) <= 80


async def test_enter_drills_into_the_op_codes_ops_most_recoverable_first():
    view = view_of(CLIP)
    app = open_app(view)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        await pilot.press("6", "down", "enter")  # Matmul, the second op code
        await pilot.pause()
        w = screen.query_one(WhyView)
        lst = screen.query_one(WhyList)
        assert w.drilled and w.group == "Matmul"
        ops = lst.frame
        codes = view.ops["op_code"].to_numpy(dtype=object)[ops["pos"].to_numpy()]
        assert set(codes) == {"Matmul"}
        n = int((view.op_rows["op_code"] == "Matmul").sum())
        assert len(ops) == n
        rec = ops["recoverable_us"].to_numpy()
        modelled = ~np.isnan(rec)
        assert (np.diff(rec[modelled]) <= 0).all() and not (~modelled[:-1] & modelled[1:]).any()
        r = whyslow.model_ranking(view).set_index("group").loc["Matmul"]
        assert rec[modelled].sum() == pytest.approx(r["recoverable_us"], rel=1e-9)
        assert int(modelled.sum()) == int(r["ops"])
        want = view.ops["recoverable_us"].to_numpy()[ops["pos"].to_numpy()]
        assert np.array_equal(rec, want, equal_nan=True)
        lines = lines_of(app)
        first = view.ops.iloc[int(ops["pos"].iloc[0])]
        assert any(ln.split()[:1] == [str(first["id"])]
                   and " ".join(ln.split()[1:6]) == f"{fmt_us(first['recoverable_us'])} "
                   f"{fmt_pct(first['pm_eff_pct'])} {fmt_us(first['raw_kernel_ns'] / 1000)}"
                   for ln in lines), lines
        assert any("Matmul: 130 modelled ops" in ln for ln in lines)
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
        await pilot.press("escape")  # back to the op codes, the cursor on Matmul
        await pilot.pause()
        assert not w.drilled and lst.cursor == 1
        await pilot.press("1")
        await pilot.pause()
        assert screen.query_one(OpTable).current_id() == second


async def test_the_unmodelled_row_lists_the_ops_without_a_model():
    view = view_of(CLIP)
    app = open_app(view)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("6", "end", "enter")
        await pilot.pause()
        ops = app.screen.query_one(WhyList).frame
        lines = lines_of(app)
    assert len(ops) == 972 and ops["pm_eff_pct"].isna().all()
    dev = ops["device_us"].to_numpy()
    assert (np.diff(dev[~np.isnan(dev)]) <= 0).all()
    assert any(ln.startswith(" Unmodelled: 972 device ops") for ln in lines)
    rows = [ln for ln in lines if NO_MODEL in ln]
    assert len(rows) >= 10  # each op says it, none shows a percentage
    assert not any("%" in ln for ln in rows)


async def test_a_trace_without_a_model_says_so(tmp_path):
    f = tmp_path / "plain.csv"
    f.write_text("OP CODE,OP TYPE,DEVICE ID,DEVICE KERNEL DURATION [ns]\n"
                 "Matmul,tt_dnn_device,0,1000\n")
    app = open_app(Trace.load(f).view(Window("all")))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("6")
        await pilot.pause()
        text = " ".join(screen_text(app)[0].split())
        rows = app.screen.query_one(WhyList).frame
    assert "no op in this view has a performance model" in text
    assert len(rows) == 1 and int(rows["ops"].iloc[0]) == 1 and NO_MODEL in text


@pytest.mark.parametrize("theme", each_theme())
async def test_the_why_view_in_every_theme_at_80x24(theme):
    """As test_timeline's every-view test for keys 1-5: the view draws in each theme."""
    app = open_app(view_of(DEEPSEEK, columns="all"), theme=theme)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("6")
        await pilot.pause()
        plain = screen_text(app)[0]
        assert "Model: " in plain and "Recoverable" in plain and "Op code" in plain, plain
        await pilot.press("enter")
        await pilot.pause()
        plain = screen_text(app)[0]
        assert "Recov" in plain and "Eff%" in plain and "Bound" in plain, plain


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
    assert fmt_pct(op["pm_eff_pct"]) in row and fmt_us(op["recoverable_us"]) in " ".join(row)


async def test_live_rows_keep_the_op_code_drilled_into(tmp_path):
    """watch: `6` on live rows, enter on the first row (a device log has no performance model:
    the unmodelled ops), more rows arrive: the view stays on that list (its ops counted again),
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
        assert len(first) and int(first["ops"].sum()) == 150  # modelled or not, every op
        await pilot.press("enter", "down")
        await pilot.pause()
        group, n = w.group, len(w.list.frame)
        write_cpp_device_csv(rows.iloc[150:], path, append=True)
        await wait_until(pilot, lambda: len(table.rows) == 400)
        await wait_until(pilot, lambda: len(w.list.frame) > n)
        assert w.drilled and w.group == group and w.list.cursor == 1
        want = whyslow.group_ops(w.view, group)
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
    assert re.search(r"\[b\]Evil\[/b\]\S*Op: 3 modelled ops", " ".join(plain2.split()))
    for text in (styled, styled2):
        assert "\x1b[31mOp" not in text


async def test_headline_and_footer_are_whole_at_80x24():
    """DeepSeek's footer takes three lines at 80 columns (its op faster than the model): every
    word of the headline and the footer is on screen, none cut at a fixed height."""
    view = Trace.load(real_dir() / DEEPSEEK).view(Window("all"))
    s = whyslow.model_summary(view)
    assert s is not None and s.faster_than_model
    app = open_app(view)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("6")
        await pilot.pause()
        text = " ".join(screen_text(app)[0].replace("▊", " ").split())
    assert " ".join(why.footer(s).split()) in text
    assert " ".join(f"Model: {why.headline(view, s)}".split()) in text
    assert "(median over 1 op)" in why.headline(view, s)
    assert why.footer(s).endswith("13 device ops have no model (unmodelled: not known to be "
                                  "fine); 1 runs faster than its model")
    other = dataclasses.replace(s, device_ops=s.modelled_ops + 1, faster_than_model=2)
    assert why.footer(other).endswith("1 device op has no model (unmodelled: not known to be "
                                      "fine); 2 run faster than their model")
