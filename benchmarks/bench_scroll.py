#!/usr/bin/env python3
"""The op table scrolled: CPU seconds per page down (and per line down) on a 93.6k-op trace.

Usage: python benchmarks/bench_scroll.py TRACE.csv [--pages 400] [--size 200x50]
(TRACE: e.g. the real wh_clip_encoder_2 trace repeated 50 times by common.repeated_trace:
93,600 ops.)
In-process and headless (Textual's run_test): the trace is loaded, then `pagedown` is pressed
`--pages` times and `down` as often, each followed by a repaint; prints the median of 3 rounds.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path


async def run(path: Path, pages: int, size: tuple[int, int]) -> tuple[float, float]:
    from ttdash.model import Trace, Window
    from ttdash.tui.app import open_app
    from ttdash.tui.optable import OpTable

    view = Trace.load(path, columns="all").view(Window("all"))
    app = open_app(view)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        app.screen.query_one(OpTable).focus()
        await pilot.pause()
        rounds_page, rounds_line = [], []
        for _ in range(3):
            await pilot.press("home")
            await pilot.pause()
            t0 = time.process_time()
            for _ in range(pages):
                await pilot.press("pagedown")
            await pilot.pause()
            rounds_page.append((time.process_time() - t0) / pages)
            t0 = time.process_time()
            for _ in range(pages):
                await pilot.press("down")
            await pilot.pause()
            rounds_line.append((time.process_time() - t0) / pages)
    return statistics.median(rounds_page), statistics.median(rounds_line)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("trace", type=Path)
    ap.add_argument("--pages", type=int, default=400)
    ap.add_argument("--size", default="200x50")
    a = ap.parse_args()
    w, h = (int(x) for x in a.size.split("x"))
    page, line = asyncio.run(run(a.trace, a.pages, (w, h)))
    print(f"{a.size}: {page * 1e3:.2f} ms per page down, {line * 1e3:.2f} ms per line down")


if __name__ == "__main__":
    main()
