#!/usr/bin/env python3
"""ttdash run with a chatty workload: does printing through ttdash slow the workload down?

Usage: python benchmarks/bench_run.py [--lines 200000] [--repeat 3]

The workload prints N short log lines as fast as it can and reports its own elapsed time (from
its first line to its flush) into a file. It runs in a real terminal (tmux, 120x40) twice: directly,
and under the installed `ttdash run` (its output read from a pipe into the output panel). A
workload that writes faster than ttdash reads blocks on the pipe, so the ratio is what ttdash
costs it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

WORKLOAD = """\
import sys, time
t0 = time.perf_counter()
w = sys.stdout.write
for i in range({n}):
    w(f"step {{i}}: loss=0.{{i % 997:03d}} lr=1e-4 tokens/s=12345\\n")
sys.stdout.flush()
with open(sys.argv[1], "w") as fh:
    fh.write(f"{{time.perf_counter() - t0:.3f}}")
"""


def elapsed(cmd: list[str], result: Path) -> float:
    from tmux import Tmux

    result.unlink(missing_ok=True)
    with Tmux(cmd + [str(result)], width=120, height=40):
        deadline = time.monotonic() + 300
        while not (result.exists() and result.read_text()):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{cmd}: no result after 300 s")
            time.sleep(0.05)
    return float(result.read_text())


def main() -> None:
    from tmux import ttdash_bin

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--lines", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ttdash-bench-run-"))
    script = work / "chatty.py"
    script.write_text(WORKLOAD.format(n=args.lines))
    direct, under = [], []
    for k in range(args.repeat):
        direct.append(elapsed([sys.executable, str(script)], work / "t"))
        under.append(elapsed([ttdash_bin(), "run", "--dir", str(work / f"p{k}"), "--",
                              sys.executable, str(script)], work / "t"))
    d, u = statistics.median(direct), statistics.median(under)
    print(f"| workload printing {args.lines:,} lines | directly in the terminal | under "
          "`ttdash run` | ratio |")
    print("|---|---:|---:|---:|")
    print(f"| median of {args.repeat} | {d:.2f} s | {u:.2f} s | {u / d:.2f}x |")


if __name__ == "__main__":
    main()
