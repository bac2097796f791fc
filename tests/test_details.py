"""The op details (enter): a merged multi-device op's kernel time over its devices, long values cut
with the count of what is left out and shown whole with `x`, the performance-model section."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import real_dir
from test_tui_open import statics_text, table

from ttdash.format import fmt_us
from ttdash.model import Trace, Window
from ttdash.tui.app import TraceScreen, open_app
from ttdash.tui.details import LONG_VALUE, DetailScreen

DEEPSEEK = "tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv"
SIZE = (100, 40)


def test_merged_ops_carry_min_median_max_over_devices():
    """Independent of the merge code: the file's device ops of each device in order, the k-th of
    every device one op (the DeepSeek capture runs the same ops on its 8 devices in lockstep)."""
    path = real_dir() / DEEPSEEK
    raw = pd.read_csv(path)
    dev = raw[raw["OP TYPE"] == "tt_dnn_device"].copy()
    dev["k"] = dev.groupby("DEVICE ID").cumcount()
    per_op = dev.groupby("k")["DEVICE KERNEL DURATION [ns]"]
    want = pd.DataFrame({"n": per_op.count(), "min": per_op.min(), "median": per_op.median(),
                         "max": per_op.max()}) / [1, 1000, 1000, 1000]
    ops = Trace.load(path).view(Window()).ops
    ops = ops[ops["dev_n"].notna()].reset_index(drop=True)
    assert len(ops) == len(want) == 26
    assert (ops["dev_n"].to_numpy() == want["n"].to_numpy()).all() and want["n"].min() == 8
    for k in ("min", "median", "max"):
        assert np.allclose(ops[f"dev_{k}_us"].to_numpy(), want[k].to_numpy()), k
    # the row is the slowest device's, a CCL op's the mean over its devices
    ccl = ops["dev_mean"].to_numpy(dtype=bool)
    assert ccl.sum() >= 2 and ops.loc[ccl, "op_code"].str.contains("AllGather|ReduceScatter").all()
    assert np.allclose(ops.loc[~ccl, "device_time_us"], ops.loc[~ccl, "dev_max_us"])
    assert (ops.loc[ccl, "device_time_us"] < ops.loc[ccl, "dev_max_us"]).all()
    # --per-device: one row per device, nothing merged, no spread
    assert "dev_n" not in Trace.load(path).view(Window(), merge=False).ops.columns


async def _details_of(app, pilot, pick) -> DetailScreen:
    t = table(app)
    ids = [int(i) for i in app.screen.view.ops["id"].to_numpy()[t.rows]]
    t.cursor = ids.index(pick)  # the row, as the cursor keys would leave it
    await pilot.pause()
    assert t.current_id() == pick
    await pilot.press("enter")
    await pilot.pause()
    assert isinstance(app.screen, DetailScreen)
    return app.screen


async def test_details_of_a_merged_op_show_its_devices():
    view = Trace.load(real_dir() / DEEPSEEK, columns="all").view(Window())
    ops = view.ops
    ccl = ops[ops["dev_mean"].fillna(False).astype(bool)].iloc[0]
    app = open_app(view)
    async with app.run_test(size=SIZE) as pilot:
        text = statics_text(await _details_of(app, pilot, int(ccl["id"])))
    assert "Devices" in text and "Devices with a valid time  8" in text
    spread = " / ".join(fmt_us(ccl[f"dev_{k}_us"]) for k in ("min", "median", "max"))
    assert spread in text, (spread, text[text.index("Devices"):][:300])
    assert "the mean over devices (a CCL op)" in text


@pytest.mark.parametrize("name", ["tt-perf-report__bh20_oft.csv"])
async def test_long_values_are_cut_with_a_count_and_x_shows_them_whole(name):
    view = Trace.load(real_dir() / name, columns="all").view(Window())
    raw = pd.read_csv(real_dir() / name, dtype=str, keep_default_na=False)
    raw["ID"] = np.arange(len(raw)) + 2  # tt-perf-report's ID: the CSV line
    col = "DATA MOVEMENT KERNEL SOURCE"
    raw = raw[raw["ID"].isin(view.ops["id"])]  # rows the merged table shows
    lengths = raw[col].str.len()
    row = raw.loc[lengths.idxmax()]
    value = str(row[col])
    assert len(value) > LONG_VALUE
    app = open_app(view)
    async with app.run_test(size=(200, 50)) as pilot:
        screen = await _details_of(app, pilot, int(row["ID"]))
        cut = statics_text(screen)
        left = len(value) - LONG_VALUE
        assert f"… (+{left:,} characters: x shows them)" in cut
        assert value[-40:] not in cut.replace("\n", "")
        await pilot.press("x")
        await pilot.pause()
        whole = statics_text(app.screen).replace("\n", "")
        assert "x shows them" not in whole
        # folded over lines, never cut: the value's end is there
        assert value[-40:].replace(" ", "") in whole.replace(" ", "")
        await pilot.press("x")
        await pilot.pause()
        assert "x shows them" in statics_text(app.screen)
        await pilot.press("escape")
        assert isinstance(app.screen, TraceScreen)


async def test_details_say_unmodelled_and_show_the_models_figures():
    view = Trace.load(real_dir() / "tt-perf-report__wh_clip_encoder_2.csv",
                      columns="all").view(Window())
    ops = view.ops
    modelled = ops[ops["pm_eff_pct"].notna()].sort_values("recoverable_us").iloc[-1]
    app = open_app(view)
    async with app.run_test(size=SIZE) as pilot:
        text = statics_text(await _details_of(app, pilot, int(modelled["id"])))
    model = text[text.index("Performance model"):][:400]
    assert f"{modelled['pm_eff_pct']:.1f}%" in model and "Recoverable" in model
    bh = Trace.load(real_dir() / "tt-perf-report__bh20_oft.csv", columns="all").view(Window())
    unmodelled = bh.ops[bh.ops["pm_eff_pct"].isna() & bh.ops["pm_ideal_ns"].notna()
                        & bh.ops["device_time_us"].notna()].iloc[0]
    app = open_app(bh)
    async with app.run_test(size=SIZE) as pilot:
        text = statics_text(await _details_of(app, pilot, int(unmodelled["id"])))
    assert "unmodelled: the profiler's model has no time for this op" in text
