"""Screens that draw what they promise (#46.5): the glossary's yellow model efficiency (under
30%) and core skew (1.5x and more) in the op table and report's table, read off the rendered
cells, on every theme; checked against the raw CSV columns."""

from __future__ import annotations

import io
import re

import numpy as np
import pandas as pd
import pytest
from conftest import each_theme, real_dir

from ttdash.model import Trace, Window
from ttdash.model.columns import LOW_EFF_PCT, SKEW_FLAG
from ttdash.report.single import to_table
from ttdash.tui.app import open_app
from ttdash.tui.optable import PICKABLE_COLUMNS, OpTable

OPS = "tt-perf-report__ops_perf_results_2025_09_18_11_39_20.csv"  # per-core times and a model
SIZE = (200, 50)


def _view():
    return Trace.load(real_dir() / OPS).view(Window("all"))


def _raw() -> pd.DataFrame:
    """The CSV's own figures per ID (the CSV line number): efficiency and skew by hand."""
    raw = pd.read_csv(real_dir() / OPS, low_memory=False)
    raw["ID"] = np.arange(2, len(raw) + 2)
    ideal, dur = raw["PM IDEAL [ns]"], raw["DEVICE KERNEL DURATION [ns]"]
    raw["eff"] = np.where((ideal > 1) & (dur > 0), ideal / dur * 100, np.nan)
    raw["skew"] = raw["DEVICE KERNEL DURATION PER CORE MAX [ns]"] / \
        raw["DEVICE KERNEL DURATION PER CORE AVG [ns]"]
    return raw.set_index("ID")


def _cell_style(table: OpTable, y: int, key: str):
    """The text and style of column `key` on screen line `y` of the table."""
    x = 0
    want = None
    for c, w in table._layout():
        if c.key == key:
            want = (x, x + w)
        x += w + 1
    assert want is not None, key
    at = 0
    for seg in table.render_line(y):
        end = at + len(seg.text)
        if at <= want[0] < end:
            return seg.text.strip(), seg.style
        at = end
    raise AssertionError(f"no segment at column {key}")


@pytest.mark.parametrize("theme", [*each_theme(), "ttdash-ansi"])
async def test_op_table_draws_low_efficiency_and_skew_yellow(theme):
    raw = _raw()
    view = _view()
    app = open_app(view, theme=theme)
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.query_one(OpTable)
        table.extra_columns = PICKABLE_COLUMNS
        await pilot.pause()
        assert {"pm_eff_pct", "core_skew"} <= {c.key for c in table.visible_columns()}
        warn = table._style("optable--warn")
        assert warn.color is not None
        ids = table._data["id"][table.rows]
        low = {i for i in raw.index[raw["eff"] < LOW_EFF_PCT]}
        skewed = {i for i in raw.index[raw["skew"] >= SKEW_FLAG]}
        assert len(skewed) == 5  # the CSV: 5 ops at 1.5x or more (ReshapeDeviceOperation 2.23)
        seen = {"low": 0, "ok": 0, "skew": 0, "even": 0}
        # walk the table a page at a time; the cursor line's style is the cursor's
        for top in range(0, len(ids), table.body_height):
            table.scroll_to(y=top, animate=False)
            await pilot.pause()
            for y in range(1, table.size.height):
                pos = top + y - 1
                if pos >= len(ids) or pos == table.cursor:
                    continue
                i = int(ids[pos])
                if i not in raw.index or bool(table._data["is_signpost"][table.rows[pos]]):
                    continue
                text, style = _cell_style(table, y, "pm_eff_pct")
                if text:
                    yellow = style is not None and style.color == warn.color
                    assert yellow == (i in low), (i, text, style)
                    seen["low" if yellow else "ok"] += 1
                text, style = _cell_style(table, y, "core_skew")
                if text:
                    yellow = style is not None and style.color == warn.color
                    assert yellow == (i in skewed), (i, text, style)
                    seen["skew" if yellow else "even"] += 1
        # both colours drawn where they must be and not where they must not
        assert seen["low"] > 50 and seen["ok"] > 50 and seen["skew"] >= 4 and seen["even"] > 500


