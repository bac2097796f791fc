#!/usr/bin/env python3
"""Timeline, roofline and Perfetto export: are they as fast as the table at real sizes?

Usage: python benchmarks/bench_views.py [--sizes 1,50] [--galaxy-ops 1000000]

1. In-process, for the real wh_clip_encoder_2 trace repeated k times and a synthetic Galaxy run
   (32 devices, --galaxy-ops rows in all): the time to place every op (model.timeline.build,
   once per view) and to draw one screen of lanes (model.timeline.binned for every lane shown,
   200 columns; what each key costs), median of 5.
2. In a real terminal (tmux, 120x40) on the installed `ttdash open`: the time from a key to the
   screen changing for `4` (switch to the timeline), `+` (zoom), `right` (next op), `5`
   (roofline), median of 5.
3. `ttdash report --format perfetto` against `--format json` on the same file (wall, peak RSS).
(Printed in the order 3, 1, 2.)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from common import REAL, measure, python, repeated_trace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def timed(fn, n: int = 5) -> float:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def draw(tl, cols: int = 200, lanes: int = 32) -> None:
    from ttdash.model.analysis.timeline import binned

    for lane in range(min(lanes, len(tl.lanes))):
        binned(tl, lane, 0.0, tl.span_us, cols)


def galaxy_ops(n: int, devices: int = 32) -> pd.DataFrame:
    """n rows, n / devices ops on each of `devices` devices, FW end times on each device's own
    clock (what devices.annotate_overlap gives the timeline)."""
    rng = np.random.default_rng(0)
    per = n // devices
    dur = rng.lognormal(3, 1, per * devices)
    gap = rng.uniform(1, 8, per * devices)
    dev = np.repeat(np.arange(devices), per)
    end = np.cumsum((dur + gap).reshape(devices, per), axis=1).ravel()
    return pd.DataFrame({"device": dev.astype(float), "device_time_us": dur, "op_to_op_us": gap,
                         "bound": rng.choice(["DRAM", "FLOP", "SLOW", ""], per * devices),
                         "is_signpost": np.zeros(per * devices, bool), "fw_end_us": end})


def in_process(label: str, ops: pd.DataFrame, merged: bool) -> None:
    from ttdash.model.analysis.timeline import build

    build_s = timed(lambda: build(ops, merged_devices=merged, cut_pauses_above=1000.0), 3)
    tl = build(ops, merged_devices=merged, cut_pauses_above=1000.0)
    draw_s = timed(lambda: draw(tl))
    print(f"| {label} | {len(ops):,} | {len(tl.lanes)} | {build_s * 1000:.0f} ms | "
          f"{draw_s * 1000:.0f} ms |", flush=True)


def changed_after(t, keys: list[str], timeout: float = 10.0) -> float:
    before = t.screen()
    start = time.perf_counter()
    t.send(*keys)
    while time.perf_counter() < start + timeout:
        if t.screen() != before:
            return time.perf_counter() - start
        time.sleep(0.002)
    raise AssertionError(f"no change after {keys}")


def terminal(path: Path) -> dict[str, float]:
    from tmux import Tmux, ttdash_bin

    out: dict[str, list[float]] = {"4": [], "+": [], "right": [], "5": []}
    with Tmux([ttdash_bin(), "open", str(path)], width=120, height=40) as t:
        t.wait_for(lambda s: " ops · " in s and "Op code" in s, timeout=120)
        for _ in range(5):
            time.sleep(0.2)
            out["4"].append(changed_after(t, ["4"]))
            time.sleep(0.2)
            out["+"].append(changed_after(t, ["+"]))
            time.sleep(0.2)
            out["right"].append(changed_after(t, ["Right"]))
            time.sleep(0.2)
            t.send("0")
            out["5"].append(changed_after(t, ["5"]))
            time.sleep(0.2)
            changed_after(t, ["1"])
        t.send("q")
    return {k: statistics.median(v) for k, v in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="1,50")
    ap.add_argument("--galaxy-ops", type=int, default=1_000_000)
    args = ap.parse_args()
    from ttdash.model import Trace, Window

    src = REAL / "tt-perf-report__wh_clip_encoder_2.csv"
    paths = [src if k == 1 else repeated_trace(src, k)
             for k in (int(x) for x in args.sizes.split(","))]

    # subprocesses first: a child forked from this process once it holds the 1M-row frame
    # would report that frame in its peak RSS
    print("| ops | perfetto: wall | peak RSS | json: wall | peak RSS |")
    print("|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as d:
        for p in paths:
            rows = sum(1 for _ in open(p, "rb")) - 1
            perf = measure([python(), "-m", "ttdash", "report", str(p), "-f", "perfetto", "-o",
                            str(Path(d) / "t.json"), "--force"])
            js = measure([python(), "-m", "ttdash", "report", str(p), "-f", "json", "-o",
                          str(Path(d) / "r.json"), "--force"])
            print(f"| {rows:,} | {perf[0]:.2f} s | {perf[1]:.0f} MB | {js[0]:.2f} s | "
                  f"{js[1]:.0f} MB |", flush=True)

    print()
    print("| trace | ops | lanes | place every op (once per view) | draw a screen (200 columns) |")
    print("|---|---:|---:|---:|---:|")
    for p in paths:
        v = Trace.load(p).view(Window("all"))
        in_process(p.name, v.ops, merged=False)
    in_process("synthetic Galaxy, 32 devices", galaxy_ops(args.galaxy_ops), merged=False)

    print()
    print("| ops | `4` timeline | `+` zoom | `right` next op | `5` roofline |")
    print("|---:|---:|---:|---:|---:|")
    for p in paths:
        rows = sum(1 for _ in open(p, "rb")) - 1
        r = terminal(p)
        print(f"| {rows:,} | " + " | ".join(f"{r[k] * 1000:.0f} ms" for k in ("4", "+", "right",
                                                                            "5")) + " |",
              flush=True)



if __name__ == "__main__":
    main()
