#!/usr/bin/env python3
"""ttdash watch: append-to-screen latency, and CPU use idle and at 1,000 rows/s (--rate).

Usage: python benchmarks/bench_watch.py [--seconds 10] [--windows 1] [--cpu-only]
       [--rate ROWS_PER_S --devices N]   (a Galaxy: --rate 10000 --devices 32)

Latency (in process, headless, default --refresh 0.5): the time from a write to
.logs/cpp_device_perf_report.csv to the table update that shows it, for two writers: "dumps"
appends 1,000 rows at once, 10 times, 1 s apart (what the profiler does at each dump); "stream"
appends 50 rows every 100 ms (continuous; bounded below by refresh/2 by design, since the UI
refreshes at most every --refresh seconds); with --rate, "rate" appends rate/10 rows every
100 ms (rows of --devices devices). CPU: the installed `ttdash watch` runs in tmux (a real
terminal); its user+system CPU time is read from /proc over an idle window and over a window
where a writer appends --rate rows/s.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

PATTERNS = {"dumps": (1000, 10, 1.0), "stream": (50, 20, 0.1)}  # rows, writes, period (s)
DEVICES = [1]


def make_rows(n: int):
    from ttdash.sim import cpp_device_rows, generate_ops

    d = DEVICES[0]
    rows = cpp_device_rows(generate_ops(-(-n // d), devices=d, seed=11))
    return rows.iloc[:n].reset_index(drop=True) if len(rows) >= n else rows


def append(rows, path: Path) -> None:
    from ttdash.sim import write_cpp_device_csv

    write_cpp_device_csv(rows, path, append=path.exists())


async def latency(pattern: str) -> list[float]:
    from ttdash.tui.watch import WatchScreen, watch_app

    BATCH, BATCHES, PERIOD = PATTERNS[pattern]
    rows = make_rows(BATCH * BATCHES)
    root = Path(tempfile.mkdtemp()) / "p"
    log = root / ".logs" / "cpp_device_perf_report.csv"
    log.parent.mkdir(parents=True)
    shown: list[tuple[float, int]] = []
    original = WatchScreen._show_live

    def record(self, *args):
        original(self, *args)
        shown.append((time.monotonic(), self.live.total_rows))

    WatchScreen._show_live = record
    written: list[tuple[float, int]] = []
    app = watch_app(root)  # default refresh 0.5 s

    def writer():
        for k in range(BATCHES):
            append(rows.iloc[k * BATCH:(k + 1) * BATCH], log)
            written.append((time.monotonic(), (k + 1) * BATCH))
            time.sleep(PERIOD)

    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.5)
        t = threading.Thread(target=writer)
        t.start()
        while t.is_alive() or not shown or shown[-1][1] < BATCH * BATCHES:
            await pilot.pause(0.02)
        t.join()
    WatchScreen._show_live = original
    out = []
    for when, total in written:
        seen = next(ts for ts, n in shown if n >= total)
        out.append(seen - when)
    return out


def proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ttdash_pid(shell_pid: int) -> int:
    for _ in range(100):
        children = Path(f"/proc/{shell_pid}/task/{shell_pid}/children").read_text().split()
        for c in children:
            cmd = Path(f"/proc/{c}/cmdline").read_bytes()
            if b"ttdash" in cmd:
                return int(c)
        time.sleep(0.1)
    raise RuntimeError("ttdash process not found")


def cpu(seconds: float, windows: int = 1, rate: int = 1000) -> tuple[float, list[float]]:
    """CPU of `ttdash watch`: idle, then at `rate` rows/s for `windows` windows of `seconds`
    each (the table grows by `rate` rows a second: a flat series means an update's cost does not
    grow with the table)."""
    from tmux import Tmux, ttdash_bin

    root = Path(tempfile.mkdtemp()) / "p"
    log = root / ".logs" / "cpp_device_perf_report.csv"
    log.parent.mkdir(parents=True)
    rows = make_rows(int(rate * seconds * windows) + 1000)
    append(rows.iloc[:1000], log)
    with Tmux([ttdash_bin(), "watch", str(root)], width=120, height=40) as t:
        t.wait_text("1,000 ops", timeout=30)
        shell = int(subprocess.run(t.cmd("display-message", "-p", "-t", t.name, "#{pane_pid}"),
                                   capture_output=True, text=True).stdout)
        pid = ttdash_pid(shell)
        time.sleep(2)
        c0, w0 = proc_cpu(pid), time.monotonic()
        time.sleep(seconds)
        idle = (proc_cpu(pid) - c0) / (time.monotonic() - w0) * 100
        sent = 1000
        start = time.monotonic()
        busy = []
        for k in range(windows):
            c0, w0 = proc_cpu(pid), time.monotonic()
            while time.monotonic() - start < seconds * (k + 1):  # `rate` rows/s, 10 writes/s
                target = 1000 + int((time.monotonic() - start) * rate)
                if target > sent:
                    append(rows.iloc[sent:target], log)
                    sent = target
                time.sleep(0.1)
            busy.append((proc_cpu(pid) - c0) / (time.monotonic() - w0) * 100)
        t.wait_text(f"{sent:,} ops", timeout=30)
        t.send("q")
    return idle, busy


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--windows", type=int, default=1,
                    help="CPU windows of --seconds at 1,000 rows/s (e.g. 10 x 30 s = 5 min)")
    ap.add_argument("--cpu-only", action="store_true", help="skip the latency part")
    ap.add_argument("--rate", type=int, default=1000, help="rows/s of the CPU window and of the "
                    "'rate' latency writer (default 1000)")
    ap.add_argument("--devices", type=int, default=1, help="devices the rows come from")
    args = ap.parse_args()
    DEVICES[0] = args.devices
    if args.rate != 1000 or args.devices != 1:
        PATTERNS["rate"] = (args.rate // 10, 20, 0.1)
    lat = {} if args.cpu_only else {p: asyncio.run(latency(p)) for p in PATTERNS}
    idle, busy = cpu(args.seconds, args.windows, args.rate)
    print("| writer | append-to-screen p50 | p95 | max |")
    print("|---|---:|---:|---:|")
    for p, v in lat.items():
        rows, n, period = PATTERNS[p]
        q = statistics.quantiles(v, n=20, method="inclusive")
        print(f"| {p}: {rows:,} rows every {period:g} s | {statistics.median(v) * 1000:.0f} ms "
              f"| {q[18] * 1000:.0f} ms | {max(v) * 1000:.0f} ms |")
    print()
    print(f"CPU of one core, idle: {idle:.1f}%")
    print(f"| rows in the table at the window's end | CPU at {args.rate:,} rows/s "
          f"({args.devices} device{'s' if args.devices > 1 else ''}) |")
    print("|---:|---:|")
    for k, b in enumerate(busy, 1):
        print(f"| {1000 + int(args.rate * args.seconds * k):,} | {b:.1f}% |")


if __name__ == "__main__":
    main()
