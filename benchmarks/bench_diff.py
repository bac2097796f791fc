#!/usr/bin/env python3
"""ttdash diff alignment vs plain difflib.SequenceMatcher on the same perturbed traces.

Baseline: wh_clip_encoder_2 repeated N times (1,872 / 18,720 / 93,600 ops). Candidate: a copy
with known changes (ops slowed down, deleted, inserted, adjacent pairs swapped). For each size,
prints a markdown table row: alignment time, match rate (matched / longer side) and whether the
known inserted and deleted ops were recovered exactly, for ttdash and for difflib on op codes
(autojunk off; run in a child process and abandoned after --timeout seconds).

Usage: python benchmarks/bench_diff.py [--sizes 1,10,50] [--timeout 60]
"""

from __future__ import annotations

import argparse
import difflib
import multiprocessing as mp
import time
from pathlib import Path

import numpy as np
import pandas as pd
from common import OUT, REAL, repeated_trace

SHAPE_PREFIX = "INPUT_"


def _signature(df: pd.DataFrame) -> np.ndarray:
    cols = ["OP CODE"] + [c for c in df.columns if c.startswith(SHAPE_PREFIX)
                          and c.endswith(("_W", "_Z", "_Y", "_X", "_DATATYPE"))]
    return df[cols].astype(str).agg("\x1f".join, axis=1).factorize()[0]


def perturbed(src: Path, dest: Path, seed: int = 7, rate: float = 0.002) -> dict:
    """Write a candidate CSV with known changes; return the ground truth (tt-perf-report IDs)."""
    df = pd.read_csv(src, dtype=str, keep_default_na=False)
    n = len(df)
    rng = np.random.default_rng(seed)
    sig = _signature(df)
    k = max(2, int(n * rate))
    # Unambiguous sites: an op whose signature differs from both neighbours (deleting one of
    # three identical ops in a row has three equally right answers).
    distinct = np.zeros(n, dtype=bool)
    distinct[1:-1] = (sig[1:-1] != sig[:-2]) & (sig[1:-1] != sig[2:])
    sites = np.flatnonzero(distinct)
    sites = sites[(sites > 4) & (sites < n - 5)]
    picked = np.sort(rng.choice(sites, size=min(len(sites), 4 * k), replace=False))
    picked = picked[np.concatenate([[True], np.diff(picked) > 4])]  # keep changes apart
    rng.shuffle(picked)
    delete, slow, swap, insert = (np.sort(picked[i::4]) for i in range(4))
    swap = swap[(sig[swap + 1] != sig[swap]) & (sig[swap + 1] != sig[swap - 1])
                & (sig[swap] != sig[np.minimum(swap + 2, n - 1)])]

    dur = pd.to_numeric(df["DEVICE KERNEL DURATION [ns]"], errors="coerce")
    extra = np.round(dur.iloc[slow].to_numpy() * rng.uniform(0.1, 0.5, len(slow)))
    df.loc[df.index[slow], "DEVICE KERNEL DURATION [ns]"] = (dur.iloc[slow] + extra).astype(
        "int64").astype(str).to_numpy()

    order = np.arange(n)
    order[swap], order[swap + 1] = swap + 1, swap.copy()
    keep = np.ones(n, dtype=bool)
    keep[np.isin(order, delete)] = False
    ins_after = set(insert.tolist())
    rows, inserted_flag = [], []
    for pos in np.flatnonzero(keep):  # one Python step per row of a benchmark input: fine
        rows.append(order[pos])
        inserted_flag.append(False)
        if order[pos] in ins_after:
            rows.append(order[pos])
            inserted_flag.append(True)
    cand = df.iloc[rows].reset_index(drop=True)
    flag = np.array(inserted_flag)
    cand.loc[flag, "OP CODE"] = "ProbeDeviceOperation"
    cand["HOST START TS"] = (np.arange(len(cand)) * 1000 + 1).astype(str)
    cand.to_csv(dest, index=False)
    return {"deleted": set((delete + 2).tolist()), "inserted": set((np.flatnonzero(flag) + 2)
                                                                   .tolist()),
            "slowed": dict(zip((slow + 2).tolist(), (extra / 1000).tolist())),
            "swapped": set((swap + 2).tolist()) | set((swap + 3).tolist())}


