"""Pairing a report with the `.logs` device log of the same run (#46 item 6): the log written
without tracy has no op names (every op is `op #<GLOBAL CALL COUNT>`), so the ops pair on their
call counts, which the report and the log share."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from conftest import run_ttdash

from ttdash.sim import cpp_device_rows, generate_ops, write_cpp_device_csv, write_report_csv


def _run(tmp_path, devices: int = 1, seed: int = 4):
    """A report and its `.logs/cpp_device_perf_report.csv` (OP NAME empty: no tracy)."""
    df = generate_ops(200, seed=seed, layers=2, signposts=False, devices=devices)
    report = write_report_csv(df, tmp_path / f"report_{devices}_{seed}.csv")
    rows = cpp_device_rows(df)
    rows["OP NAME"] = None
    log = write_cpp_device_csv(rows, tmp_path / f"log_{devices}_{seed}.csv")
    return report, log


@pytest.mark.parametrize("devices", [1, 2])
def test_report_and_its_log_pair_on_call_counts(tmp_path, devices):
    report, log = _run(tmp_path, devices)
    a, b = pd.read_csv(report), pd.read_csv(log)
    ops = a[a["OP TYPE"] != "signpost"]
    # what a careful engineer checks first: the same call counts and kernel totals
    assert sorted(ops["GLOBAL CALL COUNT"]) == sorted(b["GLOBAL CALL COUNT"])
    assert ops["DEVICE KERNEL DURATION [ns]"].sum() == b["DEVICE KERNEL DURATION [ns]"].sum()
    assert b["OP NAME"].isna().all()
    # merged devices, the log cannot say which ops are CCLs (no names: averaged in the report,
    # the slowest device in the log), so device time is compared per device
    extra = ["--per-device"] if devices > 1 else []
    for first, second in ((report, log), (log, report)):
        r = run_ttdash("diff", str(first), str(second), "-f", "json", *extra)
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        assert doc["match_rate"] == pytest.approx(1.0 if doc["match_rate"] <= 1 else 100.0)
        c = doc["counts"]
        assert c["added"] == c["removed"] == c["changed"] == 0
        assert c["matched"] == 200 * devices
        assert not any("match" in str(p).lower() for p in doc["problems"])
        assert doc["delta_pct"] == pytest.approx(0.0, abs=1e-9)
    text = run_ttdash("diff", str(report), str(log)).stdout
    assert "Not comparable" not in text and "match rate 100.0%" in text


def test_a_report_with_names_still_pairs_on_them(tmp_path):
    """Both sides named: the signature rule as before (a log with OP NAME filled pairs on op
    codes and shapes, not call counts): a report against another run's report of other ops
    does not match by its call counts."""
    report, _ = _run(tmp_path, seed=4)
    other, _ = _run(tmp_path, seed=9)
    doc = json.loads(run_ttdash("diff", str(report), str(other), "-f", "json").stdout)
    assert doc["counts"]["matched"] < 200
