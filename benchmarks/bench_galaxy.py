#!/usr/bin/env python3
"""Galaxy-size traces: the ratios of issue #16 on wh_clip_encoder_2 repeated (93,600 and
1,001,520 rows by default), each measured in this one run.

Usage: python benchmarks/bench_galaxy.py [--small 50] [--big 535] [--repeat 3] [--skip-open]
                                          [--skip-diff]

Prints a markdown table: wall time and peak RSS of `ttdash report -f csv` cold (--no-cache) at
both sizes and the big/small ratio; at the big size the cold run that writes the columnar cache,
the warm run, and the read alone (in process: parse vs cached copy); `ttdash open` in tmux
(80x24): cold, the first screenful of ops (shown while the rest loads) and the whole trace,
warm, the same two (a warm open shows the cached copy's first row group while the rest is
read), with the peak RSS of the whole session; `ttdash diff` of the big
trace against a perturbed copy of it (the perturbation of bench_diff.py applied to one repeat,
then repeated). The cold reports and the diff run --repeat times, interleaved: each row shows
the least time (noise on a shared VM only adds time) and the highest peak, and the single runs'
diff / report ratios are printed under the table. The cache goes to a temporary
$XDG_CACHE_HOME (common.py), removed at the end.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from common import CACHE, OUT, REAL, measure, python, repeated_trace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
SRC = REAL / "tt-perf-report__wh_clip_encoder_2.csv"


def report(trace: Path, *flags: str) -> tuple[float, float]:
    return measure([python(), "-m", "ttdash", "report", str(trace), "-f", "csv", *flags])


def read_phase(trace: Path, cached: bool) -> float:
    """Seconds of read_ops_csv alone, in a fresh process (no import time)."""
    code = ("import os, sys, time; from ttdash.model.read.loader import read_ops_csv; "
            "t = time.perf_counter(); read_ops_csv(sys.argv[1]); "
            "print(time.perf_counter() - t)")
    env = dict(os.environ, TTDASH_NO_CACHE="0" if cached else "1")
    out = subprocess.run([python(), "-c", code, str(trace)], capture_output=True, text=True,
                         env=env, check=True).stdout
    return float(out.split()[-1])


def open_first_frame(trace: Path, rows: int) -> tuple[float, float, float]:
    """Seconds from start to the first screenful of ops of `ttdash open` at 80x24 (a cold open
    shows the first rows while the rest loads), to the whole trace on screen, and the session's
    peak RSS (MB) after a few keys (down, details, back)."""
    from tmux import Tmux, ttdash_bin

    t0 = time.perf_counter()
    with Tmux([ttdash_bin(), "open", str(trace)], 80, 24,
              {"XDG_CACHE_HOME": os.environ["XDG_CACHE_HOME"]}) as t:
        t.wait_for(lambda s: re.search(r"\brow \d+/", s) is not None, timeout=300)
        first = time.perf_counter() - t0
        t.wait_for(lambda s: re.search(rf"\brow \d+/{rows:,}\b", s) is not None, timeout=300)
        whole = time.perf_counter() - t0
        shell = int(subprocess.run(t.cmd("display-message", "-p", "-t", t.name, "#{pane_pid}"),
                                   capture_output=True, text=True).stdout)
        pid = _child(shell, b"ttdash")
        t.send("j", "j", "Enter")
        t.wait_text("Figures", timeout=60)
        t.send("Escape")
        t.wait_for(lambda s: re.search(r"\brow 3/", s) is not None, timeout=60)
        peak = _hwm_mb(pid)
        t.send("q")
    return first, whole, peak


def _child(shell: int, name: bytes) -> int:
    for _ in range(100):
        for c in Path(f"/proc/{shell}/task/{shell}/children").read_text().split():
            if name in Path(f"/proc/{c}/cmdline").read_bytes():
                return int(c)
        time.sleep(0.1)
    raise RuntimeError("ttdash process not found")


def _hwm_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def perturbed_big(times: int) -> Path:
    from bench_diff import perturbed

    one = OUT / f"{SRC.stem}_perturbed.csv"
    if not one.exists():
        perturbed(SRC, one)
    return repeated_trace(one, times)


def best(runs: list[tuple[float, float]]) -> tuple[float, float]:
    """The least time and the highest peak RSS of repeated runs."""
    return min(t for t, _ in runs), max(m for _, m in runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--small", type=int, default=50, help="repeat factor (default 50: 93,600)")
    ap.add_argument("--big", type=int, default=535, help="repeat factor (default 535: 1M rows)")
    ap.add_argument("--skip-open", action="store_true")
    ap.add_argument("--skip-diff", action="store_true")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs of the cold report and of the diff (default 3; the least time)")
    args = ap.parse_args()
    small, big = repeated_trace(SRC, args.small), repeated_trace(SRC, args.big)
    rows = {p: sum(1 for _ in open(p, "rb")) - 1 for p in (small, big)}
    # The cold report and the diff (the ratios' terms) run --repeat times, interleaved: the
    # least time of each (noise on a shared VM only adds time), the highest peak RSS, and
    # the spread of the single runs' ratios.
    cand = None if args.skip_diff else perturbed_big(args.big)
    s_runs, b_runs, d_runs = [], [], []
    for _ in range(args.repeat):
        s_runs.append(report(small, "--no-cache"))
        b_runs.append(report(big, "--no-cache"))
        if cand is not None:
            d_runs.append(measure([python(), "-m", "ttdash", "diff", str(big), str(cand),
                                   "-f", "json", "--no-cache"]))
    s_cold, b_cold = best(s_runs), best(b_runs)
    b_write = report(big)  # parses and writes the copy
    b_warm = report(big)
    r_cold, r_warm = read_phase(big, cached=False), read_phase(big, cached=True)
    n = f"{rows[big]:,} rows"
    print("| measure | time | peak RSS | ratio | target |")
    print("|---|---:|---:|---:|---|")
    print(f"| report -f csv, {rows[small]:,} rows, cold | {s_cold[0]:.2f} s | "
          f"{s_cold[1]:.0f} MB | | |")
    print(f"| report -f csv, {n}, cold (--no-cache) | {b_cold[0]:.2f} s | {b_cold[1]:.0f} MB "
          f"| {b_cold[0] / s_cold[0]:.1f}x the small | <= 9x, <= 1 GB |")
    print(f"| report -f csv, {n}, cold, writing the cache | {b_write[0]:.2f} s | "
          f"{b_write[1]:.0f} MB | {b_write[0] / b_cold[0]:.2f}x cold | |")
    print(f"| report -f csv, {n}, warm | {b_warm[0]:.2f} s | {b_warm[1]:.0f} MB | "
          f"{b_warm[0] / b_cold[0]:.2f}x cold | |")
    print(f"| read alone, {n}: parse vs cached copy | {r_cold:.2f} s / {r_warm:.2f} s | | "
          f"{r_warm / r_cold:.2f}x | <= 0.35x |")
    if not args.skip_open:
        shutil.rmtree(Path(CACHE) / "ttdash", ignore_errors=True)
        o_cold = open_first_frame(big, rows[big])
        o_warm = open_first_frame(big, rows[big])
        print(f"| open, {n}: first screenful of ops, cold | {o_cold[0]:.2f} s | | "
              f"{o_cold[0] / b_cold[0]:.2f}x cold report | before the analysis ends |")
        print(f"| open, {n}: the whole trace, cold | {o_cold[1]:.2f} s | {o_cold[2]:.0f} MB | "
              f"{o_cold[1] / b_cold[0]:.2f}x cold report | <= 1 GB |")
        print(f"| open, {n}: first screenful of ops, warm | {o_warm[0]:.2f} s | | "
              f"{o_warm[0] / b_cold[0]:.2f}x cold report | <= 0.5x |")
        print(f"| open, {n}: the whole trace, warm | {o_warm[1]:.2f} s | {o_warm[2]:.0f} MB | "
              f"{o_warm[1] / b_cold[0]:.2f}x cold report | <= 1 GB |")
    if d_runs:
        d = best(d_runs)
        print(f"| diff -f json, {n} x {rows[big]:,} (perturbed), cold | {d[0]:.2f} s | "
              f"{d[1]:.0f} MB | {d[0] / b_cold[0]:.2f}x cold report | <= 2x |")
    if args.repeat > 1:
        print(f"\nleast of {args.repeat} runs each; single runs: cold report "
              + ", ".join(f"{t:.2f}" for t, _ in b_runs) + " s"
              + ("; diff " + ", ".join(f"{t:.2f}" for t, _ in d_runs) + " s; diff / report "
                 + ", ".join(f"{d[0] / b[0]:.2f}x" for d, b in zip(d_runs, b_runs))
                 if d_runs else ""))


if __name__ == "__main__":
    main()
