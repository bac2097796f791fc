#!/usr/bin/env python3
"""The live table's growth: what each doubling of its buffers costs, in a process of its own.

Usage: python benchmarks/bench_live_growth.py [--rows 560000] [--poll-bytes 300000]
       [--before DIR] [--repeat 2]

A 32-device `cpp_device_perf_report.csv` of --rows rows (made once in benchmarks/out) is read
the way `watch` reads it: a tailer polls --poll-bytes at a time (300,000 bytes: ~1,350 rows, a
Galaxy's refresh), the live model takes the rows and makes its frames after each poll. Printed:
the CPU of each growth of the two stores past 100,000 rows (`ColumnStore._grow`), and the
median and slowest model refresh. --before DIR (a folder holding an older `ttdash` package)
runs the same in turn, --repeat times each.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "benchmarks" / "out"


def make_log(rows: int) -> Path:
    path = OUT / f"live_growth_{rows}" / ".logs" / "cpp_device_perf_report.csv"
    if not path.exists():
        from ttdash.sim import cpp_device_rows, generate_ops, write_cpp_device_csv

        path.parent.mkdir(parents=True, exist_ok=True)
        made = cpp_device_rows(generate_ops(-(-rows // 32), devices=32, seed=11))
        write_cpp_device_csv(made.iloc[:rows], path)
    return path


def child(path: Path, poll_bytes: int) -> dict:
    import numpy as np

    from ttdash.live.tailer import CsvTailer
    from ttdash.model.live.table import ColumnStore, LiveModel

    grows = []
    grow = ColumnStore._grow

    def timed(self, capacity, like):
        c0 = time.process_time()
        grow(self, capacity, like)
        if self.n >= 100_000:
            grows.append((self.n, len(self._cols), (time.process_time() - c0) * 1000))

    ColumnStore._grow = timed
    model = LiveModel(path.parent.parent)
    tailer = CsvTailer(path, max_bytes=poll_bytes)
    refresh = []
    while (got := tailer.poll()).rows:
        model.add_rows(path, tailer.header, got.rows, got.lines)
        c0 = time.process_time()
        model.frames()
        refresh.append((time.process_time() - c0) * 1000)
    return {"grows": grows, "median": float(np.median(refresh)), "max": max(refresh),
            "refreshes": len(refresh), "rows": model.total_rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=560_000)
    ap.add_argument("--poll-bytes", type=int, default=300_000)
    ap.add_argument("--before", type=Path, help="a folder holding an older ttdash package")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.poll_bytes)))
        return
    path = make_log(args.rows)
    trees = ([("before", args.before)] if args.before else []) + [("after", REPO)]
    for _ in range(args.repeat):
        for name, tree in trees:
            env = {**os.environ, "PYTHONPATH": str(tree)}
            out = subprocess.run([sys.executable, __file__, "--child", str(path),
                                  "--poll-bytes", str(args.poll_bytes)],
                                 capture_output=True, text=True, env=env, cwd="/", check=True)
            r = json.loads(out.stdout)
            grows = ", ".join(f"{n:,} rows x {c} columns {ms:.0f} ms" for n, c, ms in r["grows"])
            print(f"{name}: {r['refreshes']} refreshes of {r['rows']:,} rows, model CPU median "
                  f"{r['median']:.1f} ms, slowest {r['max']:.0f} ms; growths: {grows}")


if __name__ == "__main__":
    main()
