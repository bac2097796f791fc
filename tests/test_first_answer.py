"""`report`'s first answer (#33 items 2-5): --top ranks by device time, the table ends with
where the time goes, the advice is grouped to a screenful (JSON keeps every entry), and the
tracing saving says how much of it is host pauses tracing cannot remove. Run in-process."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from cli_inproc import run_main
from conftest import real_dir

SEG = "ttnn-visualizer__SEG_ENCODER_ops_perf_results_2025_02_16_18_11_10.csv"
OFT = "tt-perf-report__bh20_oft.csv"


def _report(*args: str) -> str:
    run = run_main("report", *args)
    assert run.returncode == 0, run.describe()
    return run.stdout


def _raw(name: str) -> pd.DataFrame:
    """The file as pandas reads it, with nothing of ttdash: device time in us per row."""
    df = pd.read_csv(real_dir() / name, low_memory=False)
    df["us"] = pd.to_numeric(df["DEVICE KERNEL DURATION [ns]"], errors="coerce") / 1000
    return df


def test_top_ranks_by_device_time_not_by_the_pauses_before_ops():
    """SEG has 53 s of host pauses around 5 ms of device time: ranked by share of wall time the
    top 5 are ops that followed pauses; by default they are the five longest kernels."""
    raw = _raw(SEG)
    heaviest = sorted(raw["us"].dropna().nlargest(5).round(6).tolist(), reverse=True)
    doc = json.loads(_report(str(real_dir() / SEG), "-f", "json", "--top", "5"))
    assert [round(o["device_time_us"], 6) for o in doc["ops"]] == pytest.approx(heaviest)
    by_share = json.loads(_report(str(real_dir() / SEG), "-f", "json", "--top", "5",
                                  "--rank-by", "share"))
    assert max(o["device_time_us"] for o in by_share["ops"]) < heaviest[-1]
    table = _report(str(real_dir() / SEG), "--top", "5", "--advice", "none")
    assert "Shown: the top 5 of 1,179 ops by device time, largest first" in table


def test_table_ends_with_where_the_time_goes():
    """The groups (op code and input 0 memory) with their share of device time, largest first,
    the rest counted, then the time around the device time; their shares add up to 100%."""
    from ttdash.model import Trace, Window
    from ttdash.model.query import summary_groups

    out = _report(str(real_dir() / SEG), "--advice", "none")
    tail = out[out.index("Where the time goes"):].splitlines()
    tail = tail[:next(k for k, line in enumerate(tail) if line.startswith("Around it")) + 1]
    rows = [line for line in tail[1:] if line.strip().endswith(")") and "% " in line]
    shares = [float(line.split("%")[0]) for line in rows]
    groups = summary_groups(Trace.load(real_dir() / SEG).view(Window("all")).ops, "memory")
    top = groups[groups["device_time_us"] > 0].head(8)
    assert shares[:8] == pytest.approx(top["total_pct"].round(2).tolist(), abs=0.006)
    assert shares[:8] == sorted(shares[:8], reverse=True)
    assert sum(shares) == pytest.approx(100, abs=0.05)
    assert top.iloc[0]["name"] in rows[0]
    assert "in 16 more groups" in rows[-1]
    assert tail[-1].startswith("Around it: dispatch gaps 85.3 ms") and \
        "host pauses 53.52 s in 279 gaps" in tail[-1]
    doc = json.loads(_report(str(real_dir() / SEG), "-f", "json", "--advice", "none"))
    where = doc["where_the_time_goes"]
    assert [g["group"] for g in where["groups"]] == top["name"].tolist()
    assert where["rest"]["groups"] == 16


def test_where_the_time_goes_ends_with_the_data_warnings():
    name = "tt-perf-report__bh_invalid_trace_decode_window.csv"
    out = _report(str(real_dir() / name), "--advice", "none")
    tail = out[out.index("Where the time goes"):]
    assert "\nWarning: 13 ops with an impossible profiler timing" in tail


def test_bh20_oft_advice_fits_a_screen_and_json_keeps_every_entry():
    """1,311 gaps and 82 matmul bullets: the default table groups them in a screenful; --advice
    full and JSON list every one."""
    out = _report(str(real_dir() / OFT))
    advice = out[out.index("\nAdvice (tt-perf-report's rules, grouped: 1,400 entries"):]
    assert len(advice.strip().splitlines()) <= 24
    assert "Op-to-op gaps over 6.5 us: 1,311 ops waited for the host" in advice
    assert "and 1,306 more" in advice
    assert "41 ops" in advice and "fidelity: use HiFi2 or HiFi4" in advice
    full = _report(str(real_dir() / OFT), "--advice", "full")
    assert len(full[full.index("Advice, every entry"):].splitlines()) > 1400
    doc = json.loads(_report(str(real_dir() / OFT), "-f", "json"))
    kinds = [a["kind"] for a in doc["advice"]]
    assert kinds.count("gap") == 1311 and len(kinds) == doc["advice_summary"]["entries"] == 1400
    largest = [g["gap_us"] for g in doc["advice_summary"]["gaps"]["largest"]]
    raw = _raw(OFT)
    gaps = pd.to_numeric(raw["OP TO OP LATENCY [ns]"], errors="coerce") / 1000
    assert largest == pytest.approx(sorted(gaps.nlargest(5).tolist(), reverse=True))


def test_host_fallbacks_are_counted_per_op_code():
    """SEG's 781 host ops, one line per op code with its count (the counts from pandas)."""
    raw = _raw(SEG)
    host = raw[raw["OP TYPE"] == "python_fallback"]["OP CODE"].value_counts()
    assert host.sum() == 781
    out = _report(str(real_dir() / SEG))
    section = out[out.index("Host fallback ops: 781 ran on the host"):]
    section = section[:section.index("\n\n")]
    assert len(section.splitlines()) == 1 + len(host)
    for code, n in host.items():
        assert f"{n:>6,}  {code}  (first: ID " in section
    doc = json.loads(_report(str(real_dir() / SEG), "-f", "json"))
    got = {h["op_code"]: h["ops"] for h in doc["advice_summary"]["host"]["by_op_code"]}
    assert got == host.to_dict()


