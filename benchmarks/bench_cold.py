#!/usr/bin/env python3
"""The cold path of `ttdash report` in every output format (issue #38), measured in one run.

Usage: python benchmarks/bench_cold.py [--small 50] [--big 535] [--repeat 3]
                                       [--formats table,csv,json,markdown,perfetto]
                                       [--skip-reference] [--skip-big] [--profile N]
                                       [--second-run [--cases history,diff]]

On wh_clip_encoder_2 repeated (x50: 93,600 rows; x535: 1,001,520 rows; common.py builds them in
benchmarks/out/), prints one markdown table, a row per format:
- cold: `ttdash report FILE -f FMT --no-cache -o TMP/out` with $XDG_CACHE_HOME an empty temporary
  dir (common.py); the least of --repeat runs, the formats interleaved (noise on a shared VM only
  adds time);
- x tt-perf-report: tt-perf-report's `--csv TMP/o.csv --no-advice --no-summary` run (the CSV
  alone, its cheapest) on the same 93,600-row file in this run, divided by the cold time;
- x csv: the cold time over the csv format's cold time;
- first line: the default table (`ttdash report FILE --no-cache`, stdout a pipe), seconds from
  the process start to the first byte read from the pipe (least of --repeat);
- 1M peak: the peak RSS of the cold run on 1,001,520 rows, from the child's own rusage
  (`os.wait4` ru_maxrss: the figure /usr/bin/time -v reports as "Maximum resident set size");
- warm / cold: on 1,001,520 rows, the whole command with the cache filled (the columnar copy
  written once before, by a csv run) over the same command cold.
--second-run: instead, on 1,001,520 rows, each case's first run (an empty cache: parses,
analyses, keeps the parsed copy and the analysed view) and its second run (the same command on the
unchanged file), in pairs, --repeat rounds, the cases interleaved; prints the median second /
first ratio and both runs' peak RSS: `report -f FMT` per format, `history add` (a new store each
run; "renamed": the second run adds the same content under another name, a hard link), `diff` of
the trace and that hard link (-f csv: both sides one analysis) and `open`'s first screen
(benchmarks/first_screen.py: the open command's load and the trace screen drawn headless);
--cases WORDS: only the cases whose name holds one of the comma-separated words (`--cases
json,diff`); --big 50: the same cases on 93,600 rows (a quick check, minutes not an hour).
Every output goes to a temporary directory, removed at the end; the output a run writes is
removed before the next run, untimed (`--force` over the last run's 1 GB of JSON cost that run
~0.7 s of the filesystem freeing the old file's blocks, more than a tenth of a second JSON
run). `uptime`'s load is printed before and after. --profile N: each format's cold 93,600-row
run again under cProfile, and its N top entries by cumulative time.
"""

from __future__ import annotations

import argparse
import os
import pstats
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from common import REAL, python, repeated_trace
from common import measure_cpu as measure

SRC = REAL / "tt-perf-report__wh_clip_encoder_2.csv"
FORMATS = ("table", "csv", "json", "markdown", "perfetto")
SUFFIX = {"table": "txt", "csv": "csv", "json": "json", "markdown": "md",
          "perfetto": "perfetto.json"}


def load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def report(trace: Path, fmt: str, tmp: Path, *flags: str) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (MB) of one `report` into a file of `tmp`."""
    out = tmp / f"out.{SUFFIX[fmt]}"
    cmd = [python(), "-m", "ttdash", "report", str(trace), "-f", fmt, "-o", str(out),
           "--force", *flags]
    try:
        return measure(cmd)
    finally:
        out.unlink(missing_ok=True)


def first_line(trace: Path) -> tuple[float, float]:
    """Seconds from the start of the default `report` (table, stdout a pipe) to its first byte
    on the pipe, and to its end."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([python(), "-m", "ttdash", "report", str(trace), "--no-cache"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    first = proc.stdout.read(1)
    t1 = time.perf_counter() - t0
    while proc.stdout.read(1 << 20):
        pass
    if proc.wait() != 0 or not first:
        raise RuntimeError("report failed")
    return t1, time.perf_counter() - t0


def reference(trace: Path, tmp: Path) -> float:
    """tt-perf-report's CSV-only run on `trace`, seconds (its stdout into a temp file)."""
    with open(tmp / "ref.stdout", "wb") as sink:
        t, _, _ = measure([python(), "-m", "tt_perf_report.perf_report", str(trace), "--csv",
                        str(tmp / "ref.csv"), "--no-advice", "--no-summary"], stdout=sink)
    return t