def test_report_table_draws_low_efficiency_and_skew_yellow():
    raw = _raw()
    out = io.StringIO()
    to_table(_view(), out, color=True)
    lines = out.getvalue().splitlines()
    head = next(k for k, ln in enumerate(lines) if "Core skew" in ln and "Model eff %" in ln)
    end = lines.index("", head)  # the table ends at its first blank line
    rows = {int(ln.split()[0]): ln for ln in lines[head + 1:end]}
    # every device op of the file (its 50 signposts are table rows without an ID)
    assert len(rows) == int((raw["OP TYPE"] != "signpost").sum()) == 621

    def yellow(i: int) -> list[str]:
        return [t.strip() for t in re.findall("\x1b\\[33m(.*?)\x1b\\[0m", rows[i])]

    skewed = [i for i in raw.index[raw["skew"] >= SKEW_FLAG] if i in rows]
    assert len(skewed) == 5
    for i in skewed:
        assert f"{raw.loc[i, 'skew']:.2f}" in yellow(i), rows[i]
    even = [i for i in raw.index[raw["skew"] < SKEW_FLAG] if i in rows]
    assert even and not any(f"{raw.loc[i, 'skew']:.2f}" in yellow(i) for i in even)
    # an op under 30% of its model has its Eff% yellow; one at or above it never
    low = [i for i in raw.index[raw["eff"] < LOW_EFF_PCT] if i in rows]
    high = [i for i in raw.index[raw["eff"] >= LOW_EFF_PCT + 1] if i in rows]
    assert low and high
    assert all(f"{raw.loc[i, 'eff']:.0f}%" in yellow(i) for i in low)
    assert not any(f"{raw.loc[i, 'eff']:.0f}%" in yellow(i) for i in high)


OFT = "tt-perf-report__bh20_oft.csv"  # 1,621 rows: 1,571 ops and 50 signposts


async def test_header_and_footer_count_the_same_rows():
    """The header counts ops, the footer's "row i/n" counts table rows, signposts included:
    the footer says how many of its rows are signposts, so the two add up (bh20_oft by hand:
    1,621 CSV rows, 50 of OP TYPE signpost)."""
    raw = pd.read_csv(real_dir() / OFT, usecols=["OP TYPE"])
    n_sp = int((raw["OP TYPE"] == "signpost").sum())
    n_ops = len(raw) - n_sp
    assert (n_ops, n_sp) == (1571, 50)
    app = open_app(Trace.load(real_dir() / OFT).view(Window("all")))
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        header = str(app.screen.query_one("#summary").render())
        status = str(app.screen.query_one("#status").render())
        assert f"{n_ops:,} ops" in header
        assert f"row 1/{len(raw):,} ({n_sp} signposts)" in status


async def test_footer_names_no_signposts_where_the_table_has_none():
    """wh_clip_encoder_2 has no signposts: "row 1/1,872", as many as the header's ops."""
    app = open_app(Trace.load(real_dir() / "tt-perf-report__wh_clip_encoder_2.csv")
                   .view(Window("all")))
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        assert "1,872 ops" in str(app.screen.query_one("#summary").render())
        status = str(app.screen.query_one("#status").render())
        assert "row 1/1,872" in status and "signpost" not in status


def test_one_clock_formatter_for_the_header_and_the_report():
    """A clock inferred as a median (1350.1 MHz, as a live capture's few rows give) reads the
    same in the TUI header and report's header: whole MHz."""
    from ttdash.report.single import ALL, head_lines
    from ttdash.tui.app import summary_text

    view = Trace.load(real_dir() / OPS).view(Window("all"))
    view.trace.clock_mhz = 1350.1
    head = str(summary_text(view).line1)
    report = "\n".join(head_lines(view, ALL))
    assert "1350 MHz" in head and "1350 MHz" in report
    assert "1350.1" not in head and "1350.1" not in report


def test_diff_says_how_many_matched_exactly():
    """`diff`'s Ops line names every kind of match, exact ones too, and they add up to the
    matched count: a trace against itself is all exact; wh_clip vs bh_clip mixes the three."""
    from cli_inproc import run_main

    dlv3 = str(real_dir() / "tt-perf-report__bh_p100_dlv3.csv")
    out = run_main("diff", dlv3, dlv3, "-f", "table").stdout
    assert "Ops: 387 matched: 387 exactly, 0 by attributes, 0 by op code only (0 moved)" in out
    out = run_main("diff", str(real_dir() / "tt-perf-report__wh_clip_encoder_2.csv"),
                   str(real_dir() / "tt-perf-report__bh_64_clip_encoder_1.csv"), "-f",
                   "table", "--allow-arch-mismatch").stdout
    line = next(ln for ln in out.splitlines() if ln.startswith("Ops: "))
    m = re.match(r"Ops: (\d+) matched: (\d+) exactly, (\d+) by attributes, (\d+) by op code "
                 r"only", line)
    assert m, line
    matched, exact, attrs, code = map(int, m.groups())
    assert matched == exact + attrs + code == 660 and exact and attrs and code
