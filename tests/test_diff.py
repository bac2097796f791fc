"""`ttdash diff`: alignment of two traces, deltas, noise labels, outputs and exit codes."""

from __future__ import annotations

import cProfile
import csv
import io
import json
import pstats
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import real_dir, run_ttdash
from hypothesis import given, settings
from hypothesis import strategies as st

from ttdash.model import Trace, Window
from ttdash.model.compare import align as D
from ttdash.model.compare.align import align_sequences
from ttdash.model.compare.diff import diff_traces
from ttdash.model.read.loader import RawTable, read_ops_csv

WH = "tt-perf-report__wh_clip_encoder_2.csv"
BH = "tt-perf-report__bh_64_clip_encoder_1.csv"
SHAPES = [f"INPUT_{n}_{d}" for n in range(4) for d in ("W", "Z", "Y", "X", "DATATYPE")]




def view(path: Path, window: Window | None = None, merge: bool = True):
    return Trace.load(path).view(window or Window(), merge=merge)


# ------------------------------------------------------------------ building candidates

def csv_signature(df: pd.DataFrame) -> np.ndarray:
    cols = ["OP CODE"] + [c for c in SHAPES if c in df.columns]
    return df[cols].astype("string").fillna("").groupby(cols, sort=False).ngroup().to_numpy()


def distinct_sites(df: pd.DataFrame) -> np.ndarray:
    """Rows whose signature differs from both neighbours (a change there has one right answer)."""
    sig = csv_signature(df)
    ok = np.zeros(len(df), dtype=bool)
    ok[1:-1] = (sig[1:-1] != sig[:-2]) & (sig[1:-1] != sig[2:])
    return np.flatnonzero(ok)


def perturb_csv(src: Path, dest: Path, *, slow: dict[int, int] = {},  # noqa: B006
                delete: tuple[int, ...] = (), insert_after: tuple[tuple[int, int, str | None],
                                                                  ...] = (),
                swap: tuple[int, ...] = ()) -> dict:
    """Write a changed copy of `src`. Positions are 0-based data rows of `src` (ID = pos + 2).

    slow: {pos: extra ns}; delete: positions; insert_after: (pos, template pos, new op code or
    None); swap: positions p whose row trades places with p + 1. Returns the expected changes
    as tt-perf-report IDs.
    """
    df = pd.read_csv(src, dtype=str, keep_default_na=False)
    dur = pd.to_numeric(df["DEVICE KERNEL DURATION [ns]"])
    for pos, extra in slow.items():
        df.loc[pos, "DEVICE KERNEL DURATION [ns]"] = str(int(dur[pos]) + extra)
    order = list(range(len(df)))
    for p in swap:
        order[p], order[p + 1] = order[p + 1], order[p]
    rows: list[pd.Series] = []
    inserted: list[int] = []
    extra_after = {pos: (tpl, code) for pos, tpl, code in insert_after}
    for src_pos in order:
        if src_pos in delete:
            continue
        rows.append(df.iloc[src_pos])
        if src_pos in extra_after:
            tpl, code = extra_after[src_pos]
            new = df.iloc[tpl].copy()
            if code:
                new["OP CODE"] = code
            rows.append(new)
            inserted.append(len(rows) - 1)
    out = pd.DataFrame(rows).reset_index(drop=True)
    out["HOST START TS"] = [str(1000 * (i + 1)) for i in range(len(out))]  # file order = order
    out.to_csv(dest, index=False)
    return {"inserted": {i + 2 for i in inserted}, "deleted": {p + 2 for p in delete},
            "slowed": {p + 2: extra / 1000 for p, extra in slow.items()},
            "swapped": {p + 2 for p in swap} | {p + 3 for p in swap}}


def repeated_table(src: Path, times: int) -> pd.DataFrame:
    """The loader's raw table of `src` repeated `times` times (IDs and HOST START TS renumbered)."""
    base = read_ops_csv(src).df
    df = pd.concat([base] * times, ignore_index=True)
    df["ID"] = np.arange(len(df)) + 2
    df["HOST START TS"] = (np.arange(len(df)) + 1) * 1000
    return df


def trace_from(df: pd.DataFrame, name: str) -> Trace:
    return Trace.from_table(RawTable(Path(name), list(df.columns), df.copy()))


# ------------------------------------------------------------------ the model

@pytest.mark.parametrize("name,window", [
    (WH, Window()),
    ("tt-perf-report__bh20_oft.csv", Window("all")),
    ("tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv", Window()),
    ("ttnn-visualizer__SEG_ENCODER_ops_perf_results_2025_02_16_18_11_10.csv", Window()),
    ("tt-perf-report__bh_invalid_trace_decode_window.csv", Window("all")),
])
def test_trace_against_itself_is_all_matched_with_zero_delta(name, window):
    v = view(real_dir() / name, window)
    r = diff_traces(v, v)
    n = len(v.op_rows)
    assert r.counts["matched"] == n and r.counts["added"] == r.counts["removed"] == 0
    assert r.counts["moved"] == 0 and (r.pairs["match"] == "exact").all()
    assert (r.pairs["baseline_id"] == r.pairs["candidate_id"]).all()
    assert np.nansum(np.abs(r.pairs["delta_us"].to_numpy(dtype=float))) == 0
    assert r.delta_pct["device"] == 0 and r.delta_pct["wall"] == 0
    assert r.speedup["wall"] == 1 and r.match_rate == 1
    assert r.regressions().empty and r.improvements().empty
    assert r.by_op_code["baseline_count"].sum() == n and (r.by_op_code["delta_us"] == 0).all()


