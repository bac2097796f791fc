#!/usr/bin/env python3
"""ttdash report vs tt-perf-report on the same N-row traces (wh_clip_encoder_2 repeated).

Usage: python benchmarks/bench_report.py [--sizes 1,10,50] [--skip-reference]
Prints a markdown table of wall time and peak RSS per tool and size.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from common import REAL, measure, python, repeated_trace


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="1,10,50", help="repeat factors (default 1,10,50)")
    ap.add_argument("--skip-reference", action="store_true", help="do not run tt-perf-report")
    args = ap.parse_args()
    src = REAL / "tt-perf-report__wh_clip_encoder_2.csv"
    print("| rows | ttdash table (default) | ttdash csv | ttdash json | tt-perf-report --csv "
          "--no-advice --no-summary | tt-perf-report (default: table, advice, summary) | "
          "speed-up of ttdash's table vs each |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for k in (int(x) for x in args.sizes.split(",")):
        trace = src if k == 1 else repeated_trace(src, k)
        rows = sum(1 for _ in open(trace, "rb")) - 1
        cold = "--no-cache"  # each run parses the CSV, as tt-perf-report does
        table = measure([python(), "-m", "ttdash", "report", str(trace), cold])
        ours = measure([python(), "-m", "ttdash", "report", str(trace), "-f", "csv", cold])
        ours_json = measure([python(), "-m", "ttdash", "report", str(trace), "-f", "json", cold])
        if args.skip_reference:
            ref_s = full_s = speed = "-"
        else:
            with tempfile.TemporaryDirectory() as d:
                ref = measure([python(), "-m", "tt_perf_report.perf_report", str(trace), "--csv",
                               str(Path(d) / "o.csv"), "--no-advice", "--no-summary"])
            full = measure([python(), "-m", "tt_perf_report.perf_report", str(trace)])
            ref_s = f"{ref[0]:.2f} s, {ref[1]:.0f} MB"
            full_s = f"{full[0]:.2f} s, {full[1]:.0f} MB"
            speed = f"{ref[0] / table[0]:.0f}x / {full[0] / table[0]:.0f}x"
        print(f"| {rows:,} | {table[0]:.2f} s, {table[1]:.0f} MB | {ours[0]:.2f} s, "
              f"{ours[1]:.0f} MB | {ours_json[0]:.2f} s, "
              f"{ours_json[1]:.0f} MB | {ref_s} | {full_s} | {speed} |", flush=True)


if __name__ == "__main__":
    main()
