#!/usr/bin/env python3
"""Write the golden output of every registered (subject, format) pair (ttdash.present.formats)
into tests/golden/formats/, the files tests/test_format_golden.py compares with. Run it after a
change that means to change an output, and review the diff of the golden files in the commit.

`report`, `report --summary` and `diff` run the CLI on real traces; the history's subjects
(`runs`, `trend`, `check`, `sql`), `doctor` and `watch --once` call their registered writer on
the fixed inputs below (a store's rows, a gate's verdict, host checks, a watched folder: none of
them depends on this machine or on the clock). A pair with no case here fails the test: a new
format for a subject adds its golden file by running this script.

Usage: python scripts/make_format_golden.py [--check]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT.parent / "shared" / "fixtures" / "real"
GOLDEN = ROOT / "tests" / "golden" / "formats"
#: Small real traces with what each format must carry: 8 devices and collectives; signposts in
#: the V1 header; corrupt timings and a metal-trace replay (data warnings).
TRACES = ("tt-perf-report__bh_8xp150_deepseek_v3_d_p.csv",
          "tt-perf-report__bh20_oft_integral_image_trace.csv",
          "tt-perf-report__bh_invalid_trace_decode_window.csv")
#: A diff of two real traces of one program (the whole trace against its decode window).
DIFF = ("tt-perf-report__bh20_oft.csv", "tt-perf-report__bh20_oft_integral_image_trace.csv")
#: File suffix of each format's golden file (a new format: its own name).
EXT = {"table": "txt", "csv": "csv", "json": "json", "markdown": "md",
       "perfetto": "perfetto.json"}
#: Kept for callers that list `report`'s formats.
FORMATS = {f: EXT[f] for f in ("table", "csv", "json", "markdown", "perfetto")}


def cli(*argv: str, ok: tuple[int, ...] = (0,)) -> str:
    """`ttdash ARGV` as a pipe gets it, the fixtures' folder as {REAL}."""
    from ttdash.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    if rc not in ok:
        raise SystemExit(f"ttdash {' '.join(argv)}: exit {rc}: {err.getvalue()}")
    return out.getvalue().replace(str(REAL), "{REAL}")


def render(name: str, fmt: str) -> str:
    """`ttdash report REAL/name -f fmt` as a pipe gets it."""
    return cli("report", str(REAL / name), "-f", fmt, "--no-cache")


def _write(subject: str, fmt: str, make: Callable[[io.StringIO], tuple[tuple, dict]]) -> str:
    """The registered writer of (subject, fmt) on the arguments `make(out)` gives."""
    from ttdash.present.formats import write

    out = io.StringIO()
    args, kwargs = make(out)
    write(subject, fmt, *args, **kwargs)
    return out.getvalue()


def _at(day: int, hour: int) -> datetime:
    return datetime(2026, 12, day, hour, 30, tzinfo=timezone.utc)


#: A store's rows as `history list` and `trend` get them (newest first for list); the last
#: one's label and file name are hostile (a formula, an escape sequence, markdown).
RUNS = (
    {"run_id": "3f2a9c0d1e4b5a67", "added_at": _at(3, 9), "file": "/runs/llama/b8.csv",
     "arch": "blackhole", "window": "whole file", "ops": 1_234, "device_time_us": 56_789.25,
     "steady_us": 60_001.5, "change_pct": 2.5, "labels": {"batch": "8", "model": "llama"}},
    {"run_id": "9a8b7c6d5e4f3a2b", "added_at": _at(2, 14), "file": "/runs/llama/b4.csv",
     "arch": "blackhole", "window": "whole file", "ops": 1_234, "device_time_us": 55_000.0,
     "steady_us": 58_537.0, "change_pct": None, "labels": {"batch": "4", "model": "llama"}},
    {"run_id": "0123456789abcdef", "added_at": _at(1, 8), "file": "/runs/x|y*z\x1b[31m.csv",
     "arch": "wormhole_b0", "window": "signpost decode", "ops": 12, "device_time_us": 1.5,
     "steady_us": None, "change_pct": -12.25, "labels": {"note": "=HYPERLINK(\"x\")"}},
)
BY_ROWS = (
    {"value": 4.0, "samples": 4.0, "runs": 1, "run_ids": ["9a8b7c6d5e4f3a2b"], "ops": 1_234,
     "device_time_us": 55_000.0, "steady_us": 58_537.0, "device_us_per_sample": 13_750.0,
     "steady_us_per_sample": 14_634.25, "vs_first_pct": 0.0,
     "op_codes": {"Matmul": 40_000.0, "Softmax": 9_000.0, "Add": 6_000.0}},
    {"value": 8.0, "samples": 8.0, "runs": 1, "run_ids": ["3f2a9c0d1e4b5a67"], "ops": 1_234,
     "device_time_us": 56_789.25, "steady_us": 60_001.5, "device_us_per_sample": 7_098.65625,
     "steady_us_per_sample": 7_500.1875, "vs_first_pct": -48.37,
     "op_codes": {"Matmul": 41_000.0, "Softmax": 9_500.0, "Add": 6_289.25}},
)
SQL = (["arch", "runs", "device_us", "note"],
       [("blackhole", 2, 111_789.25, "ok"), ("wormhole_b0", 1, None, "=1+2|x")])