def test_per_device_views_align_each_device():
    v = view(real_dir() / "tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv", merge=False)
    r = diff_traces(v, v)
    assert r.per_device and r.counts["matched"] == 208
    assert sorted(r.pairs["device"].unique().tolist()) == list(range(8))
    merged_view = view(real_dir() / "tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv")
    merged = diff_traces(merged_view, merged_view)
    assert not merged.per_device and merged.counts["matched"] == 26


def test_known_changes_are_recovered_exactly(tmp_path):
    src = real_dir() / WH
    df = pd.read_csv(src, dtype=str, keep_default_na=False)
    sites = distinct_sites(df)
    sites = sites[(sites > 10) & (sites < len(df) - 10)]
    pick = sites[np.linspace(0, len(sites) - 1, 14).astype(int)]
    sig = csv_signature(df)
    swap_at = next(int(p) for p in sites[len(sites) // 3:]  # p, p + 1 distinct, none repeated
                   if sig[p] != sig[p + 1] and sig[p + 1] != sig[p - 1] and sig[p] != sig[p + 2]
                   and p not in pick and p + 1 not in pick and p - 1 not in pick)
    slow = {int(pick[0]): 25_000, int(pick[4]): 3_000, int(pick[8]): 120_000}
    delete = (int(pick[1]), int(pick[5]), int(pick[9]))
    is_ln = (df["OP CODE"] == "LayerNormDeviceOperation").to_numpy()
    layernorm = int(np.flatnonzero(is_ln)[3])
    ln_site = next(int(q) for q in sites if q > pick[6] and not is_ln[q - 3:q + 4].any()
                   and np.abs(pick - q).min() > 3 and abs(q - swap_at) > 3)
    inserts = ((int(pick[2]), int(pick[2]), "ProbeDeviceOperation"),
               (ln_site, layernorm, None),  # a real op type, away from any LayerNorm
               (int(pick[10]), int(pick[10]), "ProbeDeviceOperation"))
    truth = perturb_csv(src, tmp_path / "cand.csv", slow=slow, delete=delete,
                        insert_after=inserts, swap=(swap_at,))

    a, b = view(src), view(tmp_path / "cand.csv")
    r = diff_traces(a, b)
    p = r.pairs
    added = set(p.loc[p["status"] == "added", "candidate_id"].astype(int))
    removed = set(p.loc[p["status"] == "removed", "baseline_id"].astype(int))
    assert added == truth["inserted"]
    assert removed == truth["deleted"]
    m = p[p["status"] == "matched"]
    assert len(m) == len(a.op_rows) - 3 and len(b.op_rows) == len(a.op_rows)
    got = dict(zip(m["baseline_id"].astype(int), m["delta_us"]))
    for bid, extra_us in truth["slowed"].items():
        assert got[bid] == pytest.approx(extra_us, abs=1e-6)
    others = m[~m["baseline_id"].isin(list(truth["slowed"]))]
    assert np.nanmax(np.abs(others["delta_us"].to_numpy(dtype=float))) < 1e-9
    swapped = m[m["baseline_id"].isin(list(truth["swapped"]))]
    assert len(swapped) == 2 and swapped["moved"].sum() == 1 and r.counts["moved"] == 1
    # The swapped pair keeps its partners. Candidate IDs: the swap sits after one deletion
    # and one insertion at most, so compute where the two rows went.
    cand = view(tmp_path / "cand.csv").op_rows
    base_rows = a.op_rows.set_index("id")
    partner = dict(zip(swapped["baseline_id"].astype(int), swapped["candidate_id"].astype(int)))
    for bid, cid in partner.items():
        got_row = cand.loc[cand["id"] == cid].iloc[0]
        assert got_row["op_code"] == base_rows.loc[bid, "op_code"]
        assert got_row["device_time_us"] == base_rows.loc[bid, "device_time_us"]
    assert partner[swap_at + 2] == partner[swap_at + 3] + 1
    # Top lists: the three slowed ops, largest first; unmatched listed separately.
    reg = r.regressions(5)
    assert list(reg["baseline_id"].astype(int)) == sorted(truth["slowed"],
                                                          key=lambda k: -truth["slowed"][k])
    assert set(r.added()["candidate_id"].astype(int)) == truth["inserted"]
    assert set(r.removed()["baseline_id"].astype(int)) == truth["deleted"]
    # Deltas add up: per op, per op code and in the totals.
    total = r.candidate_totals.device_time_us - r.baseline_totals.device_time_us
    assert np.nansum(p["delta_us"].to_numpy(dtype=float)) == pytest.approx(total, abs=1e-6)
    assert r.by_op_code["delta_us"].sum() == pytest.approx(total, abs=1e-6)
    assert r.by_op_code["share_pct"].sum() == pytest.approx(100.0)
    probe = r.by_op_code.set_index("op_code").loc["ProbeDeviceOperation"]
    assert (probe["baseline_count"], probe["candidate_count"]) == (0, 2)


def test_swap_pairs_both_ops_with_the_right_partner(tmp_path):
    src = real_dir() / "tt-perf-report__bh_p100_dlv3.csv"
    df = pd.read_csv(src, dtype=str, keep_default_na=False)
    sig = csv_signature(df)
    p = next(int(i) for i in range(5, len(df) - 5)
             if len({sig[i - 1], sig[i], sig[i + 1], sig[i + 2]}) == 4)
    perturb_csv(src, tmp_path / "c.csv", swap=(p,))
    r = diff_traces(view(src), view(tmp_path / "c.csv"))
    pairs = r.pairs.set_index(r.pairs["baseline_id"].astype(int))
    assert r.counts["matched"] == len(df) and r.counts["moved"] == 1
    assert int(pairs.loc[p + 2, "candidate_id"]) == p + 3
    assert int(pairs.loc[p + 3, "candidate_id"]) == p + 2


def test_wh_vs_bh_clip_encoder_align_mostly_matched():
    a, b = view(real_dir() / WH), view(real_dir() / BH)
    r = diff_traces(a, b)
    p = r.pairs
    # Measured: every one of the 660 BH ops finds its WH counterpart (96 with the same shapes,
    # the rest by attributes (416) or op code (148): the BH model is narrower, 768 vs 1280
    # hidden); 1212 WH ops removed.
    assert r.counts["matched"] >= 650 and r.counts["added"] <= 10
    assert r.counts["removed"] == len(a.op_rows) - r.counts["matched"]
    assert r.counts["op_code_only"] + r.counts["by_attributes"] > 500
    m = p[p["status"] == "matched"]
    assert m["delta_us"].notna().all() and m["delta_pct"].notna().all()
    assert (m["baseline_us"] - m["candidate_us"]).abs().sum() > 0
    # Order is kept, and the embeddings prologue pairs one to one.
    unmoved = m[~m["moved"]]
    assert unmoved["candidate_id"].astype(int).is_monotonic_increasing
    assert unmoved["baseline_id"].astype(int).is_monotonic_increasing
    assert list(zip(m["baseline_id"][:4].astype(int), m["candidate_id"][:4].astype(int))) == [
        (2, 2), (3, 3), (4, 4), (5, 5)]
    # BH's first layer sits on WH's first layer (not on the last one).
    first_mm = m[m["op_code"] == "MinimalMatmulOp"].iloc[0]
    assert int(first_mm["baseline_id"]) == int(a.op_rows.loc[a.op_rows["op_code"]
                                                             == "MinimalMatmulOp", "id"].iloc[0])
    assert r.speedup["device"] == pytest.approx(
        r.baseline_totals.device_time_us / r.candidate_totals.device_time_us)
    assert r.speedup["device"] > 5


def test_repeated_layers_align_in_order():
    # Ints: layer k pairs with layer k, before and after a deletion in layer 10.
    layer = np.array([5, 1, 2, 2, 3, 1, 4, 2, 6])
    a = np.tile(layer, 40)
    b = np.delete(a, 10 * len(layer) + 4)
    al = align_sequences(a, b)
    assert al.size == len(b) and not al.moved.any()
    shift = al.a - al.b
    assert (shift[al.a < 10 * len(layer) + 4] == 0).all() and (shift[al.a > 94] == 1).all()
    # Real rows: a model repeated four times; the third repetition's op slowed, the second's
    # ops deleted: every matched pair stays within its repetition.
    src = real_dir() / "tt-perf-report__bh_p100_dlv3.csv"
    raw = repeated_table(src, 4)
    per = len(raw) // 4
    cand = raw.copy()
    slow_row = 2 * per + 100
    cand.loc[slow_row, "DEVICE KERNEL DURATION [ns]"] += 50_000
    cand = cand.drop(index=[per + 40, per + 41]).reset_index(drop=True)
    cand["ID"] = np.arange(len(cand)) + 2
    r = diff_traces(trace_from(raw, "base.csv").view(), trace_from(cand, "cand.csv").view())
    m = r.pairs[r.pairs["status"] == "matched"]
    rep_a = (m["baseline_id"].astype(int) - 2) // per
    cand_src = np.delete(np.arange(len(raw)), [per + 40, per + 41])  # candidate row -> raw row
    rep_b = cand_src[m["candidate_id"].astype(int).to_numpy() - 2] // per
    assert (rep_a.to_numpy() == rep_b).all()
    assert r.counts["removed"] == 2 and r.counts["added"] == 0
    top = r.regressions(1).iloc[0]
    assert int(top["baseline_id"]) == slow_row + 2 and top["delta_us"] == pytest.approx(50)


def _noise_csv(path: Path, times: dict[str, list[float]], iterations: int = 6,
               names: tuple[str, ...] = ("Matmul", "Softmax", "Add", "Reshape")) -> None:
    header = "OP CODE,OP TYPE,DEVICE ID,DEVICE KERNEL DURATION [ns],OP TO OP LATENCY [ns]," \
             "HOST START TS\n"
    lines, ts = [header], 0
    for it in range(iterations):
        ts += 10
        lines.append(f"decode,signpost,,,,{ts}\n")
        for op in names:
            ts += 10
            lines.append(f"{op},tt_dnn_device,0,{times[op][it]:.0f},1000,{ts}\n")
    path.write_text("".join(lines))


def test_noise_labels_on_repeated_signposts(tmp_path):
    jitter = np.array([1.00, 0.96, 1.04, 0.97, 1.03, 1.00])  # ~4% spread across iterations
    base = {"Matmul": 100_000 * jitter, "Softmax": 20_000 * jitter, "Add": 5_000 * jitter,
            "Reshape": np.full(6, 8_000.0)}
    cand = {"Matmul": base["Matmul"] * 1.02,   # 2% slower: inside the spread
            "Softmax": base["Softmax"] * 1.40,  # 40% slower: a real regression
            "Add": base["Add"] * 0.70,          # 30% faster: a real improvement
            "Reshape": base["Reshape"] * 1.05}  # no spread on either side: 5% is real
    _noise_csv(tmp_path / "a.csv", base)
    _noise_csv(tmp_path / "b.csv", cand)
    a, b = view(tmp_path / "a.csv", Window("all")), view(tmp_path / "b.csv", Window("all"))
    r = diff_traces(a, b)
    assert r.counts["matched"] == 24 and r.noise["iterations"]["baseline"] == {"decode": 6}
    p = r.pairs
    wn = p.groupby("op_code")["within_noise"].agg(lambda s: set(s.tolist()))
    assert wn["Matmul"] == {True} and wn["Softmax"] == {False} and wn["Add"] == {False}
    assert wn["Reshape"] == {False}
    assert p.loc[p["op_code"] == "Matmul", "noise_pct"].min() > 2.0
    assert set(r.regressions(100)["op_code"]) == {"Softmax", "Reshape"}
    assert set(r.improvements(100)["op_code"]) == {"Add"}
    assert "Matmul" in set(r.regressions(100, include_noise=True)["op_code"])
    # Regions pair by name and occurrence; each region's ops stay in it.
    assert list(r.by_region["region"]) == [f"decode #{k}" for k in range(1, 7)]
    assert (r.by_region["baseline_count"] == 4).all()
    # Without noise, or with only one iteration, nothing is labelled.
    off = diff_traces(a, b, noise=False)
    assert off.pairs["within_noise"].isna().all() and off.counts["noise_known"] == 0
    _noise_csv(tmp_path / "one.csv", base, iterations=1)
    one = view(tmp_path / "one.csv", Window("all"))
    assert diff_traces(one, one).pairs["within_noise"].isna().all()


def test_regions_anchor_the_alignment(tmp_path):
    # Two regions with the same op codes: an op removed from the end of region 1 must not
    # pull region 2's ops across the signpost boundary.
    hdr = "OP CODE,OP TYPE,DEVICE ID,DEVICE KERNEL DURATION [ns],OP TO OP LATENCY [ns]," \
          "HOST START TS\n"

    def write(path: Path, regions: dict[str, list[str]]) -> None:
        lines, ts = [hdr], 0
        for name, ops in regions.items():
            ts += 1
            lines.append(f"{name},signpost,,,,{ts}\n")
            for op in ops:
                ts += 1
                lines.append(f"{op},tt_dnn_device,0,1000,100,{ts}\n")
        path.write_text("".join(lines))

    write(tmp_path / "a.csv", {"prefill": ["A", "B", "C", "A"], "decode": ["A", "B", "C"]})
    write(tmp_path / "b.csv", {"prefill": ["A", "B", "C"], "decode": ["A", "A", "B", "C"]})
    r = diff_traces(view(tmp_path / "a.csv", Window("all")), view(tmp_path / "b.csv",
                                                                   Window("all")))
    p = r.pairs
    assert r.counts["matched"] == 6
    assert p.loc[p["status"] == "removed", "region"].tolist() == ["prefill"]
    assert p.loc[p["status"] == "added", "region"].tolist() == ["decode"]
    m = p[p["status"] == "matched"]
    a_ops = view(tmp_path / "a.csv", Window("all")).op_rows.set_index("id")["signpost"]
    b_ops = view(tmp_path / "b.csv", Window("all")).op_rows.set_index("id")["signpost"]
    assert (a_ops[m["baseline_id"].astype(int)].to_numpy()
            == b_ops[m["candidate_id"].astype(int)].to_numpy()).all()


# ------------------------------------------------------------------ the aligner itself

def lcs_length(a: list[int], b: list[int]) -> int:
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def _valid(al, a: np.ndarray, b: np.ndarray, code_a: np.ndarray, code_b: np.ndarray) -> None:
    keep = ~al.moved
    assert (np.diff(al.a) > 0).all() and (np.diff(al.b[keep]) > 0).all()
    assert len(set(al.b.tolist())) == len(al.b)
    assert (code_a[al.a] == code_b[al.b]).all()
    assert (a[al.a[al.moved]] == b[al.b[al.moved]]).all()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 5), max_size=40), st.lists(st.integers(0, 5), max_size=40))
