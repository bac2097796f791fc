#!/usr/bin/env python3
"""What the why-slow analysis (issue #34) adds to `ttdash report`, on wh_clip_encoder_2 repeated
(93,600 and 1,001,520 rows by default, the traces bench_report / bench_galaxy build).

Usage: python benchmarks/bench_why.py [--sizes 50,535] [--repeat 3] [--formats table,csv,json]
                                      [--big-formats table,csv]

Each run is `ttdash report FILE -f FMT --no-cache` (a cold read, as bench_galaxy's) in a fresh
process, once as shipped ("with") and once with the analysis switched off inside that process
("without"; ttdash has no switch for it, so this script's child replaces, before the report
runs: the per-op columns pm_eff_pct/recoverable_us/pm_bound (model.perfmodel.pm_columns),
core_skew/grid_pct/dispatch (model.imbalance.imbalance_columns) and the collectives' bytes and
bandwidth (model.ccl.ccl_columns) by NaN columns; the six CSV columns only this analysis reads
(PER CORE MAX/AVG, the two DISPATCH times, PROGRAM HASH, PROGRAM CACHE HIT) left unread; the
report's sections (headline, performance model, core balance, collectives, program cache, and
their JSON keys) left out). The data-trust warnings stay in both.

The runs are interleaved (with, without, with, ...) and each figure is the least CPU time
(user + system, from the child's rusage) of --repeat runs: a loaded machine only adds time.
Prints a markdown table: rows, format, CPU s with and without, the added share, and the wall
times; then the load average. The issue's target: at most 10% added.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from common import REAL, python, repeated_trace

SRC = REAL / "tt-perf-report__wh_clip_encoder_2.csv"
#: The CSV columns only the why-slow analysis reads (model.loader.ANALYSIS_EXTRA's #34 part).
WHY_COLUMNS = ("DEVICE KERNEL DURATION PER CORE MAX [ns]",
               "DEVICE KERNEL DURATION PER CORE AVG [ns]",
               "DISPATCH TOTAL CQ CMD OP TIME [ns]", "DISPATCH GO SEND WAIT TIME [ns]",
               "PROGRAM HASH", "PROGRAM CACHE HIT")


def analysis_off() -> None:
    """Switch the why-slow analysis off in this process (see the module docstring)."""
    import numpy as np

    from ttdash.model.analysis import ccl, metrics
    from ttdash.model.read import loader
    from ttdash.report import single

    loader.ANALYSIS_EXTRA = tuple(c for c in loader.ANALYSIS_EXTRA if c not in WHY_COLUMNS)

    def nan_columns(keys, n):
        return {k: np.full(n, np.nan) for k in keys}

    metrics.pm_columns = lambda dur, *a: {
        **nan_columns(("pm_eff_pct", "recoverable_us"), len(dur)),
        "pm_bound": np.full(len(dur), None, dtype=object)}
    metrics.imbalance_columns = lambda mx, *a: nan_columns(
        ("core_skew", "grid_pct", "dispatch_cq_us", "go_wait_us"), len(mx))
    ccl.ccl_columns = lambda rows, op_code, dur, *a: nan_columns(
        ("ccl_bytes", "ccl_gbps", "ccl_link_pct"), len(dur))
    single.headline = lambda view, *a: None
    single.why_lines = lambda view: []
    single.why_sections = lambda view: []
    single.why_dict = lambda view: {"performance_model": None, "core_balance": None,
                                    "ccl_bandwidth": None, "program_cache": None}


def child(mode: str, args: list[str]) -> int:
    if mode == "without":
        analysis_off()
    from ttdash.cli import main

    return main(args)


def run(mode: str, trace, fmt: str) -> tuple[float, float]:
    """(CPU s, wall s) of one report in a fresh process."""
    cmd = [python(), __file__, "--child", mode, "report", str(trace), "-f", fmt, "--no-cache"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{cmd} exited with {status}: {err}")
    return usage.ru_utime + usage.ru_stime, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="50,535", help="repeat factors (default 50,535: "
                    "93,600 and 1,001,520 rows)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per figure (least taken)")
    ap.add_argument("--formats", default="table,csv,json", help="formats at the small size")
    ap.add_argument("--big-formats", default="table,csv",
                    help="formats at sizes of 500,000 rows or more")
    args = ap.parse_args()
    print("| rows | format | CPU with | CPU without | added | wall with | wall without |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for k in (int(x) for x in args.sizes.split(",")):
        trace = SRC if k == 1 else repeated_trace(SRC, k)
        rows = sum(1 for _ in open(trace, "rb")) - 1
        fmts = args.formats if rows < 500_000 else args.big_formats
        for fmt in fmts.split(","):
            best = {"with": (float("inf"), float("inf")), "without": (float("inf"), float("inf"))}
            for _ in range(args.repeat):
                for mode in ("with", "without"):
                    cpu, wall = run(mode, trace, fmt)
                    best[mode] = (min(best[mode][0], cpu), min(best[mode][1], wall))
            (cw, ww), (co, wo) = best["with"], best["without"]
            print(f"| {rows:,} | {fmt} | {cw:.2f} s | {co:.2f} s | {(cw - co) / co * 100:+.1f}% "
                  f"| {ww:.2f} s | {wo:.2f} s |", flush=True)
    print(f"\nload average (1, 5, 15 min) at the end: "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        sys.exit(child(sys.argv[2], sys.argv[3:]))
    main()
