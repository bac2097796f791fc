#!/usr/bin/env python3
"""Peak memory of a million-op trace per command (issue #51 item 2: 800 MiB in every one).

Usage: python benchmarks/bench_memory.py [--big 535] [--commands table,csv,json,...]
                                         [--warm | --first]

On wh_clip_encoder_2 repeated (x535: 1,001,520 rows; common.py builds it in benchmarks/out/),
prints one markdown table, a row per command, each a separate process whose peak RSS is its own
rusage (`os.wait4` ru_maxrss: what /usr/bin/time -v reports as "Maximum resident set size"):
- table, csv, json, markdown, perfetto: `ttdash report FILE -f FMT -o TMP/out --no-cache`;
- open: `ttdash open`'s first screen, headless: this script in a child (`--child-open FILE`)
  loads the view as `open` does (`columns="lazy"`), runs the app with Textual's `run_test`
  (120x40) and returns once the first screen is painted;
- history add: `ttdash history add --store TMP/store FILE --no-cache`;
- diff: `ttdash diff FILE EDITED -f csv -o TMP/out --no-cache`, a million ops a side (EDITED:
  bench_diff.py's candidate, the trace with ops slowed, deleted, inserted and swapped; built
  once into benchmarks/out/): both sides parsed and analysed, aligned, paired and compared.
--warm: the same with the columnar copy cached (written once by a csv run first), no --no-cache.
--first: each command's first run with the cache on (no --no-cache), in a cache folder of its
own, empty: what a user's first run on a file does (it also writes the copy and the analysis).
Every output goes to a temporary directory, removed at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from common import REAL, measure_cpu, python, repeated_trace

SRC = REAL / "tt-perf-report__wh_clip_encoder_2.csv"
COMMANDS = ("table", "csv", "json", "markdown", "perfetto", "open", "history add", "diff")


async def _first_screen(path: str) -> None:
    from ttdash.commands.common import load_view
    from ttdash.commands.options import WindowOptions
    from ttdash.tui.app import open_app

    app = open_app(load_view(path, WindowOptions(), columns="lazy"))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()


def command(name: str, trace: Path, tmp: Path, cached: bool) -> list[str]:
    cache = [] if cached else ["--no-cache"]
    if name == "open":
        return [python(), __file__, "--child-open", str(trace)] + (["--warm"] if cached else [])
    if name == "history add":
        shutil.rmtree(tmp / "store", ignore_errors=True)
        return [python(), "-m", "ttdash", "history", "add", "--store", str(tmp / "store"),
                str(trace), *cache]
    if name == "diff":
        # The candidate is built (once) in a process of its own: Linux starts a child's
        # ru_maxrss at its parent's peak when it execs, and building it here in this process
        # (a million-row frame, ~5 GB) made the diff's peak read 5.6 GB instead of 1.45.
        times = int(trace.stem.rsplit("_x", 1)[1])
        here = str(Path(__file__).resolve().parent)
        subprocess.run([python(), "-c", f"import sys; sys.path.insert(0, {here!r}); "
                        f"from bench_diff import big_inputs; print(big_inputs({times})[1])"],
                       check=True, stdout=subprocess.PIPE)
        from bench_diff import OUT

        edited = OUT / f"diff_candidate_x{times}.csv"
        return [python(), "-m", "ttdash", "diff", str(trace), str(edited), "-f", "csv", "-o",
                str(tmp / "out.diff.csv"), "--force", *cache]
    return [python(), "-m", "ttdash", "report", str(trace), "-f", name, "-o",
            str(tmp / f"out.{name}"), "--force", *cache]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--big", type=int, default=535, help="repeat factor (default 535: 1M rows)")
    ap.add_argument("--commands", default=",".join(COMMANDS))
    ap.add_argument("--warm", action="store_true", help="with the columnar copy cached")
    ap.add_argument("--first", action="store_true",
                    help="each command's first run with the cache on, its cache empty")
    ap.add_argument("--child-open", metavar="FILE", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_open:
        if not args.warm:
            os.environ["TTDASH_NO_CACHE"] = "1"
        asyncio.run(_first_screen(args.child_open))
        return
    big = repeated_trace(SRC, args.big)
    rows = sum(1 for _ in open(big, "rb")) - 1
    tmp = Path(tempfile.mkdtemp(prefix="ttdash-bench-memory-"))
    try:
        if args.warm:
            measure_cpu(command("csv", big, tmp, True))
        mode = "cached" if args.warm else "first run, cache on and empty" if args.first \
            else "cold (--no-cache)"
        print(f"{rows:,} rows, {mode}\n")
        print("| command | peak RSS (MiB) | wall (s) | CPU (s) |")
        print("|---|---:|---:|---:|")
        for name in [c for c in args.commands.split(",") if c]:
            cmd = command(name, big, tmp, args.warm or args.first)
            if args.first:  # (a cache folder of its own, empty: the diff's candidate too)
                shutil.rmtree(tmp / "cache", ignore_errors=True)
                os.environ["XDG_CACHE_HOME"] = str(tmp / "cache")
            wall, cpu, rss = measure_cpu(cmd)
            print(f"| {name} | {rss:,.0f} | {wall:.1f} | {cpu:.1f} |", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("NO_COLOR", "1")
    sys.exit(main())