def test_small_alignments_are_optimal(a, b):
    x, y = np.array(a, dtype=np.int64), np.array(b, dtype=np.int64)
    al = align_sequences(x, y, moves=False)
    _valid(al, x, y, x, y)
    assert al.size == lcs_length(a, b)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 8), min_size=1, max_size=300),
       st.lists(st.tuples(st.integers(0, 299), st.integers(0, 3), st.integers(0, 9)),
                max_size=20))
def test_anchor_path_is_valid_and_keeps_most(a, edits):
    """With a tiny DP budget every segment goes through anchors; pairs stay consistent."""
    x = np.array(a, dtype=np.int64)
    y = list(a)
    for pos, kind, val in edits:
        pos = min(pos, len(y))
        if kind == 0 and pos < len(y):
            del y[pos]
        elif kind == 1:
            y.insert(pos, val)
        elif kind == 2 and pos < len(y):
            y[pos] = val
    yb = np.array(y, dtype=np.int64)
    codes_a, codes_b = x % 3, yb % 3
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(D, "DP_CELLS", 16)
        al = align_sequences(x, yb, codes_a, codes_b)
    _valid(al, x, yb, codes_a, codes_b)
    # Every untouched op survives an edit list this short in the optimum; anchors keep most.
    assert al.size >= 0.6 * (min(len(x), len(yb)) - 2 * len(edits))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(-1, 6), max_size=60), st.lists(st.integers(0, 6), max_size=60),
       st.booleans())