def test_tracing_saving_says_what_of_it_is_host_pauses():
    """tt-perf-report's figure is kept (each gap over 6.5 us less 6 us); next to it the part in
    gaps over the pause threshold, which tracing does not remove, and the dispatch part."""
    raw = _raw(SEG)
    gap = pd.to_numeric(raw["OP TO OP LATENCY [ns]"], errors="coerce").to_numpy() / 1000
    high = gap > 6.5
    pauses = gap > 1000
    want_pauses = float(np.sum(gap[high & pauses] - 6))
    want_dispatch = float(np.sum(gap[high & ~pauses] - 6))
    doc = json.loads(_report(str(real_dir() / SEG), "-f", "json"))
    (s,) = [a for a in doc["advice"] if a["kind"] == "gap_saving"]
    assert s["host_pauses_us"] == pytest.approx(want_pauses, rel=1e-9)
    assert s["dispatch_us"] == pytest.approx(want_dispatch, rel=1e-9)
    assert s["saving_us"] == pytest.approx(want_pauses + want_dispatch, rel=1e-9)
    out = _report(str(real_dir() / SEG))
    assert ("Running with metal trace could save 53.60 s (100.0% of device + gap time, "
            "tt-perf-report's estimate)") in out
    assert "53.52 s of it are 279 host pauses over 1,000 us" in out
    assert "the dispatch gaps it can remove are 84.6 ms" in out
    higher = json.loads(_report(str(real_dir() / SEG), "-f", "json", "--pause-above", "1e9"))
    (s2,) = [a for a in higher["advice"] if a["kind"] == "gap_saving"]
    assert s2["host_pauses_us"] == 0 and s2["dispatch_us"] == pytest.approx(s["saving_us"])


def test_matmul_rules_grouped_with_their_time_at_stake():
    """wh_clip_encoder_2's 514 matmuls share two rules: one line each, with the ops' device time
    and share, and the heaviest ops named."""
    out = _report(str(real_dir() / "tt-perf-report__wh_clip_encoder_2.csv"))
    section = out[out.index("Matmuls: 514 ops"):]
    lines = [line for line in section.splitlines() if line.startswith("     514 ops")]
    assert len(lines) == 2 and all("(70.6% of device time)" in line for line in lines)
    assert "and 511 more" in section


def test_markdown_has_the_same_first_answer():
    md = _report(str(real_dir() / SEG), "-f", "markdown")
    assert "### Where the time goes" in md and "### Advice" in md
    assert "**Host fallback ops: 781 ran on the host; move them to the device**" in md
    advice = md[md.index("### Advice"):]
    advice = advice[:advice.find("\n#", 1)] if "\n#" in advice[1:] else advice
    assert 0 < advice.count("\n- ") < 60  # grouped, not 1,243 entries
    assert md.count("\n- ") < 100  # every section bounded, not an entry per op
