"""Core balance, grid use and dispatch (#34 item 3): the per-core skew (PER CORE MAX / AVG),
the share of the grid, the dispatch core's times, and the report's section, each against a
computation from the raw columns with pandas."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pandas as pd
import pytest
from cli_inproc import run_main
from conftest import REPORT_FIXTURES, real_dir
from hypothesis import given, settings
from hypothesis import strategies as st

from ttdash.format import fmt_us
from ttdash.model import Trace, Window
from ttdash.model.analysis import whyslow
from ttdash.model.analysis.imbalance import imbalance_columns
from ttdash.model.columns import LOW_GRID_PCT, SKEW_FLAG, column

OFT = "tt-perf-report__ops_perf_results_2025_09_18_11_39_20.csv"  # per-core times, 621 ops
SEG = "ttnn-visualizer__SEG_ENCODER_ops_perf_results_2025_02_16_18_11_10.csv"
MAX, AVG = ("DEVICE KERNEL DURATION PER CORE MAX [ns]", "DEVICE KERNEL DURATION PER CORE AVG [ns]")
CQ, GO = "DISPATCH TOTAL CQ CMD OP TIME [ns]", "DISPATCH GO SEND WAIT TIME [ns]"


def _by_id(name: str) -> pd.DataFrame:
    df = pd.read_csv(real_dir() / name, low_memory=False)
    return df.assign(id=np.arange(len(df)) + 2).set_index("id")


@pytest.mark.parametrize("name", [n for n in REPORT_FIXTURES if "EXCERPT" not in n])
def test_skew_and_grid_of_every_op_from_the_raw_columns(name):
    """core_skew = PER CORE MAX / AVG on device ops with both; grid_pct = CORE COUNT /
    AVAILABLE WORKER CORE COUNT x 100 (blank without that column); signposts, host ops and
    corrupt rows blank."""
    raw = _by_id(name)
    ops = Trace.load(real_dir() / name).view(Window("all"), merge=False).ops.set_index("id")
    r = raw.loc[ops.index]
    device = ~ops["is_signpost"].to_numpy(bool) & ~ops["is_host"].to_numpy(bool) \
        & ~ops["corrupt"].to_numpy(bool)
    mx = pd.to_numeric(r[MAX], errors="coerce").to_numpy() if MAX in r else np.full(len(r), np.nan)
    av = pd.to_numeric(r[AVG], errors="coerce").to_numpy() if AVG in r else np.full(len(r), np.nan)
    has = device & (mx > 0) & (av > 0)
    skew = ops["core_skew"].to_numpy()
    np.testing.assert_allclose(skew[has], (mx / av)[has], rtol=1e-12)
    assert np.isnan(skew[~has]).all()
    grid = ops["grid_pct"].to_numpy()
    if "AVAILABLE WORKER CORE COUNT" in r:
        want = (r["CORE COUNT"] / r["AVAILABLE WORKER CORE COUNT"] * 100).to_numpy()
        np.testing.assert_allclose(grid[device], want[device], rtol=1e-12)
    else:
        assert np.isnan(grid).all()
    assert np.isnan(grid[~device]).all()


def test_skewed_ops_and_time_lost_per_op_code_against_pandas():
    """The ops whose slowest core ran SKEW_FLAG x the average or more, per op code: count,
    device time, time lost to the spread (device time x (1 - AVG/MAX)), median and max skew;
    the per-op-code rows add up to the totals."""
    raw = _by_id(OFT)
    dev = raw[raw["OP TYPE"] == "tt_dnn_device"].copy()
    dev["skew"] = dev[MAX] / dev[AVG]
    dev["us"] = dev["DEVICE KERNEL DURATION [ns]"] / 1000
    flagged = dev[dev["skew"] >= SKEW_FLAG]
    assert 0 < len(flagged) < len(dev)
    b = whyslow.balance(Trace.load(real_dir() / OFT).view(Window("all")))
    assert b.per_core_ops == len(dev) == 621
    assert b.skewed_ops == len(flagged)
    assert b.lost_us == pytest.approx(float((flagged["us"] * (1 - 1 / flagged["skew"])).sum()))
    got = b.skewed.set_index("op_code")
    for code, rows in flagged.groupby(flagged["OP CODE"].str.split().str[0]):
        g = got.loc[code]
        assert g["ops"] == len(rows)
        assert g["device_us"] == pytest.approx(rows["us"].sum())
        assert g["median_skew"] == pytest.approx(rows["skew"].median())
        assert g["max_skew"] == pytest.approx(rows["skew"].max())
        assert g["first_id"] == rows.index.min()
    assert list(b.skewed["lost_us"]) == sorted(b.skewed["lost_us"], reverse=True)


def test_small_grid_against_pandas():
    """bh20_oft: ops on under LOW_GRID_PCT of the 20 available cores, per op code."""
    name = "tt-perf-report__bh20_oft.csv"
    raw = _by_id(name)
    dev = raw[raw["OP TYPE"] == "tt_dnn_device"]
    pct = dev["CORE COUNT"] / dev["AVAILABLE WORKER CORE COUNT"] * 100
    small = dev[pct < LOW_GRID_PCT]
    b = whyslow.balance(Trace.load(real_dir() / name).view(Window("all")))
    assert (b.grid_ops, b.small_ops, b.available_cores) == (len(dev), len(small), 20)
    assert b.small_us == pytest.approx(small["DEVICE KERNEL DURATION [ns]"].sum() / 1000)
    top = b.small_grid.iloc[0]
    by_code = small.groupby(small["OP CODE"].str.split().str[0])
    want = by_code["DEVICE KERNEL DURATION [ns]"].sum().sort_values(ascending=False)
    assert top["op_code"] == want.index[0]
    assert top["median_cores"] == by_code["CORE COUNT"].median()[want.index[0]]


def test_dispatch_times_when_the_capture_has_them(tmp_path):
    """A real file whose (empty) DISPATCH columns are filled: each op's times in us, the
    section's totals and its op code with the most dispatch time."""
    df = pd.read_csv(real_dir() / OFT, dtype=str, keep_default_na=False)
    dev = (df["OP TYPE"] == "tt_dnn_device").to_numpy()
    rng = np.random.default_rng(3)
    cq = rng.integers(500, 5000, len(df))
    go = rng.integers(100, 900, len(df))
    df[CQ] = np.where(dev, cq.astype(str), "")
    df[GO] = np.where(dev, go.astype(str), "")
    p = tmp_path / "dispatch.csv"
    df.to_csv(p, index=False)
    view = Trace.load(p).view(Window("all"))
    ops = view.op_rows
    np.testing.assert_allclose(ops["dispatch_cq_us"], cq[ops["id"] - 2] / 1000)
    np.testing.assert_allclose(ops["go_wait_us"], go[ops["id"] - 2] / 1000)
    b = whyslow.balance(view)
    assert b.dispatch["cq_us"].sum() == pytest.approx(cq[dev].sum() / 1000)
    first = df[dev].assign(t=cq[dev] + go[dev]).groupby(
        df[dev]["OP CODE"].str.split().str[0])["t"].sum().idxmax()
    assert b.dispatch.iloc[0]["op_code"] == first
    run = run_main("report", str(p), "--advice", "none", "--ignore-signposts")
    assert f"command-queue time {fmt_us(b.dispatch['cq_us'].sum())}, go-signal wait " \
        f"{fmt_us(go[dev].sum() / 1000)} over 621 ops; most: {first}" in run.stdout


