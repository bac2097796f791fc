"""ttdash's numbers equal tt-perf-report 1.4.1's, row by row, on every real fixture."""

from __future__ import annotations

from collections import Counter

import pandas as pd
import pytest
from conftest import REPORT_FIXTURES, real_dir
from oracle import MODULE, compare, tt_perf_report

METRICS = ("device_time_us", "op_to_op_us", "dram_pct", "flops_pct", "total_pct", "bound",
           "op_text", "fidelity_desc")


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
    # The totals footer's overall DRAM roofline (printed to 0.1% and 1 GB/s)
    tot = r["view"].totals()
    if r["roofline"] is None:
        assert tot["dram_roofline_pct"] is None, tot
    else:
        pct, gbps = r["roofline"]
        assert round(tot["dram_roofline_pct"], 1) == pytest.approx(pct, abs=0.051), tot
        assert round(tot["dram_roofline_gbps"]) == pytest.approx(gbps, abs=0.51), tot


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
    r = compare(real_dir() / "tt-perf-report__bh_p100_dlv3.csv", tmp_path, True)
    config = r["joined"]["config"].fillna("")
    assert config.str.startswith("[ABH=").sum() == 46 and config.str.startswith("w=").sum() == 49
    assert r["joined"]["fidelity_desc"].str.contains(" => ").all()


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

    import pandas as pd

    from ttdash.model import Trace, Window

    src = real_dir() / "tt-perf-report__wh_clip_encoder_2.csv"
    df = pd.read_csv(src, dtype=str, keep_default_na=False)
    first_mm = int(df.index[df["OP CODE"].str.contains("Matmul")][0])
    df.loc[first_mm, "MATH FIDELITY"] = ""
    path = tmp_path / "blank_fidelity.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "o.csv"
    res = tt_perf_report([*MODULE, str(path), "--csv", str(out), "--arch", "wormhole",
                          "--no-summary"], [path], [(str(out), out)])
    assert res.returncode != 0 and "Unknown math fidelity" in res.stderr
    op = Trace.load(path).view(Window("all")).op_rows.set_index("id").loc[first_mm + 2]
    assert op["dram_pct"] > 0 and pd.isna(op["flops_pct"]) and op["bound"] == ""


# ---------------------------------------------------------------- advice and the totals footer

@pytest.mark.parametrize("name", REPORT_FIXTURES)
def test_advice_and_footer_match_tt_perf_report(name):
    """Advice (the ops each section lists, one entry per matmul bullet, the tracing saving) and
    the footer's device/host/signpost counts equal tt-perf-report's printed report (whole file)."""
    from collections import Counter

    from oracle import perf_report_printed

    from ttdash.model import Trace, Window
    from ttdash.model.analysis.advice import advice

    trace = Trace.load(real_dir() / name)
    view = trace.view(Window("all"))
    ref = perf_report_printed(real_dir() / name, trace.arch.perf_report_name, trace.trace_mode)
    tot = view.totals()
    assert (tot["device_ops"], tot["host_ops"], tot["signposts"]) == ref["footer"]
    got = advice(view.ops)
    assert [a.id for a in got if a.kind == "host"] == ref["host"]
    assert [a.id for a in got if a.kind == "gap"] == ref["gap"]
    saving = [a for a in got if a.kind == "gap_saving"]
    if ref["saving"] is None:
        assert saving == []
    else:
        (s,) = saving
        assert round(s.saving_us) == pytest.approx(ref["saving"][0], abs=1)
        assert round(s.saving_pct, 1) == pytest.approx(ref["saving"][1], abs=0.051)
    bullets = Counter(a.id for a in got if a.kind.startswith("matmul") and a.kind != "matmul_ok")
    ok = {a.id for a in got if a.kind == "matmul_ok"}
    assert {i: bullets.get(i, 0) for i in ref["matmul"]} == ref["matmul"]
    assert ok == {i for i, n in ref["matmul"].items() if n == 0}
    assert set(bullets) | ok == set(ref["matmul"])


def test_advice_comparison_is_not_vacuous():
    """The fixtures exercise every section: host fallbacks, gaps with a saving, matmul bullets
    of the FLOP and SLOW branches and "Optimized" (no fixture has a DRAM-bound matmul, nor a
    fidelity bullet asking for a lower fidelity: those are tested on built rows in
    test_rules)."""
    from ttdash.model import Trace, Window
    from ttdash.model.analysis.advice import advice

    kinds = Counter()
    for name in REPORT_FIXTURES:
        kinds.update(a.kind for a in advice(Trace.load(real_dir() / name).view(Window("all")).ops))
    assert kinds["host"] >= 781 and kinds["gap"] > 100 and kinds["gap_saving"] >= 5
    for k in ("matmul_ok", "matmul_grid", "matmul_in0_l1", "matmul_config_ok",
              "matmul_accuracy", "matmul_program_config"):
        assert kinds[k] > 0, (k, kinds)