def test_nearest_pairs_pick_the_nearest_occurrence(a, b, guided):
    """Each op of A with a value B has (and not -1) pairs with the occurrence in B nearest to
    where it is expected (the later on a tie), B sorted once (D._Sorted) or not."""
    x, y = np.array(a, dtype=np.int64), np.array(b, dtype=np.int64)
    guide = (np.array([0, max(len(x) - 1, 1)]), np.array([len(y) // 3, len(y) - 1])) \
        if guided and len(y) else None
    got = D._nearest_pairs(x, D._Sorted(y), guide)
    assert all(np.array_equal(g, w) for g, w in zip(got, D._nearest_pairs(x, y, guide)))
    if not len(x):
        return
    expected = (np.interp(np.arange(len(x)), *guide) if guide is not None
                else np.arange(len(x)) * (len(y) / len(x)))
    want_a, want_b = [], []
    for i, v in enumerate(a):
        at = [j for j, w in enumerate(b) if w == v]
        if v < 0 or not at:
            continue
        d = [abs(j - expected[i]) for j in at]
        want_a.append(i)
        want_b.append(max(j for j, dj in zip(at, d) if dj == min(d)))
    assert got[0].tolist() == want_a and got[1].tolist() == want_b


def test_lis_and_ranges():
    x = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9])
    keep = D._lis(x)
    assert len(keep) == 6 and (np.diff(x[keep]) > 0).all() and (np.diff(keep) > 0).all()
    rng = np.random.default_rng(7)
    for n in range(1, 400):  # mostly in order, as anchor candidates are; some all shuffled
        x = np.arange(n) + rng.integers(-3, 4, n) * (rng.random(n) < rng.random())
        if n % 7 == 0:
            x = rng.integers(0, n, n)
        keep = D._lis(x)  # pivots + patience over the rest == patience over all, in length
        assert len(keep) == len(D._patience(x)), x.tolist()
        assert (np.diff(x[keep]) > 0).all() and (np.diff(keep) > 0).all()
    assert D._ranges(np.array([5, 0]), np.array([2, 3])).tolist() == [5, 6, 0, 1, 2]


@pytest.mark.slow  # 100k ops a side (3-5 s); the fast tier aligns the real files
def test_100k_ops_each_side_align_in_linear_work():
    src = real_dir() / WH
    raw = repeated_table(src, 54)  # 101,088 ops
    rng = np.random.default_rng(3)
    cand = raw.copy()
    n = len(raw)
    slow = rng.choice(n, 200, replace=False)
    col = "DEVICE KERNEL DURATION [ns]"
    cand.loc[slow, col] = (cand.loc[slow, col] * 1.3).round().astype(cand[col].dtype)
    sig = csv_signature(raw)
    distinct = np.flatnonzero((sig[1:-1] != sig[:-2]) & (sig[1:-1] != sig[2:])) + 1
    gone = np.sort(rng.choice(distinct[::7], 150, replace=False))
    probes = cand.iloc[np.sort(rng.choice(distinct[3::7], 150, replace=False))].copy()
    probes["OP CODE"] = "ProbeDeviceOperation"
    probes["HOST START TS"] += 500  # right after its template
    cand = pd.concat([cand.drop(index=gone), probes]).sort_values("HOST START TS",
                                                                  kind="stable")
    cand["ID"] = np.arange(len(cand)) + 2
    probe_ids = set(cand.loc[cand["OP CODE"] == "ProbeDeviceOperation", "ID"].tolist())
    a = trace_from(raw, "base.csv").view()
    b = trace_from(cand.reset_index(drop=True), "cand.csv").view()
    assert len(a.op_rows) > 100_000 and len(b.op_rows) > 100_000

    t0 = time.perf_counter()
    r = diff_traces(a, b)
    total = time.perf_counter() - t0
    print(f"\n100k diff: {len(a.op_rows):,} vs {len(b.op_rows):,} ops: {total:.2f} s "
          f"(signatures {r.seconds['signatures']:.2f} s, align {r.seconds['align']:.2f} s, "
          f"frame {r.seconds['frame']:.2f} s)")
    # (the time is printed, not asserted: benchmarks/bench_diff.py reports it; how the work grows
    # with the size is asserted below, as a count a loaded machine cannot change)
    p = r.pairs
    assert set(p.loc[p["status"] == "removed", "baseline_id"].astype(int)) == set(
        (gone + 2).tolist())
    assert set(p.loc[p["status"] == "added", "candidate_id"].astype(int)) == probe_ids
    assert r.counts["matched"] == n - 150

    def aligned(reps: int) -> tuple[float, int]:
        """(share of y matched, Python calls made) aligning 1,000 * reps ids with 5% deleted."""
        rng2 = np.random.default_rng(0)
        x = np.tile(rng2.integers(0, 50, 1000), reps)
        y = np.delete(x, rng2.choice(len(x), 50 * reps, replace=False))
        prof = cProfile.Profile()
        prof.enable()
        al = align_sequences(x, y)
        prof.disable()
        return al.size / len(y), pstats.Stats(prof).total_calls  # type: ignore[attr-defined]

    small, big = aligned(10), aligned(100)
    print(f"int alignment, 100k vs 95k with 5% scattered deletions: {big[0]:.2%} matched, "
          f"{big[1]:,} Python calls (10k: {small[1]:,})")
    assert small[0] >= 0.99 and big[0] >= 0.99
    assert big[1] < 15 * small[1]  # ten times the ops, about ten times the work: never quadratic


# ------------------------------------------------------------------ the command line

@pytest.fixture(scope="module")
def slowed_pair(tmp_path_factory) -> tuple[Path, Path, dict]:
    d = tmp_path_factory.mktemp("diffcli")
    src = real_dir() / WH
    df = pd.read_csv(src, dtype=str, keep_default_na=False)
    sites = distinct_sites(df)
    truth = perturb_csv(src, d / "cand.csv", slow={int(sites[50]): 400_000,
                                                   int(sites[80]): 200_000},
                        delete=(int(sites[120]),),
                        insert_after=((int(sites[200]), int(sites[200]), "ProbeDeviceOperation"),))
    return src, d / "cand.csv", truth


def test_cli_json_shape(slowed_pair):
    a, b, truth = slowed_pair
    r = run_ttdash("diff", str(a), str(b), "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert {"baseline", "candidate", "delta_pct", "speedup", "ops", "by_op_code",
            "by_region"} <= set(doc)
    for side in ("baseline", "candidate"):
        assert {"file", "ops", "device_time_us", "op_to_op_us"} <= set(doc[side])
    assert doc["baseline"]["file"] == str(a) and doc["candidate"]["file"] == str(b)
    assert doc["baseline"]["ops"] == 1872 and doc["candidate"]["ops"] == 1872
    assert isinstance(doc["delta_pct"], float) and isinstance(doc["speedup"], float)
    assert doc["speedup"] < 1 < doc["speedup_by_metric"]["wall"] + 1
    assert len(doc["ops"]) == 1873
    op_keys = ["baseline_id", "candidate_id", "op_code", "status", "baseline_us",
               "candidate_us", "delta_us", "delta_pct"]
    assert all(list(o)[:8] == op_keys for o in doc["ops"])
    added = [o for o in doc["ops"] if o["status"] == "added"]
    assert len(added) == 1 and added[0]["baseline_id"] is None and added[0]["delta_pct"] is None
    assert {o["candidate_id"] for o in added} == truth["inserted"]
    top = {o["baseline_id"] for o in doc["ops"] if o["status"] == "matched" and o["delta_us"]}
    assert top == set(truth["slowed"])
    assert {"op_code", "baseline_count", "candidate_count", "delta_us", "share_pct"} <= set(
        doc["by_op_code"][0])
    assert doc["by_region"] == []
    dev = json.loads(run_ttdash("diff", str(a), str(b), "-f", "json", "--metric", "device").stdout)
    assert dev["delta_pct"] == pytest.approx(doc["delta_pct_by_metric"]["device"])


def test_cli_markdown_has_totals_and_top_lists(slowed_pair):
    a, b, truth = slowed_pair
    r = run_ttdash("diff", str(a), str(b), "-f", "markdown", "--top", "3")
    assert r.returncode == 0, r.stderr
    md = r.stdout
    assert md.startswith("## ttdash diff")
    assert md.split("\n")[2].startswith("- **Verdict**: ")  # the gate's verdict leads
    for text in ("| Steady state (device + dispatch) * |", "| Device time |",
                 "| Dispatch gaps |", "| Host pauses |", "| Wall (device + all gaps) |",
                 "Speed-up", "### Top 3 regressions", "### Top 3 improvements",
                 "### Added ops (1;", "### Removed ops (1;", "### By op code",
                 "ProbeDeviceOperation"):
        assert text in md, text
    reg = md.split("### Top 3 regressions")[1].split("###")[0]
    rows = [line for line in reg.splitlines() if line.startswith("| 1 ") or line.startswith(
        "| 2 ")]
    first_ids = sorted(truth["slowed"], key=lambda k: -truth["slowed"][k])
    assert f"| {first_ids[0]} |" in rows[0] and f"| {first_ids[1]} |" in rows[1]
    assert "+400 us" in rows[0]
    assert "'+" not in md  # our own numbers are not formula-escaped


def test_cli_fail_above_exit_codes(slowed_pair):
    a, b, _ = slowed_pair
    same = run_ttdash("diff", str(a), str(a), "-f", "json", "--fail-above", "0")
    assert same.returncode == 0 and same.stderr == ""
    slow = run_ttdash("diff", str(a), str(b), "-f", "json", "--fail-above", "0", "--metric", "device")
    assert slow.returncode == 1, slow.stderr
    lines = slow.stderr.splitlines()
    assert len(lines) == 1 and "slower" in lines[0] and "--fail-above 0%" in lines[0]
    assert json.loads(slow.stdout)["ops"]  # the report is still written
    assert run_ttdash("diff", str(a), str(b), "-f", "json", "--fail-above", "50",
               "--metric", "device").returncode == 0
    faster = run_ttdash("diff", str(b), str(a), "-f", "csv", "--fail-above", "0", "--metric", "device")
    assert faster.returncode == 0


def test_cli_bad_input_exit_2_one_line(tmp_path, slowed_pair):
    a, _, _ = slowed_pair
    cases = [
        ("diff", str(tmp_path / "nope.csv"), str(a)),
        ("diff", str(a), str(a), "--top", "0"),
        ("diff", str(a), str(a), "--signpost", "nonexistent"),
        ("diff", str(real_dir() / "tt-perf-report__bh_invalid_trace_decode_window.csv"),
         str(real_dir() / "tt-perf-report__bh_invalid_trace_decode_window.csv"), "-f", "json",
         "--perf-report-window"),
        ("diff", str(a)),
    ]
    (tmp_path / "empty.csv").write_bytes(b"")
    cases.append(("diff", str(a), str(tmp_path / "empty.csv")))
    for args in cases:
        r = run_ttdash(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert len(r.stderr.splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
        assert r.stdout == ""


def test_cli_csv_and_table_keep_text_inert(tmp_path):
    hdr = "OP CODE,OP TYPE,DEVICE ID,DEVICE KERNEL DURATION [ns],OP TO OP LATENCY [ns]\n"
    evil = '"[bold red]x[/]\x1b]0;pwned\x07=cmd|calc",tt_dnn_device,0,1000,5\n'
    ok = "MatmulDeviceOperation,tt_dnn_device,0,1000,500\n"
    (tmp_path / "a.csv").write_text(hdr + evil + ok)
    (tmp_path / "b.csv").write_text(hdr + evil + ok + "=HYPERLINK(1),tt_dnn_device,0,5,5\n")
    r = run_ttdash("diff", str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), "-f", "csv")
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert len(rows) == 3 and [x["status"] for x in rows] == ["matched", "matched", "added"]
    assert rows[2]["op_code"] == "'=HYPERLINK(1)"
    assert {"baseline_id", "candidate_id", "delta_us", "within_noise"} <= set(rows[0])
    table = run_ttdash("diff", str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), "-f", "table",
                env={"NO_COLOR": "1"}).stdout
    assert "\x1b" not in table and "\x07" not in table and "=HYPERLINK(1)" in table
    assert "Device time" in table and "Added ops" in table
    md = run_ttdash("diff", str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), "-f", "markdown").stdout
    assert "\x1b" not in md and "'=HYPERLINK(1)" in md
    # No format on a non-terminal: the table.
    plain = run_ttdash("diff", str(tmp_path / "a.csv"), str(tmp_path / "a.csv"))
    assert plain.returncode == 0 and "Totals" in plain.stdout