def _check():
    from ttdash.history.query import Check

    return Check(run=RUNS[0], baseline=[RUNS[1], RUNS[2]], fail_above=2.0, median_us=58_000.0,
                 pct=3.45, culprits=[
                     {"op_code": "Matmul", "ops": 40, "steady_us": 41_000.0,
                      "median_us": 40_000.0, "delta_us": 1_000.0, "pct": 2.5},
                     {"op_code": "=cmd|' /C calc'!A0", "ops": 2, "steady_us": 10.0,
                      "median_us": 9.0, "delta_us": 1.0, "pct": 11.1}])


def _doctor_checks():
    from ttdash.health.doctor import Check

    return [Check("kernel driver", "ok", "tt-kmd 2.1.0 loaded"),
            Check("hugepages", "warn", "1 GiB pages: 0 free of 0; the driver wants one per "
                  "device (sudo sysctl vm.nr_hugepages=...)"),
            Check("devices", "fail", "no Tenstorrent PCI device in /sys/bus/pci"),
            Check("telemetry | *x*", "unknown", "hwmon not readable")]


WATCH_STATE = {
    "schema_version": 1, "root": "/prof", "exists": True,
    "runs": [{"path": "/prof/reports/2026_12_01_09_30_00/ops_perf_results.csv",
              "name": "ops_perf_results.csv", "timestamp": "2026-12-01T09:30:00",
              "size": 123_456, "complete": True},
             {"path": "/prof/reports/2026_12_02_10_00_00/ops_perf_results.csv",
              "name": "ops_perf_results.csv", "timestamp": "2026-12-02T10:00:00",
              "size": 1_024, "complete": False}],
    "live": {"sources": ["/prof/.logs/profile_log_device.csv"],
             "shown": "/prof/.logs/profile_log_device.csv", "not_counted": {}, "rows": 40,
             "ops": 20, "skipped_rows": 0, "skipped_lines": [], "device_time_us": 1_234.5,
             "op_to_op_us": 56.25, "devices": [0], "arch": None, "arch_source": "assumed",
             "clock_mhz": None, "device_time_basis": "kernel", "header": None},
    "devices": []}

#: subject -> (case name, fmt -> output). The report's cases keep their flat file names.
CASES: dict[str, tuple[tuple[str, Callable[[str], str]], ...]] = {
    "report": tuple((Path(n).stem, lambda fmt, n=n: render(n, fmt)) for n in TRACES),
    "summary": ((Path(TRACES[0]).stem, lambda fmt: cli(
        "report", str(REAL / TRACES[0]), "--summary", "-f", fmt, "--no-cache")),),
    "diff": (("oft_vs_integral_image", lambda fmt: cli(
        "diff", str(REAL / DIFF[0]), str(REAL / DIFF[1]), "-f", fmt, "--no-cache",
        ok=(0, 1, 2))),),
    "runs": (("three_runs", lambda fmt: _write(
        "runs", fmt, lambda out: ((list(RUNS), out, "3 runs in /store (newest first)",
                                   {"store": "/store"}), {}))),),
    "trend": (("three_runs", lambda fmt: _write(
        "trend", fmt, lambda out: ((list(RUNS[::-1]), out, "Trend of whole runs: 3 runs",
                                    {"store": "/store", "op": None, "region": None}), {}))),
              ("by_batch", lambda fmt: _write(
                  "trend", fmt, lambda out: ((list(BY_ROWS), out, "Trend by batch",
                                              {"store": "/store", "op": None, "region": None}),
                                             {"label": "batch", "used": list(RUNS[1::-1])}))),),
    "check": (("regression", lambda fmt: _write(
        "check", fmt, lambda out: ((_check(), out), {}))),),
    "sql": (("two_rows", lambda fmt: _write(
        "sql", fmt, lambda out: ((*SQL, out), {}))),),
    "doctor": (("four_checks", lambda fmt: _write(
        "doctor", fmt, lambda out: ((_doctor_checks(), out, 80), {}))),),
    "watch": (("two_runs", lambda fmt: _write(
        "watch", fmt, lambda out: ((WATCH_STATE, out, Path("/prof")), {}))),),
}


def golden_path(name: str, fmt: str, subject: str = "report") -> Path:
    """The golden file of one case (a report's: `name` a trace's file name or stem)."""
    ext = EXT.get(fmt, fmt)
    if subject == "report":
        return GOLDEN / f"{Path(name).stem}.{ext}"
    return GOLDEN / subject / f"{name}.{ext}"


def pairs() -> list[tuple[str, str]]:
    """Every registered (subject, format) pair written to a file (not `diff --format tui`)."""
    from ttdash.present.formats import WRITERS

    return [(w.subject, w.format) for w in WRITERS if w.writer]


def cases() -> list[tuple[str, str, str]]:
    """(subject, format, case) of every golden file."""
    return [(s, f, name) for s, f in pairs() for name, _ in CASES.get(s, ())]


def missing() -> list[tuple[str, str]]:
    """Registered pairs with no golden case."""
    return [(s, f) for s, f in pairs() if not CASES.get(s)]


def make(subject: str, fmt: str, name: str) -> str:
    return dict(CASES[subject])[name](fmt)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--check", action="store_true", help="compare, write nothing")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    stale = [f"{s} {f}: no case" for s, f in missing()]
    for subject, fmt, name in cases():
        text, path = make(subject, fmt, name), golden_path(name, fmt, subject)
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(str(path.relative_to(GOLDEN)))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print("stale: " + ", ".join(stale))
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
