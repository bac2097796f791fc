#!/usr/bin/env python3
"""ttdash watch: append-to-screen latency, and CPU use idle and at 1,000 rows/s (--rate).

Usage: python benchmarks/bench_watch.py [--seconds 10] [--windows 1] [--cpu-only] [--stages]
       [--rate ROWS_PER_S --devices N]   (a Galaxy: --rate 10000 --devices 32)
       [--writes 50] [--repeat 1]   (a longer 'rate' writer; runs pooled, before/after in turn)
       [--before DIR]   (DIR holds an older `ttdash` package: measured too, side by side)

Latency (headless, in a process of its own, default --refresh 0.5): the time from a write to
.logs/cpp_device_perf_report.csv to the table update that shows it, for two writers: "dumps"
appends 1,000 rows at once, 10 times, 1 s apart (what the profiler does at each dump); "stream"
appends 50 rows every 100 ms (continuous); with --rate, "rate" appends rate/10 rows every
100 ms, 50 times (rows of --devices devices). CPU: `ttdash watch` runs in tmux (a real
terminal); its user+system CPU time is read from /proc over an idle window and over windows
where a writer appends --rate rows/s.

--stages: the latency runs also log each stage of a refresh (the tailer's read and parse, the
feed's filter, the model's convert and analysis, the screen's table update, Textual's paint: CPU
of the thread that ran it) and the waits between them (a write to its read, the pacer, the
message to the screen, the paint's timer), printed per pattern as medians and p95 per refresh.

--before DIR: every measurement runs for DIR's ttdash ("before"; e.g. `mkdir /tmp/base &&
git archive main ttdash | tar -x -C /tmp/base`) and this checkout's ("after"), one after the
other on the same machine, and both are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

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


#: --stages: (label, class path, method): each call's wall start and end, its thread's CPU and
#: the rows it handled are logged (`probe`); `stage_table` turns the log into costs per refresh
PROBES = [("read+parse", "ttdash.live.tailer:CsvTailer", "poll"),
          ("apply", "ttdash.live.feed:LiveFeed", "_apply"),
          ("convert", "ttdash.model.live.table:LiveModel", "_convert_pending"),
          ("model", "ttdash.model.live.table:LiveModel", "frames"),
          ("refresh", "ttdash.live.feed:LiveFeed", "_flush"),
          ("table update", "ttdash.tui.watch:WatchScreen", "on_feed_updated"),
          ("paint", "textual.screen:Screen", "_on_timer_update")]


def probe(log: list) -> list:
    """Wrap the PROBES' methods to log (label, wall start, wall end, CPU s, rows); returns
    what undoes it."""
    import importlib

    undo = []
    for label, where, name in PROBES:
        module, cls_name = where.split(":")
        cls = getattr(importlib.import_module(module), cls_name)
        orig = cls.__dict__[name]

        def wrapped(*a, _orig=orig, _label=label, **k):
            w0, c0 = time.monotonic(), time.thread_time()
            out = _orig(*a, **k)
            rows = len(out.rows) if _label == "read+parse" else \
                a[0].pacer.gap * 1000 if _label == "refresh" else 0  # the gap it chose next
            log.append((_label, w0, time.monotonic(), time.thread_time() - c0, rows,
                        threading.get_ident()))
            return out

        setattr(cls, name, wrapped)
        undo.append((cls, name, orig))
    return undo


def stage_table(log: list, written: list[tuple[float, int]]) -> dict[str, list[float]]:
    """Per refresh (a `_flush`): the CPU (ms) of each stage since the previous refresh, and the
    waits: a write to the read that got it (watchdog's delivery and the watcher's pass), the
    first rows applied to the refresh (the pacer), the refresh's end to the screen's handler
    (Textual's message queue), the handler's end to the next paint (Textual's refresh timer)."""
    log = sorted(log, key=lambda e: e[1])
    by = {lab: [e for e in log if e[0] == lab] for lab, _, _ in PROBES}
    out: dict[str, list[float]] = {}
    start = written[0][0] if written else 0.0
    flushes = [f for f in by["refresh"] if f[1] >= start]  # the writer's (not a prefill's)
    prev = start
    for f in flushes:
        def cpu(lab, lo=prev, hi=f[1]):
            return sum(e[3] for e in by[lab] if lo <= e[1] < hi) * 1000

        inside = [e for e in log if f[1] <= e[1] < f[2] and e[5] == f[5]]  # its thread
        conv = sum(e[3] for e in inside if e[0] == "convert") * 1000
        model = sum(e[3] for e in inside if e[0] == "model") * 1000
        got = [e for e in by["read+parse"] if prev <= e[1] < f[1] and e[4]]
        applied = [e for e in by["apply"] if prev <= e[1] < f[1]]
        # the view is handed over when the model is done (the screen may start before _flush
        # returns)
        done = max((e[2] for e in inside if e[0] == "model"), default=f[2])
        ui = next((e for e in by["table update"] if e[1] >= done), None)
        nxt = next((e[1] for e in by["table update"] if ui and e[1] > ui[1]), float("inf"))
        paints = [e for e in by["paint"] if ui and ui[2] <= e[1] < nxt]  # before the next one
        paint = max(paints, key=lambda e: e[3]) if paints else None
        row = {"read+parse (CPU)": cpu("read+parse"), "apply: filter, keep (CPU)": cpu("apply"),
               "convert (CPU)": conv, "analyse (CPU)": model - conv,
               "refresh, rest (CPU)": f[3] * 1000 - model}
        if ui:
            row["table update (CPU)"] = ui[3] * 1000
            row["wait: refresh to handler"] = (ui[1] - done) * 1000
        if paint:
            row["paint (CPU)"] = sum(e[3] for e in paints) * 1000
            row["wait: handler to paint"] = (paint[1] - ui[2]) * 1000
        if applied:
            row["wait: pacer (first rows to refresh)"] = (f[1] - applied[0][1]) * 1000
        if got:
            row["rows per refresh"] = sum(e[4] for e in got)
        row["pacer's gap after it"] = f[4]
        for k, v in row.items():
            out.setdefault(k, []).append(v)
        prev = f[1]
    reads = [e for e in by["read+parse"] if e[4]]
    for when, _ in written:
        r = next((e for e in reads if e[2] >= when), None)
        if r:
            out.setdefault("wait: write to read (watchdog, watcher)", []).append(
                (r[1] - when) * 1000 if r[1] >= when else 0.0)
    return out


async def latency(pattern: str, stages: bool = False, prefill: int = 0):
    from ttdash.tui.watch import WatchScreen, watch_app

    BATCH, BATCHES, PERIOD = PATTERNS[pattern]
    rows = make_rows(prefill + BATCH * BATCHES)
    root = Path(tempfile.mkdtemp()) / "p"
    log = root / ".logs" / "cpp_device_perf_report.csv"
    log.parent.mkdir(parents=True)
    if prefill:  # rows already in the table when the writer starts
        append(rows.iloc[:prefill], log)
        rows = rows.iloc[prefill:].reset_index(drop=True)
    shown: list[tuple[float, int]] = []
    original = WatchScreen._show_live

    def record(self, *args):
        original(self, *args)
        shown.append((time.monotonic(), self.live.total_rows))

    WatchScreen._show_live = record
    written: list[tuple[float, int]] = []
    calls: list = []
    undo = probe(calls) if stages else []
    app = watch_app(root)  # default refresh 0.5 s

    # The batches are worded before the clock starts: the profiler writing them is another
    # process, and pandas wording 1,000 rows here (~8 ms holding the GIL, every 100 ms at a
    # Galaxy's rate) would be counted in the watcher's latency.
    chunks = [rows.iloc[k * BATCH:(k + 1) * BATCH].to_csv(
        index=False, header=k == 0 and not prefill, lineterminator="\n").encode()
        for k in range(BATCHES)]

    def writer():
        for k, chunk in enumerate(chunks):
            with open(log, "ab") as fh:
                fh.write(chunk)
            written.append((time.monotonic(), prefill + (k + 1) * BATCH))
            time.sleep(PERIOD)

    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.5)
        while prefill and (not shown or shown[-1][1] < prefill):
            await pilot.pause(0.1)
        t = threading.Thread(target=writer)
        t.start()
        # a plain sleep, not pilot.pause: that waits on every widget's queue and forces a
        # paint, 50 times a second, on the thread whose CPU the pacer counts as the screen's
        while t.is_alive() or not shown or shown[-1][1] < prefill + BATCH * BATCHES:
            await asyncio.sleep(0.02)
        t.join()
    WatchScreen._show_live = original
    for cls, name, orig in undo:
        setattr(cls, name, orig)
    out = []
    for when, total in written:
        seen = next(ts for ts, n in shown if n >= total)
        out.append(seen - when)
    return {"latency": out, "stages": stage_table(calls, written)} if stages else out


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


def cpu(seconds: float, windows: int = 1, rate: int = 1000,
        src: Path | None = None) -> tuple[float, list[float], float]:
    """CPU of `ttdash watch`: idle, then at `rate` rows/s for `windows` windows of `seconds`
    each (the table grows by `rate` rows a second: a flat series means an update's cost does not
    grow with the table). `src`: the folder whose `ttdash` package runs (default: this
    checkout's installed console script)."""
    from tmux import Tmux, ttdash_bin

    root = Path(tempfile.mkdtemp()) / "p"
    log = root / ".logs" / "cpp_device_perf_report.csv"
    log.parent.mkdir(parents=True)
    rows = make_rows(int(rate * seconds * windows) + 1000)
    append(rows.iloc[:1000], log)
    command = [ttdash_bin(), "watch", str(root)] if src is None else \
        ["env", f"PYTHONPATH={src}", sys.executable, "-m", "ttdash", "watch", str(root)]
    # (cwd: `python -m` puts the current folder first on the path, before PYTHONPATH)
    with Tmux(command, width=120, height=40, cwd=str(root.parent)) as t:
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
        peak = peak_rss_mib(pid)
        t.send("q")
    return idle, busy, peak


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident set so far (VmHWM), MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def latency_of(pattern: str, src: Path, stages: bool = False, prefill: int = 0):
    """The latency run of `pattern` in a process of its own, importing `src`'s ttdash (with
    `stages`: {"latency": [...], "stages": stage_table(...)})."""
    env = dict(os.environ, PYTHONPATH=str(src))
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--latency-child",
                          pattern,
                          "--child-pattern", json.dumps(PATTERNS[pattern]),
                          "--devices", str(DEVICES[0]), "--prefill", str(prefill)]
                         + (["--stages"] if stages else []),
                         env=env, capture_output=True, text=True, check=True,
                         cwd=tempfile.gettempdir())
    return json.loads(out.stdout.strip().splitlines()[-1])