def test_model_diff_does_not_import_textual():
    code = ("import sys, ttdash.model.compare.diff, ttdash.report.diff; "
            "sys.exit(1 if any(m.startswith('textual') for m in sys.modules) else 0)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_default_format_opens_the_tui_on_a_terminal_else_falls_back(monkeypatch, capsys,
                                                                    slowed_pair):
    import types

    from ttdash.cli import parse
    from ttdash.commands.diff import diff as run_diff

    a, b, _ = slowed_pair
    _, args = parse(["diff", str(a), str(b), "--theme", "ttdash-light", "--fail-above", "0",
                     "--metric", "device"])
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.setattr("ttdash.commands.common.no_terminal", lambda: None)  # a terminal
    calls = []
    fake = types.ModuleType("ttdash.tui.diffview")
    fake.run_diff_tui = lambda result, theme=None: calls.append((result, theme)) or 0
    monkeypatch.setitem(sys.modules, "ttdash.tui.diffview", fake)
    assert run_diff(args) == 1  # the gate still applies after the interactive view
    assert len(calls) == 1 and calls[0][1] == "ttdash-light"
    assert calls[0][0].counts["matched"] == 1871
    out = capsys.readouterr()
    assert out.out == "" and len(out.err.splitlines()) == 1
    # Without the TUI module: the table.
    monkeypatch.setitem(sys.modules, "ttdash.tui.diffview", None)  # import raises ImportError
    _, args = parse(["diff", str(a), str(b), "-f", "tui"])
    assert run_diff(args) == 0
    assert "Totals" in capsys.readouterr().out


