#!/usr/bin/env python3
"""ttdash open: time to first frame and time per keypress, for 1.9k, 18.7k and 93.6k-op traces.

Usage: python benchmarks/bench_tui.py [--sizes 1,10,50]
Everything is measured end to end on the installed `ttdash open` in a real terminal (tmux): a key
is sent and the screen is polled every 2 ms until it changes (so figures include tmux's own
latency). First frame also in-process (load + analysis + first render, headless).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

from common import REAL, repeated_trace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


async def in_process_first_frame(path: Path) -> float:
    from ttdash.model import Trace, Window
    from ttdash.tui.app import open_app

    t0 = time.perf_counter()
    view = Trace.load(path, columns="all").view(Window("all"))
    app = open_app(view)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        return time.perf_counter() - t0


def changed_after(t, keys: list[str], timeout: float = 10.0) -> float:
    """Seconds from sending `keys` until the terminal shows something else."""
    before = t.screen()
    start = time.perf_counter()
    t.send(*keys)
    deadline = start + timeout
    while time.perf_counter() < deadline:
        if t.screen() != before:
            return time.perf_counter() - start
        time.sleep(0.002)
    raise AssertionError(f"no change after {keys}")


def tmux_run(path: Path) -> dict[str, float]:
    from tmux import Tmux, ttdash_bin

    out: dict[str, float] = {}
    t0 = time.perf_counter()
    with Tmux([ttdash_bin(), "open", str(path)], width=120, height=40) as t:
        t.wait_for(lambda s: " ops · " in s and "Op code" in s, timeout=60)
        out["first_frame"] = time.perf_counter() - t0
        time.sleep(0.5)

        def median(keys: list[str], undo: list[str] | None = None, n: int = 5) -> float:
            times = []
            for _ in range(n):
                times.append(changed_after(t, keys))
                time.sleep(0.05)
                if undo:
                    changed_after(t, undo)
                    time.sleep(0.05)
            return statistics.median(times)

        out["page_down"] = median(["NPage"])
        out["sort"] = median([">"])
        out["reverse"] = median(["r"])
        t.send("o")
        time.sleep(0.3)
        t.send("/")
        t.wait_text("Filter ops:")
        t.send("-l", "matmul")
        time.sleep(0.3)
        out["filter"] = changed_after(t, ["Enter"])
        time.sleep(0.3)
        out["clear_filter"] = changed_after(t, ["Escape"])
        time.sleep(0.3)
        out["end"] = median(["G"], undo=["g"])
        t.send("q")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="1,10,50")
    args = ap.parse_args()
    src = REAL / "tt-perf-report__wh_clip_encoder_2.csv"
    print("| ops | first frame (terminal) | first frame (in-process) | page down | sort | "
          "reverse | filter | clear filter | end (G) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k in (int(x) for x in args.sizes.split(",")):
        path = src if k == 1 else repeated_trace(src, k)
        rows = sum(1 for _ in open(path, "rb")) - 1
        inproc = asyncio.run(in_process_first_frame(path))
        r = tmux_run(path)
        ms = {key: f"{v * 1000:.0f} ms" for key, v in r.items()}
        print(f"| {rows:,} | {r['first_frame']:.2f} s | {inproc:.2f} s | {ms['page_down']} | "
              f"{ms['sort']} | {ms['reverse']} | {ms['filter']} | {ms['clear_filter']} | "
              f"{ms['end']} |", flush=True)


if __name__ == "__main__":
    main()
