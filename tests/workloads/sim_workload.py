"""A fake profiled workload for `ttdash run` tests: reports its profiler environment, prints
tricky lines on stdout and stderr, plays a simulated profiler run into $TT_METAL_PROFILER_DIR,
then exits with a chosen code (or waits to be stopped)."""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

KEYS = ("TT_METAL_DEVICE_PROFILER", "TT_METAL_PROFILER_CPP_POST_PROCESS", "TT_METAL_PROFILER_DIR",
        "TT_METAL_PROFILER_MID_RUN_DUMP")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--ops", type=int, default=0, help="simulated device ops (0: none)")
    p.add_argument("--speed", type=float, default=0.0, help="simulation speed-up (0: no pauses)")
    p.add_argument("--dumps", type=int, default=None)
    p.add_argument("--report", action="store_true", help="also write the final report (tracy "
                   "post-processing); default: .logs only, like PyPI ttnn")
    p.add_argument("--lines", type=int, default=0, help="extra numbered stdout lines")
    p.add_argument("--hold", action="store_true", help="at the end, wait until stopped")
    p.add_argument("--exit", type=int, default=0, help="exit code")
    a = p.parse_args()

    print("env " + " ".join(f"{k}={os.environ.get(k, '')}" for k in KEYS), flush=True)
    print("markup [bold red]x[/] stays literal", flush=True)
    print("\x1b[31mcoloured\x1b[0m text\x07", flush=True)
    print("a line on stderr", file=sys.stderr, flush=True)
    for i in range(a.lines):
        print(f"numbered line {i}")
    sys.stdout.flush()
    if a.ops:
        from ttdash.sim import simulate_run

        stop = threading.Event()

        def progress(phase: str, done: int, total: int) -> None:
            if phase == "postprocess" and not a.report:
                stop.set()  # PyPI ttnn: no tracy post-processing, no reports/

        root = Path(os.environ["TT_METAL_PROFILER_DIR"])
        simulate_run(root, n_ops=a.ops, speed=a.speed, dumps=a.dumps, stop=stop,
                     on_progress=progress)
        print(f"simulated {a.ops} ops", flush=True)
    print("ready", flush=True)
    if a.hold:
        while True:
            time.sleep(0.5)
    return a.exit


if __name__ == "__main__":
    raise SystemExit(main())