def print_stages(name: str, pattern: str, stages: dict[str, list[float]]) -> None:
    """One pattern's stage table: per refresh, each stage's median and p95 (ms, rows)."""
    print(f"| {name}{pattern}: per refresh | median | p95 | refreshes |")
    print("|---|---:|---:|---:|")
    for k, v in stages.items():
        q = statistics.quantiles(v, n=20, method="inclusive") if len(v) > 1 else v * 19
        unit = "" if k.startswith("rows") else " ms"  # the rest: ms
        print(f"| {k} | {statistics.median(v):,.1f}{unit} | {q[18]:,.1f}{unit} | {len(v)} |")
    print()


def table(lat: dict[str, list[float]], label: str = "") -> None:
    for p, v in lat.items():
        rows, n, period = PATTERNS[p]
        q = statistics.quantiles(v, n=20, method="inclusive")
        print(f"| {label}{p}: {rows:,} rows every {period:g} s | "
              f"{statistics.median(v) * 1000:.0f} ms | {q[18] * 1000:.0f} ms | "
              f"{max(v) * 1000:.0f} ms |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--windows", type=int, default=1,
                    help="CPU windows of --seconds at 1,000 rows/s (e.g. 10 x 30 s = 5 min)")
    ap.add_argument("--cpu-only", action="store_true", help="skip the latency part")
    ap.add_argument("--latency-only", action="store_true", help="skip the CPU part")
    ap.add_argument("--pattern", action="append", choices=["dumps", "stream", "rate"],
                    help="only these latency writers (repeat; default: all)")
    ap.add_argument("--rate", type=int, default=1000, help="rows/s of the CPU window and of the "
                    "'rate' latency writer (default 1000)")
    ap.add_argument("--devices", type=int, default=1, help="devices the rows come from")
    ap.add_argument("--before", type=Path, help="a folder holding an older `ttdash` package: "
                    "measured as well, side by side")
    ap.add_argument("--stages", action="store_true", help="also time each stage of a refresh "
                    "(read, parse, model, table update, paint: CPU) and the waits between them")
    ap.add_argument("--prefill", type=int, default=0, help="rows in the table before the "
                    "latency writers start (e.g. 600000: a refresh's cost at that size)")
    ap.add_argument("--writes", type=int, default=50, help="writes of the 'rate' latency "
                    "writer, 0.1 s apart (default 50: 5 s)")
    ap.add_argument("--repeat", type=int, default=1, help="latency runs per pattern, before "
                    "and after in turn; their latencies are pooled")
    ap.add_argument("--latency-child", help=argparse.SUPPRESS)
    ap.add_argument("--child-pattern", help=argparse.SUPPRESS)
    args = ap.parse_args()
    DEVICES[0] = args.devices
    if args.latency_child:  # one latency run, in this process, printed as JSON
        PATTERNS[args.latency_child] = tuple(json.loads(args.child_pattern))
        print(json.dumps(asyncio.run(latency(args.latency_child, args.stages, args.prefill))))
        return
    if args.rate != 1000 or args.devices != 1 or args.writes != 50:
        PATTERNS["rate"] = (args.rate // 10, args.writes, 0.1)
    runs = ([("before", args.before.resolve())] if args.before else []) + [("after", REPO)]
    for name, src in runs:
        where = subprocess.run([sys.executable, "-c", "import ttdash; print(ttdash.__file__)"],
                               env=dict(os.environ, PYTHONPATH=str(src)), cwd=tempfile.gettempdir(),
                               capture_output=True, text=True, check=True).stdout.strip()
        print(f"{name}: {where}", flush=True)
    lat: dict[str, dict[str, list[float]]] = {name: {} for name, _ in runs}
    stages: dict[str, dict[str, dict[str, list[float]]]] = {name: {} for name, _ in runs}
    if not args.cpu_only:
        for p in args.pattern or list(PATTERNS):
            for _ in range(args.repeat):
                for name, src in runs:  # before and after in turn, pattern by pattern
                    got = latency_of(p, src, args.stages, args.prefill)
                    if args.stages:
                        got, st = got["latency"], got["stages"]
                        for k, v in st.items():
                            stages[name].setdefault(p, {}).setdefault(k, []).extend(v)
                    lat[name].setdefault(p, []).extend(got)
    if args.latency_only:
        cpus = {}
    else:
        cpus = {name: cpu(args.seconds, args.windows, args.rate, src) for name, src in runs}
    label = len(runs) > 1
    if not args.cpu_only:
        print("| writer | append-to-screen p50 | p95 | max |")
        print("|---|---:|---:|---:|")
        for name, _ in runs:
            table(lat[name], f"{name}, " if label else "")
        print()
        for name, _ in runs:
            for p, st in stages[name].items():
                print_stages(f"{name}, " if label else "", p, st)
    if not cpus:
        return
    for name, _ in runs:
        print(f"{name + ': ' if label else ''}CPU of one core, idle: {cpus[name][0]:.1f}%; "
              f"peak RSS of the watch process: {cpus[name][2]:,.0f} MiB")
    print("| rows in the table at the window's end | "
          + " | ".join(f"{name + ': ' if label else ''}CPU at {args.rate:,} rows/s "
                       f"({args.devices} device{'s' if args.devices > 1 else ''})"
                       for name, _ in runs) + " |")
    print("|---:|" + "---:|" * len(runs))
    for k in range(args.windows):
        print(f"| {1000 + int(args.rate * args.seconds * (k + 1)):,} | "
              + " | ".join(f"{cpus[name][1][k]:.1f}%" for name, _ in runs) + " |")


if __name__ == "__main__":
    main()