# ------------------------------------------------------------------ regression rule, display frame

def _result_of(rows: list[dict]):
    """A DiffResult around a hand-made pairs table (only `pairs` is filled in)."""
    from ttdash.model.compare.diff import PAIR_COLUMNS, DiffResult

    pairs = pd.DataFrame([{c: row.get(c) for c in PAIR_COLUMNS} for row in rows])
    for c in ("baseline_id", "candidate_id", "baseline_pos", "candidate_pos", "device"):
        pairs[c] = pd.array(pairs[c].tolist(), dtype="Int64")
    for c in ("baseline_us", "candidate_us", "delta_us", "delta_pct", "baseline_gap_us",
              "candidate_gap_us", "noise_pct"):
        pairs[c] = pairs[c].astype("float64")
    pairs["within_noise"] = pd.array(pairs["within_noise"].tolist(), dtype="boolean")
    pairs["moved"] = [bool(v) if v is not None else False for v in pairs["moved"]]
    return DiffResult(baseline=None, candidate=None, pairs=pairs, baseline_totals=None,
                      candidate_totals=None, delta_pct={}, speedup={}, by_op_code=pd.DataFrame(),
                      by_region=pd.DataFrame(), counts={}, top=10)


def _pair(status: str, a_us: float | None, b_us: float | None, **kw) -> dict:
    row = {"status": status, "op_code": kw.pop("op_code", "Op"), "baseline_us": a_us,
           "candidate_us": b_us, "baseline_id": kw.pop("a_id", None),
           "candidate_id": kw.pop("b_id", None),
           "match": kw.pop("match", "exact" if status == "matched" else "")}
    if status == "matched":
        row["delta_us"] = b_us - a_us
        row["delta_pct"] = (b_us - a_us) / a_us * 100 if a_us else None
    else:
        row["delta_us"] = b_us if status == "added" else -a_us
    row["baseline_pos"] = None if row["baseline_id"] is None else row["baseline_id"] - 2
    row["candidate_pos"] = None if row["candidate_id"] is None else row["candidate_id"] - 2
    row.update(kw)
    return row


