#!/usr/bin/env python3
"""ttdash diff alignment vs plain difflib.SequenceMatcher on the same perturbed traces.

Baseline: wh_clip_encoder_2 repeated N times (1,872 / 18,720 / 93,600 ops). Candidate: a copy
with known changes (ops slowed down, deleted, inserted, adjacent pairs swapped). For each size,
prints a markdown table row: alignment time, match rate (matched / longer side) and whether the
known inserted and deleted ops were recovered exactly, for ttdash and for difflib on op codes
(autojunk off; run in a child process and abandoned after --timeout seconds).

A million ops a side (issue #51 item 4): `--big 535` builds the two sides the same way at
1,001,520 rows (the trace repeated 535 times, the candidate edited as above) and prints, in one
run: the `ttdash diff` command's stage times (load, signatures, alignment, pairs frame, changes,
output) and peak RSS after each stage for every output format and with `--fail-above`, the
match rate and whether the known edits were recovered exactly, and each whole command against
one side's cold `report -f csv` (all cold: `--no-cache`; the report and the diffs interleaved,
--repeat times, each figure the median of its runs; peak RSS from each child's rusage).

Usage: python benchmarks/bench_diff.py [--sizes 1,10,50] [--timeout 60]
       python benchmarks/bench_diff.py --big 535 [--repeat 3] [--formats table,csv,json,markdown]
"""

from __future__ import annotations

import argparse
import difflib
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from common import OUT, REAL, measure, python, repeated_trace

SHAPE_PREFIX = "INPUT_"


def _signature(df: pd.DataFrame) -> np.ndarray:
    cols = ["OP CODE"] + [c for c in df.columns if c.startswith(SHAPE_PREFIX)
                          and c.endswith(("_W", "_Z", "_Y", "_X", "_DATATYPE"))]
    return df[cols].astype(str).agg("\x1f".join, axis=1).factorize()[0]


def perturbed(src: Path, dest: Path, seed: int = 7, rate: float = 0.002) -> dict:
    """Write a candidate CSV with known changes; return the ground truth (tt-perf-report IDs)."""
    # Arrow-backed text: a million rows of ~100 text columns as Python strs would take ~6 GB.
    df = pd.read_csv(src, dtype="string[pyarrow]", keep_default_na=False)
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


# ==================================================================== a million ops a side

