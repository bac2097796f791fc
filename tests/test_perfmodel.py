"""Ops against the profiler's performance model (#34 items 1-2): efficiency, the bound of the
model, recoverable time and the ranking, each against a computation from the raw columns."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from cli_inproc import run_main
from conftest import REPORT_FIXTURES, real_dir
from hypothesis import given, settings
from hypothesis import strategies as st

from ttdash.model import Trace, Window
from ttdash.model.analysis.perfmodel import pm_columns, ranking, summarise

CLIP = "tt-perf-report__wh_clip_encoder_2.csv"


def _raw(name: str) -> pd.DataFrame:
    df = pd.read_csv(real_dir() / name, low_memory=False)
    for c in ("DEVICE KERNEL DURATION [ns]", "PM IDEAL [ns]", "PM COMPUTE [ns]",
              "PM BANDWIDTH [ns]"):
        df[c] = pd.to_numeric(df[c], errors="coerce") if c in df else np.nan
    return df


@pytest.mark.parametrize("name", [n for n in REPORT_FIXTURES if "EXCERPT" not in n])
def test_every_op_against_its_model_from_the_raw_columns(name):
    """Per op (by ID): efficiency = PM IDEAL / kernel duration, recoverable = the duration above
    the model, the larger of PM COMPUTE and PM BANDWIDTH names the bound; no model (blank, 0,
    the 1 ns placeholder), a host op, a signpost: all three blank."""
    raw = _raw(name)
    view = Trace.load(real_dir() / name).view(Window("all"), merge=False)
    ops = view.ops.set_index("id")
    d, i = raw["DEVICE KERNEL DURATION [ns]"], raw["PM IDEAL [ns]"]
    modelled = (i > 1) & (d > 0) & ~raw["OP CODE"].astype(str).str.startswith("(torch)")
    ids = ops.index.to_numpy()
    by_line = raw.assign(id=np.arange(len(raw)) + 2).set_index("id").loc[ids]  # ID = CSV line
    m = modelled.to_numpy()[ids - 2] & ~ops["corrupt"].to_numpy(dtype=bool) \
        & ~ops["is_signpost"].to_numpy(dtype=bool)
    eff = ops["pm_eff_pct"].to_numpy()
    assert np.isnan(eff[~m]).all()
    want = (by_line["PM IDEAL [ns]"] / by_line["DEVICE KERNEL DURATION [ns]"] * 100).to_numpy()
    np.testing.assert_allclose(eff[m], want[m], rtol=1e-12)
    rec = ops["recoverable_us"].to_numpy()
    want_rec = ((by_line["DEVICE KERNEL DURATION [ns]"] - by_line["PM IDEAL [ns]"])
                .clip(lower=0) / 1000).to_numpy()
    np.testing.assert_allclose(rec[m], want_rec[m], rtol=1e-12)
    bound = np.where(by_line["PM COMPUTE [ns]"] >= by_line["PM BANDWIDTH [ns]"], "compute",
                     "bandwidth")
    assert (ops["pm_bound"].to_numpy()[m] == bound[m]).all()


def test_clip_encoder_headline_figures():
    """wh_clip_encoder_2: 900 modelled ops, 38.2 ms of 63.2 ms device time above the model,
    the MinimalMatmulOps at about 19% of theirs (median) holding 78% of what is recoverable."""
    raw = _raw(CLIP)
    d, i = raw["DEVICE KERNEL DURATION [ns]"], raw["PM IDEAL [ns]"]
    m = (i > 1) & (d > 0)
    view = Trace.load(real_dir() / CLIP).view(Window("all"))
    s = summarise(view.op_rows)
    assert s.modelled_ops == int(m.sum()) == 900
    assert s.recoverable_us == pytest.approx(float((d - i)[m].clip(lower=0).sum()) / 1000)
    assert s.device_us == pytest.approx(float(d.sum()) / 1000)
    r = ranking(view.op_rows)
    mm = raw[m & (raw["OP CODE"] == "MinimalMatmulOp")]
    top = r.iloc[0]
    assert top["group"] == "MinimalMatmulOp" and top["ops"] == len(mm)
    assert top["median_eff_pct"] == pytest.approx(
        float((mm["PM IDEAL [ns]"] / mm["DEVICE KERNEL DURATION [ns]"] * 100).median()))
    assert r["recoverable_us"].sum() == pytest.approx(s.recoverable_us)
    assert r["recoverable_share_pct"].sum() == pytest.approx(100)
    # if every modelled op reached 70% of its model
    at = i[m] / 0.7
    assert s.target_saving_us == pytest.approx(float((d[m] - at).clip(lower=0).sum()) / 1000)


def test_report_leads_with_the_model_and_json_carries_it():
    run = run_main("report", str(real_dir() / CLIP), "--advice", "none")
    assert run.returncode == 0, run.describe()
    head = run.stdout.split("\n\n")[0]
    assert ("Model: 38.2 ms of 63.2 ms device time (60%) is above the profiler's performance "
            "model; MinimalMatmulOp holds 29.9 ms of it, at 19% of its model") in head
    section = run.stdout[run.stdout.index("Against the performance model"):]
    assert "900 of 1,872 device ops are modelled" in section
    assert "972 device ops have no model (unmodelled: not known to be fine)" in section
    doc = json.loads(run_main("report", str(real_dir() / CLIP), "-f", "json").stdout)
    pm = doc["performance_model"]
    assert pm["modelled_ops"] == 900 and pm["by_op_code"][0]["group"] == "MinimalMatmulOp"
    assert pm["headline"].startswith("38.2 ms of 63.2 ms")
    md = run_main("report", str(real_dir() / CLIP), "-f", "markdown").stdout
    assert "### Against the performance model" in md


@pytest.mark.parametrize("pm", ["drop", "1", "0", ""])
def test_a_trace_without_a_model_says_nothing_of_it(pm, tmp_path):
    """A real file with its PM columns removed, or holding only the placeholder (1 ns), zeros or
    blanks: no headline, no section, JSON's modelled_ops 0, every op unmodelled."""
    df = pd.read_csv(real_dir() / CLIP, dtype=str, keep_default_na=False)
    pm_cols = [c for c in df.columns if c.startswith("PM ")]
    df = df.drop(columns=pm_cols) if pm == "drop" else df.assign(**{c: pm for c in pm_cols})
    path = tmp_path / "no_model.csv"
    df.to_csv(path, index=False)
    run = run_main("report", str(path), "--advice", "none")
    assert run.returncode == 0, run.describe()
    assert "Model: " not in run.stdout and "Against the performance model" not in run.stdout
    doc = json.loads(run_main("report", str(path), "-f", "json").stdout)
    assert doc["performance_model"]["modelled_ops"] == 0
    assert doc["performance_model"]["device_ops"] == 1872