def profile(trace: Path, fmt: str, tmp: Path, top: int) -> list[str]:
    """One cold run under cProfile: its `top` entries by cumulative time (less the wrappers
    that hold nearly all of it and module imports) and its `top` entries by own time."""
    stats = tmp / f"{fmt}.prof"
    subprocess.run([python(), "-m", "cProfile", "-o", str(stats), "-m", "ttdash", "report",
                    str(trace), "-f", fmt, "--no-cache", "-o", str(tmp / f"p.{SUFFIX[fmt]}"),
                    "--force"], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    st = pstats.Stats(str(stats))
    rows = []
    for func, (_, nc, tt, ct, _) in st.stats.items():  # type: ignore[attr-defined]
        name = f"{Path(func[0]).name}:{func[1]}({func[2]})"
        rows.append((ct, tt, nc, name, func[0].startswith("<frozen") or func[2] == "<module>"
                     or "__import__" in func[2] or "builtins.exec" in func[2]))
    total = max(r[0] for r in rows)
    cum = sorted((r for r in rows if not r[4] and r[0] < 0.9 * total), reverse=True)[:top]
    own = sorted(rows, key=lambda r: -r[1])[:top]

    def line(r: tuple) -> str:
        return f"  {r[0]:6.2f} s cum  {r[1]:6.2f} s own  {r[2]:>9,} calls  {r[3]}"

    return ([f"  profiled total {total:.2f} s; by cumulative time (below 90% of it):"]
            + [line(r) for r in cum] + ["  by own time:"] + [line(r) for r in own])


def second_runs(big: Path, tmp: Path, formats: list[str], repeat: int,
                words: list[str] | None = None) -> None:
    """The second-run / first-run cases (see the module docstring), printed as one table."""
    import statistics

    cache = Path(os.environ["XDG_CACHE_HOME"])
    renamed = tmp / "renamed.csv"
    try:
        os.link(big, renamed)
    except OSError:  # another filesystem
        shutil.copyfile(big, renamed)
    store = tmp / "store"
    ttdash = [python(), "-m", "ttdash"]
    first_screen = [python(), str(Path(__file__).resolve().parent / "first_screen.py")]
    cases: dict[str, tuple[list[str], list[str]]] = {
        f"report -f {f}": ([*ttdash, "report", str(big), "-f", f, "-o", str(tmp / "out"),
                            "--force"],) * 2 for f in formats}
    add = [*ttdash, "history", "add", str(big), "--store", str(store)]
    cases["history add"] = (add, add)
    cases["history add, renamed"] = (add, [*add[:-3], str(renamed), *add[-2:]])
    diff = [*ttdash, "diff", str(big), str(renamed), "-f", "csv", "-o", str(tmp / "d.csv"),
            "--force"]
    cases["diff (a file and its hard link)"] = (diff, diff)
    cases["open: first screen"] = ([*first_screen, str(big)],) * 2
    if words:
        cases = {k: v for k, v in cases.items() if any(w in k for w in words)}
    got: dict[str, list[tuple[tuple[float, float, float], tuple[float, float, float]]]] = {
        k: [] for k in cases}
    def fresh() -> None:  # the last run's output gone, untimed (see the module docstring)
        for out in (tmp / "out", tmp / "d.csv"):
            out.unlink(missing_ok=True)
        shutil.rmtree(store, ignore_errors=True)

    for _ in range(repeat):
        for name, (first, second) in cases.items():
            shutil.rmtree(cache, ignore_errors=True)
            fresh()
            a = measure(first)
            fresh()
            got[name].append((a, measure(second)))
            print(f"  {name}: first {a[0]:.2f} s, second {got[name][-1][1][0]:.2f} s",
                  flush=True)
    print(f"\n| {big.name} | first run (CPU), peak RSS | second run (CPU), peak "
          "RSS | second / first (CPU) |")
    print("|---|---:|---:|---:|")
    for name, pairs in got.items():
        def med(i: int, j: int, pairs: list = pairs) -> float:
            return statistics.median(p[i][j] for p in pairs)
        ratio = statistics.median(p[1][0] / p[0][0] for p in pairs)
        cpu = statistics.median(p[1][1] / p[0][1] for p in pairs)
        print(f"| {name} | {med(0, 0):.2f} s ({med(0, 1):.2f} s), {med(0, 2):.0f} MB | "
              f"{med(1, 0):.2f} s ({med(1, 1):.2f} s), {med(1, 2):.0f} MB | {ratio:.2f}x "
              f"({cpu:.2f}x) |")
    print(f"(medians of {repeat} pair(s); load after: {load()})", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", type=int, default=50, help="repeat factor (default 50: 93,600)")
    ap.add_argument("--big", type=int, default=535, help="repeat factor (default 535: 1M rows)")
    ap.add_argument("--repeat", type=int, default=3, help="cold runs per format (least time)")
    ap.add_argument("--formats", default=",".join(FORMATS))
    ap.add_argument("--skip-reference", action="store_true", help="no tt-perf-report run")
    ap.add_argument("--skip-big", action="store_true", help="no 1,001,520-row runs")
    ap.add_argument("--second-run", action="store_true",
                    help="the first-run / second-run cases on 1,001,520 rows only")
    ap.add_argument("--cases", default="", metavar="WORDS",
                    help="--second-run: only the cases whose name holds one of these words")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="print each format's N top cProfile entries (cold, 93,600 rows)")
    args = ap.parse_args()
    formats = [f for f in args.formats.split(",") if f]
    if args.second_run:
        tmp = Path(tempfile.mkdtemp(prefix="ttdash-bench-second-"))
        try:
            print(f"load before: {load()}", flush=True)
            second_runs(repeated_trace(SRC, args.big), tmp, formats, args.repeat,
                        [w for w in args.cases.split(",") if w])
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return
    small = repeated_trace(SRC, args.small)
    big = None if args.skip_big else repeated_trace(SRC, args.big)
    rows = {p: sum(1 for _ in open(p, "rb")) - 1 for p in (small, big) if p is not None}
    tmp = Path(tempfile.mkdtemp(prefix="ttdash-bench-cold-"))
    try:
        print(f"load before: {load()}", flush=True)
        cold: dict[str, list[tuple[float, float, float]]] = {f: [] for f in formats}
        firsts: list[tuple[float, float]] = []
        for _ in range(args.repeat):
            for f in formats:
                cold[f].append(report(small, f, tmp, "--no-cache"))
            firsts.append(first_line(small))
        ref = None if args.skip_reference else reference(small, tmp)
        best = {f: min(r[0] for r in rs) for f, rs in cold.items()}
        cpu = {f: min(r[1] for r in rs) for f, rs in cold.items()}
        b_cold: dict[str, tuple[float, float, float]] = {}
        b_warm: dict[str, tuple[float, float, float]] = {}
        fill = None
        if big is not None:
            fill = report(big, "csv", tmp)  # parses, writes the cached copy
            for f in formats:  # each format's cold and warm run one after the other
                b_cold[f] = report(big, f, tmp, "--no-cache")
                b_warm[f] = report(big, f, tmp)
        first = min(t for t, _ in firsts)
        n, nb = f"{rows[small]:,}", f"{rows[big]:,}" if big is not None else "-"
        print(f"\n| format | cold, {n} rows (CPU) | x tt-perf-report --csv | x csv (CPU) | "
              f"first line (table) | {nb} rows: cold (CPU), peak RSS | warm (CPU) | "
              "warm / cold (CPU) |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for f in formats:
            x_ref = f"{ref / best[f]:.1f}x" if ref else "-"
            x_csv = (f"{best[f] / best['csv']:.2f}x ({cpu[f] / cpu['csv']:.2f}x)"
                     if "csv" in best else "-")
            fl = f"{first:.2f} s" if f == "table" else ""
            if f in b_cold:
                (bc, bcc, bm), (bw, bwc, _) = b_cold[f], b_warm[f]
                big_s = (f"{bc:.2f} s ({bcc:.2f} s), {bm:.0f} MB | {bw:.2f} s ({bwc:.2f} s) | "
                         f"{bw / bc:.2f}x ({bwc / bcc:.2f}x)")
            else:
                big_s = "- | - | -"
            print(f"| {f} | {best[f]:.2f} s ({cpu[f]:.2f} s) | {x_ref} | {x_csv} | {fl} | "
                  f"{big_s} |")
        print(f"\n{n} rows: least of {args.repeat} cold runs per format (wall and CPU each their "
              "least); single runs (wall/CPU): " + "; ".join(
                  f"{f} " + ", ".join(f"{r[0]:.2f}/{r[1]:.2f}" for r in rs)
                  for f, rs in cold.items()))
        print("first byte of the default table on a pipe: "
              + ", ".join(f"{a:.2f} s (whole {b:.2f} s)" for a, b in firsts))
        if ref:
            print(f"tt-perf-report --csv --no-advice --no-summary, {n} rows: {ref:.2f} s")
        if fill:
            print(f"{nb} rows: report -f csv writing the cache {fill[0]:.2f} s "
                  f"({fill[1]:.2f} s CPU), {fill[2]:.0f} MB")
        print(f"load after: {load()}", flush=True)
        for f in formats if args.profile else ():
            print(f"\ncProfile, report -f {f} --no-cache, {n} rows (cumulative):")
            print("\n".join(profile(small, f, tmp, args.profile)), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("NO_COLOR", "1")
    main()
