#!/usr/bin/env python3
"""The run history at scale: stores of 100 and 1,000 runs x 1,872 ops (the real CLIP trace) on
local disk and, with --s3, on moto's S3 server started here on 127.0.0.1 (the standard AWS
variables point ttdash at it); add, list, trend, check (the CI gate, --last 10, and against every
run) and DuckDB over every op, and how each grows from 100 to 1,000 runs; `history add` of a 1M-op
run beside `report` of the same file.

Usage: python benchmarks/bench_history.py [--sizes 100,1000] [--s3] [--big 535] [--skip-big]
       python benchmarks/bench_history.py --ab BASE [--big 535] [--repeat 3]
Prints a markdown table. Whole commands are timed (python start-up included), each the median of
3 (CPU seconds beside the wall: the machine may be shared). The runs are written through the
store's own add (the analysis of one real trace reused, its totals jittered), so building the
store takes a minute, not a thousand analyses.

--ab BASE: `history add` of the --big trace by this tree and by the ttdash package under BASE
(a directory holding one, e.g. `git archive HEAD ttdash | tar -x -C BASE`; on PYTHONPATH), the
trees alternating (the first in turn each round), --repeat rounds: a first run (an empty cache:
parse, analysis), a second run into a new store (the analysis read from the cache) and the same
content added under another name (a hard link: hashed, then read from the cache). Prints each
run's median CPU seconds (user + system, whole process) and peak RSS per tree, and the medians
of the per-round ratios second / first.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from common import REAL, measure, measure_cpu, python, repeated_trace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def build_store(uri: str, start: int, stop: int, src: Path) -> tuple[float, int]:
    """Runs start..stop-1 of `src`'s analysis (jittered totals) added to the store at `uri`;
    (seconds, ops per run)."""
    import numpy as np

    from ttdash.commands.common import load_view
    from ttdash.commands.options import WindowOptions
    from ttdash.history import schema
    from ttdash.history.record import RunRecord, build
    from ttdash.history.store import Store

    view = load_view(str(src), WindowOptions())
    base = build(view, labels={"model": "clip", "bench": "1"})
    batches = list(schema.op_batches(view))
    store = Store.open(uri)
    rng = np.random.default_rng(7 + start)
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    begin = time.perf_counter()
    for i in range(start, stop):
        k = float(rng.normal(1.0, 0.01))
        row = dict(base.row)
        row.update(run_id=f"{i:016x}", sha256=f"{i:064x}", added_at=t0 + timedelta(hours=i),
                   steady_us=row["steady_us"] * k, device_time_us=row["device_time_us"] * k,
                   labels=sorted({**dict(base.row["labels"]), "batch": str(8 << (i % 3))
                                  }.items()),
                   op_codes=[{**g, "steady_us": g["steady_us"] * k} for g in row["op_codes"]])
        store.add(RunRecord(run_id=row["run_id"], arch=base.arch, row=row, view=view),
                  batches=batches)
    return time.perf_counter() - begin, int(base.row["ops"])


def median_cmd(cmd: list[str], n: int = 3) -> tuple[float, float]:
    """(median wall, median CPU seconds) of `cmd` run n times; exit 1 (a regression) counts."""
    runs = []
    for _ in range(n):
        try:
            wall, cpu, _ = measure_cpu(cmd)
        except RuntimeError:  # check exits 1 on a regression: time it anyway
            t0 = time.perf_counter()
            subprocess.run(cmd, capture_output=True)
            wall, cpu = time.perf_counter() - t0, float("nan")
        runs.append((wall, cpu))
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def commands(uri: str, src: Path, tmp: Path, n: int) -> list[tuple[str, list[str] | None]]:
    s = ["--store", uri]
    other = tmp / f"other{n}.csv"
    other.write_bytes(src.read_bytes() + b"\n" * (n % 97 + 1))  # a new run each size
    return [
        ("history add of one more run", ["history", "add", *s, str(other)]),
        ("history list", ["history", "list", *s]),
        ("history trend --op MinimalMatmulOp", ["history", "trend", *s, "--op",
                                                "MinimalMatmulOp"]),
        ("history check --last 10", ["history", "check", *s, str(src), "--fail-above", "5",
                                     "--last", "10"]),
        ("history check (against every run)", ["history", "check", *s, str(src),
                                               "--fail-above", "5"]),
        ("history sql: count(*) over every op", ["history", "sql", *s,
                                                 "SELECT count(*) FROM ops"]),
    ]


def moto_server() -> tuple[subprocess.Popen, str]:
    """moto's S3 server on 127.0.0.1 (a free port), a bucket "bench", and the standard AWS
    variables set for this process and its children."""
    import boto3

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen([python(), "-c", "import sys; from moto.server import main; "
                               "main(sys.argv[1:])", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                raise SystemExit("moto's server did not start") from None
            time.sleep(0.05)
    os.environ.update(AWS_ENDPOINT_URL=endpoint, AWS_ACCESS_KEY_ID="bench",
                      AWS_SECRET_ACCESS_KEY="bench", AWS_REGION="us-east-1")
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(
        Bucket="bench")
    return server, endpoint


def ab(base: Path, big: Path, repeat: int) -> None:
    """The --ab comparison (the module docstring)."""
    import shutil

    cache = Path(os.environ["XDG_CACHE_HOME"])
    trees = {"before": str(base), "after": ""}
    got: dict[str, dict[str, list[tuple[float, float, float]]]] = {t: {} for t in trees}
    with tempfile.TemporaryDirectory(prefix="ttdash-bench-history-ab-") as tmp_dir:
        tmp = Path(tmp_dir)
        renamed = tmp / "renamed.csv"
        os.link(big, renamed)
        home = os.getcwd()
        os.chdir(tmp)  # `python -m` puts the working directory first: a checkout there wins
        for r in range(repeat):
            for tree in (list(trees) if r % 2 == 0 else list(trees)[::-1]):
                os.environ["PYTHONPATH"] = trees[tree]
                add = [python(), "-m", "ttdash", "history", "add", "--store"]
                shutil.rmtree(cache, ignore_errors=True)
                for case, path in (("first", big), ("second", big), ("renamed", renamed)):
                    shutil.rmtree(tmp / "store", ignore_errors=True)
                    got[tree].setdefault(case, []).append(
                        measure_cpu([*add, str(tmp / "store"), str(path)]))
                print(f"  round {r + 1} {tree}: " + ", ".join(
                    f"{c} {v[-1][1]:.2f} s CPU" for c, v in got[tree].items()), flush=True)
        os.chdir(home)
    os.environ.pop("PYTHONPATH", None)
    print(f"\n| {big.name}, history add | first (CPU), peak | second (CPU), peak | "
          "renamed (CPU), peak | second / first | renamed / first |")
    print("|---|---:|---:|---:|---:|---:|")
    for tree, cases in got.items():
        cells = [f"{statistics.median(x[1] for x in v):.2f} s, "
                 f"{statistics.median(x[2] for x in v):.0f} MB" for v in cases.values()]
        ratios = [statistics.median(b[1] / a[1] for a, b in zip(cases["first"], cases[c]))
                  for c in ("second", "renamed")]
        print(f"| {tree} | " + " | ".join(cells) + " | " +
              " | ".join(f"{x:.3f}x" for x in ratios) + " |")
    print(f"(medians of {repeat} rounds)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="100,1000", help="store sizes (runs), growing")
    ap.add_argument("--s3", action="store_true", help="also on moto's S3 server")
    ap.add_argument("--big", type=int, default=535, help="repeats of the real trace for the "
                    "big add (535: 1,001,520 rows)")
    ap.add_argument("--skip-big", action="store_true")
    ap.add_argument("--ab", type=Path, metavar="BASE", help="before/after of history add (above)")
    ap.add_argument("--repeat", type=int, default=3, help="--ab rounds")
    args = ap.parse_args()
    if args.ab:
        ab(args.ab.resolve(), repeated_trace(REAL / "tt-perf-report__wh_clip_encoder_2.csv",
                                             args.big), args.repeat)
        return
    sizes = [int(x) for x in args.sizes.split(",")]
    src = REAL / "tt-perf-report__wh_clip_encoder_2.csv"
    ttdash = [python(), "-m", "ttdash"]
    results: dict[tuple[str, str], dict[int, tuple[float, float]]] = {}
    builds: list[tuple[str, int, float]] = []
    server = None
    try:
        with tempfile.TemporaryDirectory(prefix="ttdash-bench-history-") as tmp_dir:
            tmp = Path(tmp_dir)
            stores = [("local", str(tmp / "store"))]
            if args.s3:
                server, _ = moto_server()
                stores.append(("s3 (moto)", "s3://bench/history"))
            for where, uri in stores:
                have = 0
                for n in sizes:
                    secs, ops = build_store(uri, have, n, src)
                    builds.append((where, n - have, secs))
                    have = n
                    for label, cmd in commands(uri, src, tmp, n):
                        results.setdefault((where, label), {})[n] = median_cmd(ttdash + cmd)
                    have += 1  # the run `add` measured stays in the store
            big_rows = []
            if not args.skip_big:
                big = repeated_trace(src, args.big)
                rows = sum(1 for _ in open(big, "rb")) - 1
                rep = measure(ttdash + ["report", str(big), "-f", "csv"])
                add = measure(ttdash + ["history", "add", "--store", str(tmp / "big"), str(big)])
                big_rows = [(f"report -f csv, {rows:,} ops", rep),
                            (f"history add, {rows:,} ops", add)]
    finally:
        if server is not None:
            server.terminate()
            server.wait(10)
    for where, n, secs in builds:
        print(f"- build ({where}): {n:,} adds in {secs:.1f} s ({secs / n * 1000:.0f} ms an add)")
    head = " | ".join(f"{n:,} runs: wall (CPU)" for n in sizes)
    print(f"\n| store | command | {head} | growth |")
    print("|---|---|" + "---:|" * len(sizes) + "---:|")
    for (where, label), by in results.items():
        cells = [f"{by[n][0]:.2f} s ({by[n][1]:.2f})" for n in sizes]
        grow = f"x{by[sizes[-1]][0] / by[sizes[0]][0]:.1f}" if len(sizes) > 1 else ""
        print(f"| {where} | {label} | " + " | ".join(cells) + f" | {grow} |")
    for label, (wall, rss) in big_rows:
        print(f"| local | {label} | {wall:.1f} s, {rss:.0f} MB peak |")


if __name__ == "__main__":
    main()