finite = st.floats(min_value=0, max_value=1e9, allow_nan=False)
maybe = st.one_of(st.just(float("nan")), st.just(0.0), st.just(1.0), finite)


@pytest.mark.filterwarnings("error::RuntimeWarning")  # absurd cells warn nothing on stderr
@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(finite, maybe, maybe, maybe, st.booleans()), min_size=1, max_size=40))
def test_recoverable_is_never_negative_and_the_ranking_adds_up(rows):
    dur, ideal, comp, bw, skip = (np.array(c) for c in zip(*rows))
    cols = pm_columns(dur.astype(float), ideal.astype(float), comp.astype(float),
                      bw.astype(float), skip.astype(bool))
    rec, eff = cols["recoverable_us"], cols["pm_eff_pct"]
    modelled = ~skip.astype(bool) & (ideal > 1) & (dur > 0)
    assert (np.isnan(eff) == ~modelled).all() and (np.isnan(rec) == ~modelled).all()
    assert (rec[modelled] >= 0).all()
    ops = pd.DataFrame({**cols, "raw_kernel_ns": dur, "device_time_us": dur / 1000,
                        "op_code": [f"Op{k % 3}" for k in range(len(dur))]})
    r = ranking(ops)
    summarise(ops)
    assert r["recoverable_us"].sum() == pytest.approx(np.nansum(rec))
    assert r["ops"].sum() == modelled.sum()
