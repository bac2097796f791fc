"""The diff screen: Pilot tests of its keys, snapshots, and the installed binary in tmux."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import real_dir
from tmux import Tmux, ttdash_bin

from ttdash.model import Trace, Window
from ttdash.model.compare.diff import diff_traces
from ttdash.tui.diffview import DiffDetailScreen, DiffScreen, DiffTable, diff_app
from ttdash.tui.widgets import HelpScreen, PromptScreen

WH = "tt-perf-report__wh_clip_encoder_2.csv"
BH = "tt-perf-report__bh_64_clip_encoder_1.csv"


def load(name: str):
    return Trace.load(real_dir() / name, columns="all").view(Window("all"))


def slowed_copy(tmp_path, name: str, ids: list[int], factor: float):
    """The fixture with the given ops (by ID = line number) made `factor` times slower."""
    df = pd.read_csv(real_dir() / name, dtype=str, keep_default_na=False)
    col = "DEVICE KERNEL DURATION [ns]"
    for i in ids:
        df.loc[i - 2, col] = str(int(float(df.loc[i - 2, col]) * factor))
    out = tmp_path / f"slow_{name}"
    df.to_csv(out, index=False)
    return out


async def test_regressions_navigation_and_details(tmp_path):
    slow = [10, 400, 1500]
    cand = slowed_copy(tmp_path, WH, slow, 1.5)
    result = diff_traces(load(WH), Trace.load(cand, columns="all").view(Window("all")))
    app = diff_app(result)
    async with app.run_test(size=(120, 36)) as pilot:
        t = app.screen.query_one(DiffTable)
        assert len(t.rows) == 1872
        await pilot.press("o")  # the pairs in trace order: n walks them down the file
        await pilot.press("n")
        assert t.current_row()["candidate_id"] == 10
        await pilot.press("n", "n")
        assert t.current_row()["candidate_id"] == 1500
        await pilot.press("n")  # wraps around
        assert t.current_row()["candidate_id"] == 10
        await pilot.press("N")
        assert t.current_row()["candidate_id"] == 1500
        assert t.current_row()["delta_pct"] == pytest.approx(50.0, abs=0.1)
        await pilot.press("t")
        assert isinstance(app.screen, PromptScreen)
        app.screen.query_one("Input").value = "60"
        await pilot.press("enter")
        assert app.screen.threshold == 60
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, DiffDetailScreen)
        titles = [s[0] for s in app.screen.sides]
        assert titles[0].startswith("A (baseline)") and titles[1].startswith("B (candidate)")
        assert all(op is not None and raw is not None for _, op, raw in app.screen.sides)
        sides = list(app.screen.query("VerticalScroll"))
        first = app.focused
        await pilot.press("tab")  # the other side
        await pilot.pause()
        assert app.focused is not first and app.focused in sides
        # long values (the kernel sources) are cut with a count; x shows them on both sides
        from test_tui_open import statics_text
        assert statics_text(app.screen).count("x shows them") >= 2
        await pilot.press("x")
        await pilot.pause()
        assert "x shows them" not in statics_text(app.screen)
        await pilot.press("escape")
        assert isinstance(app.screen, DiffScreen)


async def test_filter_sort_group_help_wh_vs_bh():
    app = diff_app(diff_traces(load(WH), load(BH)))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        t = screen.query_one(DiffTable)
        await pilot.press("slash", *"status:removed", "enter")
        st = screen.frame["status"].to_numpy()[t.rows]
        assert len(st) == screen.result.counts["removed"] and set(st) == {"removed"}
        await pilot.press("escape")
        assert len(t.rows) == len(screen.frame)
        while screen.sort_key != "delta_pct":
            await pilot.press("greater_than_sign")
        d = screen.frame["delta_pct"].to_numpy()[t.rows]
        d = d[~np.isnan(d)]
        assert (np.diff(d) <= 0).all() and len(d) > 100
        await pilot.press("2")
        await pilot.pause()
        groups = screen.query_one("#groups")
        assert groups.row_count == len(screen.result.by_op_code)
        await pilot.press("1", "question_mark")
        assert isinstance(app.screen, HelpScreen)
        ids = {r[2] for r in app.screen.rows}
        assert {"ttdash.next_regression", "ttdash.prev_regression", "ttdash.signpost_next"} <= ids


async def test_region_navigation():
    a = load("tt-perf-report__bh20_oft.csv")
    result = diff_traces(a, a)
    app = diff_app(result)
    async with app.run_test(size=(120, 36)) as pilot:
        t = app.screen.query_one(DiffTable)
        region = app.screen.frame["region"].to_numpy()
        starts = [i for i in range(1, len(region)) if region[i] != region[i - 1]]
        if region[0] > 0:
            starts.insert(0, 0)
        assert t.cursor == starts[0] == 0  # the first rows already begin a region
        await pilot.press("]", "]")
        assert t.cursor == starts[2] and t.current_row()["region_label"]
        await pilot.press("[")
        assert t.cursor == starts[1]
        assert result.counts["matched"] == len(a.op_rows) and result.counts["added"] == 0


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_diff_snapshot(snap_compare, size):
    assert snap_compare(diff_app(diff_traces(load(WH), load(BH))), terminal_size=size,
                        press=["n"])


def test_diff_in_a_real_terminal(tmp_path):
    cand = slowed_copy(tmp_path, WH, [300], 2.0)
    with Tmux([ttdash_bin(), "diff", str(real_dir() / WH), str(cand)], width=100,
              height=30) as t:
        # Device time +0.10%: one op 2x slower, the largest change: the first row.
        screen = t.wait_for(lambda s: "regression ≥ 5%" in s and "1,872 ops" in s
                            and "+0.10%" in s and "sort: Δ time ↓" in s)
        first = next(ln for ln in screen.splitlines() if "Op code" in ln)
        first = screen.splitlines()[screen.splitlines().index(first) + 1]
        assert "+100.0%" in first and "row 1/1,872" in screen
        t.send("o", "n")  # in trace order, n finds it at its place
        t.wait_for(lambda s: "row 299/1,872" in s and "+100.0%" in s)
        t.send("Enter")
        t.wait_for(lambda s: "B (candidate)" in s and "A (baseline)" in s)
        t.send("Escape")
        t.wait_text("row 299/1,872")
        t.send("q")
        assert t.exit_status() == 0


async def test_diff_export_markdown_and_csv(tmp_path):
    app = diff_app(diff_traces(load(WH), load(BH)))
    async with app.run_test(size=(120, 36)) as pilot:
        for name in ("d.md", "d.csv"):
            await pilot.press("e")
            app.screen.query_one("Input").value = str(tmp_path / name)
            await pilot.press("enter")
            await pilot.pause()
        md = (tmp_path / "d.md").read_text()
        assert md.startswith("## ttdash diff") and "| Wall (device + all gaps) | 16.69 s | 9.44 s |" in md
        lines = (tmp_path / "d.csv").read_text().splitlines()
        assert lines[0].startswith('"baseline_id","candidate_id","op_code"')
        assert len(lines) == 1 + 1872  # every pair: 660 matched + 1212 removed


def hifi2_baseline(tmp_path):
    """wh_clip_encoder_2 with its matmuls at HiFi2 (column and ATTRIBUTES) and 40% faster: the
    real file is then a candidate that moved them to HiFi4 (cause "fidelity HiFi2 -> HiFi4")."""
    df = pd.read_csv(real_dir() / WH, dtype=str, keep_default_na=False)
    mm = df["OP CODE"] == "MinimalMatmulOp"
    df.loc[mm, "MATH FIDELITY"] = "HiFi2"
    df.loc[mm, "ATTRIBUTES"] = df.loc[mm, "ATTRIBUTES"].str.replace(
        "math_fidelity=HiFi4", "math_fidelity=HiFi2", regex=False)
    col = "DEVICE KERNEL DURATION [ns]"
    df.loc[mm, col] = (df.loc[mm, col].astype(float) * 0.6).round().astype(int).astype(str)
    out = tmp_path / "hifi2.csv"
    df.to_csv(out, index=False)
    return Trace.load(out, columns="all").view(Window("all"))


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
async def test_cause_column_at_80_and_200_columns(tmp_path, size):
    """The Cause column (as `diff -f table` prints on every changed row) is on screen at 80 and
    200 columns: the cursor's row (the largest regression, a HiFi2 -> HiFi4 matmul) shows its
    cause, cut with "…" when narrow; a row whose pair did not change shows none."""
    result = diff_traces(hifi2_baseline(tmp_path), load(WH))
    causes = result.pairs["cause"].reset_index(drop=True)
    app = diff_app(result)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        t = app.screen.query_one(DiffTable)
        cols = [c.key for c in t.visible_columns()]
        assert "cause" in cols
        header = "".join(seg.text for seg in t.render_line(0))
        assert "Cause" in header
        x = sum(w + 1 for c, w in t._layout()[:cols.index("cause")])
        w = dict((c.key, w) for c, w in t._layout())["cause"]
        seen = 0
        for y in range(1, t.size.height):
            pos = int(t.scroll_offset.y) + y - 1
            if pos >= len(t.rows):
                break
            line = "".join(seg.text for seg in t.render_line(y))
            cell = line[x:x + w].rstrip()
            want = causes.iloc[int(t.rows[pos])]
            if not isinstance(want, str):
                assert cell == ""
                continue
            assert want == cell or (cell.endswith("…") and want.startswith(cell[:-1])), \
                (cell, want)
            seen += "fidelity HiFi2 -> HiFi4".startswith(cell.rstrip("…")) or \
                cell.startswith("fidelity HiFi2 -> HiFi4")
        assert seen >= 5
        if size[0] >= 200:  # wide: the whole cause
            assert "fidelity HiFi2 -> HiFi4" in "".join(seg.text for seg in t.render_line(1))