def _hwm_mib() -> float:
    """This process's peak RSS so far (VmHWM), MiB."""
    with open(f"/proc/{os.getpid()}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def stages_child(argv: list[str], truth_path: str) -> None:
    """Run `ttdash diff ARGV` in this process, its output thrown away, and print one JSON line:
    each stage's seconds and the peak RSS after it, the match rate and the exact recovery of
    the known edits (the functions the command calls are wrapped, nothing else changes)."""
    import ttdash.commands.diff as cmd
    import ttdash.model.compare.diff as mdiff
    import ttdash.report.diff as rdiff
    from ttdash.cli import main as cli_main

    rec: dict = {"seconds": {}, "peak_mib": {}}

    def timed(name, fn):
        def run(*a, **k):
            t0 = time.perf_counter()
            out = fn(*a, **k)
            rec["seconds"][name] = time.perf_counter() - t0
            rec["peak_mib"][name] = _hwm_mib()
            return out
        return run

    load, diff_traces, render = cmd.load_views, mdiff.diff_traces, rdiff.render_diff
    cmd.load_views = timed("load", load)

    def diffed(*a, **k):
        res = timed("diff", diff_traces)(*a, **k)
        if "align" in k or len(a) < 2 or rec.get("rate") is not None:
            return res  # a further run's alignment (--baseline-runs): not the benchmark's
        rec["stages"] = dict(res.seconds)
        p = res.pairs
        rm = set(p.loc[p["status"] == "removed", "baseline_id"].astype(int).tolist())
        ad = set(p.loc[p["status"] == "added", "candidate_id"].astype(int).tolist())
        truth = json.loads(open(truth_path).read())
        rec["rate"] = res.match_rate
        rec["exact"] = _exact(rm, ad, {"deleted": set(truth["deleted"]),
                                       "inserted": set(truth["inserted"])})
        return res

    mdiff.diff_traces = diffed
    rdiff.render_diff = timed("output", render)
    sys.stdout = open(os.devnull, "w")
    t0 = time.perf_counter()
    rc = cli_main(["diff", *argv])  # 0, or the gate's 1 or 3
    rec["seconds"]["whole"] = time.perf_counter() - t0
    rec["rc"] = rc
    sys.stdout = sys.__stdout__
    print(json.dumps(rec), flush=True)
    if rc not in (0, 1, 3):
        raise SystemExit(rc)


def big_inputs(times: int) -> tuple[Path, Path, Path]:
    """The baseline (the trace repeated `times` times), the edited candidate and its ground
    truth (JSON), built once into benchmarks/out."""
    base = repeated_trace(REAL / "tt-perf-report__wh_clip_encoder_2.csv", times)
    cand = OUT / f"diff_candidate_x{times}.csv"
    truth_path = OUT / f"diff_candidate_x{times}.truth.json"
    if not (cand.exists() and truth_path.exists()):
        truth = perturbed(base, cand)
        truth_path.write_text(json.dumps({k: sorted(v) for k, v in truth.items()
                                          if k in ("deleted", "inserted", "swapped")}))
    return base, cand, truth_path


def big(times: int, formats: list[str], repeat: int) -> None:
    base, cand, truth_path = big_inputs(times)
    rows = sum(1 for _ in open(base, "rb")) - 1
    cases = [(f, ["-f", f]) for f in formats] + [("json --fail-above 5",
                                                  ["-f", "json", "--fail-above", "5"])]
    report_runs: list[tuple[float, float]] = []
    diff_runs: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in cases}
    stage_runs: dict[str, list[dict]] = {name: [] for name, _ in cases}
    for _ in range(repeat):  # interleaved: the machine's drift falls on every case alike
        report_runs.append(measure([python(), "-m", "ttdash", "report", str(base), "-f", "csv",
                                    "--no-cache"]))
        for name, flags in cases:
            argv = [str(base), str(cand), *flags, "--no-cache"]
            # The whole command's time and peak RSS are the child's own (os.wait4), the child
            # being the command run in-process with its stages timed.
            t0 = time.perf_counter()
            proc = subprocess.Popen([python(), __file__, "--stages-of", json.dumps(argv),
                                     str(truth_path)], stdout=subprocess.PIPE, text=True)
            text = proc.stdout.read() if proc.stdout else ""
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - t0
            if os.waitstatus_to_exitcode(status) != 0:
                raise RuntimeError(f"diff {argv} failed: {status}")
            stage_runs[name].append(json.loads(text.strip().splitlines()[-1]))
            diff_runs[name].append((wall, usage.ru_maxrss / 1024.0))

    def med(xs: list[float]) -> float:
        return statistics.median(xs)

    rep_t = med([t for t, _ in report_runs])
    rep_m = med([m for _, m in report_runs])
    print(f"{rows:,} ops a side; {repeat} runs of each, interleaved; medians. One side's cold "
          f"`report -f csv --no-cache`: {rep_t:.2f} s, {rep_m:.0f} MiB peak RSS.\n")
    print("| diff, cold | whole | / report | peak RSS | load | signatures | align | pairs "
          "frame | changes | rest of diff | output | peak after load / diff / output | "
          "match rate | exact |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|")
    for name, _ in cases:
        t = med([x for x, _ in diff_runs[name]])
        m = med([x for _, x in diff_runs[name]])
        st = stage_runs[name]

        def s(key: str, sub: str = "seconds", st: list[dict] = st) -> float:
            return med([r[sub].get(key, float("nan")) for r in st])

        inner = {k: med([r["stages"][k] for r in st]) for k in st[0]["stages"]}
        rest = s("diff") - sum(inner.values())
        print(f"| `-f {name}` | {t:.2f} s | {t / rep_t:.2f}x | {m:.0f} MiB | {s('load'):.2f} s "
              f"| {inner.get('signatures', 0):.2f} s | {inner.get('align', 0):.2f} s | "
              f"{inner.get('frame', 0):.2f} s | {inner.get('changes', 0):.2f} s | "
              f"{rest:.2f} s | {s('output'):.2f} s | {s('load', 'peak_mib'):.0f} / "
              f"{s('diff', 'peak_mib'):.0f} / {s('output', 'peak_mib'):.0f} MiB | "
              f"{st[0]['rate']:.2%} | {st[0]['exact']} |", flush=True)
    print("\nsingle runs, diff / report: " + "; ".join(
        f"{name} " + ", ".join(f"{d[0] / r[0]:.2f}x" for d, r in zip(diff_runs[name],
                                                                     report_runs))
        for name, _ in cases))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1,10,50", help="repeat factors (default 1,10,50)")
    ap.add_argument("--timeout", type=float, default=60.0, help="difflib time limit, seconds")
    ap.add_argument("--big", type=int, default=0,
                    help="repeat factor of the million-a-side case (535: 1,001,520 ops)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each case with --big")
    ap.add_argument("--formats", default="table,csv,json,markdown",
                    help="diff output formats with --big")
    ap.add_argument("--stages-of", nargs=2, metavar=("ARGV_JSON", "TRUTH"),
                    help=argparse.SUPPRESS)  # the child of --big
    args = ap.parse_args()
    if args.stages_of:
        stages_child(json.loads(args.stages_of[0]), args.stages_of[1])
        return
    if args.big:
        big(args.big, args.formats.split(","), args.repeat)
        return

    from ttdash.model import Trace
    from ttdash.model.compare.diff import diff_traces

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
