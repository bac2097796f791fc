"""#50.1: the gates cannot be fooled by missing device times. A candidate 5% slower on every op
of the real CLIP encoder trace, with some timings blank, not finite or implausible, passed
`diff --fail-above 2` ("-43.37%") and `history check --fail-above 2` ("43.42% faster"): an op
without a valid time was summed as if it took none. The rule (model.gate): compare only the
matched pairs timed on both sides, and refuse (exit 2, one line) when the pairs timed on one
side only hold over 1% of the baseline's time. Each candidate of the table goes through the
three gates: `diff`, `history check` (a store under the test's tmp dir) and the MCP `gate`
tool (called in process). Also #46.2 (the full-buffer explanation only with its evidence)
and #50.6 (a failing gate on the ops both ran is never called "faster")."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import real_dir, run_ttdash, tiered

from ttdash.model.errors import TraceError

WH = "tt-perf-report__wh_clip_encoder_2.csv"
BH = "tt-perf-report__bh_64_clip_encoder_1.csv"
DUR, GAP = "DEVICE KERNEL DURATION [ns]", "OP TO OP LATENCY [ns]"
PAUSE_NS = 1000 * 1000  # the default --pause-above (1000 us): longer gaps are host pauses
VALUES = ("", "nan", "NaN", "inf", "1e400", "0", "0.0001")
REFUSED = "ttdash: --fail-above cannot trust this comparison: "


def real_csv(name: str = WH) -> pd.DataFrame:
    return pd.read_csv(real_dir() / name, dtype=str, keep_default_na=False)


def slower(df: pd.DataFrame, factor: float = 1.05) -> pd.DataFrame:
    """Every device time `factor` times the file's (cells kept as text otherwise)."""
    v = pd.to_numeric(df[DUR], errors="coerce")
    ok = v.notna()
    df.loc[ok, DUR] = (v[ok] * factor).round().astype(np.int64).astype(str)
    return df