def test_op_code_only_pairs_are_never_ranked():
    """A pair matched by op code only compares two shapes: it is shown, not ranked."""
    r = _result_of([
        _pair("matched", 100, 300, a_id=2, b_id=2, match="op_code"),  # +200%, other shape
        _pair("matched", 100, 120, a_id=3, b_id=3),  # +20%, same op
        _pair("matched", 100, 50, a_id=4, b_id=4, match="op_code"),  # faster, other shape
    ])
    assert r.regression_mask(5.0).tolist() == [False, True, False]
    assert r.regressions()["baseline_id"].tolist() == [3]
    assert r.improvements().empty


def test_regression_mask_and_the_top_list():
    r = _result_of([
        _pair("matched", 100, 120, a_id=2, b_id=2, within_noise=False),  # +20%
        _pair("matched", 100, 150, a_id=3, b_id=4, moved=True),  # +50%, moved, noise unknown
        _pair("matched", 100, 130, a_id=4, b_id=3, within_noise=True),  # +30%, within noise
        _pair("removed", 100, None, a_id=5),
        _pair("added", None, 7, b_id=5),
        _pair("matched", 100, 104.9, a_id=6, b_id=6, within_noise=False),  # +4.9%
        _pair("matched", 0, 3, a_id=7, b_id=7),  # no delta_pct
        _pair("matched", 100, 60, a_id=8, b_id=8, within_noise=False),  # faster
    ])
    m = r.regression_mask(5.0)
    assert isinstance(m, np.ndarray) and m.dtype == bool and m.shape == (8,)
    assert m.tolist() == [True, True, False, False, True, False, False, False]
    assert r.regression_mask(50.0).tolist() == [False, True, False, False, True, False, False,
                                                False]
    assert r.regression_mask(1e9).tolist() == [False] * 4 + [True] + [False] * 3  # added only
    # Removed ops and ops without a delta_pct never count; faster ones only below 0.
    assert r.regression_mask(-1e9).tolist() == [True, True, False, False, True, True, False,
                                                True]
    # The top list: matched, slower, not within noise, largest delta first, no added ops.
    top = r.regressions(100)
    assert top.index.tolist() == [1, 0, 5, 6]
    assert set(top.index) >= set(np.flatnonzero(r.regression_mask(1e-9)
                                                & (r.pairs["status"] == "matched").to_numpy()))
    assert r.regressions(100, include_noise=True).index.tolist() == [1, 2, 0, 5, 6]
    assert r.regressions(1).index.tolist() == [1]