def _difflib_child(a: list, b: list, q: mp.Queue) -> None:
    t0 = time.perf_counter()
    blocks = difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()
    ma = [blk.a + i for blk in blocks for i in range(blk.size)]
    mb = [blk.b + i for blk in blocks for i in range(blk.size)]
    q.put((time.perf_counter() - t0, ma, mb))


def run_difflib(a: list, b: list, timeout: float) -> tuple[float, list, list] | None:
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_difflib_child, args=(a, b, q), daemon=True)
    p.start()
    try:
        return q.get(timeout=timeout)
    except Exception:  # queue.Empty: too slow
        return None
    finally:
        if p.is_alive():
            p.kill()
        p.join()


def _exact(removed_ids: set, added_ids: set, truth: dict) -> str:
    ok = removed_ids == truth["deleted"] and added_ids == truth["inserted"]
    return "yes" if ok else (f"no ({len(removed_ids ^ truth['deleted'])} removed, "
                             f"{len(added_ids ^ truth['inserted'])} added differ)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1,10,50", help="repeat factors (default 1,10,50)")
    ap.add_argument("--timeout", type=float, default=60.0, help="difflib time limit, seconds")
    args = ap.parse_args()

    from ttdash.model import Trace
    from ttdash.model.diff import diff_traces

    src = REAL / "tt-perf-report__wh_clip_encoder_2.csv"
    print("| ops per side | changes | ttdash diff (align) | ttdash match rate | ttdash exact | "
          "difflib (op codes) | difflib match rate | difflib exact |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k in (int(x) for x in args.sizes.split(",")):
        base_path = src if k == 1 else repeated_trace(src, k)
        cand_path = OUT / f"diff_candidate_x{k}.csv"
        OUT.mkdir(parents=True, exist_ok=True)
        truth = perturbed(base_path, cand_path)
        a = Trace.load(base_path).view()
        b = Trace.load(cand_path).view()
        t0 = time.perf_counter()
        res = diff_traces(a, b)
        total = time.perf_counter() - t0
        p = res.pairs
        ours_rm = set(p.loc[p["status"] == "removed", "baseline_id"].astype(int).tolist())
        ours_add = set(p.loc[p["status"] == "added", "candidate_id"].astype(int).tolist())
        longest = max(len(a.op_rows), len(b.op_rows))
        changes = (f"{len(truth['slowed'])} slower, {len(truth['deleted'])} deleted, "
                   f"{len(truth['inserted'])} inserted, {len(truth['swapped']) // 2} swaps")

        codes_a = a.op_rows["op_code"].astype(str).tolist()
        codes_b = b.op_rows["op_code"].astype(str).tolist()
        dl = run_difflib(codes_a, codes_b, args.timeout)
        if dl is None:
            dl_time, dl_rate, dl_exact = f"> {args.timeout:g} s (stopped)", "-", "-"
        else:
            secs, ma, mb = dl
            ids_a = a.op_rows["id"].to_numpy()
            ids_b = b.op_rows["id"].to_numpy()
            rm = set(np.delete(ids_a, ma).tolist())
            ad = set(np.delete(ids_b, mb).tolist())
            dl_time, dl_rate, dl_exact = f"{secs:.2f} s", f"{len(ma) / longest:.2%}", \
                _exact(rm, ad, truth)
        print(f"| {longest:,} | {changes} | {total:.2f} s ({res.seconds['align']:.2f} s) | "
              f"{res.match_rate:.2%} | {_exact(ours_rm, ours_add, truth)} | {dl_time} | "
              f"{dl_rate} | {dl_exact} |", flush=True)


if __name__ == "__main__":
    main()