def test_report_section_and_json():
    run = run_main("report", str(real_dir() / SEG), "--advice", "none")
    assert run.returncode == 0, run.describe()
    section = run.stdout[run.stdout.index("Core balance and grid use:"):]
    assert section.startswith("Core balance and grid use: 398 ops have per-core times; 6 ops run "
                              "their slowest core at 1.5x the average or more")
    assert "HaloDeviceOperation (first at op 782)" in section
    doc = json.loads(run_main("report", str(real_dir() / SEG), "-f", "json").stdout)
    assert doc["core_balance"]["skewed_ops"] == 6 and doc["core_balance"]["skew_flag"] == 1.5
    assert "core_skew" in doc["ops"][0] and "grid_pct" in doc["ops"][0]
    out = run_main("report", str(real_dir() / SEG), "-f", "csv").stdout
    head = next(csv.reader(io.StringIO(out)))
    assert {"core_skew", "grid_pct", "dispatch_cq_us", "go_wait_us"} <= set(head)


def test_skew_filter_and_colour_come_from_the_spec():
    from ttdash.model.filters import Filter

    ops = Trace.load(real_dir() / OFT).view(Window("all")).op_rows
    hit = Filter("skew>=1.5").mask(ops)
    assert hit.sum() == (ops["core_skew"] >= 1.5).sum() > 0
    assert column("core_skew").severity(1.6) is not None and column("core_skew").severity(1.2) \
        is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1e9), st.floats(0, 1e9), st.booleans()), min_size=1,
                max_size=30))
def test_skew_is_never_under_one_when_the_max_is_the_max(rows):
    """max >= avg > 0 gives a skew >= 1, lost time in [0, device time]."""
    mx, av, skip = (np.array(c) for c in zip(*rows))
    mx = np.maximum(mx, av)
    n = len(mx)
    cols = imbalance_columns(mx, av, np.ones(n), np.ones(n), np.full(n, np.nan),
                             np.full(n, np.nan), skip.astype(bool))
    s = cols["core_skew"]
    ok = ~skip.astype(bool) & (av > 0) & (mx > 0)
    assert (np.isnan(s) == ~ok).all() and (s[ok] >= 1).all()
    assert (1 - 1 / s[ok] >= 0).all() and (1 - 1 / s[ok] <= 1).all()