# ---------------------------------------------------------------- tt-perf-report's row options

@pytest.mark.parametrize("name,flags", [
    ("tt-perf-report__wh_clip_encoder_2.csv", ("--id-range", "5-10")),
    ("tt-perf-report__wh_clip_encoder_2.csv", ("--id-range", "1,800-")),
    ("tt-perf-report__wh_clip_encoder_2.csv", ("--id-range", "-12")),
    (REPORT_FIXTURES[8], ("--no-host-ops",)),
    (REPORT_FIXTURES[8], ("--id-range", "100-900", "--no-host-ops")),
])
def test_row_options_match_tt_perf_report(name, flags, tmp_path):
    """--id-range (first row's gap dropped) and --no-host-ops (shares over what is left): the
    same rows and numbers, Total % included, as tt-perf-report with the same flags."""
    r = compare(real_dir() / name, tmp_path, ignore_signposts=True, flags=flags)
    assert r["ours"] == r["ref"] > 0
    for metric in METRICS:
        assert r["mismatch"][metric] == [], f"{metric} differs at IDs {r['mismatch'][metric][:10]}"
    if "--no-host-ops" in flags:
        assert not r["joined"]["is_host"].any()
    else:
        assert r["joined"]["op_to_op_us"].isna().iloc[0]  # the first op's gap is dropped


def test_several_reports_of_one_run_match_tt_perf_report(tmp_path):
    """Two reports (two hosts of one run): device ids offset per file, IDs numbered through,
    devices merged; every row equals tt-perf-report given the same two files."""
    a = real_dir() / "tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv"
    b = tmp_path / "host1.csv"
    b.write_bytes(a.read_bytes())
    r = compare([a, b], tmp_path, ignore_signposts=True)
    assert r["ours"] == r["ref"] > 0
    for metric in METRICS:
        assert r["mismatch"][metric] == [], f"{metric} differs at IDs {r['mismatch'][metric][:10]}"
    assert len(r["view"].trace.devices) == 16


# ---------------------------------------------------------------- the grouped summary

SUMMARY_FIXTURES = ["tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv",
                    "tt-perf-report__wh_clip_encoder_2.csv", "tt-perf-report__bh_p100_dlv3.csv",
                    REPORT_FIXTURES[8]]  # host ops


@pytest.mark.parametrize("group_by", ["memory", "op", "category"])
@pytest.mark.parametrize("name", SUMMARY_FIXTURES)
def test_summary_groups_match_tt_perf_report(name, group_by, tmp_path):
    """`report --summary --group-by X`: the groups of tt-perf-report's --summary-file CSV, with
    the same op counts, device time, share, category and FLOPs % statistics (it prints 2
    decimals)."""
    import numpy as np
    from oracle import perf_report_summary

    from ttdash.model import Trace, Window
    from ttdash.model.query import summary_groups

    trace = Trace.load(real_dir() / name)
    ours = summary_groups(trace.view(Window("all")).ops, group_by).set_index("name")
    ref = perf_report_summary(real_dir() / name, tmp_path / "s", trace.arch.perf_report_name,
                              trace.trace_mode, group_by).set_index("Op Code")
    assert sorted(ours.index) == sorted(ref.index)
    ref = ref.loc[ours.index]
    assert (ours["op_count"].to_numpy() == ref["Op Count"].to_numpy()).all()
    pairs = {"device_time_us": "Device Time Sum [μs]", "total_pct": "Total % [%]"}
    if group_by != "category":
        pairs |= {"flops_pct_min": "Min FLOPs [%]", "flops_pct_max": "Max FLOPs [%]",
                  "flops_pct_mean": "Mean FLOPs [%]", "flops_pct_std": "Std FLOPs [%]",
                  "flops_pct_weighted_mean": "Weighted Mean FLOPs [%]"}
        assert ours["category"].tolist() == ref["Op Category"].tolist()
    for mine, theirs in pairs.items():
        a = ours[mine].to_numpy(dtype="float64")
        b = pd.to_numeric(ref[theirs], errors="coerce").to_numpy(dtype="float64")
        assert (np.isnan(a) == np.isnan(b)).all(), (mine, ours.index[np.isnan(a) != np.isnan(b)])
        ok = np.isnan(a) | (np.abs(np.round(a, 2) - b) <= 0.0101)
        assert ok.all(), (mine, list(zip(ours.index[~ok], a[~ok], b[~ok]))[:5])
