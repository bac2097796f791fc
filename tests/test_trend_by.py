"""Batch size (#39 item 5): `ttdash history trend --by LABEL` over a store of runs added with
`--label batch=N` (one row per value, device time per sample, per op code), its JSON schema,
and the history TUI's trend view plotting it (`b`)."""

from __future__ import annotations

import json
from datetime import timedelta

import jsonschema
import numpy as np
import pandas as pd
import pytest
from conftest import real_dir, run_ttdash, screen_text, wait_until
from history_fixture import CLIP, DURATION, T0, add_run, scaled_copy

from ttdash.history import record
from ttdash.history.store import Store
from ttdash.schemas import load as load_schema
from ttdash.tui.history import HistoryScreen, TrendScreen, history_app

#: (batch, device-time factor): four batch sizes, batch 8 twice (its row is their median)
RUNS = [(1, 1.0), (2, 1.6), (4, 2.8), (8, 5.0), (8, 5.4)]
OP = "MinimalMatmulOp"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A store of the clip trace scaled per batch size, plus one run without a batch label.
    (store dir, {csv path: batch})."""
    real_dir()
    root = tmp_path_factory.mktemp("batches")
    st = Store.open(str(root / "store"))
    paths = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(record, "default_labels", lambda env=None: {"machine": "lab1"})
        for i, (batch, factor) in enumerate(RUNS):
            p = scaled_copy(CLIP, root / f"b{batch}_{factor:g}.csv", factor)
            add_run(st, p, T0 + timedelta(hours=i), {"batch": str(batch)})
            paths[p] = batch
        other = scaled_copy(CLIP, root / "nolabel.csv", 0.5)
        add_run(st, other, T0 + timedelta(hours=9), {"model": "clip"})
    return root / "store", paths


def independent(paths: dict, op: str | None = None) -> dict[int, float]:
    """Device time per sample per batch, from the CSVs' raw kernel durations (median over the
    runs of a batch)."""
    per: dict[int, list[float]] = {}
    for p, batch in paths.items():
        df = pd.read_csv(p, low_memory=False)
        if op:
            df = df[df["OP CODE"] == op]
        per.setdefault(batch, []).append(df[DURATION].sum() / 1000 / batch)
    return {b: float(np.median(v)) for b, v in per.items()}


def test_trend_by_batch_rows(store):
    root, paths = store
    r = run_ttdash("history", "--store", str(root), "trend", "--by", "batch", "-f", "json")
    assert r.returncode == 0, r.stderr
    assert "1 run(s) without a numeric batch label left out" in r.stderr
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, load_schema("history-trend"))
    rows = doc["by_values"]
    assert [row["samples"] for row in rows] == [1, 2, 4, 8]
    assert [row["runs"] for row in rows] == [1, 1, 1, 2]
    assert len(doc["runs"]) == 5 and doc["by"] == "batch"
    want = independent(paths)
    for row in rows:
        assert row["device_us_per_sample"] == pytest.approx(want[row["samples"]], rel=1e-6)
        assert row["device_time_us"] == pytest.approx(want[row["samples"]] * row["samples"],
                                                      rel=1e-6)
    first = rows[0]["device_us_per_sample"]
    assert rows[3]["vs_first_pct"] == pytest.approx((want[8] / first - 1) * 100, rel=1e-6)
    mm = independent(paths, OP)
    assert [row["op_codes"][OP] for row in rows] == pytest.approx([mm[b] for b in (1, 2, 4,
                                                                                   8)], rel=1e-6)


def test_trend_by_batch_one_op_code_and_the_table(store):
    root, paths = store
    r = run_ttdash("history", "--store", str(root), "trend", "--by", "batch", "--op", OP,
                   "-f", "json")
    rows = json.loads(r.stdout)["by_values"]
    mm = independent(paths, OP)
    assert [row["device_us_per_sample"] for row in rows] == pytest.approx(
        [mm[b] for b in (1, 2, 4, 8)], rel=1e-6)
    assert all(row["op_codes"] == {} for row in rows)
    table = run_ttdash("history", "--store", str(root), "trend", "--by", "batch").stdout
    lines = table.splitlines()
    assert lines[0].startswith("Trend of whole runs by batch: 4 values from 5 runs")
    assert lines[1].split()[:6] == ["batch", "Runs", "Ops", "Device", "Device/sample",
                                    "Steady/sample"]
    assert f"{OP}/sample" in lines[1]
    assert [ln.split()[0] for ln in lines[2:]] == ["1", "2", "4", "8"]
    csv = run_ttdash("history", "--store", str(root), "trend", "--by", "batch", "-f",
                     "csv").stdout
    head = csv.splitlines()[0].split(",")
    assert head[:3] == ["samples", "runs", "ops"] and f"op:{OP}" in head


def test_trend_by_a_label_no_run_has_numerically(store):
    root, _ = store
    r = run_ttdash("history", "--store", str(root), "trend", "--by", "model")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "no run in the selection has a numeric label 'model'" \
        in r.stderr


async def test_history_trend_view_plots_by_batch(store, monkeypatch):
    root, paths = store
    monkeypatch.chdir(root.parent)
    app = history_app(Store.open("store"))
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen)
                         and app.screen.loaded)
        await pilot.pause()
        await pilot.press("down")  # the newest run has no batch label: the one before has 8
        await pilot.press("t")
        await pilot.pause()
        trend = app.screen
        assert isinstance(trend, TrendScreen) and trend.by is None
        await pilot.press("right")
        while trend.op_code != OP:
            await pilot.press("right")
        await pilot.press("b")
        await pilot.pause()
        assert trend.by == "batch"
        text, _ = screen_text(app)
        assert f"By batch · {OP}" in text and "4 values from 5 runs" in text
        mm = independent(paths, OP)
        line = trend.by_points  # what the plot was given
        assert [x for x, _ in line] == [1, 2, 4, 8]
        assert [y for _, y in line] == pytest.approx([mm[b] for b in (1, 2, 4, 8)], rel=1e-6)
        assert "batch=8" in text
        await pilot.press("b")  # no other numeric label: back to the runs over time
        await pilot.pause()
        assert trend.by is None and "Trend " in screen_text(app)[0]
