"""ttdash's numbers equal tt-perf-report 1.4.1's, row by row, on every real fixture."""

from __future__ import annotations

import pytest
from conftest import REPORT_FIXTURES, real_dir
from oracle import compare

METRICS = ("device_time_us", "op_to_op_us", "dram_pct", "flops_pct", "total_pct", "bound")


@pytest.mark.parametrize("window", ["default", "all"])
@pytest.mark.parametrize("name", REPORT_FIXTURES)
def test_matches_tt_perf_report(name, window, tmp_path):
    r = compare(real_dir() / name, tmp_path, ignore_signposts=(window == "all"))
    assert r["ours"] == r["ref"], "different row counts"
    joined = r["joined"]
    assert joined["op_code"].notna().all() and joined["OP Code"].notna().all(), \
        "an ID is present in one tool's output only"
    for metric in METRICS:
        assert r["mismatch"][metric] == [], f"{metric} differs at IDs {r['mismatch'][metric][:10]}"


def test_per_device_matches(tmp_path):
    r = compare(real_dir() / "tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv", tmp_path,
                ignore_signposts=True, merge=False)
    assert r["ours"] == r["ref"] == 208
    assert all(v == [] for v in r["mismatch"].values())


def test_comparison_is_not_vacuous(tmp_path):
    """The biggest files really carry the figures compared (a join of blanks proves nothing)."""
    r = compare(real_dir() / "tt-perf-report__wh_clip_encoder_2.csv", tmp_path, True)
    j = r["joined"]
    assert j["device_time_us"].notna().sum() == 1872
    assert j["dram_pct"].notna().sum() > 500 and j["flops_pct"].notna().sum() > 500
    r = compare(real_dir() / "tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv", tmp_path, True)
    assert set(r["joined"]["bound"]) >= {"FLOP", "SLOW"}
    r = compare(real_dir() / REPORT_FIXTURES[8], tmp_path, True)
    assert (r["joined"]["bound"] == "HOST").sum() == 781


# ---------------------------------------------------------------- known differences (README)

def test_difference_no_device_arch_column(tmp_path):
    """tt-perf-report assumes Wormhole when DEVICE ARCH is absent; this file ran on Blackhole
    (1350 MHz clock), so its DRAM % is computed against 288 GB/s instead of 512 GB/s."""
    import numpy as np
    from oracle import perf_report_csv

    from ttdash.model import Trace, Window

    path = real_dir() / "tt-perf-report__ops_perf_results_2025_09_18_11_39_20.csv"
    ours = Trace.load(path).view(Window("all")).op_rows.set_index("id")
    assert Trace.load(path).arch.name == "blackhole_p150"
    ref = perf_report_csv(path, tmp_path / "r.csv", arch=None, tracing=False,
                          ignore_signposts=True).set_index("ID")
    both = ours["dram_pct"].dropna().index.intersection(ref["DRAM %"].dropna().index)
    assert len(both) >= 5
    ratio = ref.loc[both, "DRAM %"].to_numpy(float) / ours.loc[both, "dram_pct"].to_numpy(float)
    assert np.allclose(ratio, 512 / 288, rtol=1e-3)


def test_difference_blank_math_fidelity(tmp_path):
    """tt-perf-report raises on a matmul with a blank MATH FIDELITY; ttdash reports the op with
    its DRAM figures and leaves FLOPs % (which needs the fidelity) blank."""
    import subprocess
    import sys

    import pandas as pd

    from ttdash.model import Trace, Window

    src = real_dir() / "tt-perf-report__wh_clip_encoder_2.csv"
    df = pd.read_csv(src, dtype=str, keep_default_na=False)
    first_mm = int(df.index[df["OP CODE"].str.contains("Matmul")][0])
    df.loc[first_mm, "MATH FIDELITY"] = ""
    path = tmp_path / "blank_fidelity.csv"
    df.to_csv(path, index=False)
    res = subprocess.run([sys.executable, "-m", "tt_perf_report.perf_report", str(path), "--csv",
                          str(tmp_path / "o.csv"), "--arch", "wormhole", "--no-summary"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode != 0 and "Unknown math fidelity" in res.stderr
    op = Trace.load(path).view(Window("all")).op_rows.set_index("id").loc[first_mm + 2]
    assert op["dram_pct"] > 0 and pd.isna(op["flops_pct"]) and op["bound"] == ""
