#!/usr/bin/env python3
"""Where a command's peak memory is: RSS sampled through the run, each sample with the stack
of ttdash's code running at that moment (issue #51 item 2: which stage holds the peak).

Usage: python benchmarks/bench_peak.py [--big 535] [--commands table,markdown,open]
                                       [--every 0.005] [--top 12]

Each command runs in its own process (as in bench_memory.py, cold: --no-cache), with a thread
that reads the process's RSS (/proc/self/statm) every `--every` seconds and, at each new high,
the main thread's ttdash frames. Prints per command: the peak RSS the kernel counted
(ru_maxrss), the stack at the highest sample, and the RSS high of each stage (the outermost
`--depth` ttdash frames) in the order the stages ran. A sample waits for the GIL, so a
high reached inside one long C call is seen when that call returns (its stack is then the
caller's: close enough to name the stage).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

from common import REAL, repeated_trace

SRC = REAL / "tt-perf-report__wh_clip_encoder_2.csv"
PAGE = os.sysconf("SC_PAGE_SIZE")


def _rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * PAGE / 2**20


def _frames(frame, depth: int | None = None) -> list[str]:
    """The ttdash frames of a stack, outermost first (cli and commands.report's entry left out
    of the stage key so stages read as model/report steps)."""
    out = []
    while frame is not None:
        name = frame.f_code.co_filename
        if "/ttdash/" in name:
            mod = name.rsplit("/ttdash/", 1)[1].removesuffix(".py")
            out.append(f"{mod}:{frame.f_code.co_name}:{frame.f_lineno}")
        frame = frame.f_back
    out.reverse()
    return out if depth is None else out[:depth]


class Sampler(threading.Thread):
    def __init__(self, every: float, depth: int) -> None:
        super().__init__(daemon=True)
        self.every, self.depth = every, depth
        self.main = threading.main_thread().ident
        self.high, self.high_stack = 0.0, []
        self.stages: dict[str, list[float]] = {}  # stage -> [high, first seen, low]
        self.t0 = time.perf_counter()
        self.done = False

    def run(self) -> None:
        while not self.done:
            rss = _rss_mib()
            frame = sys._current_frames().get(self.main)
            stack = _frames(frame)
            key = " > ".join(f.rsplit(":", 1)[0] for f in stack[:self.depth]) or "(start)"
            got = self.stages.setdefault(key, [0.0, time.perf_counter() - self.t0, rss])
            got[0], got[2] = max(got[0], rss), min(got[2], rss)
            if rss > self.high:
                self.high, self.high_stack = rss, stack
            time.sleep(self.every)


async def _first_screen(path: str) -> None:
    from ttdash.commands.common import load_view
    from ttdash.commands.options import WindowOptions
    from ttdash.tui.app import open_app

    app = open_app(load_view(path, WindowOptions(), columns="lazy"))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()


def child(name: str, trace: str, every: float, depth: int, top: int) -> None:
    os.environ["TTDASH_NO_CACHE"] = "1"
    sampler = Sampler(every, depth)
    sampler.start()
    with tempfile.TemporaryDirectory(prefix="ttdash-bench-peak-") as tmp:
        if name == "open":
            from ttdash.memory import return_freed_memory

            return_freed_memory()  # as the CLI's main does before any command
            asyncio.run(_first_screen(trace))
        else:
            from ttdash.cli import main

            main(["report", trace, "-f", name, "-o", str(Path(tmp) / "out"), "--force",
                  "--no-cache"])
    sampler.done = True
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"## {name}: peak RSS {peak:,.0f} MiB (sampled high {sampler.high:,.0f})\n")
    print("stack at the sampled high:")
    for f in sampler.high_stack:
        print(f"    {f}")
    print(f"\nstages (outermost {depth} ttdash frames), in order: when first seen, RSS low "
          "and high (MiB)")
    stages = sorted(sampler.stages.items(), key=lambda kv: kv[1][1])
    best = sorted(stages, key=lambda kv: -kv[1][0])[:top]
    for key, (high, first, low) in stages:
        if (key, [high, first, low]) in best:
            print(f"  {first:6.1f}s {low:7,.0f} {high:7,.0f}  {key}")
    print(flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--big", type=int, default=535, help="repeat factor (default 535: 1M rows)")
    ap.add_argument("--commands", default="table,markdown,open")
    ap.add_argument("--every", type=float, default=0.005, help="seconds between samples")
    ap.add_argument("--depth", type=int, default=4, help="ttdash frames that name a stage")
    ap.add_argument("--top", type=int, default=14, help="stages shown (the highest)")
    ap.add_argument("--child", nargs=2, metavar=("COMMAND", "FILE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child, args.every, args.depth, args.top)
        return
    import subprocess

    big = repeated_trace(SRC, args.big)
    for name in [c for c in args.commands.split(",") if c]:
        subprocess.run([sys.executable, __file__, "--child", name, str(big), "--every",
                        str(args.every), "--depth", str(args.depth), "--top", str(args.top)],
                       check=True)


if __name__ == "__main__":
    os.environ.setdefault("NO_COLOR", "1")
    sys.exit(main())
