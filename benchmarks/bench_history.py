#!/usr/bin/env python3
"""The run history at scale: a store of 1,000 runs x 1,872 ops (list, trend, check, add, DuckDB
over every op) and `history add` of a 1M-op run beside `report` of the same file.

Usage: python benchmarks/bench_history.py [--runs 1000] [--big 535] [--skip-big]
Prints a markdown table. Whole commands are timed (python start-up included), each the median of
3. The 1,000 runs are written through the store's own add (the analysis of one real trace reused,
its totals jittered), so building the store takes a minute, not a thousand analyses.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from common import REAL, measure, python, repeated_trace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def build_store(store_dir: Path, runs: int, src: Path) -> tuple[float, int]:
    """`runs` runs of `src`'s analysis (jittered totals); (seconds, ops per run)."""
    import numpy as np

    from ttdash.commands.common import load_view
    from ttdash.commands.options import WindowOptions
    from ttdash.history import schema
    from ttdash.history.record import RunRecord, build
    from ttdash.history.store import Store

    view = load_view(str(src), WindowOptions())
    base = build(view, labels={"model": "clip", "bench": "1"})
    batches = list(schema.op_batches(view))
    store = Store.open(str(store_dir))
    rng = np.random.default_rng(7)
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    start = time.perf_counter()
    for i in range(runs):
        k = float(rng.normal(1.0, 0.01))
        row = dict(base.row)
        row.update(run_id=f"{i:016x}", sha256=f"{i:064x}", added_at=t0 + timedelta(hours=i),
                   steady_us=row["steady_us"] * k, device_time_us=row["device_time_us"] * k,
                   labels=sorted({**dict(base.row["labels"]), "batch": str(8 << (i % 3))
                                  }.items()),
                   op_codes=[{**g, "steady_us": g["steady_us"] * k} for g in row["op_codes"]])
        store.add(RunRecord(run_id=row["run_id"], arch=base.arch, row=row, view=view),
                  batches=batches)
    return time.perf_counter() - start, int(base.row["ops"])


def median_cmd(cmd: list[str], n: int = 3) -> tuple[float, float]:
    runs = [measure(cmd) for _ in range(n)]
    return statistics.median(r[0] for r in runs), max(r[1] for r in runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--big", type=int, default=535, help="repeats of the real trace for the "
                    "big add (535: 1,001,520 rows)")
    ap.add_argument("--skip-big", action="store_true")
    args = ap.parse_args()
    src = REAL / "tt-perf-report__wh_clip_encoder_2.csv"
    ttdash = [python(), "-m", "ttdash"]
    rows = []
    with tempfile.TemporaryDirectory(prefix="ttdash-bench-history-") as tmp:
        store = Path(tmp) / "store"
        secs, ops = build_store(store, args.runs, src)
        files = sum(1 for _ in (store / "runs").rglob("*.parquet"))
        size = sum(p.stat().st_size for p in store.rglob("*") if p.is_file()) / 1e6
        rows.append((f"build: {args.runs:,} adds of {ops:,} ops (store only)",
                     f"{secs:.1f} s ({secs / args.runs * 1000:.0f} ms an add)",
                     f"{size:.0f} MB on disk, {files} runs files"))
        s = ["--store", str(store)]
        for label, cmd in (
                ("history list", ["history", "list", *s]),
                ("history list --format json", ["history", "list", *s, "-f", "json"]),
                ("history trend --op MinimalMatmulOp", ["history", "trend", *s, "--op",
                                                        "MinimalMatmulOp"]),
                ("history trend --where batch=8 --last 50",
                 ["history", "trend", *s, "--where", "batch=8", "--last", "50"]),
                ("history check (analyses the 1,872-op run too)",
                 ["history", "check", *s, str(src), "--fail-above", "5"]),
                ("report -f csv of that run (for scale)", ["report", str(src), "-f", "csv"]),
                ("history add of one more run", None),
                (f"history sql: count(*) over {args.runs * ops:,} ops",
                 ["history", "sql", *s, "SELECT count(*) FROM ops"])):
            if cmd is None:
                other = Path(tmp) / "other.csv"
                other.write_bytes(src.read_bytes() + b"\n")
                wall, rss = measure(ttdash + ["history", "add", *s, str(other)])
            else:
                try:
                    wall, rss = median_cmd(ttdash + cmd)
                except RuntimeError:  # check exits 1 on a regression: time it anyway
                    t0 = time.perf_counter()
                    subprocess.run(ttdash + cmd, capture_output=True)
                    wall, rss = time.perf_counter() - t0, float("nan")
            rows.append((label, f"{wall:.2f} s", f"{rss:.0f} MB"))
        if not args.skip_big:
            big = repeated_trace(src, args.big)
            n = sum(1 for _ in open(big, "rb")) - 1
            rep = measure(ttdash + ["report", str(big), "-f", "csv"])
            add = measure(ttdash + ["history", "add", "--store", str(Path(tmp) / "big"),
                                    str(big)])
            rows.append((f"report -f csv, {n:,} ops", f"{rep[0]:.1f} s", f"{rep[1]:.0f} MB"))
            rows.append((f"history add, {n:,} ops", f"{add[0]:.1f} s", f"{add[1]:.0f} MB"))
    print(f"| {args.runs:,} runs x {ops:,} ops | wall | peak RSS / size |")
    print("|---|---:|---:|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
