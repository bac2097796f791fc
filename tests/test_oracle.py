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