def test_regression_mask_on_a_real_diff_matches_noise_labels(tmp_path):
    jitter = np.array([1.00, 0.96, 1.04, 0.97, 1.03, 1.00])
    base = {"Matmul": 100_000 * jitter, "Softmax": 20_000 * jitter, "Add": 5_000 * jitter,
            "Reshape": np.full(6, 8_000.0)}
    cand = {"Matmul": base["Matmul"] * 1.02, "Softmax": base["Softmax"] * 1.40,
            "Add": base["Add"] * 0.70, "Reshape": base["Reshape"] * 1.05,
            "Probe": np.full(6, 3_000.0)}
    _noise_csv(tmp_path / "a.csv", base)
    _noise_csv(tmp_path / "b.csv", cand, names=("Matmul", "Softmax", "Probe", "Add", "Reshape"))
    r = diff_traces(view(tmp_path / "a.csv", Window("all")), view(tmp_path / "b.csv",
                                                                   Window("all")))
    p = r.pairs
    assert r.counts["added"] == 6 and r.counts["matched"] == 24

    def codes(mask: np.ndarray) -> dict[str, int]:
        return p.loc[mask, "op_code"].value_counts().to_dict()

    assert codes(r.regression_mask(10.0)) == {"Softmax": 6, "Probe": 6}
    assert codes(r.regression_mask(4.0)) == {"Softmax": 6, "Reshape": 6, "Probe": 6}
    assert "Matmul" not in codes(r.regression_mask(0.0))  # +2% is within noise
    matched = (p["status"] == "matched").to_numpy()
    assert set(r.regressions(100).index) == set(p.index[r.regression_mask(1e-9) & matched])


def test_display_frame_is_the_pairs_as_the_table_shows_them():
    r = _result_of([
        _pair("matched", 100, 120, a_id=2, b_id=2, within_noise=False, region="decode #1",
              baseline_bound="DRAM", candidate_bound="DRAM", size="1x1x32x32"),
        _pair("matched", 100, 150, a_id=3, b_id=4, moved=True, region="decode #1",
              baseline_bound="FLOP", candidate_bound="SLOW"),
        _pair("removed", 100, None, a_id=4, region="decode #2", baseline_bound="SLOW"),
        _pair("added", None, 7, b_id=3, region=None),
    ])
    f = r.display_frame()
    assert list(f.columns) == [
        "id", "baseline_id", "candidate_id", "status", "op_code", "size", "baseline_us",
        "candidate_us", "delta_us", "delta_pct", "delta_bar", "within_noise", "bounds",
        "baseline_gap_us", "candidate_gap_us", "region", "region_label", "signpost",
        "baseline_pos", "candidate_pos", "is_signpost"]
    assert f.index.tolist() == [0, 1, 2, 3]
    assert f["status"].tolist() == ["matched", "moved", "removed", "added"]
    assert f["id"].tolist() == [2.0, 4.0, 4.0, 3.0]  # the candidate's id, else the baseline's
    assert f["id"].dtype == "float64" and np.isnan(f["candidate_id"][2])
    assert f["within_noise"].dtype == bool and f["within_noise"].tolist() == [False] * 4
    assert f["bounds"].tolist() == ["DRAM", "FLOP→SLOW", "SLOW→", ""]
    assert f["region"].tolist() == [1, 1, 2, 0]
    assert f["region_label"].tolist() == ["decode #1", "decode #1", "decode #2", ""]
    assert f["signpost"].tolist()[:3] == ["decode #1", "decode #1", "decode #2"]
    assert pd.isna(f["signpost"][3])
    assert f["size"].tolist() == ["1x1x32x32", "", "", ""]
    assert np.array_equal(f["delta_bar"], f["delta_pct"], equal_nan=True)
    assert not f["is_signpost"].any()
    assert f["baseline_pos"].tolist()[:3] == [0.0, 1.0, 2.0] and np.isnan(f["baseline_pos"][3])