def picked(df: pd.DataFrame, col: str, how: str) -> np.ndarray:
    """The rows whose `col` a case replaces: the heaviest 1/7 of device times, 3% of the ops
    spread evenly (every 33rd), or the heaviest third of the dispatch gaps (up to the pause
    threshold: the gaps steady state counts)."""
    v = pd.to_numeric(df[col], errors="coerce").to_numpy()
    rows = np.flatnonzero(~np.isnan(v) & ((v <= PAUSE_NS) if col == GAP else True))
    if how == "even3":
        return rows[::33]
    share = 7 if how == "heavy7" else 3
    return rows[np.argsort(-v[rows], kind="stable")[:len(rows) // share]]


CASES = ([(DUR, how, v) for how in ("heavy7", "even3") for v in VALUES]
         + [(GAP, "heavy3", v) for v in ("", "nan")])
FAST = [(DUR, "heavy7", ""), (DUR, "heavy7", "inf"), (DUR, "even3", "0.0001"),
        (DUR, "even3", "0"), (GAP, "heavy3", "nan")]


def case_id(case: tuple[str, str, str]) -> str:
    col, how, value = case
    return f"{'duration' if col == DUR else 'gap'}-{how}-{value or 'blank'}"


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("gate_timings")


@pytest.fixture(scope="module")
def store(work) -> str:
    """A history store holding the real trace as the only earlier run."""
    root = work / "store"
    r = run_ttdash("history", "add", "--store", str(root), str(real_dir() / WH))
    assert r.returncode == 0, r.stderr
    return str(root)


def write(work: Path, name: str, df: pd.DataFrame) -> Path:
    out = work / f"{name}.csv"
    df.to_csv(out, index=False)
    return out


def mcp_gate(baseline: Path, candidate: Path) -> dict:
    """The MCP `gate` tool's function, in this process (a refusal raises the CLI's error)."""
    from ttdash.mcp.run_tools import gate
    from ttdash.mcp.session import Session

    return gate(Session(), {"baseline": str(baseline), "candidate": str(candidate),
                            "fail_above": 2})


def steady_share(df: pd.DataFrame, col: str, rows: np.ndarray) -> float:
    """What a careful engineer reads off the raw baseline CSV: the baseline's time on `rows`
    (their device time, or their dispatch gap) over its steady state (every device time plus
    every op-to-op gap up to the pause threshold)."""
    dur = pd.to_numeric(df[DUR], errors="coerce").to_numpy()
    gap = pd.to_numeric(df[GAP], errors="coerce").to_numpy()
    steady = np.nansum(dur) + np.nansum(np.where(gap <= PAUSE_NS, gap, np.nan))
    part = dur[rows] if col == DUR else gap[rows]
    return float(np.nansum(part) / steady)


@pytest.mark.parametrize("case", tiered(CASES, FAST), ids=case_id)
def test_a_slower_candidate_missing_timings_never_passes(case, work, store) -> None:
    col, how, value = case
    base = real_csv()
    rows = picked(base, col, how)
    cand_df = slower(real_csv())
    cand_df.loc[cand_df.index[rows], col] = value
    cand = write(work, case_id(case), cand_df)
    baseline = real_dir() / WH

    # diff --fail-above: refused, one line naming the side, the ops and the share
    r = run_ttdash("diff", str(baseline), str(cand), "-f", "json", "--fail-above", "2")
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(REFUSED) and r.stderr.count("\n") == 1, r.stderr
    what = "a valid device time" if col == DUR else "an op-to-op gap"
    assert f"the candidate lacks {what}" in r.stderr and "Traceback" not in r.stderr
    doc = json.loads(r.stdout)
    unc = doc["uncompared"]
    # the count and the share, against the raw CSV: every replaced row is left out (a gap
    # next to a blanked duration may go too: the loader drops gaps beside corrupt rows)
    assert unc["ops"] >= len(rows) if col == DUR else unc["ops"] == len(rows)
    assert unc["comparable_ops"] == doc["counts"]["matched"] - unc["ops"]
    assert unc["share_pct"] == pytest.approx(100 * steady_share(base, col, rows), abs=0.2)
    assert unc["share_pct"] > unc["limit_pct"] == 1.0
    # what was compared is the valid part: still slower, never a speed-up
    if col == DUR:
        assert doc["common"]["delta_pct"] == pytest.approx(5.0, abs=0.3) or \
            doc["delta_pct_by_metric"]["device"] == pytest.approx(5.0, abs=0.05)
    assert doc["delta_pct"] > 0

    # history check --fail-above: refused through the same rule
    h = run_ttdash("history", "check", "--store", store, str(cand), "--fail-above", "2")
    assert h.returncode == 2, h.stdout + h.stderr
    assert "history check cannot trust this comparison" in h.stderr
    assert f"the candidate lacks {what}" in h.stderr and h.stderr.count("\n") == 1

    # the MCP gate: the same refusal (the CLI's exit 2), not a pass
    with pytest.raises(TraceError, match=f"the candidate lacks {what}"):
        mcp_gate(baseline, cand)


def test_the_same_candidate_with_valid_timings_fails_and_an_identical_one_passes(
        work, store) -> None:
    """The negative controls: 5% slower with every timing valid is a regression (exit 1) in
    all three gates; an identical candidate (the same cells, written again) passes (exit 0)."""
    baseline = real_dir() / WH
    cand = write(work, "valid5", slower(real_csv()))
    r = run_ttdash("diff", str(baseline), str(cand), "-f", "json", "--fail-above", "2")
    doc = json.loads(r.stdout)
    assert r.returncode == 1 and doc["uncompared"]["ops"] == 0, r.stderr
    assert doc["gate_pct"] == pytest.approx(4.53, abs=0.05)
    h = run_ttdash("history", "check", "--store", store, str(cand), "--fail-above", "2")
    assert h.returncode == 1 and h.stdout.startswith("REGRESSION: steady state"), h.stderr
    assert mcp_gate(baseline, cand)["exit_code"] == 1

    same = write(work, "same", real_csv())
    assert same.read_bytes() != baseline.read_bytes()  # another run id in the store
    r = run_ttdash("diff", str(baseline), str(same), "-f", "json", "--fail-above", "2")
    assert r.returncode == 0 and json.loads(r.stdout)["delta_pct"] == 0, r.stderr
    h = run_ttdash("history", "check", "--store", store, str(same), "--fail-above", "2")
    assert h.returncode == 0 and h.stdout.startswith("ok: steady state"), h.stderr
    g = mcp_gate(baseline, same)
    assert g["exit_code"] == 0 and g["passed"]


def test_a_few_uncompared_pairs_are_left_out_and_said(work) -> None:
    """Under the 1% limit the gate compares the pairs timed on both sides: one heavy op blank
    in an otherwise 5% slower candidate is still a 5% regression (exit 1), not 5% less its
    share; the report counts the matched ops and those with comparable timings apart."""
    base = real_csv()
    cand_df = slower(real_csv())
    rows = np.flatnonzero(pd.to_numeric(base[DUR]).to_numpy() < 3000)[:1]  # a light op
    cand_df.loc[cand_df.index[rows], DUR] = ""
    cand = write(work, "one_blank", cand_df)
    r = run_ttdash("diff", str(real_dir() / WH), str(cand), "-f", "table", "--fail-above", "2")
    assert r.returncode == 1, r.stderr
    assert "Ops: 1872 matched: 1872 exactly, 0 by attributes, 0 by op code only (0 moved), " \
        "1871 of them compared (1 timed on one side only)" in r.stdout
    assert "Uncompared: the candidate lacks a valid device time" in r.stdout
    assert "on 1 of the 1,872 matched ops" in r.stdout
    doc = json.loads(run_ttdash("diff", str(real_dir() / WH), str(cand), "-f", "json").stdout)
    assert doc["delta_pct_by_metric"]["device"] == pytest.approx(5.0, abs=0.01)


@pytest.mark.parametrize("name", tiered([WH, BH, "tt-perf-report__bh20_oft.csv",
                                         "tt-perf-report__bh_invalid_trace_decode_window.csv",
                                         "ttnn-visualizer__SEG_ENCODER_ops_perf_results_"
                                         "2025_02_16_18_11_10.csv"], [WH]))
def test_complete_real_files_have_nothing_uncompared(name) -> None:
    """Where the finding must not be made: a real file against itself (host fallbacks, corrupt
    rows and signposts included) compares every matched pair."""
    r = run_ttdash("diff", str(real_dir() / name), str(real_dir() / name), "-f", "json",
                   "--fail-above", "2")
    doc = json.loads(r.stdout)
    assert r.returncode == 0, r.stderr
    assert doc["uncompared"]["ops"] == 0 and doc["uncompared"]["share_pct"] == 0
    assert doc["uncompared"]["comparable_ops"] == doc["counts"]["matched"]


# ------------------------------------------------------------------ #46.2, #50.6

def test_the_full_buffer_explanation_needs_a_cut_copy(work, store) -> None:
    """#46.2: a run cut short (the real trace's first 70% of rows) is told as a full profiler
    buffer; two CLIP encoders of other sizes (hidden 1280 on wormhole, 768 on blackhole, as the
    raw files' TilizeWithValPadding inputs show) are not: their ops part at the first op."""
    base = real_csv()
    assert base["INPUT_0_X_PAD[LOGICAL]"].iloc[1] == "1280[1280]"
    assert real_csv(BH)["INPUT_0_X_PAD[LOGICAL]"].iloc[1] == "768[768]"
    cut = write(work, "cut70", real_csv().iloc[:int(len(base) * 0.7)])
    r = run_ttdash("diff", str(real_dir() / WH), str(cut), "-f", "json", "--fail-above", "2")
    assert r.returncode == 2
    assert "its ops are the baseline's first ops, as a full profiler buffer leaves a run" \
        in r.stderr
    assert "different programs" not in r.stderr and "op sequences differ" not in r.stderr
    h = run_ttdash("history", "check", "--store", store, str(cut), "--fail-above", "2")
    assert h.returncode == 2 and "as a full profiler buffer leaves a run" in h.stderr

    r = run_ttdash("diff", str(real_dir() / WH), str(real_dir() / BH), "-f", "json",
                   "--fail-above", "2", "--allow-arch-mismatch")
    assert r.returncode == 2
    assert "profiler buffer" not in r.stderr and "profiler buffer" not in r.stdout
    assert "the candidate stops early: its last 582 ops" in r.stderr
    assert "its ops part from the baseline's at op 1" in r.stderr
    assert "the two sides run different programs, not one cut short" in r.stderr


def test_a_regression_on_the_ops_both_ran_is_never_called_faster(work, store) -> None:
    """#50.6: the first 10% of the candidate missing, the rest 5% slower: the whole run is
    9.54% faster, the ops both ran 4.73% slower; the gate fails (exit 1) and its line says
    what failed and what is missing, in diff and history check alike."""
    base = real_csv()
    cand = write(work, "headcut", slower(real_csv().iloc[len(base) // 10:].copy()))
    r = run_ttdash("diff", str(real_dir() / WH), str(cand), "-f", "json", "--fail-above", "2")
    assert r.returncode == 1
    line = r.stderr.strip()
    assert line.startswith("ttdash: REGRESSION: the candidate is 4.73% slower on steady state "
                           "over the 1,684 ops both sides ran"), line
    assert "the candidate lacks the baseline's first 187 ops" in line and "faster" not in line
    t = run_ttdash("diff", str(real_dir() / WH), str(cand), "-f", "table", "--fail-above", "2")
    gate_line = next(x for x in t.stdout.splitlines() if x.startswith("Gate: "))
    assert gate_line.startswith("Gate: REGRESSION (exit 1): +4.73% on steady state over the "
                                "1,684 ops both sides ran") and "faster" not in gate_line
    h = run_ttdash("history", "check", "--store", store, str(cand), "--fail-above", "2")
    assert h.returncode == 1
    first = h.stdout.splitlines()[0]
    assert first.startswith("REGRESSION: the ops both ran are +4.7") and "faster" not in first


def test_several_runs_a_run_missing_timings_is_refused(work) -> None:
    """With several runs per side the gate judges the mean of the runs' totals: a second
    candidate run with its heaviest 1/7 of device times blank pulled the mean to -19.42%
    (exit 0). It is aligned with its side's first run and refused, naming the file."""
    baseline = real_dir() / WH
    again = write(work, "baseline_again", real_csv())
    valid = write(work, "runs_valid5", slower(real_csv()))
    blank_df = slower(real_csv())
    blank_df.loc[blank_df.index[picked(real_csv(), DUR, "heavy7")], DUR] = ""
    blank = write(work, "runs_blank", blank_df)
    r = run_ttdash("diff", "--baseline", str(baseline), str(again), "--candidate", str(valid),
                   str(blank), "-f", "json", "--fail-above", "2")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(f"ttdash: {blank}: --fail-above cannot trust this run: this run "
                               "lacks a valid device time")
    # the same runs with valid timings: the regression the mean shows (exit 1)
    r = run_ttdash("diff", "--baseline", str(baseline), str(again), "--candidate", str(valid),
                   str(valid), "-f", "json", "--fail-above", "2")
    assert r.returncode == 1, r.stderr
